// The executor's memory of each service's recent trouble (QUEUE.md
// "Failures" and "Throttles"): exponential backoff between failing creates,
// crash-loop detection per restart.max_attempts/window, and the replacement
// budget (pure bookkeeping over times it is given, not thread-safe); and
// the global limit on Triton jobs in flight.
#ifndef MARIPOSA_CONVERGENCE_THROTTLES_H_
#define MARIPOSA_CONVERGENCE_THROTTLES_H_

#include <deque>
#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace mariposa::convergence {

struct RestartPolicy {
  int max_attempts = 3;                       // failures within `window` that make a crash loop
  absl::Duration window = absl::Seconds(60);
  absl::Duration backoff_base = absl::Seconds(1);
  absl::Duration backoff_cap = absl::Minutes(5);
};

class ServiceHistory {
 public:
  // A create that failed (API error, failed job), an instance that died
  // within its restart window, or one replaced because it failed its health
  // checks. `jitter` in [0, 1] scales the backoff between 50 % and 100 %.
  // True when this failure starts a crash loop: max_attempts failures within
  // the window, or max_attempts in a row with no instance becoming ready in
  // between (a check that never passes fails slower than any window).
  bool Failure(const RestartPolicy& p, absl::Time now, double jitter);
  // A create that succeeded: the backoff starts over.
  void Success();
  // An instance created after the last failure became ready: the run of
  // failures in a row ends.
  void Recovered() { consecutive_ = 0; }
  absl::Time last_failure() const { return failures_.empty() ? last_failure_ : failures_.back(); }
  int consecutive() const { return consecutive_; }
  // Forget everything (the service's spec changed: a new version may fix it).
  void Reset();

  // Creates must wait until this time (backoff after the last failure).
  absl::Time next_attempt() const { return next_attempt_; }
  // Crash-looping: replacement paused until the window since the last
  // failure has passed; then one attempt is allowed again.
  bool Paused(const RestartPolicy& p, absl::Time now) const;
  bool crashlooping() const { return crashlooping_; }
  // Ends a crash loop whose pause is over; true if one ended.
  bool EndPauseIfOver(const RestartPolicy& p, absl::Time now);

  // Replacement budget: replacements for health reasons allowed now when
  // the service has `count` instances (max(1, 10 %) per `interval`).
  int64_t ReplaceBudget(int64_t count, absl::Duration interval, absl::Time now);
  void Replaced(absl::Time now) { replaced_.push_back(now); }

 private:
  std::deque<absl::Time> failures_;
  std::deque<absl::Time> replaced_;
  int consecutive_ = 0;     // failures with no instance becoming ready
  int backoff_steps_ = 0;   // failures since the last successful create
  absl::Time last_failure_ = absl::InfinitePast();
  bool crashlooping_ = false;
  absl::Time next_attempt_ = absl::InfinitePast();
};

// A counting semaphore for Triton jobs in flight across all syncs (the
// global limit). Thread-safe.
class JobSlots {
 public:
  explicit JobSlots(int n) : free_(n) {}
  bool TryAcquire();
  void Acquire();
  void Release();

 private:
  absl::Mutex mu_;
  int free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_THROTTLES_H_
