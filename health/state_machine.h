// The health state machine of HEALTH.md, per check and per instance:
// unknown -> starting -> healthy <-> unhealthy. Pure (times are given),
// not thread-safe; one object per check of an instance.
//
//   - The service's start window is a grace period: failures before the
//     first pass, inside the window, do not count. An instance that has not
//     passed when the window ends is unhealthy.
//   - Then `retries` consecutive failures make it unhealthy and `successes`
//     consecutive passes healthy again.
//   - Flapping: more than `flap_limit` healthy/unhealthy changes within
//     `flap_window` is reported once per window.
#ifndef MARIPOSA_HEALTH_STATE_MACHINE_H_
#define MARIPOSA_HEALTH_STATE_MACHINE_H_

#include <deque>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace mariposa::health {

enum class Health { kUnknown, kStarting, kHealthy, kUnhealthy };

const char* HealthName(Health h);

// The worst of several: unhealthy > starting > unknown > healthy.
Health Worst(const std::vector<Health>& states);

struct CheckPolicy {
  absl::Duration interval = absl::Seconds(30);
  absl::Duration unhealthy_interval = absl::Seconds(30);
  int retries = 3;
  int successes = 1;
  absl::Duration start_window = absl::Seconds(60);
  int flap_limit = 4;
  absl::Duration flap_window = absl::Minutes(10);
};

// What one result changed.
struct Transition {
  bool changed = false;  // the state is new
  Health from = Health::kUnknown;
  Health to = Health::kUnknown;
  bool flapping = false;  // report: too many changes within the flap window
};

class CheckState {
 public:
  // `created`: when the instance was created (start of its window).
  CheckState(CheckPolicy policy, absl::Time created) : policy_(policy), created_(created) {}

  // Feeds one result at `now`.
  Transition Record(bool pass, absl::Time now);
  // The window may end without a result (a check that hangs until its
  // timeout): call with the current time to apply it.
  Transition Tick(absl::Time now);

  Health state() const { return state_; }
  // When the next check is due after one that ran at `last`.
  absl::Time NextDue(absl::Time last) const;

 private:
  Transition Move(Health to, absl::Time now);
  bool InWindow(absl::Time now) const { return now < created_ + policy_.start_window; }

  CheckPolicy policy_;
  absl::Time created_;
  Health state_ = Health::kUnknown;
  bool ever_passed_ = false;
  int fails_ = 0;   // consecutive, counted ones
  int passes_ = 0;  // consecutive
  std::deque<absl::Time> flips_;  // healthy <-> unhealthy changes
  absl::Time flap_reported_ = absl::InfinitePast();
};

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_STATE_MACHINE_H_
