// The health monitor: runs each assigned check on its interval (spread with
// jitter, never in bursts) through a CheckEngine, keeps the state machine of
// every (instance, check), and reports only changes. Every health agent
// (`mariposa-health`, or the one `mariposad --embedded-health` runs
// in-process) is one monitor fed by the coordinator's assignments.
// Thread-safe.
#ifndef MARIPOSA_HEALTH_MONITOR_H_
#define MARIPOSA_HEALTH_MONITOR_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "health/check_engine.h"
#include "health/state_machine.h"
#include "health/target.h"

namespace mariposa::health {

class HealthMonitor {
 public:
  struct Hooks {
    std::function<void(const HealthChange&)> on_change;
    // Every result (for metrics).
    std::function<void(const std::string& type, bool pass, absl::Duration took)> on_result;
    // How late a check started against its due time (for metrics).
    std::function<void(absl::Duration late)> on_start;
  };
  // The hooks run on the monitor's threads and must be quick. Schedules,
  // check deadlines and "last run" times are measured on `clock`.
  HealthMonitor(Hooks hooks, const Clock* clock);
  ~HealthMonitor();

  // Replaces the targets of `group`: new ones start within their first
  // interval, removed ones stop, unchanged ones keep their state.
  void Assign(const std::string& group, std::vector<Target> targets);

  // The instance's health (the worst of its checks), or nullopt when no
  // check is assigned for it.
  std::optional<Health> InstanceHealth(const std::string& instance) const;

  size_t targets() const;

  // Every assigned check of `group` ("" = of every group).
  struct CheckStatus {
    std::string group, instance, check, type;
    std::string address;
    int port = 0;
    Health state = Health::kUnknown;
    std::string last_detail;  // the last failure's reason ("" after a pass)
    absl::Time last_run = absl::InfinitePast();
    int64_t runs = 0;
  };
  std::vector<CheckStatus> Checks(const std::string& group) const;
  // How many times the scheduling loop woke (tests: results must not wake
  // it one by one).
  int64_t LoopPassesForTest() const {
    absl::MutexLock l(&mu_);
    return loop_passes_;
  }

 private:
  struct Entry {
    std::string group;
    Target target;
    CheckState state;
    uint64_t generation = 0;  // bumped when the target is replaced
    bool running = false;
    std::string last_detail;
    absl::Time last_run = absl::InfinitePast();
    int64_t runs = 0;
  };
  void Loop();
  // Checks due within this of now start together, early rather than late:
  // the loop wakes at most once per kBatch instead of once per check.
  static constexpr absl::Duration kBatch = absl::Milliseconds(5);
  void OnResult(uint64_t generation, const CheckResult& r);

  Hooks hooks_;
  const Clock* clock_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;  // the schedule changed: the loop looks again
  // When the loop wakes next by itself: a result whose next run is due
  // later does not wake it (at 10,000 checks a second, waking it for every
  // result was most of the monitor's CPU: P7).
  absl::Time sleeping_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int64_t loop_passes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_generation_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);  // instance/check -> entry
  // generation -> its entry (map nodes do not move), so that the schedule
  // and results carry a number rather than a key.
  absl::flat_hash_map<uint64_t, Entry*> live_ ABSL_GUARDED_BY(mu_);
  using Due = std::pair<absl::Time, uint64_t>;  // (due, generation)
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
  // Last, so it is destroyed first: its final callbacks still find the rest.
  CheckEngine engine_;
};

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_MONITOR_H_
