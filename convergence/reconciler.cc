#include "convergence/reconciler.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <functional>
#include <set>

#include "absl/cleanup/cleanup.h"
#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "projects/interpolate.h"
#include "projects/manifest.h"
#include "convergence/agents.h"
#include "convergence/observer.h"
#include "convergence/placement.h"
#include "convergence/planner.h"
#include "convergence/queue.h"

namespace mariposa::convergence {
namespace {

using json = nlohmann::json;

// Triton brand for a service's compute type.
std::string BrandFor(const ServiceRecord& s) {
  if (!s.brand.empty()) return s.brand;
  if (s.compute_type == "docker") return "lx";
  if (s.compute_type == "kvm") return "bhyve";
  return "joyent";
}

// MiB from a canonical size ("512m", "4g"); 1024 when unset.
int64_t RamMiB(const json& spec) {
  std::string mem = spec.value("resources", json::object()).value("memory", "");
  if (mem.size() < 2) return 1024;
  int64_t n = 0;
  if (!absl::SimpleAtoi(mem.substr(0, mem.size() - 1), &n)) return 1024;
  switch (mem.back()) {
    case 't': return n << 20;
    case 'g': return n << 10;
    case 'm': return n;
    case 'k': return std::max<int64_t>(1, n >> 10);
  }
  return 1024;
}

std::map<std::string, std::string> StringMap(const json& j) {
  std::map<std::string, std::string> out;
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
  }
  return out;
}

// Does instance `i` match a reprovision task's filters? Each non-empty list
// must contain one of the instance's names for that property.
bool MatchesFilters(const TaskRecord& t, const InstanceState& i, const std::set<std::string>& image_uuids) {
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

// The kind of automatic work an action is, as freezes name them ("" for
// start and stop, which any freeze of their scope holds).
std::string WorkKind(const Action& a) {
  if (a.kind == ActionKind::kStop || a.kind == ActionKind::kStart) return "";
  if (a.reason == "replace-broken" || a.reason == "remove-broken") return "replace-unhealthy";
  if (a.reason == "reprovision") return "reprovision";
  return "scale";
}

bool IsScaleWork(const Action& a) {
  std::string k = WorkKind(a);
  return k == "scale" || k == "replace-unhealthy";
}

absl::Duration DurationOr(const json& j, const char* key, absl::Duration fallback) {
  absl::Duration d;
  if (j.contains(key) && j[key].is_string() && absl::ParseDuration(j[key].get<std::string>(), &d)) return d;
  return fallback;
}

// The health check targets of a service's running instances, from its
// stored spec (healthchecks: name -> check).
std::vector<health::Target> HealthTargets(const json& spec, absl::Duration start_window,
                                          const std::vector<const InstanceState*>& instances, bool loopback,
                                          const std::string& primary_network) {
  std::vector<health::Target> out;
  if (!spec.is_object() || !spec.contains("healthchecks")) return out;
  for (auto it = spec["healthchecks"].begin(); it != spec["healthchecks"].end(); ++it) {
    const json& c = it.value();
    health::CheckSpec cs;
    cs.type = c.value("type", "http");
    cs.port = c.value("port", cs.type == "https" ? 443 : 80);
    cs.path = c.value("path", "/");
    cs.method = c.value("method", "GET");
    if (c.contains("headers")) cs.headers = StringMap(c["headers"]);
    if (c.contains("expect_status")) {
      cs.expect_status.clear();
      for (const auto& r : c["expect_status"]) {
        std::string t = r.is_string() ? r.get<std::string>() : r.dump();
        size_t dash = t.find('-');
        int lo = 0, hi = 0;
        if (absl::SimpleAtoi(t.substr(0, dash), &lo) &&
            absl::SimpleAtoi(dash == std::string::npos ? t : t.substr(dash + 1), &hi)) {
          cs.expect_status.push_back({lo, hi});
        }
      }
    }
    cs.expect_body = c.value("expect_body", "");
    cs.tls_skip_verify = c.value("tls_skip_verify", false);
    cs.send = c.value("send", "");
    cs.expect = c.value("expect", "");
    cs.timeout = DurationOr(c, "timeout", absl::Seconds(10));
    health::CheckPolicy policy;
    policy.interval = DurationOr(c, "interval", absl::Seconds(30));
    policy.unhealthy_interval = DurationOr(c, "unhealthy_interval", policy.interval);
    policy.retries = c.value("retries", 3);
    policy.successes = c.value("successes", 1);
    policy.start_window = start_window;
    // `network` names a NIC by network uuid or interface. Mariposa's
    // instances have one NIC, on the primary network: any other name has no
    // address, and the check fails saying so (health::HealthMonitor).
    std::string network = c.value("network", "");
    for (const InstanceState* i : instances) {
      if (i->state != "running" || i->ip.empty()) continue;
      bool primary = network.empty() || network == primary_network || network == i->nic;
      health::Target t{i->uuid, it.key(), cs, policy, i->created, primary ? primary_network : network};
      t.spec.address = primary ? i->ip : "";
      if (loopback && absl::StartsWith(t.spec.address, "10.")) t.spec.address = "127." + t.spec.address.substr(3);
      out.push_back(std::move(t));
    }
  }
  return out;
}

RestartPolicy PolicyFor(const json& spec, const ReconcilerOptions& o) {
  RestartPolicy p;
  p.backoff_base = o.backoff_base;
  p.backoff_cap = o.backoff_cap;
  if (spec.is_object() && spec.contains("restart")) {
    p.max_attempts = spec["restart"].value("max_attempts", 3);
    absl::Duration w;
    if (absl::ParseDuration(spec["restart"].value("window", "60s"), &w)) p.window = w;
  }
  return p;
}

}  // namespace

Reconciler::Reconciler(ProjectStore* store, triton::VmapiClient* vmapi, triton::ImgapiClient* imgapi,
                       const Clock* clock, ReconcilerOptions options)
    : store_(store),
      vmapi_(vmapi),
      imgapi_(imgapi),
      clock_(clock),
      options_(std::move(options)),
      slots_(std::max(1, options_.max_jobs)) {}

Reconciler::~Reconciler() { Stop(); }

Reconciler::Remembered* Reconciler::Memory(const std::string& project_uuid, const std::string& service,
                                           const std::string& spec_hash) {
  absl::MutexLock l(&history_mu_);
  auto& m = history_[absl::StrCat(project_uuid, "/", service)];
  if (!m) m = std::make_unique<Remembered>();
  if (m->spec_hash != spec_hash) {  // a new spec may fix what failed: start over
    m->spec_hash = spec_hash;
    m->history.Reset();
  }
  return m.get();
}

absl::StatusOr<std::map<std::string, std::string>> Reconciler::MetaDefaults(const ProjectRecord& p) {
  if (p.current_version.empty()) return std::map<std::string, std::string>();
  {
    absl::MutexLock l(&history_mu_);
    auto it = meta_defaults_.find(p.current_version);
    if (it != meta_defaults_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(VersionRecord v, store_->GetVersion(p.uuid, p.current_version, /*include_manifest=*/true));
  ParseResult parsed = ParseManifest(v.canonical, ParseOptions{});
  if (!parsed.manifest) return absl::InternalError(absl::StrCat("stored version ", v.number, " does not parse"));
  absl::MutexLock l(&history_mu_);
  if (meta_defaults_.size() > 1000) meta_defaults_.clear();
  return meta_defaults_[p.current_version] = parsed.manifest->meta;
}

std::optional<AgentPlan> Reconciler::AgentStatus(const std::string& project_uuid, const std::string& service) const {
  absl::MutexLock l(&history_mu_);
  auto it = agent_status_.find(absl::StrCat(project_uuid, "/", service));
  if (it == agent_status_.end()) return std::nullopt;
  return it->second;
}

std::string Reconciler::HealthOf(const std::string& instance) const {
  if (options_.health == nullptr) return "";
  auto h = options_.health->InstanceHealth(instance);
  return h ? health::HealthName(*h) : "";
}

std::string Reconciler::PausedBecause(const std::string& project_uuid, const std::string& service) const {
  absl::MutexLock l(&history_mu_);
  auto it = history_.find(absl::StrCat(project_uuid, "/", service));
  if (it == history_.end() || !it->second->paused) return "";
  return it->second->pause_reason;
}

absl::StatusOr<SyncResult> Reconciler::SyncProject(const std::string& name) {
  absl::Time sync_start = clock_->Now();
  ASSIGN_OR_RETURN(SyncResult result, SyncProjectOnce(name));
  result.total = clock_->Now() - sync_start;
  return result;
}

absl::StatusOr<SyncResult> Reconciler::SyncProjectOnce(const std::string& name) {
  SyncResult result;
  const absl::Time now = clock_->Now();
  ASSIGN_OR_RETURN(ProjectRecord p, store_->GetProject(name));
  std::vector<ServiceRecord> services;
  // A project being deleted has no goal: every instance goes, then the project.
  if (!p.current_version.empty() && !p.deleting) {
    ASSIGN_OR_RETURN(services, store_->ListServices(p.current_version));
  }
  ASSIGN_OR_RETURN(auto numbers, VersionNumbers(store_, p.uuid));
  // Events are written in batches (one transaction, one fsync, per 200) and
  // whatever is left when the sync ends.
  std::vector<EventRecord> events;
  auto flush = [&] {
    if (auto st = store_->AppendEvents(events); !st.ok()) {
      LogWarn("cannot write events", {{"project", p.name}, {"error", st.ToString()}});
    }
    events.clear();
  };
  absl::Cleanup flush_at_end = flush;
  auto event = [&](const std::string& kind, const std::string& object, const std::string& message) {
    EventRecord e;
    e.actor = "mariposad";
    e.project = p.name;
    e.kind = kind;
    e.subject = object;
    e.detail = message;
    events.push_back(std::move(e));
    if (events.size() >= 200) flush();
  };

  PlanInput in;
  std::map<std::string, const ServiceRecord*> by_name;
  std::map<std::string, json> specs;
  std::map<std::string, RestartPolicy> policies;
  std::map<std::string, Remembered*> memory;
  std::vector<const ServiceRecord*> agent_services;
  for (const ServiceRecord& s : services) {
    if (s.compute_type == "agent") {  // rolled out per server through CNAPI
      agent_services.push_back(&s);
      continue;
    }
    json spec = json::parse(s.spec_json, nullptr, false);
    ServiceGoal g{s.name, s.count, s.spec_hash, 1, 1};
    g.stopped = p.stopped.count(s.name) > 0;
    if (spec.is_object() && spec.contains("update")) {
      g.rolling = std::max(1, spec["update"].value("rolling", 1));
      g.max_surge = spec["update"].value("max_surge", 1);
    }
    absl::Duration window;
    if (spec.is_object() && spec.contains("start") &&
        absl::ParseDuration(spec["start"].value("window", "60s"), &window)) {
      g.start_window = window;
    }
    in.services[s.name] = g;
    by_name[s.name] = &s;
    policies[s.name] = PolicyFor(spec, options_);
    memory[s.name] = Memory(p.uuid, s.name, s.spec_hash);
    specs[s.name] = std::move(spec);
  }
  Observer observer(vmapi_);
  absl::Time observe_start = clock_->Now();
  std::vector<std::string> names;
  for (const ServiceRecord& s : services) {
    if (s.compute_type != "agent") names.push_back(s.name);
  }
  ASSIGN_OR_RETURN(in.instances, observer.ObserveProject(p.uuid, numbers, names, options_.observe_parallel));
  result.observe = clock_->Now() - observe_start;
  std::map<std::string, const InstanceState*> by_uuid;
  std::map<std::string, std::vector<const InstanceState*>> of_service;  // live and broken, by service
  for (const InstanceState& i : in.instances) {
    by_uuid[i.uuid] = &i;
    of_service[i.service].push_back(&i);
  }
  // Health: (re)assign the checks of the running instances, then read back
  // what the monitor knows; services with checks are ready only when healthy.
  if (options_.health != nullptr) {
    std::vector<health::Target> targets;
    for (const auto& kv : in.services) {
      auto more = HealthTargets(specs[kv.first], kv.second.start_window, of_service[kv.first], options_.health_loopback,
                                options_.network_uuid);
      for (auto& t : more) targets.push_back(std::move(t));
    }
    options_.health->Assign(p.uuid, std::move(targets));
    for (InstanceState& i : in.instances) {
      auto spec = specs.find(i.service);
      if (spec == specs.end() || !spec->second.is_object() || !spec->second.contains("healthchecks")) continue;
      i.checked = true;
      auto h = options_.health->InstanceHealth(i.uuid);
      i.health = h ? health::HealthName(*h) : "unknown";
    }
  }
  if (p.deleting && in.instances.empty()) {
    RETURN_IF_ERROR(store_->DeleteProject(p.uuid, "mariposad"));
    if (options_.metrics != nullptr) options_.metrics->ForgetProject(p.name);
    result.converged = true;
    return result;
  }

  if (!agent_services.empty()) {
    ASSIGN_OR_RETURN(std::vector<TaskRecord> open_now, store_->ListTasks(p.uuid, 0));
    SyncAgents(p, agent_services, open_now, &result);
  }

  // Reprovision tasks: runnable once what they wait for has ended; they
  // replace the old-spec instances matching their filters, up to their
  // canary, and complete when none is left.
  ASSIGN_OR_RETURN(std::vector<TaskRecord> open, store_->ListTasks(p.uuid, 0));
  std::set<std::string> open_ids;
  for (const TaskRecord& t : open) open_ids.insert(t.uuid);
  auto end_task = [&](const TaskRecord& t, const std::string& state, const std::string& error) {
    auto ended = store_->SetTaskState(t.uuid, state, error);
    if (ended.ok() && options_.metrics != nullptr) {
      options_.metrics->TaskEnded(t.kind, state, ended->finished_at - ended->created_at);
    }
  };
  std::map<std::string, std::string> task_of;  // service -> reprovision task driving it
  std::map<std::string, int64_t> remaining;    // task -> old instances still to replace
  std::map<std::string, std::string> run_task_of;  // service -> start/stop task driving it
  for (const TaskRecord& t : open) {
    if (t.kind != "reprovision" && t.kind != "start" && t.kind != "stop") continue;
    if (t.auto_kind == "agent-rollout") continue;  // SyncAgents drives it
    if (t.state == "terminating") {
      end_task(t, "terminated", "");
      continue;
    }
    bool waiting = false;
    for (const std::string& w : t.wait_for) waiting |= open_ids.count(w) > 0;
    if (waiting) continue;
    if (t.kind != "reprovision") {
      // Start: done when no instance of the scope is stopped; stop: when none
      // runs or is coming up.
      std::set<std::string> scope(t.services.begin(), t.services.end());
      bool pending = false;
      for (const auto& kv : in.services) {
        if (!scope.empty() && !scope.count(kv.first)) continue;
        for (const InstanceState* i : of_service[kv.first]) {
          pending |= t.kind == "start" ? i->state == "stopped" : (i->state == "running" || i->state == "provisioning");
        }
      }
      if (!pending) {
        end_task(t, "completed", "");
        continue;
      }
      if (t.state == "queued") store_->SetTaskState(t.uuid, "active", "").IgnoreError();
      for (const auto& kv : in.services) {
        if (!scope.empty() && !scope.count(kv.first)) continue;
        if (t.kind == "start") in.starting.insert(kv.first);
        run_task_of[kv.first] = t.uuid;
      }
      continue;
    }
    // update.auto_rollback: a new-spec instance of this rollout that is
    // unhealthy fails the rollout; the project goes back to the version
    // before, and an automatic reprovision brings the instances back to it.
    if (options_.rollback && options_.health != nullptr && p.current_version == t.version_uuid) {
      std::string bad_service, bad_instance;
      for (const auto& kv : in.services) {
        if (!t.services.empty() && std::find(t.services.begin(), t.services.end(), kv.first) == t.services.end()) continue;
        const json& spec = specs[kv.first];
        if (!spec.is_object() || !spec.contains("update") || !spec["update"].value("auto_rollback", false)) continue;
        for (const InstanceState* i : of_service[kv.first]) {
          if (i->checked && i->state == "running" && i->spec_hash == kv.second.spec_hash && i->health == "unhealthy") {
            bad_service = kv.first;
            bad_instance = i->alias;
          }
        }
      }
      int64_t number = numbers.count(t.version_uuid) ? numbers.at(t.version_uuid) : 0;
      std::string before;
      for (const auto& v : numbers) {
        if (v.second == number - 1) before = v.first;
      }
      if (!bad_service.empty() && !before.empty()) {
        std::string why = absl::StrCat("auto_rollback: ", bad_instance, " of the new spec of ", bad_service,
                                       " is unhealthy; rolled back to version ", number - 1);
        auto rolled = options_.rollback(p.name, before, p.current_version, why);
        if (rolled.ok()) {
          end_task(t, "failed", why);
          event("rollout.auto-rollback", t.uuid, absl::StrCat(why, " (as version ", *rolled, ")"));
          TaskRecord back;
          back.project_uuid = p.uuid;
          back.kind = "reprovision";
          back.services = t.services;
          back.origin = "auto";
          back.trigger = "auto-rollback";
          back.auto_kind = "reprovision";
          back.actor = "mariposad";
          if (auto added = TaskQueue(store_).Add(back); !added.ok()) {
            LogWarn("cannot queue the reprovision back", {{"project", p.name}, {"error", added.status().ToString()}});
          }
          Wake();
          return result;  // the next sync works toward the restored version
        }
        LogWarn("auto_rollback failed", {{"project", p.name}, {"error", rolled.status().ToString()}});
      }
    }
    std::set<std::string> images;
    for (const std::string& want : t.filter_images) {
      if (IsUuid(want)) {
        images.insert(want);
        continue;
      }
      size_t at = want.rfind('@');
      auto found = imgapi_->FindImage(want.substr(0, at), at == std::string::npos ? "" : want.substr(at + 1));
      if (found.ok()) images.insert(found->uuid);
    }
    std::set<std::string> scope(t.services.begin(), t.services.end());
    int64_t canary_left = t.canary > 0 ? std::max<int64_t>(0, t.canary - t.replaced) : -1;
    int64_t pending = 0;
    bool filtered = t.canary > 0 || !t.filter_versions.empty() || !t.filter_images.empty() ||
                    !t.filter_servers.empty() || !t.filter_instances.empty();
    for (const auto& kv : in.services) {
      if (!scope.empty() && !scope.count(kv.first)) continue;
      std::set<std::string> chosen;
      for (const InstanceState* i : ReprovisionOrder(of_service[kv.first], kv.second)) {
        if (canary_left >= 0 && pending >= canary_left) break;
        if (!MatchesFilters(t, *i, images)) continue;
        chosen.insert(i->uuid);
        ++pending;
      }
      // Instances of the new spec still coming up belong to the rollout too.
      bool starting = false;
      for (const InstanceState* i : of_service[kv.first]) {
        starting |= i->state == "provisioning" && i->spec_hash == kv.second.spec_hash;
      }
      if (chosen.empty() && !starting) continue;
      in.reprovision.insert(kv.first);
      if (t.rolling > 0) in.services[kv.first].rolling = static_cast<int>(t.rolling);  // the task's --rolling
      if (filtered) in.reprovision_only[kv.first] = std::move(chosen);
      task_of[kv.first] = t.uuid;
    }
    if (pending == 0) {
      end_task(t, "completed", "");
      if (t.canary > 0 && t.replaced >= t.canary) {
        event("reprovision.canary-done", t.uuid,
              absl::StrCat(t.canary, " instances replaced; `mariposa reprovision` continues with the rest"));
      }
      for (auto it = task_of.begin(); it != task_of.end();) it = it->second == t.uuid ? task_of.erase(it) : ++it;
      continue;
    }
    if (t.state == "queued") store_->SetTaskState(t.uuid, "active", "").IgnoreError();
    remaining[t.uuid] = pending;
  }

  std::vector<Action> planned = Plan(in, now);
  result.converged = planned.empty();
  // Freezes stop automatic work in their scope (or just the --only kinds).
  std::vector<Action> unfrozen;
  for (const Action& a : planned) {
    bool frozen = false;
    for (const TaskRecord& t : open) frozen |= FreezeHolds(t, a.service, WorkKind(a));
    if (frozen) {
      result.held++;
    } else {
      unfrozen.push_back(a);
    }
  }
  // Backoff, crash loops and the replacement budget.
  std::map<std::string, ServiceThrottle> limits;
  for (const auto& kv : memory) {
    ServiceHistory& h = kv.second->history;
    const RestartPolicy& policy = policies[kv.first];
    if (h.EndPauseIfOver(policy, now)) {
      event("service.crashloop-ended", kv.first, "the restart window has passed; creating instances again");
    }
    ServiceThrottle& t = limits[kv.first];
    t.paused = h.Paused(policy, now);
    {
      absl::MutexLock l(&history_mu_);
      kv.second->paused = t.paused;
    }
    t.backoff = now < h.next_attempt();
    t.replace_budget = h.ReplaceBudget(in.services[kv.first].count, options_.replace_interval, now);
  }
  std::vector<Action> held;
  std::vector<Action> actions = Throttle(unfrozen, limits, &held);
  result.held += static_cast<int>(held.size());
  std::set<std::string> over_budget;
  for (const Action& a : held) {
    const ServiceThrottle& t = limits[a.service];
    if (a.reason != "replace-broken" || t.paused || t.backoff) continue;
    over_budget.insert(a.service);
  }
  for (const std::string& svc : over_budget) {
    Remembered* m = memory[svc];
    if (options_.metrics != nullptr) options_.metrics->ReplacementDeferred(p.name, svc, "budget");
    if (now - m->budget_event >= options_.replace_interval) {
      m->budget_event = now;
      event("replacement.budget-exceeded", svc,
            absl::StrCat("more broken instances than the replacement budget (max(1, 10%) of ",
                         in.services[svc].count, " per ", absl::FormatDuration(options_.replace_interval),
                         "); the rest wait — a correlated failure (CN or network outage) is likely"));
    }
  }

  // Automatic work runs as `scale` tasks, one per service: created when work
  // appears (never in a frozen scope: the queue refuses it), completed when
  // the plan has none left for the service. A user's scale task, or one
  // already open, is reused.
  std::map<std::string, std::string> scale_task_of;  // service -> open scale task
  std::set<std::string> scale_pending;               // services with scale work planned
  std::set<std::string> scale_blocked;               // services whose scale task waits (FIFO)
  for (const Action& a : planned) {
    if (IsScaleWork(a)) scale_pending.insert(a.service);
  }
  for (const TaskRecord& t : open) {
    if (t.kind != "scale") continue;
    if (t.state == "terminating") {
      end_task(t, "terminated", "");
      continue;
    }
    std::vector<std::string> scope = t.services;
    if (scope.empty()) {
      for (const auto& kv : in.services) scope.push_back(kv.first);
    }
    bool waiting = false;
    for (const std::string& w : t.wait_for) waiting |= open_ids.count(w) > 0;
    if (waiting) {  // FIFO behind another task: its work waits too
      for (const std::string& svc : scope) scale_task_of[svc] = t.uuid, scale_blocked.insert(svc);
      continue;
    }
    bool pending = false;
    for (const std::string& svc : scope) pending |= scale_pending.count(svc) > 0;
    if (!pending) {
      end_task(t, "completed", "");
      continue;
    }
    if (t.state == "queued") store_->SetTaskState(t.uuid, "active", "").IgnoreError();
    for (const std::string& svc : scope) scale_task_of[svc] = t.uuid;
  }
  {
    std::map<std::string, std::string> first_reason;
    for (const Action& a : actions) {
      if (IsScaleWork(a) && !scale_task_of.count(a.service) && !first_reason.count(a.service)) {
        first_reason[a.service] = a.reason;
      }
    }
    std::set<std::string> refused;
    for (const auto& kv : first_reason) {
      TaskRecord t;
      t.project_uuid = p.uuid;
      t.kind = "scale";
      t.services = {kv.first};
      t.origin = "auto";
      t.version_uuid = p.current_version;
      t.actor = "mariposad";
      bool replacing = kv.second == "replace-broken" || kv.second == "remove-broken";
      t.auto_kind = replacing ? "replace-unhealthy" : "scale";
      t.trigger = replacing ? "drift" : kv.second == "service-removed" ? "apply" : "apply";
      if (replacing) {
        for (const InstanceState* i : of_service[kv.first]) {
          if (i->state == "unknown") t.trigger = "server-down";
          if (i->state == "running" && i->health == "unhealthy") t.trigger = "health";
        }
      } else if (!p.current_version.empty()) {
        auto v = store_->GetVersion(p.uuid, p.current_version, false);
        if (v.ok() && v->origin == "scale") {  // `mariposa scale`: the user's own task
          t.origin = "user";
          t.trigger = "scale";
          t.actor = v->author;
        }
      }
      auto added = TaskQueue(store_).Add(t);
      if (!added.ok()) {
        // Refused by the queue (a stop is under way, a freeze): the work waits.
        refused.insert(kv.first);
        continue;
      }
      scale_task_of[kv.first] = added->uuid;
      if (!added->wait_for.empty()) {
        scale_blocked.insert(kv.first);
      } else {
        store_->SetTaskState(added->uuid, "active", "").IgnoreError();
      }
    }
    refused.insert(scale_blocked.begin(), scale_blocked.end());
    if (!refused.empty()) {
      std::vector<Action> kept;
      for (const Action& a : actions) {
        if (IsScaleWork(a) && refused.count(a.service)) {
          result.held++;
        } else {
          kept.push_back(a);
        }
      }
      actions = std::move(kept);
    }
  }
  // A crash loop keeps its task open with the reason shown (written once).
  {
    std::map<std::string, std::string> errors;
    for (const TaskRecord& t : open) errors[t.uuid] = t.error;
    for (const auto& kv : scale_task_of) {
      std::string why = limits[kv.first].paused
                            ? absl::StrCat("paused: ", kv.first, " is crash-looping (restart.max_attempts reached)")
                            : "";
      auto known = errors.find(kv.second);
      if ((known == errors.end() && !why.empty()) || (known != errors.end() && known->second != why)) {
        store_->SetTaskState(kv.second, "active", why).IgnoreError();
      }
    }
  }

  // Ordinals in use, per service, from the aliases <project>-<service>-<n>.
  std::map<std::string, std::set<int>> used;
  for (const auto& i : in.instances) {
    std::string prefix = absl::StrCat(p.name, "-", i.service, "-");
    int n = 0;
    if (i.alias.rfind(prefix, 0) == 0 && absl::SimpleAtoi(i.alias.substr(prefix.size()), &n)) used[i.service].insert(n);
  }

  // Jobs run in a window: at most max_jobs_per_project of this project's and
  // max_jobs of everyone's in flight; the oldest is waited for to make room.
  struct Pending {
    std::string job, what, service;
    ActionKind kind;
    std::string reason;
    std::string task;  // the task it works for ("" = none)
    std::string alias = "";
  };
  std::deque<Pending> in_flight;
  std::map<std::string, TaskProgress> progress;  // task -> counters of this step
  // The task an action works for: its reprovision, start/stop or scale task.
  auto task_for = [&](const Action& a) -> std::string {
    std::map<std::string, std::string>* m = a.reason == "reprovision"                                   ? &task_of
                                            : a.kind == ActionKind::kStop || a.kind == ActionKind::kStart ? &run_task_of
                                                                                                          : &scale_task_of;
    auto it = m->find(a.service);
    return it == m->end() ? "" : it->second;
  };
  absl::BitGen gen;
  // A failure that counts toward the service's crash loop (and backoff).
  auto crash_failure = [&](const std::string& service, const std::string& why) {
    ServiceHistory& h = memory[service]->history;
    if (h.Failure(policies[service], clock_->Now(), absl::Uniform(gen, 0.0, 1.0))) {
      const RestartPolicy& rp = policies[service];
      std::string reason = absl::StrCat(rp.max_attempts, " failures within ", absl::FormatDuration(rp.window),
                                        " (restart.max_attempts); replacement paused for the window. Last: ", why);
      {
        absl::MutexLock l(&history_mu_);
        memory[service]->pause_reason = reason;
      }
      event("service.crashlooping", service, reason);
      if (options_.metrics != nullptr) options_.metrics->ReplacementDeferred(p.name, service, "crashloop");
    }
  };
  // An action that failed (when sent or in its job).
  auto failed = [&](const Pending& j, const std::string& why) {
    result.failed++;
    if (!j.task.empty()) {
      progress[j.task].failed++;
      // A reprovision delete was counted when sent; the instance is still there.
      if (j.kind == ActionKind::kDelete && j.reason == "reprovision") progress[j.task].replaced--;
    }
    if (j.kind == ActionKind::kCreate) crash_failure(j.service, why);
  };
  auto succeeded = [&](const Pending& j) {
    if (j.kind == ActionKind::kCreate) memory[j.service]->history.Success();
    if (j.task.empty()) return;
    TaskProgress& d = progress[j.task];
    if (j.kind == ActionKind::kCreate) {
      d.created++;
      if (j.reason == "replace-broken") d.replaced++;
    } else if (j.kind == ActionKind::kDelete) {
      d.deleted++;
    }
  };
  auto finish_oldest = [&] {
    Pending j = std::move(in_flight.front());
    in_flight.pop_front();
    auto done = vmapi_->WaitJob(j.job, options_.job_timeout);
    slots_.Release();
    if (done.ok() && done->execution == "succeeded") {
      succeeded(j);
      return;
    }
    std::string why = done.ok() ? done->error : done.status().ToString();
    LogWarn("job failed", {{"project", p.name}, {"job", j.job}, {"what", j.what}, {"error", why}});
    if (j.kind == ActionKind::kCreate) event("instance.create-failed", j.service, absl::StrCat(j.alias, ": ", why));
    failed(j, why);
  };
  auto take_slot = [&] {
    while (static_cast<int>(in_flight.size()) >= std::max(1, options_.max_jobs_per_project)) finish_oldest();
    while (!slots_.TryAcquire()) {
      if (in_flight.empty()) {
        slots_.Acquire();
        return;
      }
      finish_oldest();
    }
  };
  // Sends one job-producing request within the window; NOT_FOUND for a delete
  // means it is gone already.
  auto send = [&](Pending j, const std::function<absl::StatusOr<triton::JobRef>()>& call) -> bool {
    take_slot();
    auto job = call();
    if (!job.ok()) {
      slots_.Release();
      if (j.kind == ActionKind::kDelete && absl::IsNotFound(job.status())) {
        succeeded(j);
        return true;
      }
      LogWarn("request failed", {{"project", p.name}, {"what", j.what}, {"error", job.status().ToString()}});
      failed(j, std::string(job.status().message()));
      return false;
    }
    if (!j.task.empty()) progress[j.task];  // the task made a step
    j.job = job->job_uuid;
    in_flight.push_back(std::move(j));
    return true;
  };

  std::map<std::string, std::string> image_uuids;
  // What creates need, computed on the first one: effective meta (store over
  // the manifest's defaults) and the VMs placement rules may point at.
  bool create_context = false;
  std::map<std::string, std::string> meta;
  std::vector<PlacementCandidate> candidates;
  std::set<std::string> label_keys_loaded;
  auto load_create_context = [&]() -> absl::Status {
    if (create_context) return absl::OkStatus();
    create_context = true;
    ASSIGN_OR_RETURN(meta, MetaDefaults(p));
    ASSIGN_OR_RETURN(std::vector<MetaRecord> stored, store_->ListMeta(p.uuid));
    for (const MetaRecord& m : stored) meta[m.key] = m.value;
    for (const InstanceState& i : in.instances) {
      if (i.state != "destroyed") candidates.push_back({i.uuid, i.alias, i.service, {}});
    }
    return absl::OkStatus();
  };
  // The owner's VMs carrying tag `key`, for label rules (once per key per sync).
  auto load_label = [&](const std::string& key) -> absl::Status {
    if (!label_keys_loaded.insert(key).second) return absl::OkStatus();
    triton::VmFilter f;
    f.owner_uuid = options_.owner_uuid;
    f.state = "active";
    f.tags = {{key, "*"}};
    ASSIGN_OR_RETURN(std::vector<triton::Vm> vms, vmapi_->ListVms(f));
    for (const triton::Vm& vm : vms) candidates.push_back({vm.uuid, vm.alias, "", vm.tags});
    return absl::OkStatus();
  };
  for (const Action& a : actions) {
    Pending j{"", "", a.service, a.kind, a.reason, task_for(a)};
    if (a.kind == ActionKind::kStop || a.kind == ActionKind::kStart) {
      bool stop = a.kind == ActionKind::kStop;
      j.what = absl::StrCat(a.reason, " ", a.instance);
      if (send(j, [&] { return vmapi_->Act(a.instance, stop ? triton::VmAction::kStop : triton::VmAction::kStart); })) {
        result.changed++;
        auto inst = by_uuid.find(a.instance);
        event(stop ? "instance.stop" : "instance.start", a.instance,
              inst != by_uuid.end() && !inst->second->alias.empty() ? inst->second->alias : a.service);
      }
      continue;
    }
    if (a.kind == ActionKind::kDelete) {
      auto inst = by_uuid.find(a.instance);
      // An instance that stopped soon after it was created crashed: that
      // counts toward the crash loop. (A failed provision was counted when
      // its job failed.)
      if (a.reason == "remove-broken" && inst != by_uuid.end() && inst->second->state == "stopped" &&
          clock_->Now() - inst->second->created < policies[a.service].window) {
        crash_failure(a.service, absl::StrCat(a.instance, " is ", inst->second->state, " soon after creation"));
      }
      if (a.reason == "reprovision" && !j.task.empty()) {
        // Counted before the delete is sent: a crash in between can leave a
        // canary one short, never one over.
        TaskProgress d;
        d.replaced = 1;
        store_->AddTaskProgress(j.task, d).IgnoreError();
      }
      j.what = absl::StrCat("delete ", a.instance);
      if (send(j, [&] { return vmapi_->DeleteVm(a.instance); })) {
        result.deleted++;
        event("instance.delete", a.instance,
              absl::StrCat(inst != by_uuid.end() && !inst->second->alias.empty() ? inst->second->alias : a.service,
                           " (", a.reason, ")"));
      }
      continue;
    }
    const ServiceRecord& s = *by_name.at(a.service);
    if (!image_uuids.count(s.name)) {
      std::string image = s.image;
      if (!IsUuid(image)) {
        size_t at = image.rfind('@');
        auto found = imgapi_->FindImage(image.substr(0, at), at == std::string::npos ? "" : image.substr(at + 1));
        if (!found.ok()) {
          image = "";
          event("instance.create-failed", s.name, std::string(found.status().message()));
          j.what = absl::StrCat("find image ", s.image);
          failed(j, std::string(found.status().message()));
        } else {
          image = found->uuid;
        }
      }
      image_uuids[s.name] = image;
      if (image.empty()) continue;
    }
    if (image_uuids[s.name].empty()) {
      result.failed++;
      continue;
    }
    int ordinal = 1;
    while (used[s.name].count(ordinal)) ++ordinal;
    used[s.name].insert(ordinal);
    const json& spec = specs[s.name];
    triton::CreateVmRequest req;
    req.uuid = NewUuid();  // chosen here: a retried create cannot make a second VM
    req.owner_uuid = options_.owner_uuid;
    req.alias = absl::StrCat(p.name, "-", s.name, "-", ordinal);
    req.brand = BrandFor(s);
    req.image_uuid = image_uuids[s.name];
    req.ram = RamMiB(spec);
    req.networks = {options_.network_uuid};
    req.billing_id = s.package;
    req.tags = StringMap(spec.value("tags", json::object()));
    req.tags[kTagProject] = p.uuid;
    req.tags[kTagService] = s.name;
    req.tags[kTagVersion] = p.current_version;
    req.tags[kTagSpec] = s.spec_hash;
    if (spec.contains("ports")) {
      std::string ports;
      for (const auto& port : spec["ports"]) ports += (ports.empty() ? "" : ",") + port.dump();
      req.tags["ports"] = ports;
    }
    req.customer_metadata = StringMap(spec.value("mdata", json::object()));
    // {{ }} values are filled in now that the instance has a name and uuid.
    absl::Status prepared = load_create_context();
    std::vector<PlacementRuleText> rules;
    if (prepared.ok()) {
      InterpolationContext ctx;
      ctx.meta = meta;
      ctx.project_name = p.name;
      ctx.project_uuid = p.uuid;
      ctx.project_version = absl::StrCat(p.current_number);
      ctx.service_name = s.name;
      ctx.scale = s.count;
      ctx.package_name = s.package;
      ctx.package_ram = req.ram;
      ctx.instance_name = req.alias;
      ctx.instance_uuid = req.uuid;
      ctx.leave_unknown = true;  // the server is not known before placement
      auto fill = [&](std::map<std::string, std::string>* values) -> absl::Status {
        for (auto& kv : *values) {
          if (kv.first.rfind("mariposa.", 0) == 0) continue;
          ASSIGN_OR_RETURN(kv.second, Interpolate(kv.second, ctx));
        }
        return absl::OkStatus();
      };
      prepared = fill(&req.customer_metadata);
      if (prepared.ok()) prepared = fill(&req.tags);
      for (const auto& text : spec.value("placement", json::array())) {
        if (!prepared.ok()) break;
        auto rule = ParsePlacementRule(text.get<std::string>());
        if (!rule.ok()) {
          prepared = rule.status();
          break;
        }
        auto value = Interpolate(rule->value, ctx);
        if (!value.ok()) {
          prepared = value.status();
          break;
        }
        rule->value = *value;
        if (!IsInstanceKey(rule->key)) prepared = load_label(rule->key);
        rules.push_back(*rule);
      }
    }
    if (!prepared.ok()) {
      j.what = absl::StrCat("prepare ", req.alias);
      failed(j, std::string(prepared.message()));
      event("instance.create-failed", s.name, absl::StrCat(req.alias, ": ", prepared.message()));
      continue;
    }
    req.locality = LocalityFor(rules, candidates);
    j.what = absl::StrCat("create ", req.uuid);
    j.alias = req.alias;
    if (!send(j, [&] { return vmapi_->CreateVm(req); })) {
      event("instance.create-failed", s.name, "CreateVm refused; see the daemon log");
      continue;
    }
    result.created++;
    candidates.push_back({req.uuid, req.alias, s.name, req.tags});  // siblings of later creates
    if (a.reason == "replace-broken") {
      memory[s.name]->history.Replaced(clock_->Now());
      if (options_.metrics != nullptr) options_.metrics->Replacement("broken");
    }
    event("instance.create", req.uuid, absl::StrCat(req.alias, " (", a.reason, ")"));
  }
  while (!in_flight.empty()) finish_oldest();

  // Progress of the reprovision tasks: one step per sync that acted.
  for (auto& kv : progress) {
    TaskProgress& d = kv.second;
    d.steps_done = 1;
    int64_t rolling = 1;
    for (const auto& t : task_of) {
      if (t.second == kv.first) rolling = std::max<int64_t>(rolling, in.services[t.first].rolling);
    }
    auto t = store_->GetTask(kv.first);
    if (t.ok()) d.steps_planned = t->steps_done + 1 + (remaining[kv.first] - d.deleted + rolling - 1) / rolling;
    store_->AddTaskProgress(kv.first, d).IgnoreError();
  }

  if (options_.metrics != nullptr) {
    std::vector<ServiceCounts> counts;
    for (const auto& kv : in.services) {
      ServiceCounts c;
      c.service = kv.first;
      c.desired = kv.second.count;
      c.crashlooping = limits[kv.first].paused;
      for (const InstanceState* i : of_service[kv.first]) c.by_state[i->state]++;
      counts.push_back(std::move(c));
    }
    options_.metrics->SetProject(p.name, std::move(counts));
  }
  return result;
}

void Reconciler::SyncAgents(const ProjectRecord& p, const std::vector<const ServiceRecord*>& agents,
                            const std::vector<TaskRecord>& open, SyncResult* result) {
  if (options_.cnapi == nullptr) return;
  auto servers = options_.cnapi->ListServers();
  if (!servers.ok()) {
    LogWarn("cannot list servers", {{"project", p.name}, {"error", servers.status().ToString()}});
    result->failed++;
    return;
  }
  std::vector<EventRecord> events;
  auto event = [&](const std::string& kind, const std::string& subject, const std::string& detail) {
    events.push_back(EventRecord{0, absl::InfinitePast(), "mariposad", p.name, kind, subject, detail});
  };
  for (const ServiceRecord* s : agents) {
    json spec = json::parse(s->spec_json, nullptr, false);
    AgentGoal goal;
    goal.service = s->name;
    size_t at = s->image.rfind('@');
    goal.name = s->image.substr(0, at);
    goal.version = at == std::string::npos ? "" : s->image.substr(at + 1);
    auto image = IsUuid(s->image) ? imgapi_->GetImage(s->image) : imgapi_->FindImage(goal.name, goal.version);
    if (!image.ok()) {
      result->failed++;
      event("agent.install-failed", s->name, std::string(image.status().message()));
      continue;
    }
    goal.name = image->name;
    goal.version = image->version;
    goal.image_uuid = image->uuid;
    if (spec.is_object() && spec.contains("servers")) {
      const json& sv = spec["servers"];
      if (sv.contains("select") && sv["select"].is_array()) {
        goal.select = "list";
        goal.servers = sv["select"].get<std::vector<std::string>>();
      } else {
        goal.select = sv.value("select", "all");
      }
      if (sv.contains("exclude")) goal.exclude = sv["exclude"].get<std::vector<std::string>>();
    }
    if (spec.is_object() && spec.contains("update")) goal.rolling = std::max(1, spec["update"].value("rolling", 1));
    AgentPlan plan = PlanAgents(goal, *servers);
    {
      absl::MutexLock l(&history_mu_);
      agent_status_[absl::StrCat(p.uuid, "/", s->name)] = plan;
    }

    // The rollout's task: the user's reprovision of the service, or an
    // automatic one (QUEUE.md: agent rollouts are reprovision tasks).
    const TaskRecord* task = nullptr;
    for (const TaskRecord& t : open) {
      bool covers = t.services.empty() || std::find(t.services.begin(), t.services.end(), s->name) != t.services.end();
      if (t.kind == "reprovision" && covers && (t.state == "queued" || t.state == "active")) task = &t;
    }
    bool frozen = false;
    for (const TaskRecord& t : open) frozen |= FreezeHolds(t, s->name, "agent-rollout");
    if (plan.install_on.empty()) {
      if (task != nullptr) {
        std::string note = plan.unreachable > 0
                               ? absl::StrCat(plan.unreachable, " servers were not running and still run another version")
                               : "";
        store_->SetTaskState(task->uuid, "completed", note).IgnoreError();
      }
      continue;
    }
    if (frozen) {
      result->held += static_cast<int>(plan.install_on.size());
      continue;
    }
    std::string task_uuid;
    if (task != nullptr) {
      task_uuid = task->uuid;
      if (task->state == "queued") store_->SetTaskState(task_uuid, "active", "").IgnoreError();
    } else {
      TaskRecord t;
      t.project_uuid = p.uuid;
      t.kind = "reprovision";
      t.services = {s->name};
      t.origin = "auto";
      t.trigger = "apply";
      t.auto_kind = "agent-rollout";
      t.version_uuid = p.current_version;
      t.actor = "mariposad";
      auto added = TaskQueue(store_).Add(t);
      if (!added.ok()) {
        result->held += static_cast<int>(plan.install_on.size());
        continue;
      }
      task_uuid = added->uuid;
      store_->SetTaskState(task_uuid, "active", "").IgnoreError();
    }
    // Install on this step's servers in parallel, then wait for each.
    TaskProgress d;
    d.steps_done = 1;
    d.steps_planned = -1;
    std::vector<std::pair<std::string, std::string>> started;  // (server, task id)
    for (const std::string& server : plan.install_on) {
      auto id = options_.cnapi->InstallAgent(server, goal.image_uuid);
      if (!id.ok()) {
        result->failed++;
        d.failed++;
        event("agent.install-failed", server, absl::StrCat(goal.name, " ", goal.version, ": ", id.status().message()));
        continue;
      }
      started.emplace_back(server, *id);
    }
    for (const auto& st : started) {
      auto done = options_.cnapi->WaitTask(st.second, options_.job_timeout);
      if (done.ok() && done->status == "complete") {
        result->changed++;
        d.created++;
        event("agent.install", st.first, absl::StrCat(goal.name, " ", goal.version));
      } else {
        result->failed++;
        d.failed++;
        event("agent.install-failed", st.first,
              absl::StrCat(goal.name, " ", goal.version, ": ", done.ok() ? done->error : done.status().ToString()));
      }
    }
    store_->AddTaskProgress(task_uuid, d).IgnoreError();
  }
  if (auto st = store_->AppendEvents(events); !st.ok()) LogWarn("cannot write events", {{"error", st.ToString()}});
}

void Reconciler::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Reconciler::Wake() {
  absl::MutexLock l(&mu_);
  dirty_ = true;
}

void Reconciler::Stop() {
  {
    absl::MutexLock l(&mu_);
    if (stop_) return;
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Reconciler::Loop() {
  std::set<std::string> known;  // projects with metrics
  while (true) {
    {
      absl::MutexLock l(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return dirty_ || stop_; };
      mu_.AwaitWithTimeout(absl::Condition(&ready), options_.resync);
      if (stop_) return;
      dirty_ = false;
    }
    auto projects = store_->ListProjects();
    if (!projects.ok()) {
      LogWarn("cannot list projects", {{"error", projects.status().ToString()}});
      continue;
    }
    // Up to parallel_syncs projects at a time; JobSlots bounds their jobs.
    std::atomic<size_t> next{0};
    std::atomic<bool> again{false};
    auto worker = [&] {
      for (size_t k; (k = next++) < projects->size();) {
        const ProjectRecord& p = (*projects)[k];
        auto r = SyncProject(p.name);
        if (!r.ok()) {
          LogWarn("sync failed", {{"project", p.name}, {"error", r.status().ToString()}});
        } else if (r->created + r->deleted + r->changed + r->failed > 0) {
          LogInfo("synced", {{"project", p.name}, {"created", absl::StrCat(r->created)},
                             {"deleted", absl::StrCat(r->deleted)}, {"changed", absl::StrCat(r->changed)},
                             {"failed", absl::StrCat(r->failed)},
                             {"observe_ms", absl::StrCat(absl::ToInt64Milliseconds(r->observe))},
                             {"total_ms", absl::StrCat(absl::ToInt64Milliseconds(r->total))},
                             {"held", absl::StrCat(r->held)}});
          // More steps may follow (rolling batches): go again at once when
          // this one acted and nothing failed. Failures and held work wait
          // for the resync interval, so neither turns into a busy loop.
          if (r->failed == 0 && r->created + r->deleted + r->changed > 0) again = true;
        }
      }
    };
    std::vector<std::thread> helpers;
    for (int n = 1; n < std::min<int>(options_.parallel_syncs, projects->size()); ++n) helpers.emplace_back(worker);
    worker();
    for (auto& t : helpers) t.join();
    if (again) Wake();
    if (options_.metrics != nullptr) {
      std::set<std::string> now_known;
      for (const auto& p : *projects) now_known.insert(p.name);
      for (const std::string& gone : known) {
        if (!now_known.count(gone)) options_.metrics->ForgetProject(gone);
      }
      known = std::move(now_known);
    }
  }
}

}  // namespace mariposa::convergence
