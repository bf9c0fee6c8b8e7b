// ProjectStore: the durable goal state — projects, versions, services,
// deployment groups, metadata — and the append-only event log.
#ifndef MARIPOSA_PROJECTS_STORE_H_
#define MARIPOSA_PROJECTS_STORE_H_

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

struct CommitResult {
  VersionRecord version;
  bool changed = false;          // false: the canonical hash equals the current version's
  bool project_created = false;
  std::string previous_version;  // uuid in force before ("" for none)
};

// Thread-safe. Status codes: NOT_FOUND (project, version, key), ALREADY_EXISTS
// (project name), FAILED_PRECONDITION (stale expected version, non-integer
// incr), ABORTED (meta CAS mismatch), INVALID_ARGUMENT (bad names/refs).
class ProjectStore {
 public:
  virtual ~ProjectStore() = default;

  // `owner`: the Triton account of its instances ("" = not recorded).
  virtual absl::StatusOr<ProjectRecord> CreateProject(const std::string& name, const std::string& description,
                                                      const std::string& actor, const std::string& owner) = 0;
  absl::StatusOr<ProjectRecord> CreateProject(const std::string& name, const std::string& description,
                                              const std::string& actor) {
    return CreateProject(name, description, actor, "");
  }
  // Records `owner` as the account of every project that has none (made
  // before accounts were recorded); how many there were.
  virtual absl::StatusOr<int> ClaimUnownedProjects(const std::string& owner) = 0;
  virtual absl::StatusOr<std::vector<ProjectRecord>> ListProjects() = 0;
  // By name or uuid.
  virtual absl::StatusOr<ProjectRecord> GetProject(const std::string& name_or_uuid) = 0;
  // The project and its current version (without its texts; none before
  // the first), read together (one round trip on PostgreSQL).
  virtual absl::StatusOr<std::pair<ProjectRecord, std::optional<VersionRecord>>> GetProjectWithCurrent(
      const std::string& name_or_uuid) = 0;
  // Removes the project, its versions and meta; its events stay.
  virtual absl::Status DeleteProject(const std::string& name_or_uuid, const std::string& actor) = 0;

  // Stores a new version (or reports a no-op) in one transaction, checking
  // expected_current against the current version inside it.
  virtual absl::StatusOr<CommitResult> CommitVersion(const NewVersion& v) = 0;
  virtual absl::StatusOr<std::vector<VersionRecord>> ListVersions(const std::string& project_uuid) = 0;
  // `ref`: uuid, unique uuid prefix (4+ hex), number, tag, or "current".
  virtual absl::StatusOr<VersionRecord> GetVersion(const std::string& project_uuid, const std::string& ref,
                                                   bool include_text) = 0;
  virtual absl::StatusOr<std::vector<ServiceRecord>> ListServices(const std::string& version_uuid) = 0;
  virtual absl::StatusOr<std::vector<GroupRecord>> ListGroups(const std::string& version_uuid) = 0;
  // Points `tag` at the version (moving it if it exists).
  virtual absl::StatusOr<VersionRecord> TagVersion(const std::string& project_uuid, const std::string& ref,
                                                   const std::string& tag, const std::string& actor) = 0;

  virtual absl::StatusOr<std::vector<MetaRecord>> ListMeta(const std::string& project_uuid) = 0;
  virtual absl::StatusOr<MetaRecord> GetMeta(const std::string& project_uuid, const std::string& key) = 0;
  // `cas`: when set, the write happens only if the key's cas_id equals it
  // (0 = the key must not exist). cas_id values are unique across the store
  // and never reused, so a deleted and re-created key never matches an old id.
  virtual absl::StatusOr<MetaRecord> SetMeta(const std::string& project_uuid, const std::string& key,
                                             const std::string& value, bool secret, std::optional<int64_t> cas,
                                             const std::string& actor) = 0;
  virtual absl::Status DeleteMeta(const std::string& project_uuid, const std::string& key,
                                  std::optional<int64_t> cas, const std::string& actor) = 0;
  // Adds `delta` to an integer value (a missing key counts as 0).
  virtual absl::StatusOr<MetaRecord> IncrMeta(const std::string& project_uuid, const std::string& key,
                                              int64_t delta, std::optional<int64_t> cas,
                                              const std::string& actor) = 0;
  // Sets every entry in one transaction.
  virtual absl::StatusOr<int> ImportMeta(const std::string& project_uuid,
                                         const std::map<std::string, std::string>& entries, bool secret,
                                         const std::string& actor) = 0;

  // Events after `after_index`, oldest first; `project` empty for all;
  // `kinds` non-empty: only those kinds, or those under a prefix ending in
  // "." ("volume.").
  virtual absl::StatusOr<std::vector<EventRecord>> ListEvents(const std::string& project, int64_t after_index,
                                                              int limit, const std::vector<std::string>& kinds) = 0;
  absl::StatusOr<std::vector<EventRecord>> ListEvents(const std::string& project, int64_t after_index, int limit) {
    return ListEvents(project, after_index, limit, {});
  }
  // The newest `limit` events after `after_index` (oldest first).
  virtual absl::StatusOr<std::vector<EventRecord>> ListNewestEvents(const std::string& project, int64_t after_index,
                                                                    int limit,
                                                                    const std::vector<std::string>& kinds) = 0;
  absl::StatusOr<std::vector<EventRecord>> ListNewestEvents(const std::string& project, int64_t after_index,
                                                            int limit) {
    return ListNewestEvents(project, after_index, limit, {});
  }
  // How many events of `project` ("" = all) and `kinds` have an index in
  // (after, before).
  virtual absl::StatusOr<int64_t> CountEvents(const std::string& project, int64_t after_index, int64_t before_index,
                                              const std::vector<std::string>& kinds) = 0;
  virtual absl::StatusOr<int64_t> LastEventIndex() = 0;
  // Moves when events were committed (here, or on another node when the
  // daemon relays the database's notices to it); null when the store cannot
  // tell, and readers poll.
  virtual ChangeSignal* EventsSignal() { return nullptr; }
  // Appends a controller event (instance.create, …); returns its index.
  // Appends controller events in one transaction (one fsync for many).
  virtual absl::Status AppendEvents(const std::vector<EventRecord>& events) = 0;
  virtual absl::StatusOr<int64_t> AppendEvent(const std::string& actor, const std::string& project,
                                              const std::string& kind, const std::string& subject,
                                              const std::string& detail) = 0;

  // Secrets: with a codec set, secret meta values are sealed when written
  // and opened when read. ResealSecrets seals every secret that is plain or
  // under another key with the codec's current key, in one transaction, and
  // returns how many it changed.
  virtual void SetSecretCodec(const SecretCodec* codec) = 0;
  virtual absl::StatusOr<int> ResealSecrets() = 0;

  // Tokens and grants (auth). Names of live tokens are unique.
  virtual absl::StatusOr<TokenRecord> CreateToken(const TokenRecord& t) = 0;
  virtual absl::StatusOr<std::vector<TokenRecord>> ListTokens() = 0;
  // NOT_FOUND when no token has this hash.
  virtual absl::StatusOr<TokenRecord> FindTokenByHash(const std::string& hash) = 0;
  // By id or name (a live one); NOT_FOUND when there is none.
  virtual absl::StatusOr<TokenRecord> RevokeToken(const std::string& id_or_name, const std::string& actor) = 0;
  virtual absl::StatusOr<GrantRecord> SetGrant(const GrantRecord& g) = 0;
  virtual absl::StatusOr<std::vector<GrantRecord>> ListGrants() = 0;
  virtual absl::Status DeleteGrant(const std::string& subject, const std::string& project,
                                   const std::string& actor) = 0;

  // What the convergence engine remembers of a project between syncs
  // (convergence/memory_codec.h; opaque here), so that a restart goes on
  // from it: "" when nothing is kept. Put replaces it; a project that no
  // longer exists keeps nothing, and deleting a project deletes it.
  virtual absl::StatusOr<std::string> GetControllerMemory(const std::string& project_uuid) = 0;
  virtual absl::Status PutControllerMemory(const std::string& project_uuid, const std::string& body) = 0;
  virtual absl::StatusOr<std::vector<InstanceTimes>> ListInstanceTimes(const std::string& project_uuid) = 0;
  // Writes `changed` and removes `gone` (instance uuids) in one
  // transaction; a project deleted meanwhile keeps nothing.
  virtual absl::Status UpdateInstanceTimes(const std::string& project_uuid, const std::vector<InstanceTimes>& changed,
                                           const std::vector<std::string>& gone) = 0;

  // The controller's own settings that outlive a restart (its readonly
  // state): "" when unset. SetSetting writes `value` and the event
  // (kind, subject = key, detail) in one transaction.
  virtual absl::StatusOr<std::string> GetSetting(const std::string& key) = 0;
  virtual absl::Status SetSetting(const std::string& key, const std::string& value, const std::string& actor,
                                  const std::string& kind, const std::string& detail) = 0;

  // A consistent online copy of the whole store at `path`; returns its size.
  virtual absl::StatusOr<int64_t> Backup(const std::string& path) = 0;
  virtual int SchemaVersion() = 0;

  // Tasks. AddTask runs `admit` and writes the outcome in one transaction:
  // the new task (uuid and created_at assigned) and the terminations (those
  // tasks become `terminating`, or `terminated` when still queued or a freeze).
  virtual absl::StatusOr<TaskRecord> AddTask(const TaskRecord& task, const TaskAdmitter& admit) = 0;
  // Queued, active and terminating tasks first, then up to `finished_limit`
  // finished ones, newest first.
  virtual absl::StatusOr<std::vector<TaskRecord>> ListTasks(const std::string& project_uuid, int finished_limit) = 0;
  virtual absl::StatusOr<TaskRecord> GetTask(const std::string& uuid) = 0;
  // Moves a task to `state` (and sets started/finished times and the error
  // as fitting). FAILED_PRECONDITION for a task that already ended.
  virtual absl::StatusOr<TaskRecord> SetTaskState(const std::string& uuid, const std::string& state,
                                                  const std::string& error) = 0;
  // Marks a project for deletion once its instances and what else it owns
  // in the data center are gone (the controller removes them, then calls
  // DeleteProject); `detail` is the event's. `delete_volumes`: its volumes
  // go whatever their deletion_policy.
  virtual absl::Status MarkProjectDeleting(const std::string& name_or_uuid, const std::string& actor,
                                           bool delete_volumes, const std::string& detail) = 0;
  virtual absl::Status AddTaskProgress(const std::string& uuid, const TaskProgress& delta) = 0;
  // Pauses an open reprovision task (`note` non-empty: who, when, why) or
  // resumes it (`note` empty), with an event. FAILED_PRECONDITION for a
  // task that ended, is not a rollout, or already is in that state.
  virtual absl::StatusOr<TaskRecord> SetTaskPaused(const std::string& uuid, const std::string& actor,
                                                   const std::string& reason, bool paused) = 0;
  // Every project's queued, active and terminating tasks, oldest first.
  virtual absl::StatusOr<std::vector<TaskRecord>> ListOpenTasks() = 0;
  // Tasks of every project by kind and state.
  virtual absl::StatusOr<std::vector<TaskCount>> CountTasks() = 0;

  // Jobs in flight (JobRecord). RecordJobs writes them in one transaction.
  virtual absl::Status RecordJobs(const std::vector<JobRecord>& jobs) = 0;
  absl::StatusOr<std::vector<JobRecord>> ListJobs(const std::string& project_uuid) {
    return ListJobsExcept(project_uuid, {});
  }
  // The same without the jobs named in `except` (the pump's, which skips
  // those it saw end: hundreds during a scale-up, not worth copying).
  virtual absl::StatusOr<std::vector<JobRecord>> ListJobsExcept(const std::string& project_uuid,
                                                                const std::set<std::string>& except) = 0;
  // Removes each job (job uuid, progress) and adds its progress to its
  // task, if the task is still open, all in one transaction. A job already
  // removed is not counted again (OK).
  virtual absl::Status FinishJobs(const std::vector<std::pair<std::string, TaskProgress>>& jobs) = 0;

  // Nodes and leases (issue 33). Heartbeat records `node`'s heartbeat at
  // the database's clock and reads the lease state, in one transaction.
  virtual absl::StatusOr<LeaseState> Heartbeat(const std::string& node, const std::string& address,
                                               absl::Time started_at) = 0;
  // Makes each write that still applies (see LeaseWrite), in one
  // transaction; whether each was made.
  virtual absl::StatusOr<std::vector<bool>> WriteLeases(const std::vector<LeaseWrite>& writes) = 0;
  // A node leaving: its leases released and its heartbeat removed.
  virtual absl::Status LeaveNode(const std::string& node) = 0;
  // OK while `fence` holds (see Fence); ABORTED saying who holds the lease
  // now otherwise. Checked before Triton is asked to act.
  virtual absl::Status CheckFence(const Fence& fence) = 0;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_STORE_H_
