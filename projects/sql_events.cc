// SqlProjectStore: the event log (event_log.h), on SQLite and PostgreSQL.
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
  return WithWriter([&](Database* db) -> absl::Status {
    ASSIGN_OR_RETURN(auto txn, BeginOn(db, WriteScope::kShared));
    RETURN_IF_ERROR(AppendEventsOn(db, events));
    return txn->Commit();
  });
}

absl::Status SqlProjectStore::AppendEventsOn(Database* db, const std::vector<EventRecord>& events) {
  if (events.empty()) return absl::OkStatus();
  const int64_t now = NowMicros();
  RETURN_IF_ERROR(db->PublishHorizon());
  // Indexes in the order given (rows of one INSERT take them in order).
  RETURN_IF_ERROR(InsertRows(db, "events", {"time", "actor", "project", "kind", "subject", "detail"},
                             events.size(), [&](Statement& st, size_t row, int f) {
                               const EventRecord& e = events[row];
                               st.Bind(f, now).Bind(f + 1, e.actor).Bind(f + 2, e.project).Bind(f + 3, e.kind);
                               st.Bind(f + 4, e.subject).Bind(f + 5, e.detail);
                             }));
  db->NoticeAtCommit(kEventsNotice);  // watchers here and on every node look again
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SqlProjectStore::LastEventIndex() {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(int64_t horizon, db_->ReadHorizon());
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT COALESCE(MAX(idx), 0) FROM events"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  return std::min(row ? st.Int(0) : 0, horizon);
}

}  // namespace mariposa
