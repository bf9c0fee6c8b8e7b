#include "convergence/decide/decider.h"

#include "absl/strings/match.h"

namespace mariposa::convergence::decide_internal {

void CrashFailure(const ProjectFacts& f, const std::string& service, const std::string& why,
                  std::map<std::string, ServiceMemory>* memory, std::vector<EventRecord>* events) {
  const ServiceGoalSpec* g = f.GoalOf(service);
  auto m = memory->find(service);
  if (g == nullptr || m == memory->end()) return;
  RestartPolicy p = PolicyFor(g->spec, f.s.policy);
  if (m->second.history.Failure(p, f.now, f.s.jitter)) {
    m->second.pause_reason =
        absl::StrCat(m->second.history.consecutive(), " failures in a row (restart.max_attempts ", p.max_attempts,
                     ", window ", absl::FormatDuration(p.window), "); replacement paused. Last: ", why);
    events->push_back(f.Event("service.crashlooping", service, m->second.pause_reason));
  }
}

namespace {

// What the jobs that ended since the last sync leave behind.
class JobAccounting {
 public:
  JobAccounting(const ProjectFacts& f, std::map<std::string, ServiceMemory>* memory) : f_(f), memory_(*memory) {}
  JobsOutcome Run() && {
    FinishedJobs();
    return std::move(out_);
  }

 private:
  void FinishedJobs();
  TaskProgress JobSucceeded(const JobRecord& j);
  TaskProgress JobFailed(const JobRecord& j, const std::string& error);
  void Installed(const JobRecord& j, ServiceMemory* m);
  void Event(const std::string& kind, const std::string& subject, const std::string& detail) {
    out_.events.push_back(f_.Event(kind, subject, detail));
  }

  const ProjectFacts& f_;
  std::map<std::string, ServiceMemory>& memory_;
  JobsOutcome out_;
};

// Each job that ended since the last sync: its task's progress, its event,
// and what the service remembers of it (failures, backoff, install times).
void JobAccounting::FinishedJobs() {
  for (const FinishedJob& f : f_.s.finished) {
    TaskProgress prog = f.ok ? JobSucceeded(f.job) : JobFailed(f.job, f.error);
    out_.job_progress.push_back({f.job.job_uuid, prog});
  }
}

TaskProgress JobAccounting::JobSucceeded(const JobRecord& j) {
  TaskProgress prog;
  auto m = memory_.find(j.service);
  if (j.kind == "create") {
    prog.created = 1;
    if (j.reason == "replace-broken") prog.replaced = 1;
    if (m != memory_.end()) m->second.history.Success();
  } else if (RemovesKind(j.kind)) {
    prog.deleted = 1;
    if (j.reason == "reprovision") prog.replaced = 1;
  } else if (j.kind == "reprovision") {
    prog.replaced = 1;
    Event("instance.reprovisioned", j.instance, j.alias);
  } else if (j.kind == "retag") {
    // The reason says what was set: "cns-names: …; firewall: …".
    if (absl::StrContains(j.reason, "cns-names")) {
      Event("instance.cns-names", j.instance, absl::StrCat(j.alias, " (", j.reason, ")"));
    }
    if (absl::StrContains(j.reason, "firewall")) {
      Event("instance.firewall", j.instance, absl::StrCat(j.alias, " (", j.reason, ")"));
    }
    if (absl::StrContains(j.reason, kPutBack)) {
      Event("instance.put-back", j.instance, absl::StrCat(j.alias, " (", j.reason, ")"));
      if (f_.GoalOf(j.service) != nullptr) ++memory_[j.service].put_backs[j.instance];
    }
  } else if (j.kind == "discovery") {
    // The reason says which way and why: "down: not ready", "up: ready".
    DiscoveryChange c = ParseDiscoveryReason(j.reason);
    Event(c.down ? "instance.discovery-out" : "instance.discovery-in", j.instance,
          absl::StrCat(j.alias, c.down ? " is out of CNS's records (" : " is in CNS's records (", c.why, ")"));
  } else if (j.kind == "import") {
    Event("image.imported", j.instance, absl::StrCat(j.alias, " (", j.reason, ")"));
    for (auto& kv : memory_) {
      kv.second.import_error.clear();
      kv.second.import_failures = 0;
      kv.second.import_retry = absl::InfinitePast();
    }
  } else if (j.kind == "uninstall") {
    prog.deleted = 1;
    Event("agent.uninstalled", j.instance, absl::StrCat(j.alias, " on server ", j.instance, " (", j.reason, ")"));
  } else if (j.kind == "install") {
    prog.created = 1;
    Event("agent.install", j.instance, absl::StrCat(j.alias, " on server ", j.instance));
    if (m != memory_.end()) Installed(j, &m->second);
  }
  return prog;
}

// An agent installed: the server's failures are forgotten, the reinstall
// task counts it, and a slow install is told (much longer than the median
// of the last ones).
void JobAccounting::Installed(const JobRecord& j, ServiceMemory* m) {
  if (!j.task_uuid.empty()) m->reinstalled[j.task_uuid].insert(j.instance);
  m->install_failures.erase(j.instance);
  m->install_attempts.erase(j.instance);
  absl::Duration took = f_.now - j.sent_at;
  std::vector<absl::Duration>& times = m->install_times;
  if (times.size() >= 5) {
    std::vector<absl::Duration> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    absl::Duration median = sorted[sorted.size() / 2];
    if (took > 3 * median && took - median > absl::Seconds(5)) {
      Event("agent.install-slow", j.instance,
            absl::StrCat(j.alias, " took ", absl::FormatDuration(absl::Trunc(took, absl::Seconds(1))),
                         ", over 3 times the median of the last ", times.size(), " installs (",
                         absl::FormatDuration(absl::Trunc(median, absl::Milliseconds(100))), "); check the server"));
    }
  }
  times.push_back(took);
  if (times.size() > 50) times.erase(times.begin());
}

TaskProgress JobAccounting::JobFailed(const JobRecord& j, const std::string& error) {
  TaskProgress prog;
  prog.failed = 1;
  auto m = memory_.find(j.service);
  if (j.kind == "create") {
    Event("instance.create-failed", j.service, absl::StrCat(j.alias, ": ", error));
    CrashFailure(f_, j.service, absl::StrCat(j.alias, ": ", error), &memory_, &out_.events);
  } else if (j.kind == "import") {
    Event("image.import-failed", j.instance, absl::StrCat(j.alias, " (", j.reason, "): ", error));
    // Every service waiting for the image waits for the next attempt.
    for (const auto& kv : f_.s.imports) {
      if (kv.second.uuid != j.instance) continue;
      ServiceMemory& mem = memory_[kv.first];
      mem.import_error = error;
      ++mem.import_failures;
      mem.import_retry = f_.now + RetryWait(f_.s.policy, mem.import_failures);
    }
  } else if (j.kind == "uninstall") {
    Event("agent.uninstall-failed", j.instance, absl::StrCat(j.alias, ": ", error));
  } else if (j.kind == "install") {
    Event("agent.install-failed", j.instance, absl::StrCat(j.alias, " on server ", j.instance, ": ", error));
    if (m != memory_.end()) {
      m->second.install_failures[j.instance] = error;
      int n = ++m->second.install_attempts[j.instance];
      m->second.install_retry = std::max(m->second.install_retry, f_.now + RetryWait(f_.s.policy, n));
    }
  } else {
    Event(absl::StrCat("instance.", j.kind, "-failed"), j.instance, absl::StrCat(j.alias, ": ", error));
  }
  return prog;
}

}  // namespace

JobsOutcome AccountFinishedJobs(const ProjectFacts& f, std::map<std::string, ServiceMemory>* memory) {
  return JobAccounting(f, memory).Run();
}

// What each goal service remembers when this Decide starts: the stored
// memory, unless its spec changed.
std::map<std::string, ServiceMemory> StartingMemory(const ProjectFacts& f) {
  std::map<std::string, ServiceMemory> out;
  if (!f.s.goal) return out;
  for (const auto& kv : f.s.goal->services) {
    ServiceMemory m;
    auto it = f.s.memory.find(kv.first);
    if (it != f.s.memory.end() && it->second.spec_hash == kv.second.record.spec_hash) m = it->second;
    m.spec_hash = kv.second.record.spec_hash;
    out[kv.first] = std::move(m);
  }
  return out;
}

void Decider::FinishedJobs() {
  d_.memory = StartingMemory(f_);
  JobsOutcome o = AccountFinishedJobs(f_, &d_.memory);
  Append(std::move(o.job_progress), &d_.job_progress);
  d_.job_events = d_.events.size() + o.events.size();  // the first events (nothing is before them)
  Append(std::move(o.events), &d_.events);
}

void GatherInstances(ProjectFacts* f) {
  absl::flat_hash_set<absl::string_view> seen;
  seen.reserve(f->s.instances.size());
  for (const InstanceState& i : f->s.instances) seen.insert(i.uuid);
  for (const JobRecord& j : f->s.in_flight) {
    if (j.api != "vmapi") continue;
    const ServiceGoalSpec* g = f->GoalOf(j.service);
    if (j.kind == "create" && !seen.count(j.instance) && g != nullptr) {
      // Sent, not listed yet (a slow VMAPI): it is on its way.
      InstanceState i;
      i.uuid = j.instance;
      i.service = j.service;
      i.alias = j.alias;
      i.state = "provisioning";
      i.health = "unknown";
      i.spec_hash = g->record.spec_hash;
      i.version = f->s.goal->number;
      i.version_uuid = f->s.goal->version_uuid;
      i.created = j.sent_at;
      f->synthetic.push_back(std::move(i));
    }
  }
  f->instances.reserve(f->s.instances.size() + f->synthetic.size());
  for (const InstanceState& i : f->s.instances) f->instances.push_back(&i);
  for (const InstanceState& i : f->synthetic) f->instances.push_back(&i);
  f->by_uuid.reserve(f->instances.size());
  for (const InstanceState* i : f->instances) {
    f->of[i->service].push_back(i);
    f->by_uuid[i->uuid] = i;
  }
  for (const JobRecord& j : f->s.in_flight) {
    if (j.api == "vmapi") f->job_on[j.instance] = &j;
  }
}

Decision Decider::Run() {
  FinishedJobs();
  GatherInstances(&f_);
  if (!f_.s.actual_known) {
    Verdicts();
    return std::move(d_);
  }
  DecideFirewall(f_.s, &d_);
  DecideFabric(f_.s, &d_);
  DecideVolumes(f_.s, &d_);
  HoldRetries();
  if (f_.s.project.deleting) {
    // Its agents are uninstalled as well (rolling), its firewall rules,
    // fabric and volumes of deletion_policy delete deleted; the project goes
    // when nothing of it is left but what it retains.
    Uninstalls();
    uninstalled_ = true;
    bool fabric_gone = d_.fabric_changes.empty() && f_.s.fabric_error.empty();
    for (const FabricNetworkView& v : d_.fabric_networks) fabric_gone = fabric_gone && absl::StartsWith(v.state, "retained");
    bool volumes_gone = d_.volume_changes.empty() && f_.s.volumes_error.empty();
    for (const VolumeView& v : d_.volumes) volumes_gone = volumes_gone && VolumeSettled(v);
    if (f_.instances.empty() && d_.leftover == 0 && d_.uninstalls.empty() && d_.firewall_changes.empty() &&
        (!f_.s.fwapi || f_.s.firewall) && fabric_gone && volumes_gone) {
      // What the project leaves behind on purpose is said where the
      // operator reads the deletion.
      for (const VolumeView& v : d_.volumes) {
        if (!absl::StartsWith(v.state, "retained")) continue;
        d_.events.push_back({0, f_.now, "mariposad", f_.s.project.name, "volume.retained", "",
                             absl::StrCat(v.name, " (", v.volapi_name, " ", v.uuid, ") is kept with its data: ",
                                          v.state, "; delete it in VOLAPI when it is no longer wanted")});
      }
      for (const FabricNetworkView& v : d_.fabric_networks) {
        d_.events.push_back({0, f_.now, "mariposad", f_.s.project.name, "fabric.network-retained", "",
                             absl::StrCat(v.name, " (", v.napi_name, " ", v.uuid, ") is kept: ", v.state)});
      }
      d_.delete_project = true;
      d_.converged = true;
      return std::move(d_);
    }
  }
  Tasks();
  Append(PlanServices(f_, cache_), &planned_);
  Runs();
  Retags();  // after every other action is planned: an instance acted on is not put back too
  StartsDone();
  Hold();
  ScaleTasks();
  Discovery();
  Append(DecideImports(f_, d_.memory), &d_.imports);
  Agents();
  if (!uninstalled_) Uninstalls();
  Window();
  Names();  // the creates that go now, then the backlog's
  Verdicts();
  d_.steps = std::move(steps_);
  for (const InstanceState* ip : f_.instances) {
    const InstanceState& i = *ip;
    if (!f_.s.goal || !f_.s.goal->services.count(i.service) || f_.s.project.deleting) ++d_.leftover;
  }
  Stale();
  if (f_.s.goal && f_.s.actual_known) {
    for (const auto& [svc, g] : f_.s.goal->services) {
      ServiceMemory& m = d_.memory[svc];
      m.last_count = g.record.count;
      m.last_seen = static_cast<int64_t>(f_.of[svc].size());
    }
  }
  bool all = f_.s.actual_known && d_.leftover == 0 && d_.firewall_changes.empty();
  for (const FirewallRuleView& v : d_.firewall_rules) all = all && v.state == "in place";
  all = all && d_.fabric_changes.empty();
  for (const FabricNetworkView& v : d_.fabric_networks) {
    all = all && (v.state == "in place" || absl::StartsWith(v.state, "retained"));
  }
  all = all && d_.volume_changes.empty();
  for (const VolumeView& v : d_.volumes) all = all && VolumeSettled(v);
  for (const auto& kv : d_.verdicts) all = all && kv.second.state == VerdictState::kConverged;
  d_.converged = all;
  return std::move(d_);
}

void Decider::Stale() {
  if (f_.s.observed_at == absl::InfinitePast() || f_.now - f_.s.observed_at <= f_.s.policy.stale_after) return;
  std::string age = absl::FormatDuration(absl::Trunc(f_.now - f_.s.observed_at, absl::Seconds(1)));
  std::vector<std::string> slow;
  for (const auto& [api, took] : f_.s.api_latency) {
    if (took >= absl::Seconds(2)) {
      slow.push_back(absl::StrCat(api, " (its last answer took ",
                                  absl::FormatDuration(absl::Trunc(took, absl::Milliseconds(100))), ")"));
    }
  }
  std::string why = slow.empty() ? "the sync that reads it again has not finished"
                                 : absl::StrCat("Triton answers slowly: ", absl::StrJoin(slow, ", "));
  for (auto& [svc, v] : d_.verdicts) {
    v.state = VerdictState::kUnknown;
    v.reason = absl::StrCat("as of ", age, " ago: ", v.reason);
    v.fix = "the counts are the last observation's; a newer one replaces them when the sync ends";
  }
  Problem("observation-stale", "", absl::StrCat("the actual state of project ", f_.s.project.name, " was read ", age,
                                                " ago"),
          why,
          slow.empty() ? "wait for the sync; `mariposa events -f` shows what it does"
                       : "check those APIs (`svcs -xv` and the logs in their zones, `sdc-healthcheck`); mariposad keeps "
                         "syncing, and `status` shows the newer state as soon as it is read",
          "verdicts are unknown until then: nothing is claimed converged; instances are still created, replaced and "
          "removed, as slowly as Triton answers");
}

}  // namespace mariposa::convergence::decide_internal

namespace mariposa::convergence {

using decide_internal::Decider;

const char* VerdictName(VerdictState v) {
  switch (v) {
    case VerdictState::kConverged: return "converged";
    case VerdictState::kProgressing: return "progressing";
    case VerdictState::kDegraded: return "degraded";
    case VerdictState::kPaused: return "paused";
    case VerdictState::kFailed: return "failed";
    case VerdictState::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string WorkKind(const Action& a) {
  if (a.kind == ActionKind::kStop || a.kind == ActionKind::kStart || a.kind == ActionKind::kRetag ||
      a.kind == ActionKind::kDiscovery) {
    return "";
  }
  if (!a.run.empty()) return "run";
  if (a.reason == "replace-broken" || a.reason == "remove-broken") return "replace-unhealthy";
  if (a.reason == "reprovision") return "reprovision";
  return "scale";
}

Decision Decide(const Snapshot& s, absl::Time now, PlanCache* cache) { return Decider(s, now, cache).Run(); }

namespace {

// Marks the changes whose last attempt failed and whose backoff has not
// passed: they stay in the decision (a deletion still waits for them) but
// are not sent. A held VLAN holds the whole fabric (its networks need it).
template <typename C>
void HoldFailed(std::vector<C>* changes, const std::map<std::string, absl::Time>& retry_at, absl::Time now,
          const std::string& empty_name_key, bool all_if_empty_held) {
  auto held = [&](const std::string& key) {
    auto it = retry_at.find(key);
    return it != retry_at.end() && it->second > now;
  };
  bool all = all_if_empty_held && held(empty_name_key);
  for (C& c : *changes) c.held = all || held(c.name.empty() ? empty_name_key : c.name);
}

}  // namespace

void Decider::HoldRetries() {
  HoldFailed(&d_.firewall_changes, f_.s.firewall_retry_at, f_.now, "", false);
  HoldFailed(&d_.fabric_changes, f_.s.fabric_retry_at, f_.now, "vlan", true);
  HoldFailed(&d_.volume_changes, f_.s.volume_retry_at, f_.now, "", false);
}

absl::Duration ChangeBackoff(int attempts) {
  return std::min(absl::Seconds(5) * (int64_t{1} << std::clamp(attempts - 1, 0, 20)), absl::Minutes(5));
}

bool Quiet(const Snapshot& s, const Decision& d) {
  bool quiet = d.converged && !d.delete_project && !s.project.deleting && s.goal != nullptr && d.steps.empty() &&
               d.held.empty() && d.backlog.empty() && d.task_changes.empty() && d.new_tasks.empty() &&
               d.rollbacks.empty() && d.installs.empty() && d.uninstalls.empty() && d.imports.empty() &&
               d.job_progress.empty() && d.events.empty() && d.problems.empty() && d.leftover == 0 &&
               s.in_flight.empty() && s.finished.empty();
  for (const TaskRecord& t : s.tasks) quiet = quiet && t.kind == "freeze";
  if (quiet) {
    for (const auto& [name, g] : s.goal->services) {
      // Agents read CNAPI, core zones the admin's VMs, and a schedule fires
      // by the clock: each needs its syncs.
      quiet = quiet && g.spec.compute_type != "agent" && g.spec.compute_type != "core" &&
              g.spec.service_type != "scheduled";
    }
    // FWAPI, NAPI and VOLAPI have no change feed: what the project owns
    // there is read at each resync, so a hand edit is found within one.
    quiet = quiet && s.goal->firewall.empty() && !s.goal->fabric && s.goal->volumes.empty();
  }
  return quiet;
}

Decision CountFinished(const Snapshot& s, absl::Time now) { return Decider(s, now).RunFinished(); }

}  // namespace mariposa::convergence
