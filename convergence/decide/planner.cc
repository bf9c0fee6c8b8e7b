#include "convergence/decide/planner.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string_view>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace mariposa::convergence {
namespace {

// State and health are compared against literals on every instance of
// every plan: as string_views, a length mismatch answers without memcmp.
using namespace std::string_view_literals;  // NOLINT

// Instances that no longer serve and must be replaced: crashed, stopped
// without being asked to, on a server that is not running, or unhealthy.
// A running instance that fails its health checks is broken too.
bool BrokenState(const InstanceState& i) {
  return i.state == "failed"sv || i.state == "stopped"sv || i.state == "unknown"sv ||
         (i.state == "running"sv && FailsLiveness(i));
}

bool Live(const InstanceState& i) { return i.state == "provisioning"sv || i.state == "running"sv; }

absl::Time UpSince(const InstanceState& i) { return i.up_since == absl::InfinitePast() ? i.created : i.up_since; }

// When the instance became ready: healthy since (checks defined: passing
// them is what counts), else up for the start window.
absl::Time ReadyAt(const InstanceState& i, absl::Duration start_window) {
  if (i.state != "running"sv) return absl::InfiniteFuture();
  if (i.health == "healthy"sv) return i.healthy_since;
  if (i.checked || i.health != "unknown"sv) return absl::InfiniteFuture();
  return UpSince(i) + start_window;
}

bool ReadyState(const InstanceState& i, absl::Time now, absl::Duration start_window,
                absl::Duration min_healthy = absl::ZeroDuration()) {
  absl::Time at = ReadyAt(i, start_window);
  return at != absl::InfiniteFuture() && (at == absl::InfinitePast() || now - at >= min_healthy);
}

bool ReadyState(const InstanceState& i, absl::Time now, const ServiceGoal& goal) {
  return ReadyState(i, now, goal.start_window, goal.min_healthy_time);
}

int Rank(const InstanceState& i) {
  if (FailsChecks(i)) return 0;
  if (i.state == "provisioning"sv || i.health == "starting"sv || i.health == "unknown"sv) return 1;
  return 2;
}

// Oldest project version first, then oldest instance (uuid breaks ties).
bool Older(const InstanceState* a, const InstanceState* b) {
  if (a->version != b->version) return a->version < b->version;
  if (a->created != b->created) return a->created < b->created;
  return a->uuid < b->uuid;
}

}  // namespace

bool InstanceReady(const InstanceState& i, absl::Time now, absl::Duration start_window, absl::Duration min_healthy) {
  return ReadyState(i, now, start_window, min_healthy);
}
absl::Time ReadySince(const InstanceState& i, absl::Duration start_window) { return ReadyAt(i, start_window); }
bool InstanceBroken(const InstanceState& i) { return BrokenState(i); }

bool Outdated(const InstanceState& i, const ServiceGoal& goal) {
  return i.spec_hash != goal.spec_hash || i.stale_meta || i.stale_checks || i.stale_mount ||
         (!goal.image_uuid.empty() && !i.image_uuid.empty() && i.image_uuid != goal.image_uuid);
}

bool Restarts(const ServiceGoal& goal, const InstanceState& i) {
  if (!BrokenState(i)) return false;
  return i.state == "unknown"sv ? goal.restart_on_cn : goal.restart_on_failure;
}

std::vector<const InstanceState*> VictimOrder(std::vector<const InstanceState*> live) {
  std::stable_sort(live.begin(), live.end(), [](const InstanceState* a, const InstanceState* b) {
    if (Rank(*a) != Rank(*b)) return Rank(*a) < Rank(*b);
    return Older(a, b);
  });
  return live;
}

std::vector<const InstanceState*> ReprovisionOrder(const std::vector<const InstanceState*>& of_service,
                                                   const ServiceGoal& goal) {
  std::vector<const InstanceState*> out;
  for (const InstanceState* i : of_service) {
    if (i->service == goal.name && i->state == "running"sv && Outdated(*i, goal)) out.push_back(i);
  }
  std::sort(out.begin(), out.end(), Older);
  return out;
}

std::vector<const InstanceState*> ReprovisionOrder(const std::vector<InstanceState>& instances,
                                                   const ServiceGoal& goal) {
  std::vector<const InstanceState*> all;
  all.reserve(instances.size());
  for (const InstanceState& i : instances) all.push_back(&i);
  return ReprovisionOrder(all, goal);
}

std::vector<Action> Throttle(const std::vector<Action>& actions, const std::map<std::string, ServiceThrottle>& limits,
                             std::vector<Action>* held) {
  std::vector<Action> out;
  std::map<std::string, int64_t> creates, removes;  // replacements let through so far
  for (const Action& a : actions) {
    auto it = limits.find(a.service);
    bool hold = false;
    if (it != limits.end()) {
      const ServiceThrottle& t = it->second;
      bool replacing = a.reason == "replace-broken" || a.reason == "remove-broken";
      if (t.paused) hold = a.kind == ActionKind::kCreate || a.reason == "remove-broken";
      if (t.backoff) hold |= a.kind == ActionKind::kCreate;
      if (!hold && replacing && t.replace_budget >= 0) {
        int64_t& used = a.kind == ActionKind::kCreate ? creates[a.service] : removes[a.service];
        hold = used >= t.replace_budget;
        if (!hold) ++used;
      }
    }
    (hold ? *held : out).push_back(a);
  }
  return out;
}

namespace {

const std::vector<const InstanceState*> kNoInstances;

// One in-place rolling step (update.strategy reprovision): up to `rolling`
// instances reprovisioning or coming back up at once, and only while
// count - rolling instances stay ready. Oldest first.
template <typename Eligible>
void PlanInPlace(const ServiceGoal& goal, const std::vector<const InstanceState*>& live, const ServiceFlags& flags,
                 const Eligible& eligible, absl::Time now, std::vector<Action>& actions) {
  int64_t in_flight = 0, ready = 0;
  std::vector<const InstanceState*> old;
  for (const InstanceState* i : live) {
    if (flags.reprovisioning != nullptr && flags.reprovisioning->count(i->uuid)) {
      ++in_flight;
      continue;
    }
    bool current = !Outdated(*i, goal);
    if (ReadyState(*i, now, goal)) ++ready;
    else if (current) ++in_flight;
    if (!current && i->state == "running"sv && i->delegate_dataset && eligible(i)) old.push_back(i);
  }
  std::sort(old.begin(), old.end(), Older);
  int64_t floor = goal.count - goal.rolling;
  int64_t n = std::clamp<int64_t>(std::min<int64_t>(goal.rolling - in_flight, ready - floor), 0, old.size());
  for (int64_t k = 0; k < n; ++k) actions.push_back({ActionKind::kReprovision, goal.name, old[k]->uuid, "reprovision"});
}

// The live count after scaling (`n`), deletes in flight of instances that
// still run (`going`) and the creates just planned (`missing`).
struct Counts {
  int64_t n = 0, going = 0, missing = 0;
};

// stop.preserve_stopped: the oldest preserved beyond preserve_keep are destroyed.
void ExpirePreserved(const ServiceGoal& goal, const std::vector<const InstanceState*>& of_service,
                     std::vector<Action>& actions) {
  std::vector<const InstanceState*> preserved;
  for (const InstanceState* i : of_service) {
    if (i->state == "preserved"sv) preserved.push_back(i);
  }
  std::sort(preserved.begin(), preserved.end(), [](const InstanceState* a, const InstanceState* b) {
    return a->preserved_at != b->preserved_at ? a->preserved_at < b->preserved_at : Older(a, b);
  });
  for (size_t k = 0; k + std::max(goal.preserve_keep, 0) < preserved.size(); ++k) {
    actions.push_back({ActionKind::kDelete, goal.name, preserved[k]->uuid, "preserved-expired"});
  }
}

void RollingStep(const ServiceGoal& goal, const std::vector<const InstanceState*>& live,
                 const std::function<bool(const InstanceState*)>& eligible,
                 const std::function<bool(const InstanceState*)>& in_place, absl::Time now, Counts c,
                 ActionKind remove_live, std::vector<Action>& actions) {
  // One rolling step. New instances: up to `rolling` in flight, live never
  // above count + max_surge. Old ones: removed oldest first, only while
  // `floor` ready instances remain.
  std::vector<const InstanceState*> old_running;
  int64_t new_in_flight = c.missing, ready_new = 0, ready_old = 0, kept_old = 0;
  for (const InstanceState* i : live) {
    bool current = !Outdated(*i, goal);
    bool ready = ReadyState(*i, now, goal);
    if (current) {
      if (ready) ready_new++;
      else new_in_flight++;
    } else {
      if (i->state == "running"sv && eligible(i) && !in_place(i)) old_running.push_back(i);
      if (!eligible(i) || in_place(i)) kept_old++;
      if (ready) ready_old++;
    }
  }
  std::sort(old_running.begin(), old_running.end(), Older);
  int64_t floor = goal.max_surge > 0 ? goal.count : goal.count - goal.rolling;
  int64_t deletable = std::clamp<int64_t>(ready_new + ready_old - floor, 0, old_running.size());
  for (int64_t k = 0; k < deletable; ++k) {
    actions.push_back({remove_live, goal.name, old_running[k]->uuid, "reprovision"});
  }
  // Bounded as if the creates land before the deletes.
  int64_t still_needed = goal.count - kept_old - ready_new - new_in_flight;
  int64_t creates = std::min({static_cast<int64_t>(goal.rolling) - new_in_flight,
                              goal.count + goal.max_surge - c.n - c.going, still_needed});
  for (int64_t k = 0; k < creates; ++k) actions.push_back({ActionKind::kCreate, goal.name, "", "reprovision"});
}

// One service's actions (Plan, for each service of the goal), appended.
void PlanService(const ServiceGoal& goal, const std::vector<const InstanceState*>& of_service,
                 const ServiceFlags& flags, absl::Time now, std::vector<Action>& actions) {
  if (goal.stopped) {
    // Stop what runs; leave everything else as it is.
    std::vector<const InstanceState*> running;
    for (const InstanceState* i : of_service) {
      if (i->state == "running"sv) running.push_back(i);
    }
    std::sort(running.begin(), running.end(), Older);
    for (const InstanceState* i : running) actions.push_back({ActionKind::kStop, goal.name, i->uuid, "stop"});
    return;
  }
  bool starting = flags.starting;
  std::vector<const InstanceState*> live, broken, left, to_start;  // left: broken, not replaced
  int64_t going = 0;  // deletes in flight of instances that still run
  for (const InstanceState* i : of_service) {
    if (flags.deleting != nullptr && flags.deleting->count(i->uuid)) {
      going += Live(*i);
      continue;
    }
    if (starting && i->state == "stopped"sv) to_start.push_back(i);
    else if (BrokenState(*i)) (Restarts(goal, *i) ? broken : left).push_back(i);
    else if (Live(*i)) live.push_back(i);
  }
  // Started instances count as live (they come back as they were).
  std::sort(to_start.begin(), to_start.end(), Older);
  for (const InstanceState* i : to_start) {
    actions.push_back({ActionKind::kStart, goal.name, i->uuid, "start"});
    live.push_back(i);
  }
  // stop.preserve_stopped: what leaves the service is kept stopped, not
  // destroyed; the oldest preserved beyond preserve_keep are destroyed.
  ActionKind remove_broken = goal.preserve == "never" ? ActionKind::kDelete : ActionKind::kPreserve;
  ActionKind remove_live = goal.preserve == "always" ? ActionKind::kPreserve : ActionKind::kDelete;
  ExpirePreserved(goal, of_service, actions);
  std::sort(broken.begin(), broken.end(), Older);
  for (const InstanceState* i : broken) actions.push_back({remove_broken, goal.name, i->uuid, "remove-broken"});

  // Old-spec instances this reprovision may replace (all of them unless
  // filters or a canary limit it); the others are kept as they are.
  auto eligible = [&](const InstanceState* i) {
    return Outdated(*i, goal) && (flags.only == nullptr || flags.only->count(i->uuid) > 0);
  };
  // update.strategy reprovision: those with a delegate dataset are rolled in
  // place, after the others were replaced.
  auto in_place = [&](const InstanceState* i) { return goal.in_place && i->delegate_dataset; };
  bool rolling_out = false, in_place_out = false;
  if (flags.reprovision) {
    for (const InstanceState* i : live) (in_place(i) ? in_place_out : rolling_out) |= eligible(i);
  }
  // Broken instances restart.condition leaves keep their place.
  int64_t n = static_cast<int64_t>(live.size() + left.size());
  int64_t ceiling = goal.count + (rolling_out ? goal.max_surge : 0);
  if (n > ceiling) {
    // Too many: victims in QUEUE.md's order, those left broken first;
    // during a rollout old-spec instances go next, they would be replaced
    // anyway (scale 35 -> 20 during a rollout finishes in 4 batches, not 7).
    std::vector<const InstanceState*> order = VictimOrder(live);
    if (rolling_out) {
      std::stable_partition(order.begin(), order.end(),
                            [&](const InstanceState* i) { return Outdated(*i, goal); });
    }
    std::sort(left.begin(), left.end(), Older);
    order.insert(order.begin(), left.begin(), left.end());
    std::set<const InstanceState*> gone(order.begin(), order.begin() + (n - ceiling));
    for (int64_t k = 0; k < n - ceiling; ++k) {
      bool was_broken = std::find(left.begin(), left.end(), order[k]) != left.end();
      actions.push_back({was_broken ? remove_broken : remove_live, goal.name, order[k]->uuid, "scale-down"});
    }
    auto keep = [&](std::vector<const InstanceState*>* list) {
      list->erase(std::remove_if(list->begin(), list->end(), [&](const InstanceState* i) { return gone.count(i) > 0; }),
                  list->end());
    };
    keep(&live);
    keep(&left);
    n = ceiling;
  }
  int64_t missing = std::max<int64_t>(0, std::min(goal.count - n, ceiling - n - going));
  int64_t replace = std::min<int64_t>(missing, static_cast<int64_t>(broken.size()));
  for (int64_t k = 0; k < missing; ++k) {
    actions.push_back({ActionKind::kCreate, goal.name, "", k < replace ? "replace-broken" : "scale-up"});
  }
  n += missing;
  if (!rolling_out) {
    if (in_place_out) PlanInPlace(goal, live, flags, eligible, now, actions);
    return;
  }

  RollingStep(goal, live, eligible, in_place, now, {n, going, missing}, remove_live, actions);
}

// An instance chosen for removal is not started first.
void DropStartsOfDeleted(std::vector<Action>* actions, size_t from) {
  std::set<std::string> deleted;
  for (size_t k = from; k < actions->size(); ++k) {
    if (Removes((*actions)[k].kind)) deleted.insert((*actions)[k].instance);
  }
  actions->erase(std::remove_if(actions->begin() + static_cast<long>(from), actions->end(),
                                [&](const Action& a) { return a.kind == ActionKind::kStart && deleted.count(a.instance); }),
                 actions->end());
}

ServiceFlags FlagsOf(const PlanInput& input, const std::string& service) {
  ServiceFlags f;
  f.reprovision = input.reprovision.count(service) > 0;
  auto only = input.reprovision_only.find(service);
  if (only != input.reprovision_only.end()) f.only = &only->second;
  f.starting = input.starting.count(service) > 0;
  f.deleting = &input.deleting;
  f.reprovisioning = &input.reprovisioning;
  return f;
}

}  // namespace

std::vector<Action> Plan(const PlanInput& input, absl::Time now) {
  std::vector<Action> actions;
  // Instances by service (a hash map; runs of one service skip the lookup).
  absl::flat_hash_map<absl::string_view, std::vector<const InstanceState*>> by_service;
  by_service.reserve(input.services.size() + 1);
  std::vector<const InstanceState*>* run = nullptr;
  absl::string_view run_name;
  for (const InstanceState& i : input.instances) {
    if (i.state == "destroyed"sv) continue;
    if (run == nullptr || run_name != i.service) {
      run = &by_service[i.service];
      run_name = i.service;
    }
    run->push_back(&i);
  }
  // Services that left the manifest: remove every instance.
  std::vector<absl::string_view> removed;
  for (const auto& kv : by_service) {
    if (!input.services.count(std::string(kv.first))) removed.push_back(kv.first);
  }
  std::sort(removed.begin(), removed.end());
  for (absl::string_view name : removed) {
    std::vector<const InstanceState*> all = by_service[name];
    std::sort(all.begin(), all.end(), Older);
    for (const InstanceState* i : all) {
      actions.push_back({ActionKind::kDelete, std::string(name), i->uuid, "service-removed"});
    }
  }
  for (const auto& kv : input.services) {
    size_t from = actions.size();
    auto of = by_service.find(kv.first);
    PlanService(kv.second, of == by_service.end() ? kNoInstances : of->second, FlagsOf(input, kv.first), now, actions);
    DropStartsOfDeleted(&actions, from);
  }
  return actions;
}

namespace {

bool SameGoal(const ServiceGoal& a, const ServiceGoal& b) {
  return a.name == b.name && a.count == b.count && a.spec_hash == b.spec_hash && a.rolling == b.rolling &&
         a.max_surge == b.max_surge && a.start_window == b.start_window && a.stopped == b.stopped &&
         a.restart_on_failure == b.restart_on_failure && a.restart_on_cn == b.restart_on_cn &&
         a.preserve == b.preserve && a.preserve_keep == b.preserve_keep && a.in_place == b.in_place &&
         a.image_uuid == b.image_uuid && a.min_healthy_time == b.min_healthy_time;
}

// The fields a plan reads.
// Until when a service's plan holds by time alone: the first moment a
// running instance without checks passes its start window (and so becomes
// ready).
absl::Time ValidUntil(const ServiceGoal& goal, const std::vector<const InstanceState*>& instances, absl::Time now) {
  absl::Time until = absl::InfiniteFuture();
  for (const InstanceState* ip : instances) {
    absl::Time at = ReadyAt(*ip, goal.start_window);
    if (at == absl::InfiniteFuture() || at == absl::InfinitePast()) continue;
    absl::Time ready_at = at + goal.min_healthy_time;
    if (ready_at > now) until = std::min(until, ready_at);
  }
  return until;
}

}  // namespace

uint64_t InstancesFingerprint(const std::vector<const InstanceState*>& instances) {
  uint64_t h = 0;
  for (const InstanceState* i : instances) {
    h = absl::Hash<std::tuple<uint64_t, absl::string_view, absl::string_view, absl::string_view, bool,
                              absl::string_view, bool, bool, bool, int64_t, int64_t, absl::string_view, bool,
                              absl::string_view, int64_t, int64_t>>{}(
        std::make_tuple(h, i->uuid, i->state, i->health, i->checked, i->spec_hash, i->stale_meta, i->stale_checks,
                        i->stale_mount,
                        i->version,
                        absl::ToUnixNanos(i->created), i->service, i->delegate_dataset, i->image_uuid,
                        absl::ToUnixNanos(i->up_since), absl::ToUnixNanos(i->healthy_since)));
  }
  return h;
}

std::vector<Action> PlanCache::Plan(const std::map<std::string, ServiceInput>& services,
                                    const std::vector<const InstanceState*>& removed, absl::Time now) {
  std::vector<Action> actions;
  planned_ = reused_ = 0;
  // Services that left the goal: every instance goes, by service name, oldest first.
  std::map<std::string, std::vector<const InstanceState*>> gone;
  for (const InstanceState* i : removed) gone[i->service].push_back(i);
  for (auto& kv : gone) {
    std::sort(kv.second.begin(), kv.second.end(), Older);
    for (const InstanceState* i : kv.second) actions.push_back({ActionKind::kDelete, kv.first, i->uuid, "service-removed"});
  }
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = services.count(it->first) ? std::next(it) : entries_.erase(it);
  }
  static const std::set<std::string> kNone;
  for (const auto& kv : services) {
    const ServiceInput& in = kv.second;
    const std::set<std::string>& only = in.flags.only != nullptr ? *in.flags.only : kNone;
    const std::set<std::string>& deleting = in.flags.deleting != nullptr ? *in.flags.deleting : kNone;
    const std::set<std::string>& reprovisioning =
        in.flags.reprovisioning != nullptr ? *in.flags.reprovisioning : kNone;
    auto e = entries_.find(kv.first);
    bool reuse = e != entries_.end() && now < e->second.valid_until && SameGoal(e->second.goal, in.goal) &&
                 e->second.reprovision == in.flags.reprovision && e->second.starting == in.flags.starting &&
                 e->second.has_only == (in.flags.only != nullptr) && e->second.only == only &&
                 e->second.deleting == deleting && e->second.reprovisioning == reprovisioning &&
                 e->second.fingerprint == in.fingerprint &&
                 e->second.count == in.instances.size();
    if (reuse) {
      ++reused_;
      actions.insert(actions.end(), e->second.actions.begin(), e->second.actions.end());
      continue;
    }
    ++planned_;
    Entry fresh;
    fresh.goal = in.goal;
    fresh.reprovision = in.flags.reprovision;
    fresh.starting = in.flags.starting;
    fresh.has_only = in.flags.only != nullptr;
    fresh.only = only;
    fresh.deleting = deleting;
    fresh.reprovisioning = reprovisioning;
    fresh.fingerprint = in.fingerprint;
    fresh.count = in.instances.size();
    std::vector<const InstanceState*> of_service;
    of_service.reserve(in.instances.size());
    for (const InstanceState* i : in.instances) {
      if (i->state != "destroyed"sv) of_service.push_back(i);
    }
    PlanService(in.goal, of_service, in.flags, now, fresh.actions);
    DropStartsOfDeleted(&fresh.actions, 0);
    fresh.valid_until = ValidUntil(in.goal, of_service, now);
    actions.insert(actions.end(), fresh.actions.begin(), fresh.actions.end());
    entries_[kv.first] = std::move(fresh);
  }
  return actions;
}

}  // namespace mariposa::convergence
