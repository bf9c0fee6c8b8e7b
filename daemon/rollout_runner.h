// Drives the rollouts across data centers this mariposad was asked to make
// (projects/rollout_store.h): at each look it asks the data centers that
// hold the version how far they got, lets projects/rollout_plan.h decide,
// sends the version on (or back) and records what changed, with its
// events. Only this gathers and acts; the decisions are rollout_plan's.
#ifndef MARIPOSA_DAEMON_ROLLOUT_RUNNER_H_
#define MARIPOSA_DAEMON_ROLLOUT_RUNNER_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "mariposa/v1/projects.pb.h"
#include "mariposa/v1/state.pb.h"
#include "projects/rollout_plan.h"
#include "projects/rollout_store.h"

namespace mariposa {

// How the runner reaches a data center: its peers, or this one in process.
struct DataCenterLink {
  std::function<absl::StatusOr<v1::ApplyResponse>(const std::string& dc, const v1::ReceiveVersionRequest& req)> send;
  std::function<absl::StatusOr<v1::GetStateResponse>(const std::string& dc, const std::string& project)> state;
  // Rolls `project` back to version `to` (a uuid there) in `dc`.
  std::function<absl::Status(const std::string& dc, const std::string& project, const std::string& to,
                             const std::string& why)>
      rollback;
};

// What GetState says, as the plan reads it.
DataCenterAnswer AnswerOf(const absl::StatusOr<v1::GetStateResponse>& state);

class RolloutRunner {
 public:
  // `held`: true while nothing may change (mariposad readonly): no look is
  // taken, nothing sent.
  RolloutRunner(RolloutStore* store, DataCenterLink link, const Clock* clock, absl::Duration interval,
                std::function<bool()> held = nullptr);
  ~RolloutRunner();
  void Start();
  void Stop();
  // One look at every active rollout.
  void RunOnce();
  // Looks again now (a rollout was added).
  void Poke();

 private:
  void Run();
  void Drive(const RolloutRecord& r);

  RolloutStore* store_;
  DataCenterLink link_;
  const Clock* clock_;
  absl::Duration interval_;
  std::function<bool()> held_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool poked_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_ROLLOUT_RUNNER_H_
