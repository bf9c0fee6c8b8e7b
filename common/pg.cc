#include "common/pg.h"

#include <poll.h>
#include <postgresql/libpq-fe.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace mariposa {

absl::StatusCode PgCode(absl::string_view s) {
  if (s.empty() || s == "00000") return absl::StatusCode::kOk;
  if (absl::StartsWith(s, "08") || s == "57P01" || s == "57P02" || s == "57P03") {
    return absl::StatusCode::kUnavailable;
  }
  if (s == "23505") return absl::StatusCode::kAlreadyExists;
  if (absl::StartsWith(s, "23")) return absl::StatusCode::kFailedPrecondition;
  if (s == "40001" || s == "40P01") return absl::StatusCode::kAborted;
  if (absl::StartsWith(s, "53")) return absl::StatusCode::kResourceExhausted;
  return absl::StatusCode::kInternal;
}

PgResult::PgResult(pg_result* r) : r_(r) {}
PgResult::~PgResult() {
  if (r_ != nullptr) PQclear(r_);
}
PgResult::PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_ != nullptr) PQclear(r_);
    r_ = o.r_;
    o.r_ = nullptr;
  }
  return *this;
}
int PgResult::rows() const { return r_ == nullptr ? 0 : PQntuples(r_); }
bool PgResult::IsNull(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
std::string PgResult::Text(int row, int col) const {
  return IsNull(row, col) ? std::string() : std::string(PQgetvalue(r_, row, col), PQgetlength(r_, row, col));
}
int64_t PgResult::Int(int row, int col) const {
  int64_t v = 0;
  return absl::SimpleAtoi(Text(row, col), &v) ? v : 0;
}
int64_t PgResult::affected() const {
  int64_t v = 0;
  return r_ != nullptr && absl::SimpleAtoi(PQcmdTuples(r_), &v) ? v : 0;
}

int PgResult::columns() const { return r_ == nullptr ? 0 : PQnfields(r_); }
std::string PgResult::column_name(int col) const {
  const char* n = r_ == nullptr ? nullptr : PQfname(r_, col);
  return n ? n : "";
}

PgConnection::PgConnection(pg_conn* c, std::string uri) : c_(c), uri_(std::move(uri)) { Describe(); }

PgConnection::~PgConnection() {
  if (c_ != nullptr) PQfinish(c_);
}

void PgConnection::Describe() {
  // From the connection, not the URI: the URI may hold a password.
  const char* host = PQhost(c_);
  const char* port = PQport(c_);
  const char* db = PQdb(c_);
  where_ = absl::StrCat("PostgreSQL at ", host && *host ? host : "?", ":", port && *port ? port : "?", "/",
                        db && *db ? db : "?");
}

absl::Status PgConnection::Error(const std::string& what, const std::string& sqlstate,
                                 const std::string& message) const {
  absl::StatusCode code = PgCode(sqlstate);
  if (code == absl::StatusCode::kOk || PQstatus(c_) != CONNECTION_OK) code = absl::StatusCode::kUnavailable;
  std::string text(absl::StripAsciiWhitespace(message));
  if (code == absl::StatusCode::kUnavailable) {
    return absl::UnavailableError(absl::StrCat(where_, " cannot be reached (", what, ": ", text,
                                               "); nothing was written. Check that the database runs and "
                                               "answers; the connection is tried again"));
  }
  return absl::Status(code, absl::StrCat(where_, ": ", what, ": ", text,
                                         sqlstate.empty() ? "" : absl::StrCat(" (SQLSTATE ", sqlstate, ")")));
}

absl::StatusOr<std::unique_ptr<PgConnection>> PgConnection::Open(const std::string& uri, int connect_timeout_s) {
  // A connection whose peer went away (a host cut off, a link down) is
  // noticed within seconds, not after TCP's retransmissions give up (up to
  // 15 minutes; after a 30 s partition the next retransmission alone may
  // come 25 s after the link is back): sent data unacknowledged for 5 s,
  // or an idle connection whose keepalives go unanswered for 5 + 3 × 2 s,
  // fails, and the caller reconnects. Given before `dbname`, so that the
  // URI's own values win.
  const char* keys[] = {"keepalives",       "keepalives_idle", "keepalives_interval", "keepalives_count",
                        "tcp_user_timeout", "dbname",          "connect_timeout",     nullptr};
  std::string timeout = absl::StrCat(connect_timeout_s);
  const char* values[] = {"1", "5", "2", "3", "5000", uri.c_str(), timeout.c_str(), nullptr};
  // expand_dbname: `uri` is read as a URI or key=value string; the
  // connect_timeout given here applies unless the URI names its own.
  pg_conn* c = PQconnectdbParams(keys, values, 1);
  if (c == nullptr) return absl::ResourceExhaustedError("libpq could not allocate a connection");
  // Server notices ("relation … already exists, skipping") are not errors
  // and would reach stderr unformatted.
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  std::unique_ptr<PgConnection> conn(new PgConnection(c, uri));
  if (PQstatus(c) != CONNECTION_OK) return conn->Error("connecting", "", PQerrorMessage(c));
  return conn;
}

bool PgConnection::ok() const { return PQstatus(c_) == CONNECTION_OK; }

std::string PgConnection::Option(const std::string& keyword) const {
  PQconninfoOption* opts = PQconninfo(c_);
  std::string out;
  for (PQconninfoOption* o = opts; o != nullptr && o->keyword != nullptr; ++o) {
    if (keyword == o->keyword && o->val != nullptr) out = o->val;
  }
  PQconninfoFree(opts);
  return out;
}

absl::StatusOr<std::vector<std::string>> PgConnection::WaitForNotifications(int wake_fd) {
  std::vector<std::string> out;
  while (out.empty()) {
    if (PQconsumeInput(c_) == 0) return Error("waiting for notifications", "", PQerrorMessage(c_));
    while (PGnotify* n = PQnotifies(c_)) {
      out.push_back(n->extra != nullptr ? n->extra : "");
      PQfreemem(n);
    }
    if (!out.empty()) break;
    pollfd fds[2] = {{PQsocket(c_), POLLIN, 0}, {wake_fd, POLLIN, 0}};
    // No timeout: the server's socket or the wake pipe ends the wait.
    if (poll(fds, wake_fd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
    }
    if (wake_fd >= 0 && (fds[1].revents & POLLIN) != 0) break;
    if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0 && PQconsumeInput(c_) == 0) {
      return Error("waiting for notifications", "", PQerrorMessage(c_));
    }
  }
  return out;
}

namespace {

constexpr Oid kInt8Oid = 20;

// The parameters' types: bigint where `int8` says so, else left to the server.
std::vector<Oid> ParamTypes(size_t n, const std::vector<bool>& int8) {
  std::vector<Oid> types(n, 0);
  for (size_t i = 0; i < int8.size() && i < n; ++i) types[i] = int8[i] ? kInt8Oid : 0;
  return types;
}

std::vector<const char*> ParamValues(const std::vector<std::optional<std::string>>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  return values;
}

// A statement as named in errors: quoted, its first 60 bytes.
std::string Quoted(absl::string_view sql) {
  return absl::StrCat("\"", sql.substr(0, 60), sql.size() > 60 ? "…" : "", "\"");
}

}  // namespace

absl::StatusOr<PgResult> PgConnection::Finish(pg_result* res, const std::string& what, std::string* sqlstate) {
  ExecStatusType st = res == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(res);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return PgResult(res);
  const char* state = res == nullptr ? nullptr : PQresultErrorField(res, PG_DIAG_SQLSTATE);
  std::string message = res != nullptr && *PQresultErrorMessage(res) ? PQresultErrorMessage(res) : PQerrorMessage(c_);
  std::string code = state ? state : "";
  if (res != nullptr) PQclear(res);
  if (sqlstate != nullptr) *sqlstate = code;
  return Error(what, code, message);
}

absl::Status PgConnection::ExecScript(absl::string_view sql, absl::string_view what) {
  return ExecScriptRows(sql, what).status();
}

absl::StatusOr<PgResult> PgConnection::ExecScriptRows(absl::string_view sql, absl::string_view what) {
  std::string text(sql);
  return Finish(PQexec(c_, text.c_str()), std::string(what));  // PQexec: the last statement's result
}

std::optional<std::string> PgConnection::Literal(absl::string_view text) const {
  char* quoted = PQescapeLiteral(c_, text.data(), text.size());
  if (quoted == nullptr) return std::nullopt;
  std::string out(quoted);
  PQfreemem(quoted);
  return out;
}

absl::StatusOr<PgResult> PgConnection::Exec(absl::string_view sql,
                                            const std::vector<std::optional<std::string>>& params,
                                            const std::vector<bool>& int8) {
  std::vector<const char*> values = ParamValues(params);
  std::vector<Oid> types = ParamTypes(params.size(), int8);
  std::string text(sql);
  return Finish(PQexecParams(c_, text.c_str(), static_cast<int>(values.size()), types.empty() ? nullptr : types.data(),
                             values.data(), nullptr, nullptr, 0),
                Quoted(sql));
}

absl::StatusOr<PgResult> PgConnection::ExecPrepared(const std::string& sql,
                                                    const std::vector<std::optional<std::string>>& params,
                                                    const std::vector<bool>& int8) {
  std::string key = sql;
  key.push_back('\0');
  for (size_t i = 0; i < params.size(); ++i) key.push_back(i < int8.size() && int8[i] ? '8' : '0');
  auto it = prepared_.find(key);
  if (it == prepared_.end()) {
    std::vector<Oid> types = ParamTypes(params.size(), int8);
    std::string name = absl::StrCat("m", prepared_.size() + 1);
    auto made = Finish(PQprepare(c_, name.c_str(), sql.c_str(), static_cast<int>(types.size()),
                                 types.empty() ? nullptr : types.data()),
                       absl::StrCat("preparing ", Quoted(sql)));
    if (!made.ok()) return made.status();
    it = prepared_.emplace(key, name).first;
  }
  std::vector<const char*> values = ParamValues(params);
  std::string sqlstate;
  auto r = Finish(PQexecPrepared(c_, it->second.c_str(), static_cast<int>(values.size()), values.data(), nullptr,
                                 nullptr, 0),
                  Quoted(sql), &sqlstate);
  // A plan made before a schema change (another node migrated): prepared
  // again at the next use.
  if (!r.ok() && sqlstate == "0A000") prepared_.erase(it);
  return r;
}

absl::Status PgConnection::Reset() {
  prepared_.clear();  // a new session has none
  PQreset(c_);
  if (PQstatus(c_) != CONNECTION_OK) return Error("reconnecting", "", PQerrorMessage(c_));
  Describe();
  return absl::OkStatus();
}

}  // namespace mariposa
