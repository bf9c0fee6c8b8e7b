// Execute: what one sync's Decision does, in order —
//   record     finished jobs, automatic rollbacks (AutoRollbacks), task
//              state changes, new automatic tasks (AddNewTasks)
//   send       the steps whose task the store admitted (send.cc)
//   keep       the backlog the pump may send, the service memory, the
//              problems (Remember)
//   tell       the health coordinator's targets (AssignHealth) and the
//              per-service metrics (ServiceMetrics)
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "projects/task_queue.h"
#include "convergence/execute/executor.h"
#include "convergence/reconciler.h"
#include "convergence/sync_helpers.h"

namespace mariposa::convergence {
namespace {

// The loopback twin 127.b.c.d of a.b.c.d (tritonsim --listen-vms).
std::string LoopbackTwin(const std::string& ip) {
  size_t dot = ip.find('.');
  return dot == std::string::npos ? ip : "127" + ip.substr(dot);
}

// The address of `i` on the NIC a check's `network` names (a network uuid,
// a NAPI name resolved to `want_uuid`, or an interface); "" when it has none.
std::string AddressOn(const InstanceState& i, const std::string& want, const std::string& want_uuid,
                      const std::string& primary_network) {
  if (want.empty() || want_uuid == primary_network || want == i.nic) return i.ip;
  for (const InstanceState::Nic& n : i.nics) {
    if (n.network_uuid == want_uuid || n.interface == want) return n.ip;
  }
  return "";
}

// The health check targets of a service's running instances.
std::vector<health::Target> HealthTargets(const ServiceSpec& spec, const std::vector<const InstanceState*>& instances,
                                          bool loopback, const std::string& primary_network,
                                          const std::map<std::string, std::string>& network_names) {
  std::vector<health::Target> out;
  for (const auto& kv : spec.healthchecks) {
    const HealthCheckSpec& c = kv.second;
    health::CheckSpec cs;
    cs.type = c.type;
    cs.port = c.port;
    cs.path = c.path;
    cs.method = c.method;
    cs.headers = c.headers;
    cs.expect_status.clear();
    for (const auto& r : c.expect_status) cs.expect_status.push_back({r.first, r.second});
    if (cs.expect_status.empty()) cs.expect_status.push_back({200, 399});
    cs.expect_body = c.expect_body;
    cs.tls_skip_verify = c.tls_skip_verify;
    cs.send = c.send;
    cs.expect = c.expect;
    cs.timeout = c.timeout;
    health::CheckPolicy policy;
    policy.interval = c.interval;
    policy.unhealthy_interval = c.unhealthy_interval;
    policy.retries = c.retries;
    policy.successes = c.successes;
    policy.start_window = spec.start_window;
    // `network` names a NIC by network name, uuid or interface; an instance
    // without that NIC has no address, and the check fails saying so
    // (health::HealthMonitor).
    auto named = network_names.find(c.network);
    const std::string& want_uuid = named != network_names.end() ? named->second : c.network;
    for (const InstanceState* i : instances) {
      if (i->state != "running" || i->ip.empty()) continue;
      health::Target t{i->uuid, kv.first, cs, policy, i->created, c.network.empty() ? primary_network : c.network};
      t.alias = i->alias;
      t.readiness = c.readiness;
      t.liveness = c.liveness;
      t.spec.address = AddressOn(*i, c.network, want_uuid, primary_network);
      if (loopback && !t.spec.address.empty()) t.spec.address = LoopbackTwin(t.spec.address);
      out.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace

void Executor::RecordReplacements(const Snapshot& s, const Decision& d, const std::vector<EventRecord>& events) {
  // One per broken instance replaced; the instances are scanned only when
  // there is one (a sync usually has none, and a project may have 100,000).
  std::map<std::string, std::string> why;  // instance -> why it is broken
  for (const Step& st : d.steps) {
    if (st.action.reason == "remove-broken") why.emplace(st.action.instance, "broken");
  }
  if (!why.empty()) {
    for (const InstanceState& i : s.instances) {
      auto it = why.find(i.uuid);
      if (it != why.end()) it->second = FailsLiveness(i) ? "unhealthy" : i.state == "running" ? "server-down" : i.state;
    }
  }
  for (const auto& kv : why) options_.metrics->Replacement(kv.second);
  // Each time a service hits its budget or a crash loop (the events say it
  // once per episode, not once per sync).
  for (const EventRecord& e : events) {
    if (e.kind == "replacement.budget-exceeded") options_.metrics->ReplacementDeferred(s.project.name, e.subject, "budget");
    if (e.kind == "service.crashlooping") options_.metrics->ReplacementDeferred(s.project.name, e.subject, "crashloop");
  }
}

Executor::Executor(ProjectStore* store, const Clock* clock, const ReconcilerOptions* options, Sender* sender,
                   OwnedObjects* owned, VmCache* vms, Shared shared)
    : store_(store),
      clock_(clock),
      options_(*options),
      sender_(*sender),
      owned_(*owned),
      vms_(*vms),
      mu_(*shared.mu),
      projects_(*shared.projects) {}

SyncResult Executor::Execute(const Snapshot& s, Decision d, uint64_t changes) {
  SyncResult r;
  r.held = static_cast<int>(d.held.size());
  r.converged = d.converged;
  r.next_change = d.next_change;
  const bool quiet = Quiet(s, d);
  const ProjectRecord& p = s.project;
  std::vector<Problem> problems;
  std::vector<EventRecord> events = std::move(d.events);
  if (options_.metrics != nullptr) RecordReplacements(s, d, events);
  // The jobs that ended and what they tell, together: a reader that sees a
  // job gone (status) sees its event too.
  const size_t told = std::min(d.job_events, events.size());
  std::vector<EventRecord> ended(std::make_move_iterator(events.begin()),
                                 std::make_move_iterator(events.begin() + told));
  events.erase(events.begin(), events.begin() + told);
  StoreError(p.name, &problems, "finished jobs", store_->FinishJobs(d.job_progress, ended));
  if (d.delete_project) {
    StoreError(p.name, &problems, "events", store_->AppendEvents(events));
    StoreError(p.name, &problems, "the project's deletion", store_->DeleteProject(p.uuid, "mariposad"));
    if (options_.metrics != nullptr) options_.metrics->ForgetProject(p.name);
    {
      absl::MutexLock l(&mu_);
      projects_.erase(p.uuid);
    }
    vms_.Forget(p.uuid);
    owned_.Forget(p.uuid);
    return r;
  }
  AutoRollbacks(p, d.rollbacks, &events, &problems);
  ChangeTasks(p, d.task_changes, &problems);
  NewTasks added = AddNewTasks(d.new_tasks);
  std::vector<Step> steps;
  for (Step& st : d.steps) {
    if (added.Resolve(&st.task)) steps.push_back(std::move(st));
    else ++r.held;
  }
  std::vector<AgentInstall> installs;
  for (AgentInstall& a : d.installs) {
    if (added.Resolve(&a.task)) installs.push_back(std::move(a));
  }
  std::vector<ImageImport> imports;
  for (ImageImport& i : d.imports) {
    if (added.Resolve(&i.task)) imports.push_back(std::move(i));
  }
  std::vector<JobRecord> sent = sender_.Send(s, steps, installs, imports, d.uninstalls, &d.memory, &r, &events, &problems);
  owned_.Change(s, d, &events);
  // The backlog the pump may send (PumpProject): creates without placement
  // rules (those are placed against the instances of a fresh listing), and
  // put-backs into CNS.
  std::vector<Step> backlog;
  if (r.failed == 0) {
    for (Step& st : d.backlog) {
      const bool placed = st.action.kind == ActionKind::kCreate &&
                          !s.goal->services.at(st.action.service).spec.placement.empty();
      if (!placed && added.Resolve(&st.task)) {
        backlog.push_back(std::move(st));
      }
    }
  }
  KeepMemory(p, d.memory, &problems);
  Remember(s, &d, std::move(problems), std::move(backlog), s.in_flight.size() + sent.size(), changes,
           quiet && sent.empty() && problems.empty());
  std::vector<Problem> late;  // events are written after the state is kept: their failure joins it
  SettlePending(s, &events);
  StoreError(p.name, &late, "events", store_->AppendEvents(events));
  Unpend(p, &late);
  if (!late.empty()) {
    absl::MutexLock l(&mu_);
    auto& executed = projects_[p.uuid].executed;
    executed.insert(executed.end(), late.begin(), late.end());
  }
  AssignHealth(s);
  ServiceMetrics(s, d);
  return r;
}

absl::Status Executor::Intend(const ProjectRecord& p, const char* api, const OwnedObjects::ChangeOutcome& o) {
  std::string key = absl::StrCat(o.done.kind, " ", o.key);
  std::map<std::string, ServiceMemory> memory;
  {
    absl::MutexLock l(&mu_);
    ProjectState& ps = projects_[p.uuid];
    // The same change again: an earlier attempt's event gives way to this one's.
    ps.pending.erase(std::remove_if(ps.pending.begin(), ps.pending.end(),
                                    [&](const PendingChange& c) { return c.key == key; }),
                     ps.pending.end());
    ps.pending.push_back({api, key, o.done});
    ps.intended.insert(key);
    memory = ps.memory;
  }
  absl::Status st = WriteMemory(p, memory);
  if (st.ok()) return st;
  return absl::UnavailableError(
      absl::StrCat("not sent: the store cannot keep the change's record (", st.message(), "); tried again next sync"));
}

void Executor::SettlePending(const Snapshot& s, std::vector<EventRecord>* events) {
  absl::MutexLock l(&mu_);
  ProjectState& ps = projects_[s.project.uuid];
  if (ps.pending.empty()) return;
  auto known = [&](const std::string& api) {
    if (api == "firewall") return s.firewall.has_value() && s.firewall_error.empty();
    if (api == "fabric") return s.fabric.has_value() && s.fabric_error.empty();
    return api == "volumes" && s.volumes.has_value() && s.volumes_error.empty();
  };
  for (PendingChange& c : ps.pending) {
    if (ps.intended.count(c.key) || !known(c.api)) continue;
    // Decide sent it again when it had not happened; it did not, so it had.
    EventRecord e = c.done;
    absl::StrAppend(&e.detail, " (sent before mariposad restarted; its API now shows it done)");
    events->push_back(std::move(e));
    ps.intended.insert(c.key);
  }
}

void Executor::Unpend(const ProjectRecord& p, std::vector<Problem>* problems) {
  std::map<std::string, ServiceMemory> memory;
  {
    absl::MutexLock l(&mu_);
    ProjectState& ps = projects_[p.uuid];
    if (ps.intended.empty()) return;
    ps.pending.erase(std::remove_if(ps.pending.begin(), ps.pending.end(),
                                    [&](const PendingChange& c) { return ps.intended.count(c.key) > 0; }),
                     ps.pending.end());
    ps.intended.clear();
    memory = ps.memory;
  }
  StoreError(p.name, problems, "the project's memory of failures (backoff, crash loops)", WriteMemory(p, memory));
}

bool HoldsFence(ProjectStore* store) {
  const Fence* f = ScopedFence::Current();
  return f == nullptr || store->CheckFence(*f).ok();
}

// update.auto_rollback: the project is rolled back to the version before,
// the rollout fails, and a reprovision back to it is queued.
void Executor::AutoRollbacks(const ProjectRecord& p, const std::vector<Rollback>& rollbacks,
                               std::vector<EventRecord>* events, std::vector<Problem>* problems) {
  for (const Rollback& rb : rollbacks) {
    if (!options_.rollback) continue;
    auto rolled = options_.rollback(p.name, rb.to_version, rb.expected_current, rb.why);
    if (!rolled.ok()) {
      LogWarn("auto_rollback failed", {{"project", p.name}, {"error", rolled.status().ToString()}});
      continue;
    }
    StoreError(p.name, problems, "a task", store_->SetTaskState(rb.task, "failed", rb.why).status());
    events->push_back(EventRecord{0, clock_->Now(), "mariposad", p.name, "rollout.auto-rollback", rb.task,
                                  absl::StrCat(rb.why, " (as version ", *rolled, ")")});
    TaskRecord back;
    back.project_uuid = p.uuid;
    back.kind = "reprovision";
    back.services = rb.services;
    back.origin = "auto";
    back.trigger = "auto-rollback";
    back.auto_kind = "reprovision";
    back.actor = "mariposad";
    if (auto queued = TaskQueue(store_).Add(back); !queued.ok()) {
      LogWarn("cannot queue the reprovision back", {{"project", p.name}, {"error", queued.status().ToString()}});
    }
  }
}

// Task states as Decide changed them; a task's end is counted in the metrics.
void Executor::ChangeTasks(const ProjectRecord& p, const std::vector<TaskChange>& changes,
                             std::vector<Problem>* problems) {
  for (const TaskChange& c : changes) {
    auto changed = store_->SetTaskState(c.task, c.state, c.note);
    StoreError(p.name, problems, "a task's state", changed.status());
    if (changed.ok() && options_.metrics != nullptr &&
        (c.state == "completed" || c.state == "failed" || c.state == "terminated")) {
      options_.metrics->TaskEnded(changed->kind, c.state, changed->finished_at - changed->created_at);
    }
  }
}

// Automatic tasks: the store admits them again in its transaction; work for
// one it refuses, or that must wait, is not sent.
Executor::NewTasks Executor::AddNewTasks(const std::vector<TaskRecord>& tasks) {
  NewTasks out;
  for (const TaskRecord& t : tasks) {
    std::string ref = absl::StrCat("new:", t.services.empty() ? "" : t.services.front());
    auto added = TaskQueue(store_).Add(t);
    if (!added.ok() || !added->wait_for.empty()) {
      out.uuids[ref] = "";
      continue;
    }
    store_->SetTaskState(added->uuid, "active", "").IgnoreError();
    out.uuids[ref] = added->uuid;
  }
  return out;
}

bool Executor::NewTasks::Resolve(std::string* task) const {
  if (!absl::StartsWith(*task, "new:")) return true;
  auto it = uuids.find(*task);
  if (it == uuids.end() || it->second.empty()) return false;
  *task = it->second;
  return true;
}

// What the next sync and `status` read of this one: jobs in flight, the
// memory, the problems, and the backlog with what Send needs to build its
// requests (no instances: the backlog has no placement rules, and its
// put-backs carry their instances' aliases).
void Executor::Remember(const Snapshot& s, Decision* d, std::vector<Problem> problems, std::vector<Step> backlog,
                          size_t in_flight, uint64_t changes, bool quiet) {
  std::shared_ptr<const Snapshot> backlog_from;
  if (!backlog.empty()) {
    auto from = std::make_shared<Snapshot>();
    from->project = s.project;
    from->goal = s.goal;
    from->images = s.images;
    from->meta = s.meta;
    from->recipes = s.recipes;
    from->policy = s.policy;
    from->jitter = s.jitter;
    backlog_from = std::move(from);
  }
  absl::MutexLock l(&mu_);
  ProjectState& ps = projects_[s.project.uuid];
  ps.name = s.project.name;
  ps.in_flight = static_cast<int>(in_flight);
  ps.memory = std::move(d->memory);
  ps.decided = std::move(d->problems);
  ps.executed = std::move(problems);
  ps.synced_at = clock_->Now();
  ps.backlog.assign(std::make_move_iterator(backlog.begin()), std::make_move_iterator(backlog.end()));
  ps.backlog_from = std::move(backlog_from);
  ps.backlog_changes = changes;
  ps.quiet = quiet;
}

// The health coordinator's targets: each instance is checked by the checks
// of its own spec version.
void Executor::AssignHealth(const Snapshot& s) {
  if (options_.health == nullptr || !s.actual_known || !s.goal) return;
  std::map<std::pair<std::string, const ServiceSpec*>, std::vector<const InstanceState*>> of;
  for (const InstanceState& i : s.instances) {
    const ServiceSpec* spec = HealthSpecFor(*s.goal, s.instance_goals, i.service, i.version_uuid);
    if (spec != nullptr) of[{i.service, spec}].push_back(&i);
  }
  std::vector<health::Target> targets;
  for (const auto& kv : of) {
    auto r = s.recipes.find(kv.first.first);
    const std::string& primary = r != s.recipes.end() && !r->second.networks.empty() ? r->second.networks[0]
                                                                                       : options_.network_uuid;
    auto more = HealthTargets(*kv.first.second, kv.second, options_.health_loopback, primary, s.network_names);
    for (auto& t : more) targets.push_back(std::move(t));
  }
  options_.health->Assign(s.project.uuid, std::move(targets));
}

// mariposa_service_* for each service of the project.
void Executor::ServiceMetrics(const Snapshot& s, const Decision& d) {
  if (options_.metrics == nullptr || !s.actual_known) return;
  std::vector<ServiceCounts> counts;
  for (const auto& kv : d.verdicts) {
    if (kv.second.agent) continue;
    ServiceCounts c;
    c.service = kv.first;
    c.desired = kv.second.desired;
    c.crashlooping = kv.second.state == VerdictState::kPaused && kv.second.reason.rfind("crash loop", 0) == 0;
    c.ready = kv.second.ready;
    c.unhealthy = kv.second.unhealthy;
    c.verdict = VerdictName(kv.second.state);
    for (const InstanceState& i : s.instances) {
      if (i.service == kv.first) c.by_state[i.state]++;
    }
    counts.push_back(std::move(c));
  }
  options_.metrics->SetProject(s.project.name, std::move(counts));
}

void Executor::KeepMemory(const ProjectRecord& p, const std::map<std::string, ServiceMemory>& memory,
                            std::vector<Problem>* problems) {
  StoreError(p.name, problems, "the project's memory of failures (backoff, crash loops)", WriteMemory(p, memory));
}

absl::Status Executor::WriteMemory(const ProjectRecord& p, const std::map<std::string, ServiceMemory>& memory) {
  std::string body;
  {
    absl::MutexLock l(&mu_);
    ProjectState& ps = projects_[p.uuid];
    body = EncodeMemory(memory, ps.pending);
    if (ps.memory_kept == body) return absl::OkStatus();
  }
  absl::Status st = store_->PutControllerMemory(p.uuid, body);
  if (!st.ok()) return st;
  absl::MutexLock l(&mu_);
  projects_[p.uuid].memory_kept = std::move(body);
  return absl::OkStatus();
}
}  // namespace mariposa::convergence
