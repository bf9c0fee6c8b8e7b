// Gather: everything one sync (or `status`) needs, read into an immutable
// Snapshot, one step per function, in this order:
//
//   GatherGoal        the project, its open tasks, versions and goal, the
//                     controller's policy, the kept memory, the job window
//   ObserveInstances  the project's VMs from the informer (vm_cache.h): the
//                     kept listing with the change feed's items applied
//                     (watching), or a listing of VMAPI (polling), or the
//                     last sync's (status)
//   GatherJobs        the jobs that ended since the last sync, and the rest
//   MarkStaleChecks   instances of older versions whose checks differ
//   ReadHealth        the health monitor's word on each instance
//   Recall/Show/TrackTimes  since when each instance runs and is healthy
//   GatherRecipes     images, meta and what each service is made of
//   GatherLabelledVms the VMs placement rules by label point at
//   GatherRemovedAgents, GatherServers  agent services' servers (CNAPI)
#include <algorithm>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "convergence/decide/catalog.h"
#include "convergence/decide/images.h"
#include "projects/meta_drift.h"
#include "convergence/informer/observer.h"
#include "convergence/sync_helpers.h"
#include "convergence/decide/placement.h"
#include "projects/task_queue.h"
#include "convergence/gather.h"
#include "convergence/reconciler.h"
#include "convergence/informer/observer.h"
#include "common/parallel.h"
#include "projects/volumes.h"

namespace mariposa::convergence {

Gatherer::Gatherer(ProjectStore* store, triton::VmapiClient* vmapi, triton::ImgapiClient* imgapi, const Clock* clock,
                   const ReconcilerOptions* options, GoalCache* goals, VmCache* vms, TritonCatalog* triton,
                   OwnedObjects* owned, Shared shared, Hooks hooks)
    : store_(store),
      vmapi_(vmapi),
      imgapi_(imgapi),
      clock_(clock),
      options_(*options),
      goals_(*goals),
      vms_(*vms),
      triton_(*triton),
      owned_(*owned),
      mu_(*shared.mu),
      projects_(*shared.projects),
      api_(*shared.api),
      latency_mu_(*shared.latency_mu),
      latency_(*shared.latency),
      hooks_(std::move(hooks)) {}

absl::StatusOr<Snapshot> Gatherer::Gather(const std::string& name, bool poll_jobs, absl::Duration* observe,
                                             absl::Time* listed, bool last_seen, bool observe_only) {
  ASSIGN_OR_RETURN(Snapshot s, GatherGoal(name));
  absl::Time now = clock_->Now();
  Observation o = ObserveInstances(&s, poll_jobs, last_seen, now);
  RETURN_IF_ERROR(GatherJobs(&s, poll_jobs, now));
  // What the feed brought while the jobs were polled is applied too: a job's
  // end and its VM's item arrive together, and a VM the listing shows ended
  // is not read again (RefreshEnded).
  if (poll_jobs && !last_seen && s.actual_known && !s.finished.empty()) vms_.ApplyFeed(ScopeOf(s), &s.instances);
  // The listing was read before the jobs were polled: a job that ended in
  // between (a kept listing's, or a full one's) is read again, or its VM
  // would look untouched with its job gone and the change be sent twice.
  if (s.actual_known && !RefreshEnded(s.project, s.version_numbers, s.finished, &s.instances)) {
    ListInstances(&s);  // a VM could not be read: list them all
    o.listed_at = now;
  }
  if (!observe_only) AdoptCoreZones(&s);
  if (observe != nullptr) *observe = clock_->Now() - now;
  if (listed != nullptr) *listed = s.actual_known ? o.listed_at : absl::InfinitePast();
  MarkStaleChecks(&s);
  ReadHealth(&s);
  if (s.actual_known && observe_only) RecallStoredTimes(&s);
  else if (s.actual_known && last_seen) ShowTrackedTimes(&s);
  else if (s.actual_known) TrackTimes(&s, now);
  owned_.GatherFabric(&s, last_seen);  // before the recipes: services name its networks
  owned_.GatherVolumes(&s, last_seen);  // likewise, the volumes they mount
  MarkLostMounts(&s);
  std::set<std::string> label_keys;
  RETURN_IF_ERROR(GatherRecipes(&s, last_seen, &label_keys));
  if (!last_seen) GatherLabelledVms(&s, label_keys);  // only creates need them
  GatherRemovedAgents(&s);
  GatherServers(&s, last_seen);
  owned_.GatherFirewall(&s, last_seen);
  s.api_problems = ApiProblems();
  absl::BitGen gen;
  s.jitter = absl::Uniform(gen, 0.0, 1.0);
  return s;
}

absl::StatusOr<Snapshot> Gatherer::GatherGoal(const std::string& name) {
  Snapshot s;
  ASSIGN_OR_RETURN(s.project, store_->GetProject(name));
  const std::string& uuid = s.project.uuid;
  // The goal is the project's version as read above; tasks are read after
  // it, and the version numbers after them: a task newer than the goal
  // waits for the next sync (Decide: a task works toward its own version).
  if (!s.project.current_version.empty() && !s.project.deleting) {
    ASSIGN_OR_RETURN(s.goal, goals_.Get(store_, uuid, s.project.current_version));
  } else if (!s.project.current_version.empty()) {
    ASSIGN_OR_RETURN(std::shared_ptr<const ProjectGoal> last, goals_.Get(store_, uuid, s.project.current_version));
    s.volumes_at_deletion = last->volumes;
  }
  // Scheduled and event services read their finished runs too (outcomes,
  // history, the schedule's last run).
  bool runs = false;
  if (s.goal) {
    for (const auto& [name, g] : s.goal->services) runs |= RunsToCompletion(g.spec);
  }
  ASSIGN_OR_RETURN(std::vector<TaskRecord> tasks, store_->ListTasks(uuid, runs ? kFinishedRunsRead : 0));
  for (TaskRecord& t : tasks) {
    if (t.state == "queued" || t.state == "active" || t.state == "terminating") s.tasks.push_back(std::move(t));
    else if (t.kind == "run") s.finished_runs.push_back(std::move(t));
  }
  ASSIGN_OR_RETURN(s.version_numbers, VersionNumbers(store_, uuid));
  s.policy.backoff_base = options_.backoff_base;
  s.policy.backoff_cap = options_.backoff_cap;
  s.policy.replace_interval = options_.replace_interval;
  s.policy.max_jobs_per_project = std::max(1, options_.max_jobs_per_project);
  s.policy.stale_after = options_.stale_after;
  s.policy.default_drain = 2 * options_.cns_ttl;
  RecallMemory(s.project);
  {
    absl::MutexLock l(&mu_);
    auto it = projects_.find(uuid);
    if (it != projects_.end()) s.memory = it->second.memory;
    s.global_jobs_free = std::max(0, options_.max_jobs - JobsHeldByOthers(projects_, uuid));
  }
  return s;
}

namespace {

std::vector<std::string> NonAgentServices(const Snapshot& s) {
  std::vector<std::string> names;
  if (s.goal) {
    for (const auto& kv : s.goal->services) {
      if (kv.second.spec.compute_type != "agent") names.push_back(kv.first);
    }
  }
  return names;
}

}  // namespace

VmScope Gatherer::ScopeOf(const Snapshot& s) const {
  return VmScope{s.project.uuid, s.project.name, OwnersOf(s.project, options_), NonAgentServices(s), s.version_numbers};
}

void Gatherer::ListInstances(Snapshot* s) {
  if (!vms_.List(ScopeOf(*s), &s->instances).ok()) s->actual_known = false;
}

// A sync that follows jobs starts from the project's kept listing while
// the informer (vm_cache.h) says it may; every other sync lists the
// project's VMs; `status` shows the last sync's.
Gatherer::Observation Gatherer::ObserveInstances(Snapshot* snapshot, bool poll_jobs, bool last_seen,
                                                     absl::Time now) {
  Snapshot& s = *snapshot;
  const VmScope scope = ScopeOf(s);
  Observation o{now};
  if (poll_jobs) {
    bool unreadable = false;
    if (auto taken = vms_.Take(scope, now, &s.instances, &unreadable)) {
      o.listed_at = taken->listed_at;
      o.incremental = true;
    }
    if (unreadable) s.actual_known = false;  // what the feed missed cannot be read: nothing is claimed
  }
  if (last_seen) {
    bool vmapi_failing;
    {
      absl::MutexLock l(&mu_);
      vmapi_failing = api_.count("VMAPI") > 0;
    }
    if (!vms_.LastObservation(scope, vmapi_failing, &s.instances, &s.observed_at)) s.actual_known = false;
    absl::MutexLock latencies(&latency_mu_);
    s.api_latency = latency_;
  } else if (!o.incremental) {
    ListInstances(&s);
  }
  if (!last_seen && s.actual_known) {
    s.observed_at = now;
    vms_.ApplyFeed(scope, &s.instances);
  }
  return o;
}

// Jobs: those that ended are handed to Decide once; a create whose reply
// was lost waits until its VM shows up or the job timeout passes.
absl::Status Gatherer::GatherJobs(Snapshot* snapshot, bool poll_jobs, absl::Time now) {
  Snapshot& s = *snapshot;
  const std::string& uuid = s.project.uuid;
  ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, store_->ListJobs(uuid));
  std::map<std::string, FinishedJob> pumped;  // jobs the pump saw end, counted now
  absl::Duration took;                        // what its jobs take, at least (AskJobNow)
  if (poll_jobs && s.actual_known) {
    absl::MutexLock l(&mu_);
    auto it = projects_.find(uuid);
    if (it != projects_.end()) {
      pumped.swap(it->second.ended);
      it->second.ended_ids.clear();
      took = it->second.jobs_take;
    }
  }
  const bool watching = vms_.Watching();
  absl::flat_hash_map<absl::string_view, absl::string_view> seen;  // uuid -> state, of s.instances (not changed here)
  seen.reserve(s.instances.size());
  for (const InstanceState& i : s.instances) seen.emplace(i.uuid, i.state);
  std::vector<JobRecord> polled;  // asked of VMAPI / CNAPI below
  for (JobRecord& j : jobs) {
    if (!poll_jobs || !s.actual_known) {
      s.in_flight.push_back(std::move(j));
      continue;
    }
    if (absl::StartsWith(j.job_uuid, "create:")) {
      if (seen.count(j.instance)) {
        s.finished.push_back({j, true, ""});
      } else if (now - j.sent_at > options_.job_timeout) {
        s.finished.push_back({j, false, absl::StrCat("VMAPI never confirmed CreateVm and the VM did not appear within ",
                                                     absl::FormatDuration(options_.job_timeout))});
      } else {
        s.in_flight.push_back(std::move(j));
      }
      continue;
    }
    if (auto e = pumped.find(j.job_uuid); e != pumped.end()) {
      e->second.seen_by_pump = true;
      s.finished.push_back(std::move(e->second));  // the pump saw it end
      continue;
    }
    // The listing already shows it done (the feed brought it, or VMAPI
    // was listed after it ended): not asked; nor, while the feed is
    // watched, what its item will show before long.
    if (auto vm = seen.find(j.instance); vm != seen.end() && StateShowsJobSucceeded(j, vm->second)) {
      s.finished.push_back({std::move(j), true, ""});
      continue;
    }
    if (!AskJobNow(j, watching, now, took, options_.feed_grace)) {
      s.in_flight.push_back(std::move(j));
      continue;
    }
    polled.push_back(std::move(j));
  }
  std::vector<std::optional<FinishedJob>> answers = PollJobs(polled);
  for (size_t k = 0; k < polled.size(); ++k) {
    if (answers[k]) s.finished.push_back(std::move(*answers[k]));
    else s.in_flight.push_back(std::move(polled[k]));
  }
  return absl::OkStatus();
}

void Gatherer::MarkStaleChecks(Snapshot* snapshot) {
  Snapshot& s = *snapshot;
  const std::string& uuid = s.project.uuid;
  // The versions older instances were created from: their checks are the
  // ones they keep until replaced (HealthSpecFor, stale_checks).
  if (s.goal) {
    // Decided once per (version, service): a project has few versions live.
    absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, bool> stale;
    for (InstanceState& i : s.instances) {
      if (i.version_uuid.empty() || i.version_uuid == s.goal->version_uuid || !s.goal->services.count(i.service)) {
        continue;
      }
      auto [it, fresh] = stale.try_emplace({i.version_uuid, i.service}, false);
      if (fresh) {
        if (!s.instance_goals.count(i.version_uuid)) {
          auto older = goals_.Get(store_, uuid, i.version_uuid);
          s.instance_goals[i.version_uuid] = older.ok() ? *older : nullptr;  // null: the goal's checks
        }
        const ServiceSpec* then = HealthSpecFor(*s.goal, s.instance_goals, i.service, i.version_uuid);
        it->second = !SameChecks(then->healthchecks, s.goal->services.at(i.service).spec.healthchecks);
      }
      i.stale_checks = it->second;
    }
  }
}

void Gatherer::ReadHealth(Snapshot* snapshot) {
  Snapshot& s = *snapshot;
  // Health from the monitor (a kept list carries the last sync's): the
  // readiness checks' and the liveness checks' worst state apart.
  using Purpose = health::Coordinator::Purpose;
  struct Kinds {
    bool readiness = false, liveness = false, apart = false;
  };
  auto kinds = [&](const InstanceState& i) {
    Kinds k;
    if (options_.health == nullptr || !s.goal) return k;
    const ServiceSpec* spec = HealthSpecFor(*s.goal, s.instance_goals, i.service, i.version_uuid);
    if (spec == nullptr) return k;
    for (const auto& [name, c] : spec->healthchecks) {
      k.readiness |= c.readiness;
      k.liveness |= c.liveness;
      k.apart |= c.readiness != c.liveness;
    }
    return k;
  };
  for (InstanceState& i : s.instances) {
    Kinds k = kinds(i);
    i.checked = k.readiness;
    auto h = !k.readiness ? std::nullopt
             : k.apart    ? options_.health->InstanceHealth(i.uuid, Purpose::kReadiness)
                          : options_.health->InstanceHealth(i.uuid);
    i.health = h ? health::HealthName(*h) : "unknown";
    i.liveness.clear();  // every check is both: `health` says it
    if (k.apart && !k.liveness) {
      i.liveness = "none";
    } else if (k.apart) {
      auto l = options_.health->InstanceHealth(i.uuid, Purpose::kLiveness);
      i.liveness = l ? health::HealthName(*l) : "unknown";
    }
  }
}

void Gatherer::RecallStoredTimes(Snapshot* snapshot) {
  Snapshot& s = *snapshot;
  const std::string& uuid = s.project.uuid;
  // Another node runs the project: its last sync's clocks and health, as
  // it stored them (this node's monitor checks nothing of it).
  auto read = store_->ListInstanceTimes(uuid);
  if (read.ok()) {
    std::map<std::string, const InstanceTimes*> kept;
    for (const InstanceTimes& k : *read) kept[k.instance] = &k;
    for (InstanceState& i : s.instances) {
      auto it = kept.find(i.uuid);
      if (it == kept.end() || it->second->spec_hash != i.spec_hash || it->second->image_uuid != i.image_uuid) continue;
      if (i.checked && !it->second->health.empty()) i.health = it->second->health;
      if (i.state == "running") i.up_since = it->second->up_since;
      if (i.state == "running" && i.health == "healthy") i.healthy_since = it->second->healthy_since;
    }
  }
}

void Gatherer::ShowTrackedTimes(Snapshot* snapshot) {
  Snapshot& s = *snapshot;
  const std::string& uuid = s.project.uuid;
  // Read only: the syncs keep these times.
  absl::MutexLock l(&mu_);
  const ProjectState& ps = projects_[uuid];
  for (InstanceState& i : s.instances) {
    auto it = ps.tracked.find(i.uuid);
    if (it == ps.tracked.end()) continue;
    if (i.state == "running") i.up_since = it->second.up_since;
    if (i.state == "running" && i.health == "healthy") i.healthy_since = it->second.healthy_since;
  }
}

// Since when each instance runs at its spec and image, and is healthy
// (first seen: since its creation); kept across syncs, in place, and in
// the store (InstanceTimes), so that a restart or a takeover goes on with
// the same clocks. The first sync of a project reads them back.
void Gatherer::TrackTimes(Snapshot* snapshot, absl::Time now) {
  Snapshot& s = *snapshot;
  const std::string& uuid = s.project.uuid;
  std::optional<std::vector<InstanceTimes>> kept_times = TimesToRecall(s.project);
  std::vector<InstanceTimes> changed;
  std::vector<std::string> gone;
  {
    absl::MutexLock l(&mu_);
    ProjectState& ps = projects_[uuid];
    if (kept_times && !ps.times_recalled) {
      for (const InstanceTimes& k : *kept_times) {
        ProjectState::Tracked& t = ps.tracked[k.instance];
        t.spec_hash = k.spec_hash;
        t.image_uuid = k.image_uuid;
        t.up_since = k.up_since;
        t.healthy_since = k.healthy_since;
        t.health = k.health;
      }
      ps.times_recalled = true;
    }
    TrackClocks(&ps, &s.instances, now, &changed, &gone);
  }
  // Advisory, like the kept memory: without it, after a restart running
  // instances count from their creation and healthy ones from their
  // first passing check.
  if (absl::Status st = store_->UpdateInstanceTimes(uuid, changed, gone); !st.ok()) {
    LogWarn("since when instances run and are healthy could not be kept",
            {{"project", s.project.name}, {"error", st.ToString()}});
  }
}

// What the store kept of the project's clocks, before its first sync here
// (nullopt after it; empty when it cannot be read).
std::optional<std::vector<InstanceTimes>> Gatherer::TimesToRecall(const ProjectRecord& project) {
  {
    absl::MutexLock l(&mu_);
    if (projects_[project.uuid].times_recalled) return std::nullopt;
  }
  auto read = store_->ListInstanceTimes(project.uuid);
  if (read.ok()) return *std::move(read);
  LogWarn("since when instances run and are healthy cannot be read; they count from creation",
          {{"project", project.name}, {"error", read.status().ToString()}});
  return std::vector<InstanceTimes>();
}

// One sync's clocks: each instance's are carried on, restarted (a new
// spec or image) or begun, and written into it; `changed` and `gone` are
// what the store must learn.
void TrackClocks(ProjectState* ps, std::vector<InstanceState>* instances, absl::Time now,
                 std::vector<InstanceTimes>* changed, std::vector<std::string>* gone) {
  uint64_t round = ++ps->track_round;
  for (InstanceState& i : *instances) {
    bool running = i.state == "running", healthy = running && i.health == "healthy";
    auto [it, fresh] = ps->tracked.try_emplace(i.uuid);
    ProjectState::Tracked& t = it->second;
    absl::Time up_before = t.up_since, healthy_before = t.healthy_since;
    std::string health_before = t.health;
    bool restarted = fresh || t.spec_hash != i.spec_hash || t.image_uuid != i.image_uuid;
    if (restarted) {
      absl::Time from = fresh ? i.created : now;  // a new spec or image starts again
      t = ProjectState::Tracked{i.spec_hash, i.image_uuid};
      if (running) t.up_since = from;
      if (healthy) t.healthy_since = from;
    }
    if (!running) t.up_since = absl::InfiniteFuture();
    else if (t.up_since == absl::InfiniteFuture()) t.up_since = now;
    if (!healthy) t.healthy_since = absl::InfiniteFuture();
    else if (t.healthy_since == absl::InfiniteFuture()) t.healthy_since = now;
    t.health = i.checked ? i.health : "";
    t.seen = round;
    if (running) i.up_since = t.up_since;
    if (healthy) i.healthy_since = t.healthy_since;
    if (restarted || up_before != t.up_since || healthy_before != t.healthy_since || health_before != t.health) {
      changed->push_back({i.uuid, t.spec_hash, t.image_uuid, t.up_since, t.healthy_since, t.health});
    }
  }
  for (auto it = ps->tracked.begin(); it != ps->tracked.end();) {
    if (it->second.seen != round) {
      gone->push_back(it->first);
      ps->tracked.erase(it++);
    } else {
      ++it;
    }
  }
}

// Images, the filters' images, meta and the label keys placement rules
// name (`label_keys`).
absl::Status Gatherer::GatherRecipes(Snapshot* snapshot, bool last_seen, std::set<std::string>* label_keys) {
  Snapshot& s = *snapshot;
  const std::string& uuid = s.project.uuid;
  for (const FinishedJob& f : s.finished) {
    if (f.job.api == "imgapi") ImagesChanged();
  }
  if (s.goal) {
    for (const auto& kv : s.goal->services) {
      auto image = triton_.Resolve(kv.second.record.image, last_seen);
      if (last_seen && absl::IsUnavailable(image.status())) continue;  // not looked up by a sync yet
      if (!image.ok()) s.image_errors[kv.first] = std::string(image.status().message());
      else if (!image->source.empty()) s.imports[kv.first] = *image;
      else s.images[kv.first] = *image;
      for (const PlacementRule& r : kv.second.spec.placement) {
        if (!IsInstanceKey(r.key)) label_keys->insert(r.key);
      }
    }
    s.meta = s.goal->meta_defaults;
    ASSIGN_OR_RETURN(std::vector<MetaRecord> stored, store_->ListMeta(uuid));
    for (const MetaRecord& m : stored) s.meta[m.key] = m.value;
    // What each service's instances are made of (catalog.h, meta_drift.h).
    auto catalog = triton_.Now(last_seen);
    if (catalog.ok() && (*catalog)->networks) {
      for (const triton::Network& n : *(*catalog)->networks) s.network_names[n.name] = n.uuid;
    }
    // Where a volume that names no network is made.
    if (absl::c_any_of(s.goal->volumes, [](const auto& v) { return v.second.network.empty(); })) {
      absl::StatusOr<triton::Network> def =
          !catalog.ok() ? absl::StatusOr<triton::Network>(catalog.status())
          : !(*catalog)->networks ? absl::FailedPreconditionError("mariposad has no NAPI address to find it")
                                  : DefaultFabricNetwork(*(*catalog)->networks, TenantOf(s.project, options_));
      if (def.ok()) s.default_fabric = *def;
      else s.default_fabric_error = std::string(def.status().message());
    }
    // A health check's network may name a fabric network of the manifest
    // (its name wins, as in services' networks).
    if (s.goal->fabric) {
      for (const auto& [name, net] : s.goal->fabric->networks) {
        if (std::string uuid = FabricNetworkUuid(s, name); !uuid.empty()) s.network_names[name] = uuid;
      }
    }
    for (const auto& kv : s.goal->services) BuildRecipe(&s, kv.first, kv.second, catalog);
    // Meta drift: an instance whose recorded hash differs is outdated.
    for (InstanceState& i : s.instances) {
      auto r = s.recipes.find(i.service);
      i.stale_meta = r != s.recipes.end() && !r->second.meta_hash.empty() && i.meta_hash != r->second.meta_hash;
    }
  }
  for (const TaskRecord& t : s.tasks) {
    for (const std::string& want : t.filter_images) {
      auto image = triton_.Resolve(want, last_seen);
      if (image.ok()) s.filter_images[t.uuid].insert(image->uuid);
    }
  }
  return absl::OkStatus();
}

// What a service's instances are made of (catalog.h, meta_drift.h): meta
// hash, brand, package dimensions and networks; what cannot be chosen holds
// the service (spec_errors).
void Gatherer::BuildRecipe(Snapshot* s, const std::string& service, const ServiceGoalSpec& g,
                             const absl::StatusOr<std::shared_ptr<const Catalog>>& catalog) {
  const ServiceSpec& spec = g.spec;
  if (spec.compute_type == "agent") return;
  Snapshot::Recipe& r = s->recipes[service];
  r.meta_hash = MetaHash(g.meta_keys, s->meta);
  auto hold = [&](const std::string& field, const absl::Status& st) {
    if (!s->spec_errors.count(service)) s->spec_errors[service] = absl::StrCat(field, ": ", st.message());
  };
  if (spec.compute_type == "core" && options_.admin_owner_uuid.empty()) {
    hold("compute_type", absl::FailedPreconditionError(kNoAdminOwner));
  }
  auto image = s->images.find(service);
  if (image != s->images.end()) {
    auto brand = ChooseBrand(spec, image->second);
    if (brand.ok()) r.brand = *brand;
    else hold("compute_type", brand.status());
  }
  bool need_catalog = options_.papi != nullptr || (options_.napi != nullptr && !spec.networks.empty());
  if (need_catalog && !catalog.ok()) {
    hold("catalog", catalog.status());
    return;
  }
  if (options_.papi != nullptr) {
    auto pkg = ChoosePackage(spec, *(*catalog)->packages, OwnerOf(s->project, spec, options_));
    if (pkg.ok()) r.sized = DimensionsOf(spec, *pkg);
    else hold(spec.package.empty() ? "resources" : "package", pkg.status());
  }
  // Waits for what the project's own syncs make (not a failure: the
  // fabric and volumes are made before the instances that use them).
  auto wait = [&](const std::string& why) {
    if (!s->resource_waits.count(service)) s->resource_waits[service] = why;
  };
  for (const VolumeMount& m : spec.volumes) {
    const triton::Volume* v = FindVolume(*s, m.volume);
    if (!s->volapi) {
      return hold("volumes", absl::FailedPreconditionError("mariposad has no VOLAPI address to make the volumes"));
    }
    if (v != nullptr && v->state == "failed") {
      return hold("volumes", absl::FailedPreconditionError(absl::StrCat("volume ", m.volume, " failed in VOLAPI")));
    }
    if (v == nullptr || v->state != "ready") {
      wait(absl::StrCat("volume ", m.volume, " is ", v == nullptr ? "not made" : v->state,
                        " yet (`mariposa status` shows the volumes)"));
    }
  }
  if (spec.networks.empty()) return;
  // In the manifest's order (the first is the primary NIC): the project's
  // fabric networks by their uuid once made, the others from NAPI.
  const std::optional<FabricSpec>& fabric = s->goal->fabric;
  std::vector<std::string> napi = NapiNetworks(spec, fabric);
  if (options_.napi != nullptr && !napi.empty()) {
    auto nets = ChooseNetworks(napi, *(*catalog)->networks, OwnerOf(s->project, spec, options_));
    if (!nets.ok()) return hold("networks", nets.status());
    napi = std::move(*nets);
  }
  size_t next = 0;
  for (const std::string& name : spec.networks) {
    if (!fabric || !fabric->networks.count(name)) {
      r.networks.push_back(napi[next++]);
      continue;
    }
    std::string uuid = FabricNetworkUuid(*s, name);
    if (uuid.empty()) {
      return wait(absl::StrCat("fabric network ", name, " is not made yet (`mariposa status` shows the fabric)"));
    }
    r.networks.push_back(uuid);
  }
}

void Gatherer::GatherLabelledVms(Snapshot* snapshot, const std::set<std::string>& label_keys) {
  Snapshot& s = *snapshot;
  for (const std::string& key : label_keys) {
    triton::VmFilter f;
    f.owner_uuid = TenantOf(s.project, options_);  // placement by labels looks at the project's account only
    f.state = "active";
    f.tags = {{key, "*"}};
    auto vms = vmapi_->ListVms(f);
    NoteApi("VMAPI", vms.status());
    if (!vms.ok()) continue;
    for (const triton::Vm& vm : *vms) {
      if (!vm.server_uuid.empty()) s.labelled_vms.push_back({vm.uuid, vm.alias, "", vm.tags});
    }
  }
}

// Agent services the previous version had and this one does not.
void Gatherer::GatherRemovedAgents(Snapshot* snapshot) {
  Snapshot& s = *snapshot;
  const std::string& uuid = s.project.uuid;
  if ((s.goal && s.project.current_number > 1) || (s.project.deleting && s.project.current_number >= 1)) {
    const std::string removed_key = absl::StrCat(s.project.current_version, s.project.deleting ? " deleting" : "");
    bool known = false;
    {
      absl::MutexLock l(&mu_);
      auto it = projects_.find(uuid);
      if (it != projects_.end() && it->second.removed_for == removed_key) {
        s.removed_agents = it->second.removed;
        known = true;
      }
    }
    auto read = known ? std::nullopt : std::optional(RemovedAgents(s));
    if (read && read->ok()) {  // a store error is read again next sync
      s.removed_agents = std::move(**read);
      absl::MutexLock l(&mu_);
      auto it = projects_.find(uuid);
      if (it != projects_.end()) {
        it->second.removed_for = removed_key;
        it->second.removed = s.removed_agents;
      }
    }
  }
}

// The servers (CNAPI) when the goal has agent services or removes some.
void Gatherer::GatherServers(Snapshot* snapshot, bool last_seen) {
  Snapshot& s = *snapshot;
  const std::string& uuid = s.project.uuid;
  bool agents = !s.removed_agents.empty();
  if (s.goal) {
    for (const auto& kv : s.goal->services) agents |= kv.second.spec.compute_type == "agent";
  }
  if (agents && options_.cnapi != nullptr && last_seen) {
    absl::MutexLock l(&mu_);
    const ProjectState& ps = projects_[uuid];
    s.servers = ps.servers;
    s.servers_known = ps.servers_known && !api_.count("CNAPI");
  } else if (agents && options_.cnapi != nullptr) {
    if (RefreshServers(&s)) return;
    auto servers = ListServers(uuid);
    if (servers.ok()) {
      s.servers = std::move(*servers);
      s.servers_known = true;
    }
  }
}

absl::StatusOr<std::vector<triton::Server>> Gatherer::ListServers(const std::string& uuid) {
  absl::Time now = clock_->Now();
  auto servers = options_.cnapi->ListServers();
  NoteApi("CNAPI", servers.status());
  if (servers.ok()) {
    absl::MutexLock l(&mu_);
    ProjectState& ps = projects_[uuid];
    ps.servers = *servers;
    ps.servers_known = true;
    ps.servers_listed = now;
  }
  return servers;
}

bool Gatherer::ServersListingDue(const ProjectState& ps, bool busy) const {
  return ListServersInFull(ps.servers_known, api_.count("CNAPI") > 0, clock_->Now() - ps.servers_listed,
                           options_.full_observe, busy);
}

void Gatherer::ListServersAfterSend(const std::string& uuid) {
  if (options_.cnapi == nullptr) return;
  {
    absl::MutexLock l(&mu_);
    auto it = projects_.find(uuid);
    // Only an agent project that was listed (GatherServers) and is due.
    if (it == projects_.end() || !it->second.servers_known || !ServersListingDue(it->second, /*busy=*/false)) {
      return;
    }
  }
  ListServers(uuid).IgnoreError();  // noted (NoteApi); the next sync lists again
}

// As with the VMs (full_observe): an agent project's servers are all listed
// about every full_observe; in between, a sync keeps the last listing and
// reads again only the servers whose CNAPI tasks it saw end (GetServer).
// Listing 1,000 servers at every sync of a rollout took most of each sync
// (issue 49); while a batch's tasks end or run, the listing is put off to
// the sync that sends the next (ListServersInFull, ListServersAfterSend).
// False when the servers must be listed in full: the last listing is too
// old or failed, or a server could not be read.
bool Gatherer::RefreshServers(Snapshot* snapshot) {
  Snapshot& s = *snapshot;
  std::vector<std::string> ended;
  for (const FinishedJob& f : s.finished) {
    if (f.job.api == "cnapi" && !f.job.instance.empty()) ended.push_back(f.job.instance);
  }
  const bool running = absl::c_any_of(s.in_flight, [](const JobRecord& j) { return j.api == "cnapi"; });
  std::vector<triton::Server> kept;
  {
    absl::MutexLock l(&mu_);
    const ProjectState& ps = projects_[s.project.uuid];
    if (ServersListingDue(ps, !ended.empty() || running)) {
      return false;
    }
    kept = ps.servers;
  }
  std::vector<absl::StatusOr<triton::Server>> read(ended.size(), absl::UnknownError("not read"));
  std::vector<std::function<void()>> asks;
  for (size_t k = 0; k < ended.size(); ++k) asks.push_back([&, k] { read[k] = options_.cnapi->GetServer(ended[k]); });
  RunParallel(&asks, options_.send_parallel);
  for (auto& r : read) {
    if (!r.ok()) return false;  // gone, or CNAPI failed: the full listing says which
    auto at = absl::c_find_if(kept, [&](const triton::Server& k) { return k.uuid == r->uuid; });
    if (at == kept.end()) return false;
    *at = *std::move(r);
  }
  s.servers = kept;
  s.servers_known = true;
  absl::MutexLock l(&mu_);
  ProjectState& ps = projects_[s.project.uuid];
  ps.servers = std::move(kept);
  return true;
}

// Instances that mount a copy of a volume deleted outside Mariposa are
// outdated (stale_mount).
void MarkLostMounts(Snapshot* s) {
  if (!s->goal || !s->volumes) return;
  std::set<std::string> lost;
  for (const auto& [name, spec] : s->goal->volumes) {
    for (const std::string& alias : MountsOfEarlierCopy(*s, name, FindVolume(*s, name))) lost.insert(alias);
  }
  for (InstanceState& i : s->instances) i.stale_mount = lost.count(i.alias) > 0;
}

std::vector<OwnedRule> OwnedRules(const std::string& project_uuid, const std::vector<triton::FwRule>& rules) {
  std::vector<OwnedRule> out;
  for (const triton::FwRule& r : rules) {
    auto m = r.global ? std::nullopt : ParseFirewallDescription(project_uuid, r.description);
    if (m) out.push_back({r.uuid, m->name, m->hash, r.rule, r.enabled, r.log, r.description});
  }
  return out;
}

std::vector<triton::FabricNetwork> OwnedNetworks(const std::string& project_uuid,
                                                 std::vector<triton::FabricNetwork> networks) {
  std::vector<triton::FabricNetwork> out;
  for (triton::FabricNetwork& n : networks) {
    if (ParseOwnedMarker(project_uuid, "network", n.description)) out.push_back(std::move(n));
  }
  return out;
}

std::vector<triton::Volume> OwnedVolumes(const std::string& project_name, std::vector<triton::Volume> volumes) {
  std::vector<triton::Volume> out;
  for (triton::Volume& v : volumes) {
    if (ProjectVolumeName(project_name, v.name)) out.push_back(std::move(v));
  }
  return out;
}

bool ListingShowsJobEnd(const JobRecord& job, const InstanceState* listed) {
  if (job.kind == "create") return listed != nullptr && listed->state != "provisioning";
  if (job.kind == "delete") return listed == nullptr || listed->state == "destroyed";
  if (job.kind == "start") return listed != nullptr && listed->state == "running";
  if (job.kind == "stop") return listed != nullptr && listed->state == "stopped";
  if (job.kind == "discovery") return listed != nullptr && listed->cns_down == ParseDiscoveryReason(job.reason).down;
  return false;  // the others change what a state does not show
}

bool StateShowsJobSucceeded(const JobRecord& job, absl::string_view vm_state) {
  if (!FeedShowsJobEnd(job)) return false;
  return vm_state == (job.kind == "create" ? "running" : "destroyed");
}

bool Gatherer::RefreshEnded(const ProjectRecord& project, const std::map<std::string, int64_t>& version_numbers,
                              const std::vector<FinishedJob>& finished, std::vector<InstanceState>* instances) {
  const std::string& project_uuid = project.uuid;
  const std::vector<std::string> owners = OwnersOf(project, options_);
  if (finished.empty()) return true;  // most pump rounds of a large project: nothing to look up
  std::map<std::string, InstanceState*> listed;
  for (InstanceState& i : *instances) listed[i.uuid] = &i;
  std::vector<std::string> vms;
  for (const FinishedJob& f : finished) {
    if (f.job.api != "vmapi" || f.job.instance.empty()) continue;
    auto it = listed.find(f.job.instance);
    if (f.ok && f.job.kind == "discovery" && it != listed.end()) {
      // What a discovery job set is known: the listing is brought up to it
      // without reading the VM (one read per new instance otherwise).
      ApplyDiscoveryChange(f.job.reason, f.job.sent_at, it->second);
      continue;
    }
    // What the change feed already brought is not read again: during a
    // mass scale that is every create (issue 49).
    if (ListingShowsJobEnd(f.job, it == listed.end() ? nullptr : it->second)) continue;
    vms.push_back(f.job.instance);
  }
  if (vms.empty()) return true;
  // Read by uuid, kEndedReadBatch to a ListVms: a mass scale whose items
  // arrive after its jobs are seen ending (they race) costs a few calls,
  // not one GetVm per create (issue 49). A VM the listing leaves out is gone.
  absl::StatusOr<std::vector<triton::Vm>> got = triton::ListVmsByUuid(vmapi_, vms, kEndedReadBatch);
  if (!got.ok()) {
    NoteApi("VMAPI", got.status());
    return false;
  }
  std::map<std::string, std::optional<InstanceState>> now_is;  // uuid -> its state now (nullopt: gone)
  for (const std::string& uuid : vms) now_is[uuid] = std::nullopt;
  for (const triton::Vm& vm : *got) {
    auto it = now_is.find(vm.uuid);
    if (it == now_is.end()) continue;  // not asked for
    // Another account's VM is never the project's.
    bool owned = owners.empty() || std::find(owners.begin(), owners.end(), vm.owner_uuid) != owners.end();
    it->second = owned ? Observer::FromVm(vm, project_uuid, version_numbers) : std::nullopt;
  }
  std::vector<InstanceState> out;
  out.reserve(instances->size() + now_is.size());
  for (InstanceState& i : *instances) {
    auto it = now_is.find(i.uuid);
    if (it == now_is.end()) {
      out.push_back(std::move(i));
    } else if (it->second) {
      out.push_back(std::move(*it->second));
      now_is.erase(it);
    } else {
      now_is.erase(it);
    }
  }
  for (auto& kv : now_is) {
    if (kv.second) out.push_back(std::move(*kv.second));  // a create the listing did not have yet
  }
  *instances = std::move(out);
  return true;
}

std::vector<ApiProblem> Gatherer::ApiProblems() const {
  absl::MutexLock l(&mu_);
  std::vector<ApiProblem> out;
  for (const auto& kv : api_) out.push_back(kv.second);
  return out;
}

absl::StatusOr<std::map<std::string, Snapshot::RemovedAgent>> Gatherer::RemovedAgents(const Snapshot& s) {
  std::map<std::string, Snapshot::RemovedAgent> out;
  auto name_of = [](const std::string& ref) { return ref.substr(0, ref.rfind('@')); };
  std::set<std::string> kept;  // agent names the goal still runs (none while the project is deleted)
  if (s.goal) {
    for (const auto& kv : s.goal->services) {
      if (kv.second.spec.compute_type == "agent") kept.insert(name_of(kv.second.record.image));
    }
  }
  // Every agent service an earlier version had (the current one too while
  // the project is deleted), as the newest of them defined it: a removal is
  // finished even after later versions.
  std::set<std::string> seen;
  for (int64_t n = s.project.current_number - (s.goal ? 1 : 0); n >= 1; --n) {
    ASSIGN_OR_RETURN(VersionRecord prev, store_->GetVersion(s.project.uuid, absl::StrCat(n), false));
    ASSIGN_OR_RETURN(std::vector<ServiceRecord> old, store_->ListServices(prev.uuid));
    for (const ServiceRecord& r : old) {
      if (r.compute_type != "agent" || (s.goal && s.goal->services.count(r.name)) || !seen.insert(r.name).second) {
        continue;
      }
      std::string name = name_of(r.image);
      if (IsUuid(r.image)) {
        auto im = triton_.Resolve(r.image);
        if (!im.ok()) continue;
        name = im->name;
      }
      if (kept.count(name)) continue;
      Snapshot::RemovedAgent ra;
      ra.name = name;
      auto spec = nlohmann::json::parse(r.spec_json, nullptr, false);
      if (spec.is_object() && spec.contains("update") && spec["update"].is_object() &&
          spec["update"].value("rolling", 1) > 0) {
        ra.rolling = spec["update"].value("rolling", 1);
      }
      if (spec.is_object() && spec.contains("servers") && spec["servers"].is_object()) {
        const auto& sv = spec["servers"];
        auto strings = [](const nlohmann::json& list, std::vector<std::string>* into) {
          if (!list.is_array()) return;
          for (const auto& x : list) {
            if (x.is_string()) into->push_back(x.get<std::string>());
          }
        };
        if (sv.contains("select") && sv["select"].is_string()) ra.select = sv["select"].get<std::string>();
        if (sv.contains("select") && sv["select"].is_array()) {
          ra.select = "list";
          strings(sv["select"], &ra.servers);
        }
        if (sv.contains("exclude")) strings(sv["exclude"], &ra.exclude);
      }
      out[r.name] = ra;
    }
  }
  return out;
}

void Gatherer::ImagesChanged() {
  triton_.Forget();
  if (options_.images_changed) options_.images_changed();
}

absl::StatusOr<std::map<std::string, std::vector<triton::Vm>>> Gatherer::CoreZones() {
  triton::VmFilter f;
  f.owner_uuid = options_.admin_owner_uuid;
  f.state = "active";
  f.tags = {{kTagCoreRole, "*"}};
  auto vms = vmapi_->ListVms(f);
  NoteApi("VMAPI", vms.status());
  if (!vms.ok()) return vms.status();
  std::map<std::string, std::vector<triton::Vm>> by_role;
  for (triton::Vm& vm : *vms) {
    std::string role = vm.tags.at(kTagCoreRole);
    by_role[role].push_back(std::move(vm));
  }
  return by_role;
}

void Gatherer::AdoptCoreZones(Snapshot* s) {
  if (!s->goal || !s->actual_known || options_.admin_owner_uuid.empty()) return;
  std::set<std::string> seen;
  for (const InstanceState& i : s->instances) seen.insert(i.uuid);
  std::vector<EventRecord> events;
  std::optional<std::map<std::string, std::vector<triton::Vm>>> zones;  // listed once, if there is a core service
  for (const auto& kv : s->goal->services) {
    if (kv.second.spec.compute_type != "core") continue;
    if (!zones) {
      auto listed = CoreZones();
      if (!listed.ok()) {  // a zone not seen could be created twice: decide nothing
        s->actual_known = false;
        return;
      }
      zones = std::move(*listed);
    }
    auto image = triton_.Resolve(kv.second.record.image);
    std::string goal_image = image.ok() && image->source.empty() ? image->uuid : "";
    for (triton::Vm vm : (*zones)[kv.first]) {
      auto tags = AdoptionTags(vm, s->project.uuid, kv.first, s->project.current_version, kv.second.record.spec_hash,
                               goal_image);
      if (tags.empty() || seen.count(vm.uuid)) continue;
      // Counted now even when tagging fails (it is tried again next sync),
      // so that nothing is created beside it.
      auto tagged = vmapi_->SetTags({vm.uuid, options_.admin_owner_uuid}, tags, /*replace=*/false);
      NoteApi("VMAPI", tagged.status());
      bool current = tags[kTagSpec] == kv.second.record.spec_hash;
      for (const auto& t : tags) vm.tags[t.first] = t.second;
      if (auto i = Observer::FromVm(vm, s->project.uuid, s->version_numbers)) s->instances.push_back(std::move(*i));
      if (!tagged.ok()) continue;
      {
        absl::MutexLock l(&mu_);  // a sync before the tags land adopts it again, silently
        if (!projects_[s->project.uuid].adopted.insert(vm.uuid).second) continue;
      }
      events.push_back(EventRecord{
          0, clock_->Now(), "mariposad", s->project.name, "instance.adopted", vm.uuid,
          absl::StrCat(vm.alias.empty() ? vm.uuid : vm.alias, " (", kTagCoreRole, "=", kv.first, ", image ",
                       ShortUuid(vm.image_uuid), ") is now an instance of ", kv.first,
                       current ? "; it runs the goal image" : "; it will be reprovisioned onto the goal image")});
    }
  }
  if (!events.empty()) {
    if (auto st = store_->AppendEvents(events); !st.ok()) LogWarn("cannot record adoptions", {{"error", st.ToString()}});
  }
}

void Gatherer::RecallMemory(const ProjectRecord& p) {
  {
    absl::MutexLock l(&mu_);
    if (projects_[p.uuid].memory_recalled) return;
  }
  std::map<std::string, ServiceMemory> kept;
  std::vector<PendingChange> pending;
  std::string body;
  auto text = store_->GetControllerMemory(p.uuid);
  if (text.ok() && !text->empty()) {
    auto decoded = DecodeMemory(*text, &pending);
    if (decoded.ok()) {
      kept = *std::move(decoded);
      body = *text;
    } else {
      text = decoded.status();
    }
  }
  if (!text.ok()) {
    // Advisory: without it, backoffs and crash loops start counting again.
    LogWarn("the project's kept memory cannot be read; it starts with none",
            {{"project", p.name}, {"error", text.status().ToString()}});
  } else if (!kept.empty()) {
    LogInfo("kept memory recalled", {{"project", p.name}, {"services", absl::StrCat(kept.size())}});
  }
  absl::MutexLock l(&mu_);
  ProjectState& ps = projects_[p.uuid];
  if (ps.memory_recalled) return;
  ps.memory_recalled = true;
  ps.memory = std::move(kept);
  ps.pending = std::move(pending);
  ps.memory_kept = std::move(body);
}

std::vector<std::optional<FinishedJob>> Gatherer::PollJobs(const std::vector<JobRecord>& jobs) {
  // Asked in parallel: a sync's cost does not grow with one round trip per
  // job in flight.
  std::vector<std::optional<FinishedJob>> answers(jobs.size());  // one writer per element
  std::vector<std::function<void()>> asks;
  for (size_t k = 0; k < jobs.size(); ++k) {
    asks.push_back([&, k] {
      const JobRecord& j = jobs[k];
      if (j.api == "cnapi") {
        if (options_.cnapi == nullptr) return;
        auto t = options_.cnapi->GetTask(j.job_uuid);
        NoteApi("CNAPI", t.status());
        if (t.ok() && t->done()) answers[k] = FinishedJob{j, t->status == "complete", t->error};
        else if (absl::IsNotFound(t.status())) answers[k] = FinishedJob{j, false, "CNAPI lost the task"};
        return;
      }
      if (j.api == "imgapi") {
        triton::JobRef ref;
        ref.job_uuid = j.job_uuid;
        auto job = imgapi_->WaitJob(ref, absl::ZeroDuration());  // asks once
        if (job.ok() && job->done()) answers[k] = FinishedJob{j, job->execution == "succeeded", job->error};
        else if (absl::IsNotFound(job.status())) answers[k] = FinishedJob{j, false, "the workflow API lost the job"};
        return;
      }
      auto job = vmapi_->GetJob(j.job_uuid);
      if (job.ok() && job->done()) answers[k] = FinishedJob{j, job->execution == "succeeded", job->error};
      else if (absl::IsNotFound(job.status())) answers[k] = FinishedJob{j, false, "VMAPI lost the job"};
    });
  }
  RunParallel(&asks, options_.send_parallel);
  return answers;
}

}  // namespace mariposa::convergence
