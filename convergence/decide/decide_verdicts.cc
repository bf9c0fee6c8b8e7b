#include "convergence/decide/decider.h"

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"

namespace mariposa::convergence::decide_internal {

// Each service's verdict (agent services have theirs from Agents()), the
// problems that explain it, and the crash-loop counting of this Decide's
// removals of broken instances.
void Decider::Verdicts() {
  CountCrashes();
  ApiProblems();
  if (!f_.s.goal) return;
  VerdictScope scope = ScopeOfVerdicts();
  for (const auto& [svc, g] : f_.s.goal->services) {
    if (RunsToCompletion(g.spec)) d_.verdicts[svc] = RunVerdict(f_, svc, d_.runs[svc]);
    if (RunsToCompletion(g.spec) || g.spec.compute_type == "agent") continue;
    VerdictInputs in{&d_.memory[svc], &steps_};
    if (auto held = hold_reason_.find(svc); held != hold_reason_.end()) in.held = &held->second;
    if (auto task = scope.open_task.find(svc); task != scope.open_task.end()) in.task = &task->second;
    in.acting = scope.acting.count(svc) > 0;
    VerdictOutcome o = DecideVerdict(f_, svc, g, in);
    d_.verdicts[svc] = std::move(o.verdict);
    Append(std::move(o.problems), &d_.problems);
  }
}

// Removals of broken instances that go ahead now count toward the crash loop
// when the instance failed its checks or died soon after it was created (a
// failed provision was counted when its job failed).
void Decider::CountCrashes() {
  for (const Step& st : steps_) {
    if (!Removes(st.action.kind) || st.action.reason != "remove-broken") continue;
    auto it = f_.by_uuid.find(st.action.instance);
    const ServiceGoalSpec* g = f_.GoalOf(st.action.service);
    if (it == f_.by_uuid.end() || g == nullptr) continue;
    const InstanceState& i = *it->second;
    if (i.spec_hash != g->record.spec_hash) continue;
    if (i.state == "running" && FailsLiveness(i)) {
      CrashFailure(f_, i.service, absl::StrCat(i.alias, " failed its health checks"), &d_.memory, &d_.events);
    } else if (i.state == "stopped" && f_.now - i.created < g->spec.restart_window) {
      CrashFailure(f_, i.service, absl::StrCat(i.alias, " stopped soon after creation"), &d_.memory, &d_.events);
    }
  }
}

void Decider::ApiProblems() {
  for (const ApiProblem& a : f_.s.api_problems) {
    Problem("triton-unreachable", "", absl::StrCat(a.api, " is unreachable at ", a.url),
            absl::StrCat(a.error, " (since ", Stamp(a.since), ")"),
            absl::StrCat("check that ", a.api, " is up (`svcs -xv` in its zone) and reachable from mariposad at ", a.url,
                         "; mariposad retries on its own"),
            absl::StrCat("project ", f_.s.project.name,
                         ": no instance is created, replaced or removed, and its actual state is unknown until ", a.api,
                         " answers"));
  }
}

// Services with work in flight or a task acting; and for each service, a
// non-freeze task open in its scope that this Decide does not end.
Decider::VerdictScope Decider::ScopeOfVerdicts() const {
  VerdictScope out;
  for (const JobRecord& j : f_.s.in_flight) out.acting.insert(j.service);
  for (const Step& st : steps_) out.acting.insert(st.action.service);
  for (const AgentInstall& a : d_.installs) out.acting.insert(a.service);
  for (const TaskRecord& t : f_.s.tasks) {
    if (t.kind == "freeze" || t.state == "terminating") continue;
    bool ending = false;
    for (const TaskChange& c : d_.task_changes) {
      ending |= c.task == t.uuid && (c.state == "completed" || c.state == "failed" || c.state == "terminated");
    }
    if (ending) continue;
    for (const auto& kv : f_.s.goal->services) {
      if (Covers(t, kv.first)) out.open_task.emplace(kv.first, absl::StrCat(t.kind, " task ", t.uuid));
    }
  }
  return out;
}

namespace {

// One service's verdict, computed with its own locals from the project's
// facts, its memory, the reason its work is held, its open task and the
// plan's steps.
class ServiceVerdictDecision {
 public:
  ServiceVerdictDecision(const ProjectFacts& f, const std::string& svc, const ServiceGoalSpec& g,
                         const VerdictInputs& in)
      : f_(f), svc_(svc), g_(g), memory_(*in.memory), steps_(*in.steps), held_(in.held), task_(in.task),
        acting_(in.acting) {}
  VerdictOutcome Run() &&;

 private:
  struct VerdictFacts {
    const std::string& svc;
    const ServiceGoalSpec& g;
    ServiceGoal goal;
    int64_t live = 0, left_broken = 0;
    // Current instances changed by hand in VMAPI: "alias (what)".
    std::vector<std::string> hand_changed;
    int64_t stale_mount = 0;  // instances that mount a copy of a volume deleted outside Mariposa
    int64_t not_ready = 0;    // running, live, failing their readiness checks (kept, out of discovery)
    const std::string* held = nullptr;  // the first reason its work is held
    const std::string* task = nullptr;  // its open task, named
    bool acting = false;
  };
  void CountForVerdict(VerdictFacts* f, ServiceVerdict* v);
  static std::string HandChanged(const VerdictFacts& f);
  void StoppedVerdict(const VerdictFacts& f, ServiceVerdict* v);
  bool CrashLoopVerdict(const VerdictFacts& f, ServiceVerdict* v);
  bool HeldVerdict(const VerdictFacts& f, ServiceVerdict* v);
  bool OlderSpecVerdict(const VerdictFacts& f, ServiceVerdict* v);
  bool NotRestartedVerdict(const VerdictFacts& f, ServiceVerdict* v);
  void ProgressVerdict(const VerdictFacts& f, ServiceVerdict* v);
  void Problem(const std::string& kind, const std::string& service, std::string error, std::string reason,
               std::string fix, std::string impact) {
    out_.problems.push_back({kind, service, std::move(error), std::move(reason), std::move(fix), std::move(impact)});
  }

  const ProjectFacts& f_;
  const std::string& svc_;
  const ServiceGoalSpec& g_;
  const ServiceMemory& memory_;
  const std::vector<Step>& steps_;
  const std::string* held_;
  const std::string* task_;
  const bool acting_;
  VerdictOutcome out_;
};

VerdictOutcome ServiceVerdictDecision::Run() && {
  const std::string& svc = svc_;
  const ServiceGoalSpec& g = g_;
  ServiceVerdict v;
  v.desired = g.record.count;
  v.stopped_by_user = f_.stopped.count(svc) > 0;
  if (!f_.s.actual_known) {
    v.state = VerdictState::kUnknown;
    bool pending = f_.s.api_problems.empty() && f_.s.observed_at == absl::InfinitePast();
    v.reason = pending ? "not read yet: the project's first sync has not finished" : "VMAPI could not be read";
    v.fix = pending ? "wait a moment; `mariposa events -f` shows the sync's work" : "see the problems below";
    out_.verdict = std::move(v);
    return std::move(out_);
  }
  VerdictFacts f{svc, g, GoalFor(g, f_.s.images)};
  CountForVerdict(&f, &v);
  f.held = held_;
  f.task = task_;
  f.acting = acting_;
  if (v.stopped_by_user) {
    StoppedVerdict(f, &v);
  } else if (ImportVerdict(f_, svc, memory_, &v, &out_.problems)) {
    out_.verdict = std::move(v);
    return std::move(out_);
  } else if (v.ready == g.record.count && f.live == g.record.count && v.old_spec == 0 && v.broken == 0 &&
             v.provisioning == 0 && v.checks_pending == 0 && v.starting == 0 && f.task == nullptr &&
             f.held == nullptr && !f.acting && f.hand_changed.empty()) {
    v.state = VerdictState::kConverged;
    v.reason = absl::StrCat(v.ready, "/", g.record.count, " ready");
  } else if (!CrashLoopVerdict(f, &v) && !HeldVerdict(f, &v) && !OlderSpecVerdict(f, &v) &&
             !NotRestartedVerdict(f, &v)) {
    if (v.unhealthy > 0 && !f.acting) {
      v.state = VerdictState::kDegraded;
      v.reason = f.not_ready == v.unhealthy
                     ? absl::StrCat(v.unhealthy, " not ready: failing readiness checks (kept: not replaced)")
                     : absl::StrCat(v.unhealthy, " unhealthy");
      v.fix = "`mariposa health` shows the failing checks";
    } else if (!f.hand_changed.empty() && !f.acting) {  // not put back again (DecideRetags said why)
      v.state = VerdictState::kDegraded;
      v.reason = absl::StrCat(HandChanged(f), "; not put back again");
      v.fix = "see the instance-drift problem below";
    } else {
      ProgressVerdict(f, &v);
    }
  }
  out_.verdict = std::move(v);
  return std::move(out_);
}

// The service's instances counted into the verdict: provisioning, stopped,
// broken, on an older spec, ready, waiting for checks or starting.
void ServiceVerdictDecision::CountForVerdict(VerdictFacts* f, ServiceVerdict* v) {
  for (const InstanceState* i : f_.Of(f->svc)) {
    bool current = !Outdated(*i, f->goal);
    if (i->state == "provisioning") {
      ++v->provisioning;
      ++f->live;
      if (!current) ++v->old_spec;
      continue;
    }
    // A stopped service wants nothing running: a failed VM is as good as a
    // stopped one (it is replaced on `start`). One on a server that does not
    // answer (`unknown`) may still run: that is not stopped.
    if (v->stopped_by_user && (i->state == "stopped" || i->state == "failed")) {
      ++v->stopped;
      continue;
    }
    if (InstanceBroken(*i)) {
      ++v->broken;
      if (i->state == "running") ++v->unhealthy;
      if (!Restarts(f->goal, *i)) ++f->left_broken;
      continue;
    }
    if (current && !i->hand_changed.empty() && (i->state == "running" || i->state == "stopped")) {
      f->hand_changed.push_back(
          absl::StrCat(i->alias, " (", absl::StrReplaceAll(i->hand_changed, {{"+", ", "}}), ")"));
    }
    if (i->state != "running") continue;
    ++f->live;
    if (!current) {
      ++v->old_spec;
      if (i->stale_mount) ++f->stale_mount;
      else if (i->spec_hash == f->g.record.spec_hash) ++v->stale_meta;
      continue;
    }
    // Ready: the one definition the rollouts use too (InstanceReady): healthy
    // when it has checks, else running for start.window; and so for
    // update.min_healthy_time.
    if (InstanceReady(*i, f_.now, f->goal.start_window, f->goal.min_healthy_time)) {
      ++v->ready;
    } else if (i->health == "unhealthy") {
      ++v->unhealthy;  // not broken: only its readiness checks fail
      ++f->not_ready;
    } else if (i->checked) {
      ++v->checks_pending;
    } else {
      ++v->starting;
    }
  }
}

// A service stopped by `mariposa stop`.
void ServiceVerdictDecision::StoppedVerdict(const VerdictFacts& f, ServiceVerdict* v) {
  bool down = v->provisioning == 0 && f.live == 0 && v->broken == 0;
  v->state = down && f.task == nullptr && !f.acting ? VerdictState::kConverged : VerdictState::kProgressing;
  v->reason = down ? absl::StrCat("stopped (", v->stopped, " instances)") : "stopping";
  if (down) {
    v->fix = absl::StrCat("`mariposa start ", f.svc, "` runs it again");
  } else if (f.live == 0 && v->provisioning == 0 && !f.acting) {
    v->state = VerdictState::kDegraded;
    v->reason = absl::StrCat(v->broken, " instances on servers that do not answer: not known to be stopped");
    v->fix = "they are stopped when their servers answer again; see `mariposa status -v`";
  }
}

bool ServiceVerdictDecision::CrashLoopVerdict(const VerdictFacts& f, ServiceVerdict* v) {
  const ServiceMemory& m = memory_;
  if (!m.history.Paused(PolicyFor(f.g.spec, f_.s.policy), f_.now)) return false;
  v->state = VerdictState::kPaused;
  v->reason = "crash loop: replacement paused";
  v->fix = absl::StrCat("see `mariposa events` (service.crashlooping) for why instances fail; apply a fixed spec, "
                        "or wait: one attempt is made after restart.window");
  Problem("crash-loop", f.svc, absl::StrCat("service ", f.svc, " is crash-looping"), m.pause_reason, v->fix,
          absl::StrCat(v->ready, " of ", f.g.record.count, " instances ready; no replacement is created until ",
                       Stamp(m.history.last_failure() + f.g.spec.restart_window)));
  return true;
}

// Work held this Decide, by why: a missing image, a package, network or
// brand the data center lacks, a freeze, placement, the replacement budget,
// a paused rollout.
bool ServiceVerdictDecision::HeldVerdict(const VerdictFacts& f, ServiceVerdict* v) {
  if (f.held == nullptr) return false;
  const std::string& held = *f.held;
  const std::string& svc = f.svc;
  const int64_t count = f.g.record.count;
  std::string not_created = absl::StrCat(count - f.live, " instances of ", svc, " cannot be created; ", f.live,
                                         " keep running");
  auto image_error = f_.s.image_errors.find(svc);
  auto spec_error = f_.s.spec_errors.find(svc);
  auto paused = f_.paused.find(svc);
  if (image_error != f_.s.image_errors.end() && held.rfind("image:", 0) == 0) {
    v->state = VerdictState::kFailed;
    v->reason = absl::StrCat("image ", f.g.record.image, " not found");
    v->fix = absl::StrCat("import ", f.g.record.image, " into IMGAPI, or apply a manifest naming an image it has");
    Problem("image-missing", svc, absl::StrCat("image ", f.g.record.image, " of service ", svc, " is not in IMGAPI"),
            image_error->second, v->fix, not_created);
  } else if (spec_error != f_.s.spec_errors.end() && held == spec_error->second) {
    // The package, networks or brand cannot be chosen (catalog.h).
    std::string field = held.substr(0, held.find(':'));
    v->state = VerdictState::kFailed;
    v->reason = held;
    v->fix = absl::StrCat("apply a manifest whose ", field, " the data center has (`mariposa diff` checks it first)");
    Problem(absl::StrCat(field, "-unavailable"), svc, absl::StrCat("service ", svc, ": ", held), held, v->fix,
            not_created);
  } else if (auto w = f_.s.resource_waits.find(svc); w != f_.s.resource_waits.end() && held == w->second) {
    v->state = VerdictState::kProgressing;  // the resource is being made by this project's syncs
    v->reason = held;
  } else if (held.rfind("frozen", 0) == 0) {
    v->state = VerdictState::kPaused;
    v->reason = held;
    v->fix = absl::StrCat("`mariposa thaw ", svc, "` lets the work go on");
  } else if (held.rfind("placement", 0) == 0) {
    v->state = VerdictState::kPaused;
    v->reason = held;
    v->fix = "create what the rule points at, or change the rule in the manifest";
    Problem("placement", svc, absl::StrCat("creates of ", svc, " wait for their placement"), held, v->fix,
            absl::StrCat(count - f.live, " instances of ", svc, " are not created"));
  } else if (held.rfind("replacement budget", 0) == 0) {
    v->state = VerdictState::kDegraded;
    v->reason = absl::StrCat(v->broken, " broken; replacement budget spent");
    v->fix = "more replacements are made each interval; many broken at once usually means a server or network "
             "outage: check `sdc-server list`";
    Problem("budget-exceeded", svc, absl::StrCat(v->broken, " broken instances of ", svc), held, v->fix,
            absl::StrCat(v->ready, " of ", count, " ready"));
  } else if (paused != f_.paused.end() && held == f_.task_waits.at(svc)) {
    const TaskRecord& t = *paused->second;
    v->state = VerdictState::kPaused;
    v->reason = absl::StrCat("rollout ", t.uuid, " paused by ", t.paused, " (", v->old_spec,
                             " instances on an older spec)");
    v->fix = absl::StrCat("`mariposa resume ", t.uuid, "` continues it");
  } else {
    return false;
  }
  return true;
}

// Instances on an older spec (or older meta values) that no rollout
// replaces: manual updates, a canary's stop, a terminated rollout.
bool ServiceVerdictDecision::OlderSpecVerdict(const VerdictFacts& f, ServiceVerdict* v) {
  if (v->old_spec == 0 || f_.reprovision_task_of.count(f.svc) || f.acting || v->broken != 0 || v->provisioning != 0) {
    return false;
  }
  const ServiceSpec& spec = f.g.spec;
  v->state = VerdictState::kDegraded;
  if (f.stale_mount == v->old_spec) {  // the volume-lost problem says why and what to do
    v->reason = absl::StrCat(f.stale_mount, " of ", f.live,
                             " instances mount a copy of a volume deleted outside Mariposa; no rollout replaces them");
    v->fix = absl::StrCat("restore the volume's data if you can, then `mariposa -j ", f_.s.project.name,
                          " reprovision --service ", f.svc, spec.update_canary > 0 ? " --canary 0" : "",
                          "` replaces them");
    return true;
  }
  bool manual = spec.update_on_change == "manual";
  if (v->stale_meta == v->old_spec) {  // only meta changed (meta_drift.h)
    manual = spec.update_on_meta_change == "manual";
    v->reason = absl::StrCat(v->stale_meta, " of ", f.live,
                             " instances were created with older meta values (the service uses ",
                             absl::StrJoin(f.g.meta_keys, ", "), "); no rollout is running",
                             manual ? " (update.on_meta_change: manual)" : "");
  } else {
    v->reason = absl::StrCat(v->old_spec, " of ", f.live, " instances run an older spec; no rollout is running",
                             manual ? " (update.on_change: manual)" : "");
  }
  // With update.canary the manifest's canary would apply to the
  // reprovision too (one more, then stop again): --canary 0 finishes it.
  v->fix = absl::StrCat("`mariposa -j ", f_.s.project.name, " reprovision --service ", f.svc,
                        spec.update_canary > 0 ? " --canary 0" : "", "` replaces them",
                        spec.update_canary > 0 ? " all (--canary 0: the manifest's update.canary would stop it again)"
                                               : "");
  std::string why = manual ? "the service rolls out only when asked (update.on_change / on_meta_change: manual)"
                    : spec.update_canary > 0
                        ? absl::StrCat("the rollout stopped after its canary (update.canary: ", spec.update_canary,
                                       " replacements) to let you check them, or was terminated")
                        : "the rollout that would replace them ended (terminated, or not queued)";
  Problem(v->stale_meta == v->old_spec ? "stale-meta" : "older-spec", f.svc, v->reason, why, v->fix,
          absl::StrCat(v->old_spec, " instances of ", f.svc, " do not run what the manifest says"));
  return true;
}

// Broken instances restart.condition does not cover.
bool ServiceVerdictDecision::NotRestartedVerdict(const VerdictFacts& f, ServiceVerdict* v) {
  if (f.left_broken == 0 || f.acting || v->provisioning != 0) return false;
  v->state = VerdictState::kDegraded;
  std::string when = absl::StrJoin(f.g.spec.restart_condition, ", ");
  v->reason = absl::StrCat(f.left_broken, " broken ", f.left_broken == 1 ? "instance is" : "instances are",
                           " not replaced (restart.condition: ", when, ")");
  v->fix = absl::StrCat("`mariposa -j ", f_.s.project.name, " start --service ", f.svc,
                        "` starts stopped ones; destroy a broken one to have it replaced, or add the condition "
                        "to restart.condition");
  Problem("not-restarted", f.svc, v->reason,
          "restart.condition does not cover how they broke: on-failure covers failed, stopped and unhealthy "
          "instances, on-cn-restart those on a server that does not answer",
          v->fix, absl::StrCat(v->ready, " of ", f.g.record.count, " instances of ", f.svc, " ready"));
  return true;
}

// "web-2 (metadata) changed in VMAPI by hand".
std::string ServiceVerdictDecision::HandChanged(const VerdictFacts& f) {
  return absl::StrCat(absl::StrJoin(f.hand_changed, ", "), f.hand_changed.size() == 1 ? " was" : " were",
                      " changed in VMAPI by hand");
}

// Work going on: what is ready, and what is not yet.
void ServiceVerdictDecision::ProgressVerdict(const VerdictFacts& f, ServiceVerdict* v) {
  v->state = VerdictState::kProgressing;
  std::vector<std::string> parts;
  parts.push_back(absl::StrCat(v->ready, "/", f.g.record.count, " ready"));
  if (v->provisioning > 0) parts.push_back(absl::StrCat(v->provisioning, " provisioning"));
  if (v->checks_pending > 0) parts.push_back(absl::StrCat(v->checks_pending, " waiting for checks"));
  if (v->starting > 0) {
    parts.push_back(absl::StrCat(v->starting, " starting (ready after ", absl::FormatDuration(f.goal.start_window),
                                 " up, start.window)"));
  }
  if (v->old_spec > 0) parts.push_back(absl::StrCat(v->old_spec, " on an older spec"));
  if (v->broken > 0) parts.push_back(absl::StrCat(v->broken, " broken"));
  if (!f.hand_changed.empty()) parts.push_back(absl::StrCat(HandChanged(f), ": being put back"));
  // What is set in place (DecideRetags): CNS names, the firewall (a put-back is
  // said above).
  std::vector<std::string> in_place;
  for (const Step& st : steps_) {
    if (st.action.kind != ActionKind::kRetag || st.action.service != f.svc) continue;
    auto i = f_.by_uuid.find(st.action.instance);
    if (i != f_.by_uuid.end() && !i->second->hand_changed.empty()) continue;
    in_place.push_back(absl::StrCat(i != f_.by_uuid.end() ? i->second->alias : st.action.instance, " (",
                                    absl::StrReplaceAll(st.action.reason, {{"+", ", "}}), ")"));
  }
  for (const JobRecord& j : f_.s.in_flight) {
    if (j.kind == "retag" && j.service == f.svc && !absl::StrContains(j.reason, kPutBack)) in_place.push_back(absl::StrCat(j.alias, " (", j.reason, ")"));
  }
  if (!in_place.empty()) parts.push_back(absl::StrCat("set in place: ", absl::StrJoin(in_place, ", ")));
  if (f.held != nullptr) parts.push_back(*f.held);
  else if (f.task != nullptr && !f.acting) parts.push_back(*f.task);
  v->reason = absl::StrJoin(parts, ", ");
}


}  // namespace

VerdictOutcome DecideVerdict(const ProjectFacts& f, const std::string& svc, const ServiceGoalSpec& g,
                             const VerdictInputs& in) {
  return ServiceVerdictDecision(f, svc, g, in).Run();
}

}  // namespace mariposa::convergence::decide_internal
