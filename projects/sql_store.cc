#include "projects/sql_store.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <regex>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "projects/limits.h"

namespace mariposa {
namespace {

// Migration N takes the schema from N-1 to N. Never edit a released step:
// add a new one.
const char* const kMigrations[] = {
    // 1: projects, versions, services, groups, meta, events.
    R"sql(
    CREATE TABLE projects (
      uuid TEXT PRIMARY KEY,
      name TEXT NOT NULL UNIQUE,
      description TEXT NOT NULL DEFAULT '',
      created_at INTEGER NOT NULL,
      current_version TEXT
    );
    CREATE TABLE versions (
      uuid TEXT PRIMARY KEY,
      project_uuid TEXT NOT NULL REFERENCES projects(uuid) ON DELETE CASCADE,
      number INTEGER NOT NULL,
      hash TEXT NOT NULL,
      author TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      origin TEXT NOT NULL,
      rolled_back_to INTEGER NOT NULL DEFAULT 0,
      message TEXT NOT NULL DEFAULT '',
      warnings TEXT NOT NULL DEFAULT '',
      manifest TEXT NOT NULL,
      canonical TEXT NOT NULL,
      UNIQUE (project_uuid, number)
    );
    CREATE TABLE services (
      version_uuid TEXT NOT NULL REFERENCES versions(uuid) ON DELETE CASCADE,
      name TEXT NOT NULL,
      service_type TEXT NOT NULL,
      compute_type TEXT NOT NULL,
      brand TEXT NOT NULL,
      image TEXT NOT NULL,
      package TEXT NOT NULL,
      count INTEGER NOT NULL,
      spec_hash TEXT NOT NULL,
      spec_json TEXT NOT NULL,
      grp TEXT NOT NULL DEFAULT '',
      PRIMARY KEY (version_uuid, name)
    );
    CREATE TABLE deployment_groups (
      version_uuid TEXT NOT NULL REFERENCES versions(uuid) ON DELETE CASCADE,
      name TEXT NOT NULL,
      services TEXT NOT NULL,
      PRIMARY KEY (version_uuid, name)
    );
    CREATE TABLE meta (
      project_uuid TEXT NOT NULL REFERENCES projects(uuid) ON DELETE CASCADE,
      key TEXT NOT NULL,
      value TEXT NOT NULL,
      secret INTEGER NOT NULL DEFAULT 0,
      cas_id INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (project_uuid, key)
    );
    CREATE TABLE events (
      idx INTEGER PRIMARY KEY AUTOINCREMENT,
      time INTEGER NOT NULL,
      actor TEXT NOT NULL,
      project TEXT NOT NULL,
      kind TEXT NOT NULL,
      subject TEXT NOT NULL,
      detail TEXT NOT NULL
    );
    )sql",
    // 2: version tags; the event log becomes append-only; events by project.
    R"sql(
    CREATE TABLE version_tags (
      project_uuid TEXT NOT NULL REFERENCES projects(uuid) ON DELETE CASCADE,
      tag TEXT NOT NULL,
      version_uuid TEXT NOT NULL REFERENCES versions(uuid) ON DELETE CASCADE,
      PRIMARY KEY (project_uuid, tag)
    );
    CREATE INDEX events_by_project ON events(project, idx);
    CREATE TRIGGER events_no_update BEFORE UPDATE ON events
      BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
    CREATE TRIGGER events_no_delete BEFORE DELETE ON events
      BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
    )sql",
    // 3: the task queue.
    R"sql(
    CREATE TABLE tasks (
      uuid TEXT PRIMARY KEY,
      project_uuid TEXT NOT NULL REFERENCES projects(uuid) ON DELETE CASCADE,
      kind TEXT NOT NULL,
      services TEXT NOT NULL DEFAULT '',
      state TEXT NOT NULL,
      origin TEXT NOT NULL,
      trigger_name TEXT NOT NULL DEFAULT '',
      version_uuid TEXT NOT NULL DEFAULT '',
      created_at INTEGER NOT NULL,
      started_at INTEGER,
      finished_at INTEGER,
      steps_done INTEGER NOT NULL DEFAULT 0,
      steps_planned INTEGER NOT NULL DEFAULT 0,
      created INTEGER NOT NULL DEFAULT 0,
      deleted INTEGER NOT NULL DEFAULT 0,
      replaced INTEGER NOT NULL DEFAULT 0,
      failed INTEGER NOT NULL DEFAULT 0,
      error TEXT NOT NULL DEFAULT '',
      wait_for TEXT NOT NULL DEFAULT '',
      actor TEXT NOT NULL DEFAULT '',
      reason TEXT NOT NULL DEFAULT '',
      only_kinds TEXT NOT NULL DEFAULT '',
      auto_kind TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX tasks_by_project ON tasks(project_uuid, state);
    )sql",
    // 4: reprovision filters and canary size (JSON object).
    R"sql(
    ALTER TABLE tasks ADD COLUMN params TEXT NOT NULL DEFAULT '{}';
    )sql",
    // 5: run state (services stopped by a stop task) and deletion in progress.
    R"sql(
    ALTER TABLE projects ADD COLUMN deleting INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE stopped_services (
      project_uuid TEXT NOT NULL REFERENCES projects(uuid) ON DELETE CASCADE,
      service TEXT NOT NULL,
      PRIMARY KEY (project_uuid, service)
    );
    )sql",
    // 6: Triton jobs in flight (counted once when they end, across restarts).
    R"sql(
    CREATE TABLE jobs (
      job_uuid TEXT PRIMARY KEY,
      project_uuid TEXT NOT NULL REFERENCES projects(uuid) ON DELETE CASCADE,
      api TEXT NOT NULL,
      task_uuid TEXT NOT NULL DEFAULT '',
      service TEXT NOT NULL DEFAULT '',
      instance TEXT NOT NULL DEFAULT '',
      alias TEXT NOT NULL DEFAULT '',
      kind TEXT NOT NULL,
      reason TEXT NOT NULL DEFAULT '',
      sent_at INTEGER NOT NULL
    );
    CREATE INDEX jobs_by_project ON jobs(project_uuid);
    )sql",
    // 7: API tokens (hashes only), grants, the Triton account of a project.
    R"sql(
    CREATE TABLE tokens (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      hash TEXT NOT NULL UNIQUE,
      role TEXT NOT NULL,
      project TEXT NOT NULL DEFAULT '',
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL DEFAULT 0,
      created_by TEXT NOT NULL,
      revoked_at INTEGER NOT NULL DEFAULT 0
    );
    CREATE UNIQUE INDEX tokens_live_name ON tokens(name) WHERE revoked_at = 0;
    CREATE TABLE grants (
      subject TEXT NOT NULL,
      project TEXT NOT NULL DEFAULT '',
      role TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      created_by TEXT NOT NULL,
      PRIMARY KEY (subject, project)
    );
    ALTER TABLE projects ADD COLUMN owner TEXT NOT NULL DEFAULT '';
    )sql",
    // 8: the controller's own settings (readonly state).
    R"sql(
    CREATE TABLE settings (
      key TEXT PRIMARY KEY,
      value TEXT NOT NULL,
      updated_at INTEGER NOT NULL,
      updated_by TEXT NOT NULL
    );
    )sql",
    // 9: what the convergence engine remembers of a project between syncs
    // (backoff, crash loops, agent installs), kept across restarts.
    R"sql(
    CREATE TABLE controller_memory (
      project_uuid TEXT PRIMARY KEY REFERENCES projects(uuid) ON DELETE CASCADE,
      body TEXT NOT NULL,
      updated_at INTEGER NOT NULL
    );
    )sql",
    // 10: the count of committed transactions, for the high-water mark
    // (projects/high_water.h).
    R"sql(
    CREATE TABLE store_stamp (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      commits INTEGER NOT NULL
    );
    INSERT INTO store_stamp (id, commits) VALUES (1, 0);
    )sql",
    // 11: since when each instance has run and been healthy (InstanceTimes),
    // kept across restarts. NULL: not running / not healthy.
    R"sql(
    CREATE TABLE instance_times (
      project_uuid TEXT NOT NULL REFERENCES projects(uuid) ON DELETE CASCADE,
      instance TEXT NOT NULL,
      spec_hash TEXT NOT NULL,
      image_uuid TEXT NOT NULL,
      up_since INTEGER,
      healthy_since INTEGER,
      PRIMARY KEY (project_uuid, instance)
    );
    )sql",
    // 12: several nodes on one database: heartbeats and project leases.
    R"sql(
    CREATE TABLE nodes (
      node TEXT PRIMARY KEY,
      address TEXT NOT NULL DEFAULT '',
      started_at INTEGER NOT NULL,
      seen_at INTEGER NOT NULL
    );
    CREATE TABLE leases (
      project_uuid TEXT PRIMARY KEY,
      holder TEXT NOT NULL DEFAULT '',
      epoch INTEGER NOT NULL,
      expires_at INTEGER NOT NULL
    );
    )sql",
    // 13: each instance's health as its project's node last saw it (status
    // answered by another node shows it).
    R"sql(
    ALTER TABLE instance_times ADD COLUMN health TEXT NOT NULL DEFAULT '';
    )sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == SqlProjectStore::kSchemaVersion,
              "one migration per schema version");

// PostgreSQL runs the same steps, in its types: INTEGER is BIGINT, the
// event log's AUTOINCREMENT key an identity column, and its append-only
// triggers call a function. So both stores have the same tables, columns
// and names at every version, and a store moves between them row by row.
std::string PostgresStep(const char* sqlite_step) {
  static const std::regex kAutoincrement(R"(INTEGER PRIMARY KEY AUTOINCREMENT)");
  static const std::regex kInteger(R"(\bINTEGER\b)");
  static const std::regex kTrigger(
      R"(CREATE TRIGGER (\w+) BEFORE (UPDATE|DELETE) ON (\w+)\s+BEGIN SELECT RAISE\(ABORT, '([^']*)'\); END;)");
  std::string out = std::regex_replace(sqlite_step, kAutoincrement, "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY");
  out = std::regex_replace(out, kInteger, "BIGINT");
  std::smatch m;
  std::string rest = out, done;
  while (std::regex_search(rest, m, kTrigger)) {
    std::string fn = absl::StrCat("mariposa_", m[1].str());
    absl::StrAppend(&done, m.prefix().str(), "CREATE FUNCTION ", fn,
                    "() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RAISE EXCEPTION ''", m[4].str(),
                    "''; END'; CREATE TRIGGER ", m[1].str(), " BEFORE ", m[2].str(), " ON ", m[3].str(),
                    " FOR EACH ROW EXECUTE FUNCTION ", fn, "();");
    rest = m.suffix().str();
  }
  return done + rest;
}

// The tables a store is made of, parents first: what CopyStore copies
// (store_stamp is each store's own).
const char* const kStoreTables[] = {
    "projects", "versions", "services", "deployment_groups", "version_tags", "meta", "events",
    "tasks", "stopped_services", "jobs", "tokens", "grants", "settings", "controller_memory", "instance_times",
};

// The last item of each key, in order: the rows of one multi-row upsert,
// which may not name a key twice.
template <typename T, typename Key>
std::vector<const T*> LastOfEach(const std::vector<T>& items, Key key) {
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < items.size(); ++i) last[key(items[i])] = i;
  std::vector<const T*> out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (last[key(items[i])] == i) out.push_back(&items[i]);
  }
  return out;
}

absl::Time FromMicros(int64_t us) { return absl::FromUnixMicros(us); }

std::string Redact(const std::string& value, bool secret) { return secret ? "<secret>" : value; }

constexpr const char* kVersionCols =
    "uuid, project_uuid, number, hash, author, created_at, origin, rolled_back_to, message, warnings, "
    "(SELECT COUNT(*) FROM services s WHERE s.version_uuid = versions.uuid)";

// kVersionCols from column `at` on.
VersionRecord ReadVersion(const Statement& st, int at = 0) {
  VersionRecord v;
  v.uuid = st.Text(at);
  v.project_uuid = st.Text(at + 1);
  v.number = st.Int(at + 2);
  v.hash = st.Text(at + 3);
  v.author = st.Text(at + 4);
  v.created_at = FromMicros(st.Int(at + 5));
  v.origin = st.Text(at + 6);
  v.rolled_back_to = st.Int(at + 7);
  v.message = st.Text(at + 8);
  std::string w = st.Text(at + 9);
  if (!w.empty()) v.warnings = absl::StrSplit(w, '\n');
  v.service_count = static_cast<int>(st.Int(at + 10));
  return v;
}

// A version's tags as the query's aggregate gave them (tags are DNS labels:
// no commas), sorted.
std::vector<std::string> SplitTags(const std::string& joined) {
  std::vector<std::string> tags;
  for (absl::string_view tag : absl::StrSplit(joined, ',', absl::SkipEmpty())) tags.emplace_back(tag);
  std::sort(tags.begin(), tags.end());
  return tags;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqlProjectStore>> SqlProjectStore::Open(const std::string& path,
                                                                            const Clock* clock) {
  return OpenAtVersionForTest(path, clock, kSchemaVersion);
}

absl::StatusOr<std::unique_ptr<SqlProjectStore>> SqlProjectStore::OpenAtVersionForTest(
    const std::string& path, const Clock* clock, int version) {
  ASSIGN_OR_RETURN(auto db, Database::Open(path));
  // WAL + synchronous=FULL: a committed transaction survives kill -9 and
  // power loss.
  RETURN_IF_ERROR(Annotate(db->Exec("PRAGMA journal_mode=WAL"), absl::StrCat("opening store ", path)));
  RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=FULL"));
  RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys=ON"));
  std::unique_ptr<SqlProjectStore> store(new SqlProjectStore(std::move(db), clock));
  {
    absl::MutexLock l(&store->mu_);
    RETURN_IF_ERROR(Annotate(store->Migrate(version), absl::StrCat("migrating store ", path)));
    if (version >= 10) {
      SqlProjectStore* self = store.get();
      store->db_->SetCommitHooks([self] { return self->StampLocked(); }, [self] { self->WriteMarkLocked(); });
    }
  }
  // The read connection (see Read), opened after any migration.
  if (path != ":memory:" && !path.empty()) {
    ASSIGN_OR_RETURN(auto reader, Database::Open(path));
    RETURN_IF_ERROR(Annotate(reader->Exec("PRAGMA query_only=ON"), absl::StrCat("opening store ", path, " to read")));
    absl::MutexLock l(&store->reader_mu_);
    store->reader_ = std::move(reader);
  }
  return store;
}

absl::StatusOr<std::unique_ptr<SqlProjectStore>> SqlProjectStore::OpenPostgres(const std::string& uri,
                                                                               const Clock* clock,
                                                                               int connect_timeout_s) {
  return OpenPostgresAt(uri, clock, connect_timeout_s, kSchemaVersion);
}

absl::StatusOr<std::unique_ptr<SqlProjectStore>> SqlProjectStore::OpenPostgresAt(const std::string& uri,
                                                                                 const Clock* clock,
                                                                                 int connect_timeout_s, int version) {
  ASSIGN_OR_RETURN(auto db, Database::OpenPostgres(uri, connect_timeout_s));
  std::string where = db->path();
  std::unique_ptr<SqlProjectStore> store(new SqlProjectStore(std::move(db), clock));
  {
    absl::MutexLock l(&store->mu_);
    RETURN_IF_ERROR(Annotate(store->MigratePostgres(version), absl::StrCat("migrating the store at ", where)));
    RETURN_IF_ERROR(Annotate(store->UseEventHorizonLocked(), absl::StrCat("opening the store at ", where)));
  }
  // The read connection (see Read): its own session, so that reads do not
  // wait for a writer's statements.
  ASSIGN_OR_RETURN(auto reader, Database::OpenPostgres(uri, connect_timeout_s));
  absl::MutexLock l(&store->reader_mu_);
  store->reader_ = std::move(reader);
  return store;
}

absl::Status SqlProjectStore::UseEventHorizonLocked() {
  // Event indexes come from the identity column's sequence, taken by
  // writers of every node at once (no store-wide write lock): readers stop
  // at the horizon (Database::ReadHorizon), which holds only while the
  // sequence hands out values one at a time (CACHE 1, the default).
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT pg_get_serial_sequence('events', 'idx'), (SELECT seqcache FROM "
                                         "pg_sequence WHERE seqrelid = pg_get_serial_sequence('events', 'idx')::regclass)"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || st.IsNull(0)) return absl::DataLossError("the event log's index (events.idx) has no sequence");
  std::string sequence = st.Text(0);
  if (st.Int(1) != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sequence ", sequence, " caches ", st.Int(1), " values per session; event readers would miss events. Run "
        "ALTER SEQUENCE ", sequence, " CACHE 1 on the database, then start mariposad again"));
  }
  db_->SetHorizonSequence(sequence);
  return absl::OkStatus();
}

bool SqlProjectStore::IsPostgresSpec(const std::string& spec) {
  return absl::StartsWith(spec, "postgresql://") || absl::StartsWith(spec, "postgres://");
}

absl::StatusOr<std::unique_ptr<SqlProjectStore>> SqlProjectStore::OpenSpec(const std::string& spec,
                                                                           const Clock* clock) {
  return OpenSpecAtVersionForTest(spec, clock, kSchemaVersion);
}

absl::StatusOr<std::unique_ptr<SqlProjectStore>> SqlProjectStore::OpenSpecAtVersionForTest(const std::string& spec,
                                                                                           const Clock* clock,
                                                                                           int version) {
  if (IsPostgresSpec(spec)) return OpenPostgresAt(spec, clock, 5, version);
  if (absl::StartsWith(spec, "sqlite:") && spec.size() > 7) return OpenAtVersionForTest(spec.substr(7), clock, version);
  return absl::InvalidArgumentError(absl::StrCat(
      // Only up to the first ':': the rest may hold a password.
      "store \"", ValidUtf8(spec.substr(0, std::min<size_t>(spec.find(':'), 40))), spec.find(':') == std::string::npos ? "" : ":…",
      "\" is neither sqlite:PATH nor a PostgreSQL URI "
      "(postgresql://USER@HOST:PORT/DB, several hosts as HOST1:PORT1,HOST2:PORT2)"));
}

SqlProjectStore::~SqlProjectStore() {
  if (mark_fd_ >= 0) close(mark_fd_);
}

absl::StatusOr<HighWater> SqlProjectStore::ReadHighWaterLocked() {
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT (SELECT commits FROM store_stamp WHERE id = 1), "
                                         "(SELECT COALESCE(MAX(idx), 0) FROM events)"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || st.IsNull(0)) return absl::DataLossError("the store's commit count (table store_stamp) is missing");
  return HighWater{st.Int(0), st.Int(1)};
}

absl::Status SqlProjectStore::StampLocked() {
  ASSIGN_OR_RETURN(auto st, db_->Prepare("UPDATE store_stamp SET commits = commits + 1 WHERE id = 1 "
                                         "RETURNING commits, (SELECT COALESCE(MAX(idx), 0) FROM events)"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return absl::DataLossError("the store's commit count (table store_stamp) is missing");
  pending_stamp_ = HighWater{st.Int(0), st.Int(1)};
  return st.Run();
}

void SqlProjectStore::WriteMarkLocked() {
  if (mark_fd_ < 0) return;
  // No fsync: the store's own commit is durable already; the mark only has to
  // outlive the process (kill -9), and a mark older than the store refuses
  // nothing.
  std::string line = FormatHighWater(pending_stamp_);
  if (pwrite(mark_fd_, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size()) && !mark_failed_) {
    mark_failed_ = true;
    LogError("cannot write the store's high-water mark; start-up cannot check this store against it",
             {{"path", mark_path_}, {"error", std::strerror(errno)}});
  }
}

absl::StatusOr<HighWater> SqlProjectStore::CurrentHighWater() {
  absl::MutexLock l(&mu_);
  return ReadHighWaterLocked();
}

absl::Status SqlProjectStore::KeepHighWaterMark(const std::string& path) {
  absl::MutexLock l(&mu_);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  if (mark_fd_ >= 0) close(mark_fd_);
  mark_fd_ = fd;
  mark_path_ = path;
  ASSIGN_OR_RETURN(pending_stamp_, ReadHighWaterLocked());
  std::string line = FormatHighWater(pending_stamp_);
  if (pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size()) || ftruncate(fd, line.size()) != 0 ||
      fsync(fd) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> SqlProjectStore::SchemaVersionLocked() {
  if (postgres_) {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT (SELECT version FROM mariposa_schema WHERE id = 1) FROM "
                                           "(SELECT to_regclass('mariposa_schema') AS t) x WHERE t IS NOT NULL"));
    ASSIGN_OR_RETURN(bool row, st.Step());
    return row ? static_cast<int>(st.Int(0)) : 0;
  }
  ASSIGN_OR_RETURN(auto st, db_->Prepare("PRAGMA user_version"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? static_cast<int>(st.Int(0)) : 0;
}

absl::Status SqlProjectStore::MigratePostgres(int target) {
  // One transaction under the store's lock: nodes that start together take
  // turns, and a step that fails leaves the schema as it was.
  ASSIGN_OR_RETURN(auto txn, Transaction::Begin(db_.get()));
  RETURN_IF_ERROR(db_->Exec("CREATE TABLE IF NOT EXISTS mariposa_schema (id INTEGER PRIMARY KEY CHECK (id = 1), "
                            "version INTEGER NOT NULL)"));
  ASSIGN_OR_RETURN(int current, SchemaVersionLocked());
  if (current > kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("the store has schema version ", current, " but this mariposad knows only up to ",
                     kSchemaVersion, "; run a newer mariposad on every node"));
  }
  for (int v = current + 1; v <= target; ++v) {
    RETURN_IF_ERROR(Annotate(db_->Exec(PostgresStep(kMigrations[v - 1])), absl::StrCat("schema step ", v)));
    ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO mariposa_schema (id, version) VALUES (1, ?) "
                                           "ON CONFLICT (id) DO UPDATE SET version = excluded.version"));
    st.Bind(1, v);
    RETURN_IF_ERROR(st.Run());
  }
  return txn->Commit();
}

absl::Status SqlProjectStore::Migrate(int target) {
  ASSIGN_OR_RETURN(int current, SchemaVersionLocked());
  if (current > kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("the store has schema version ", current, " but this mariposad knows only up to ",
                     kSchemaVersion, "; run a newer mariposad or restore a backup"));
  }
  for (int v = current + 1; v <= target; ++v) {
    ASSIGN_OR_RETURN(auto txn, Transaction::Begin(db_.get()));
    RETURN_IF_ERROR(Annotate(db_->Exec(kMigrations[v - 1]), absl::StrCat("schema step ", v)));
    RETURN_IF_ERROR(db_->Exec(absl::StrCat("PRAGMA user_version = ", v)));
    RETURN_IF_ERROR(txn->Commit());
  }
  return absl::OkStatus();
}

void SqlProjectStore::SetSecretCodec(const SecretCodec* codec) {
  absl::MutexLock l(&mu_);
  codec_.store(codec);
}

absl::StatusOr<int> SqlProjectStore::ResealSecrets() {
  absl::MutexLock l(&mu_);
  const SecretCodec* codec = codec_.load();
  if (codec == nullptr) return absl::FailedPreconditionError("no key to seal secrets with");
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  std::vector<std::tuple<std::string, std::string, std::string>> rows;  // project, key, stored value
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT project_uuid, key, value FROM meta WHERE secret = 1"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      rows.emplace_back(st.Text(0), st.Text(1), st.Text(2));
    }
  }
  int changed = 0;
  for (const auto& [project, key, stored] : rows) {
    if (codec->SealedWithCurrentKey(stored)) continue;
    std::string place = absl::StrCat(project, "/", key);
    std::string plain = stored;  // a store from before sealing holds plain text
    if (absl::StartsWith(stored, "sealed:")) {
      auto opened = codec->Unseal(stored, place);
      if (!opened.ok()) return Annotate(opened.status(), absl::StrCat("meta key \"", key, "\""));
      plain = *std::move(opened);
    }
    ASSIGN_OR_RETURN(auto up, db_->Prepare("UPDATE meta SET value = ? WHERE project_uuid = ? AND key = ?"));
    up.Bind(1, codec->Seal(plain, place)).Bind(2, project).Bind(3, key);
    RETURN_IF_ERROR(up.Run());
    ++changed;
  }
  RETURN_IF_ERROR(txn->Commit());
  return changed;
}

namespace {
constexpr const char* kTokenCols = "id, name, hash, role, project, created_at, expires_at, created_by, revoked_at";
TokenRecord ReadToken(const Statement& st) {
  TokenRecord t;
  t.id = st.Text(0);
  t.name = st.Text(1);
  t.hash = st.Text(2);
  t.role = st.Text(3);
  t.project = st.Text(4);
  t.created_at = FromMicros(st.Int(5));
  t.expires_at = st.Int(6) == 0 ? absl::InfiniteFuture() : FromMicros(st.Int(6));
  t.created_by = st.Text(7);
  t.revoked_at = st.Int(8) == 0 ? absl::InfiniteFuture() : FromMicros(st.Int(8));
  return t;
}
std::string TokenScope(const std::string& role, const std::string& project) {
  return absl::StrCat(role, " on ", project.empty() ? "every project" : absl::StrCat("project ", project));
}
}  // namespace

absl::StatusOr<TokenRecord> SqlProjectStore::CreateToken(const TokenRecord& t) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  ASSIGN_OR_RETURN(auto dup, db_->Prepare("SELECT COUNT(*) FROM tokens WHERE name = ? AND revoked_at = 0"));
  dup.Bind(1, t.name);
  ASSIGN_OR_RETURN(bool row, dup.Step());
  if (row && dup.Int(0) > 0) {
    return absl::AlreadyExistsError(absl::StrCat("a live token is named \"", t.name,
                                                 "\"; revoke it first (`mariposa admin token revoke ", t.name,
                                                 "`) or choose another name"));
  }
  ASSIGN_OR_RETURN(auto st, db_->Prepare(absl::StrCat("INSERT INTO tokens (", kTokenCols,
                                                      ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)")));
  int64_t now = NowMicros();
  st.Bind(1, t.id).Bind(2, t.name).Bind(3, t.hash).Bind(4, t.role).Bind(5, t.project).Bind(6, now)
      .Bind(7, t.expires_at == absl::InfiniteFuture() ? int64_t{0} : absl::ToUnixMicros(t.expires_at))
      .Bind(8, t.created_by);
  RETURN_IF_ERROR(st.Run());
  RETURN_IF_ERROR(AppendEventLocked(t.created_by, t.project, "auth.token.create", t.name,
                                    absl::StrCat("token ", t.name, " (", t.id, "): ", TokenScope(t.role, t.project),
                                                 t.expires_at == absl::InfiniteFuture()
                                                     ? ", never expires"
                                                     : absl::StrCat(", expires ", absl::FormatTime(t.expires_at))))
                      .status());
  RETURN_IF_ERROR(txn->Commit());
  TokenRecord out = t;
  out.created_at = FromMicros(now);
  return out;
}

absl::StatusOr<std::vector<TokenRecord>> SqlProjectStore::ListTokens() {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare(absl::StrCat("SELECT ", kTokenCols, " FROM tokens ORDER BY created_at")));
  std::vector<TokenRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ReadToken(st));
  }
  return out;
}

absl::StatusOr<TokenRecord> SqlProjectStore::FindTokenByHash(const std::string& hash) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare(absl::StrCat("SELECT ", kTokenCols, " FROM tokens WHERE hash = ?")));
  st.Bind(1, hash);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return absl::NotFoundError("no such token");
  return ReadToken(st);
}

absl::StatusOr<TokenRecord> SqlProjectStore::RevokeToken(const std::string& id_or_name, const std::string& actor) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  ASSIGN_OR_RETURN(auto st, db_->Prepare(absl::StrCat("SELECT ", kTokenCols,
                                                      " FROM tokens WHERE (id = ?1 OR name = ?1) AND revoked_at = 0")));
  st.Bind(1, id_or_name);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("no live token \"", id_or_name,
                                            "\"; `mariposa admin token list` shows the tokens"));
  }
  TokenRecord t = ReadToken(st);
  int64_t now = NowMicros();
  ASSIGN_OR_RETURN(auto up, db_->Prepare("UPDATE tokens SET revoked_at = ? WHERE id = ?"));
  up.Bind(1, now).Bind(2, t.id);
  RETURN_IF_ERROR(up.Run());
  RETURN_IF_ERROR(AppendEventLocked(actor, t.project, "auth.token.revoke", t.name,
                                    absl::StrCat("token ", t.name, " (", t.id, ") revoked")).status());
  RETURN_IF_ERROR(txn->Commit());
  t.revoked_at = FromMicros(now);
  return t;
}

absl::StatusOr<GrantRecord> SqlProjectStore::SetGrant(const GrantRecord& g) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO grants (subject, project, role, created_at, created_by) "
                                         "VALUES (?, ?, ?, ?, ?) ON CONFLICT (subject, project) DO UPDATE SET "
                                         "role = excluded.role, created_at = excluded.created_at, "
                                         "created_by = excluded.created_by"));
  int64_t now = NowMicros();
  st.Bind(1, g.subject).Bind(2, g.project).Bind(3, g.role).Bind(4, now).Bind(5, g.created_by);
  RETURN_IF_ERROR(st.Run());
  RETURN_IF_ERROR(AppendEventLocked(g.created_by, g.project, "auth.grant", g.subject,
                                    absl::StrCat(g.subject, " is ", TokenScope(g.role, g.project))).status());
  RETURN_IF_ERROR(txn->Commit());
  GrantRecord out = g;
  out.created_at = FromMicros(now);
  return out;
}

absl::StatusOr<std::vector<GrantRecord>> SqlProjectStore::ListGrants() {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "SELECT subject, project, role, created_at, created_by FROM grants ORDER BY subject, project"));
  std::vector<GrantRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(GrantRecord{st.Text(0), st.Text(2), st.Text(1), FromMicros(st.Int(3)), st.Text(4)});
  }
  return out;
}

absl::Status SqlProjectStore::DeleteGrant(const std::string& subject, const std::string& project,
                                             const std::string& actor) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  ASSIGN_OR_RETURN(auto st, db_->Prepare("DELETE FROM grants WHERE subject = ? AND project = ?"));
  st.Bind(1, subject).Bind(2, project);
  RETURN_IF_ERROR(st.Run());
  if (db_->Changes() == 0) {
    return absl::NotFoundError(absl::StrCat(subject, " has no grant on ",
                                            project.empty() ? "every project" : absl::StrCat("project ", project),
                                            "; `mariposa admin grants` lists them"));
  }
  RETURN_IF_ERROR(AppendEventLocked(actor, project, "auth.ungrant", subject,
                                    absl::StrCat(subject, " loses its grant on ",
                                                 project.empty() ? "every project" : absl::StrCat("project ", project)))
                      .status());
  return txn->Commit();
}

absl::StatusOr<std::string> SqlProjectStore::GetControllerMemory(const std::string& project_uuid) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT body FROM controller_memory WHERE project_uuid = ?"));
  st.Bind(1, project_uuid);
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Text(0) : std::string();
}

absl::Status SqlProjectStore::PutControllerMemory(const std::string& project_uuid, const std::string& body) {
  absl::MutexLock l(&mu_);
  // A project deleted meanwhile has nothing to remember (no row to refer to).
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "INSERT INTO controller_memory (project_uuid, body, updated_at) "
                                "SELECT uuid, ?, ? FROM projects WHERE uuid = ? "
                                "ON CONFLICT (project_uuid) DO UPDATE SET body = excluded.body, "
                                "updated_at = excluded.updated_at"));
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  st.Bind(1, body).Bind(2, NowMicros()).Bind(3, project_uuid);
  RETURN_IF_ERROR(st.Run());
  return txn->Commit();
}

absl::StatusOr<std::vector<InstanceTimes>> SqlProjectStore::ListInstanceTimes(const std::string& project_uuid) {
  return Read([&](Database* db) -> absl::StatusOr<std::vector<InstanceTimes>> {
    ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT instance, spec_hash, image_uuid, up_since, healthy_since, health "
                                          "FROM instance_times WHERE project_uuid = ? ORDER BY instance"));
    st.Bind(1, project_uuid);
    std::vector<InstanceTimes> out;
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      InstanceTimes t{st.Text(0), st.Text(1), st.Text(2)};
      if (!st.IsNull(3)) t.up_since = FromMicros(st.Int(3));
      if (!st.IsNull(4)) t.healthy_since = FromMicros(st.Int(4));
      t.health = st.Text(5);
      out.push_back(std::move(t));
    }
    return out;
  });
}

absl::Status SqlProjectStore::UpdateInstanceTimes(const std::string& project_uuid,
                                                     const std::vector<InstanceTimes>& changed,
                                                     const std::vector<std::string>& gone) {
  if (changed.empty() && gone.empty()) return absl::OkStatus();
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  {
    // The project's lock is held: it cannot go while this writes.
    ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT 1 FROM projects WHERE uuid = ?"));
    st.Bind(1, project_uuid);
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return absl::OkStatus();  // deleted meanwhile: nothing to keep
  }
  // An instance named twice: as named last.
  std::vector<const InstanceTimes*> rows = LastOfEach(changed, [](const InstanceTimes& t) { return t.instance; });
  RETURN_IF_ERROR(InsertRows(
      db_.get(), "instance_times",
      {"project_uuid", "instance", "spec_hash", "image_uuid", "up_since", "healthy_since", "health"}, rows.size(),
      [&](Statement& st, size_t row, int f) {
        const InstanceTimes& t = *rows[row];
        st.Bind(f, project_uuid).Bind(f + 1, t.instance).Bind(f + 2, t.spec_hash).Bind(f + 3, t.image_uuid);
        if (t.up_since == absl::InfiniteFuture()) st.BindNull(f + 4);
        else st.Bind(f + 4, absl::ToUnixMicros(t.up_since));
        if (t.healthy_since == absl::InfiniteFuture()) st.BindNull(f + 5);
        else st.Bind(f + 5, absl::ToUnixMicros(t.healthy_since));
        st.Bind(f + 6, t.health);
      },
      "ON CONFLICT (project_uuid, instance) DO UPDATE SET spec_hash = excluded.spec_hash, "
      "image_uuid = excluded.image_uuid, up_since = excluded.up_since, "
      "healthy_since = excluded.healthy_since, health = excluded.health"));
  RETURN_IF_ERROR(ForEachBatch(
      db_.get(), gone.size(),
      [](size_t n) {
        return absl::StrCat("DELETE FROM instance_times WHERE project_uuid = ? AND instance IN (", ParamGroups(n, 1), ")");
      },
      [&](Statement& st, size_t first, size_t n) {
        st.Bind(1, project_uuid);
        for (size_t i = 0; i < n; ++i) st.Bind(2 + static_cast<int>(i), gone[first + i]);
        return st.Run();
      }));
  return txn->Commit();
}

absl::StatusOr<std::string> SqlProjectStore::GetSetting(const std::string& key) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT value FROM settings WHERE key = ?"));
  st.Bind(1, key);
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Text(0) : std::string();
}

absl::Status SqlProjectStore::SetSetting(const std::string& key, const std::string& value,
                                            const std::string& actor, const std::string& kind,
                                            const std::string& detail) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "INSERT INTO settings (key, value, updated_at, updated_by) VALUES (?, ?, ?, ?) "
                                "ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                                "updated_at = excluded.updated_at, updated_by = excluded.updated_by"));
  st.Bind(1, key).Bind(2, value).Bind(3, NowMicros()).Bind(4, actor);
  RETURN_IF_ERROR(st.Run());
  RETURN_IF_ERROR(AppendEventLocked(actor, "", kind, key, detail).status());
  return txn->Commit();
}

int SqlProjectStore::SchemaVersion() {
  absl::MutexLock l(&mu_);
  auto v = SchemaVersionLocked();
  return v.ok() ? *v : -1;
}

absl::Status SqlProjectStore::CheckIntegrity() {
  absl::MutexLock l(&mu_);
  if (postgres_) return absl::OkStatus();  // PostgreSQL checks its own pages and keys
  ASSIGN_OR_RETURN(auto st, db_->Prepare("PRAGMA integrity_check"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || st.Text(0) != "ok") return absl::DataLossError(absl::StrCat("integrity_check: ", row ? st.Text(0) : ""));
  ASSIGN_OR_RETURN(auto fk, db_->Prepare("PRAGMA foreign_key_check"));
  ASSIGN_OR_RETURN(bool bad, fk.Step());
  if (bad) return absl::DataLossError(absl::StrCat("foreign_key_check: dangling row in ", fk.Text(0)));
  return absl::OkStatus();
}

namespace {

// type:name of every schema object (tables, indexes, triggers) of `db`.
absl::StatusOr<std::set<std::string>> SchemaObjects(Database* db) {
  ASSIGN_OR_RETURN(auto st, db->Prepare(
                                db->postgres()
                                    ? "SELECT 'table', tablename FROM pg_tables WHERE schemaname = current_schema() "
                                      "UNION SELECT 'index', indexname FROM pg_indexes WHERE schemaname = "
                                      "current_schema() UNION SELECT 'trigger', tgname FROM pg_trigger t JOIN "
                                      "pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = "
                                      "c.relnamespace WHERE NOT t.tgisinternal AND n.nspname = current_schema()"
                                    : "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"));
  std::set<std::string> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.insert(absl::StrCat(st.Text(0), " ", st.Text(1)));
  }
  return out;
}

}  // namespace

absl::Status SqlProjectStore::Verify() {
  int version = SchemaVersion();
  if (version != kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("schema version is ", version, ", expected ", kSchemaVersion));
  }
  std::set<std::string> want, have;
  if (postgres_) {
    // What the migrations make (a fresh PostgreSQL is not at hand).
    for (const char* t : kStoreTables) want.insert(absl::StrCat("table ", t));
    for (const char* o : {"table mariposa_schema", "index events_by_project", "index tasks_by_project",
                          "index jobs_by_project", "index tokens_live_name", "trigger events_no_update",
                          "table nodes", "table leases",
                          "trigger events_no_delete"}) {
      want.insert(o);
    }
  } else {
    ASSIGN_OR_RETURN(auto fresh, Open(":memory:", clock_));
    absl::MutexLock l(&fresh->mu_);
    ASSIGN_OR_RETURN(want, SchemaObjects(fresh->db_.get()));
  }
  {
    absl::MutexLock l(&mu_);
    ASSIGN_OR_RETURN(have, SchemaObjects(db_.get()));
  }
  std::vector<std::string> missing;
  for (const auto& w : want) {
    if (!have.count(w)) missing.push_back(w);
  }
  if (!missing.empty()) {
    return absl::DataLossError(absl::StrCat("schema version ", version, " but missing ", absl::StrJoin(missing, ", ")));
  }
  RETURN_IF_ERROR(CheckIntegrity());
  absl::MutexLock l(&mu_);
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                  "SELECT p.name, v.number, v.hash, v.canonical FROM versions v "
                                  "JOIN projects p ON p.uuid = v.project_uuid"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      if (Sha256Hex(st.Text(3)) != st.Text(2)) {
        return absl::DataLossError(absl::StrCat("version ", st.Int(1), " of project ", ValidUtf8(st.Text(0)),
                                                ": its canonical text no longer matches its sha256"));
      }
    }
  }
  // Text that later goes into replies: protobuf refuses invalid UTF-8.
  static const char* const kText[] = {
      "SELECT 'projects', name, name || description || COALESCE(current_version, '') FROM projects",
      "SELECT 'versions', number, author || origin || message || warnings || manifest FROM versions",
      "SELECT 'services', name, name || service_type || compute_type || brand || image || package || spec_hash || "
      "spec_json || grp FROM services",
      "SELECT 'deployment_groups', name, name || services FROM deployment_groups",
      "SELECT 'meta', key, key || value FROM meta",
      "SELECT 'tasks', uuid, kind || services || state || origin || error || reason || actor || params FROM tasks",
  };
  for (const char* sql : kText) {
    ASSIGN_OR_RETURN(auto st, db_->Prepare(sql));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      std::string text = st.Text(2);
      if (ValidUtf8(text) != text) {
        return absl::DataLossError(
            absl::StrCat("table ", st.Text(0), ", row ", ValidUtf8(st.Text(1)), ": text is not valid UTF-8"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SqlProjectStore::AppendEventLocked(const std::string& actor, const std::string& project,
                                                              const std::string& kind, const std::string& subject,
                                                              const std::string& detail) {
  RETURN_IF_ERROR(db_->PublishHorizon());
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "INSERT INTO events (time, actor, project, kind, subject, detail) "
                                "VALUES (?, ?, ?, ?, ?, ?) RETURNING idx"));
  st.Bind(1, NowMicros()).Bind(2, actor).Bind(3, project).Bind(4, kind).Bind(5, subject).Bind(6, detail);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return absl::InternalError("the event log gave no index for a new event");
  int64_t index = st.Int(0);
  db_->NoticeAtCommit(kEventsNotice);  // watchers here and on every node look again
  return index;
}

absl::StatusOr<ProjectRecord> SqlProjectStore::GetProjectOn(Database* db, const std::string& name_or_uuid,
                                                             std::optional<VersionRecord>* current) {
  // The one aggregate the two dialects spell differently.
  const char* concat = db->postgres() ? "string_agg" : "group_concat";
  std::string sql = absl::StrCat(
      "SELECT p.uuid, p.name, p.description, p.created_at, COALESCE(p.current_version, ''), "
      "COALESCE(v.number, 0), "
      "(SELECT COUNT(*) FROM services s WHERE s.version_uuid = p.current_version), "
      "p.deleting, (SELECT ", concat, "(service, ',') FROM stopped_services x "
      "WHERE x.project_uuid = p.uuid), p.owner");
  if (current != nullptr) {
    // The current version too: kVersionCols of v (its service count is
    // the project's, column 6), then its tags.
    absl::StrAppend(&sql, ", v.uuid, v.project_uuid, v.number, v.hash, v.author, v.created_at, v.origin, "
                          "v.rolled_back_to, v.message, v.warnings, 0, (SELECT ",
                    concat, "(tag, ',') FROM version_tags t WHERE t.version_uuid = v.uuid)");
  }
  absl::StrAppend(&sql, " FROM projects p LEFT JOIN versions v ON v.uuid = p.current_version "
                        "WHERE p.name = ?1 OR p.uuid = ?1");
  ASSIGN_OR_RETURN(auto st, db->Prepare(sql));
  st.Bind(1, name_or_uuid);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("no project \"", name_or_uuid,
                                            "\"; `mariposa project list` shows the projects"));
  }
  ProjectRecord p;
  p.uuid = st.Text(0);
  p.name = st.Text(1);
  p.description = st.Text(2);
  p.created_at = FromMicros(st.Int(3));
  p.current_version = st.Text(4);
  p.current_number = st.Int(5);
  p.service_count = static_cast<int>(st.Int(6));
  p.deleting = st.Int(7) != 0;
  p.delete_volumes = st.Int(7) == 2;
  for (absl::string_view svc : absl::StrSplit(st.Text(8), ',', absl::SkipEmpty())) p.stopped.insert(std::string(svc));
  p.owner = st.Text(9);
  if (current != nullptr) {
    current->reset();
    if (!p.current_version.empty()) {
      *current = ReadVersion(st, 10);
      (*current)->service_count = p.service_count;
      (*current)->tags = SplitTags(st.Text(21));
    }
  }
  return p;
}

absl::StatusOr<std::string> SqlProjectStore::InsertProjectLocked(const std::string& name,
                                                                   const std::string& description,
                                                                   const std::string& owner, const std::string& actor) {
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "INSERT INTO projects (uuid, name, description, created_at, owner) VALUES (?, ?, ?, ?, ?)"));
  std::string uuid = NewUuid();
  st.Bind(1, uuid).Bind(2, name).Bind(3, description).Bind(4, NowMicros()).Bind(5, owner);
  RETURN_IF_ERROR(st.Run());
  std::string detail = owner.empty() ? description : absl::StrCat(description, description.empty() ? "" : "; ",
                                                                  "account ", owner);
  RETURN_IF_ERROR(AppendEventLocked(actor, name, "project.create", uuid, detail).status());
  return uuid;
}

absl::StatusOr<int> SqlProjectStore::ClaimUnownedProjects(const std::string& owner) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT uuid, name FROM projects WHERE owner = '' ORDER BY name"));
  std::vector<std::pair<std::string, std::string>> unowned;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    unowned.emplace_back(st.Text(0), st.Text(1));
  }
  for (const auto& [uuid, name] : unowned) {
    ASSIGN_OR_RETURN(auto up, db_->Prepare("UPDATE projects SET owner = ? WHERE uuid = ?"));
    up.Bind(1, owner).Bind(2, uuid);
    RETURN_IF_ERROR(up.Run());
    RETURN_IF_ERROR(AppendEventLocked("mariposad", name, "project.owner", uuid,
                                      absl::StrCat("account ", owner, " (mariposad's --owner) recorded as its owner"))
                        .status());
  }
  RETURN_IF_ERROR(txn->Commit());
  return static_cast<int>(unowned.size());
}

absl::StatusOr<ProjectRecord> SqlProjectStore::CreateProject(const std::string& name,
                                                                const std::string& description,
                                                                const std::string& actor,
                                                                const std::string& owner) {
  if (!IsDnsLabel(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "project name \"", name, "\" is not a DNS label (lower-case letters, digits and '-', at most 63)"));
  }
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  if (GetProjectLocked(name).ok()) return absl::AlreadyExistsError(absl::StrCat("project \"", name, "\" exists already"));
  ASSIGN_OR_RETURN(std::string uuid, InsertProjectLocked(name, description, owner, actor));
  RETURN_IF_ERROR(txn->Commit());
  return GetProjectLocked(uuid);
}

absl::StatusOr<std::vector<ProjectRecord>> SqlProjectStore::ListProjects() {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT uuid FROM projects ORDER BY name"));
  std::vector<std::string> uuids;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    uuids.push_back(st.Text(0));
  }
  std::vector<ProjectRecord> out;
  for (const auto& u : uuids) {
    ASSIGN_OR_RETURN(auto p, GetProjectLocked(u));
    out.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<ProjectRecord> SqlProjectStore::GetProject(const std::string& name_or_uuid) {
  return Read([&](Database* db) { return GetProjectOn(db, name_or_uuid); });
}

absl::StatusOr<std::pair<ProjectRecord, std::optional<VersionRecord>>> SqlProjectStore::GetProjectWithCurrent(
    const std::string& name_or_uuid) {
  return Read([&](Database* db) -> absl::StatusOr<std::pair<ProjectRecord, std::optional<VersionRecord>>> {
    std::optional<VersionRecord> current;
    ASSIGN_OR_RETURN(ProjectRecord p, GetProjectOn(db, name_or_uuid, &current));
    return std::make_pair(std::move(p), std::move(current));
  });
}

absl::Status SqlProjectStore::DeleteProject(const std::string& name_or_uuid, const std::string& actor) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(name_or_uuid));
  ASSIGN_OR_RETURN(ProjectRecord p, GetProjectLocked(name_or_uuid));
  // projects.current_version is not a foreign key (it would be circular);
  // clear it, then let ON DELETE CASCADE remove versions, services, meta, tags.
  ASSIGN_OR_RETURN(auto st, db_->Prepare("DELETE FROM projects WHERE uuid = ?"));
  st.Bind(1, p.uuid);
  RETURN_IF_ERROR(st.Run());
  RETURN_IF_ERROR(AppendEventLocked(actor, p.name, "project.delete", p.uuid,
                                    absl::StrCat("had ", p.current_number, " versions"))
                      .status());
  RETURN_IF_ERROR(txn->Commit());
  // ON DELETE CASCADE removed its jobs.
  DropJobsLocked(p.uuid);
  return absl::OkStatus();
}

absl::StatusOr<CommitResult> SqlProjectStore::CommitVersion(const NewVersion& v) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(v.project_name));
  CommitResult result;
  auto project = GetProjectLocked(v.project_name);
  if (!project.ok() && absl::IsNotFound(project.status()) && v.create_project && postgres_) {
    // A new project is made under the store's lock: two first applies of
    // one name on two nodes take turns, and the second finds it made.
    txn.reset();
    ASSIGN_OR_RETURN(txn, BeginLocked(WriteScope::kStore));
    project = GetProjectLocked(v.project_name);
  }
  if (!project.ok()) {
    if (!absl::IsNotFound(project.status()) || !v.create_project) return project.status();
    if (!IsDnsLabel(v.project_name)) return absl::InvalidArgumentError("project name is not a DNS label");
    ASSIGN_OR_RETURN(std::string uuid, InsertProjectLocked(v.project_name, v.description, v.owner, v.author));
    result.project_created = true;
    project = GetProjectLocked(uuid);
    if (!project.ok()) return project.status();
  }
  const ProjectRecord& p = *project;
  result.previous_version = p.current_version;
  if (!v.force && v.expected_current != p.current_version) {
    if (p.current_version.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "project ", p.name, " has no version yet, but the apply was based on version ", v.expected_current,
          "; re-run without --previous"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "project ", p.name, " changed since ",
        v.expected_current.empty() ? "you looked (no --previous given)" : absl::StrCat("version ", v.expected_current),
        ": the current version is ", p.current_number, " (", p.current_version,
        "); review `mariposa diff`, then re-run with --previous ", p.current_version, " or --force"));
  }
  if (!p.current_version.empty()) {
    ASSIGN_OR_RETURN(VersionRecord cur, GetVersionLocked(p.uuid, p.current_version, false));
    if (cur.hash == v.hash) {
      result.version = cur;
      result.changed = false;
      RETURN_IF_ERROR(txn->Commit());  // may have created nothing; commits the (empty) txn
      return result;
    }
  }
  std::string uuid = NewUuid();
  // The current version is always the newest: numbers only grow.
  int64_t number = p.current_number + 1;
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                  "INSERT INTO versions (uuid, project_uuid, number, hash, author, created_at, origin, "
                                  "rolled_back_to, message, warnings, manifest, canonical) "
                                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    st.Bind(1, uuid).Bind(2, p.uuid).Bind(3, number).Bind(4, v.hash).Bind(5, v.author).Bind(6, NowMicros());
    st.Bind(7, v.origin).Bind(8, v.rolled_back_to).Bind(9, v.message).Bind(10, absl::StrJoin(v.warnings, "\n"));
    st.Bind(11, v.manifest).Bind(12, v.canonical);
    RETURN_IF_ERROR(st.Run());
  }
  {
    // In multi-row statements: on PostgreSQL each is a round trip.
    RETURN_IF_ERROR(InsertRows(db_.get(), "services",
                               {"version_uuid", "name", "service_type", "compute_type", "brand", "image", "package",
                                "count", "spec_hash", "spec_json", "grp"},
                               v.services.size(), [&](Statement& st, size_t row, int f) {
                                 const ServiceRecord& s = v.services[row];
                                 st.Bind(f, uuid).Bind(f + 1, s.name).Bind(f + 2, s.service_type);
                                 st.Bind(f + 3, s.compute_type).Bind(f + 4, s.brand).Bind(f + 5, s.image);
                                 st.Bind(f + 6, s.package).Bind(f + 7, s.count).Bind(f + 8, s.spec_hash);
                                 st.Bind(f + 9, s.spec_json).Bind(f + 10, s.group);
                               }));
  }
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO deployment_groups (version_uuid, name, services) VALUES (?, ?, ?)"));
    for (const GroupRecord& g : v.groups) {
      st.Bind(1, uuid).Bind(2, g.name).Bind(3, absl::StrJoin(g.services, ","));
      RETURN_IF_ERROR(st.Run());
      RETURN_IF_ERROR(st.Reset());
    }
  }
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("UPDATE projects SET current_version = ?, description = ? WHERE uuid = ?"));
    st.Bind(1, uuid).Bind(2, v.description).Bind(3, p.uuid);
    RETURN_IF_ERROR(st.Run());
  }
  std::string detail = v.origin == "rollback"
                           ? absl::StrCat("version ", number, " restores version ", v.rolled_back_to, " (", v.hash.substr(0, 12), ")")
                           : absl::StrCat("version ", number, " (", v.hash.substr(0, 12), "), ", v.services.size(), " services");
  RETURN_IF_ERROR(AppendEventLocked(v.author, p.name, absl::StrCat("version.", v.origin), uuid, detail).status());
  RETURN_IF_ERROR(txn->Commit());
  ASSIGN_OR_RETURN(result.version, GetVersionLocked(p.uuid, uuid, false));
  result.changed = true;
  return result;
}

absl::StatusOr<std::vector<std::string>> SqlProjectStore::TagsOn(Database* db, const std::string& version_uuid) {
  ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT tag FROM version_tags WHERE version_uuid = ? ORDER BY tag"));
  st.Bind(1, version_uuid);
  std::vector<std::string> tags;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    tags.push_back(st.Text(0));
  }
  return tags;
}

absl::StatusOr<std::vector<VersionRecord>> SqlProjectStore::ListVersions(const std::string& project_uuid) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare(absl::StrCat("SELECT ", kVersionCols,
                                                      " FROM versions WHERE project_uuid = ? ORDER BY number")));
  st.Bind(1, project_uuid);
  std::vector<VersionRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ReadVersion(st));
  }
  for (auto& v : out) {
    ASSIGN_OR_RETURN(v.tags, TagsLocked(v.uuid));
  }
  return out;
}

absl::StatusOr<VersionRecord> SqlProjectStore::GetVersionOn(Database* db, const std::string& project_uuid,
                                                               const std::string& ref, bool include_text) {
  std::string where;
  std::string arg = ref;
  int64_t number;
  if (ref == "current" || ref == "latest") {
    where = "uuid = (SELECT current_version FROM projects WHERE uuid = ?1)";
    arg = project_uuid;
  } else if (absl::SimpleAtoi(ref, &number) && ref.size() < 8) {
    where = "number = ?1";
  } else if (IsUuid(ref)) {
    where = "uuid = ?1";
    arg = absl::AsciiStrToLower(ref);
  } else {
    // A tag, else a uuid prefix.
    ASSIGN_OR_RETURN(auto tag, db->Prepare("SELECT version_uuid FROM version_tags WHERE project_uuid = ? AND tag = ?"));
    tag.Bind(1, project_uuid).Bind(2, ref);
    ASSIGN_OR_RETURN(bool row, tag.Step());
    if (row) {
      where = "uuid = ?1";
      arg = tag.Text(0);
    } else {
      bool hex = ref.size() >= 4;
      for (char c : ref) hex = hex && (absl::ascii_isxdigit(c) || c == '-');
      if (!hex) {
        return absl::NotFoundError(absl::StrCat("no version \"", ref,
                                                "\": give a version number, a tag, or 4+ characters of its uuid"));
      }
      where = "uuid LIKE ?1 || '%'";
      arg = absl::AsciiStrToLower(ref);
    }
  }
  // Its tags in the same query (tags are DNS labels: no commas).
  ASSIGN_OR_RETURN(auto st, db->Prepare(absl::StrCat(
                                "SELECT ", kVersionCols, ", manifest, canonical, (SELECT ",
                                db->postgres() ? "string_agg" : "group_concat",
                                "(tag, ',') FROM version_tags t WHERE t.version_uuid = versions.uuid) "
                                "FROM versions WHERE project_uuid = ?2 AND ",
                                where, " LIMIT 2")));
  st.Bind(1, arg).Bind(2, project_uuid);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("no version \"", ref, "\" in this project; `mariposa versions` lists them"));
  }
  VersionRecord v = ReadVersion(st);
  if (include_text) {
    v.manifest = st.Text(11);
    v.canonical = st.Text(12);
  }
  v.tags = SplitTags(st.Text(13));
  ASSIGN_OR_RETURN(bool second, st.Step());
  if (second) {
    return absl::InvalidArgumentError(absl::StrCat("version prefix \"", ref, "\" is ambiguous; give more characters"));
  }
  return v;
}

absl::StatusOr<VersionRecord> SqlProjectStore::GetVersion(const std::string& project_uuid, const std::string& ref,
                                                             bool include_text) {
  return Read([&](Database* db) { return GetVersionOn(db, project_uuid, ref, include_text); });
}

absl::StatusOr<std::vector<ServiceRecord>> SqlProjectStore::ListServices(const std::string& version_uuid) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "SELECT name, service_type, compute_type, brand, image, package, count, spec_hash, "
                                "spec_json, grp FROM services WHERE version_uuid = ? ORDER BY name"));
  st.Bind(1, version_uuid);
  std::vector<ServiceRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    ServiceRecord s;
    s.name = st.Text(0);
    s.service_type = st.Text(1);
    s.compute_type = st.Text(2);
    s.brand = st.Text(3);
    s.image = st.Text(4);
    s.package = st.Text(5);
    s.count = st.Int(6);
    s.spec_hash = st.Text(7);
    s.spec_json = st.Text(8);
    s.group = st.Text(9);
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<std::vector<GroupRecord>> SqlProjectStore::ListGroups(const std::string& version_uuid) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT name, services FROM deployment_groups WHERE version_uuid = ? ORDER BY name"));
  st.Bind(1, version_uuid);
  std::vector<GroupRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    GroupRecord g;
    g.name = st.Text(0);
    g.services = absl::StrSplit(st.Text(1), ',', absl::SkipEmpty());
    out.push_back(std::move(g));
  }
  return out;
}

absl::StatusOr<VersionRecord> SqlProjectStore::TagVersion(const std::string& project_uuid, const std::string& ref,
                                                             const std::string& tag, const std::string& actor) {
  if (!IsDnsLabel(tag) || absl::ascii_isdigit(tag[0]) || tag == "current" || tag == "latest") {
    return absl::InvalidArgumentError(absl::StrCat(
        "tag \"", tag, "\" must be a DNS label that starts with a letter and is not \"current\" or \"latest\""));
  }
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(VersionRecord v, GetVersionLocked(project_uuid, ref, false));
  ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO version_tags (project_uuid, tag, version_uuid) VALUES (?, ?, ?) "
                                         "ON CONFLICT (project_uuid, tag) DO UPDATE SET version_uuid = excluded.version_uuid"));
  st.Bind(1, project_uuid).Bind(2, tag).Bind(3, v.uuid);
  RETURN_IF_ERROR(st.Run());
  ASSIGN_OR_RETURN(auto p, GetProjectLocked(project_uuid));
  RETURN_IF_ERROR(AppendEventLocked(actor, p.name, "version.tag", v.uuid, absl::StrCat(tag, " -> version ", v.number)).status());
  RETURN_IF_ERROR(txn->Commit());
  return GetVersionLocked(project_uuid, v.uuid, false);
}

absl::StatusOr<std::optional<MetaRecord>> SqlProjectStore::FindMetaLocked(const std::string& project_uuid,
                                                                             const std::string& key) {
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT key, value, secret, cas_id, updated_at FROM meta WHERE project_uuid = ? AND key = ?"));
  st.Bind(1, project_uuid).Bind(2, key);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::optional<MetaRecord>();
  ASSIGN_OR_RETURN(MetaRecord m, ReadMetaRow(st, project_uuid));
  return std::optional<MetaRecord>(std::move(m));
}

absl::StatusOr<MetaRecord> SqlProjectStore::ReadMetaRow(const Statement& st, const std::string& project_uuid) {
  MetaRecord m{st.Text(0), st.Text(1), st.Int(2) != 0, st.Int(3), FromMicros(st.Int(4))};
  const SecretCodec* codec = codec_.load();
  if (m.secret && codec != nullptr) {
    auto plain = codec->Unseal(m.value, absl::StrCat(project_uuid, "/", m.key));
    if (!plain.ok()) return Annotate(plain.status(), absl::StrCat("meta key \"", m.key, "\""));
    m.value = *std::move(plain);
  }
  return m;
}

absl::StatusOr<std::vector<MetaRecord>> SqlProjectStore::ListMeta(const std::string& project_uuid) {
  return Read([&](Database* db) -> absl::StatusOr<std::vector<MetaRecord>> {
    ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT key, value, secret, cas_id, updated_at FROM meta WHERE "
                                          "project_uuid = ? ORDER BY key"));
    st.Bind(1, project_uuid);
    std::vector<MetaRecord> out;
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      ASSIGN_OR_RETURN(MetaRecord m, ReadMetaRow(st, project_uuid));
      out.push_back(std::move(m));
    }
    return out;
  });
}

absl::StatusOr<MetaRecord> SqlProjectStore::GetMeta(const std::string& project_uuid, const std::string& key) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto m, FindMetaLocked(project_uuid, key));
  if (!m) return absl::NotFoundError(absl::StrCat("no meta key \"", key, "\""));
  return *m;
}

absl::Status SqlProjectStore::CheckCasLocked(const std::string& key, const std::optional<MetaRecord>& cur,
                                                std::optional<int64_t> cas) {
  if (!cas.has_value()) return absl::OkStatus();
  int64_t have = cur ? cur->cas_id : 0;
  if (have == *cas) return absl::OkStatus();
  return absl::AbortedError(absl::StrCat(
      "meta key \"", key, "\" ", cur ? absl::StrCat("is at cas ", have) : "does not exist", ", not ", *cas,
      "; someone else changed it: read it again (`mariposa meta get ", key, "`) and retry with the new --cas"));
}

absl::Status SqlProjectStore::CheckMetaRoomLocked(const std::string& project_uuid, const std::string& project_name,
                                                     int64_t new_keys) {
  if (new_keys <= 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(auto count, db_->Prepare("SELECT COUNT(*) FROM meta WHERE project_uuid = ?"));
  count.Bind(1, project_uuid);
  ASSIGN_OR_RETURN(bool row, count.Step());
  int64_t have = row ? count.Int(0) : 0;
  if (have + new_keys > Limits::kMaxStoredMeta) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "project ", project_name, " has ", have, " meta keys; ", new_keys, " more would pass the limit of ",
        Limits::kMaxStoredMeta, " per project; delete unused keys (`mariposa meta delete KEY`) first"));
  }
  return absl::OkStatus();
}

absl::StatusOr<MetaRecord> SqlProjectStore::WriteMetaLocked(const std::string& project_uuid,
                                                               const std::string& project_name, const std::string& key,
                                                               const std::string& value, bool secret,
                                                               const std::string& actor, const std::string& kind) {
  RETURN_IF_ERROR(CheckText(absl::StrCat("value of meta key \"", key, "\""), value, Limits::kMaxValueBytes));
  ASSIGN_OR_RETURN(int64_t cas_id,
                   AppendEventLocked(actor, project_name, kind, key,
                                     absl::StrCat(key, "=", Redact(value, secret), secret ? " (secret)" : "")));
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "INSERT INTO meta (project_uuid, key, value, secret, cas_id, updated_at) "
                                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (project_uuid, key) DO UPDATE SET "
                                "value = excluded.value, secret = excluded.secret, cas_id = excluded.cas_id, "
                                "updated_at = excluded.updated_at"));
  int64_t now = NowMicros();
  // A secret is sealed before it reaches the file (docs/security.md).
  const SecretCodec* codec = codec_.load();
  std::string stored = secret && codec != nullptr ? codec->Seal(value, absl::StrCat(project_uuid, "/", key)) : value;
  st.Bind(1, project_uuid).Bind(2, key).Bind(3, stored).Bind(4, secret).Bind(5, cas_id).Bind(6, now);
  RETURN_IF_ERROR(st.Run());
  return MetaRecord{key, value, secret, cas_id, FromMicros(now)};
}


absl::StatusOr<MetaRecord> SqlProjectStore::UpdateMeta(const std::string& project_uuid, const std::string& key,
                                                          std::optional<int64_t> cas, const std::string& actor,
                                                          const std::string& kind, const MetaUpdate& update) {
  RETURN_IF_ERROR(CheckMetaKey(key));
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(auto p, GetProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(auto cur, FindMetaLocked(p.uuid, key));
  RETURN_IF_ERROR(CheckCasLocked(key, cur, cas));
  if (!cur) RETURN_IF_ERROR(CheckMetaRoomLocked(p.uuid, p.name, 1));
  ASSIGN_OR_RETURN(auto next, update(cur));
  // Once secret, a key stays secret until deleted: a plain overwrite must
  // not make the next reader think the value is safe to print.
  bool secret = next.second || (cur && cur->secret);
  ASSIGN_OR_RETURN(MetaRecord m, WriteMetaLocked(p.uuid, p.name, key, next.first, secret, actor, kind));
  RETURN_IF_ERROR(txn->Commit());
  return m;
}

absl::StatusOr<MetaRecord> SqlProjectStore::SetMeta(const std::string& project_uuid, const std::string& key,
                                                       const std::string& value, bool secret,
                                                       std::optional<int64_t> cas, const std::string& actor) {
  return UpdateMeta(project_uuid, key, cas, actor, "meta.set",
                    [&](const std::optional<MetaRecord>&) -> absl::StatusOr<std::pair<std::string, bool>> {
                      return std::make_pair(value, secret);
                    });
}

absl::Status SqlProjectStore::DeleteMeta(const std::string& project_uuid, const std::string& key,
                                            std::optional<int64_t> cas, const std::string& actor) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(auto p, GetProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(auto cur, FindMetaLocked(p.uuid, key));
  if (!cur) return absl::NotFoundError(absl::StrCat("no meta key \"", key, "\""));
  RETURN_IF_ERROR(CheckCasLocked(key, cur, cas));
  ASSIGN_OR_RETURN(auto st, db_->Prepare("DELETE FROM meta WHERE project_uuid = ? AND key = ?"));
  st.Bind(1, p.uuid).Bind(2, key);
  RETURN_IF_ERROR(st.Run());
  RETURN_IF_ERROR(AppendEventLocked(actor, p.name, "meta.delete", key, key).status());
  return txn->Commit();
}

absl::StatusOr<MetaRecord> SqlProjectStore::IncrMeta(const std::string& project_uuid, const std::string& key,
                                                        int64_t delta, std::optional<int64_t> cas,
                                                        const std::string& actor) {
  return UpdateMeta(project_uuid, key, cas, actor, delta >= 0 ? "meta.incr" : "meta.decr",
                    [&](const std::optional<MetaRecord>& cur) -> absl::StatusOr<std::pair<std::string, bool>> {
                      int64_t value = 0;
                      if (cur && !absl::SimpleAtoi(cur->value, &value)) {
                        return absl::FailedPreconditionError(absl::StrCat(
                            "meta key \"", key, "\" holds ",
                            cur->secret ? "a secret" : absl::StrCat("\"", cur->value, "\""),
                            ", not a whole number; incr/decr work on integers only"));
                      }
                      int64_t sum;
                      RETURN_IF_ERROR(CheckedAdd(value, delta, absl::StrCat("meta key \"", key, "\""), &sum));
                      return std::make_pair(absl::StrCat(sum), false);
                    });
}

absl::StatusOr<int> SqlProjectStore::ImportMeta(const std::string& project_uuid,
                                                   const std::map<std::string, std::string>& entries, bool secret,
                                                   const std::string& actor) {
  if (entries.size() > static_cast<size_t>(Limits::kMaxStoredMeta)) {
    return absl::InvalidArgumentError(absl::StrCat(entries.size(), " entries; a project holds at most ",
                                                   Limits::kMaxStoredMeta, " meta keys"));
  }
  for (const auto& kv : entries) RETURN_IF_ERROR(CheckMetaKey(kv.first));
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(auto p, GetProjectLocked(project_uuid));
  // One read per key: whether it is new (the limit) and whether it is secret.
  std::vector<std::optional<MetaRecord>> current;
  current.reserve(entries.size());
  int64_t new_keys = 0;
  for (const auto& kv : entries) {
    ASSIGN_OR_RETURN(auto cur, FindMetaLocked(p.uuid, kv.first));
    if (!cur) ++new_keys;
    current.push_back(std::move(cur));
  }
  RETURN_IF_ERROR(CheckMetaRoomLocked(p.uuid, p.name, new_keys));
  size_t i = 0;
  for (const auto& kv : entries) {
    const std::optional<MetaRecord>& cur = current[i++];
    RETURN_IF_ERROR(WriteMetaLocked(p.uuid, p.name, kv.first, kv.second, secret || (cur && cur->secret), actor,
                                    "meta.import")
                        .status());
  }
  RETURN_IF_ERROR(txn->Commit());
  return static_cast<int>(entries.size());
}

absl::StatusOr<std::vector<EventRecord>> SqlProjectStore::ListEvents(const std::string& project,
                                                                        int64_t after_index, int limit,
                                                                        const std::vector<std::string>& kinds) {
  absl::MutexLock l(&mu_);
  return QueryEventsLocked("ASC", project, after_index, limit, kinds);
}

absl::StatusOr<std::vector<EventRecord>> SqlProjectStore::ListNewestEvents(const std::string& project,
                                                                              int64_t after_index, int limit,
                                                                              const std::vector<std::string>& kinds) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(std::vector<EventRecord> out, QueryEventsLocked("DESC", project, after_index, limit, kinds));
  std::reverse(out.begin(), out.end());
  return out;
}

namespace {

// " AND (kind = ?4 OR substr(kind, 1, length(?5)) = ?5 ...)" for `kinds`
// (exact, or a prefix ending in "."), one parameter each from `first`; ""
// for none. Bound by BindKinds.
std::string KindsClause(const std::vector<std::string>& kinds, int first) {
  if (kinds.empty()) return "";
  std::vector<std::string> terms;
  int n = first;
  for (const std::string& k : kinds) {
    terms.push_back(absl::EndsWith(k, ".") ? absl::StrCat("substr(kind, 1, length(?", n, ")) = ?", n)
                                           : absl::StrCat("kind = ?", n));
    ++n;
  }
  return absl::StrCat(" AND (", absl::StrJoin(terms, " OR "), ")");
}

void BindKinds(Statement& st, const std::vector<std::string>& kinds, int first) {
  for (size_t k = 0; k < kinds.size(); ++k) st.Bind(first + static_cast<int>(k), kinds[k]);
}

}  // namespace

absl::StatusOr<std::vector<EventRecord>> SqlProjectStore::QueryEventsLocked(const char* order,
                                                                               const std::string& project,
                                                                               int64_t after_index, int limit,
                                                                               const std::vector<std::string>& kinds) {
  // Never past the horizon: on PostgreSQL an event below it may still be
  // committed by a transaction that is open now (common/sql.h).
  ASSIGN_OR_RETURN(int64_t horizon, db_->ReadHorizon());
  ASSIGN_OR_RETURN(auto st, db_->Prepare(absl::StrCat(
                                "SELECT idx, time, actor, project, kind, subject, detail FROM events "
                                "WHERE idx > ?1 AND idx <= ?4 AND (?2 = '' OR project = ?2)", KindsClause(kinds, 5),
                                " ORDER BY idx ", order, " LIMIT ?3")));
  st.Bind(1, after_index).Bind(2, project).Bind(3, limit).Bind(4, horizon);
  BindKinds(st, kinds, 5);
  std::vector<EventRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(EventRecord{st.Int(0), FromMicros(st.Int(1)), st.Text(2), st.Text(3), st.Text(4), st.Text(5), st.Text(6)});
  }
  return out;
}

absl::StatusOr<int64_t> SqlProjectStore::CountEvents(const std::string& project, int64_t after_index,
                                                        int64_t before_index, const std::vector<std::string>& kinds) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(int64_t horizon, db_->ReadHorizon());
  ASSIGN_OR_RETURN(auto st, db_->Prepare(absl::StrCat("SELECT COUNT(*) FROM events WHERE idx > ?1 AND idx < ?3 "
                                                      "AND (?2 = '' OR project = ?2)",
                                                      KindsClause(kinds, 4))));
  st.Bind(1, after_index).Bind(2, project).Bind(3, horizon < before_index ? horizon + 1 : before_index);
  BindKinds(st, kinds, 4);
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Int(0) : 0;
}

absl::StatusOr<int64_t> SqlProjectStore::AppendEvent(const std::string& actor, const std::string& project,
                                                        const std::string& kind, const std::string& subject,
                                                        const std::string& detail) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked(WriteScope::kShared));
  ASSIGN_OR_RETURN(int64_t index, AppendEventLocked(actor, project, kind, subject, detail));
  RETURN_IF_ERROR(txn->Commit());
  return index;
}

absl::Status SqlProjectStore::AppendEvents(const std::vector<EventRecord>& events) {
  if (events.empty()) return absl::OkStatus();
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked(WriteScope::kShared));
  const int64_t now = NowMicros();
  RETURN_IF_ERROR(db_->PublishHorizon());
  // Indexes in the order given (rows of one INSERT take them in order).
  RETURN_IF_ERROR(InsertRows(db_.get(), "events", {"time", "actor", "project", "kind", "subject", "detail"},
                             events.size(), [&](Statement& st, size_t row, int f) {
                               const EventRecord& e = events[row];
                               st.Bind(f, now).Bind(f + 1, e.actor).Bind(f + 2, e.project).Bind(f + 3, e.kind);
                               st.Bind(f + 4, e.subject).Bind(f + 5, e.detail);
                             }));
  db_->NoticeAtCommit(kEventsNotice);  // watchers here and on every node look again
  return txn->Commit();
}

absl::StatusOr<int64_t> SqlProjectStore::LastEventIndex() {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(int64_t horizon, db_->ReadHorizon());
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT COALESCE(MAX(idx), 0) FROM events"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  return std::min(row ? st.Int(0) : 0, horizon);
}

absl::StatusOr<int64_t> SqlProjectStore::Backup(const std::string& path) {
  ASSIGN_OR_RETURN(auto dest, Database::Open(path));
  {
    ASSIGN_OR_RETURN(auto st, dest->Prepare("SELECT COUNT(*) FROM sqlite_master"));
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (row && st.Int(0) > 0) {
      return absl::AlreadyExistsError(absl::StrCat("backup target ", path, " is a database already; choose a new file"));
    }
  }
  if (postgres_) {
    // A store on PostgreSQL is backed up as a SQLite store file, row by row
    // in one transaction: `admin restore` and `admin store-copy` read it.
    dest.reset();
    ASSIGN_OR_RETURN(auto copy, Open(path, clock_));
    RETURN_IF_ERROR(CopyStore(this, copy.get()).status());
    copy.reset();
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return absl::InternalError(absl::StrCat("backup: ", path, " is gone"));
    return static_cast<int64_t>(st.st_size);
  }
  absl::MutexLock l(&mu_);
  sqlite3_backup* b = sqlite3_backup_init(dest->raw(), "main", db_->raw(), "main");
  if (b == nullptr) return absl::InternalError(absl::StrCat("backup: ", sqlite3_errmsg(dest->raw())));
  int rc = sqlite3_backup_step(b, -1);
  sqlite3_backup_finish(b);
  if (rc != SQLITE_DONE) return absl::InternalError(absl::StrCat("backup: ", sqlite3_errstr(rc)));
  ASSIGN_OR_RETURN(auto st, dest->Prepare("PRAGMA page_count"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  int64_t pages = row ? st.Int(0) : 0;
  ASSIGN_OR_RETURN(auto ps, dest->Prepare("PRAGMA page_size"));
  ASSIGN_OR_RETURN(bool prow, ps.Step());
  return pages * (prow ? ps.Int(0) : 0);
}

absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> SqlProjectStore::CopyStore(SqlProjectStore* from,
                                                                                          SqlProjectStore* to) {
  if (from == to) return absl::InvalidArgumentError("a store cannot be copied into itself");
  absl::MutexLock lf(&from->mu_);
  absl::MutexLock lt(&to->mu_);
  // Both under their store's write lock: what is read is one moment of
  // `from`, and `to` gets all of it or nothing.
  ASSIGN_OR_RETURN(auto read, Transaction::Begin(from->db_.get()));
  ASSIGN_OR_RETURN(auto write, Transaction::Begin(to->db_.get()));
  {
    ASSIGN_OR_RETURN(auto st, to->db_->Prepare(
                                  "SELECT (SELECT COUNT(*) FROM projects), (SELECT COUNT(*) FROM events), "
                                  "(SELECT COUNT(*) FROM tokens), (SELECT COUNT(*) FROM grants)"));
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (row && (st.Int(0) > 0 || st.Int(1) > 0 || st.Int(2) > 0 || st.Int(3) > 0)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the target store ", to->where_, " is not empty (", st.Int(0), " projects, ", st.Int(1), " events, ",
          st.Int(2), " tokens, ", st.Int(3), " grants); copy into a new, empty store. Nothing was written"));
    }
  }
  std::vector<std::pair<std::string, int64_t>> counts;
  for (const char* table : kStoreTables) {
    ASSIGN_OR_RETURN(auto st, from->db_->Prepare(absl::StrCat("SELECT * FROM ", table)));
    int64_t n = 0;
    std::optional<Statement> ins;
    int cols = 0;
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      if (!ins) {
        cols = st.Columns();
        std::vector<std::string> names, marks;
        for (int c = 0; c < cols; ++c) {
          names.push_back(st.ColumnName(c));
          marks.push_back("?");
        }
        ASSIGN_OR_RETURN(auto prepared,
                         to->db_->Prepare(absl::StrCat("INSERT INTO ", table, " (", absl::StrJoin(names, ", "),
                                                       ") VALUES (", absl::StrJoin(marks, ", "), ")")));
        ins.emplace(std::move(prepared));
      }
      RETURN_IF_ERROR(ins->Reset());
      for (int c = 0; c < cols; ++c) {
        if (st.IsNull(c)) {
          ins->BindNull(c + 1);
        } else {
          ins->Bind(c + 1, st.Text(c));  // the target's column types convert it
        }
      }
      RETURN_IF_ERROR(Annotate(ins->Run(), absl::StrCat("copying table ", table, " into ", to->where_)));
      ++n;
    }
    counts.emplace_back(table, n);
  }
  if (to->postgres_) {
    // New events continue after the copied ones.
    RETURN_IF_ERROR(to->db_->Exec(
        "SELECT setval(pg_get_serial_sequence('events', 'idx'), GREATEST((SELECT MAX(idx) FROM events), 1), "
        "(SELECT MAX(idx) FROM events) IS NOT NULL)"));
  }
  RETURN_IF_ERROR(write->Commit());
  to->jobs_loaded_ = false;  // read the copied jobs at the next ListJobs
  to->jobs_epoch_.clear();
  to->jobs_by_project_.clear();
  to->job_at_.clear();
  return counts;
}

// ---------------------------------------------------------------- nodes and leases

absl::StatusOr<int64_t> SqlProjectStore::DbNowMicrosLocked() {
  if (!postgres_) return NowMicros();
  // The database's clock: every node compares lease expiries with the same.
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return absl::InternalError("the database did not say its time");
  return st.Int(0);
}

absl::StatusOr<std::unique_ptr<Transaction>> SqlProjectStore::BeginLocked(WriteScope scope) {
  ASSIGN_OR_RETURN(auto txn, Transaction::Begin(db_.get(), scope));
  if (const Fence* f = ScopedFence::Current(); f != nullptr) RETURN_IF_ERROR(CheckFenceLocked(*f));
  return txn;
}

absl::StatusOr<std::unique_ptr<Transaction>> SqlProjectStore::BeginProjectLocked(const std::string& name_or_uuid) {
  ASSIGN_OR_RETURN(auto txn, BeginLocked(WriteScope::kShared));
  if (!postgres_) return txn;
  // The uuid never changes; what the caller reads next is read once the lock
  // is held, so it is what the last writer of the project committed.
  std::string uuid = name_or_uuid;
  if (auto p = GetProjectLocked(name_or_uuid); p.ok()) uuid = p->uuid;
  RETURN_IF_ERROR(txn->LockKey(uuid));
  return txn;
}

absl::StatusOr<std::unique_ptr<Transaction>> SqlProjectStore::BeginTaskLocked(const std::string& task_uuid) {
  ASSIGN_OR_RETURN(auto txn, BeginLocked(WriteScope::kShared));
  if (!postgres_) return txn;
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT project_uuid FROM tasks WHERE uuid = ?"));
  st.Bind(1, task_uuid);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (row) RETURN_IF_ERROR(txn->LockKey(st.Text(0)));
  return txn;
}

absl::Status SqlProjectStore::CheckFenceLocked(const Fence& f) {
  ASSIGN_OR_RETURN(int64_t now, DbNowMicrosLocked());
  // On PostgreSQL the lease row stays as read until the transaction ends: a
  // takeover on another node waits for this write (SQLite: one writer).
  ASSIGN_OR_RETURN(auto st, db_->Prepare(postgres_ ? "SELECT holder, epoch, expires_at FROM leases WHERE project_uuid = ? FOR SHARE"
                                                   : "SELECT holder, epoch, expires_at FROM leases WHERE project_uuid = ?"));
  st.Bind(1, f.project);
  ASSIGN_OR_RETURN(bool row, st.Step());
  std::string holder = row ? st.Text(0) : "";
  int64_t epoch = row ? st.Int(1) : 0, expires = row ? st.Int(2) : 0;
  if (holder == f.node && epoch == f.epoch && expires - absl::ToInt64Microseconds(f.margin) > now) {
    return absl::OkStatus();
  }
  std::string now_held = holder.empty() || expires <= now
                             ? "nobody holds it now"
                             : absl::StrCat("node ", holder, " holds it at epoch ", epoch);
  return absl::AbortedError(absl::StrCat(
      "node ", f.node, " no longer holds the lease of project ", f.project, " at epoch ", f.epoch,
      holder == f.node && epoch == f.epoch ? " with time to act (it runs out within the safety margin)" : "",
      " (", now_held, "); nothing was written. The node holding the lease carries on"));
}

absl::Status SqlProjectStore::CheckFence(const Fence& fence) {
  absl::MutexLock l(&mu_);
  return CheckFenceLocked(fence);
}

absl::StatusOr<LeaseState> SqlProjectStore::Heartbeat(const std::string& node, const std::string& address,
                                                      absl::Time started_at) {
  absl::MutexLock l(&mu_);
  // This node's row only; reads what others committed.
  ASSIGN_OR_RETURN(auto txn, Transaction::Begin(db_.get(), WriteScope::kShared));
  LeaseState out;
  ASSIGN_OR_RETURN(int64_t now, DbNowMicrosLocked());
  out.now = FromMicros(now);
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO nodes (node, address, started_at, seen_at) VALUES (?, ?, ?, ?) "
                                           "ON CONFLICT (node) DO UPDATE SET address = excluded.address, "
                                           "started_at = excluded.started_at, seen_at = excluded.seen_at"));
    st.Bind(1, node).Bind(2, address).Bind(3, absl::ToUnixMicros(started_at)).Bind(4, now);
    RETURN_IF_ERROR(st.Run());
  }
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT node, seen_at, address, started_at FROM nodes ORDER BY node"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.nodes.push_back(NodeBeat{st.Text(0), FromMicros(st.Int(1)), st.Text(2), FromMicros(st.Int(3))});
    }
  }
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT uuid FROM projects ORDER BY uuid"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.projects.push_back(st.Text(0));
    }
  }
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT project_uuid, holder, epoch, expires_at FROM leases"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.leases[st.Text(0)] = Lease{st.Text(0), st.Text(1), st.Int(2), FromMicros(st.Int(3))};
    }
  }
  RETURN_IF_ERROR(txn->Commit());
  return out;
}

absl::StatusOr<std::vector<bool>> SqlProjectStore::WriteLeases(const std::vector<LeaseWrite>& writes) {
  std::vector<bool> made;
  if (writes.empty()) return made;
  absl::MutexLock l(&mu_);
  // Conditional writes of single rows, in the order of the projects' uuids
  // (two nodes' batches never wait for each other in a cycle): a write that
  // waits for another node's re-checks its condition on the row as that
  // one left it (PostgreSQL's READ COMMITTED).
  ASSIGN_OR_RETURN(auto txn, Transaction::Begin(db_.get(), WriteScope::kShared));
  std::vector<size_t> order(writes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return writes[a].project < writes[b].project; });
  made.assign(writes.size(), false);
  ASSIGN_OR_RETURN(int64_t now, DbNowMicrosLocked());
  ASSIGN_OR_RETURN(auto insert, db_->Prepare("INSERT INTO leases (project_uuid, holder, epoch, expires_at) "
                                             "SELECT uuid, ?, ?, ? FROM projects WHERE uuid = ? "
                                             "ON CONFLICT (project_uuid) DO NOTHING"));
  ASSIGN_OR_RETURN(auto acquire, db_->Prepare("UPDATE leases SET holder = ?1, epoch = ?2, expires_at = ?3 "
                                              "WHERE project_uuid = ?4 AND epoch = ?5 AND "
                                              "(holder = '' OR expires_at <= ?6)"));
  ASSIGN_OR_RETURN(auto renew, db_->Prepare("UPDATE leases SET expires_at = ?3 WHERE project_uuid = ?4 AND "
                                            "epoch = ?5 AND holder = ?1 AND expires_at > ?6"));
  ASSIGN_OR_RETURN(auto release, db_->Prepare("UPDATE leases SET holder = '', expires_at = 0 WHERE "
                                              "project_uuid = ?4 AND epoch = ?5 AND holder = ?1"));
  // Numbers a statement does not use are harmless: they are sent typed.
  for (size_t i : order) {
    const LeaseWrite& w = writes[i];
    Statement* st = w.kind == LeaseWrite::kRenew     ? &renew
                    : w.kind == LeaseWrite::kRelease ? &release
                    : w.expected_epoch == 0          ? &insert
                                                     : &acquire;
    RETURN_IF_ERROR(st->Reset());
    st->Bind(1, w.node).Bind(2, w.epoch).Bind(3, absl::ToUnixMicros(w.expires)).Bind(4, w.project);
    if (st != &insert) st->Bind(5, w.expected_epoch).Bind(6, now);
    RETURN_IF_ERROR(st->Run());
    made[i] = db_->Changes() == 1;
  }
  RETURN_IF_ERROR(txn->Commit());
  return made;
}

absl::Status SqlProjectStore::LeaveNode(const std::string& node) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, Transaction::Begin(db_.get(), WriteScope::kShared));
  ASSIGN_OR_RETURN(auto rel, db_->Prepare("UPDATE leases SET holder = '', expires_at = 0 WHERE holder = ?"));
  rel.Bind(1, node);
  RETURN_IF_ERROR(rel.Run());
  ASSIGN_OR_RETURN(auto del, db_->Prepare("DELETE FROM nodes WHERE node = ?"));
  del.Bind(1, node);
  RETURN_IF_ERROR(del.Run());
  return txn->Commit();
}

// ---------------------------------------------------------------- tasks

namespace {

constexpr const char* kTaskCols =
    "uuid, project_uuid, kind, services, state, origin, trigger_name, version_uuid, created_at, "
    "COALESCE(started_at, -1), COALESCE(finished_at, -1), steps_done, steps_planned, created, deleted, replaced, "
    "failed, error, wait_for, actor, reason, only_kinds, auto_kind, params";

std::vector<std::string> SplitList(const std::string& s) { return absl::StrSplit(s, ',', absl::SkipEmpty()); }

absl::Time TimeOrUnset(int64_t us) { return us < 0 ? absl::InfinitePast() : absl::FromUnixMicros(us); }

// Filters, canary and rolling as the params column holds them.
std::string TaskParams(const TaskRecord& t) {
  nlohmann::json j = nlohmann::json::object();
  auto list = [&](const char* key, const std::vector<std::string>& v) {
    if (!v.empty()) j[key] = v;
  };
  list("versions", t.filter_versions);
  list("images", t.filter_images);
  list("servers", t.filter_servers);
  list("instances", t.filter_instances);
  if (t.canary > 0) j["canary"] = t.canary;
  if (t.rolling > 0) j["rolling"] = t.rolling;
  if (!t.paused.empty()) j["paused"] = t.paused;
  if (t.resumed_at != absl::InfinitePast()) j["resumed_at"] = absl::ToUnixMicros(t.resumed_at);
  return j.dump();
}

void ReadTaskParams(const std::string& text, TaskRecord* t) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return;
  auto list = [&](const char* key, std::vector<std::string>* v) {
    if (j.contains(key) && j[key].is_array()) *v = j[key].get<std::vector<std::string>>();
  };
  list("versions", &t->filter_versions);
  list("images", &t->filter_images);
  list("servers", &t->filter_servers);
  list("instances", &t->filter_instances);
  t->canary = j.value("canary", int64_t{0});
  t->rolling = j.value("rolling", int64_t{0});
  t->paused = j.value("paused", std::string());
  if (j.contains("resumed_at") && j["resumed_at"].is_number_integer()) {
    t->resumed_at = absl::FromUnixMicros(j["resumed_at"].get<int64_t>());
  }
}

bool Finished(const std::string& state) { return state == "completed" || state == "failed" || state == "terminated"; }

}  // namespace

absl::StatusOr<std::vector<TaskRecord>> SqlProjectStore::QueryTasksOn(Database* db, const std::string& where,
                                                                        const std::string& arg) {
  ASSIGN_OR_RETURN(auto st, db->Prepare(absl::StrCat("SELECT ", kTaskCols, " FROM tasks WHERE ", where)));
  st.Bind(1, arg);
  std::vector<TaskRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    TaskRecord t;
    t.uuid = st.Text(0);
    t.project_uuid = st.Text(1);
    t.kind = st.Text(2);
    t.services = SplitList(st.Text(3));
    t.state = st.Text(4);
    t.origin = st.Text(5);
    t.trigger = st.Text(6);
    t.version_uuid = st.Text(7);
    t.created_at = absl::FromUnixMicros(st.Int(8));
    t.started_at = TimeOrUnset(st.Int(9));
    t.finished_at = TimeOrUnset(st.Int(10));
    t.steps_done = st.Int(11);
    t.steps_planned = st.Int(12);
    t.created = st.Int(13);
    t.deleted = st.Int(14);
    t.replaced = st.Int(15);
    t.failed = st.Int(16);
    t.error = st.Text(17);
    t.wait_for = SplitList(st.Text(18));
    t.actor = st.Text(19);
    t.reason = st.Text(20);
    t.only = SplitList(st.Text(21));
    t.auto_kind = st.Text(22);
    ReadTaskParams(st.Text(23), &t);
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<TaskRecord> SqlProjectStore::AddTask(const TaskRecord& task, const TaskAdmitter& admit) {
  static const std::set<std::string> kKinds = {"start", "stop", "scale", "reprovision", "freeze", "run"};
  if (!kKinds.count(task.kind)) return absl::InvalidArgumentError(absl::StrCat("unknown task kind \"", task.kind, "\""));
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(task.project_uuid));
  ASSIGN_OR_RETURN(ProjectRecord p, GetProjectLocked(task.project_uuid));
  ASSIGN_OR_RETURN(std::vector<TaskRecord> open,
                   QueryTasksLocked("project_uuid = ?1 AND state IN ('queued', 'active', 'terminating') ORDER BY created_at",
                                    p.uuid));
  TaskRecord t = task;
  t.uuid = NewUuid();
  t.project_uuid = p.uuid;
  // A freeze holds from the moment it is stored: it is active at once.
  t.state = t.kind == "freeze" ? "active" : "queued";
  t.created_at = absl::FromUnixMicros(NowMicros());
  if (t.kind == "freeze") t.started_at = t.created_at;
  std::vector<std::string> terminate;
  RETURN_IF_ERROR(admit(open, &t, &terminate));
  for (const std::string& victim : terminate) {
    ASSIGN_OR_RETURN(auto upd, db_->Prepare(
                                   "UPDATE tasks SET state = CASE WHEN state = 'queued' OR kind = 'freeze' THEN 'terminated' "
                                   "ELSE 'terminating' END, "
                                   "finished_at = CASE WHEN state = 'queued' OR kind = 'freeze' THEN ?2 ELSE finished_at END "
                                   "WHERE uuid = ?1 AND state IN ('queued', 'active')"));
    upd.Bind(1, victim).Bind(2, NowMicros());
    RETURN_IF_ERROR(upd.Run());
    RETURN_IF_ERROR(AppendEventLocked(t.actor, p.name, "task.terminate", victim,
                                      absl::StrCat("by ", t.kind, " task ", t.uuid)).status());
  }
  ASSIGN_OR_RETURN(auto ins, db_->Prepare(
                                 "INSERT INTO tasks (uuid, project_uuid, kind, services, state, origin, trigger_name, "
                                 "version_uuid, created_at, wait_for, actor, reason, only_kinds, auto_kind, params, started_at) "
                                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  ins.Bind(1, t.uuid).Bind(2, t.project_uuid).Bind(3, t.kind).Bind(4, absl::StrJoin(t.services, ","));
  ins.Bind(5, t.state).Bind(6, t.origin).Bind(7, t.trigger).Bind(8, t.version_uuid);
  ins.Bind(9, absl::ToUnixMicros(t.created_at)).Bind(10, absl::StrJoin(t.wait_for, ","));
  ins.Bind(11, t.actor).Bind(12, t.reason).Bind(13, absl::StrJoin(t.only, ",")).Bind(14, t.auto_kind);
  ins.Bind(15, TaskParams(t));
  if (t.kind == "freeze") ins.Bind(16, absl::ToUnixMicros(t.started_at));
  else ins.BindNull(16);
  RETURN_IF_ERROR(ins.Run());
  RETURN_IF_ERROR(AppendEventLocked(t.actor, p.name, "task.add", t.uuid,
                                    absl::StrCat(t.kind, " (", t.origin, t.trigger.empty() ? "" : ", " + t.trigger, ") on ",
                                                 t.services.empty() ? "the project" : absl::StrJoin(t.services, ",")))
                      .status());
  RETURN_IF_ERROR(txn->Commit());
  return t;
}

absl::StatusOr<std::vector<TaskRecord>> SqlProjectStore::ListTasks(const std::string& project_uuid,
                                                                      int finished_limit) {
  return Read([&](Database* db) -> absl::StatusOr<std::vector<TaskRecord>> {
    ASSIGN_OR_RETURN(std::vector<TaskRecord> open,
                     QueryTasksOn(db,
                                  "project_uuid = ?1 AND state IN ('queued', 'active', 'terminating') "
                                  "ORDER BY created_at",
                                  project_uuid));
    if (finished_limit <= 0) return open;  // one round trip less (a no-op Apply asks so)
    ASSIGN_OR_RETURN(std::vector<TaskRecord> done,
                     QueryTasksOn(db,
                                  absl::StrCat("project_uuid = ?1 AND state IN ('completed', 'failed', 'terminated') "
                                               "ORDER BY finished_at DESC, created_at DESC LIMIT ",
                                               std::max(0, finished_limit)),
                                  project_uuid));
    open.insert(open.end(), done.begin(), done.end());
    return open;
  });
}

absl::StatusOr<TaskRecord> SqlProjectStore::GetTask(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(std::vector<TaskRecord> t, QueryTasksLocked("uuid = ?1", uuid));
  // A unique prefix of at least 4 characters names a task too (as git).
  if (t.empty() && uuid.size() >= 4 && uuid.size() < 36 &&
      uuid.find_first_not_of("0123456789abcdef-") == std::string::npos) {
    ASSIGN_OR_RETURN(t, QueryTasksLocked("substr(uuid, 1, length(?1)) = ?1 ORDER BY uuid LIMIT 4", uuid));
    if (t.size() > 1) {
      std::vector<std::string> ids;
      for (const TaskRecord& r : t) ids.push_back(r.uuid);
      return absl::InvalidArgumentError(absl::StrCat("task prefix ", uuid, " names ", t.size() > 3 ? "more than 3" : absl::StrCat(t.size()),
                                                     " tasks (", absl::StrJoin(ids.begin(), ids.begin() + std::min<size_t>(ids.size(), 3), ", "),
                                                     "); give more characters"));
    }
  }
  if (t.empty()) return absl::NotFoundError(absl::StrCat("no task ", uuid, "; `mariposa queue list` shows them"));
  return t[0];
}

absl::StatusOr<TaskRecord> SqlProjectStore::SetTaskState(const std::string& uuid, const std::string& state,
                                                            const std::string& error) {
  static const std::set<std::string> kStates = {"queued", "active", "terminating", "completed", "failed", "terminated"};
  if (!kStates.count(state)) return absl::InvalidArgumentError(absl::StrCat("unknown task state \"", state, "\""));
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginTaskLocked(uuid));
  ASSIGN_OR_RETURN(std::vector<TaskRecord> found, QueryTasksLocked("uuid = ?1", uuid));
  if (found.empty()) return absl::NotFoundError(absl::StrCat("no task ", uuid));
  if (Finished(found[0].state)) {
    return absl::FailedPreconditionError(absl::StrCat("task ", uuid, " already ended (", found[0].state, ")"));
  }
  int64_t now = NowMicros();
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "UPDATE tasks SET state = ?2, error = ?3, "
                                "started_at = CASE WHEN ?2 = 'active' AND started_at IS NULL THEN ?4 ELSE started_at END, "
                                "finished_at = CASE WHEN ?2 IN ('completed', 'failed', 'terminated') THEN ?4 ELSE finished_at END "
                                "WHERE uuid = ?1"));
  st.Bind(1, uuid).Bind(2, state).Bind(3, error).Bind(4, now);
  RETURN_IF_ERROR(st.Run());
  ASSIGN_OR_RETURN(ProjectRecord p, GetProjectLocked(found[0].project_uuid));
  const TaskRecord& t = found[0];
  // Start and stop change the services' run state when they begin to run,
  // atomically with the state: a stop terminated while queued never stops
  // anything.
  if ((t.kind == "stop" || t.kind == "start") && t.state == "queued" && state == "active") {
    ASSIGN_OR_RETURN(auto run, db_->Prepare(t.kind == "stop"
                                                ? "INSERT INTO stopped_services (project_uuid, service) VALUES (?, ?) ON CONFLICT DO NOTHING"
                                                : "DELETE FROM stopped_services WHERE project_uuid = ? AND service = ?"));
    for (const std::string& svc : t.services) {
      run.Bind(1, p.uuid).Bind(2, svc);
      RETURN_IF_ERROR(run.Run());
      RETURN_IF_ERROR(run.Reset());
    }
  }
  std::string detail = !error.empty() ? error
                                      : absl::StrCat(t.kind, " (", t.origin, t.trigger.empty() ? "" : ", " + t.trigger,
                                                     ") on ", t.services.empty() ? "the project" : absl::StrJoin(t.services, ","));
  RETURN_IF_ERROR(AppendEventLocked("mariposad", p.name, absl::StrCat("task.", state), uuid, detail).status());
  RETURN_IF_ERROR(txn->Commit());
  ASSIGN_OR_RETURN(std::vector<TaskRecord> after, QueryTasksLocked("uuid = ?1", uuid));
  return after[0];
}

absl::StatusOr<TaskRecord> SqlProjectStore::SetTaskPaused(const std::string& uuid, const std::string& actor,
                                                             const std::string& reason, bool paused) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginTaskLocked(uuid));
  ASSIGN_OR_RETURN(std::vector<TaskRecord> found, QueryTasksLocked("uuid = ?1", uuid));
  if (found.empty()) return absl::NotFoundError(absl::StrCat("no task ", uuid, "; `mariposa queue list` shows them"));
  TaskRecord t = found[0];
  if (Finished(t.state) || t.state == "terminating") {
    return absl::FailedPreconditionError(absl::StrCat("task ", uuid, " already ended (", t.state, ")"));
  }
  if (t.kind != "reprovision") {
    return absl::FailedPreconditionError(
        absl::StrCat("task ", uuid, " is a ", t.kind, " task; only a rollout (reprovision) can be paused. "
                     "`mariposa freeze` holds every kind of work"));
  }
  if (paused == !t.paused.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("task ", uuid, paused ? " is paused already (" + t.paused + ")"
                                                                            : " is not paused"));
  }
  absl::Time now = FromMicros(NowMicros());
  if (paused) {
    t.paused = absl::StrCat(actor, " at ", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone()),
                            reason.empty() ? "" : ": " + reason);
  } else {
    t.paused.clear();
    t.resumed_at = now;
  }
  ASSIGN_OR_RETURN(auto st, db_->Prepare("UPDATE tasks SET params = ?2 WHERE uuid = ?1"));
  st.Bind(1, uuid).Bind(2, TaskParams(t));
  RETURN_IF_ERROR(st.Run());
  ASSIGN_OR_RETURN(ProjectRecord p, GetProjectLocked(t.project_uuid));
  RETURN_IF_ERROR(AppendEventLocked(actor, p.name, paused ? "task.paused" : "task.resumed", uuid,
                                    paused ? t.paused : absl::StrCat("resumed by ", actor))
                      .status());
  RETURN_IF_ERROR(txn->Commit());
  return t;
}

absl::Status SqlProjectStore::AddTaskProgress(const std::string& uuid, const TaskProgress& d) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked(WriteScope::kShared));
  RETURN_IF_ERROR(AddTaskProgressLocked(uuid, d));
  return txn->Commit();
}

absl::Status SqlProjectStore::AddTaskProgressLocked(const std::string& uuid, const TaskProgress& d) {
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "UPDATE tasks SET steps_done = steps_done + ?2, "
                                "steps_planned = CASE WHEN ?3 >= 0 THEN ?3 ELSE steps_planned END, "
                                "created = created + ?4, deleted = deleted + ?5, replaced = replaced + ?6, "
                                "failed = failed + ?7 WHERE uuid = ?1"));
  st.Bind(1, uuid).Bind(2, d.steps_done).Bind(3, d.steps_planned).Bind(4, d.created).Bind(5, d.deleted);
  st.Bind(6, d.replaced).Bind(7, d.failed);
  return st.Run();
}

absl::Status SqlProjectStore::MarkProjectDeleting(const std::string& name_or_uuid, const std::string& actor,
                                                 bool delete_volumes, const std::string& detail) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(name_or_uuid));
  ASSIGN_OR_RETURN(ProjectRecord p, GetProjectLocked(name_or_uuid));
  // deleting: 1, or 2 with --delete-volumes (an integer column since
  // schema 5: no migration); asked again, --delete-volumes is never undone.
  ASSIGN_OR_RETURN(auto st, db_->Prepare("UPDATE projects SET deleting = CASE WHEN deleting > ?1 THEN deleting "
                                         "ELSE ?1 END WHERE uuid = ?2"));
  st.Bind(1, int64_t{delete_volumes ? 2 : 1}).Bind(2, p.uuid);
  RETURN_IF_ERROR(st.Run());
  RETURN_IF_ERROR(AppendEventLocked(actor, p.name, "project.delete-requested", p.uuid, detail).status());
  return txn->Commit();
}

absl::StatusOr<std::vector<JobRecord>> SqlProjectStore::QueryJobsLocked(const std::string& project_uuid) {
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT job_uuid, project_uuid, api, task_uuid, service, instance, alias, kind, "
                                         "reason, sent_at FROM jobs WHERE ?1 = '' OR project_uuid = ?1 "
                                         "ORDER BY sent_at, job_uuid"));
  st.Bind(1, project_uuid);
  std::vector<JobRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    JobRecord& j = out.emplace_back();
    j.job_uuid = st.Text(0);
    j.project_uuid = st.Text(1);
    j.api = st.Text(2);
    j.task_uuid = st.Text(3);
    j.service = st.Text(4);
    j.instance = st.Text(5);
    j.alias = st.Text(6);
    j.kind = st.Text(7);
    j.reason = st.Text(8);
    j.sent_at = absl::FromUnixMicros(st.Int(9));
  }
  return out;
}

absl::Status SqlProjectStore::LoadJobsLocked() {
  if (jobs_loaded_ || postgres_) return absl::OkStatus();
  ASSIGN_OR_RETURN(auto all, QueryJobsLocked(""));
  for (JobRecord& j : all) {
    JobKey key{absl::ToUnixMicros(j.sent_at), j.job_uuid};
    job_at_[j.job_uuid] = {j.project_uuid, key};
    jobs_by_project_[j.project_uuid][key] = std::move(j);
  }
  jobs_loaded_ = true;
  return absl::OkStatus();
}

int64_t SqlProjectStore::FenceEpochOf(const std::string& project) {
  const Fence* f = ScopedFence::Current();
  return f != nullptr && f->project == project ? f->epoch : -1;
}

void SqlProjectStore::DropJobsLocked(const std::string& project) {
  jobs_epoch_.erase(project);
  auto p = jobs_by_project_.find(project);
  if (p == jobs_by_project_.end()) return;
  for (const auto& kv : p->second) job_at_.erase(kv.first.job_uuid);
  jobs_by_project_.erase(p);
}

void SqlProjectStore::ForgetJobLocked(const std::string& job_uuid) {
  auto at = job_at_.find(job_uuid);
  if (at == job_at_.end()) return;
  auto p = jobs_by_project_.find(at->second.first);
  if (p != jobs_by_project_.end()) {
    p->second.erase(at->second.second);
    if (p->second.empty()) jobs_by_project_.erase(p);
  }
  job_at_.erase(at);
}

absl::Status SqlProjectStore::RecordJobs(const std::vector<JobRecord>& jobs) {
  if (jobs.empty()) return absl::OkStatus();
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(LoadJobsLocked());
  ASSIGN_OR_RETURN(auto txn, BeginLocked(WriteScope::kShared));
  // A job named twice in one call is recorded as it is named last.
  std::vector<const JobRecord*> rows = LastOfEach(jobs, [](const JobRecord& j) { return j.job_uuid; });
  RETURN_IF_ERROR(InsertRows(
      db_.get(), "jobs",
      {"job_uuid", "project_uuid", "api", "task_uuid", "service", "instance", "alias", "kind", "reason", "sent_at"},
      rows.size(),
      [&](Statement& st, size_t row, int f) {
        const JobRecord& j = *rows[row];
        st.Bind(f, j.job_uuid).Bind(f + 1, j.project_uuid).Bind(f + 2, j.api).Bind(f + 3, j.task_uuid);
        st.Bind(f + 4, j.service).Bind(f + 5, j.instance).Bind(f + 6, j.alias).Bind(f + 7, j.kind);
        st.Bind(f + 8, j.reason).Bind(f + 9, absl::ToUnixMicros(j.sent_at));
      },
      "ON CONFLICT (job_uuid) DO UPDATE SET project_uuid = excluded.project_uuid, api = excluded.api, "
      "task_uuid = excluded.task_uuid, service = excluded.service, instance = excluded.instance, "
      "alias = excluded.alias, kind = excluded.kind, reason = excluded.reason, sent_at = excluded.sent_at"));
  RETURN_IF_ERROR(txn->Commit());
  for (const JobRecord& j : jobs) {
    if (postgres_) {
      auto kept = jobs_epoch_.find(j.project_uuid);
      if (kept == jobs_epoch_.end()) continue;
      if (kept->second != FenceEpochOf(j.project_uuid)) {
        DropJobsLocked(j.project_uuid);  // written from outside its lease: read again
        continue;
      }
    }
    ForgetJobLocked(j.job_uuid);  // a job recorded again replaces itself
    // Stored at microseconds, as read back from the table.
    JobKey key{absl::ToUnixMicros(j.sent_at), j.job_uuid};
    JobRecord stored = j;
    stored.sent_at = absl::FromUnixMicros(key.sent_at);
    job_at_[j.job_uuid] = {j.project_uuid, key};
    jobs_by_project_[j.project_uuid][key] = std::move(stored);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<JobRecord>> SqlProjectStore::ListJobsExcept(const std::string& project_uuid,
                                                                          const std::set<std::string>& except) {
  absl::MutexLock l(&mu_);
  const int64_t epoch = postgres_ ? FenceEpochOf(project_uuid) : -1;
  if (postgres_ && (epoch < 0 || jobs_epoch_.count(project_uuid) == 0 || jobs_epoch_[project_uuid] != epoch)) {
    ASSIGN_OR_RETURN(auto all, QueryJobsLocked(project_uuid));
    if (epoch < 0) {  // not this node's to keep
      std::vector<JobRecord> out;
      for (JobRecord& j : all) {
        if (!except.count(j.job_uuid)) out.push_back(std::move(j));
      }
      return out;
    }
    DropJobsLocked(project_uuid);
    for (JobRecord& j : all) {
      JobKey key{absl::ToUnixMicros(j.sent_at), j.job_uuid};
      job_at_[j.job_uuid] = {j.project_uuid, key};
      jobs_by_project_[j.project_uuid][key] = std::move(j);
    }
    jobs_epoch_[project_uuid] = epoch;
  }
  RETURN_IF_ERROR(LoadJobsLocked());
  std::vector<JobRecord> out;
  auto p = jobs_by_project_.find(project_uuid);
  if (p == jobs_by_project_.end()) return out;
  out.reserve(p->second.size() > except.size() ? p->second.size() - except.size() : 0);
  for (const auto& kv : p->second) {
    if (!except.count(kv.first.job_uuid)) out.push_back(kv.second);
  }
  return out;
}

absl::Status SqlProjectStore::FinishJobs(const std::vector<std::pair<std::string, TaskProgress>>& jobs) {
  if (jobs.empty()) return absl::OkStatus();
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(LoadJobsLocked());
  ASSIGN_OR_RETURN(auto txn, BeginLocked(WriteScope::kShared));
  // The statements that take the jobs name their tasks: of two nodes
  // finishing one job at once, one counts it.
  std::vector<std::string> uuids;
  std::map<std::string, std::string> task_of;  // job -> task, for the jobs taken
  for (const auto& job : jobs) uuids.push_back(job.first);
  RETURN_IF_ERROR(ForEachBatch(
      db_.get(), uuids.size(),
      [](size_t n) { return absl::StrCat("DELETE FROM jobs WHERE job_uuid IN (", ParamGroups(n, 1), ") RETURNING job_uuid, task_uuid"); },
      [&](Statement& st, size_t first, size_t n) -> absl::Status {
        for (size_t i = 0; i < n; ++i) st.Bind(1 + static_cast<int>(i), uuids[first + i]);
        while (true) {
          ASSIGN_OR_RETURN(bool row, st.Step());
          if (!row) return absl::OkStatus();
          task_of[st.Text(0)] = st.Text(1);
        }
      }));
  // One update per task, with its jobs' progress added up in their order.
  std::vector<std::string> tasks;
  std::map<std::string, TaskProgress> sum;
  for (const auto& [job_uuid, progress] : jobs) {
    auto taken = task_of.find(job_uuid);
    if (taken == task_of.end() || taken->second.empty()) continue;  // counted already, or no task
    const std::string task = taken->second;
    task_of.erase(taken);  // a job named twice counts once
    auto [it, fresh] = sum.try_emplace(task);
    if (fresh) tasks.push_back(task);
    TaskProgress& t = it->second;
    t.steps_done += progress.steps_done;
    if (progress.steps_planned >= 0) t.steps_planned = progress.steps_planned;
    t.created += progress.created;
    t.deleted += progress.deleted;
    t.replaced += progress.replaced;
    t.failed += progress.failed;
  }
  for (const std::string& task : tasks) RETURN_IF_ERROR(AddTaskProgressLocked(task, sum[task]));
  RETURN_IF_ERROR(txn->Commit());
  for (const auto& job : jobs) ForgetJobLocked(job.first);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TaskRecord>> SqlProjectStore::ListOpenTasks() {
  absl::MutexLock l(&mu_);
  return QueryTasksLocked("state IN ('queued', 'active', 'terminating') AND ?1 = '' ORDER BY created_at", "");
}

absl::StatusOr<std::vector<TaskCount>> SqlProjectStore::CountTasks() {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT kind, state, COUNT(*) FROM tasks GROUP BY kind, state"));
  std::vector<TaskCount> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back({st.Text(0), st.Text(1), st.Int(2)});
  }
  return out;
}

}  // namespace mariposa
