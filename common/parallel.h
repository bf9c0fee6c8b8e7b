// Runs a batch of tasks on a few threads and waits for them all, on threads
// kept for the process's life: starting a thread per batch (a pump round,
// a wave of creates, a round of job polls) cost mariposad a stack mapping,
// page faults, an unmapping and a TLB shoot-down across cores each time,
// thousands of times a second during a mass scale.
#ifndef MARIPOSA_COMMON_PARALLEL_H_
#define MARIPOSA_COMMON_PARALLEL_H_

#include <functional>
#include <vector>

namespace mariposa {

// Runs every task of `tasks` once, on up to `parallel` threads at a time
// (the caller's included), and returns when all have finished. The caller
// runs tasks too, so a batch finishes even when every kept thread is busy
// with other batches (or when a task itself runs a batch). Thread-safe.
void RunParallel(std::vector<std::function<void()>>* tasks, int parallel);

// Threads kept so far (for tests): at most kMaxParallelThreads.
int ParallelThreads();
inline constexpr int kMaxParallelThreads = 64;

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_PARALLEL_H_
