// The planner: a pure function from goal and actual state to the next step
// of actions (QUEUE.md). No I/O, no clock of its own; thread-safe.
//
// Status: a first slice of issue 4 — scale up/down with the victim order of
// QUEUE.md, replacement of failed, stopped, unknown-server and vanished
// instances, removal of services that left the manifest, and one rolling
// reprovision step bounded by `rolling` and `max_surge` in QUEUE.md's order.
// Canary and user filters arrive as `reprovision_only`; the replacement
// budget and crash-loop pauses as a Throttle over the plan. Not yet:
// placement hints, agents.
#ifndef MARIPOSA_CONVERGENCE_PLANNER_H_
#define MARIPOSA_CONVERGENCE_PLANNER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"

namespace mariposa::convergence {

// One instance as observed (VMAPI state plus health). The fields every plan
// reads come first, so that a plan over 100,000 instances touches as few
// cache lines of each as it can (P1); what only the sender, the verdicts and
// status read follows.
struct InstanceState {
  // Read by every plan.
  std::string uuid;
  std::string service;
  std::string state;   // provisioning running stopped failed destroyed unknown
  // Its readiness checks' worst state (unknown starting healthy unhealthy);
  // "unknown" when it has none (`checked` false: ready after start.window).
  std::string health;
  // Its liveness checks' worst state; "" when not read apart (the same as
  // `health`: every check is both, the default), "none" when it has no
  // liveness checks (no check replaces it).
  std::string liveness;
  std::string spec_hash;
  std::string image_uuid;
  int64_t version = 0;  // number of the project version it was created for
  absl::Time created;
  // Seen by the controller (Reconciler): running at this spec and image
  // since, healthy since. InfinitePast: not tracked (created counts).
  absl::Time up_since = absl::InfinitePast();
  absl::Time healthy_since = absl::InfinitePast();
  absl::Time preserved_at = absl::InfinitePast();  // state "preserved": when (its mariposa.preserved tag)
  bool checked = false;  // it has readiness checks: ready means healthy
  // Uses meta values that changed since it was created (meta_drift.h):
  // outdated like an older spec.
  bool stale_meta = false;
  // Was created by a version whose health checks differ from the goal's
  // (HealthSpecFor): it keeps running those checks, and is outdated like an
  // older spec, so a changed check rolls out as Kubernetes probes do.
  bool stale_checks = false;
  // Mounts a copy of one of the project's volumes that was deleted outside
  // Mariposa (MountsOfEarlierCopy): outdated like an older spec, replaced
  // by the operator's `reprovision` (no rollout starts on its own).
  bool stale_mount = false;
  bool delegate_dataset = false;  // has a delegated ZFS dataset (can be reprovisioned keeping its data)
  bool firewall_enabled = false;  // VMAPI's firewall_enabled (set in place too)
  // Out of CNS's service records: its customer_metadata triton.cns.status
  // is "down" (set by Mariposa, or in the instance by hand).
  bool cns_down = false;
  int exit_status = -1;  // VMAPI's exit_status once its process exited (a run's outcome)
  std::string server_uuid;

  // Read by the sender, the verdicts and status.
  std::string alias;   // <project>-<service>-<ordinal>
  std::string owner_uuid;  // its Triton account (VMAPI's owner_uuid)
  std::string meta_hash;  // its tag mariposa.meta
  std::string cns;        // its tag triton.cns.services (set in place: DecideRetags)
  std::string firewall;   // its tag mariposa.firewall (projects/firewall.h; set in place too)
  // Mariposa's hold on its discovery (internal_metadata mariposa:discovery,
  // "<time> <why>"; decide.h's DiscoveryHold): "" when Mariposa holds none.
  std::string discovery;
  // Changed by hand in VMAPI since Mariposa made it (observer.h's
  // kTagMade): "package", "tags", "metadata" joined by '+'; "" when not
  // (or not known). Put back in place (DecideRetags).
  std::string hand_changed;
  std::vector<std::string> networks;  // the uuids of the networks its NICs are on
  std::string run;       // its tag mariposa.run: the run (task uuid) of a scheduled or event service
  absl::Time modified = absl::InfinitePast();  // VMAPI's last_modified (orders change-feed items)
  std::string version_uuid;
  std::string ip;        // primary NIC address
  std::string nic;       // primary NIC's interface (net0)
  struct Nic {
    std::string network_uuid, interface, ip;
  };
  std::vector<Nic> nics;  // every NIC, when it has more than one
};

struct ServiceGoal {
  std::string name;
  int64_t count = 1;
  std::string spec_hash;
  int rolling = 1;
  int max_surge = 1;
  // With no health checks, a running instance is ready once it has run this
  // long (the service's start.window).
  absl::Duration start_window = absl::Seconds(60);
  // update.min_healthy_time: how long a rollout waits after an instance
  // became ready before it counts it.
  absl::Duration min_healthy_time = absl::ZeroDuration();
  // Stopped by a stop task: running instances are stopped, none is created
  // or replaced until a start task.
  bool stopped = false;
  // restart.condition: which broken instances are replaced. on-failure:
  // failed, stopped without being asked, or failing their checks;
  // on-cn-restart: on a server that does not answer (state unknown). One
  // left broken keeps its place in `count` (nothing is created for it).
  bool restart_on_failure = true;
  bool restart_on_cn = true;
  // stop.preserve_stopped: instances taken out of service are stopped and
  // kept (tagged mariposa.preserved, state "preserved", counted nowhere)
  // instead of destroyed. on-failure: broken ones; always: also those a
  // scale-down or a replace rollout removes. At most `preserve_keep` are
  // kept per service (the oldest beyond that are destroyed).
  std::string preserve = "never";  // never | on-failure | always
  int preserve_keep = 3;
  // update.strategy reprovision: outdated instances with a delegate dataset
  // are reprovisioned in place (kReprovision), `rolling` at a time, while
  // count - rolling stay ready; those without one are replaced first.
  bool in_place = false;
  // In place only: the image the service resolves to. An instance on
  // another image is outdated (a reprovision that did not finish).
  std::string image_uuid;
};

// The instance does not run what the goal says: an older spec, or meta
// values that changed since it was created.
bool Outdated(const InstanceState& i, const ServiceGoal& goal);
// Is `i` broken in a way its service's restart.condition replaces?
bool Restarts(const ServiceGoal& goal, const InstanceState& i);

struct PlanInput {
  std::map<std::string, ServiceGoal> services;
  std::vector<InstanceState> instances;
  // Services whose instances at another spec should be replaced now.
  std::set<std::string> reprovision;
  // Services of `reprovision` whose replacement is limited to these instance
  // uuids (the user's filters and the canary); absent = every old instance.
  std::map<std::string, std::set<std::string>> reprovision_only;
  // Services with an active start task: their stopped instances are started
  // (not replaced).
  std::set<std::string> starting;
  // Instances with a delete already sent (a job in flight): going away. They
  // get no other action, are neither live nor ready, but while they still
  // run they count toward the count + max_surge ceiling of new creates.
  std::set<std::string> deleting;
  // Instances with a reprovision in flight: live, not ready, no other action.
  std::set<std::string> reprovisioning;
};

// kPreserve: take an instance out of service without destroying it (tag it
// mariposa.preserved, stop it when it runs); it counts as a removal.
// kReprovision: VMAPI reprovision in place (update.strategy: reprovision).
// kRetag: an instance's tags set in place (reason "cns-names"), never by Plan.
// kDiscovery: an instance taken out of CNS's records in place (its
// triton.cns.status "down", reason "down: <why>") or put back ("up: <why>"),
// never by Plan (decide_discovery.cc).
enum class ActionKind { kCreate, kDelete, kStop, kStart, kPreserve, kReprovision, kRetag, kDiscovery };

// The kind as a word ("create", "delete", …), for logs and tests.
inline const char* ActionKindName(ActionKind k) {
  switch (k) {
    case ActionKind::kCreate: return "create";
    case ActionKind::kDelete: return "delete";
    case ActionKind::kStop: return "stop";
    case ActionKind::kStart: return "start";
    case ActionKind::kPreserve: return "preserve";
    case ActionKind::kReprovision: return "reprovision";
    case ActionKind::kRetag: return "retag";
    case ActionKind::kDiscovery: return "discovery";
  }
  return "?";
}

// Removes the instance from the service: a delete, or a preserve.
inline bool Removes(ActionKind k) { return k == ActionKind::kDelete || k == ActionKind::kPreserve; }

struct Action {
  ActionKind kind;
  std::string service;
  std::string instance;  // for deletes, stops and starts
  // scale-up, scale-down, replace-broken, remove-broken, reprovision,
  // service-removed, preserved-expired, stop, start
  std::string reason;
  std::string run;  // a create or delete of a run's instance: the run (task uuid); decide_runs.cc
  bool operator==(const Action& o) const {
    return kind == o.kind && service == o.service && instance == o.instance && reason == o.reason && run == o.run;
  }
};

// The actions of the next step. Creates use the goal's spec. During a
// reprovision an old instance is deleted only while `count` instances stay
// ready (count - rolling when max_surge is 0), and live instances never
// exceed count + max_surge, whichever order the step's actions land in. An instance
// counts as ready when it is running and healthy, or running with health
// "unknown" and older than its service's start window (no checks defined).
std::vector<Action> Plan(const PlanInput& input, absl::Time now);

// What a service's plan depends on besides its goal and instances.
struct ServiceFlags {
  bool reprovision = false;                      // a rollout replaces its old-spec instances now
  const std::set<std::string>* only = nullptr;   // the rollout is limited to these instances
  bool starting = false;                         // a start task starts its stopped instances
  const std::set<std::string>* deleting = nullptr;  // instances with a delete in flight
  const std::set<std::string>* reprovisioning = nullptr;  // instances with a reprovision in flight
};

// Plan, service by service, keeping each service's actions: a service whose
// goal, flags and instances equal the previous call's, and whose plan cannot
// change by time alone (no running instance without checks crosses its start
// window), gets its previous actions back without being planned
// (PERFORMANCE.md P1: a plan after a one-service change). Instances are
// compared by a 64-bit fingerprint (and their number), so it keeps no copy
// of them; with that caveat it gives exactly what Plan gives. Not
// thread-safe; one per project.
// A 64-bit hash of the fields a plan reads from each instance, in order.
uint64_t InstancesFingerprint(const std::vector<const InstanceState*>& instances);

class PlanCache {
 public:
  struct ServiceInput {
    ServiceGoal goal;
    ServiceFlags flags;
    std::vector<const InstanceState*> instances;  // the service's (not destroyed), valid during Plan
    uint64_t fingerprint = 0;  // InstancesFingerprint(instances): equal means unchanged
  };
  // `services` by name; `removed`: instances of services no longer in the
  // goal (each gets a service-removed delete).
  std::vector<Action> Plan(const std::map<std::string, ServiceInput>& services,
                           const std::vector<const InstanceState*>& removed, absl::Time now);
  // Services planned and reused by the last call.
  int planned() const { return planned_; }
  int reused() const { return reused_; }

 private:
  struct Entry {
    ServiceGoal goal;
    bool reprovision = false, starting = false, has_only = false;
    std::set<std::string> only, deleting, reprovisioning;  // the flags' sets, kept
    uint64_t fingerprint = 0;
    size_t count = 0;
    absl::Time valid_until;
    std::vector<Action> actions;
  };
  std::map<std::string, Entry> entries_;
  int planned_ = 0, reused_ = 0;
};

// Reprovision candidates of a service in QUEUE.md's order: running instances
// at another spec, oldest project version first, then oldest instance.
std::vector<const InstanceState*> ReprovisionOrder(const std::vector<InstanceState>& instances,
                                                   const ServiceGoal& goal);
// The same over the service's own instances (cheaper with many services).
std::vector<const InstanceState*> ReprovisionOrder(const std::vector<const InstanceState*>& of_service,
                                                   const ServiceGoal& goal);

// Limits the executor puts on a service's automatic work.
struct ServiceThrottle {
  int64_t replace_budget = -1;  // replacements of broken instances allowed now; -1 = no limit
  bool paused = false;          // crash-looping: no creates, broken instances are kept
  bool backoff = false;         // creates wait for the backoff after a failure
};

// The actions that may run now; the rest go to `held` (in plan order).
std::vector<Action> Throttle(const std::vector<Action>& actions, const std::map<std::string, ServiceThrottle>& limits,
                             std::vector<Action>* held);

// Ready: running and healthy, or running with health "unknown" and older
// than the start window when the service has no checks.
// With `min_healthy`, it must have been so for that long (update.min_healthy_time).
bool InstanceReady(const InstanceState& i, absl::Time now, absl::Duration start_window,
                   absl::Duration min_healthy = absl::ZeroDuration());
// When it became ready (InfiniteFuture: it is not), as InstanceReady sees it.
absl::Time ReadySince(const InstanceState& i, absl::Duration start_window);
// Broken: failed, stopped unasked, on a down server, or running and failing
// its liveness checks.
bool InstanceBroken(const InstanceState& i);
// Fails its liveness checks (InstanceState::liveness). Compared as
// string_views: every plan asks this of every instance, and a length that
// differs ("unknown", "healthy") answers without a memcmp (P1).
inline bool FailsLiveness(const InstanceState& i) {
  constexpr std::string_view kUnhealthy = "unhealthy";
  return i.liveness.empty() ? std::string_view(i.health) == kUnhealthy : std::string_view(i.liveness) == kUnhealthy;
}
// Fails any of its checks, readiness or liveness.
inline bool FailsChecks(const InstanceState& i) {
  return std::string_view(i.health) == std::string_view("unhealthy") || FailsLiveness(i);
}

// Instances of a service in QUEUE.md's scale-down victim order: unhealthy
// first, then not yet started, then oldest version, then oldest instance.
std::vector<const InstanceState*> VictimOrder(std::vector<const InstanceState*> live);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_PLANNER_H_
