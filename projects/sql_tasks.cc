// SqlProjectStore: tasks and jobs in flight (task_store.h), on SQLite and
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

constexpr const char* kTaskCols =
    "uuid, project_uuid, kind, services, state, origin, trigger_name, version_uuid, created_at, "
    "COALESCE(started_at, -1), COALESCE(finished_at, -1), steps_done, steps_planned, created, deleted, replaced, "
    "failed, error, wait_for, actor, reason, only_kinds, auto_kind, params";

std::vector<std::string> SplitList(const std::string& s) { return absl::StrSplit(s, ',', absl::SkipEmpty()); }

absl::Time TimeOrUnset(int64_t us) { return us < 0 ? absl::InfinitePast() : absl::FromUnixMicros(us); }

// Filters, canary and rolling as the params column holds them.
std::string TaskParams(const TaskRecord& t) {
  nlohmann::json j = nlohmann::json::object();
  auto list = [&](const char* key, const std::vector<std::string>& v) {
    if (!v.empty()) j[key] = v;
  };
  list("versions", t.filter_versions);
  list("images", t.filter_images);
  list("servers", t.filter_servers);
  list("instances", t.filter_instances);
  if (t.canary > 0) j["canary"] = t.canary;
  if (t.rolling > 0) j["rolling"] = t.rolling;
  if (!t.paused.empty()) j["paused"] = t.paused;
  if (t.resumed_at != absl::InfinitePast()) j["resumed_at"] = absl::ToUnixMicros(t.resumed_at);
  return j.dump();
}

void ReadTaskParams(const std::string& text, TaskRecord* t) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return;
  auto list = [&](const char* key, std::vector<std::string>* v) {
    if (j.contains(key) && j[key].is_array()) *v = j[key].get<std::vector<std::string>>();
  };
  list("versions", &t->filter_versions);
  list("images", &t->filter_images);
  list("servers", &t->filter_servers);
  list("instances", &t->filter_instances);
  t->canary = j.value("canary", int64_t{0});
  t->rolling = j.value("rolling", int64_t{0});
  t->paused = j.value("paused", std::string());
  if (j.contains("resumed_at") && j["resumed_at"].is_number_integer()) {
    t->resumed_at = absl::FromUnixMicros(j["resumed_at"].get<int64_t>());
  }
}

bool Finished(const std::string& state) { return state == "completed" || state == "failed" || state == "terminated"; }

}  // namespace

absl::StatusOr<std::vector<TaskRecord>> SqlProjectStore::QueryTasksOn(Database* db, const std::string& where,
                                                                        const std::string& arg) {
  ASSIGN_OR_RETURN(auto st, db->Prepare(absl::StrCat("SELECT ", kTaskCols, " FROM tasks WHERE ", where)));
  st.Bind(1, arg);
  std::vector<TaskRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    TaskRecord t;
    t.uuid = st.Text(0);
    t.project_uuid = st.Text(1);
    t.kind = st.Text(2);
    t.services = SplitList(st.Text(3));
    t.state = st.Text(4);
    t.origin = st.Text(5);
    t.trigger = st.Text(6);
    t.version_uuid = st.Text(7);
    t.created_at = absl::FromUnixMicros(st.Int(8));
    t.started_at = TimeOrUnset(st.Int(9));
    t.finished_at = TimeOrUnset(st.Int(10));
    t.steps_done = st.Int(11);
    t.steps_planned = st.Int(12);
    t.created = st.Int(13);
    t.deleted = st.Int(14);
    t.replaced = st.Int(15);
    t.failed = st.Int(16);
    t.error = st.Text(17);
    t.wait_for = SplitList(st.Text(18));
    t.actor = st.Text(19);
    t.reason = st.Text(20);
    t.only = SplitList(st.Text(21));
    t.auto_kind = st.Text(22);
    ReadTaskParams(st.Text(23), &t);
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<TaskRecord> SqlProjectStore::AddTask(const TaskRecord& task, const TaskAdmitter& admit) {
  static const std::set<std::string> kKinds = {"start", "stop", "scale", "reprovision", "freeze", "run"};
  if (!kKinds.count(task.kind)) return absl::InvalidArgumentError(absl::StrCat("unknown task kind \"", task.kind, "\""));
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(task.project_uuid));
  ASSIGN_OR_RETURN(ProjectRecord p, GetProjectLocked(task.project_uuid));
  ASSIGN_OR_RETURN(std::vector<TaskRecord> open,
                   QueryTasksLocked("project_uuid = ?1 AND state IN ('queued', 'active', 'terminating') ORDER BY created_at",
                                    p.uuid));
  TaskRecord t = task;
  t.uuid = NewUuid();
  t.project_uuid = p.uuid;
  // A freeze holds from the moment it is stored: it is active at once.
  t.state = t.kind == "freeze" ? "active" : "queued";
  t.created_at = absl::FromUnixMicros(NowMicros());
  if (t.kind == "freeze") t.started_at = t.created_at;
  std::vector<std::string> terminate;
  RETURN_IF_ERROR(admit(open, &t, &terminate));
  for (const std::string& victim : terminate) {
    ASSIGN_OR_RETURN(auto upd, db_->Prepare(
                                   "UPDATE tasks SET state = CASE WHEN state = 'queued' OR kind = 'freeze' THEN 'terminated' "
                                   "ELSE 'terminating' END, "
                                   "finished_at = CASE WHEN state = 'queued' OR kind = 'freeze' THEN ?2 ELSE finished_at END "
                                   "WHERE uuid = ?1 AND state IN ('queued', 'active')"));
    upd.Bind(1, victim).Bind(2, NowMicros());
    RETURN_IF_ERROR(upd.Run());
    RETURN_IF_ERROR(AppendEventLocked(t.actor, p.name, "task.terminate", victim,
                                      absl::StrCat("by ", t.kind, " task ", t.uuid)).status());
  }
  ASSIGN_OR_RETURN(auto ins, db_->Prepare(
                                 "INSERT INTO tasks (uuid, project_uuid, kind, services, state, origin, trigger_name, "
                                 "version_uuid, created_at, wait_for, actor, reason, only_kinds, auto_kind, params, started_at) "
                                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  ins.Bind(1, t.uuid).Bind(2, t.project_uuid).Bind(3, t.kind).Bind(4, absl::StrJoin(t.services, ","));
  ins.Bind(5, t.state).Bind(6, t.origin).Bind(7, t.trigger).Bind(8, t.version_uuid);
  ins.Bind(9, absl::ToUnixMicros(t.created_at)).Bind(10, absl::StrJoin(t.wait_for, ","));
  ins.Bind(11, t.actor).Bind(12, t.reason).Bind(13, absl::StrJoin(t.only, ",")).Bind(14, t.auto_kind);
  ins.Bind(15, TaskParams(t));
  if (t.kind == "freeze") ins.Bind(16, absl::ToUnixMicros(t.started_at));
  else ins.BindNull(16);
  RETURN_IF_ERROR(ins.Run());
  RETURN_IF_ERROR(AppendEventLocked(t.actor, p.name, "task.add", t.uuid,
                                    absl::StrCat(t.kind, " (", t.origin, t.trigger.empty() ? "" : ", " + t.trigger, ") on ",
                                                 t.services.empty() ? "the project" : absl::StrJoin(t.services, ",")))
                      .status());
  RETURN_IF_ERROR(txn->Commit());
  return t;
}

absl::StatusOr<std::vector<TaskRecord>> SqlProjectStore::ListTasks(const std::string& project_uuid,
                                                                      int finished_limit) {
  return Read([&](Database* db) -> absl::StatusOr<std::vector<TaskRecord>> {
    ASSIGN_OR_RETURN(std::vector<TaskRecord> open,
                     QueryTasksOn(db,
                                  "project_uuid = ?1 AND state IN ('queued', 'active', 'terminating') "
                                  "ORDER BY created_at",
                                  project_uuid));
    if (finished_limit <= 0) return open;  // one round trip less (a no-op Apply asks so)
    ASSIGN_OR_RETURN(std::vector<TaskRecord> done,
                     QueryTasksOn(db,
                                  absl::StrCat("project_uuid = ?1 AND state IN ('completed', 'failed', 'terminated') "
                                               "ORDER BY finished_at DESC, created_at DESC LIMIT ",
                                               std::max(0, finished_limit)),
                                  project_uuid));
    open.insert(open.end(), done.begin(), done.end());
    return open;
  });
}

absl::StatusOr<TaskRecord> SqlProjectStore::GetTask(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(std::vector<TaskRecord> t, QueryTasksLocked("uuid = ?1", uuid));
  // A unique prefix of at least 4 characters names a task too (as git).
  if (t.empty() && uuid.size() >= 4 && uuid.size() < 36 &&
      uuid.find_first_not_of("0123456789abcdef-") == std::string::npos) {
    ASSIGN_OR_RETURN(t, QueryTasksLocked("substr(uuid, 1, length(?1)) = ?1 ORDER BY uuid LIMIT 4", uuid));
    if (t.size() > 1) {
      std::vector<std::string> ids;
      for (const TaskRecord& r : t) ids.push_back(r.uuid);
      return absl::InvalidArgumentError(absl::StrCat("task prefix ", uuid, " names ", t.size() > 3 ? "more than 3" : absl::StrCat(t.size()),
                                                     " tasks (", absl::StrJoin(ids.begin(), ids.begin() + std::min<size_t>(ids.size(), 3), ", "),
                                                     "); give more characters"));
    }
  }
  if (t.empty()) return absl::NotFoundError(absl::StrCat("no task ", uuid, "; `mariposa queue list` shows them"));
  return t[0];
}

absl::StatusOr<TaskRecord> SqlProjectStore::SetTaskState(const std::string& uuid, const std::string& state,
                                                            const std::string& error) {
  static const std::set<std::string> kStates = {"queued", "active", "terminating", "completed", "failed", "terminated"};
  if (!kStates.count(state)) return absl::InvalidArgumentError(absl::StrCat("unknown task state \"", state, "\""));
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginTaskLocked(uuid));
  ASSIGN_OR_RETURN(std::vector<TaskRecord> found, QueryTasksLocked("uuid = ?1", uuid));
  if (found.empty()) return absl::NotFoundError(absl::StrCat("no task ", uuid));
  if (Finished(found[0].state)) {
    return absl::FailedPreconditionError(absl::StrCat("task ", uuid, " already ended (", found[0].state, ")"));
  }
  int64_t now = NowMicros();
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "UPDATE tasks SET state = ?2, error = ?3, "
                                "started_at = CASE WHEN ?2 = 'active' AND started_at IS NULL THEN ?4 ELSE started_at END, "
                                "finished_at = CASE WHEN ?2 IN ('completed', 'failed', 'terminated') THEN ?4 ELSE finished_at END "
                                "WHERE uuid = ?1"));
  st.Bind(1, uuid).Bind(2, state).Bind(3, error).Bind(4, now);
  RETURN_IF_ERROR(st.Run());
  ASSIGN_OR_RETURN(ProjectRecord p, GetProjectLocked(found[0].project_uuid));
  const TaskRecord& t = found[0];
  // Start and stop change the services' run state when they begin to run,
  // atomically with the state: a stop terminated while queued never stops
  // anything.
  if ((t.kind == "stop" || t.kind == "start") && t.state == "queued" && state == "active") {
    ASSIGN_OR_RETURN(auto run, db_->Prepare(t.kind == "stop"
                                                ? "INSERT INTO stopped_services (project_uuid, service) VALUES (?, ?) ON CONFLICT DO NOTHING"
                                                : "DELETE FROM stopped_services WHERE project_uuid = ? AND service = ?"));
    for (const std::string& svc : t.services) {
      run.Bind(1, p.uuid).Bind(2, svc);
      RETURN_IF_ERROR(run.Run());
      RETURN_IF_ERROR(run.Reset());
    }
  }
  std::string detail = !error.empty() ? error
                                      : absl::StrCat(t.kind, " (", t.origin, t.trigger.empty() ? "" : ", " + t.trigger,
                                                     ") on ", t.services.empty() ? "the project" : absl::StrJoin(t.services, ","));
  RETURN_IF_ERROR(AppendEventLocked("mariposad", p.name, absl::StrCat("task.", state), uuid, detail).status());
  RETURN_IF_ERROR(txn->Commit());
  ASSIGN_OR_RETURN(std::vector<TaskRecord> after, QueryTasksLocked("uuid = ?1", uuid));
  return after[0];
}

absl::StatusOr<TaskRecord> SqlProjectStore::SetTaskPaused(const std::string& uuid, const std::string& actor,
                                                             const std::string& reason, bool paused) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginTaskLocked(uuid));
  ASSIGN_OR_RETURN(std::vector<TaskRecord> found, QueryTasksLocked("uuid = ?1", uuid));
  if (found.empty()) return absl::NotFoundError(absl::StrCat("no task ", uuid, "; `mariposa queue list` shows them"));
  TaskRecord t = found[0];
  if (Finished(t.state) || t.state == "terminating") {
    return absl::FailedPreconditionError(absl::StrCat("task ", uuid, " already ended (", t.state, ")"));
  }
  if (t.kind != "reprovision") {
    return absl::FailedPreconditionError(
        absl::StrCat("task ", uuid, " is a ", t.kind, " task; only a rollout (reprovision) can be paused. "
                     "`mariposa freeze` holds every kind of work"));
  }
  if (paused == !t.paused.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("task ", uuid, paused ? " is paused already (" + t.paused + ")"
                                                                            : " is not paused"));
  }
  absl::Time now = FromMicros(NowMicros());
  if (paused) {
    t.paused = absl::StrCat(actor, " at ", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone()),
                            reason.empty() ? "" : ": " + reason);
  } else {
    t.paused.clear();
    t.resumed_at = now;
  }
  ASSIGN_OR_RETURN(auto st, db_->Prepare("UPDATE tasks SET params = ?2 WHERE uuid = ?1"));
  st.Bind(1, uuid).Bind(2, TaskParams(t));
  RETURN_IF_ERROR(st.Run());
  ASSIGN_OR_RETURN(ProjectRecord p, GetProjectLocked(t.project_uuid));
  RETURN_IF_ERROR(AppendEventLocked(actor, p.name, paused ? "task.paused" : "task.resumed", uuid,
                                    paused ? t.paused : absl::StrCat("resumed by ", actor))
                      .status());
  RETURN_IF_ERROR(txn->Commit());
  return t;
}

absl::Status SqlProjectStore::AddTaskProgress(const std::string& uuid, const TaskProgress& d) {
  return WithWriter([&](Database* db) -> absl::Status {
    ASSIGN_OR_RETURN(auto txn, BeginOn(db, WriteScope::kShared));
    RETURN_IF_ERROR(AddTaskProgressOn(db, uuid, d));
    return txn->Commit();
  });
}

absl::Status SqlProjectStore::AddTaskProgressOn(Database* db, const std::string& uuid, const TaskProgress& d) {
  ASSIGN_OR_RETURN(auto st, db->Prepare(
                                "UPDATE tasks SET steps_done = steps_done + ?2, "
                                "steps_planned = CASE WHEN ?3 >= 0 THEN ?3 ELSE steps_planned END, "
                                "created = created + ?4, deleted = deleted + ?5, replaced = replaced + ?6, "
                                "failed = failed + ?7 WHERE uuid = ?1"));
  st.Bind(1, uuid).Bind(2, d.steps_done).Bind(3, d.steps_planned).Bind(4, d.created).Bind(5, d.deleted);
  st.Bind(6, d.replaced).Bind(7, d.failed);
  return st.Run();
}

absl::StatusOr<std::vector<JobRecord>> SqlProjectStore::QueryJobsLocked(const std::string& project_uuid) {
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT job_uuid, project_uuid, api, task_uuid, service, instance, alias, kind, "
                                         "reason, sent_at FROM jobs WHERE ?1 = '' OR project_uuid = ?1 "
                                         "ORDER BY sent_at, job_uuid"));
  st.Bind(1, project_uuid);
  std::vector<JobRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    JobRecord& j = out.emplace_back();
    j.job_uuid = st.Text(0);
    j.project_uuid = st.Text(1);
    j.api = st.Text(2);
    j.task_uuid = st.Text(3);
    j.service = st.Text(4);
    j.instance = st.Text(5);
    j.alias = st.Text(6);
    j.kind = st.Text(7);
    j.reason = st.Text(8);
    j.sent_at = absl::FromUnixMicros(st.Int(9));
  }
  return out;
}

absl::Status SqlProjectStore::LoadJobsLocked() {
  if (postgres_) return absl::OkStatus();
  {
    absl::MutexLock j(&jobs_mu_);
    if (jobs_loaded_) return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(auto all, QueryJobsLocked(""));
  absl::MutexLock held(&jobs_mu_);  // only loaded under mu_: not loaded since
  for (JobRecord& j : all) PutJobLocked(std::move(j));
  jobs_loaded_ = true;
  return absl::OkStatus();
}

int64_t SqlProjectStore::FenceEpochOf(const std::string& project) {
  const Fence* f = ScopedFence::Current();
  return f != nullptr && f->project == project ? f->epoch : -1;
}

void SqlProjectStore::DropJobsLocked(const std::string& project) {
  jobs_epoch_.erase(project);
  auto p = jobs_by_project_.find(project);
  if (p == jobs_by_project_.end()) return;
  for (const auto& kv : p->second) job_at_.erase(kv.first.job_uuid);
  jobs_by_project_.erase(p);
}

void SqlProjectStore::ForgetJobLocked(const std::string& job_uuid) {
  auto at = job_at_.find(job_uuid);
  if (at == job_at_.end()) return;
  auto p = jobs_by_project_.find(at->second.first);
  if (p != jobs_by_project_.end()) {
    p->second.erase(at->second.second);
    if (p->second.empty()) jobs_by_project_.erase(p);
  }
  job_at_.erase(at);
}

absl::Status SqlProjectStore::RecordJobs(const std::vector<JobRecord>& jobs,
                                         const std::vector<std::pair<std::string, TaskProgress>>& progress,
                                         const std::vector<EventRecord>& events) {
  if (jobs.empty() && progress.empty()) return AppendEvents(events);
  auto insert = [&](Database* db) -> absl::Status {
    ASSIGN_OR_RETURN(auto txn, BeginOn(db, WriteScope::kShared));
    // A job named twice in one call is recorded as it is named last.
    std::vector<const JobRecord*> rows = LastOfEach(jobs, [](const JobRecord& j) { return j.job_uuid; });
    RETURN_IF_ERROR(InsertRows(
        db, "jobs",
        {"job_uuid", "project_uuid", "api", "task_uuid", "service", "instance", "alias", "kind", "reason", "sent_at"},
        rows.size(),
        [&](Statement& st, size_t row, int f) {
          const JobRecord& j = *rows[row];
          st.Bind(f, j.job_uuid).Bind(f + 1, j.project_uuid).Bind(f + 2, j.api).Bind(f + 3, j.task_uuid);
          st.Bind(f + 4, j.service).Bind(f + 5, j.instance).Bind(f + 6, j.alias).Bind(f + 7, j.kind);
          st.Bind(f + 8, j.reason).Bind(f + 9, absl::ToUnixMicros(j.sent_at));
        },
        "ON CONFLICT (job_uuid) DO UPDATE SET project_uuid = excluded.project_uuid, api = excluded.api, "
        "task_uuid = excluded.task_uuid, service = excluded.service, instance = excluded.instance, "
        "alias = excluded.alias, kind = excluded.kind, reason = excluded.reason, sent_at = excluded.sent_at"));
    for (const auto& [task, delta] : progress) RETURN_IF_ERROR(AddTaskProgressOn(db, task, delta));
    RETURN_IF_ERROR(AppendEventsOn(db, events));
    return txn->Commit();
  };
  return WriteJobs(insert, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(jobs_mu_) { KeepJobsLocked(jobs); });
}

void SqlProjectStore::KeepJobsLocked(const std::vector<JobRecord>& jobs) {
  for (const JobRecord& j : jobs) {
    if (postgres_) {
      auto kept = jobs_epoch_.find(j.project_uuid);
      if (kept == jobs_epoch_.end()) continue;
      if (kept->second != FenceEpochOf(j.project_uuid)) {
        DropJobsLocked(j.project_uuid);  // written from outside its lease: read again
        continue;
      }
    }
    ForgetJobLocked(j.job_uuid);  // a job recorded again replaces itself
    PutJobLocked(j);
  }
}

void SqlProjectStore::PutJobLocked(JobRecord j) {
  // Stored at microseconds, as read back from the table.
  JobKey key{absl::ToUnixMicros(j.sent_at), j.job_uuid};
  j.sent_at = absl::FromUnixMicros(key.sent_at);
  job_at_[j.job_uuid] = {j.project_uuid, key};
  jobs_by_project_[j.project_uuid][key] = std::move(j);
}

absl::StatusOr<std::vector<JobRecord>> SqlProjectStore::ListJobsExcept(const std::string& project_uuid,
                                                                          const absl::flat_hash_set<std::string>& except) {
  if (!postgres_) {
    {
      absl::MutexLock j(&jobs_mu_);
      if (jobs_loaded_) return JobsExceptLocked(project_uuid, except);  // no wait for a commit in progress
    }
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(LoadJobsLocked());
    absl::MutexLock j(&jobs_mu_);
    return JobsExceptLocked(project_uuid, except);
  }
  const int64_t epoch = FenceEpochOf(project_uuid);
  {
    absl::MutexLock j(&jobs_mu_);
    auto kept = jobs_epoch_.find(project_uuid);
    if (epoch >= 0 && kept != jobs_epoch_.end() && kept->second == epoch) return JobsExceptLocked(project_uuid, except);
  }
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto all, QueryJobsLocked(project_uuid));
  if (epoch < 0) {  // not this node's to keep
    std::vector<JobRecord> out;
    for (JobRecord& j : all) {
      if (!except.count(j.job_uuid)) out.push_back(std::move(j));
    }
    return out;
  }
  absl::MutexLock j(&jobs_mu_);
  DropJobsLocked(project_uuid);
  for (JobRecord& job : all) PutJobLocked(std::move(job));
  jobs_epoch_[project_uuid] = epoch;
  return JobsExceptLocked(project_uuid, except);
}

std::vector<JobRecord> SqlProjectStore::JobsExceptLocked(const std::string& project_uuid,
                                                         const absl::flat_hash_set<std::string>& except) {
  std::vector<JobRecord> out;
  auto p = jobs_by_project_.find(project_uuid);
  if (p == jobs_by_project_.end()) return out;
  out.reserve(p->second.size() > except.size() ? p->second.size() - except.size() : 0);
  for (const auto& kv : p->second) {
    if (!except.count(kv.first.job_uuid)) out.push_back(kv.second);
  }
  return out;
}

absl::Status SqlProjectStore::FinishJobs(const std::vector<std::pair<std::string, TaskProgress>>& jobs,
                                         const std::vector<EventRecord>& events) {
  if (jobs.empty()) return AppendEvents(events);
  auto finish = [&](Database* db) -> absl::Status {
    ASSIGN_OR_RETURN(auto txn, BeginOn(db, WriteScope::kShared));
    // The statements that take the jobs name their tasks: of two nodes
    // finishing one job at once, one counts it.
    std::vector<std::string> uuids;
    std::map<std::string, std::string> task_of;  // job -> task, for the jobs taken
    for (const auto& job : jobs) uuids.push_back(job.first);
    RETURN_IF_ERROR(ForEachBatch(
        db, uuids.size(),
        [](size_t n) {
          return absl::StrCat("DELETE FROM jobs WHERE job_uuid IN (", ParamGroups(n, 1), ") RETURNING job_uuid, task_uuid");
        },
        [&](Statement& st, size_t first, size_t n) -> absl::Status {
          for (size_t i = 0; i < n; ++i) st.Bind(1 + static_cast<int>(i), uuids[first + i]);
          while (true) {
            ASSIGN_OR_RETURN(bool row, st.Step());
            if (!row) return absl::OkStatus();
            task_of[st.Text(0)] = st.Text(1);
          }
        }));
    // One update per task, with its jobs' progress added up in their order.
    std::vector<std::string> tasks;
    std::map<std::string, TaskProgress> sum;
    for (const auto& [job_uuid, progress] : jobs) {
      auto taken = task_of.find(job_uuid);
      if (taken == task_of.end() || taken->second.empty()) continue;  // counted already, or no task
      const std::string task = taken->second;
      task_of.erase(taken);  // a job named twice counts once
      auto [it, fresh] = sum.try_emplace(task);
      if (fresh) tasks.push_back(task);
      TaskProgress& t = it->second;
      t.steps_done += progress.steps_done;
      if (progress.steps_planned >= 0) t.steps_planned = progress.steps_planned;
      t.created += progress.created;
      t.deleted += progress.deleted;
      t.replaced += progress.replaced;
      t.failed += progress.failed;
    }
    for (const std::string& task : tasks) RETURN_IF_ERROR(AddTaskProgressOn(db, task, sum[task]));
    RETURN_IF_ERROR(AppendEventsOn(db, events));
    return txn->Commit();
  };
  return WriteJobs(finish, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(jobs_mu_) {
    for (const auto& job : jobs) ForgetJobLocked(job.first);
  });
}

absl::StatusOr<std::vector<TaskRecord>> SqlProjectStore::ListOpenTasks() {
  absl::MutexLock l(&mu_);
  return QueryTasksLocked("state IN ('queued', 'active', 'terminating') AND ?1 = '' ORDER BY created_at", "");
}

absl::StatusOr<std::vector<TaskCount>> SqlProjectStore::CountTasks() {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT kind, state, COUNT(*) FROM tasks GROUP BY kind, state"));
  std::vector<TaskCount> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back({st.Text(0), st.Text(1), st.Int(2)});
  }
  return out;
}

}  // namespace mariposa
