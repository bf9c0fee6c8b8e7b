#include "convergence/decide/decider.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace mariposa::convergence::decide_internal {

std::vector<Action> PlanServices(const ProjectFacts& f, PlanCache* cache) {
  PlanInput in;
  // Scheduled and event services are not planned to a count: DecideRuns
  // acts on their instances.
  std::set<std::string> runs;
  if (f.s.goal && !f.s.project.deleting) {
    for (const auto& kv : f.s.goal->services) {
      if (RunsToCompletion(kv.second.spec)) runs.insert(kv.first);
      if (kv.second.spec.compute_type == "agent" || runs.count(kv.first)) continue;
      ServiceGoal g = GoalFor(kv.second, f.s.images);
      g.stopped = f.stopped.count(kv.first) > 0;
      auto r = f.rolling.find(kv.first);
      if (r != f.rolling.end()) g.rolling = r->second;
      in.services[kv.first] = g;
    }
  }
  if (cache == nullptr) {
    in.instances.reserve(f.instances.size());
    for (const InstanceState* i : f.instances) {
      if (!runs.count(i->service)) in.instances.push_back(*i);
    }
  }  // (the cache takes them grouped, below)
  in.reprovision = f.reprovision;
  for (const std::string& svc : f.rolled_back) in.reprovision.erase(svc);
  in.reprovision_only = f.reprovision_only;
  in.starting = f.starting;
  for (const JobRecord& j : f.s.in_flight) {
    if (j.api == "vmapi" && RemovesKind(j.kind)) in.deleting.insert(j.instance);
    if (j.api == "vmapi" && j.kind == "reprovision") in.reprovisioning.insert(j.instance);
  }
  std::vector<Action> actions;
  if (cache == nullptr) {
    actions = mariposa::convergence::Plan(in, f.now);
  } else {
    // The same plan, reusing each unchanged service's actions (PlanCache).
    std::map<std::string, PlanCache::ServiceInput> services;
    for (const auto& kv : in.services) {
      PlanCache::ServiceInput& si = services[kv.first];
      si.goal = kv.second;
      si.flags.reprovision = in.reprovision.count(kv.first) > 0;
      auto only = in.reprovision_only.find(kv.first);
      if (only != in.reprovision_only.end()) si.flags.only = &only->second;
      si.flags.starting = in.starting.count(kv.first) > 0;
      si.flags.deleting = &in.deleting;
      si.flags.reprovisioning = &in.reprovisioning;
      si.instances = f.Of(kv.first);
      si.fingerprint = InstancesFingerprint(si.instances);
    }
    std::vector<const InstanceState*> removed;
    for (const InstanceState* i : f.instances) {
      if (i->state != "destroyed" && !in.services.count(i->service) && !runs.count(i->service)) removed.push_back(i);
    }
    actions = cache->Plan(services, removed, f.now);
  }
  // An instance with a job in flight is being acted on already.
  actions.erase(std::remove_if(actions.begin(), actions.end(),
                               [&](const Action& a) { return !a.instance.empty() && f.job_on.count(a.instance); }),
                actions.end());
  return actions;
}

// Put-backs of one instance changed by hand before DecideRetags stops and says so.
constexpr int kMaxPutBacks = 3;

RetagOutcome DecideRetags(const ProjectFacts& f, const std::string& svc, const InPlaceSettings& want,
                          const std::set<std::string>& acted, const std::map<std::string, int>& put_backs) {
  RetagOutcome o;
  ServiceGoal goal = GoalFor(f.s.goal->services.at(svc), f.s.images);
  std::set<std::string> changed;
  for (const InstanceState* i : f.Of(svc)) {
    std::string why = InPlaceDifference(*i, want);
    if ((i->state != "running" && i->state != "stopped") || why.empty() || Outdated(*i, goal) ||
        f.job_on.count(i->uuid) || acted.count(i->uuid)) {
      continue;
    }
    if (!i->hand_changed.empty()) {
      changed.insert(i->uuid);
      auto tries = put_backs.find(i->uuid);
      if (tries != put_backs.end() && tries->second >= kMaxPutBacks) {
        o.problems.push_back(
            {"instance-drift", svc,
             absl::StrCat(i->alias, " (", i->uuid, ") keeps differing from what Mariposa made it with: ",
                          absl::StrReplaceAll(i->hand_changed, {{"+", ", "}})),
             absl::StrCat("it was put back ", tries->second,
                          " times and changed again (a script or an operator editing it in VMAPI, or VMAPI "
                          "normalizing a value the manifest sets)"),
             absl::StrCat("stop what edits it; `mariposa -j ", f.s.project.name, " reprovision --service ", svc,
                          "` replaces it, and a changed spec starts the count again"),
             absl::StrCat(i->alias, " does not run with the package, tags or metadata the manifest says")});
        continue;
      }
    }
    o.actions.push_back(Action{ActionKind::kRetag, svc, i->uuid, why});
  }
  for (const auto& kv : put_backs) {  // forgotten once put back
    if (!changed.count(kv.first) && !f.job_on.count(kv.first)) o.forget.push_back(kv.first);
  }
  return o;
}

void Decider::Retags() {
  if (!f_.s.goal || f_.s.project.deleting) return;
  std::set<std::string> acted;
  for (const Action& a : planned_) acted.insert(a.instance);
  static const std::map<std::string, int> kNone;
  for (const auto& [svc, g] : f_.s.goal->services) {
    if (g.spec.compute_type == "agent" || g.spec.compute_type == "core" || RunsToCompletion(g.spec)) continue;
    auto mem = d_.memory.find(svc);
    RetagOutcome o = DecideRetags(f_, svc, InPlaceFor(f_.s, d_.firewall_in_place, svc), acted,
                                  mem != d_.memory.end() ? mem->second.put_backs : kNone);
    Append(std::move(o.actions), &planned_);
    Append(std::move(o.problems), &d_.problems);
    if (mem != d_.memory.end()) {
      for (const std::string& uuid : o.forget) mem->second.put_backs.erase(uuid);
    }
  }
}

void Decider::StartsDone() {
  for (const TaskRecord* t : f_.start_tasks) {
    bool pending = false;
    for (const Action& a : planned_) {
      pending |= a.kind == ActionKind::kStart && Covers(*t, a.service);
    }
    for (const JobRecord& j : f_.s.in_flight) pending |= j.task_uuid == t->uuid;
    if (pending) continue;
    Change(*t, "completed");
    for (auto it = f_.run_task_of.begin(); it != f_.run_task_of.end();) {
      it = it->second == t->uuid ? f_.run_task_of.erase(it) : std::next(it);
    }
  }
}

namespace {

class HoldDecision {
 public:
  HoldDecision(const ProjectFacts& f, const std::vector<Action>& planned, std::map<std::string, ServiceMemory>* memory)
      : f_(f), planned_(planned), memory_(*memory) {}
  HoldOutcome Run() && {
    Hold();
    return std::move(out_);
  }

 private:
  // What Hold() counts over the planned actions.
  struct HoldState {
    std::map<std::string, std::string> placement;   // service -> why its creates wait for placement
    std::map<std::string, int64_t> budget;          // service -> replacements left now
    std::map<std::string, int64_t> removes_left;    // service -> removals of broken ones left now
    std::set<std::string> over_budget;
    std::map<std::string, int64_t> starting;        // service -> VMAPI starts in flight and taken now
  };
  void Hold();
  void CrashLoopMemory();
  std::map<std::string, std::string> PlacementHolds() const;
  std::string HistoryHold(const Action& a, HoldState* h);
  std::string CatalogHold(const Action& a, const HoldState& h) const;
  std::string StartHold(const Action& a, HoldState* h) const;
  void BudgetEvents(const std::set<std::string>& over_budget);
  void Event(const std::string& kind, const std::string& subject, const std::string& detail) {
    out_.events.push_back(f_.Event(kind, subject, detail));
  }

  const ProjectFacts& f_;
  const std::vector<Action>& planned_;
  std::map<std::string, ServiceMemory>& memory_;
  HoldOutcome out_;
};

// Each planned action goes ahead as a step of its task, or is held, and
// why: a freeze, a crash loop or backoff, the replacement budget, a missing
// image or one being imported, the catalog, placement, start.parallelism.
void HoldDecision::Hold() {
  CrashLoopMemory();
  HoldState h{PlacementHolds()};
  for (auto& kv : memory_) {
    const ServiceGoalSpec* g = f_.GoalOf(kv.first);
    if (g == nullptr) continue;
    h.budget[kv.first] = kv.second.history.ReplaceBudget(g->record.count, f_.s.policy.replace_interval, f_.now);
    h.removes_left[kv.first] = h.budget[kv.first];
  }
  for (const JobRecord& j : f_.s.in_flight) {
    if (j.kind == "start") ++h.starting[j.service];
  }
  for (const Action& a : planned_) {
    // A freeze holds a run before it starts and ends an active one
    // (decide_runs.cc); a run's own creates and the removal of its
    // instances are not held by it.
    std::string why = a.run.empty() ? f_.FrozenBy(a.service, WorkKind(a)) : std::string();
    if (why.empty()) why = HistoryHold(a, &h);
    if (why.empty()) why = CatalogHold(a, h);
    if (why.empty()) why = StartHold(a, &h);
    if (!why.empty()) {
      out_.held.push_back({a, why});
      out_.hold_reasons.emplace_back(a.service, why);
      continue;
    }
    auto find = [&](const std::map<std::string, std::string>& m2) {
      auto it = m2.find(a.service);
      return it == m2.end() ? std::string() : it->second;
    };
    std::string task;
    if (!a.run.empty()) task = a.run;
    else if (a.reason == "reprovision") task = find(f_.reprovision_task_of);
    else if (a.kind == ActionKind::kStop || a.kind == ActionKind::kStart) task = find(f_.run_task_of);
    out_.steps.push_back({a, task, ""});
  }
  // A task that waits (for its version, or for the task ahead of it) acts on
  // nothing yet; the work of the tasks acting now goes on (holding it would
  // keep the waiting task waiting forever). The wait is the reason shown.
  for (const auto& kv : f_.task_waits) out_.hold_reasons.emplace_back(kv.first, kv.second);
  BudgetEvents(h.over_budget);
}

// Crash-loop pauses end after their window; an instance created after the
// last failure that became ready ends a run of failures.
void HoldDecision::CrashLoopMemory() {
  for (auto& kv : memory_) {
    const ServiceGoalSpec* g = f_.GoalOf(kv.first);
    if (g == nullptr || g->spec.compute_type == "agent") continue;
    ServiceHistory& h = kv.second.history;
    if (h.EndPauseIfOver(PolicyFor(g->spec, f_.s.policy), f_.now)) {
      Event("service.crashloop-ended", kv.first, "the restart window has passed; creating instances again");
    }
    for (const InstanceState* i : f_.Of(kv.first)) {
      if (i->spec_hash == g->record.spec_hash && i->created > h.last_failure() &&
          InstanceReady(*i, f_.now, g->spec.start_window)) {
        h.Recovered();
        break;
      }
    }
  }
}

// Placement: each service with a hard "near" rule that points at none of the
// VMs the rules may point at (it cannot hold yet), and why its creates wait.
std::map<std::string, std::string> HoldDecision::PlacementHolds() const {
  std::map<std::string, std::string> out;
  if (!f_.s.goal) return out;
  bool rules = false;  // the candidates are gathered only when a service has placement rules
  for (const auto& kv : f_.s.goal->services) rules |= !kv.second.spec.placement.empty();
  if (!rules) return out;
  std::vector<PlacementCandidate> candidates = f_.s.labelled_vms;
  for (const InstanceState* i : f_.instances) {
    if (i->state != "destroyed" && !i->server_uuid.empty()) candidates.push_back({i->uuid, i->alias, i->service, {}});
  }
  for (const auto& kv : f_.s.goal->services) {
    InterpolationContext ctx;
    ctx.meta = f_.s.meta;
    ctx.project_name = f_.s.project.name;
    ctx.project_uuid = f_.s.project.uuid;
    ctx.project_version = absl::StrCat(f_.s.goal->number);
    ctx.service_name = kv.first;
    ctx.scale = kv.second.record.count;
    ctx.package_name = kv.second.record.package;
    ctx.leave_unknown = true;
    for (const PlacementRule& r : kv.second.spec.placement) {
      if (r.soft || !r.equal) continue;
      PlacementRuleText rule{r.key, r.equal, r.soft, r.value};
      auto value = Interpolate(r.value, ctx);
      if (!value.ok()) {
        out[kv.first] = absl::StrCat("placement rule ", r.ToString(), ": ", value.status().message());
        break;
      }
      rule.value = *value;
      bool any = false;
      for (const PlacementCandidate& c : candidates) any = any || PlacementRuleMatches(rule, c);
      if (!any) {
        out[kv.first] = absl::StrCat("placement rule ", r.ToString(), " points at no placed VM yet; its creates wait for one");
        break;
      }
    }
  }
  return out;
}

// The service's history: a crash loop, the backoff after a failed create,
// the replacement budget (spent here by the replacements that go ahead). A
// failed provision never ran: removing it takes nothing away, so none of
// these holds its removal.
std::string HoldDecision::HistoryHold(const Action& a, HoldState* h) {
  const ServiceGoalSpec* g = f_.GoalOf(a.service);
  auto m = memory_.find(a.service);
  bool create = a.kind == ActionKind::kCreate;
  auto target = a.instance.empty() ? f_.by_uuid.end() : f_.by_uuid.find(a.instance);
  bool cleanup = a.reason == "remove-broken" && target != f_.by_uuid.end() && target->second->state == "failed";
  if (m == memory_.end() || g == nullptr || cleanup) return "";
  const ServiceHistory& history = m->second.history;
  if (history.Paused(PolicyFor(g->spec, f_.s.policy), f_.now) && (create || a.reason == "remove-broken")) {
    return absl::StrCat("crash loop: ", m->second.pause_reason);
  }
  if (create && f_.now < history.next_attempt()) {
    return absl::StrCat("backoff after a failed create, until ", Stamp(history.next_attempt()));
  }
  if (!IsReplacement(a)) return "";
  // Draining for this removal: the budget let it through when the drain
  // began (decide_discovery.cc); it is not another replacement.
  if (!create && target != f_.by_uuid.end() && target->second->cns_down) {
    std::optional<DiscoveryHold> hold = ParseDiscoveryHold(target->second->discovery);
    if (hold && absl::StartsWith(hold->why, "draining before")) return "";
  }
  int64_t& left = create ? h->budget[a.service] : h->removes_left[a.service];
  if (left <= 0) {
    h->over_budget.insert(a.service);
    return "replacement budget (max(1, 10 %) of count per interval) is spent";
  }
  --left;
  if (create) m->second.history.Replaced(f_.now);  // spends the budget for later syncs too
  return "";
}

// What the data center lacks for it: the image (or it is being imported:
// nothing is created, replaced or reprovisioned before it is here), the
// package, networks or brand, a placement rule's target.
std::string HoldDecision::CatalogHold(const Action& a, const HoldState& h) const {
  bool create = a.kind == ActionKind::kCreate;
  if (create) {
    if (auto img = f_.s.image_errors.find(a.service); img != f_.s.image_errors.end()) {
      return absl::StrCat("image: ", img->second);
    }
  }
  if (a.kind != ActionKind::kStart && a.kind != ActionKind::kStop && a.kind != ActionKind::kRetag) {
    if (auto imp = f_.s.imports.find(a.service); imp != f_.s.imports.end()) {
      return absl::StrCat("image: ", imp->second.name, "@", imp->second.version, " is imported from ",
                          imp->second.source, " first");
    }
  }
  if (!create) return "";
  if (auto spec = f_.s.spec_errors.find(a.service); spec != f_.s.spec_errors.end()) return spec->second;
  if (auto w = f_.s.resource_waits.find(a.service); w != f_.s.resource_waits.end()) return w->second;
  if (auto pl = h.placement.find(a.service); pl != h.placement.end()) return pl->second;
  return "";
}

// start.parallelism: VMAPI starts in flight and taken now.
std::string HoldDecision::StartHold(const Action& a, HoldState* h) const {
  const ServiceGoalSpec* g = f_.GoalOf(a.service);
  if (a.kind != ActionKind::kStart || g == nullptr) return "";
  int64_t& n = h->starting[a.service];
  if (n >= g->spec.start_parallelism) {
    return absl::StrCat("start.parallelism ", g->spec.start_parallelism, ": ", n, " starting");
  }
  ++n;
  return "";
}

// A spent replacement budget is told once per replace_interval.
void HoldDecision::BudgetEvents(const std::set<std::string>& over_budget) {
  for (const std::string& svc : over_budget) {
    ServiceMemory& m = memory_[svc];
    if (f_.now - m.budget_event < f_.s.policy.replace_interval) continue;
    m.budget_event = f_.now;
    const ServiceGoalSpec* g = f_.GoalOf(svc);
    Event("replacement.budget-exceeded", svc,
          absl::StrCat("more broken instances than the replacement budget (max(1, 10%) of ", g ? g->record.count : 0,
                       " per ", absl::FormatDuration(f_.s.policy.replace_interval),
                       "); the rest wait — a correlated failure (CN or network outage) is likely"));
  }
}

}  // namespace

HoldOutcome DecideHolds(const ProjectFacts& f, const std::vector<Action>& planned,
                        std::map<std::string, ServiceMemory>* memory) {
  return HoldDecision(f, planned, memory).Run();
}

void Decider::Hold() {
  HoldOutcome o = DecideHolds(f_, planned_, &d_.memory);
  Append(std::move(o.events), &d_.events);
  Append(std::move(o.steps), &steps_);
  Append(std::move(o.held), &d_.held);
  for (auto& [svc, why] : o.hold_reasons) hold_reason_.emplace(svc, std::move(why));
}

// The job window: jobs in flight for this project and everywhere.
void Decider::Window() {
  const int64_t own = f_.s.policy.max_jobs_per_project - static_cast<int64_t>(f_.s.in_flight.size());
  const int64_t free = std::max<int64_t>(0, std::min<int64_t>(own, f_.s.global_jobs_free));
  // What holds the rest: this project's own jobs, or the other projects'
  // (--max-jobs, all projects together).
  const std::string why =
      f_.s.global_jobs_free < own
          ? absl::StrCat("job window: the other projects' jobs hold the rest of --max-jobs or wait for their share of it (", f_.s.in_flight.size(),
                         " of this project's in flight)")
          : absl::StrCat("job window: ", f_.s.in_flight.size(), " jobs of this project in flight");
  int64_t n = static_cast<int64_t>(d_.installs.size() + d_.uninstalls.size() + d_.imports.size());
  std::vector<Step> kept;
  for (Step& st : steps_) {
    if (n < free) {
      kept.push_back(std::move(st));
      ++n;
    } else {
      d_.held.push_back({st.action, why});
      if (InBacklog(st)) d_.backlog.push_back(std::move(st));
    }
  }
  steps_ = std::move(kept);
}

}  // namespace mariposa::convergence::decide_internal
