// PostgreSQL through libpq (issue 33): one connection, statements with
// parameters ($1, $2, …), results as text. Errors say which database
// (host:port/dbname, never the password) and map to codes a caller can act
// on:
//   UNAVAILABLE          the database cannot be reached or the connection
//                        was lost (SQLSTATE class 08, 57P01..57P03); Reset()
//                        reconnects;
//   ALREADY_EXISTS       a unique key is taken (23505);
//   FAILED_PRECONDITION  another constraint refused the row (class 23);
//   ABORTED              a serialization failure or deadlock (40001,
//                        40P01): run the transaction again;
//   RESOURCE_EXHAUSTED   the server is out of a resource (class 53);
//   INTERNAL             anything else (a statement the code got wrong).
#ifndef MARIPOSA_COMMON_PG_H_
#define MARIPOSA_COMMON_PG_H_

#include <cstdint>
#include <string>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

struct pg_conn;
struct pg_result;

namespace mariposa {

// The code for a SQLSTATE (see above); OK for "00000" and "".
absl::StatusCode PgCode(absl::string_view sqlstate);

// A statement's rows, as text.
class PgResult {
 public:
  explicit PgResult(pg_result* r);
  ~PgResult();
  PgResult(PgResult&& o) noexcept;
  PgResult& operator=(PgResult&& o) noexcept;
  PgResult(const PgResult&) = delete;

  int rows() const;
  bool IsNull(int row, int col) const;
  std::string Text(int row, int col) const;  // "" for NULL
  int64_t Int(int row, int col) const;       // 0 for NULL or not a number
  int64_t affected() const;                  // rows changed by INSERT/UPDATE/DELETE
  int columns() const;
  std::string column_name(int col) const;

 private:
  pg_result* r_;
};

// The LISTEN/NOTIFY channel of the nodes on one PostgreSQL (the daemon's
// WakeBus), and the notice the store gives on it when events were committed.
inline constexpr char kWakeChannel[] = "mariposa_wake";
inline constexpr char kEventsNotice[] = "events";

class PgConnection {
 public:
  // `uri`: a libpq URI or key=value string (several hosts allowed). Fails
  // with UNAVAILABLE naming the database when it cannot be reached within
  // `connect_timeout_s` seconds per host.
  static absl::StatusOr<std::unique_ptr<PgConnection>> Open(const std::string& uri, int connect_timeout_s = 5);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs `sql` with `params` ($1 …; nullopt is NULL). `int8` (when given,
  // one flag per parameter) sends those parameters as bigint; the others'
  // types the server infers from where they stand.
  absl::StatusOr<PgResult> Exec(absl::string_view sql, const std::vector<std::optional<std::string>>& params = {},
                                const std::vector<bool>& int8 = {});
  // The same, as a statement prepared on this connection at its first use
  // and run by name afterwards (the server parses and plans it once): for
  // the statements a program runs again and again.
  absl::StatusOr<PgResult> ExecPrepared(const std::string& sql, const std::vector<std::optional<std::string>>& params,
                                        const std::vector<bool>& int8);
  // Runs several statements without parameters (a schema step) in one
  // round trip; `what` names them in an error.
  absl::Status ExecScript(absl::string_view sql, absl::string_view what = "a schema step");
  // The same, with the rows of the script's last statement.
  absl::StatusOr<PgResult> ExecScriptRows(absl::string_view sql, absl::string_view what);
  // `text` as an SQL string literal for this connection (quoted, escaped);
  // nullopt when it cannot be (invalid in the connection's encoding).
  std::optional<std::string> Literal(absl::string_view text) const;
  // False once the connection is lost (the server went away).
  bool ok() const;
  // A connection option in effect ("tcp_user_timeout", …; "" when unset).
  std::string Option(const std::string& keyword) const;

  // LISTEN/NOTIFY: after Exec("LISTEN channel"), waits until a notification
  // arrives, `wake_fd` becomes readable (another thread's way to end the
  // wait) or the connection fails; returns the payloads that arrived (none
  // when woken). UNAVAILABLE when the connection is lost.
  absl::StatusOr<std::vector<std::string>> WaitForNotifications(int wake_fd);
  // Reconnects after UNAVAILABLE (same URI; the next host of a multi-host
  // URI when the first is gone).
  absl::Status Reset();
  // "PostgreSQL at host:port/dbname", for messages.
  const std::string& where() const { return where_; }

 private:
  PgConnection(pg_conn* c, std::string uri);
  void Describe();
  absl::Status Error(const std::string& what, const std::string& sqlstate, const std::string& message) const;
  // `res` as a result, or (cleared) as the error of `what`; its SQLSTATE to
  // `sqlstate` when given.
  absl::StatusOr<PgResult> Finish(pg_result* res, const std::string& what, std::string* sqlstate = nullptr);
  pg_conn* c_;
  std::string uri_;
  std::string where_;
  std::map<std::string, std::string> prepared_;  // sql + parameter types -> statement name
};

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_PG_H_
