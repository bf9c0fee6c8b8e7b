#include "common/sqlite.h"

#include "absl/strings/str_cat.h"

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

absl::StatusOr<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc, "step");
}

absl::Status Statement::Run() {
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

Database::~Database() {
  for (auto& kv : cache_) sqlite3_finalize(kv.second.stmt);
  sqlite3_close(db_);
}

absl::Status Database::Exec(absl::string_view sql) {
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

absl::StatusOr<std::unique_ptr<Transaction>> Transaction::Begin(Database* db) {
  absl::Status s = db->Exec("BEGIN IMMEDIATE");
  if (!s.ok()) return s;
  return std::unique_ptr<Transaction>(new Transaction(db));
}

Transaction::~Transaction() {
  if (done_) return;
  db_->Exec("ROLLBACK").IgnoreError();
  // Rows written and rolled back are not a commit's.
  db_->changes_at_last_commit_ = sqlite3_total_changes64(db_->raw());
}

absl::Status Transaction::Commit() {
  bool wrote = sqlite3_total_changes64(db_->raw()) != changes_at_begin_;
  if (wrote && db_->before_commit_) {
    absl::Status s = db_->before_commit_();
    if (!s.ok()) return s;  // the destructor rolls back
  }
  absl::Status s = db_->Exec("COMMIT");
  if (!s.ok()) return s;
  done_ = true;
  if (wrote && db_->after_commit_) db_->after_commit_();
  return s;
}

}  // namespace mariposa
