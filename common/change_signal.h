// A counter that waiters can block on: writers Notify() after a change
// (events committed), readers remember generation() before they read and
// AwaitChange() after, so a change between the two is never slept through.
// Waits are on a Clock (a simulated one in tests). Thread-safe.
#ifndef MARIPOSA_COMMON_CHANGE_SIGNAL_H_
#define MARIPOSA_COMMON_CHANGE_SIGNAL_H_

#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace mariposa {

class ChangeSignal {
 public:
  int64_t generation() const {
    absl::MutexLock l(&mu_);
    return generation_;
  }
  void Notify() {
    absl::MutexLock l(&mu_);
    generation_++;
  }
  // True when the generation moved past `seen` before `deadline`.
  bool AwaitChange(int64_t seen, absl::Time deadline, const Clock* clock) const {
    absl::MutexLock l(&mu_);
    auto moved = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return generation_ != seen; };
    return clock->AwaitUntil(&mu_, absl::Condition(&moved), deadline);
  }

 private:
  mutable absl::Mutex mu_;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_CHANGE_SIGNAL_H_
