// The reconciler: Gather -> Decide -> Execute for one project at a time.
//
// Gather (gather.cc) reads everything one sync needs into an immutable
// Snapshot (goal from the GoalCache, VMAPI instances from the informer —
// VmCache, vm_cache.h: the kept listing with VMAPI's change feed applied
// while it is watched, a listing otherwise —, health, open tasks, freezes,
// jobs in flight and those that ended, images, servers for agent
// services). Decide (decide.h) is pure. Execute (execute.cc) records
// the decision: task transitions and automatic tasks, Triton requests sent
// (send.cc) in parallel within the job window (placement counting the
// instances placed earlier in the same step), each job recorded in the
// store when sent; a sync never waits for a job, later syncs observe it and
// count it once.
//
// The loop is a per-project work queue (work_queue.h): a project is synced
// by one worker at a time, requeued with backoff after an error, resynced
// every `resync`, and woken alone by a change to it (apply, a task, a health
// change, a change feed item). Thread-safe.
#ifndef MARIPOSA_CONVERGENCE_RECONCILER_H_
#define MARIPOSA_CONVERGENCE_RECONCILER_H_

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <set>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "convergence/decide/agents.h"
#include "projects/image_plan.h"
#include "convergence/decide/catalog.h"
#include "convergence/decide/decide.h"
#include "convergence/decide/goal.h"
#include "convergence/memory_codec.h"
#include "convergence/metrics.h"
#include "convergence/decide/placement.h"
#include "convergence/decide/throttles.h"
#include "convergence/execute/executor.h"
#include "convergence/execute/sender.h"
#include "convergence/owned/owned_objects.h"
#include "convergence/work_queue.h"
#include "convergence/triton/clients.h"
#include "convergence/triton/vm_feed.h"
#include "convergence/informer/triton_catalog.h"
#include "convergence/informer/vm_cache.h"
#include "convergence/engine_data_center.h"
#include "convergence/gather.h"
#include "convergence/project_state.h"
#include "health/coordinator.h"
#include "projects/store.h"

namespace mariposa::convergence {

struct ReconcilerOptions {
  std::string owner_uuid;                         // owner of the VMs Mariposa creates
  // This data center's name (mariposad's --datacenter): a version that
  // lists data centers runs as its entry for this one makes it.
  std::string datacenter;
  // Triton's admin account (ufds_admin_uuid): owns the core zones
  // (compute_type: core), which are found by their tag smartdc_role.
  std::string admin_owner_uuid;
  std::string network_uuid;                       // network every instance joins
  absl::Duration job_timeout = absl::Minutes(5);  // per Triton job
  absl::Duration resync = absl::Seconds(5);
  // A project's VMs are all listed at least this often; in between, a sync
  // that sees jobs end re-reads only their VMs (GetVm).
  absl::Duration full_observe = absl::Seconds(1);
  // While VMAPI's change feed is watched (VmsChanged, FeedChanged), a
  // project's listing stays current by the feed's items and is read again
  // in full only this often (the safety net); full_observe otherwise.
  absl::Duration relist = absl::Minutes(5);
  // While watching, each project's VMs are also checked this often against
  // a digest (uuid, state, last_modified: one cheap listing), so a change
  // the feed lost is found within about this long (DigestSuspects).
  absl::Duration audit = absl::Seconds(10);
  // `status` answers from the last observation; older than this, its
  // verdicts are unknown (ControllerPolicy::stale_after).
  absl::Duration stale_after = absl::Seconds(20);
  // The TTL of CNS's records (Triton's CNS: 30s); 0 = no CNS known. A
  // service's stop.drain defaults to twice it (ControllerPolicy::default_drain).
  absl::Duration cns_ttl = absl::ZeroDuration();
  absl::Duration job_poll = absl::Milliseconds(250);  // a project with jobs in flight is looked at again after this
  // While the change feed is watched: how long past their expected end a
  // create's and a delete's jobs wait for their VM's item before VMAPI is
  // asked about them (AskJobNow).
  absl::Duration feed_grace = absl::Milliseconds(50);
  int max_jobs = 64;               // Triton jobs in flight, all projects together
  int max_jobs_per_project = 32;   // Triton jobs in flight for one project
  // Projects synced at the same time by the loop (mariposad --parallel-syncs):
  // on PostgreSQL each sync waits on round trips, and more of them overlap.
  int parallel_syncs = 16;
  int observe_parallel = 4;        // VMAPI listings per project read at the same time
  int send_parallel = 16;          // Triton requests of one sync sent at the same time
  std::map<std::string, std::string> api_urls;  // each API's address ("vmapi" → URL), named in problems
  absl::Duration backoff_base = absl::Seconds(1);  // first wait after a failed create
  absl::Duration backoff_cap = absl::Minutes(2);
  absl::Duration replace_interval = absl::Minutes(1);  // the replacement budget's period
  ControllerMetrics* metrics = nullptr;                // optional
  triton::CnapiClient* cnapi = nullptr;                // for agent services; optional
  // The image source (an IMGAPI such as updates.tritondatacenter.com) that
  // images missing from this IMGAPI are imported from; optional.
  triton::ImgapiClient* image_source = nullptr;
  std::string image_source_url;    // what IMGAPI's import-remote is given
  std::string image_channel;       // the source's channel ("" = every channel)
  // Packages and networks (catalog.h); optional: without PAPI an instance
  // gets resources.memory (1 GiB default), disk and cpu as given and no
  // billing_id; without NAPI only network uuids can be named.
  triton::PapiClient* papi = nullptr;
  triton::NapiClient* napi = nullptr;
  // For the manifests' firewall rules; optional (without it they are not
  // applied and status says so).
  triton::FwapiClient* fwapi = nullptr;
  triton::VolapiClient* volapi = nullptr;  // optional: the manifests' volumes
  health::Coordinator* health = nullptr;               // shards the services' health checks over agents; optional
  bool health_loopback = false;  // check 10.a.b.c at 127.a.b.c (tritonsim --listen-vms)
  // update.auto_rollback: rolls a project back to a version (uuid) if the
  // version in force is still the expected one; returns the new number.
  std::function<absl::StatusOr<int64_t>(const std::string& project, const std::string& to_version,
                                        const std::string& expected_current, const std::string& message)>
      rollback;
  // Several nodes on one database (lease_keeper.h): the fence to act on a
  // project under while this node holds its lease, nullopt when it does
  // not (the project is left to its holder). Null: one node, every project.
  std::function<std::optional<Fence>(const std::string& project_uuid)> lease;
  // Called when a sync found the images IMGAPI holds changed (an import
  // ended): the other nodes forget what they resolved too. Optional.
  std::function<void()> images_changed;
};

// The Triton account a project's instances belong to: its own (--owner at
// create), else mariposad's.
inline const std::string& TenantOf(const ProjectRecord& p, const ReconcilerOptions& o) {
  return p.owner.empty() ? o.owner_uuid : p.owner;
}

// Every account whose VMs may be `p`'s instances: its own, and the admin
// account (core zones) when there is one. Listings are scoped to these.
std::vector<std::string> OwnersOf(const ProjectRecord& p, const ReconcilerOptions& o);
// The account an instance of `spec` in project `p` belongs to.
inline const std::string& OwnerOf(const ProjectRecord& p, const ServiceSpec& spec, const ReconcilerOptions& o) {
  return OwnerFor(spec, TenantOf(p, o), o.admin_owner_uuid);
}

// What one sync did.
struct SyncResult {
  int created = 0;
  int deleted = 0;
  int changed = 0;    // instances started or stopped, agents installed
  int failed = 0;     // requests refused, and jobs seen failing
  int held = 0;       // actions not taken now (Decision::held)
  int finished = 0;   // jobs seen ending (counted) by this sync
  // For when the jobs in flight are asked again (PlanJobPoll): when this
  // pass asked them, the sent times of those it saw end and of those
  // still running, and how many jobs it sent (sent now).
  absl::Time asked = absl::InfinitePast();
  std::vector<absl::Time> ended_sent, running_sent;
  int sent = 0;
  bool converged = false;  // the verdict: every service converged
  absl::Time next_change = absl::InfiniteFuture();  // Decision::next_change
  absl::Duration observe;  // reading VMAPI
  absl::Duration total;    // the whole sync
};


class Reconciler {
 public:
  // All collaborators must outlive the reconciler.
  Reconciler(ProjectStore* store, triton::VmapiClient* vmapi, triton::ImgapiClient* imgapi, const Clock* clock,
             ReconcilerOptions options);
  ~Reconciler();

  // One Gather -> Decide -> Execute pass for a project (never waits for a
  // job). An error is a Gather or store failure.
  absl::StatusOr<SyncResult> SyncProject(const std::string& project);

  // Sends creates the job window held at the project's last sync as job
  // slots free up, without deciding again (the decision's backlog): asks
  // the jobs in flight (those that ended are counted by the next sync) and
  // sends as many as the window allows. Nothing (nullopt) when there is no
  // backlog, anything changed since (Wake, WakeProject), a job failed, or
  // the last sync is older than full_observe or ten times what it took
  // (whichever is longer), or the jobs seen ending and not yet counted reach
  // kEndedWindowsPerSync job windows (times the last sync's cost in tenths
  // of a second, when it took longer): then the project needs a sync.
  std::optional<SyncResult> PumpProject(const std::string& project_uuid);
  static constexpr int kEndedWindowsPerSync = 64;

  // Gather and Decide without executing: what `status` shows. It never
  // waits on Triton: the actual state is the last sync's observation (its
  // age in Snapshot::observed_at; older than stale_after, every verdict is
  // unknown and a problem names the slow API), images and the catalog as
  // last read, jobs in flight not asked about. A project no sync has read
  // yet has actual_known false.
  struct View {
    Snapshot snapshot;
    Decision decision;
    // Several nodes: another node runs the project, so VMAPI was read for
    // this view (not a sync's observation of this node).
    bool read_now = false;
    std::string watch;  // WatchSummary()
  };
  absl::StatusOr<View> Inspect(const std::string& project);

  const health::Coordinator* health() const { return options_.health; }
  // An instance's health from the monitor ("" when it has no checks).
  std::string HealthOf(const std::string& instance) const;
  // Problems of the last sync of the project that Decide cannot see (a
  // store write that failed), as Error / Reason / Fix / Impact.
  std::vector<Problem> ExecuteProblems(const std::string& project_uuid) const;
  // The problems of every project's last sync (`admin status`), by project
  // name; a Triton API that is unreachable is listed once, under "".
  std::map<std::string, std::vector<Problem>> LastProblems() const;

  // Starts the workers; Wake() queues every project, WakeProject one.
  void Start();
  void Wake();
  void WakeProject(const std::string& project_uuid);

  // VMAPI's change feed (triton/vm_feed.h): VMs that changed, in the order
  // published; each project's next sync applies its own (ApplyVmChanges)
  // and the projects are woken. FeedChanged: the watch began or ended; a
  // listing read before `since` of a watch is not kept past full_observe
  // (list, then watch), and every project's events record the change.
  void VmsChanged(std::vector<triton::Vm> vms);
  void FeedChanged(const triton::VmFeedStatus& status);
  // What `status` says of how the actual state is read ("" = no feed is
  // configured: every sync lists VMAPI).
  std::string WatchSummary() const;
  // Several nodes: this node no longer runs the project (its lease went to
  // another node). What it remembered of it is dropped, and so are its
  // health checks here: the project's node assigns them to its agents.
  void ReleaseProject(const std::string& project_uuid);
  void Stop();
  // Paused (mariposad readonly): the workers neither sync nor follow jobs;
  // projects queue up and are synced when it is lifted.
  void SetPaused(bool paused);

  // Images, packages, networks and volume sizes as Triton offers them, kept
  // briefly (triton_catalog.h).
  TritonCatalog& triton_catalog() { return triton_; }
  // What apply and a project's deletion ask of the data center
  // (engine_data_center.h).
  DataCenter* data_center() { return &data_center_; }
  // Every account whose VMs may be `p`'s instances (convergence::OwnersOf).
  std::vector<std::string> OwnersOf(const ProjectRecord& p) const { return convergence::OwnersOf(p, options_); }
  // How long a call to `api` (VMAPI, CNAPI, …) took: the HTTP clients'
  // metrics hook reports every call, and a stale status names slow APIs.
  void NoteLatency(const std::string& api, absl::Duration took);
  // Forgets the resolved images, and tells the other nodes
  // (options.images_changed).
  void ImagesChanged();
 private:
  // PumpProject's steps.
  struct Pump {
    std::shared_ptr<const Snapshot> from;   // what Send needs to build the backlog's creates
    std::map<std::string, ServiceMemory> memory;
    absl::flat_hash_set<std::string> known;  // jobs seen ending already (lent: ProjectState::ended_ids)
    int running = 0;                        // this project's jobs still running
    absl::Duration took;                    // what its jobs take, at least (ProjectState::jobs_take)
    std::shared_ptr<Recording> recording;   // the round before's write (ProjectState::recording)
    std::vector<JobRecord> unrecorded;      // its jobs not seen ending yet
  };
  // Starts the write of a pump round's jobs on a thread of its own, under
  // this thread's fence.
  static std::shared_ptr<Recording> StartRecording(std::function<absl::Status()> write, std::vector<JobRecord> jobs);
  // Waits for the last pump round of `project` (its uuid or name) to be
  // written (a sync reads the jobs in flight after it).
  void WaitRecording(const std::string& project);
  std::optional<Pump> PumpFrom(const std::string& uuid, absl::Time start);
  std::optional<std::vector<Step>> TakeBacklog(const std::string& uuid, std::vector<FinishedJob> ended, bool failed,
                                               Pump* pump);
  // Gives the ended jobs' uuids the pump round borrowed back to the project.
  void GiveBackKnown(const std::string& uuid, Pump* pump);
  void Worker();
  bool Leased(const std::string& key, std::optional<Fence>* fence);
  void Requeue(const std::string& key, const SyncResult& r);
  void Resync();
  // The projects Resync skips now: Quiet, their watched listing current
  // (no feed item pending, younger than relist). Their observation is as
  // of now (the feed keeps it current).
  std::set<std::string> QuietProjects(absl::Time now);
  // Asks the Relister for the digest check of each watched project not
  // checked for options_.audit.
  void ScheduleAudits(const std::vector<ProjectRecord>& projects, absl::Time now);
  // Remembered per API: since when it fails ("" error = fine).
  void NoteApi(const std::string& api, const absl::Status& st);

  ProjectStore* store_;
  triton::VmapiClient* vmapi_;
  triton::ImgapiClient* imgapi_;
  const Clock* clock_;
  ReconcilerOptions options_;
  Sender sender_;        // the send step (execute/send.cc)
  OwnedObjects owned_;  // what the project owns in FWAPI, NAPI, VOLAPI (owned/)
  GoalCache goals_;
  WorkQueue queue_;
  mutable absl::Mutex mu_;
  std::map<std::string, ProjectState> projects_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, ApiProblem> api_ ABSL_GUARDED_BY(mu_);  // failing APIs
  // The last call per API, noted by every Triton request (its own lock: the
  // request path never waits on mu_).
  mutable absl::Mutex latency_mu_;
  std::map<std::string, absl::Duration> latency_ ABSL_GUARDED_BY(latency_mu_);
  std::set<std::string> known_projects_ ABSL_GUARDED_BY(mu_);
  std::string wake_after_ ABSL_GUARDED_BY(mu_);  // the last project woken for free job slots (in turn)
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> paused_{false};
  std::atomic<uint64_t> changes_{0};  // bumped by every Wake and WakeProject
  std::vector<std::thread> workers_;
  std::thread ticker_;
  // The informer: each project's VMs as last listed, the change feed's
  // items, the safety-net listings (vm_cache.h).
  VmCache vms_;
  TritonCatalog triton_;
  Gatherer gather_;   // the sync's read step (gather.h)
  Executor execute_;  // the sync's write step (execute/executor.h)
  EngineDataCenter data_center_;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_RECONCILER_H_
