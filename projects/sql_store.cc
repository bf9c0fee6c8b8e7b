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
#include "projects/sql_store_internal.h"

namespace mariposa {

using sql_internal::FromMicros;
using sql_internal::LastOfEach;

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
    // 14: rollouts across data centers (rollout_store.h); `steps` is JSON.
    R"sql(
    CREATE TABLE rollouts (
      uuid TEXT PRIMARY KEY,
      project TEXT NOT NULL,
      version_uuid TEXT NOT NULL,
      hash TEXT NOT NULL,
      state TEXT NOT NULL,
      author TEXT NOT NULL DEFAULT '',
      origin TEXT NOT NULL DEFAULT '',
      manifest TEXT NOT NULL,
      message TEXT NOT NULL DEFAULT '',
      max_parallel INTEGER NOT NULL,
      on_failure TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      steps TEXT NOT NULL
    );
    CREATE INDEX rollouts_by_state ON rollouts(state, created_at);
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
    "rollouts",
};

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
  // The pooled writers (WithWriter), each waking the event watchers here;
  // UseEventHorizonLocked gives them the event log's horizon.
  for (int i = 0; i < kPooledWriters; ++i) {
    ASSIGN_OR_RETURN(auto w, Database::OpenPostgres(uri, connect_timeout_s));
    SqlProjectStore* self = store.get();
    w->SetNoticeHook([self] { self->events_signal_.Notify(); });
    auto pooled = std::make_unique<PooledWriter>();
    absl::MutexLock l(&pooled->mu);
    pooled->db = std::move(w);
    store->writers_.push_back(std::move(pooled));
  }
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
  for (auto& w : writers_) {
    absl::MutexLock l(&w->mu);
    w->db->SetHorizonSequence(sequence);
  }
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
      "SELECT 'rollouts', uuid, project || state || author || origin || manifest || message || steps FROM rollouts",
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
  absl::MutexLock j(&to->jobs_mu_);
  to->jobs_loaded_ = false;  // read the copied jobs at the next ListJobs
  to->jobs_epoch_.clear();
  to->jobs_by_project_.clear();
  to->job_at_.clear();
  return counts;
}

// ---------------------------------------------------------------- nodes and leases

absl::StatusOr<int64_t> SqlProjectStore::DbNowMicrosOn(Database* db) {
  if (!postgres_) return NowMicros();
  // The database's clock: every node compares lease expiries with the same.
  ASSIGN_OR_RETURN(auto st, db->Prepare(absl::StrCat("SELECT ", kPgNowMicros)));
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return absl::InternalError("the database did not say its time");
  return st.Int(0);
}

absl::StatusOr<std::unique_ptr<Transaction>> SqlProjectStore::BeginOn(Database* db, WriteScope scope) {
  const Fence* f = ScopedFence::Current();
  std::optional<std::string> project = f != nullptr ? db->Literal(f->project) : std::nullopt;
  if (!project) {  // SQLite, or no fence
    ASSIGN_OR_RETURN(auto txn, Transaction::Begin(db, scope));
    if (f != nullptr) RETURN_IF_ERROR(CheckFenceOn(db, *f));
    return txn;
  }
  // PostgreSQL: BEGIN, the store's lock, the lease row (kept as read until
  // the end) and the database's clock in one round trip, not three.
  std::optional<PgResult> rows;
  ASSIGN_OR_RETURN(auto txn, Transaction::BeginThen(db, scope, LeaseRowPg(*project), &rows));
  LeaseRead read;
  if (rows && rows->rows() > 0) read = {rows->Text(0, 0), rows->Int(0, 1), rows->Int(0, 2), rows->Int(0, 3)};
  RETURN_IF_ERROR(FenceHolds(*f, read));
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

}  // namespace mariposa
