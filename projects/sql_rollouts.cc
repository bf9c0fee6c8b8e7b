// SqlProjectStore: rollouts across data centers (rollout_store.h), on
// SQLite and PostgreSQL. A rollout's steps are one JSON column: they are
// read and written whole, by the one mariposad that drives the rollout.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "projects/sql_store.h"
#include "projects/sql_store_internal.h"

namespace mariposa {

using sql_internal::FromMicros;

namespace {

constexpr const char* kRolloutCols =
    "uuid, project, version_uuid, hash, state, author, origin, manifest, message, max_parallel, on_failure, "
    "created_at, updated_at, steps";

int64_t MicrosOrMinus(absl::Time t) { return t == absl::InfinitePast() ? -1 : absl::ToUnixMicros(t); }
absl::Time TimeOrPast(int64_t us) { return us < 0 ? absl::InfinitePast() : absl::FromUnixMicros(us); }

std::string StepsJson(const std::vector<RolloutStep>& steps) {
  nlohmann::json out = nlohmann::json::array();
  for (const RolloutStep& s : steps) {
    out.push_back({{"datacenter", s.datacenter},
                   {"state", s.state},
                   {"number", s.number},
                   {"previous_version", s.previous_version},
                   {"detail", s.detail},
                   {"since", MicrosOrMinus(s.since)},
                   {"last_answer", MicrosOrMinus(s.last_answer)},
                   {"canary", s.canary}});
  }
  return out.dump();
}

std::vector<RolloutStep> ReadSteps(const std::string& text) {
  std::vector<RolloutStep> out;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (!e.is_object()) continue;
    RolloutStep s;
    s.datacenter = e.value("datacenter", "");
    s.state = e.value("state", "pending");
    s.number = e.value("number", int64_t{0});
    s.previous_version = e.value("previous_version", "");
    s.detail = e.value("detail", "");
    s.since = TimeOrPast(e.value("since", int64_t{-1}));
    s.last_answer = TimeOrPast(e.value("last_answer", int64_t{-1}));
    s.canary = e.value("canary", false);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<RolloutRecord>> SqlProjectStore::QueryRolloutsLocked(const std::string& where,
                                                                                const std::string& arg) {
  ASSIGN_OR_RETURN(auto st, db_->Prepare(absl::StrCat("SELECT ", kRolloutCols, " FROM rollouts WHERE ", where)));
  st.Bind(1, arg);
  std::vector<RolloutRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    RolloutRecord r;
    r.uuid = st.Text(0);
    r.project = st.Text(1);
    r.version_uuid = st.Text(2);
    r.hash = st.Text(3);
    r.state = st.Text(4);
    r.author = st.Text(5);
    r.origin = st.Text(6);
    r.manifest = st.Text(7);
    r.message = st.Text(8);
    r.max_parallel = static_cast<int>(st.Int(9));
    r.on_failure = st.Text(10);
    r.created_at = FromMicros(st.Int(11));
    r.updated_at = FromMicros(st.Int(12));
    r.steps = ReadSteps(st.Text(13));
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<RolloutRecord> SqlProjectStore::AddRollout(const RolloutRecord& in, const std::string& actor) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  ASSIGN_OR_RETURN(std::vector<RolloutRecord> open, QueryRolloutsLocked("project = ?1 AND state = 'active'", in.project));
  if (!open.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "project ", in.project, " has a rollout across data centers under way (", open[0].uuid, ", version ",
        open[0].version_uuid, ", from ", open[0].origin, "); wait for it (`mariposa -j ", in.project,
        " rollouts`) or cancel it (`mariposa -j ", in.project, " rollouts cancel ", open[0].uuid.substr(0, 8),
        "`); nothing was changed"));
  }
  RolloutRecord r = in;
  r.uuid = NewUuid();
  int64_t now = NowMicros();
  r.created_at = r.updated_at = FromMicros(now);
  ASSIGN_OR_RETURN(auto st, db_->Prepare(absl::StrCat("INSERT INTO rollouts (", kRolloutCols,
                                                      ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")));
  st.Bind(1, r.uuid).Bind(2, r.project).Bind(3, r.version_uuid).Bind(4, r.hash).Bind(5, r.state);
  st.Bind(6, r.author).Bind(7, r.origin).Bind(8, r.manifest).Bind(9, r.message).Bind(10, r.max_parallel);
  st.Bind(11, r.on_failure).Bind(12, now).Bind(13, now).Bind(14, StepsJson(r.steps));
  RETURN_IF_ERROR(st.Run());
  std::vector<std::string> order;
  for (const RolloutStep& s : r.steps) order.push_back(s.datacenter);
  RETURN_IF_ERROR(AppendEventLocked(actor, r.project, "datacenter.rollout", r.uuid,
                                    absl::StrCat("rollout of version ", r.version_uuid, " to ",
                                                 absl::StrJoin(order, ", "), " (in that order, ", r.max_parallel,
                                                 " at a time; on failure: ", r.on_failure, ")"))
                      .status());
  RETURN_IF_ERROR(txn->Commit());
  return r;
}

absl::StatusOr<std::vector<RolloutRecord>> SqlProjectStore::ListRollouts(const std::string& project, bool all) {
  absl::MutexLock l(&mu_);
  std::string where = absl::StrCat(project.empty() ? "?1 = ''" : "project = ?1",
                                   all ? "" : " AND state = 'active'", " ORDER BY created_at DESC LIMIT 100");
  ASSIGN_OR_RETURN(std::vector<RolloutRecord> out, QueryRolloutsLocked(where, project));
  std::reverse(out.begin(), out.end());  // oldest first
  return out;
}

absl::StatusOr<RolloutRecord> SqlProjectStore::GetRollout(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(std::vector<RolloutRecord> r, QueryRolloutsLocked("uuid = ?1", uuid));
  if (r.empty() && uuid.size() >= 4 && uuid.size() < 36 &&
      uuid.find_first_not_of("0123456789abcdef-") == std::string::npos) {
    ASSIGN_OR_RETURN(r, QueryRolloutsLocked("substr(uuid, 1, length(?1)) = ?1 ORDER BY uuid LIMIT 2", uuid));
    if (r.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("rollout prefix ", uuid, " names more than one; give more characters"));
    }
  }
  if (r.empty()) return absl::NotFoundError(absl::StrCat("no rollout ", uuid, "; `mariposa rollouts --all` lists them"));
  return r[0];
}

absl::StatusOr<RolloutRecord> SqlProjectStore::UpdateRollout(const RolloutRecord& in, const std::string& actor,
                                                             const std::string& event_kind, const std::string& detail) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  ASSIGN_OR_RETURN(std::vector<RolloutRecord> now, QueryRolloutsLocked("uuid = ?1", in.uuid));
  if (now.empty()) return absl::NotFoundError(absl::StrCat("no rollout ", in.uuid));
  if (now[0].state != "active") {
    return absl::FailedPreconditionError(
        absl::StrCat("rollout ", in.uuid, " has ended (", now[0].state, ": ", now[0].message, ")"));
  }
  RolloutRecord r = in;
  int64_t t = NowMicros();
  r.updated_at = FromMicros(t);
  ASSIGN_OR_RETURN(auto st, db_->Prepare("UPDATE rollouts SET state = ?2, message = ?3, steps = ?4, updated_at = ?5 "
                                         "WHERE uuid = ?1"));
  st.Bind(1, r.uuid).Bind(2, r.state).Bind(3, r.message).Bind(4, StepsJson(r.steps)).Bind(5, t);
  RETURN_IF_ERROR(st.Run());
  if (!detail.empty()) RETURN_IF_ERROR(AppendEventLocked(actor, r.project, event_kind, r.uuid, detail).status());
  RETURN_IF_ERROR(txn->Commit());
  return r;
}

}  // namespace mariposa
