#include "convergence/decide/decider.h"

namespace mariposa::convergence::decide_internal {
namespace {

// The project level's second step: what the open tasks say of each service,
// written into the facts, and the task changes, events and rollbacks that
// follow from them.
class TaskGathering {
 public:
  explicit TaskGathering(ProjectFacts* f) : f_(*f) {}
  TaskOutcome Run() && {
    Tasks();
    return std::move(out_);
  }

 private:
  // What a rollout still has to do.
  struct RolloutWork {
    int64_t pending = 0;        // instances its filters and canary still choose
    int64_t deleting = 0;       // its replacements in flight
    int64_t just_replaced = 0;  // its replacements that ended in this sync
    int64_t coming_up = 0;      // reprovisioned in place, not ready yet
    std::vector<std::string> services;  // those it works on
  };
  void Tasks();
  bool TaskWaits(const TaskRecord& t, const std::vector<std::string>& scope);
  void RunTask(const TaskRecord& t, const std::vector<std::string>& scope);
  void ReprovisionTask(const TaskRecord& t, const std::vector<std::string>& scope,
                       const std::vector<std::string>& agent_services);
  bool AutoRollback(const TaskRecord& t, const std::vector<std::string>& scope, const std::string& overdue);
  RolloutWork RolloutScope(const TaskRecord& t, const std::vector<std::string>& scope);
  // A rollout past one of its services' deadlines (update.healthy_deadline,
  // update.progress_deadline): why, or "".
  std::string Overdue(const TaskRecord& t, const std::vector<std::string>& scope) const;
  void Change(const TaskRecord& t, const std::string& state, const std::string& note = "") {
    out_.task_changes.push_back({t.uuid, state, note});
  }
  void Event(const std::string& kind, const std::string& subject, const std::string& detail) {
    out_.events.push_back(f_.Event(kind, subject, detail));
  }

  ProjectFacts& f_;
  TaskOutcome out_;
};


// The open tasks this Decide acts under: which services each covers, which
// wait, and those that end now.
void TaskGathering::Tasks() {
  for (const TaskRecord& t : f_.s.tasks) {
    if (t.state == "queued" || t.state == "active" || t.state == "terminating") f_.open_ids.insert(t.uuid);
  }
  f_.stopped = f_.s.project.stopped;
  std::vector<std::string> all, agent_services;
  if (f_.s.goal) {
    for (const auto& kv : f_.s.goal->services) {
      (kv.second.spec.compute_type != "agent" ? all : agent_services).push_back(kv.first);
    }
  }
  for (const TaskRecord& t : f_.s.tasks) {
    if (t.kind == "freeze") continue;
    std::vector<std::string> scope = t.services.empty() ? all : t.services;
    if (t.state == "terminating") {
      Change(t, "terminated");
    } else if (t.auto_kind == "agent-rollout") {
      continue;  // Agents() drives it
    } else if (TaskWaits(t, scope)) {
      continue;
    } else if (t.kind == "stop" || t.kind == "start") {
      RunTask(t, scope);
    } else if (t.kind == "reprovision") {  // scale: after the plan (ScaleTasks)
      ReprovisionTask(t, scope, agent_services);
    }
  }
}

// A task for a newer version than the goal, or behind another task: its
// services' work waits, and says why.
bool TaskGathering::TaskWaits(const TaskRecord& t, const std::vector<std::string>& scope) {
  if (f_.Newer(t)) {
    for (const std::string& svc : scope) f_.task_waits[svc] = absl::StrCat("task ", t.uuid, " waits for its version");
    return true;
  }
  std::string w = f_.WaitingFor(t);
  if (w.empty()) return false;
  for (const std::string& svc : scope) {
    f_.task_waits.emplace(svc, absl::StrCat(t.kind, " task ", t.uuid, " waits for task ", w));
  }
  return true;
}

// `mariposa stop` / `start`: the services stop or run from the moment the task
// acts. A stop is done when nothing of its scope runs or is in flight; a start
// when the plan starts nothing more in its scope (StartsDone).
void TaskGathering::RunTask(const TaskRecord& t, const std::vector<std::string>& scope) {
  if (t.state == "queued") {
    Change(t, "active");
    for (const std::string& svc : t.services) {
      if (t.kind == "stop") f_.stopped.insert(svc);
      else f_.stopped.erase(svc);
    }
  }
  for (const std::string& svc : scope) f_.run_task_of[svc] = t.uuid;
  if (t.kind == "start") {
    // A stopped instance the plan removes instead (the service has `count`
    // running already) is not the start task's to wait for.
    for (const std::string& svc : scope) f_.starting.insert(svc);
    f_.start_tasks.push_back(&t);
    return;
  }
  bool pending = false, in_flight = false;
  for (const std::string& svc : scope) {
    for (const InstanceState* i : f_.of[svc]) pending |= i->state == "running" || i->state == "provisioning";
  }
  for (const JobRecord& j : f_.s.in_flight) in_flight |= j.task_uuid == t.uuid;
  if (!pending && !in_flight) {
    Change(t, "completed");
    for (const std::string& svc : scope) f_.run_task_of.erase(svc);
  }
}

// A rollout (reprovision task): paused, past its deadline (failed, or rolled
// back), or replacing what its filters and canary choose; completed when
// nothing of it is left.
void TaskGathering::ReprovisionTask(const TaskRecord& t, const std::vector<std::string>& scope,
                              const std::vector<std::string>& agent_services) {
  if (!t.paused.empty()) {
    // `mariposa pause`: no further step; what is in flight finishes.
    for (const std::string& svc : scope) {
      f_.task_waits[svc] = absl::StrCat("rollout ", t.uuid, " paused by ", t.paused, "; `mariposa resume ", t.uuid,
                                      "` continues it");
      f_.paused[svc] = &t;
    }
    return;
  }
  std::string overdue = f_.s.project.current_version == t.version_uuid ? Overdue(t, scope) : "";
  if (AutoRollback(t, scope, overdue)) return;
  if (!overdue.empty()) {
    // The rollout failed; what it replaced stays, the rest keeps its old spec.
    Change(t, "failed", overdue);
    Event("rollout.failed", t.uuid, overdue);
    return;
  }
  RolloutWork w = RolloutScope(t, scope);
  if (w.pending > 0 || w.deleting > 0 || w.coming_up > 0) {
    out_.busy.insert(t.uuid);
    if (t.state == "queued") Change(t, "active");
    return;
  }
  bool agents = false;  // Agents() ends a task that covers agent services too
  for (const std::string& a : agent_services) agents |= Covers(t, a);
  if (!agents) Change(t, "completed");
  else if (t.state == "queued") Change(t, "active");
  if (t.canary > 0 && t.replaced + w.just_replaced >= t.canary) {
    Event("reprovision.canary-done", t.uuid,
          absl::StrCat(t.canary, " instances replaced; `mariposa -j ", f_.s.project.name, " reprovision",
                       t.services.empty() ? "" : absl::StrCat(" --service ", absl::StrJoin(t.services, ",")),
                       " --canary 0` replaces the rest"));
  }
  for (const std::string& svc : w.services) {
    f_.reprovision.erase(svc);
    f_.reprovision_only.erase(svc);
    f_.reprovision_task_of.erase(svc);
  }
}

// update.auto_rollback: a new-spec instance of this rollout that is unhealthy,
// or the rollout past its deadline, fails it; the executor rolls the project
// back to the version before and queues a reprovision back to it.
bool TaskGathering::AutoRollback(const TaskRecord& t, const std::vector<std::string>& scope, const std::string& overdue) {
  if (!f_.s.goal || f_.s.project.current_version != t.version_uuid) return false;
  std::string bad_service, bad_instance;
  bool auto_rollback = false;
  for (const std::string& svc : scope) {
    const ServiceGoalSpec* g = f_.GoalOf(svc);
    if (g == nullptr || !g->spec.update_auto_rollback) continue;
    auto_rollback = true;
    for (const InstanceState* i : f_.of[svc]) {
      if (i->state == "running" && i->spec_hash == g->record.spec_hash && FailsChecks(*i)) {
        bad_service = svc;
        bad_instance = i->alias;
      }
    }
  }
  std::string before;
  for (const auto& v : f_.s.version_numbers) {
    if (v.second == f_.s.goal->number - 1) before = v.first;
  }
  std::string why;
  if (!bad_service.empty()) {
    why = absl::StrCat("auto_rollback: ", bad_instance, " of the new spec of ", bad_service, " is unhealthy");
  } else if (!overdue.empty() && auto_rollback) {
    why = absl::StrCat("auto_rollback: ", overdue);
  }
  if (why.empty() || before.empty()) return false;
  out_.rollbacks.push_back({t.uuid, before, f_.s.project.current_version, t.services,
                          absl::StrCat(why, "; rolled back to version ", f_.s.goal->number - 1)});
  f_.rolled_back.insert(scope.begin(), scope.end());
  return true;
}

// What a rollout still has to do in its scope: the instances its filters and
// canary choose, replacements in flight, instances of the new spec coming up.
// Each service with work is the rollout's (f_.reprovision_task_of).
TaskGathering::RolloutWork TaskGathering::RolloutScope(const TaskRecord& t, const std::vector<std::string>& scope) {
  static const std::set<std::string> kNone;
  auto images = f_.s.filter_images.find(t.uuid);
  const std::set<std::string>& image_uuids = images == f_.s.filter_images.end() ? kNone : images->second;
  RolloutWork w;
  // This task's replacements in flight count toward its canary.
  for (const JobRecord& j : f_.s.in_flight) w.deleting += j.task_uuid == t.uuid && RollsKind(j.kind);
  // Replacements that ended since the task was read: counted into it by this
  // sync (FinishedJobs), not yet in t.replaced.
  for (const FinishedJob& f : f_.s.finished) {
    w.just_replaced += f.ok && f.job.task_uuid == t.uuid && f.job.reason == "reprovision" && RollsKind(f.job.kind);
  }
  int64_t canary_left =
      t.canary > 0 ? std::max<int64_t>(0, t.canary - t.replaced - w.just_replaced - w.deleting) : -1;
  bool filtered = t.canary > 0 || !t.filter_versions.empty() || !t.filter_images.empty() ||
                  !t.filter_servers.empty() || !t.filter_instances.empty();
  for (const std::string& svc : scope) {
    const ServiceGoalSpec* g = f_.GoalOf(svc);
    if (g == nullptr || g->spec.compute_type == "agent") continue;
    ServiceGoal goal = GoalFor(*g, f_.s.images);
    std::set<std::string> chosen;
    for (const InstanceState* i : ReprovisionOrder(f_.of[svc], goal)) {
      if (canary_left >= 0 && w.pending >= canary_left) break;
      // One with a job in flight is being replaced already, but for the job
      // that takes it out of discovery first: it is still to go.
      auto job = f_.job_on.find(i->uuid);
      if (!MatchesFilters(t, *i, image_uuids) || (job != f_.job_on.end() && job->second->kind != "discovery")) continue;
      chosen.insert(i->uuid);
      ++w.pending;
    }
    // Instances of the new spec still coming up belong to the rollout too. In
    // place, that is until they are ready again.
    bool starting = false;
    for (const InstanceState* i : f_.of[svc]) {
      starting |= i->state == "provisioning" && i->spec_hash == goal.spec_hash;
      if (goal.in_place && !Outdated(*i, goal) && i->state == "running" &&
          !InstanceReady(*i, f_.now, goal.start_window)) {
        starting = true;
        ++w.coming_up;
      }
    }
    if (chosen.empty() && !starting) continue;
    f_.reprovision.insert(svc);
    if (t.rolling > 0) f_.rolling[svc] = static_cast<int>(t.rolling);  // the task's --rolling
    if (filtered) f_.reprovision_only[svc] = std::move(chosen);
    f_.reprovision_task_of[svc] = t.uuid;
    w.services.push_back(svc);
  }
  return w;
}

std::string TaskGathering::Overdue(const TaskRecord& t, const std::vector<std::string>& scope) const {
  if (t.state != "active" || t.started_at == absl::InfinitePast()) return "";
  // The rollout's clock starts when it started or was last resumed.
  absl::Time from = std::max(t.started_at, t.resumed_at);
  absl::Time progress = from;  // the last time an instance of the new spec became ready
  absl::Duration progress_deadline = absl::ZeroDuration();
  bool pending = false;
  for (const std::string& svc : scope) {
    const ServiceGoalSpec* g = f_.GoalOf(svc);
    if (g == nullptr || g->spec.compute_type == "agent") continue;
    ServiceGoal goal = GoalFor(*g, f_.s.images);
    const absl::Duration healthy_deadline = g->spec.update_healthy_deadline;
    if (g->spec.update_progress_deadline > absl::ZeroDuration()) {
      progress_deadline = progress_deadline == absl::ZeroDuration()
                              ? g->spec.update_progress_deadline
                              : std::min(progress_deadline, g->spec.update_progress_deadline);
    }
    auto it = f_.of.find(svc);
    if (it == f_.of.end()) continue;
    for (const InstanceState* i : it->second) {
      if (Outdated(*i, goal)) {
        pending |= i->state == "running";
        continue;
      }
      absl::Time ready_at = ReadySince(*i, goal.start_window);  // may be ahead (start.window)
      if (ready_at <= f_.now) {
        if (ready_at != absl::InfinitePast()) progress = std::max(progress, ready_at);
        continue;
      }
      pending = true;
      if (i->state != "running") continue;
      absl::Time up = i->up_since == absl::InfinitePast() ? i->created : i->up_since;
      // Not this rollout's. VMAPI's timestamps have milliseconds: an
      // instance created in the millisecond the rollout started is its.
      if (up < absl::FromUnixMillis(absl::ToUnixMillis(from)) || up == absl::InfiniteFuture()) continue;
      // In place, an instance reprovisioned onto the new image that fails its
      // checks stops the rollout: the next ones would get the same image.
      if (goal.in_place && FailsChecks(*i)) {
        return absl::StrCat(i->alias, " of ", svc, " fails its health checks since it was reprovisioned onto ",
                            g->record.image, "; no more instances are reprovisioned onto it");
      }
      // An instance this rollout brought up that is not ready in time.
      if (healthy_deadline <= absl::ZeroDuration()) continue;
      if (f_.now - up > healthy_deadline) {
        return absl::StrCat("update.healthy_deadline ", absl::FormatDuration(healthy_deadline), ": ", i->alias,
                            " of ", svc, " was not ready ", absl::FormatDuration(f_.now - up), " after it came up (",
                            i->checked ? absl::StrCat("health ", i->health) : "no checks", ")");
      }
    }
  }
  if (pending && progress_deadline > absl::ZeroDuration() && f_.now - progress > progress_deadline) {
    return absl::StrCat("update.progress_deadline ", absl::FormatDuration(progress_deadline),
                        ": no instance of the new spec became ready since ", Stamp(progress));
  }
  return "";
}

}  // namespace

TaskOutcome GatherTasks(ProjectFacts* f) { return TaskGathering(f).Run(); }

void Decider::Tasks() {
  TaskOutcome o = GatherTasks(&f_);
  Append(std::move(o.task_changes), &d_.task_changes);
  Append(std::move(o.events), &d_.events);
  Append(std::move(o.rollbacks), &d_.rollbacks);
  busy_tasks_ = std::move(o.busy);
}

namespace {

// The scale tasks automatic work runs under: which open ones end or own the
// plan's scale work, which are added, and which steps wait for theirs.
class ScaleTaskDecision {
 public:
  ScaleTaskDecision(ProjectFacts* f, const std::vector<Action>& planned, std::vector<Step> steps,
                    const std::vector<TaskChange>& earlier, const std::map<std::string, ServiceMemory>& memory)
      : f_(*f), planned_(planned), earlier_(earlier), memory_(memory) {
    out_.steps = std::move(steps);
  }
  ScaleTaskOutcome Run() && {
    ScaleTasks();
    return std::move(out_);
  }

 private:
  void ScaleTasks();
  std::map<std::string, std::string> OpenScaleTasks();
  void NewScaleTasks(std::map<std::string, std::string>* blocked);
  TaskRecord ScaleTaskFor(const std::string& svc, const std::string& reason);
  void CrashLoopNotes();
  void Change(const TaskRecord& t, const std::string& state, const std::string& note = "") {
    out_.task_changes.push_back({t.uuid, state, note});
  }

  ProjectFacts& f_;
  const std::vector<Action>& planned_;
  const std::vector<TaskChange>& earlier_;  // the task changes decided before
  const std::map<std::string, ServiceMemory>& memory_;
  ScaleTaskOutcome out_;
};

// Automatic work runs as `scale` tasks, one per service: added when work
// appears (never in a frozen scope: admission refuses it), completed when
// the plan has none left for the service. A user's scale task, or one
// already open, is reused.
void ScaleTaskDecision::ScaleTasks() {
  std::map<std::string, std::string> blocked = OpenScaleTasks();  // service -> why its scale task waits
  NewScaleTasks(&blocked);
  std::vector<Step> kept;
  for (Step& st : out_.steps) {
    if (IsScaleWork(st.action)) {
      // A rollout acting on the service owns the creates that bring it back
      // to `count` (its floor counts on them): they go ahead as its work
      // even when a scale task is queued behind it.
      auto rollout = f_.reprovision_task_of.find(st.action.service);
      if (rollout != f_.reprovision_task_of.end()) {
        st.task = rollout->second;
        kept.push_back(std::move(st));
        continue;
      }
      auto b = blocked.find(st.action.service);
      if (b != blocked.end()) {
        out_.held.push_back({st.action, b->second});
        out_.hold_reasons.emplace_back(st.action.service, b->second);
        continue;
      }
      st.task = f_.scale_task_of[st.action.service];
    }
    kept.push_back(std::move(st));
  }
  out_.steps = std::move(kept);
  CrashLoopNotes();
}

// The open scale tasks: completed when the plan has no scale work left in
// their scope and nothing of theirs is in flight; otherwise they own it.
// Returns the services whose scale task waits, and why.
std::map<std::string, std::string> ScaleTaskDecision::OpenScaleTasks() {
  std::set<std::string> scale_pending;
  for (const Action& a : planned_) {
    if (IsScaleWork(a)) scale_pending.insert(a.service);
  }
  std::map<std::string, std::string> blocked;
  std::vector<std::string> all;
  if (f_.s.goal) {
    for (const auto& kv : f_.s.goal->services) all.push_back(kv.first);
  }
  for (const TaskRecord& t : f_.s.tasks) {
    if (t.kind != "scale" || t.state == "terminating" || f_.Newer(t)) continue;
    std::vector<std::string> scope = t.services.empty() ? all : t.services;
    if (std::string w = f_.WaitingFor(t); !w.empty()) {
      for (const std::string& svc : scope) {
        f_.scale_task_of[svc] = t.uuid;
        blocked[svc] = absl::StrCat("scale task ", t.uuid, " waits for task ", w);
      }
      continue;
    }
    bool pending = false, jobs = false;
    for (const std::string& svc : scope) pending |= scale_pending.count(svc) > 0;
    for (const JobRecord& j : f_.s.in_flight) jobs |= j.task_uuid == t.uuid;
    if (!pending && !jobs) {
      Change(t, "completed");
      continue;
    }
    if (t.state == "queued") Change(t, "active");
    for (const std::string& svc : scope) f_.scale_task_of[svc] = t.uuid;
  }
  return blocked;
}

// New automatic tasks for scale work no task owns, admitted against the open
// ones (the store decides again in its transaction).
void ScaleTaskDecision::NewScaleTasks(std::map<std::string, std::string>* blocked) {
  std::vector<TaskRecord> open = f_.s.tasks;
  std::map<std::string, std::string> first_reason;
  for (const Step& st : out_.steps) {
    if (IsScaleWork(st.action) && !f_.scale_task_of.count(st.action.service) &&
        !f_.reprovision_task_of.count(st.action.service)) {
      first_reason.emplace(st.action.service, st.action.reason);
    }
  }
  TaskAdmitter admit = QueueAdmitter();
  for (const auto& [svc, reason] : first_reason) {
    TaskRecord t = ScaleTaskFor(svc, reason);
    std::vector<std::string> terminate;
    absl::Status ok = admit(open, &t, &terminate);
    if (!ok.ok()) {
      (*blocked)[svc] = absl::StrCat("queue: ", ok.message());
      continue;
    }
    if (!t.wait_for.empty()) (*blocked)[svc] = absl::StrCat("scale work waits for task ", t.wait_for.front());
    f_.scale_task_of[svc] = absl::StrCat("new:", svc);
    out_.new_tasks.push_back(t);
    TaskRecord as_open = t;
    as_open.uuid = f_.scale_task_of[svc];
    as_open.state = "queued";
    open.push_back(as_open);
  }
}

// The automatic task for a service's scale work: a replacement of broken
// instances (triggered by drift, a server down or health), the user's own
// `mariposa scale`, or a scale after an apply.
TaskRecord ScaleTaskDecision::ScaleTaskFor(const std::string& svc, const std::string& reason) {
  bool replacing = reason == "replace-broken" || reason == "remove-broken";
  // Instances gone at the same count with no removal of ours: destroyed
  // out of band (their replacement is not an apply's scale).
  bool vanished = false;
  if (!replacing && f_.s.goal && f_.s.goal->origin != "scale") {
    auto m = f_.s.memory.find(svc);
    const ServiceGoalSpec* g = f_.GoalOf(svc);
    if (m != f_.s.memory.end() && g != nullptr && m->second.last_count == g->record.count &&
        m->second.last_seen > static_cast<int64_t>(f_.of[svc].size())) {
      vanished = true;
      for (const FinishedJob& f : f_.s.finished) vanished &= !(f.job.service == svc && RemovesKind(f.job.kind));
      for (const JobRecord& j : f_.s.in_flight) vanished &= !(j.service == svc && RemovesKind(j.kind));
    }
  }
  TaskRecord t = f_.AutoTask("scale", svc, replacing || vanished ? "replace-unhealthy" : "scale");
  t.trigger = vanished ? "destroyed" : replacing ? "drift" : "apply";
  if (replacing) {
    for (const InstanceState* i : f_.of[svc]) {
      if (!InstanceBroken(*i)) continue;
      if (i->state == "stopped") t.trigger = "stopped";
      if (i->state == "failed") t.trigger = "failed";
      if (i->state == "unknown") t.trigger = "server-down";
      if (i->state == "running" && FailsLiveness(*i)) t.trigger = "health";
    }
  } else if (f_.s.goal && f_.s.goal->origin == "scale") {  // `mariposa scale`: the user's own task
    t.origin = "user";
    t.trigger = "scale";
    t.actor = f_.s.goal->author;
  }
  return t;
}

// A crash loop keeps its scale task open with the reason shown.
void ScaleTaskDecision::CrashLoopNotes() {
  std::set<std::string> ended;
  auto ends = [&ended](const std::vector<TaskChange>& changes) {
    for (const TaskChange& c : changes) {
      if (c.state != "active") ended.insert(c.task);
    }
  };
  ends(earlier_);
  ends(out_.task_changes);
  for (const TaskRecord& t : f_.s.tasks) {
    if (t.kind != "scale" || t.state != "active" || ended.count(t.uuid)) continue;
    std::string why;
    for (const std::string& svc : t.services) {
      auto m = memory_.find(svc);
      const ServiceGoalSpec* g = f_.GoalOf(svc);
      if (m != memory_.end() && g != nullptr && m->second.history.Paused(PolicyFor(g->spec, f_.s.policy), f_.now)) {
        why = absl::StrCat("paused: ", svc, " is crash-looping (restart.max_attempts reached)");
      }
    }
    if (why != t.error) Change(t, "active", why);
  }
}

}  // namespace

ScaleTaskOutcome DecideScaleTasks(ProjectFacts* f, const std::vector<Action>& planned, std::vector<Step> steps,
                                  const std::vector<TaskChange>& earlier,
                                  const std::map<std::string, ServiceMemory>& memory) {
  return ScaleTaskDecision(f, planned, std::move(steps), earlier, memory).Run();
}

void Decider::ScaleTasks() {
  ScaleTaskOutcome o = DecideScaleTasks(&f_, planned_, std::move(steps_), d_.task_changes, d_.memory);
  steps_ = std::move(o.steps);
  Append(std::move(o.held), &d_.held);
  for (auto& [svc, why] : o.hold_reasons) hold_reason_.emplace(svc, std::move(why));
  Append(std::move(o.new_tasks), &d_.new_tasks);
  Append(std::move(o.task_changes), &d_.task_changes);
}

// Ordinals: the lowest free one per service, from the aliases
// <project>-<service>-<n> of the instances known (and those in flight).
void Decider::Names() {
  std::map<std::string, std::set<int>> used;
  for (const InstanceState* ip : f_.instances) {
    const InstanceState& i = *ip;
    std::string prefix = absl::StrCat(f_.s.project.name, "-", i.service, "-");
    int n = 0;
    if (i.alias.rfind(prefix, 0) == 0 && absl::SimpleAtoi(i.alias.substr(prefix.size()), &n)) used[i.service].insert(n);
  }
  std::map<std::string, int> from;  // service -> every ordinal below it is taken
  std::vector<Step*> creates;       // those that go now, then the backlog
  for (auto* list : {&steps_, &d_.backlog}) {
    for (Step& st : *list) {
      if (st.action.kind == ActionKind::kCreate) creates.push_back(&st);
    }
  }
  for (Step* stp : creates) {
    Step& st = *stp;
    int& ordinal = from.emplace(st.action.service, 1).first->second;
    std::set<int>& u = used[st.action.service];
    while (u.count(ordinal)) ++ordinal;
    u.insert(ordinal);
    st.alias = absl::StrCat(f_.s.project.name, "-", st.action.service, "-", ordinal);
  }
}

}  // namespace mariposa::convergence::decide_internal
