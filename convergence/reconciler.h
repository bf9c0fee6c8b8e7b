// The reconciler: one sync of a project — observe, plan, execute the step's
// actions against VMAPI, wait for their jobs — and a loop that syncs every
// project on a resync interval or when woken (level-triggered: a wake-up only
// marks work to do). Thread-safe.
//
// Creates carry a pre-chosen uuid and the ownership tags, deletes remove what
// the planner chose; jobs run in a window bounded per project and globally
// (JobSlots). Freezes hold automatic work in their scope; failing creates back
// off exponentially and a service that fails restart.max_attempts times
// within restart.window is paused (crash loop, with an event); replacements of
// broken instances stay within the replacement budget. Reprovision tasks run
// as rolling steps with their filters and canary, recording progress.
// Not yet: automatic work as tasks (syncs act directly), health, placement
// hints, agents, start/stop.
#ifndef MARIPOSA_CONVERGENCE_RECONCILER_H_
#define MARIPOSA_CONVERGENCE_RECONCILER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "convergence/agents.h"
#include "convergence/metrics.h"
#include "convergence/throttles.h"
#include "convergence/triton/clients.h"
#include "health/coordinator.h"
#include "projects/store.h"

namespace mariposa::convergence {

struct ReconcilerOptions {
  std::string owner_uuid;                         // owner of the VMs Mariposa creates
  std::string network_uuid;                       // network every instance joins
  absl::Duration job_timeout = absl::Minutes(5);  // per Triton job
  absl::Duration resync = absl::Seconds(5);
  int max_jobs = 64;               // Triton jobs in flight, all projects together
  int max_jobs_per_project = 32;   // Triton jobs in flight for one project
  int parallel_syncs = 4;          // projects synced at the same time by the loop
  int observe_parallel = 4;        // VMAPI listings per project read at the same time
  absl::Duration backoff_base = absl::Seconds(1);  // first wait after a failed create
  absl::Duration backoff_cap = absl::Minutes(2);
  absl::Duration replace_interval = absl::Minutes(1);  // the replacement budget's period
  ControllerMetrics* metrics = nullptr;                // optional
  triton::CnapiClient* cnapi = nullptr;                // for agent services; optional
  health::Coordinator* health = nullptr;               // shards the services' health checks over agents; optional
  bool health_loopback = false;  // check 10.a.b.c at 127.a.b.c (tritonsim --listen-vms)
  // update.auto_rollback: rolls a project back to a version (uuid) if the
  // version in force is still the expected one; returns the new number.
  std::function<absl::StatusOr<int64_t>(const std::string& project, const std::string& to_version,
                                        const std::string& expected_current, const std::string& message)>
      rollback;
};

// What one sync did.
struct SyncResult {
  int created = 0;
  int deleted = 0;
  int changed = 0;    // instances started or stopped
  int failed = 0;     // actions or jobs that failed
  int held = 0;       // actions not taken: a freeze, backoff, crash loop or the budget holds them
  bool converged = false;  // the plan had nothing to do
  absl::Duration observe;  // reading VMAPI
  absl::Duration total;    // the whole sync
};

class Reconciler {
 public:
  // All collaborators must outlive the reconciler.
  Reconciler(ProjectStore* store, triton::VmapiClient* vmapi, triton::ImgapiClient* imgapi, const Clock* clock,
             ReconcilerOptions options);
  ~Reconciler();

  // One observe-plan-execute pass for a project (waits for its jobs).
  absl::StatusOr<SyncResult> SyncProject(const std::string& project);

  // An agent service's rollout as of the last sync (nullopt before one).
  std::optional<AgentPlan> AgentStatus(const std::string& project_uuid, const std::string& service) const;

  const health::Coordinator* health() const { return options_.health; }
  // An instance's health from the monitor ("" when it has no checks).
  std::string HealthOf(const std::string& instance) const;

  // Why replacement of a service is paused ("" when it is not): a crash loop.
  std::string PausedBecause(const std::string& project_uuid, const std::string& service) const;

  // Starts the loop thread; Wake() asks for a sync of everything now.
  void Start();
  void Wake();
  void Stop();

 private:
  struct Remembered {
    std::string spec_hash;
    ServiceHistory history;
    absl::Time budget_event = absl::InfinitePast();  // last "budget exceeded" event
    // Read by other threads (PausedBecause): guarded by history_mu_.
    std::string pause_reason;  // of the last crash loop
    bool paused = false;       // as of the last sync
  };

  void Loop();
  absl::StatusOr<SyncResult> SyncProjectOnce(const std::string& project);
  // Agent services: one rollout step per service (installs on up to
  // `update.rolling` servers), as an automatic reprovision task.
  void SyncAgents(const ProjectRecord& p, const std::vector<const ServiceRecord*>& agents,
                  const std::vector<TaskRecord>& open, SyncResult* result);
  // The manifest's meta defaults of the version in force (cached per version).
  absl::StatusOr<std::map<std::string, std::string>> MetaDefaults(const ProjectRecord& p);
  // What the executor remembers of a service; forgotten when its spec changes.
  Remembered* Memory(const std::string& project_uuid, const std::string& service, const std::string& spec_hash);

  ProjectStore* store_;
  triton::VmapiClient* vmapi_;
  triton::ImgapiClient* imgapi_;
  const Clock* clock_;
  ReconcilerOptions options_;
  JobSlots slots_;
  mutable absl::Mutex history_mu_;
  std::map<std::string, std::unique_ptr<Remembered>> history_ ABSL_GUARDED_BY(history_mu_);
  std::map<std::string, std::map<std::string, std::string>> meta_defaults_ ABSL_GUARDED_BY(history_mu_);
  std::map<std::string, AgentPlan> agent_status_ ABSL_GUARDED_BY(history_mu_);  // project/service
  absl::Mutex mu_;
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_RECONCILER_H_
