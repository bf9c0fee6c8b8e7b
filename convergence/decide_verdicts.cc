#include "convergence/decider.h"

namespace mariposa::convergence::decide_internal {

void Decider::Verdicts() {
  // Counting: removals of broken instances that go ahead now count toward
  // the crash loop when the instance failed its checks or died soon after
  // it was created (a failed provision was counted when its job failed).
  for (const Step& st : steps_) {
    if (!Removes(st.action.kind) || st.action.reason != "remove-broken") continue;
    auto it = by_uuid_.find(st.action.instance);
    const ServiceGoalSpec* g = GoalOf(st.action.service);
    if (it == by_uuid_.end() || g == nullptr) continue;
    const InstanceState& i = *it->second;
    if (i.spec_hash != g->record.spec_hash) continue;
    if (i.state == "running" && i.health == "unhealthy") {
      CrashFailure(i.service, absl::StrCat(i.alias, " failed its health checks"));
    } else if (i.state == "stopped" && now_ - i.created < g->spec.restart_window) {
      CrashFailure(i.service, absl::StrCat(i.alias, " stopped soon after creation"));
    }
  }
  std::set<std::string> active_scope;  // services with work in flight or a task acting
  for (const JobRecord& j : s_.in_flight) active_scope.insert(j.service);
  for (const Step& st : steps_) active_scope.insert(st.action.service);
  for (const AgentInstall& a : d_.installs) active_scope.insert(a.service);
  std::map<std::string, std::string> open_task;  // service -> a non-freeze task open in its scope
  for (const TaskRecord& t : s_.tasks) {
    if (t.kind == "freeze" || t.state == "terminating") continue;
    bool ending = false;
    for (const TaskChange& c : d_.task_changes) {
      ending |= c.task == t.uuid && (c.state == "completed" || c.state == "failed" || c.state == "terminated");
    }
    if (ending) continue;
    if (!s_.goal) continue;
    for (const auto& kv : s_.goal->services) {
      if (Covers(t, kv.first)) open_task.emplace(kv.first, absl::StrCat(t.kind, " task ", t.uuid));
    }
  }
  for (const ApiProblem& a : s_.api_problems) {
    Problem("triton-unreachable", "", absl::StrCat(a.api, " is unreachable at ", a.url),
            absl::StrCat(a.error, " (since ", Stamp(a.since), ")"),
            absl::StrCat("check that ", a.api, " is up (`svcs -xv` in its zone) and reachable from mariposad at ", a.url,
                         "; mariposad retries on its own"),
            absl::StrCat("project ", s_.project.name,
                         ": no instance is created, replaced or removed, and its actual state is unknown until ", a.api,
                         " answers"));
  }
  if (!s_.goal) return;
  for (const auto& kv : s_.goal->services) {
    const std::string& svc = kv.first;
    const ServiceGoalSpec& g = kv.second;
    if (g.spec.compute_type == "agent") continue;
    ServiceVerdict v;
    v.desired = g.record.count;
    v.stopped_by_user = stopped_.count(svc) > 0;
    if (!s_.actual_known) {
      v.state = VerdictState::kUnknown;
      bool pending = s_.api_problems.empty() && s_.observed_at == absl::InfinitePast();
      v.reason = pending ? "not read yet: the project's first sync has not finished" : "VMAPI could not be read";
      v.fix = pending ? "wait a moment; `mariposa events -f` shows the sync's work" : "see the problems below";
      d_.verdicts[svc] = v;
      continue;
    }
    int64_t live = 0, left_broken = 0;
    ServiceGoal goal = GoalFor(g, s_.images);
    for (const InstanceState* i : of_[svc]) {
      bool current = !Outdated(*i, goal);
      if (i->state == "provisioning") {
        ++v.provisioning;
        ++live;
        if (!current) ++v.old_spec;
        continue;
      }
      // A stopped service wants nothing running: a failed VM is as good as a
      // stopped one (it is replaced on `start`). One on a server that does
      // not answer (`unknown`) may still run: that is not stopped.
      if (v.stopped_by_user && (i->state == "stopped" || i->state == "failed")) {
        ++v.stopped;
        continue;
      }
      if (InstanceBroken(*i)) {
        ++v.broken;
        if (i->state == "running") ++v.unhealthy;
        if (!Restarts(goal, *i)) ++left_broken;
        continue;
      }
      if (i->state != "running") continue;
      ++live;
      if (!current) {
        ++v.old_spec;
        if (i->spec_hash == g.record.spec_hash) ++v.stale_meta;
        continue;
      }
      // Ready: the one definition the rollouts use too (InstanceReady):
      // healthy when it has checks, else running for start.window; and so
      // for update.min_healthy_time.
      if (InstanceReady(*i, now_, goal.start_window, goal.min_healthy_time)) ++v.ready;
      else if (i->checked) ++v.checks_pending;
      else ++v.starting;
    }
    auto held = hold_reason_.find(svc);
    auto task = open_task.find(svc);
    const ServiceMemory& m = d_.memory[svc];
    bool paused = m.history.Paused(PolicyFor(g.spec, s_.policy), now_);
    bool acting = active_scope.count(svc) > 0;
    auto image_error = s_.image_errors.find(svc);
    auto spec_error = s_.spec_errors.find(svc);
    if (v.stopped_by_user) {
      bool down = v.provisioning == 0 && live == 0 && v.broken == 0;
      v.state = down && task == open_task.end() ? VerdictState::kConverged : VerdictState::kProgressing;
      v.reason = down ? absl::StrCat("stopped (", v.stopped, " instances)") : "stopping";
      if (down) {
        v.fix = absl::StrCat("`mariposa start ", svc, "` runs it again");
      } else if (live == 0 && v.provisioning == 0 && !acting) {
        v.state = VerdictState::kDegraded;
        v.reason = absl::StrCat(v.broken, " instances on servers that do not answer: not known to be stopped");
        v.fix = "they are stopped when their servers answer again; see `mariposa status -v`";
      }
      d_.verdicts[svc] = v;
      continue;
    }
    if (ImportVerdict(svc, &v)) continue;
    bool exact = v.ready == g.record.count && live == g.record.count && v.old_spec == 0 && v.broken == 0 &&
                 v.provisioning == 0 && v.checks_pending == 0 && v.starting == 0;
    if (exact && task == open_task.end() && held == hold_reason_.end() && !acting) {
      v.state = VerdictState::kConverged;
      v.reason = absl::StrCat(v.ready, "/", g.record.count, " ready");
    } else if (paused) {
      v.state = VerdictState::kPaused;
      v.reason = "crash loop: replacement paused";
      v.fix = absl::StrCat("see `mariposa events` (service.crashlooping) for why instances fail; apply a fixed spec, "
                           "or wait: one attempt is made after restart.window");
      Problem("crash-loop", svc, absl::StrCat("service ", svc, " is crash-looping"), m.pause_reason, v.fix,
              absl::StrCat(v.ready, " of ", g.record.count, " instances ready; no replacement is created until ",
                           Stamp(m.history.last_failure() + g.spec.restart_window)));
    } else if (image_error != s_.image_errors.end() && held != hold_reason_.end() &&
               held->second.rfind("image:", 0) == 0) {
      v.state = VerdictState::kFailed;
      v.reason = absl::StrCat("image ", g.record.image, " not found");
      v.fix = absl::StrCat("import ", g.record.image, " into IMGAPI, or apply a manifest naming an image it has");
      Problem("image-missing", svc, absl::StrCat("image ", g.record.image, " of service ", svc, " is not in IMGAPI"),
              image_error->second, v.fix,
              absl::StrCat(g.record.count - live, " instances of ", svc, " cannot be created; ", live,
                           " keep running"));
    } else if (spec_error != s_.spec_errors.end() && held != hold_reason_.end() && held->second == spec_error->second) {
      // The package, networks or brand cannot be chosen (catalog.h).
      std::string field = spec_error->second.substr(0, spec_error->second.find(':'));
      v.state = VerdictState::kFailed;
      v.reason = spec_error->second;
      v.fix = absl::StrCat("apply a manifest whose ", field, " the data center has (`mariposa diff` checks it first)");
      Problem(absl::StrCat(field, "-unavailable"), svc, absl::StrCat("service ", svc, ": ", spec_error->second),
              spec_error->second, v.fix,
              absl::StrCat(g.record.count - live, " instances of ", svc, " cannot be created; ", live, " keep running"));
    } else if (held != hold_reason_.end() && held->second.rfind("frozen", 0) == 0) {
      v.state = VerdictState::kPaused;
      v.reason = held->second;
      v.fix = absl::StrCat("`mariposa thaw ", svc, "` lets the work go on");
    } else if (held != hold_reason_.end() && held->second.rfind("placement", 0) == 0) {
      v.state = VerdictState::kPaused;
      v.reason = held->second;
      v.fix = "create what the rule points at, or change the rule in the manifest";
      Problem("placement", svc, absl::StrCat("creates of ", svc, " wait for their placement"), held->second, v.fix,
              absl::StrCat(g.record.count - live, " instances of ", svc, " are not created"));
    } else if (held != hold_reason_.end() && held->second.rfind("replacement budget", 0) == 0) {
      v.state = VerdictState::kDegraded;
      v.reason = absl::StrCat(v.broken, " broken; replacement budget spent");
      v.fix = "more replacements are made each interval; many broken at once usually means a server or network "
              "outage: check `sdc-server list`";
      Problem("budget-exceeded", svc, absl::StrCat(v.broken, " broken instances of ", svc), held->second, v.fix,
              absl::StrCat(v.ready, " of ", g.record.count, " ready"));
    } else if (auto p = paused_.find(svc);
               p != paused_.end() && held != hold_reason_.end() && held->second == task_waits_.at(svc)) {
      const TaskRecord& t = *p->second;
      v.state = VerdictState::kPaused;
      v.reason = absl::StrCat("rollout ", t.uuid, " paused by ", t.paused, " (", v.old_spec,
                              " instances on an older spec)");
      v.fix = absl::StrCat("`mariposa resume ", t.uuid, "` continues it");
    } else if (v.old_spec > 0 && !reprovision_task_of_.count(svc) && !acting && v.broken == 0 &&
               v.provisioning == 0) {
      v.state = VerdictState::kDegraded;
      bool manual = g.spec.update_on_change == "manual";
      if (v.stale_meta == v.old_spec) {  // only meta changed (meta_drift.h)
        manual = g.spec.update_on_meta_change == "manual";
        v.reason = absl::StrCat(v.stale_meta, " of ", live, " instances were created with older meta values (the service uses ",
                                absl::StrJoin(g.meta_keys, ", "), "); no rollout is running",
                                manual ? " (update.on_meta_change: manual)" : "");
      } else {
        v.reason = absl::StrCat(v.old_spec, " of ", live, " instances run an older spec; no rollout is running",
                                manual ? " (update.on_change: manual)" : "");
      }
      v.fix = absl::StrCat("`mariposa -j ", s_.project.name, " reprovision --service ", svc, "` replaces them");
      Problem(v.stale_meta == v.old_spec ? "stale-meta" : "older-spec", svc, v.reason,
              manual ? "the service rolls out only when asked (update.on_change / on_meta_change: manual)"
              : g.spec.update_canary > 0
                  ? absl::StrCat("the rollout stopped after its canary (update.canary: ", g.spec.update_canary,
                                 " replacements) to let you check them, or was terminated")
                  : "the rollout that would replace them ended (terminated, or not queued)",
              v.fix, absl::StrCat(v.old_spec, " instances of ", svc, " do not run what the manifest says"));
    } else if (left_broken > 0 && !acting && v.provisioning == 0) {
      v.state = VerdictState::kDegraded;
      std::string when = absl::StrJoin(g.spec.restart_condition, ", ");
      v.reason = absl::StrCat(left_broken, " broken ", left_broken == 1 ? "instance is" : "instances are",
                              " not replaced (restart.condition: ", when, ")");
      v.fix = absl::StrCat("`mariposa -j ", s_.project.name, " start --service ", svc,
                           "` starts stopped ones; destroy a broken one to have it replaced, or add the condition "
                           "to restart.condition");
      Problem("not-restarted", svc, v.reason,
              "restart.condition does not cover how they broke: on-failure covers failed, stopped and unhealthy "
              "instances, on-cn-restart those on a server that does not answer",
              v.fix, absl::StrCat(v.ready, " of ", g.record.count, " instances of ", svc, " ready"));
    } else if (v.unhealthy > 0 && !acting) {
      v.state = VerdictState::kDegraded;
      v.reason = absl::StrCat(v.unhealthy, " unhealthy");
      v.fix = "`mariposa health` shows the failing checks";
    } else {
      v.state = VerdictState::kProgressing;
      std::vector<std::string> parts;
      parts.push_back(absl::StrCat(v.ready, "/", g.record.count, " ready"));
      if (v.provisioning > 0) parts.push_back(absl::StrCat(v.provisioning, " provisioning"));
      if (v.checks_pending > 0) parts.push_back(absl::StrCat(v.checks_pending, " waiting for checks"));
      if (v.starting > 0) {
        parts.push_back(absl::StrCat(v.starting, " starting (ready after ", absl::FormatDuration(goal.start_window),
                                     " up, start.window)"));
      }
      if (v.old_spec > 0) parts.push_back(absl::StrCat(v.old_spec, " on an older spec"));
      if (v.broken > 0) parts.push_back(absl::StrCat(v.broken, " broken"));
      if (held != hold_reason_.end()) parts.push_back(held->second);
      else if (task != open_task.end() && !acting) parts.push_back(task->second);
      v.reason = absl::StrJoin(parts, ", ");
    }
    d_.verdicts[svc] = v;
  }
}

}  // namespace mariposa::convergence::decide_internal
