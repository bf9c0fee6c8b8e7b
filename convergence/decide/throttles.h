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
#include <utility>

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
  // All it remembers, as kept in the store between runs of mariposad
  // (convergence/memory_codec.h).
  struct State {
    std::deque<absl::Time> failures;
    std::deque<absl::Time> replaced;
    int consecutive = 0;     // failures with no instance becoming ready
    int backoff_steps = 0;   // failures since the last successful create
    absl::Time last_failure = absl::InfinitePast();
    bool crashlooping = false;
    absl::Time next_attempt = absl::InfinitePast();
  };
  ServiceHistory() = default;
  explicit ServiceHistory(State s) : s_(std::move(s)) {}
  const State& state() const { return s_; }

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
  void Recovered() { s_.consecutive = 0; }
  absl::Time last_failure() const { return s_.failures.empty() ? s_.last_failure : s_.failures.back(); }
  int consecutive() const { return s_.consecutive; }
  // Forget everything (the service's spec changed: a new version may fix it).
  void Reset();

  // Creates must wait until this time (backoff after the last failure).
  absl::Time next_attempt() const { return s_.next_attempt; }
  // Crash-looping: replacement paused until the window since the last
  // failure has passed; then one attempt is allowed again.
  bool Paused(const RestartPolicy& p, absl::Time now) const;
  bool crashlooping() const { return s_.crashlooping; }
  // Ends a crash loop whose pause is over; true if one ended.
  bool EndPauseIfOver(const RestartPolicy& p, absl::Time now);

  // Replacement budget: replacements for health reasons allowed now when
  // the service has `count` instances (max(1, 10 %) per `interval`).
  int64_t ReplaceBudget(int64_t count, absl::Duration interval, absl::Time now);
  void Replaced(absl::Time now) { s_.replaced.push_back(now); }

 private:
  State s_;
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
