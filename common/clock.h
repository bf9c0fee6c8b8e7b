// Clock interface: the only code that reads the wall clock or waits on it.
// main() picks RealClock; everything else receives a Clock, so tests drive
// time with SimulatedClock (no sleeps). scripts/check_clock.py fails the test
// run on a direct clock read or sleep anywhere else. Debian's Abseil 2022 has
// no clock interface, so this is ours.
#ifndef MARIPOSA_COMMON_CLOCK_H_
#define MARIPOSA_COMMON_CLOCK_H_

#include <set>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace mariposa {

// Thread-safe source of the current time, and waits measured on it.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // Blocks until Now() >= deadline.
  virtual void SleepUntil(absl::Time deadline) const = 0;
  void SleepFor(absl::Duration d) const { SleepUntil(Now() + d); }
  // Called with `mu` held: waits (releasing `mu`) until `cond` holds or
  // Now() >= deadline; returns whether `cond` holds. `cond` is re-evaluated
  // whenever `mu` is released by another thread, as with absl::Mutex::Await.
  virtual bool AwaitUntil(absl::Mutex* mu, const absl::Condition& cond, absl::Time deadline) const = 0;
};

// The wall clock.
class RealClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  void SleepUntil(absl::Time deadline) const override {
    absl::Duration d = deadline - absl::Now();
    if (d > absl::ZeroDuration()) absl::SleepFor(d);
  }
  bool AwaitUntil(absl::Mutex* mu, const absl::Condition& cond, absl::Time deadline) const override {
    return mu->AwaitWithDeadline(cond, deadline);
  }
  static RealClock* Get() {
    static RealClock* clock = new RealClock();
    return clock;
  }
};

// A clock that moves only when told; for tests. Advance and Set wake every
// SleepUntil and AwaitUntil whose deadline has come. Thread-safe.
class SimulatedClock : public Clock {
 public:
  explicit SimulatedClock(absl::Time start = absl::FromUnixSeconds(1700000000)) : now_(start) {}
  absl::Time Now() const override {
    absl::MutexLock l(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) { Set(Now() + d); }
  void Set(absl::Time t) {
    std::multiset<absl::Mutex*> waiters;
    {
      absl::MutexLock l(&mu_);
      now_ = t;
      waiters = waiters_;
    }
    // Releasing a waiter's mutex makes it re-evaluate its condition, which
    // reads the new time.
    for (absl::Mutex* m : waiters) {
      m->Lock();
      m->Unlock();
    }
  }
  void SleepUntil(absl::Time deadline) const override {
    absl::MutexLock l(&mu_);
    auto due = [this, deadline]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return now_ >= deadline; };
    mu_.Await(absl::Condition(&due));
  }
  bool AwaitUntil(absl::Mutex* mu, const absl::Condition& cond, absl::Time deadline) const override {
    {
      absl::MutexLock l(&mu_);
      waiters_.insert(mu);
    }
    auto done = [&]() { return cond.Eval() || Now() >= deadline; };
    mu->Await(absl::Condition(&done));
    {
      absl::MutexLock l(&mu_);
      waiters_.erase(waiters_.find(mu));
    }
    return cond.Eval();
  }
  // Threads blocked in AwaitUntil (for tests that advance once a waiter is
  // known to wait).
  int waiters() const {
    absl::MutexLock l(&mu_);
    return static_cast<int>(waiters_.size());
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  mutable std::multiset<absl::Mutex*> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_CLOCK_H_
