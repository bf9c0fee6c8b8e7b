// The records the store holds and returns (projects, versions, meta,
// events, tasks, jobs, tokens, leases, …), shared by the parts of
// ProjectStore (store.h).
#ifndef MARIPOSA_PROJECTS_STORE_RECORDS_H_
#define MARIPOSA_PROJECTS_STORE_RECORDS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/change_signal.h"

namespace mariposa {

// Seals secret meta values at rest (auth/sealer.h). `place` binds a sealed
// value to its row ("PROJECT_UUID/KEY").
class SecretCodec {
 public:
  virtual ~SecretCodec() = default;
  virtual std::string Seal(absl::string_view plain, absl::string_view place) const = 0;
  virtual absl::StatusOr<std::string> Unseal(absl::string_view sealed, absl::string_view place) const = 0;
  virtual bool SealedWithCurrentKey(absl::string_view value) const = 0;
};

// An API token: only the sha256 of its secret is kept.
struct TokenRecord {
  std::string id;
  std::string name;
  std::string hash;
  std::string role;
  std::string project;  // "" = every project
  absl::Time created_at;
  absl::Time expires_at = absl::InfiniteFuture();
  std::string created_by;
  absl::Time revoked_at = absl::InfiniteFuture();  // InfiniteFuture: live
  bool revoked() const { return revoked_at != absl::InfiniteFuture(); }
};

// A role for a local Unix user ("user:NAME") or a TLS client certificate
// ("cert:CN"), on one project or ("") every project.
struct GrantRecord {
  std::string subject;
  std::string role;
  std::string project;
  absl::Time created_at;
  std::string created_by;
};

// What the data center holds of a project, read when it is deleted: its
// active instances, and what it owns in FWAPI, NAPI and VOLAPI. `unread`
// names each of those APIs that could not be read ("FWAPI: why"): the
// project may own more there.
struct ProjectHoldings {
  int64_t instances = 0;
  std::vector<std::string> firewall_rules;  // the manifest's names
  struct Network {
    std::string name, uuid;  // the manifest's name, NAPI's uuid
    int vlan_id = 0;
  };
  std::vector<Network> networks;  // fabric networks
  std::vector<int> vlans;         // fabric VLANs
  struct Volume {
    std::string name;                   // the manifest's
    std::vector<std::string> networks;  // the uuids of the networks it is served on
  };
  std::vector<Volume> volumes;
  std::vector<std::string> unread;
  // Anything besides instances, or not known.
  bool OwnsMore() const {
    return !firewall_rules.empty() || !networks.empty() || !vlans.empty() || !volumes.empty() || !unread.empty();
  }
};

struct ProjectRecord {
  std::string uuid;
  std::string name;
  std::string description;
  absl::Time created_at;
  std::string current_version;  // "" before the first apply
  int64_t current_number = 0;
  int service_count = 0;
  bool deleting = false;  // delete requested with --force: instances are being removed first
  // Deleting with --delete-volumes: every volume of the project goes, not
  // only those of deletion_policy delete.
  bool delete_volumes = false;
  std::set<std::string> stopped;  // services a stop task has stopped (until a start task)
  // The Triton account (uuid) the project's instances belong to; fixed at
  // creation. "" only for a project made before accounts were recorded and
  // not yet claimed (ClaimUnownedProjects): mariposad's --owner.
  std::string owner;
};

struct VersionRecord {
  std::string uuid;
  std::string project_uuid;
  int64_t number = 0;
  std::string hash;
  std::string author;
  absl::Time created_at;
  std::vector<std::string> tags;
  std::string origin;  // apply | rollback
  int64_t rolled_back_to = 0;
  std::string message;
  std::vector<std::string> warnings;
  std::string manifest;   // only when asked for
  std::string canonical;  // only when asked for
  int service_count = 0;
};

struct ServiceRecord {
  std::string name;
  std::string service_type;
  std::string compute_type;
  std::string brand;
  std::string image;
  std::string package;
  int64_t count = 0;
  std::string spec_hash;
  std::string spec_json;
  std::string group;  // "" when in no deployment group
};

struct GroupRecord {
  std::string name;
  std::vector<std::string> services;
};

struct MetaRecord {
  std::string key;
  std::string value;
  bool secret = false;
  int64_t cas_id = 0;
  absl::Time updated_at;
};

struct EventRecord {
  int64_t index = 0;
  absl::Time time;
  std::string actor;
  std::string project;
  std::string kind;
  std::string subject;
  std::string detail;
};

// A reconciliation task (QUEUE.md). Times are InfinitePast when unset.
struct TaskRecord {
  std::string uuid;
  std::string project_uuid;
  std::string kind;                   // start stop scale reprovision freeze
  std::vector<std::string> services;  // scope; empty = the whole project
  std::string state = "queued";       // queued active terminating completed failed terminated
  std::string origin = "user";        // user | auto
  std::string trigger;                // apply scale health drift server-down …
  std::string version_uuid;           // the project version it works toward
  absl::Time created_at = absl::InfinitePast();
  absl::Time started_at = absl::InfinitePast();
  absl::Time finished_at = absl::InfinitePast();
  int64_t steps_done = 0, steps_planned = 0;
  int64_t created = 0, deleted = 0, replaced = 0, failed = 0;
  std::string error;
  std::vector<std::string> wait_for;  // tasks this one waits for (FIFO)
  // Freezes: who and why, and the --only kinds of automatic work ("" = all).
  std::string actor;
  std::string reason;
  std::vector<std::string> only;
  std::string auto_kind;              // automatic tasks: replace-unhealthy, scale, reprovision, agent-rollout
  // Reprovision: the user's filters (an instance must match every non-empty
  // list) and the canary size (0 = all).
  std::vector<std::string> filter_versions, filter_images, filter_servers, filter_instances;
  int64_t canary = 0;
  int64_t rolling = 0;  // reprovision: instances replaced at a time (0 = the services' update.rolling)
  // Reprovision: held between steps by `mariposa pause` ("" = running):
  // "<actor> at <time>[: reason]"; resumed_at: the last `mariposa resume`.
  std::string paused;
  absl::Time resumed_at = absl::InfinitePast();
};

// Counters a task's executor adds as it goes (steps_planned is set, not added,
// when >= 0).
struct TaskProgress {
  int64_t steps_done = 0, steps_planned = -1;
  int64_t created = 0, deleted = 0, replaced = 0, failed = 0;
};

// Since when an instance has run, and been healthy, at the spec and image
// it runs (the readiness clocks of start.window and min_healthy_time):
// kept so that a restart or a takeover does not start them again.
// InfiniteFuture: not running / not healthy.
struct InstanceTimes {
  std::string instance;
  std::string spec_hash;
  std::string image_uuid;
  absl::Time up_since = absl::InfiniteFuture();
  absl::Time healthy_since = absl::InfiniteFuture();
  std::string health = "";  // as the project's node last saw it ("" = not checked)
};

// A Triton job Mariposa started and has not seen end yet (a VMAPI job, a
// CNAPI task). Recorded when sent, removed when its end is counted, so a
// restart neither forgets a job nor counts one twice.
struct JobRecord {
  std::string job_uuid;  // VMAPI job uuid or CNAPI task id; "create:<vm uuid>" for a create whose reply was lost
  std::string project_uuid;
  std::string api;       // vmapi | cnapi
  std::string task_uuid;  // the task it works for ("" = none)
  std::string service;
  std::string instance;  // the VM (or, for agent installs, the server)
  std::string alias;
  std::string kind;      // create delete start stop install
  std::string reason;    // the planner's reason (scale-up, replace-broken, reprovision, …)
  absl::Time sent_at = absl::InfinitePast();
};

// Several nodes on one database (issue 33, docs/operations.md): each
// node's heartbeat and each project's lease. Times are the database's.
struct NodeBeat {
  std::string node;
  absl::Time seen;  // its last heartbeat
  std::string address = "";  // where it serves gRPC
  absl::Time started_at = absl::InfinitePast();
};

struct Lease {
  std::string project;
  std::string holder;  // "" when released
  int64_t epoch = 0;
  absl::Time expires = absl::InfinitePast();
};

// What the nodes' lease keepers read in one round: the database's clock,
// every node's heartbeat, every project and every lease.
struct LeaseState {
  absl::Time now;
  std::vector<NodeBeat> nodes;
  std::vector<std::string> projects;  // uuids
  std::map<std::string, Lease> leases;  // by project uuid
};

// One conditional lease write by `node`, made only if the stored epoch is
// still `expected_epoch` (0: there is no lease row yet) and
//  - acquire: nobody holds it (released, or expired by the database's clock);
//  - renew:   `node` holds it and it has not expired;
//  - release: `node` holds it.
struct LeaseWrite {
  enum Kind { kAcquire, kRenew, kRelease };
  Kind kind = kAcquire;
  std::string project;
  std::string node;
  int64_t expected_epoch = 0;
  int64_t epoch = 0;     // written (acquire: expected + 1)
  absl::Time expires;    // acquire and renew
};

// Fencing (issue 33): the calling thread works for `project` holding its
// lease as `node` at `epoch`. While a ScopedFence lives, every store write
// of that thread is made only if, inside its transaction and by the
// database's clock, the lease is still that node's at that epoch with more
// than `margin` left; otherwise ABORTED and nothing is written.
struct Fence {
  std::string project;
  std::string node;
  int64_t epoch = 0;
  absl::Duration margin = absl::Seconds(2);
};

class ScopedFence {
 public:
  explicit ScopedFence(Fence f) : fence_(std::move(f)), previous_(current_) { current_ = &fence_; }
  ~ScopedFence() { current_ = previous_; }
  ScopedFence(const ScopedFence&) = delete;
  ScopedFence& operator=(const ScopedFence&) = delete;
  static const Fence* Current() { return current_; }

 private:
  const Fence fence_;  // a copy: the caller's may be a temporary
  const Fence* previous_;
  static inline thread_local const Fence* current_ = nullptr;
};

struct TaskCount {
  std::string kind, state;
  int64_t n = 0;
};

// Decides, inside AddTask's transaction, whether `incoming` may join the
// project's open (queued, active, terminating) tasks. OK to add it (after
// setting incoming->wait_for and naming tasks to terminate); an error status
// refuses it and nothing is written.
using TaskAdmitter = std::function<absl::Status(const std::vector<TaskRecord>& open, TaskRecord* incoming,
                                                std::vector<std::string>* terminate)>;

// Everything CommitVersion writes, in one transaction.
struct NewVersion {
  std::string project_name;
  // The version's id: "" for a new one; a rollout across data centers
  // gives the one it has in every data center.
  std::string uuid;
  bool create_project = false;        // create the project if it does not exist
  std::string expected_current;       // version uuid the writer started from ("" = none)
  bool force = false;                 // skip the expected_current check
  std::string hash;
  std::string manifest;
  std::string canonical;
  std::string author;
  std::string origin = "apply";
  int64_t rolled_back_to = 0;
  std::string message;
  std::vector<std::string> warnings;
  std::string description;
  std::string owner;                  // the account of a project this creates
  std::vector<ServiceRecord> services;
  std::vector<GroupRecord> groups;
};

// One data center's part of a rollout across data centers.
struct RolloutStep {
  std::string datacenter;
  // pending | sent (stored there, converging) | converged | failed |
  // rolled-back | not started
  std::string state = "pending";
  int64_t number = 0;            // the version's number there once stored
  std::string previous_version;  // the version in force there before ("" = none)
  std::string detail;            // the last answer, or why it failed
  absl::Time since = absl::InfinitePast();
  absl::Time last_answer = absl::InfinitePast();
  bool canary = false;
};

// A version's way across the data centers its manifest lists, kept by the
// mariposad it was applied through (docs/operations.md "Several data
// centers").
struct RolloutRecord {
  std::string uuid;
  std::string project;       // by name: the same in every data center
  std::string version_uuid;  // the same in every data center
  std::string hash;
  std::string state = "active";  // active | completed | failed | cancelled
  std::string author;
  std::string origin;            // the data center it was applied through
  std::string manifest;          // the text as applied
  std::string message;           // why it ended, or what it waits for
  int max_parallel = 1;
  std::string on_failure = "stop";
  absl::Time created_at = absl::InfinitePast();
  absl::Time updated_at = absl::InfinitePast();
  std::vector<RolloutStep> steps;  // rollout order
};

struct CommitResult {
  VersionRecord version;
  bool changed = false;          // false: the canonical hash equals the current version's
  bool project_created = false;
  std::string previous_version;  // uuid in force before ("" for none)
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_STORE_RECORDS_H_
