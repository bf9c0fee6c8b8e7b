#include "convergence/work_queue.h"

#include <thread>

#include "common/clock.h"
#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

TEST(WorkQueueTest, AKeyWaitsOnceAndIsNeverProcessedTwiceAtATime) {
  SimulatedClock clock;
  WorkQueue q(&clock, absl::Seconds(1), absl::Seconds(8));
  q.Add("a");
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(q.Len(), 2);
  std::string k;
  ASSERT_TRUE(q.Get(&k));
  EXPECT_EQ(k, "a");
  q.Add("a");            // while processed: queued again after Done
  EXPECT_EQ(q.Len(), 1);  // only b
  ASSERT_TRUE(q.Get(&k));
  EXPECT_EQ(k, "b");
  q.Done("b");
  EXPECT_EQ(q.Len(), 0);
  q.Done("a");
  EXPECT_EQ(q.Len(), 1);
  ASSERT_TRUE(q.Get(&k));
  EXPECT_EQ(k, "a");
  q.Done("a");
}

TEST(WorkQueueTest, DelaysAndBackoffRunOnTheInjectedClock) {
  SimulatedClock clock;
  WorkQueue q(&clock, absl::Seconds(1), absl::Seconds(8));
  q.AddRateLimited("a");  // 1 s
  q.AddRateLimited("a");  // 2 s: the earlier one stands
  EXPECT_EQ(q.Failures("a"), 2);
  EXPECT_EQ(q.Len(), 0);
  std::string got;
  std::thread worker([&] { q.Get(&got); });
  while (clock.waiters() == 0) std::this_thread::yield();
  clock.Advance(absl::Milliseconds(999));
  EXPECT_TRUE(got.empty());
  clock.Advance(absl::Milliseconds(1));
  worker.join();
  EXPECT_EQ(got, "a");
  q.Done("a");
  q.Forget("a");
  EXPECT_EQ(q.Failures("a"), 0);
  for (int k = 0; k < 10; ++k) q.AddRateLimited("b");  // capped at 8 s
  std::thread w2([&] { q.Get(&got); });
  while (clock.waiters() == 0) std::this_thread::yield();
  clock.Advance(absl::Seconds(8));
  w2.join();
  EXPECT_EQ(got, "b");
}

TEST(WorkQueueTest, ShutDownReleasesWaitingWorkers) {
  SimulatedClock clock;
  WorkQueue q(&clock, absl::Seconds(1), absl::Seconds(8));
  bool ok = true;
  std::thread worker([&] {
    std::string k;
    ok = q.Get(&k);
  });
  while (clock.waiters() == 0) std::this_thread::yield();
  q.ShutDown();
  worker.join();
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace mariposa::convergence
