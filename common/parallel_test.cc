// RunParallel on kept threads: every task once, at most `parallel` at a
// time, done when it returns; batches from many threads at once and a batch
// run from inside a task finish; threads are kept, not started per batch.
#include "common/parallel.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace mariposa {
namespace {

TEST(RunParallelTest, EveryTaskOnceAtMostParallelAtATimeAllDoneOnReturn) {
  for (int parallel : {1, 2, 8, 16}) {
    std::atomic<int> running{0}, most{0};
    std::vector<int> ran(100, 0);
    std::vector<std::function<void()>> tasks;
    for (int i = 0; i < 100; ++i) {
      tasks.push_back([&, i] {
        int now = ++running;
        for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        ran[i]++;
        --running;
      });
    }
    RunParallel(&tasks, parallel);
    EXPECT_EQ(running.load(), 0) << "returned before every task ended";
    for (int i = 0; i < 100; ++i) ASSERT_EQ(ran[i], 1) << "task " << i << " with parallel " << parallel;
    EXPECT_LE(most.load(), parallel);
    if (parallel > 1) {
      EXPECT_GT(most.load(), 1) << "nothing ran side by side with parallel " << parallel;
    }
  }
}

TEST(RunParallelTest, BatchesFromManyThreadsAndFromInsideATaskFinish) {
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c) {
    callers.emplace_back([&] {
      for (int round = 0; round < 20; ++round) {
        std::vector<std::function<void()>> tasks;
        for (int i = 0; i < 10; ++i) {
          tasks.push_back([&] {
            std::vector<std::function<void()>> inner(3, [&] { total++; });
            RunParallel(&inner, 3);  // a batch inside a batch
          });
        }
        RunParallel(&tasks, 16);
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 8 * 20 * 10 * 3);
  EXPECT_LE(ParallelThreads(), kMaxParallelThreads);
}

TEST(RunParallelTest, ThreadsAreKeptNotStartedPerBatch) {
  std::vector<std::function<void()>> tasks(8, [] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); });
  RunParallel(&tasks, 8);
  int kept = ParallelThreads();
  std::set<std::thread::id> ids;
  std::mutex mu;
  for (int round = 0; round < 200; ++round) {
    std::vector<std::function<void()>> batch(8, [&] {
      std::lock_guard<std::mutex> l(mu);
      ids.insert(std::this_thread::get_id());
    });
    RunParallel(&batch, 8);
  }
  EXPECT_EQ(ParallelThreads(), kept) << "200 batches started threads";
  EXPECT_LE(ids.size(), static_cast<size_t>(kept) + 1);  // the kept ones and this one
}

}  // namespace
}  // namespace mariposa
