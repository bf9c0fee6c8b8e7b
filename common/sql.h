// A thin RAII layer over SQL databases returning absl::Status: SQLite (the
// embedded store) and PostgreSQL through libpq (several nodes on one
// database). One store's code runs on both: statements are written once,
// with `?` / `?N` parameters, in the SQL both understand (INSERT … ON
// CONFLICT, RETURNING); PostgreSQL gets them as $N. Not thread-safe: the
// owner of a Database serializes access to it.
#ifndef MARIPOSA_COMMON_SQL_H_
#define MARIPOSA_COMMON_SQL_H_

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/pg.h"

namespace mariposa {

class Database;

// `sql` with SQLite's `?` and `?N` parameters as PostgreSQL's `$N` (outside
// quoted text and names).
std::string ToPostgresParams(absl::string_view sql);

// A statement on PostgreSQL: its parameters as text, run at the first Step
// or Run, its rows read from the result.
struct PgStatement {
  Database* db = nullptr;
  const std::string* sql = nullptr;  // with $N parameters (cached by the Database)
  std::vector<std::optional<std::string>> params;
  std::vector<bool> int8;
  std::optional<PgResult> result;
  int row = -1;
  void Set(int i, std::optional<std::string> v, bool is_int) {
    if (params.size() < static_cast<size_t>(i)) {
      params.resize(i);
      int8.resize(i, false);
    }
    params[i - 1] = std::move(v);
    int8[i - 1] = is_int;
  }
};

// A prepared statement. SQLite statements from Database::Prepare are cached:
// on destruction they are reset for the next Prepare of the same SQL.
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt, bool* in_use = nullptr) : db_(db), stmt_(stmt), in_use_(in_use) {}
  explicit Statement(std::unique_ptr<PgStatement> pg) : pg_(std::move(pg)) {}
  Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_), in_use_(o.in_use_), pg_(std::move(o.pg_)) {
    o.stmt_ = nullptr;
  }
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
    if (pg_) {
      pg_->Set(i, std::string(s), false);
    } else {
      sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    }
    return *this;
  }
  Statement& Bind(int i, const char* s) { return Bind(i, absl::string_view(s)); }
  Statement& Bind(int i, const std::string& s) { return Bind(i, absl::string_view(s)); }
  Statement& Bind(int i, int64_t v) {
    if (pg_) {
      pg_->Set(i, std::to_string(v), true);
    } else {
      sqlite3_bind_int64(stmt_, i, v);
    }
    return *this;
  }
  Statement& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  Statement& Bind(int i, bool v) { return Bind(i, static_cast<int64_t>(v ? 1 : 0)); }
  Statement& BindNull(int i) {
    if (pg_) {
      pg_->Set(i, std::nullopt, false);
    } else {
      sqlite3_bind_null(stmt_, i);
    }
    return *this;
  }

  // True while a row is available; false when done; error status otherwise.
  absl::StatusOr<bool> Step();
  // Steps to completion, ignoring rows.
  absl::Status Run();
  // Ready to run again, with no parameters bound.
  absl::Status Reset() {
    if (pg_) {
      pg_->result.reset();
      pg_->row = -1;
      pg_->params.clear();
      pg_->int8.clear();
    } else {
      sqlite3_reset(stmt_);
      sqlite3_clear_bindings(stmt_);
    }
    return absl::OkStatus();
  }

  std::string Text(int col) const {
    if (pg_) return pg_->result->Text(pg_->row, col);
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(stmt_, col)) : "";
  }
  int64_t Int(int col) const {
    if (pg_) return pg_->result->Int(pg_->row, col);
    return sqlite3_column_int64(stmt_, col);
  }
  bool IsNull(int col) const {
    if (pg_) return pg_->result->IsNull(pg_->row, col);
    return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
  }
  // The result's columns (on PostgreSQL: after the first Step).
  int Columns() const;
  std::string ColumnName(int col) const;

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  bool* in_use_ = nullptr;  // the cache slot's flag, or null for an uncached statement
  std::unique_ptr<PgStatement> pg_;
};

class Database {
 public:
  // Opens (creating if needed) the SQLite database at `path`; ":memory:"
  // for an in-memory database.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path);
  // Connects to PostgreSQL (`uri`: a libpq URI or key=value string, several
  // hosts allowed). UNAVAILABLE naming the database when it cannot be
  // reached.
  static absl::StatusOr<std::unique_ptr<Database>> OpenPostgres(const std::string& uri, int connect_timeout_s = 5);
  ~Database();

  bool postgres() const { return pg_ != nullptr; }
  // PostgreSQL: `text` as a quoted, escaped SQL literal for this connection
  // (nullopt on SQLite, or when it cannot be one).
  std::optional<std::string> Literal(absl::string_view text) const {
    return pg_ ? pg_->Literal(text) : std::nullopt;
  }
  // Runs statements without parameters (several at once allowed).
  absl::Status Exec(absl::string_view sql);
  // Prepares `sql`, reusing a cached statement when the same text is not in
  // use already.
  absl::StatusOr<Statement> Prepare(absl::string_view sql);
  // Rows changed by the last statement that ran.
  int64_t Changes() const { return pg_ ? pg_changes_ : sqlite3_changes(db_); }
  sqlite3* raw() { return db_; }  // SQLite only
  // The file (SQLite) or "PostgreSQL at host:port/db", for messages.
  const std::string& path() const { return path_; }

  // Run by every Transaction::Commit that wrote a row (SQLite only): `before`
  // inside the transaction, just before COMMIT (its error rolls the
  // transaction back), `after` once the COMMIT succeeded. The store uses
  // them to count its commits. A transaction that wrote nothing runs
  // neither (and stays a read).
  void SetCommitHooks(std::function<absl::Status()> before, std::function<void()> after) {
    before_commit_ = std::move(before);
    after_commit_ = std::move(after);
  }
  // A notice to give when the current transaction commits (at once outside
  // one): on PostgreSQL `pg_notify(kWakeChannel, payload)` inside the
  // transaction, so every node listening hears it exactly when the change is
  // visible; then, on both dialects, `on_notice` (SetNoticeHook) in this
  // process. A rolled-back transaction gives none.
  void NoticeAtCommit(absl::string_view payload);
  void SetNoticeHook(std::function<void()> on_notice) { on_notice_ = std::move(on_notice); }
  // Every commit that wrote rows on this connection, Transaction or not
  // (SQLite's commit hook); tests compare it with the commits the store
  // counted.
  int64_t commits_seen() const { return commits_seen_; }

  // PostgreSQL: runs `sql` ($N parameters). Outside a transaction, a lost
  // connection is opened again first; inside one, its loss fails every
  // statement until the transaction ends (never a half-done write).
  absl::StatusOr<PgResult> PgRun(const std::string& sql, const std::vector<std::optional<std::string>>& params,
                                 const std::vector<bool>& int8);

  // PostgreSQL: the sequence whose values index an append-only log (the
  // store's events), so that write transactions (which may take values from
  // it in any order) publish a horizon and readers of the log can read only
  // what no open transaction can still add to. Unset (and on SQLite, where
  // writers take turns), there is no horizon.
  void SetHorizonSequence(std::string sequence) { horizon_sequence_ = std::move(sequence); }
  // Before the current transaction first takes a value from the sequence:
  // publishes the sequence's last value as this transaction's horizon (a
  // shared advisory lock, seen by every node in pg_locks until the
  // transaction ends; every value it takes later is above it). Once per
  // transaction; a no-op without a horizon sequence. Only a transaction
  // that writes to the log holds readers back, and its commit gives the
  // notice that wakes them.
  absl::Status PublishHorizon();
  // The highest log index at or below which every index has been
  // committed or rolled back for good: a reader that reads indexes up to it, with a
  // statement run after this call, misses nothing that commits later.
  // INT64_MAX when there is no horizon (SQLite; no sequence set).
  absl::StatusOr<int64_t> ReadHorizon();

 private:
  friend class Transaction;
  Database(sqlite3* db, std::string path);
  Database(std::unique_ptr<PgConnection> pg);
  absl::Status PgReady();
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  sqlite3* db_ = nullptr;
  std::string path_;
  std::map<std::string, Cached, std::less<>> cache_;
  std::function<absl::Status()> before_commit_;
  std::function<void()> after_commit_;
  std::function<void()> on_notice_;
  std::string notice_;  // the payload to give at the next commit ("" = none)
  absl::Status GiveNotice();  // PostgreSQL: pg_notify (inside the transaction, before COMMIT)
  void NoticeGiven();                            // after COMMIT: the hook
  int64_t commits_seen_ = 0;
  int64_t changes_at_last_commit_ = 0;  // sqlite3_total_changes64 then
  // PostgreSQL.
  std::unique_ptr<PgConnection> pg_;
  std::map<std::string, std::string, std::less<>> pg_sql_;  // SQLite text -> $N text
  int64_t pg_changes_ = 0;
  bool in_transaction_ = false;
  std::string horizon_sequence_;
  bool horizon_published_ = false;  // in the current transaction
};

// What a write transaction keeps others from writing at the same time on
// PostgreSQL. (SQLite has one writer at a time whatever the scope: BEGIN
// IMMEDIATE.)
enum class WriteScope {
  // The whole store: no other write transaction runs alongside (schema
  // steps, copies, tokens and grants, settings, projects made or claimed).
  kStore,
  // Alongside other kShared transactions; the transaction locks what it
  // writes with LockKey (a project's uuid) or row locks.
  kShared,
};

// A write transaction: on SQLite BEGIN IMMEDIATE; on PostgreSQL BEGIN and
// the store's lock (exclusive for kStore, shared for kShared) in one round
// trip. ROLLBACK on destruction unless Commit()ed.
class Transaction {
 public:
  static absl::StatusOr<std::unique_ptr<Transaction>> Begin(Database* db, WriteScope scope = WriteScope::kStore);
  // PostgreSQL only: the same, and then `then` (one statement without
  // parameters: its values written in with Database::Literal) in the same
  // round trip; its rows in `*rows`. A failed `then` rolls back and fails.
  static absl::StatusOr<std::unique_ptr<Transaction>> BeginThen(Database* db, WriteScope scope, absl::string_view then,
                                                                std::optional<PgResult>* rows);
  ~Transaction();
  absl::Status Commit();
  // PostgreSQL, kShared: `key`'s lock (an advisory lock on a hash of it)
  // until the transaction ends, so that writers of the same key (a
  // project's uuid) take turns. Take keys in sorted order when taking
  // several. No-op for kStore and on SQLite.
  absl::Status LockKey(absl::string_view key);

 private:
  explicit Transaction(Database* db, WriteScope scope)
      : db_(db), scope_(scope), changes_at_begin_(db->postgres() ? 0 : sqlite3_total_changes64(db->raw())) {}
  Database* db_;
  WriteScope scope_;
  int64_t changes_at_begin_;
  bool done_ = false;
};

// Runs one statement per batch of rows: 64 rows a statement, then 32, 16,
// … for the rest, so that at most seven statement texts are ever prepared
// and 1,000 rows take 17 statements (on PostgreSQL, 17 round trips instead
// of 1,000). `sql(n)` is the text for n rows; `run(st, first_row, n)` binds
// and runs it (a prepared statement, reset before each batch).
absl::Status ForEachBatch(Database* db, size_t rows, const std::function<std::string(size_t n)>& sql,
                          const std::function<absl::Status(Statement& st, size_t first_row, size_t n)>& run);
// "(?, ?, ?), (?, ?, ?)": `n` groups of `width` parameters.
std::string ParamGroups(size_t n, int width);

// Inserts `rows` rows into `table` (`columns`) with multi-row INSERTs
// (ForEachBatch), each followed by `suffix` (e.g. an ON CONFLICT clause; a
// batch must then not hold one key twice). `bind(st, row, first)` binds the
// row's values at parameters first, first + 1, …
absl::Status InsertRows(Database* db, absl::string_view table, const std::vector<std::string>& columns, size_t rows,
                        const std::function<void(Statement& st, size_t row, int first)>& bind,
                        absl::string_view suffix = "");

// The advisory lock keys of the store's write transactions on PostgreSQL:
// the store's (shared or exclusive), keys' (two-int form: this class, then
// a hash of the key), and horizons' (kHorizonLockBase + the sequence value
// at the start; pg_locks shows it as classid = its upper 32 bits and objid
// = its lower 32, objsubid 1).
constexpr int64_t kStoreWriteLock = 0x6d6172697061;  // "maripa"
constexpr int32_t kKeyLockClass = 0x6d6b6579;  // "mkey"
constexpr int64_t kHorizonLockBase = int64_t{0x4d} << 56;

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_SQL_H_
