// SqlProjectStore: tokens and grants (access_store.h), on SQLite and
// PostgreSQL.
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

}  // namespace mariposa
