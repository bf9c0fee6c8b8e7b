// Calls that must answer within a deadline even when what they wait on does
// not: Bounded runs a function on its own thread and waits for it until the
// deadline (on the injected clock). Past it, the caller gets
// DEADLINE_EXCEEDED naming what was asked, and the function goes on in the
// background (its result is dropped; what it caches is kept for the next
// call). ~BoundedRunner waits for every such function, so declare the runner
// after what the functions use. Thread-safe.
#ifndef MARIPOSA_COMMON_BOUNDED_H_
#define MARIPOSA_COMMON_BOUNDED_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace mariposa {

class BoundedRunner {
 public:
  explicit BoundedRunner(const Clock* clock) : clock_(clock) {}
  ~BoundedRunner() {
    std::vector<Worker> workers;
    {
      absl::MutexLock l(&mu_);
      workers.swap(workers_);
    }
    for (Worker& w : workers) w.thread.join();
  }

  // `what` names the call in the error ("PAPI and NAPI (the catalog)").
  template <typename T>
  absl::StatusOr<T> Run(const std::function<absl::StatusOr<T>()>& f, absl::Duration limit, const std::string& what) {
    struct Shared {
      absl::Mutex mu;
      std::optional<absl::StatusOr<T>> result;
    };
    auto shared = std::make_shared<Shared>();
    auto finished = std::make_shared<std::atomic<bool>>(false);
    {
      absl::MutexLock l(&mu_);
      // Those that ended since are joined here: the list stays short.
      for (auto it = workers_.begin(); it != workers_.end();) {
        if (it->finished->load()) {
          it->thread.join();
          it = workers_.erase(it);
        } else {
          ++it;
        }
      }
      workers_.push_back(Worker{std::thread([shared, f, finished] {
                                  absl::StatusOr<T> r = f();
                                  {
                                    absl::MutexLock l(&shared->mu);
                                    shared->result = std::move(r);
                                  }
                                  finished->store(true);
                                }),
                                finished});
    }
    absl::MutexLock l(&shared->mu);
    auto done = [&shared]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared->mu) { return shared->result.has_value(); };
    clock_->AwaitUntil(&shared->mu, absl::Condition(&done), clock_->Now() + limit);
    if (!shared->result) {
      return absl::DeadlineExceededError(
          absl::StrCat(what, " did not answer within ", absl::FormatDuration(limit)));
    }
    return std::move(*shared->result);
  }

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> finished;
  };
  const Clock* clock_;
  absl::Mutex mu_;
  std::vector<Worker> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_BOUNDED_H_
