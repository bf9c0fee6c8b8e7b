#include "common/sql.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace mariposa {
namespace {

absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what) {
  std::string msg = absl::StrCat("sqlite ", what, ": ", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(msg);
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(msg);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

}  // namespace

std::string ToPostgresParams(absl::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int next = 1;
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (quote != 0) {
      out += c;
      if (c == quote) quote = 0;  // a doubled quote closes and reopens: same result
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out += c;
      continue;
    }
    if (c != '?') {
      out += c;
      continue;
    }
    size_t j = i + 1;
    while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') ++j;
    if (j > i + 1) {
      out += '$';
      out.append(sql.data() + i + 1, j - i - 1);
      i = j - 1;
    } else {
      out += '$';
      out += std::to_string(next++);
    }
  }
  return out;
}

absl::StatusOr<bool> Statement::Step() {
  if (pg_) {
    if (!pg_->result) {
      auto r = pg_->db->PgRun(*pg_->sql, pg_->params, pg_->int8);
      if (!r.ok()) return r.status();
      pg_->result.emplace(*std::move(r));
      pg_->row = -1;
    }
    ++pg_->row;
    return pg_->row < pg_->result->rows();
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc, "step");
}

int Statement::Columns() const {
  if (pg_) return pg_->result ? pg_->result->columns() : 0;
  return sqlite3_column_count(stmt_);
}

std::string Statement::ColumnName(int col) const {
  if (pg_) return pg_->result ? pg_->result->column_name(col) : "";
  const char* n = sqlite3_column_name(stmt_, col);
  return n ? n : "";
}

absl::Status Statement::Run() {
  if (pg_) {
    auto r = pg_->db->PgRun(*pg_->sql, pg_->params, pg_->int8);
    return r.status();
  }
  while (true) {
    auto r = Step();
    if (!r.ok()) return r.status();
    if (!*r) return absl::OkStatus();
  }
}

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    absl::Status s = absl::UnavailableError(
        absl::StrCat("cannot open database ", path, ": ", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    sqlite3_close(db);
    return s;
  }
  sqlite3_busy_timeout(db, 5000);
  return std::unique_ptr<Database>(new Database(db, path));
}

Database::Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {
  sqlite3_commit_hook(
      db_,
      [](void* self) {
        Database* d = static_cast<Database*>(self);
        int64_t changes = sqlite3_total_changes64(d->db_);
        if (changes != d->changes_at_last_commit_) ++d->commits_seen_;  // it wrote rows
        d->changes_at_last_commit_ = changes;
        return 0;
      },
      this);
}

absl::StatusOr<std::unique_ptr<Database>> Database::OpenPostgres(const std::string& uri, int connect_timeout_s) {
  auto c = PgConnection::Open(uri, connect_timeout_s);
  if (!c.ok()) return c.status();
  return std::unique_ptr<Database>(new Database(*std::move(c)));
}

Database::Database(std::unique_ptr<PgConnection> pg) : path_(pg->where()), pg_(std::move(pg)) {}

Database::~Database() {
  for (auto& kv : cache_) sqlite3_finalize(kv.second.stmt);
  if (db_ != nullptr) sqlite3_close(db_);
}

absl::Status Database::PgReady() {
  if (pg_->ok()) return absl::OkStatus();
  if (in_transaction_) {
    return absl::UnavailableError(absl::StrCat(path_, " was lost in the middle of a transaction; nothing of it was "
                                               "written. The connection is opened again for the next request"));
  }
  absl::Status s = pg_->Reset();
  if (s.ok()) path_ = pg_->where();
  return s;
}

absl::StatusOr<PgResult> Database::PgRun(const std::string& sql, const std::vector<std::optional<std::string>>& params,
                                         const std::vector<bool>& int8) {
  absl::Status ready = PgReady();
  if (!ready.ok()) return ready;
  auto r = pg_->ExecPrepared(sql, params, int8);
  if (!r.ok() && absl::IsUnavailable(r.status()) && !in_transaction_ && !pg_->ok()) {
    // Outside a transaction the store only reads (every write is in one):
    // a connection found dead (the server restarted, a failover to another
    // host of the URI) is opened again and the read asked once more.
    if (PgReady().ok()) r = pg_->ExecPrepared(sql, params, int8);
  }
  if (r.ok()) pg_changes_ = r->affected();
  return r;
}

absl::Status Database::Exec(absl::string_view sql) {
  if (pg_) {
    absl::Status ready = PgReady();
    if (!ready.ok()) return ready;
    return pg_->ExecScript(sql);
  }
  char* err = nullptr;
  int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    absl::Status s = SqliteError(nullptr, rc, "exec");
    return absl::Status(s.code(), absl::StrCat("sqlite exec: ", msg));
  }
  return absl::OkStatus();
}

absl::StatusOr<Statement> Database::Prepare(absl::string_view sql) {
  if (pg_) {
    auto it = pg_sql_.find(sql);
    if (it == pg_sql_.end()) it = pg_sql_.emplace(std::string(sql), ToPostgresParams(sql)).first;
    auto st = std::make_unique<PgStatement>();
    st->db = this;
    st->sql = &it->second;
    return Statement(std::move(st));
  }
  auto it = cache_.find(sql);
  if (it != cache_.end() && !it->second.in_use) {
    it->second.in_use = true;
    return Statement(db_, it->second.stmt, &it->second.in_use);
  }
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db_, rc, absl::StrCat("prepare \"", sql.substr(0, 60), "\""));
  if (it == cache_.end()) {
    Cached& slot = cache_[std::string(sql)];
    slot.stmt = stmt;
    slot.in_use = true;
    return Statement(db_, stmt, &slot.in_use);
  }
  return Statement(db_, stmt);  // the cached one is busy (nested use): a private copy
}

absl::StatusOr<std::unique_ptr<Transaction>> Transaction::Begin(Database* db, WriteScope scope) {
  if (db->postgres()) return BeginThen(db, scope, "", nullptr);
  absl::Status s = db->Exec("BEGIN IMMEDIATE");
  if (!s.ok()) return s;
  return std::unique_ptr<Transaction>(new Transaction(db, scope));
}

absl::StatusOr<std::unique_ptr<Transaction>> Transaction::BeginThen(Database* db, WriteScope scope,
                                                                   absl::string_view then,
                                                                   std::optional<PgResult>* rows) {
  if (!db->postgres()) return absl::InternalError("Transaction::BeginThen is for PostgreSQL");
  absl::Status ready = db->PgReady();
  if (!ready.ok()) return ready;
  db->horizon_published_ = false;
  // BEGIN, the store's write lock and `then` in one round trip.
  std::string script = absl::StrCat("BEGIN; SELECT pg_advisory_xact_lock", scope == WriteScope::kStore ? "" : "_shared",
                                    "(", kStoreWriteLock, ")");
  if (!then.empty()) absl::StrAppend(&script, "; ", then);
  absl::StatusOr<PgResult> last = db->pg_->ExecScriptRows(
      script, then.empty() ? "BEGIN and the store's write lock" : "BEGIN, the store's write lock and a read");
  db->in_transaction_ = true;
  std::unique_ptr<Transaction> t(new Transaction(db, scope));  // rolls back if the lock or the read failed
  if (!last.ok()) return last.status();
  if (rows != nullptr) rows->emplace(std::move(*last));
  return t;
}

absl::Status Transaction::LockKey(absl::string_view key) {
  if (!db_->postgres() || scope_ == WriteScope::kStore) return absl::OkStatus();
  return db_->PgRun(absl::StrCat("SELECT pg_advisory_xact_lock(", kKeyLockClass, ", hashtext($1))"),
                    {std::string(key)}, {false})
      .status();
}

absl::Status Database::PublishHorizon() {
  if (!pg_ || horizon_sequence_.empty() || horizon_published_) return absl::OkStatus();
  if (!in_transaction_) {
    return absl::InternalError("a log entry written outside a transaction: readers could miss it");
  }
  RETURN_IF_ERROR(PgRun(absl::StrCat("SELECT pg_advisory_xact_lock_shared($1 + CASE WHEN is_called THEN last_value "
                                     "ELSE last_value - 1 END) FROM ",
                                     horizon_sequence_),
                        {std::to_string(kHorizonLockBase)}, {true})
                      .status());
  horizon_published_ = true;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Database::ReadHorizon() {
  if (!pg_ || horizon_sequence_.empty()) return std::numeric_limits<int64_t>::max();
  // In this order, each its own statement: the sequence's last value L,
  // then the lowest horizon still held H, then (the caller) the rows. A
  // writer whose horizon lock is not seen yet takes its values after the
  // locks were read, so above L; one whose lock is seen takes values above
  // its H; one that ended before the locks were read is in the caller's
  // snapshot, taken after (PostgreSQL makes a commit visible before it
  // releases the transaction's locks). So every index up to min(L, H) is
  // committed or rolled back for good.
  ASSIGN_OR_RETURN(PgResult last, PgRun(absl::StrCat("SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 "
                                                     "END FROM ", horizon_sequence_),
                                        {}, {}));
  if (last.rows() != 1) return absl::DataLossError(absl::StrCat("sequence ", horizon_sequence_, " has no value"));
  int64_t bound = last.Int(0, 0);
  ASSIGN_OR_RETURN(PgResult held,
                   PgRun("SELECT MIN(((classid::bigint - $1) << 32) | objid::bigint) FROM pg_locks "
                         "WHERE locktype = 'advisory' AND objsubid = 1 AND classid::bigint >= $1 AND "
                         "classid::bigint < $1 + 16777216 AND "
                         "database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                         {std::to_string(kHorizonLockBase >> 32)}, {true}));
  if (held.rows() == 1 && !held.IsNull(0, 0)) bound = std::min(bound, held.Int(0, 0));
  return bound;
}

void Database::NoticeAtCommit(absl::string_view payload) {
  bool in_transaction = postgres() ? in_transaction_ : sqlite3_get_autocommit(db_) == 0;
  notice_ = std::string(payload);
  if (in_transaction) return;  // given by Transaction::Commit
  if (GiveNotice().ok()) NoticeGiven();
  else notice_.clear();  // the wake-up is lost: watchers read again within their poll
}

absl::Status Database::GiveNotice() {
  if (notice_.empty() || !postgres()) return absl::OkStatus();
  return PgRun("SELECT pg_notify($1, $2)", {std::string(kWakeChannel), notice_}, {}).status();
}

void Database::NoticeGiven() {
  if (notice_.empty()) return;
  notice_.clear();
  if (on_notice_) on_notice_();
}

Transaction::~Transaction() {
  if (done_) return;
  db_->notice_.clear();  // rolled back: nothing to tell
  if (db_->postgres()) {
    if (db_->pg_->ok()) db_->pg_->ExecScript("ROLLBACK").IgnoreError();
    db_->in_transaction_ = false;
    return;
  }
  db_->Exec("ROLLBACK").IgnoreError();
  // Rows written and rolled back are not a commit's.
  db_->changes_at_last_commit_ = sqlite3_total_changes64(db_->raw());
}

absl::Status Transaction::Commit() {
  if (db_->postgres()) {
    absl::Status ready = db_->PgReady();
    // The wake-up (NOTIFY, sent by PostgreSQL at the commit) and COMMIT in
    // one round trip.
    std::string script = "COMMIT";
    if (ready.ok() && !db_->notice_.empty()) {
      std::optional<std::string> channel = db_->pg_->Literal(kWakeChannel), payload = db_->pg_->Literal(db_->notice_);
      if (channel && payload) script = absl::StrCat("SELECT pg_notify(", *channel, ", ", *payload, "); COMMIT");
      else ready = db_->GiveNotice();
    }
    absl::Status s = ready.ok() ? db_->pg_->ExecScript(script, "COMMIT") : ready;
    // A statement before COMMIT that failed leaves the transaction open and
    // aborted: end it.
    if (!s.ok() && s.code() != absl::StatusCode::kUnavailable && db_->pg_->ok()) {
      db_->pg_->ExecScript("ROLLBACK").IgnoreError();
    }
    if (s.ok()) db_->NoticeGiven();
    else db_->notice_.clear();
    done_ = true;  // committed, or rolled back by the server; either way over
    db_->in_transaction_ = false;
    if (!s.ok() && s.code() == absl::StatusCode::kUnavailable) {
      return absl::UnavailableError(absl::StrCat(db_->path_, " was lost while committing: the write may or may not "
                                                 "have been kept. Read it back before trying again (",
                                                 s.message(), ")"));
    }
    return s;
  }
  bool wrote = sqlite3_total_changes64(db_->raw()) != changes_at_begin_;
  if (wrote && db_->before_commit_) {
    absl::Status s = db_->before_commit_();
    if (!s.ok()) return s;  // the destructor rolls back
  }
  absl::Status s = db_->Exec("COMMIT");
  if (!s.ok()) return s;
  done_ = true;
  if (wrote && db_->after_commit_) db_->after_commit_();
  db_->NoticeGiven();
  return s;
}

absl::Status ForEachBatch(Database* db, size_t rows, const std::function<std::string(size_t n)>& sql,
                          const std::function<absl::Status(Statement& st, size_t first_row, size_t n)>& run) {
  size_t row = 0;
  for (size_t batch = 64; row < rows; batch /= 2) {
    if (rows - row < batch) continue;
    auto st = db->Prepare(sql(batch));
    if (!st.ok()) return st.status();
    while (rows - row >= batch) {
      if (absl::Status s = st->Reset(); !s.ok()) return s;
      if (absl::Status s = run(*st, row, batch); !s.ok()) return s;
      row += batch;
    }
    if (absl::Status s = st->Reset(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string ParamGroups(size_t n, int width) {
  std::string one = absl::StrCat("(", std::string(2 * width - 1, '?'), ")");
  for (int i = 1; i < 2 * width - 1; i += 2) one[i + 1] = ',';
  std::string out;
  out.reserve(n * (one.size() + 2));
  for (size_t i = 0; i < n; ++i) absl::StrAppend(&out, i ? ", " : "", one);
  return out;
}

absl::Status InsertRows(Database* db, absl::string_view table, const std::vector<std::string>& columns, size_t rows,
                        const std::function<void(Statement& st, size_t row, int first)>& bind,
                        absl::string_view suffix) {
  const int width = static_cast<int>(columns.size());
  return ForEachBatch(
      db, rows,
      [&](size_t n) {
        return absl::StrCat("INSERT INTO ", table, " (", absl::StrJoin(columns, ", "), ") VALUES ",
                            ParamGroups(n, width), suffix.empty() ? "" : " ", suffix);
      },
      [&](Statement& st, size_t first_row, size_t n) {
        for (size_t i = 0; i < n; ++i) bind(st, first_row + i, 1 + static_cast<int>(i) * width);
        return st.Run();
      });
}

}  // namespace mariposa
