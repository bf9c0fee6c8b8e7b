// A thin RAII wrapper over the SQLite C API returning absl::Status. Not
// thread-safe: the owner of a Database serializes access to it.
#ifndef MARIPOSA_COMMON_SQLITE_H_
#define MARIPOSA_COMMON_SQLITE_H_

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace mariposa {

class Database;

// A prepared statement. Statements from Database::Prepare are cached: on
// destruction they are reset for the next Prepare of the same SQL.
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt, bool* in_use = nullptr) : db_(db), stmt_(stmt), in_use_(in_use) {}
  Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_), in_use_(o.in_use_) { o.stmt_ = nullptr; }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() {
    if (stmt_ == nullptr) return;
    if (in_use_ != nullptr) {
      sqlite3_reset(stmt_);
      sqlite3_clear_bindings(stmt_);
      *in_use_ = false;
    } else {
      sqlite3_finalize(stmt_);
    }
  }

  // Parameters are 1-based, as in SQLite.
  Statement& Bind(int i, absl::string_view s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& Bind(int i, const char* s) { return Bind(i, absl::string_view(s)); }
  Statement& Bind(int i, const std::string& s) { return Bind(i, absl::string_view(s)); }
  Statement& Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); return *this; }
  Statement& Bind(int i, int v) { sqlite3_bind_int64(stmt_, i, v); return *this; }
  Statement& Bind(int i, bool v) { sqlite3_bind_int64(stmt_, i, v ? 1 : 0); return *this; }
  Statement& BindNull(int i) { sqlite3_bind_null(stmt_, i); return *this; }

  // True while a row is available; false when done; error status otherwise.
  absl::StatusOr<bool> Step();
  // Steps to completion, ignoring rows.
  absl::Status Run();
  absl::Status Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    return absl::OkStatus();
  }

  std::string Text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(stmt_, col)) : "";
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  bool* in_use_;  // the cache slot's flag, or null for an uncached statement
};

class Database {
 public:
  // Opens (creating if needed) `path`; ":memory:" for an in-memory database.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path);
  ~Database();

  absl::Status Exec(absl::string_view sql);
  // Prepares `sql`, reusing a cached statement when the same text is not in
  // use already.
  absl::StatusOr<Statement> Prepare(absl::string_view sql);
  int64_t LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  sqlite3* raw() { return db_; }
  const std::string& path() const { return path_; }

  // Run by every Transaction::Commit that wrote a row: `before` inside the
  // transaction, just before COMMIT (its error rolls the transaction back),
  // `after` once the COMMIT succeeded. The store uses them to count its
  // commits. A transaction that wrote nothing runs neither (and stays a read).
  void SetCommitHooks(std::function<absl::Status()> before, std::function<void()> after) {
    before_commit_ = std::move(before);
    after_commit_ = std::move(after);
  }
  // Every commit that wrote rows on this connection, Transaction or not
  // (SQLite's commit hook); tests compare it with the commits the store
  // counted.
  int64_t commits_seen() const { return commits_seen_; }

 private:
  friend class Transaction;
  Database(sqlite3* db, std::string path);
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  sqlite3* db_;
  std::string path_;
  std::map<std::string, Cached, std::less<>> cache_;
  std::function<absl::Status()> before_commit_;
  std::function<void()> after_commit_;
  int64_t commits_seen_ = 0;
  int64_t changes_at_last_commit_ = 0;  // sqlite3_total_changes64 then
};

// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless Commit()ed.
class Transaction {
 public:
  static absl::StatusOr<std::unique_ptr<Transaction>> Begin(Database* db);
  ~Transaction();
  absl::Status Commit();

 private:
  explicit Transaction(Database* db) : db_(db), changes_at_begin_(sqlite3_total_changes64(db->raw())) {}
  Database* db_;
  int64_t changes_at_begin_;
  bool done_ = false;
};

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_SQLITE_H_
