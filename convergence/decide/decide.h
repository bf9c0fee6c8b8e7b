// Decide: the convergence engine's one decision, a pure function of a
// project's Snapshot (everything Gather read: goal, actual state, health,
// tasks, freezes, jobs in flight, failure history) and `now`. It returns
// what to do (steps with their task and instance name, task transitions,
// automatic tasks to add, agent installs, events), what it holds and why,
// the failure history to remember, and a verdict per service with Reason
// and Fix, plus the project's problems stated as Error / Reason / Fix /
// Impact. No I/O, no clock, no randomness of its own; thread-safe.
//
// The reconciler gathers, decides and executes; the State service gathers
// and decides only, so `status`, `--wait`, metrics and the controller share
// one definition of "converged" (docs/concepts.md, "Verdicts").
#ifndef MARIPOSA_CONVERGENCE_DECIDE_H_
#define MARIPOSA_CONVERGENCE_DECIDE_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "convergence/decide/agents.h"
#include "convergence/decide/catalog.h"
#include "convergence/decide/goal.h"
#include "convergence/decide/placement.h"
#include "convergence/decide/planner.h"
#include "convergence/decide/throttles.h"
#include "convergence/triton/clients.h"
#include "projects/store.h"

namespace mariposa::convergence {

// What the controller remembers of a service between syncs (forgotten when
// its spec changes: a new spec may fix what failed).
struct ServiceMemory {
  std::string spec_hash;
  ServiceHistory history;                           // backoff, crash loop, replacement budget
  absl::Time budget_event = absl::InfinitePast();   // last "budget exceeded" event
  std::string pause_reason;                         // of the last crash loop
  std::string install_image;                        // agents: the image the failures below are for
  std::map<std::string, std::string> install_failures;  // agents: server -> last install error
  std::map<std::string, int> install_attempts;          // agents: server -> failed installs in a row
  std::vector<absl::Duration> install_times;            // agents: the last successful installs' durations
  absl::Time install_retry = absl::InfinitePast();      // agents: no install before (backoff)
  // agents: the servers a user's reprovision task (forced reinstall of the
  // current image) has reinstalled, by task uuid; kept while the task is open.
  std::map<std::string, std::set<std::string>> reinstalled;
  // Importing the service's image from the source: the last failure and
  // when to try again.
  std::string import_error;
  int import_failures = 0;
  absl::Time import_retry = absl::InfinitePast();
  // Instances changed by hand in VMAPI: uuid -> how many put-backs of them
  // ended (DecideRetags stops after kMaxPutBacks and says so).
  std::map<std::string, int> put_backs;
  // What the last Decide saw: the goal's count and the service's instances
  // (a create at the same count after instances vanished replaces one
  // destroyed out of band, not an apply's scale). -1: not known.
  int64_t last_count = -1, last_seen = -1;
};

// A Triton API that could not be read, since when.
struct ApiProblem {
  std::string api;  // VMAPI, CNAPI, IMGAPI
  std::string url;
  std::string error;
  absl::Time since = absl::InfinitePast();
};

// A job that ended since the last sync.
struct FinishedJob {
  JobRecord job;
  bool ok = false;
  std::string error;
  bool seen_by_pump = false;  // seen ending by a pump, counted by the sync after it
};

struct ControllerPolicy {
  absl::Duration backoff_base = absl::Seconds(1);
  absl::Duration backoff_cap = absl::Minutes(2);
  absl::Duration replace_interval = absl::Minutes(1);  // the replacement budget's period
  int max_jobs_per_project = 32;
  // An actual state read longer ago than this is too old for a verdict
  // (`status` answers from the last observation, never waiting on Triton).
  absl::Duration stale_after = absl::Seconds(20);
  // stop.drain when a service does not say: twice the CNS TTL mariposad is
  // told (--cns-ttl), 0 without.
  absl::Duration default_drain = absl::ZeroDuration();
};

// A firewall rule the project owns in FWAPI.
struct OwnedRule {
  std::string uuid, name, hash;  // name and hash from its description's marker
  std::string rule;              // the text as FWAPI holds it
  bool enabled = true;
  bool log = false;
  std::string description;       // as FWAPI holds it (the marker and the manifest's description)
};

struct Snapshot {
  ProjectRecord project;
  std::shared_ptr<const ProjectGoal> goal;         // null: no version yet, or the project is being deleted
  std::map<std::string, int64_t> version_numbers;  // version uuid -> number
  bool actual_known = true;                        // false: VMAPI could not be read (api_problems says why)
  // When the actual state (instances) was read: now for a sync; the last
  // sync's observation for `status` (Reconciler::Inspect). InfinitePast:
  // not known. Older than policy.stale_after: every verdict is unknown.
  absl::Time observed_at = absl::InfinitePast();
  // How long each Triton API's last call took (for a stale observation's
  // reason: which API is slow).
  std::map<std::string, absl::Duration> api_latency;
  std::vector<InstanceState> instances;            // health filled in
  // The goals of the versions that instances at another spec than the
  // goal's were created from, by version uuid: their health checks are the
  // ones they run until replaced (HealthSpecFor).
  std::map<std::string, std::shared_ptr<const ProjectGoal>> instance_goals;
  std::vector<TaskRecord> tasks;                   // open tasks, oldest first
  std::map<std::string, ServiceMemory> memory;     // by service
  std::vector<JobRecord> in_flight;                // jobs still running
  std::vector<FinishedJob> finished;               // jobs that ended since the last sync
  std::map<std::string, triton::Image> images;     // service -> its image, resolved
  std::map<std::string, std::string> image_errors;  // service -> why its image cannot be resolved
  // service -> its image, found only in the image source (Image::source):
  // imported before anything of the service is created or installed.
  std::map<std::string, triton::Image> imports;
  // What each service's instances are made of (catalog.h, meta_drift.h);
  // spec_errors says why a service's cannot be chosen ("package: …",
  // "networks: …", "compute_type: …"), which holds its creates.
  struct Recipe {
    std::optional<Sized> sized;  // the package and its dimensions; absent without PAPI
    std::vector<std::string> networks;     // uuids; empty: the daemon's network
    std::string brand;                     // "": not chosen (image not resolved)
    std::string meta_hash;                 // "": the service uses no meta
  };
  std::map<std::string, Recipe> recipes;
  std::map<std::string, std::string> spec_errors;
  // Services whose creates wait for the project's own resources being made
  // (a fabric network, a volume): service -> what (a hold, not a failure).
  std::map<std::string, std::string> resource_waits;
  std::map<std::string, std::string> network_names;  // NAPI name -> uuid (for health checks' network)
  std::map<std::string, std::set<std::string>> filter_images;  // reprovision task -> image uuids of --image
  std::map<std::string, std::string> meta;         // effective meta: store over the manifest's defaults
  std::vector<PlacementCandidate> labelled_vms;    // the owner's VMs carrying tags that label rules name
  bool servers_known = false;                      // CNAPI read (agent services only)
  // Agent services the version before the current one had and it does not
  // (or, when the project is being deleted, every agent service): service
  // -> the agent's name and update.rolling. They are uninstalled.
  struct RemovedAgent {
    std::string name;
    int rolling = 1;
    // Its servers: selection as agents.h's AgentGoal; only these are
    // uninstalled (an excluded server's copy is not the service's).
    std::string select = "all";
    std::vector<std::string> servers, exclude;
  };
  std::map<std::string, RemovedAgent> removed_agents;
  std::vector<triton::Server> servers;
  // FWAPI (the manifest's firewall rules): whether mariposad has its
  // address, and the rules the project owns there (their description's
  // marker: projects/firewall.h) as read for this sync; nullopt when not
  // read (no address, no rule wanted or owned, or the read failed:
  // firewall_error says why). firewall_failures: rule name -> why the last
  // change to it failed.
  bool fwapi = false;
  std::string firewall_owner;  // the account the rules belong to (the project's)
  std::optional<std::vector<OwnedRule>> firewall;
  std::string firewall_error;
  std::map<std::string, std::string> firewall_failures;
  // NAPI fabric (the manifest's fabric:): the account's VLANs and the
  // networks the project owns (their description's marker) as read for
  // this sync; nullopt when not read (no NAPI, nothing wanted or owned, or
  // the read failed: fabric_error). fabric_failures: network name (or
  // "vlan") -> why its last change failed.
  struct FabricSeen {
    std::vector<triton::FabricVlan> vlans;
    std::vector<triton::FabricNetwork> networks;  // the project's own
  };
  std::optional<FabricSeen> fabric;
  std::string fabric_error;
  std::map<std::string, std::string> fabric_failures;
  // VOLAPI (the manifest's volumes:): whether mariposad has its address,
  // and the account's volumes named as the project's (projects/volumes.h)
  // as read for this sync; nullopt when not read (no address, nothing wanted
  // or owned, or the read failed: volumes_error). volume_failures: volume
  // name -> why its last change failed.
  // Runs of scheduled and event services that ended, newest first (read
  // while the goal has such services; `tasks` has the open ones).
  std::vector<TaskRecord> finished_runs;
  bool volapi = false;
  // The volumes of the version current when the project's deletion was
  // asked (the goal is null then): their deletion_policy says which go.
  std::map<std::string, VolumeSpec> volumes_at_deletion;
  std::optional<std::vector<triton::Volume>> volumes;
  std::string volumes_error;
  std::map<std::string, std::string> volume_failures;
  // The account's default fabric network (catalog.h DefaultFabricNetwork),
  // read while a goal volume names no network: its uuid and name, or why
  // it is not known (default_fabric.uuid empty).
  triton::Network default_fabric;
  std::string default_fabric_error;
  // A failed change to a rule, network ("vlan" for the VLAN) or volume is
  // not tried again before this time (ChangeBackoff after its attempts).
  std::map<std::string, absl::Time> firewall_retry_at, fabric_retry_at, volume_retry_at;
  std::vector<ApiProblem> api_problems;
  double jitter = 0.5;  // in [0, 1], drawn by Gather (backoff spread)
  int global_jobs_free = 1 << 30;  // jobs any project may still start (the daemon-wide limit)
  ControllerPolicy policy;
};

// One thing to do now.
struct Step {
  Action action;
  std::string task;   // the task it works for; "" = none; "new:<service>" = the automatic task in new_tasks
  // creates: <project>-<service>-<ordinal>, the lowest free ordinal;
  // discovery steps: the instance's (the pump sends them without a listing)
  std::string alias;
};

// A discovery step's reason when it puts a ready instance back into CNS.
inline constexpr char kPutBackReady[] = "up: ready";

// Whether a step the job window holds goes to the backlog the pump sends
// as jobs end (Decision::backlog): creates, and put-backs of ready
// instances into CNS (a mass scale's second job per instance; one sync
// each handful of them cost the workers more than the jobs). Anything that
// changes ends the pump, so a put-back is not sent after its instance
// stopped being ready.
inline bool InBacklog(const Step& st) {
  return st.action.kind == ActionKind::kCreate ||
         (st.action.kind == ActionKind::kDiscovery && st.action.reason == kPutBackReady);
}

// Work the plan wants that is not done now, and why.
struct Held {
  Action action;
  std::string why;  // frozen, crash loop, backoff, budget, image, placement, queue, job window
};

struct TaskChange {
  std::string task;
  std::string state;  // active completed failed terminated
  std::string note;   // the task's error or note
};

// update.auto_rollback: the executor rolls the project back, fails `task`
// with `why` and queues a reprovision of `services` back.
struct Rollback {
  std::string task;
  std::string to_version;
  std::string expected_current;
  std::vector<std::string> services;
  std::string why;
};

// An agent service's view of one server (status -v, core check).
struct AgentServer {
  std::string server, hostname;
  std::string version, image_uuid;  // of the agent there; "" = not installed
  // current outdated installing failed skipped unreachable excluded
  std::string state;
  std::string error;  // failed, skipped: the last install error
};

// An agent to remove from a server (its service left the manifest).
struct AgentUninstall {
  std::string service;  // the removed service
  std::string server;
  std::string name;     // the agent's name
};

struct AgentInstall {
  std::string service;
  std::string server;
  std::string image_uuid;
  std::string label;  // name version
  std::string task;   // as Step::task
};

// An image to import into IMGAPI from its source (AdminImportRemoteImage).
struct ImageImport {
  std::string image_uuid;
  std::string label;  // name@version
  std::string source;
  int64_t size = 0;
  std::string service;  // the first service waiting for it
  std::string task;     // as Step::task
};

enum class VerdictState { kConverged, kProgressing, kDegraded, kPaused, kFailed, kUnknown };
const char* VerdictName(VerdictState v);

struct ServiceVerdict {
  VerdictState state = VerdictState::kUnknown;
  std::string reason;  // short, for the status table
  std::string fix;     // "" when nothing is for the user to do
  int64_t desired = 0;
  int64_t ready = 0;         // running the current spec and ready (InstanceReady: healthy when checked,
                             // else up for start.window; and update.min_healthy_time)
  int64_t old_spec = 0;      // live instances of an older spec (stale meta included)
  int64_t stale_meta = 0;    // of those, at the current spec but with meta values changed since
  int64_t broken = 0;        // failed, on a down server, unhealthy, or stopped unasked
  int64_t stopped = 0;       // stopped by a stop task
  int64_t provisioning = 0;
  int64_t unhealthy = 0;     // running, checks failing
  int64_t checks_pending = 0;  // running, checks not passed yet (starting or unknown)
  int64_t starting = 0;        // running, no checks, not up for start.window yet
  bool stopped_by_user = false;
  bool agent = false;
};

// A problem as RFD 40's `imgapiadm status` states it.
struct Problem {
  std::string kind;     // triton-unreachable image-missing image-import-failing crash-loop budget-exceeded agent-install-failing
                        // placement older-spec store
  std::string service;  // "" for the project
  std::string error, reason, fix, impact;
};

// A change to one of the project's FWAPI rules (Decide: DecideFirewall).
struct FirewallChange {
  enum class Kind { kCreate, kUpdate, kDelete };
  Kind kind = Kind::kCreate;
  std::string name;
  triton::FwRule rule;  // uuid and owner always; text, description, enabled for create and update
  std::string drift;    // an update that puts back what was changed in FWAPI by hand: what was
  bool held = false;    // failed before: waits for its backoff (Snapshot's retry_at); not sent
};

// A change to the project's fabric in NAPI (DecideFabric), in the order to
// make them: the VLAN before its networks, networks before the VLAN goes.
struct FabricChange {
  enum class Kind { kCreateVlan, kCreateNetwork, kUpdateNetwork, kDeleteNetwork, kDeleteVlan };
  Kind kind = Kind::kCreateNetwork;
  std::string name;  // the manifest's network name ("" for the VLAN)
  triton::FabricVlan vlan;
  triton::FabricNetwork network;  // uuid for update and delete; all of it for create
  bool held = false;  // failed before: waits for its backoff (Snapshot's retry_at); not sent
  std::string drift;  // an update that puts back what was changed in NAPI by hand: what was
};

// The services of the goal that mount volume `name` (its manifest name).
std::vector<std::string> MountingServices(const Snapshot& s, const std::string& name);
// The instances (aliases) that mount a copy of volume `name` that is gone:
// of the current spec and made before `have` (VOLAPI's copy; nullptr:
// none). An instance is made only once its volumes are ready, so one older
// than the volume mounted an earlier one.
std::vector<std::string> MountsOfEarlierCopy(const Snapshot& s, const std::string& name, const triton::Volume* have);

// The problem of something the project owns outside VMAPI that was changed
// by hand (`what` names it, `api` holds it, `drift` says how; `key` is the
// manifest's entry): put back at this sync.
Problem DriftProblem(const std::string& kind, const std::string& what, const std::string& api,
                     const std::string& drift, const std::string& key, const std::string& impact);

// A fabric network as `status` shows it: "in place", "to create", "to
// update", "to delete", "waiting: N instances still on it", "cannot change
// in place", "unknown"; `error`: why its last change failed.
struct FabricNetworkView {
  std::string name, napi_name, subnet, uuid, state, error;
};

// A change to one of the project's volumes in VOLAPI (DecideVolumes).
struct VolumeChange {
  enum class Kind { kCreate, kDelete };
  Kind kind = Kind::kCreate;
  std::string name;      // the manifest's
  triton::Volume volume;  // owner, name, size, networks for a create; uuid for a delete
  bool held = false;      // failed before: waits for its backoff (Snapshot's retry_at); not sent
  // A create of a volume deleted outside Mariposa while instances mounted
  // it: which (its data is lost; the volume.created event says so).
  std::string lost;
};

// A volume as `status` shows it: "ready", "to create", "creating", "to
// delete", "deleting", "deleted", "waiting: …", "retained (not in the
// manifest)", "retained (deletion_policy: retain)", "failed", "not applied"
// (no VOLAPI address), "unknown" (VOLAPI not read); `error`: why its last
// change failed.
struct VolumeView {
  std::string name, volapi_name, network, uuid, state, error;
  int64_t size_mib = 0;
  std::vector<std::string> mounted_by;  // VMs that mount it (VOLAPI's refs)
};

// One rule as `status` shows it: "in place", "to create", "to update",
// "to delete", "not applied" (no FWAPI address) or "unknown" (FWAPI could
// not be read); `error`: why the last change failed.
struct FirewallRuleView {
  std::string name, summary, uuid, state, error;
};

// A scheduled or event service's runs as `status` shows them.
struct RunsView {
  std::vector<std::string> active;  // "RUN: i/n ended", oldest first
  std::string last;                 // "RUN completed 2026-…: …" ("" = none yet)
  std::string last_state;           // completed | failed | terminated | ""
  std::optional<absl::Time> next;   // scheduled: the next fire time
  std::string held;                 // why a due run is not started ("" = none)
};

struct Decision {
  std::vector<Step> steps;
  std::map<std::string, RunsView> runs;  // by service: scheduled and event services
  std::vector<Held> held;
  // The creates and put-backs into CNS among `held` that only the job
  // window held (InBacklog), named, in order: the executor may send them as
  // job slots free up, without deciding again, until anything about the
  // project changes.
  std::vector<Step> backlog;
  std::vector<TaskChange> task_changes;
  std::vector<TaskRecord> new_tasks;  // automatic tasks to add (admission decides again, in the store)
  std::vector<Rollback> rollbacks;
  std::vector<AgentInstall> installs;
  std::vector<AgentUninstall> uninstalls;
  std::vector<ImageImport> imports;
  std::vector<std::pair<std::string, TaskProgress>> job_progress;  // finished job uuid -> its task's progress
  std::vector<EventRecord> events;
  // The first `job_events` of `events` are what the jobs that ended tell:
  // the store writes them with the jobs' end, in one transaction (status,
  // which reads the jobs in flight, never shows a put-back done before its
  // event is in the log).
  size_t job_events = 0;
  std::map<std::string, ServiceMemory> memory;  // to remember (every goal service)
  std::map<std::string, ServiceVerdict> verdicts;
  std::map<std::string, AgentPlan> agent_plans;
  std::map<std::string, std::vector<AgentServer>> agent_servers;  // by service: every set-up server
  std::vector<Problem> problems;
  std::vector<FirewallChange> firewall_changes;
  std::vector<FabricChange> fabric_changes;
  std::vector<FabricNetworkView> fabric_networks;  // every network wanted or owned, by name
  std::vector<FirewallRuleView> firewall_rules;  // every rule wanted or owned, by name
  std::vector<VolumeChange> volume_changes;
  std::vector<VolumeView> volumes;  // every volume wanted or owned, by name
  // Every wanted rule is in FWAPI as written: instances may turn their
  // firewall on (before, an ALLOW rule not made yet would cut traffic).
  bool firewall_in_place = true;
  int64_t leftover = 0;        // instances of services that left the manifest
  bool converged = false;      // every service converged, nothing left over, actual state known
  bool delete_project = false;  // deleting, and every instance is gone
  // The earliest time this decision changes by the clock alone (an
  // instance of a service discovered through CNS becoming ready, a drain
  // ending): the reconciler decides again then, not at the next resync.
  absl::Time next_change = absl::InfiniteFuture();
};

// `cache` (optional, one per project) lets the plan reuse the actions of
// services whose goal and instances did not change; the decision is the
// same with or without it.
Decision Decide(const Snapshot& s, absl::Time now, PlanCache* cache = nullptr);

// The firewall part of Decide: the rules to create, update and delete in
// FWAPI, each rule's view and the problems (no FWAPI address, FWAPI not
// read, a failing change). Sets d->firewall_in_place.
void DecideFirewall(const Snapshot& s, Decision* d);

// The fabric part of Decide: the VLAN and networks to create, update and
// delete in NAPI (a network only once no instance of the project is on it),
// each network's view and the problems.
void DecideFabric(const Snapshot& s, Decision* d);
// The uuid of the project's fabric network `name` (the manifest's name), or
// "" while it is not made.
std::string FabricNetworkUuid(const Snapshot& s, const std::string& name);

// The volumes part of Decide: the volumes to create and delete in VOLAPI
// (a delete only once no VM mounts it, and only when the manifest says so),
// each volume's view and the problems.
void DecideVolumes(const Snapshot& s, Decision* d);
// Whether a volume's state counts as settled for convergence.
bool VolumeSettled(const VolumeView& v);
// The project's volume `name` (the manifest's) as VOLAPI holds it, or null.
const triton::Volume* FindVolume(const Snapshot& s, const std::string& name);
// Whether the project's volume of that VOLAPI name is to be deleted: its
// entry says remove: true, or the project is being deleted and its
// deletion_policy (or --delete-volumes) says so.
bool VolumeToBeDeleted(const Snapshot& s, const std::string& volapi_name);

// Mariposa's hold on an instance's discovery (InstanceState::discovery):
// since when it keeps it out of CNS, and why. Services with CNS names only
// (a service without has no discovery to follow).
struct DiscoveryHold {
  absl::Time since = absl::InfinitePast();
  std::string why;
};
std::optional<DiscoveryHold> ParseDiscoveryHold(const std::string& value);
// Whether the instances of `service` are discovered through CNS (it has CNS
// names, runs to no end, and the project is not being deleted): discovery
// then follows their readiness and a removal drains them first.
bool DiscoveredThroughCns(const Snapshot& s, const std::string& service);
// Whether a new instance of `service` is made out of discovery, to be put
// back once ready: discovered through CNS, and not ready the moment it
// runs — it has a start.window, or readiness checks that run (`checks_run`:
// mariposad has a health monitor). One that is ready once running (no such
// checks, `start: {window: 0s}`) is not held: CNS serves only running
// instances anyway, and a hold costs a VMAPI job per instance.
bool MadeOutOfDiscovery(const Snapshot& s, const std::string& service, bool checks_run);
std::string DiscoveryHoldValue(absl::Time since, const std::string& why);
// A discovery action's reason (ActionKind::kDiscovery): "down: <why>" takes
// the instance out, "up: <why>" puts it back.
struct DiscoveryChange {
  bool down = false;
  std::string why;
};
DiscoveryChange ParseDiscoveryReason(const std::string& reason);
// What a discovery job sent at `at` with `reason` leaves on the instance, as
// VMAPI then holds it (the sender writes the same).
void ApplyDiscoveryChange(const std::string& reason, absl::Time at, InstanceState* i);

// What an instance of `service` should carry in place (not rolled out):
// CNS names, the firewall tag, firewall_enabled.
// A retag's reason says this when it puts back what was changed by hand in
// VMAPI (followed by what: "package, tags, metadata").
inline constexpr char kPutBack[] = "put back, changed in VMAPI by hand: ";

// What a change to an object the project owns (a FWAPI rule, a NAPI network,
// a VOLAPI volume) left undone, from its view's state: "to create" gives
// "is not created"; a state that is no change to make is named as it is.
inline std::string NotDone(const std::string& state) {
  if (state.rfind("to ", 0) == 0) return "is not " + state.substr(3) + "d";
  return "is not in place (" + state + ")";
}

struct InPlaceSettings {
  std::string cns, firewall;
  // nullopt: left as it is (FWAPI not managed, or on while the service's
  // rules are not all in place yet: turning it on then would cut the traffic
  // a missing ALLOW rule allows, turning it off would open what it blocks).
  std::optional<bool> firewall_enabled;
};
// `firewall_in_place`: DecideFirewall's, when known; nullopt: found here,
// and only when the service needs it (the sender's creates and retags).
InPlaceSettings InPlaceFor(const Snapshot& s, std::optional<bool> firewall_in_place, const std::string& service);
// What of `want` instance `i` lacks: "cns-names", "firewall", and what was
// changed by hand in VMAPI ("package", "tags", "metadata"), joined by '+',
// or "" (the reason of its retag).
std::string InPlaceDifference(const InstanceState& i, const InPlaceSettings& want);


// Only the accounting of `s.finished` against `s.memory` (crash-loop
// failures, backoff, install failures, events, per-job task progress): what
// Execute applies at once to requests Triton refused in the same sync, so
// they count exactly like a job that failed later.
Decision CountFinished(const Snapshot& s, absl::Time now);

// The kind of automatic work an action is, as freezes name them ("" for
// start and stop, which any freeze of their scope holds).
std::string WorkKind(const Action& a);

// Nothing will change for the project until something wakes it (an apply, a
// task, a health change, a change feed item): the decision is converged and
// does nothing, no job is in flight or ended, no task is open but freezes,
// and no service reads what the feed does not bring (agents: CNAPI; core
// zones), nor does the project own objects in FWAPI, NAPI or VOLAPI (they
// have no feed: they are read at each resync, so hand edits are found). Watching VMAPI's feed, such a project is not synced at each
// resync (Reconciler::Resync) — at least every relist.
bool Quiet(const Snapshot& s, const Decision& d);

// How long a failed change to FWAPI, NAPI or VOLAPI waits before its next
// attempt: 5 s, doubling with each failure, at most 5 minutes.
absl::Duration ChangeBackoff(int attempts);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_DECIDE_H_
