// A small pool: runs tasks on a few threads and waits for them all.
#ifndef MARIPOSA_CONVERGENCE_PARALLEL_H_
#define MARIPOSA_CONVERGENCE_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>
#include <vector>

namespace mariposa::convergence {

// Runs `tasks` on up to `parallel` threads (this one included); returns when
// all are done.
inline void RunParallel(std::vector<std::function<void()>>* tasks, int parallel) {
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (size_t k; (k = next++) < tasks->size();) (*tasks)[k]();
  };
  std::vector<std::thread> pool;
  int threads = std::min<int>(std::max(1, parallel), static_cast<int>(tasks->size()));
  for (int t = 1; t < threads; ++t) pool.emplace_back(run);
  run();
  for (auto& t : pool) t.join();
}

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_PARALLEL_H_
