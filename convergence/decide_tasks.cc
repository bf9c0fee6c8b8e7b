#include "convergence/decider.h"

namespace mariposa::convergence::decide_internal {

void Decider::Tasks() {
  for (const TaskRecord& t : s_.tasks) {
    if (t.state == "queued" || t.state == "active" || t.state == "terminating") open_ids_.insert(t.uuid);
  }
  stopped_ = s_.project.stopped;
  std::vector<std::string> all, agent_services;
  if (s_.goal) {
    for (const auto& kv : s_.goal->services) {
      (kv.second.spec.compute_type != "agent" ? all : agent_services).push_back(kv.first);
    }
  }
  auto in_flight_for = [&](const std::string& task) {
    for (const JobRecord& j : s_.in_flight) {
      if (j.task_uuid == task) return true;
    }
    return false;
  };
  for (const TaskRecord& t : s_.tasks) {
    if (t.kind == "freeze") continue;
    std::vector<std::string> scope = t.services.empty() ? all : t.services;
    if (t.state == "terminating") {
      Change(t, "terminated");
      continue;
    }
    if (t.auto_kind == "agent-rollout") continue;  // Agents() drives it
    if (Newer(t)) {
      for (const std::string& svc : scope) task_waits_[svc] = absl::StrCat("task ", t.uuid, " waits for its version");
      continue;
    }
    if (std::string w = WaitingFor(t); !w.empty()) {
      for (const std::string& svc : scope) {
        task_waits_.emplace(svc, absl::StrCat(t.kind, " task ", t.uuid, " waits for task ", w));
      }
      continue;
    }
    if (t.kind == "stop" || t.kind == "start") {
      if (t.state == "queued") {
        Change(t, "active");
        for (const std::string& svc : t.services) {
          if (t.kind == "stop") stopped_.insert(svc);
          else stopped_.erase(svc);
        }
      }
      for (const std::string& svc : scope) run_task_of_[svc] = t.uuid;
      if (t.kind == "start") {
        // Done when the plan starts nothing more in its scope (StartsDone):
        // a stopped instance the plan removes instead (the service has
        // `count` running already) is not the start task's to wait for.
        for (const std::string& svc : scope) starting_.insert(svc);
        start_tasks_.push_back(&t);
        continue;
      }
      bool pending = false;
      for (const std::string& svc : scope) {
        for (const InstanceState* i : of_[svc]) pending |= i->state == "running" || i->state == "provisioning";
      }
      if (!pending && !in_flight_for(t.uuid)) {
        Change(t, "completed");
        for (const std::string& svc : scope) run_task_of_.erase(svc);
      }
      continue;
    }
    if (t.kind != "reprovision") continue;  // scale: after the plan
    if (!t.paused.empty()) {
      // `mariposa pause`: no further step; what is in flight finishes.
      for (const std::string& svc : scope) {
        task_waits_[svc] = absl::StrCat("rollout ", t.uuid, " paused by ", t.paused, "; `mariposa resume ", t.uuid,
                                        "` continues it");
        paused_[svc] = &t;
      }
      continue;
    }
    std::string overdue = s_.project.current_version == t.version_uuid ? Overdue(t, scope) : "";
    // update.auto_rollback: a new-spec instance of this rollout that is
    // unhealthy fails the rollout; the executor rolls the project back to
    // the version before and queues a reprovision back to it.
    if (s_.goal && s_.project.current_version == t.version_uuid) {
      std::string bad_service, bad_instance;
      for (const std::string& svc : scope) {
        const ServiceGoalSpec* g = GoalOf(svc);
        if (g == nullptr || !g->spec.update_auto_rollback) continue;
        for (const InstanceState* i : of_[svc]) {
          if (i->checked && i->state == "running" && i->spec_hash == g->record.spec_hash && i->health == "unhealthy") {
            bad_service = svc;
            bad_instance = i->alias;
          }
        }
      }
      std::string before;
      for (const auto& v : s_.version_numbers) {
        if (v.second == s_.goal->number - 1) before = v.first;
      }
      if (!bad_service.empty() && !before.empty()) {
        d_.rollbacks.push_back({t.uuid, before, s_.project.current_version, t.services,
                                absl::StrCat("auto_rollback: ", bad_instance, " of the new spec of ", bad_service,
                                             " is unhealthy; rolled back to version ", s_.goal->number - 1)});
        rolled_back_.insert(scope.begin(), scope.end());
        continue;
      }
      bool auto_rollback = false;
      for (const std::string& svc : scope) {
        const ServiceGoalSpec* g = GoalOf(svc);
        auto_rollback |= g != nullptr && g->spec.update_auto_rollback;
      }
      if (!overdue.empty() && auto_rollback && !before.empty()) {
        d_.rollbacks.push_back({t.uuid, before, s_.project.current_version, t.services,
                                absl::StrCat("auto_rollback: ", overdue, "; rolled back to version ", s_.goal->number - 1)});
        rolled_back_.insert(scope.begin(), scope.end());
        continue;
      }
    }
    if (!overdue.empty()) {
      // The rollout failed; what it replaced stays, the rest keeps its old spec.
      Change(t, "failed", overdue);
      Event("rollout.failed", t.uuid, overdue);
      continue;
    }
    static const std::set<std::string> kNone;
    auto images = s_.filter_images.find(t.uuid);
    const std::set<std::string>& image_uuids = images == s_.filter_images.end() ? kNone : images->second;
    int64_t deleting = 0;  // this task's replacements in flight count toward its canary
    for (const JobRecord& j : s_.in_flight) deleting += j.task_uuid == t.uuid && RollsKind(j.kind);
    // Replacements that ended since the task was read: counted into it by
    // this sync (FinishedJobs), not yet in t.replaced.
    int64_t just_replaced = 0;
    for (const FinishedJob& f : s_.finished) {
      just_replaced += f.ok && f.job.task_uuid == t.uuid && f.job.reason == "reprovision" &&
                       RollsKind(f.job.kind);
    }
    int64_t canary_left =
        t.canary > 0 ? std::max<int64_t>(0, t.canary - t.replaced - just_replaced - deleting) : -1;
    bool filtered = t.canary > 0 || !t.filter_versions.empty() || !t.filter_images.empty() ||
                    !t.filter_servers.empty() || !t.filter_instances.empty();
    int64_t pending = 0, coming_up = 0;  // coming_up: reprovisioned in place, not ready yet
    std::vector<std::string> mine;
    for (const std::string& svc : scope) {
      const ServiceGoalSpec* g = GoalOf(svc);
      if (g == nullptr || g->spec.compute_type == "agent") continue;
      ServiceGoal goal = GoalFor(*g, s_.images);
      std::set<std::string> chosen;
      for (const InstanceState* i : ReprovisionOrder(of_[svc], goal)) {
        if (canary_left >= 0 && pending >= canary_left) break;
        if (!MatchesFilters(t, *i, image_uuids) || job_on_.count(i->uuid)) continue;
        chosen.insert(i->uuid);
        ++pending;
      }
      // Instances of the new spec still coming up belong to the rollout too.
      // In place, that is until they are ready again.
      bool starting = false;
      for (const InstanceState* i : of_[svc]) {
        bool current = !Outdated(*i, goal);
        starting |= i->state == "provisioning" && i->spec_hash == goal.spec_hash;
        if (goal.in_place && current && i->state == "running" && !InstanceReady(*i, now_, goal.start_window)) {
          starting = true;
          ++coming_up;
        }
      }
      if (chosen.empty() && !starting) continue;
      reprovision_.insert(svc);
      if (t.rolling > 0) rolling_[svc] = static_cast<int>(t.rolling);  // the task's --rolling
      if (filtered) reprovision_only_[svc] = std::move(chosen);
      reprovision_task_of_[svc] = t.uuid;
      mine.push_back(svc);
    }
    bool agents = false;  // Agents() ends a task that covers agent services too
    for (const std::string& a : agent_services) agents |= Covers(t, a);
    if (pending == 0 && deleting == 0 && coming_up == 0) {
      if (!agents) Change(t, "completed");
      else if (t.state == "queued") Change(t, "active");
      if (t.canary > 0 && t.replaced + just_replaced >= t.canary) {
        Event("reprovision.canary-done", t.uuid,
              absl::StrCat(t.canary, " instances replaced; `mariposa reprovision` continues with the rest"));
      }
      for (const std::string& svc : mine) {
        reprovision_.erase(svc);
        reprovision_only_.erase(svc);
        reprovision_task_of_.erase(svc);
      }
      continue;
    }
    busy_tasks_.insert(t.uuid);
    if (t.state == "queued") Change(t, "active");
  }
}

// Automatic work runs as `scale` tasks, one per service: added when work
// appears (never in a frozen scope: admission refuses it), completed when
// the plan has none left for the service. A user's scale task, or one
// already open, is reused.
void Decider::ScaleTasks() {
  std::set<std::string> scale_pending;
  for (const Action& a : planned_) {
    if (IsScaleWork(a)) scale_pending.insert(a.service);
  }
  std::map<std::string, std::string> blocked;  // service -> why its scale task waits
  std::vector<std::string> all;
  if (s_.goal) {
    for (const auto& kv : s_.goal->services) all.push_back(kv.first);
  }
  for (const TaskRecord& t : s_.tasks) {
    if (t.kind != "scale" || t.state == "terminating" || Newer(t)) continue;
    std::vector<std::string> scope = t.services.empty() ? all : t.services;
    if (std::string w = WaitingFor(t); !w.empty()) {
      for (const std::string& svc : scope) {
        scale_task_of_[svc] = t.uuid;
        blocked[svc] = absl::StrCat("scale task ", t.uuid, " waits for task ", w);
      }
      continue;
    }
    bool pending = false, jobs = false;
    for (const std::string& svc : scope) pending |= scale_pending.count(svc) > 0;
    for (const JobRecord& j : s_.in_flight) jobs |= j.task_uuid == t.uuid;
    if (!pending && !jobs) {
      Change(t, "completed");
      continue;
    }
    if (t.state == "queued") Change(t, "active");
    for (const std::string& svc : scope) scale_task_of_[svc] = t.uuid;
  }
  // New automatic tasks, admitted against the open ones (the store decides
  // again in its transaction).
  std::vector<TaskRecord> open = s_.tasks;
  std::map<std::string, std::string> first_reason;
  for (const Step& st : steps_) {
    if (IsScaleWork(st.action) && !scale_task_of_.count(st.action.service) &&
        !reprovision_task_of_.count(st.action.service)) {
      first_reason.emplace(st.action.service, st.action.reason);
    }
  }
  TaskAdmitter admit = QueueAdmitter();
  for (const auto& kv : first_reason) {
    TaskRecord t;
    t.project_uuid = s_.project.uuid;
    t.kind = "scale";
    t.services = {kv.first};
    t.origin = "auto";
    t.version_uuid = s_.goal ? s_.goal->version_uuid : "";
    t.actor = "mariposad";
    bool replacing = kv.second == "replace-broken" || kv.second == "remove-broken";
    t.auto_kind = replacing ? "replace-unhealthy" : "scale";
    t.trigger = replacing ? "drift" : "apply";
    if (replacing) {
      for (const InstanceState* i : of_[kv.first]) {
        if (i->state == "unknown") t.trigger = "server-down";
        if (i->state == "running" && i->health == "unhealthy") t.trigger = "health";
      }
    } else if (s_.goal && s_.goal->origin == "scale") {  // `mariposa scale`: the user's own task
      t.origin = "user";
      t.trigger = "scale";
      t.actor = s_.goal->author;
    }
    std::vector<std::string> terminate;
    absl::Status ok = admit(open, &t, &terminate);
    if (!ok.ok()) {
      blocked[kv.first] = absl::StrCat("queue: ", ok.message());
      continue;
    }
    if (!t.wait_for.empty()) blocked[kv.first] = absl::StrCat("scale work waits for task ", t.wait_for.front());
    scale_task_of_[kv.first] = absl::StrCat("new:", kv.first);
    d_.new_tasks.push_back(t);
    TaskRecord as_open = t;
    as_open.uuid = scale_task_of_[kv.first];
    as_open.state = "queued";
    open.push_back(as_open);
  }
  std::vector<Step> kept;
  for (Step& st : steps_) {
    if (IsScaleWork(st.action)) {
      // A rollout acting on the service owns the creates that bring it back
      // to `count` (its floor counts on them): they go ahead as its work
      // even when a scale task is queued behind it.
      auto rollout = reprovision_task_of_.find(st.action.service);
      if (rollout != reprovision_task_of_.end()) {
        st.task = rollout->second;
        kept.push_back(std::move(st));
        continue;
      }
      auto b = blocked.find(st.action.service);
      if (b != blocked.end()) {
        d_.held.push_back({st.action, b->second});
        hold_reason_.emplace(st.action.service, b->second);
        continue;
      }
      st.task = scale_task_of_[st.action.service];
    }
    kept.push_back(std::move(st));
  }
  steps_ = std::move(kept);
  // A crash loop keeps its task open with the reason shown.
  std::set<std::string> ended;
  for (const TaskChange& c : d_.task_changes) {
    if (c.state != "active") ended.insert(c.task);
  }
  for (const TaskRecord& t : s_.tasks) {
    if (t.kind != "scale" || t.state != "active" || ended.count(t.uuid)) continue;
    std::string why;
    for (const std::string& svc : t.services) {
      auto m = d_.memory.find(svc);
      const ServiceGoalSpec* g = GoalOf(svc);
      if (m != d_.memory.end() && g != nullptr && m->second.history.Paused(PolicyFor(g->spec, s_.policy), now_)) {
        why = absl::StrCat("paused: ", svc, " is crash-looping (restart.max_attempts reached)");
      }
    }
    if (why != t.error) Change(t, "active", why);
  }
}

// Ordinals: the lowest free one per service, from the aliases
// <project>-<service>-<n> of the instances known (and those in flight).
void Decider::Names() {
  std::map<std::string, std::set<int>> used;
  for (const InstanceState* ip : instances_) {
    const InstanceState& i = *ip;
    std::string prefix = absl::StrCat(s_.project.name, "-", i.service, "-");
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
    st.alias = absl::StrCat(s_.project.name, "-", st.action.service, "-", ordinal);
  }
}

}  // namespace mariposa::convergence::decide_internal
