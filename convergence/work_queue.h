// A keyed work queue in the shape of client-go's rate-limited workqueue: a
// key (a project uuid) waits at most once however often it is added, is
// handed to one worker at a time (a key added while it is processed runs
// again after Done), can be added after a delay, and can be requeued with a
// per-key exponential backoff after an error. Delays are measured on the
// injected Clock. Thread-safe.
#ifndef MARIPOSA_CONVERGENCE_WORK_QUEUE_H_
#define MARIPOSA_CONVERGENCE_WORK_QUEUE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace mariposa::convergence {

class WorkQueue {
 public:
  WorkQueue(const Clock* clock, absl::Duration base_delay, absl::Duration max_delay);

  // Queues `key` now (no-op if it waits already).
  void Add(const std::string& key);
  // Queues `key` once `delay` has passed (the earliest of several wins).
  void AddAfter(const std::string& key, absl::Duration delay);
  // Queues `key` after its backoff: base_delay * 2^failures, capped.
  void AddRateLimited(const std::string& key);
  // Ends `key`'s backoff (after a successful sync).
  void Forget(const std::string& key);
  int Failures(const std::string& key) const;

  // Blocks until a key is ready or the queue is shut down (false).
  bool Get(std::string* key);
  // The worker is done with `key`; if it was added meanwhile it is queued.
  void Done(const std::string& key);
  void ShutDown();

  int Len() const;  // keys waiting now

 private:
  void PromoteDueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* clock_;
  absl::Duration base_, max_;
  mutable absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirty_ ABSL_GUARDED_BY(mu_);       // queued, or to queue again after Done
  std::set<std::string> processing_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Time> delayed_ ABSL_GUARDED_BY(mu_);  // key -> when
  std::map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // bumped when a sooner delay is set
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_WORK_QUEUE_H_
