// The Decider: what one Decide call (decide.h) works with besides the
// snapshot, and the steps it takes. Internal to Decide; its steps live in
// one file per concern:
//
//   decide.cc           the run, finished jobs, instances, memory, staleness
//   decide_tasks.cc     tasks: their states, scale tasks, names
//   decide_rollout.cc   the plan, starts, what is held, the job window
//   decide_agents.cc    agent services, their removal, image imports
//   decide_verdicts.cc  each service's verdict and the problems
#ifndef MARIPOSA_CONVERGENCE_DECIDER_H_
#define MARIPOSA_CONVERGENCE_DECIDER_H_

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>


#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convergence/decide/images.h"
#include "projects/meta_drift.h"
#include "projects/task_queue.h"
#include "projects/interpolate.h"

#include "convergence/decide/decide.h"
#include "convergence/decide/facts.h"

namespace mariposa::convergence::decide_internal {

// The wait after the n-th failure in a row of an install or an import:
// backoff_base * 2^(n - 1), capped at backoff_cap.
inline absl::Duration RetryWait(const ControllerPolicy& p, int n) {
  return std::min(p.backoff_base * (1 << std::min(std::max(n, 1) - 1, 16)), p.backoff_cap);
}

inline bool Covers(const TaskRecord& t, const std::string& service) {
  return t.services.empty() || std::find(t.services.begin(), t.services.end(), service) != t.services.end();
}

inline RestartPolicy PolicyFor(const ServiceSpec& spec, const ControllerPolicy& c) {
  RestartPolicy p;
  p.max_attempts = spec.restart_max_attempts;
  p.window = spec.restart_window;
  p.backoff_base = c.backoff_base;
  p.backoff_cap = c.backoff_cap;
  return p;
}

// `images`: the services' resolved images (in-place services compare them).
inline ServiceGoal GoalFor(const ServiceGoalSpec& g, const std::map<std::string, triton::Image>& images) {
  ServiceGoal out{g.record.name, g.record.count, g.record.spec_hash, std::max(1, g.spec.update_rolling),
                  std::max(0, g.spec.update_max_surge)};
  out.start_window = g.spec.start_window;
  out.min_healthy_time = g.spec.update_min_healthy_time;
  const std::vector<std::string>& when = g.spec.restart_condition;
  auto has = [&](const char* c) { return std::find(when.begin(), when.end(), c) != when.end(); };
  out.restart_on_failure = has("on-failure") || has("always");
  out.restart_on_cn = has("on-cn-restart") || has("always");
  out.preserve = g.spec.preserve_stopped;
  out.preserve_keep = std::max(1, g.spec.restart_max_attempts);
  if (g.spec.update_strategy == "reprovision") {
    out.in_place = true;
    auto image = images.find(g.record.name);
    if (image != images.end()) out.image_uuid = image->second.uuid;
    // A service that keeps its state in delegate datasets never has one
    // destroyed by a replacement: broken instances are kept, all of them.
    if (out.preserve == "never") out.preserve = "on-failure";
    out.preserve_keep = 1 << 30;
  }
  return out;
}

// A job that takes an instance out of the service (Removes).
inline bool RemovesKind(const std::string& job_kind) { return job_kind == "delete" || job_kind == "preserve"; }
// A job a rollout's step counts: an old instance removed or reprovisioned.
inline bool RollsKind(const std::string& job_kind) { return RemovesKind(job_kind) || job_kind == "reprovision"; }

inline bool IsReplacement(const Action& a) { return a.reason == "replace-broken" || a.reason == "remove-broken"; }

inline bool IsScaleWork(const Action& a) {
  std::string k = WorkKind(a);
  return k == "scale" || k == "replace-unhealthy";
}

// Does instance `i` match a reprovision task's filters? Each non-empty list
// must contain one of the instance's names for that property.
inline bool MatchesFilters(const TaskRecord& t, const InstanceState& i, const std::set<std::string>& image_uuids) {
  auto in = [](const std::vector<std::string>& list, std::initializer_list<std::string> names) {
    if (list.empty()) return true;
    for (const std::string& want : list) {
      for (const std::string& n : names) {
        if (!n.empty() && want == n) return true;
      }
    }
    return false;
  };
  return in(t.filter_versions, {absl::StrCat(i.version), absl::StrCat("v", i.version), i.version_uuid}) &&
         (t.filter_images.empty() || image_uuids.count(i.image_uuid) > 0) &&
         in(t.filter_servers, {i.server_uuid}) && in(t.filter_instances, {i.uuid, i.alias});
}

template <typename T>
void Append(std::vector<T>&& from, std::vector<T>* to) {
  if (to->empty()) {
    *to = std::move(from);
    return;
  }
  to->insert(to->end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

// One scheduled or event service's runs (decide_runs.cc): the runs that
// start, end or are due, the creates of active runs and the removal of
// finished runs' instances past run.history.
struct RunsOutcome {
  RunsView view;
  std::vector<TaskChange> task_changes;
  std::vector<Action> planned;
  std::vector<TaskRecord> new_tasks;  // a due run of its schedule
};
RunsOutcome DecideRuns(const ProjectFacts& f, const std::string& svc, const ServiceGoalSpec& g);
ServiceVerdict RunVerdict(const ProjectFacts& f, const std::string& svc, const RunsView& runs);

// The jobs that ended since the last sync (decide.cc): each one's task
// progress and event, and what its service remembers of it (failures,
// backoff, install times) written into `memory`.
struct JobsOutcome {
  std::vector<std::pair<std::string, TaskProgress>> job_progress;  // job uuid -> its task's progress
  std::vector<EventRecord> events;
};
JobsOutcome AccountFinishedJobs(const ProjectFacts& f, std::map<std::string, ServiceMemory>* memory);
std::map<std::string, ServiceMemory> StartingMemory(const ProjectFacts& f);
// A failure that counts toward the service's crash loop (and backoff).
void CrashFailure(const ProjectFacts& f, const std::string& service, const std::string& why,
                  std::map<std::string, ServiceMemory>* memory, std::vector<EventRecord>* events);

// The instances (decide.cc): the observed ones and the creates VMAPI does
// not list yet, by service and by uuid, and the job in flight on each,
// written into `f`.
void GatherInstances(ProjectFacts* f);

// The open tasks (decide_tasks.cc): what they say of each service, written
// into `f` (stopped, starting, rolling, paused, waiting, reprovisioning), and
// the task changes, events and rollbacks that follow.
struct TaskOutcome {
  std::vector<TaskChange> task_changes;
  std::vector<EventRecord> events;
  std::vector<Rollback> rollbacks;
  std::set<std::string> busy;  // tasks some service still works on
};
TaskOutcome GatherTasks(ProjectFacts* f);

// The plan of every service that runs to a count (decide_rollout.cc): its
// creates, removals, replacements and starts, but for instances with a job
// in flight. `cache` (may be null) reuses unchanged services' actions.
std::vector<Action> PlanServices(const ProjectFacts& f, PlanCache* cache);

// One service's settings put back in place (CNS names, the firewall tag,
// firewall_enabled) on each running or stopped instance of its current spec
// that differs and has nothing else planned (`acted`) or in flight; an
// instance put back `put_backs` times already and changed again is a
// problem instead. `forget`: put-backs no longer needed.
struct RetagOutcome {
  std::vector<Action> actions;
  std::vector<Problem> problems;
  std::vector<std::string> forget;
};
RetagOutcome DecideRetags(const ProjectFacts& f, const std::string& svc, const InPlaceSettings& want,
                          const std::set<std::string>& acted, const std::map<std::string, int>& put_backs);

// Each planned action as a step of its task, or held, and why: a freeze, a
// crash loop or backoff, the replacement budget, a missing image or one being
// imported, the catalog, placement, start.parallelism (decide_rollout.cc).
// Crash-loop pauses that end and the budget spent are written into `memory`.
struct HoldOutcome {
  std::vector<Step> steps;
  std::vector<Held> held;
  std::vector<std::pair<std::string, std::string>> hold_reasons;  // service, why, in order
  std::vector<EventRecord> events;
};
HoldOutcome DecideHolds(const ProjectFacts& f, const std::vector<Action>& planned,
                        std::map<std::string, ServiceMemory>* memory);

// The scale tasks (decide_tasks.cc): the open ones completed or owning the
// plan's scale work, new ones added for work no task owns, and the steps
// (of `steps`) that wait for theirs held.
struct ScaleTaskOutcome {
  std::vector<Step> steps;  // those that go, each with its task
  std::vector<Held> held;
  std::vector<std::pair<std::string, std::string>> hold_reasons;  // service, why, in order
  std::vector<TaskRecord> new_tasks;
  std::vector<TaskChange> task_changes;
};
ScaleTaskOutcome DecideScaleTasks(ProjectFacts* f, const std::vector<Action>& planned, std::vector<Step> steps,
                                  const std::vector<TaskChange>& earlier,
                                  const std::map<std::string, ServiceMemory>& memory);

// Discovery (decide_discovery.cc): the steps that end a running instance's
// serving held until it has been out of discovery for stop.drain (the first
// sync takes it out), and every other running instance of a service with
// CNS names taken out while not ready and put back once ready.
struct DiscoveryOutcome {
  std::vector<Step> steps;  // those that go, with the discovery changes
  std::vector<Held> held;
  std::vector<std::pair<std::string, std::string>> hold_reasons;  // service, why, in order
  absl::Time next_change = absl::InfiniteFuture();  // a drain ends, an instance becomes ready
};
DiscoveryOutcome DecideDiscovery(const ProjectFacts& f, std::vector<Step> steps);

// What a service's verdict reads besides the project's facts
// (decide_verdicts.cc).
struct VerdictInputs {
  const ServiceMemory* memory;
  const std::vector<Step>* steps;     // the plan's steps going now (its retags are named)
  const std::string* held = nullptr;  // the first reason its work is held
  const std::string* task = nullptr;  // a non-freeze task open in its scope, named
  bool acting = false;                // work in flight or a task acting on it
};
struct VerdictOutcome {
  ServiceVerdict verdict;
  std::vector<Problem> problems;  // what explains it
};
// A service's verdict (not an agent's, not a scheduled or event service's).
VerdictOutcome DecideVerdict(const ProjectFacts& f, const std::string& svc, const ServiceGoalSpec& g,
                             const VerdictInputs& in);

// One agent service's decision (decide_agents.cc): from the project's facts
// and the service's memory alone.
struct AgentOutcome {
  ServiceVerdict verdict;
  ServiceMemory memory;                           // what it remembers now
  std::optional<AgentPlan> plan;                  // when its image and CNAPI are known
  std::optional<std::vector<AgentServer>> servers;
  std::vector<Held> held;
  std::vector<AgentInstall> installs;
  std::vector<TaskRecord> new_tasks;
  std::vector<TaskChange> task_changes;
  std::vector<Problem> problems;
  std::string hold_reason;              // the first reason its work is held, or ""
  std::string busy_task;                // the task it still works on, or ""
  std::optional<TaskChange> task_end;   // its part of its task is done: how it ends
};
AgentOutcome DecideAgentService(const ProjectFacts& f, const std::string& svc, const ServiceGoalSpec& g,
                                ServiceMemory memory);

// The verdict of a service waiting for its image's import (and its problem
// when the import fails); false when it does not wait for one.
bool ImportVerdict(const ProjectFacts& f, const std::string& svc, const ServiceMemory& m, ServiceVerdict* v,
                   std::vector<Problem>* problems);

// The agents of services that left the manifest: uninstalled from every
// server that runs them, `rolling` at a time; counted as leftover until done.
struct UninstallOutcome {
  std::vector<AgentUninstall> uninstalls;
  std::vector<Held> held;
  int64_t leftover = 0;
};
UninstallOutcome DecideUninstalls(const ProjectFacts& f);

// Image imports: one per image at a time, for the open task that needs it,
// after the backoff of a failed one.
std::vector<ImageImport> DecideImports(const ProjectFacts& f, const std::map<std::string, ServiceMemory>& memory);

// The agent tasks whose every service is done (`ends`: task -> how it
// ends), but for those some service still works on (`busy`).
std::vector<TaskChange> EndAgentTasks(const ProjectFacts& f, const std::map<std::string, TaskChange>& ends,
                                      const std::set<std::string>& busy);

// What one Decide call works with besides the snapshot.

class Decider {
 public:
  Decider(const Snapshot& s, absl::Time now, PlanCache* cache = nullptr) : f_(s, now), cache_(cache) {}
  Decision Run();
  // Only the finished jobs' accounting (CountFinished).
  Decision RunFinished() {
    FinishedJobs();
    return std::move(d_);
  }

 private:
  // Failed FWAPI/NAPI/VOLAPI changes within their backoff are held.
  void HoldRetries();
  void Event(const std::string& kind, const std::string& subject, const std::string& detail) {
    d_.events.push_back(f_.Event(kind, subject, detail));
  }
  void Change(const TaskRecord& t, const std::string& state, const std::string& note = "") {
    d_.task_changes.push_back({t.uuid, state, note});
  }
  void Problem(const std::string& kind, const std::string& service, std::string error, std::string reason,
               std::string fix, std::string impact) {
    d_.problems.push_back({kind, service, std::move(error), std::move(reason), std::move(fix), std::move(impact)});
  }
  // The memory this Decide starts from, and the finished jobs accounted into it.
  void FinishedJobs();
  void Tasks();
  // Each service's DecideRetags, merged into planned_.
  void Retags();
  // Scheduled and event services (decide_runs.cc): new runs when due, each
  // active run's creates, its end and outcome, the removal of finished
  // runs' instances past run.history, the service's verdict.
  void Runs();
  void StartsDone();
  void Hold();
  void ScaleTasks();
  void Discovery();
  void Names();
  // Agent services, each decided by DecideAgentService, merged (decide_agents.cc).
  void Agents();
  void Uninstalls();
  void Window();
  void Verdicts();
  // What each service's verdict reads besides its instances (decide_verdicts.cc).
  struct VerdictScope {
    std::set<std::string> acting;                   // services with work in flight or a task acting
    std::map<std::string, std::string> open_task;   // service -> a non-freeze task open in its scope
  };
  void CountCrashes();
  void ApiProblems();
  VerdictScope ScopeOfVerdicts() const;
  void Stale();  // an observation too old for verdicts: every one unknown, and why

  ProjectFacts f_;
  PlanCache* cache_;
  Decision d_;
  // Tasks some service still works on; an agent service's end of a task
  // (task uuid -> state, note) applies only when none does.
  std::set<std::string> busy_tasks_;
  bool uninstalled_ = false;  // Uninstalls() ran (early, for a deleted project)
  std::vector<Action> planned_;
  std::vector<Step> steps_;
  std::map<std::string, std::string> hold_reason_;  // service -> first reason its work is held
};

}  // namespace mariposa::convergence::decide_internal

#endif  // MARIPOSA_CONVERGENCE_DECIDER_H_
