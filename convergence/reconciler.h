// The reconciler: one sync of a project — observe, plan, execute the step's
// actions against VMAPI, wait for their jobs — and a loop that syncs every
// project on a resync interval or when woken (level-triggered: a wake-up only
// marks work to do). Thread-safe.
//
// Status: a first end-to-end slice of issue 4. Creates carry a pre-chosen
// uuid and the ownership tags, deletes remove what the planner chose, jobs
// are waited for; freezes hold automatic work in their scope. Not yet: tasks driving the work (syncs act directly),
// reprovision triggered by users, health, retries with backoff, crash-loop
// pauses, the replacement budget, concurrency limits, metrics.
#ifndef MARIPOSA_CONVERGENCE_RECONCILER_H_
#define MARIPOSA_CONVERGENCE_RECONCILER_H_

#include <atomic>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "convergence/triton/clients.h"
#include "projects/store.h"

namespace mariposa::convergence {

struct ReconcilerOptions {
  std::string owner_uuid;                         // owner of the VMs Mariposa creates
  std::string network_uuid;                       // network every instance joins
  absl::Duration job_timeout = absl::Minutes(5);  // per Triton job
  absl::Duration resync = absl::Seconds(5);
};

// What one sync did.
struct SyncResult {
  int created = 0;
  int deleted = 0;
  int failed = 0;     // actions or jobs that failed
  int held = 0;       // actions not taken because a freeze covers them
  bool converged = false;  // the plan had nothing to do
};

class Reconciler {
 public:
  // All collaborators must outlive the reconciler.
  Reconciler(ProjectStore* store, triton::VmapiClient* vmapi, triton::ImgapiClient* imgapi, const Clock* clock,
             ReconcilerOptions options);
  ~Reconciler();

  // One observe-plan-execute pass for a project (waits for its jobs).
  absl::StatusOr<SyncResult> SyncProject(const std::string& project);

  // Starts the loop thread; Wake() asks for a sync of everything now.
  void Start();
  void Wake();
  void Stop();

 private:
  void Loop();

  ProjectStore* store_;
  triton::VmapiClient* vmapi_;
  triton::ImgapiClient* imgapi_;
  const Clock* clock_;
  ReconcilerOptions options_;
  absl::Mutex mu_;
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_RECONCILER_H_
