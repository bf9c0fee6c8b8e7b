#include "convergence/decide/throttles.h"

#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1800000000);

TEST(ServiceHistoryTest, BackoffDoublesUpToTheCapAndResetsOnSuccess) {
  RestartPolicy p{100, absl::Hours(1), absl::Seconds(1), absl::Seconds(10)};
  ServiceHistory h;
  EXPECT_EQ(h.next_attempt(), absl::InfinitePast());
  std::vector<absl::Duration> waits;
  for (int k = 0; k < 6; ++k) {
    h.Failure(p, kT0, /*jitter=*/1.0);
    waits.push_back(h.next_attempt() - kT0);
  }
  EXPECT_EQ(waits, (std::vector<absl::Duration>{absl::Seconds(1), absl::Seconds(2), absl::Seconds(4), absl::Seconds(8),
                                                absl::Seconds(10), absl::Seconds(10)}));
  h.Failure(p, kT0, /*jitter=*/0.0);  // jitter takes it down to half
  EXPECT_EQ(h.next_attempt() - kT0, absl::Seconds(5));
  h.Success();
  EXPECT_EQ(h.next_attempt(), absl::InfinitePast());
  h.Failure(p, kT0, 1.0);
  EXPECT_EQ(h.next_attempt() - kT0, absl::Seconds(1));
}

TEST(ServiceHistoryTest, CrashLoopAfterMaxAttemptsWithinTheWindow) {
  RestartPolicy p{3, absl::Seconds(60), absl::Seconds(1), absl::Seconds(10)};
  ServiceHistory h;
  // Failures spread wider than the window, with an instance becoming ready
  // in between, never make a crash loop.
  EXPECT_FALSE(h.Failure(p, kT0, 1));
  h.Recovered();
  EXPECT_FALSE(h.Failure(p, kT0 + absl::Seconds(50), 1));
  h.Recovered();
  EXPECT_FALSE(h.Failure(p, kT0 + absl::Seconds(100), 1));
  EXPECT_FALSE(h.crashlooping());
  // The third within 60 s does; it is reported once.
  EXPECT_TRUE(h.Failure(p, kT0 + absl::Seconds(110), 1));
  EXPECT_TRUE(h.crashlooping());
  EXPECT_FALSE(h.Failure(p, kT0 + absl::Seconds(111), 1));
  EXPECT_TRUE(h.Paused(p, kT0 + absl::Seconds(150)));
  EXPECT_FALSE(h.EndPauseIfOver(p, kT0 + absl::Seconds(150)));
  // A window after the last failure the pause ends and creates may try again.
  EXPECT_FALSE(h.Paused(p, kT0 + absl::Seconds(171)));
  EXPECT_TRUE(h.EndPauseIfOver(p, kT0 + absl::Seconds(171)));
  EXPECT_FALSE(h.crashlooping());
  h.Recovered();
  EXPECT_FALSE(h.Failure(p, kT0 + absl::Seconds(172), 1));  // counting starts over
}

TEST(ServiceHistoryTest, FailuresInARowMakeACrashLoopHoweverSlow) {
  // A health check that never passes: each replacement fails after ~70 s,
  // slower than the 60 s window, and nothing ever becomes ready.
  RestartPolicy p{3, absl::Seconds(60), absl::Seconds(1), absl::Seconds(10)};
  ServiceHistory h;
  EXPECT_FALSE(h.Failure(p, kT0, 1));
  EXPECT_FALSE(h.Failure(p, kT0 + absl::Seconds(70), 1));
  EXPECT_TRUE(h.Failure(p, kT0 + absl::Seconds(140), 1));
  EXPECT_TRUE(h.Paused(p, kT0 + absl::Seconds(150)));
  // After the pause one attempt is allowed; failing again pauses again at once.
  EXPECT_TRUE(h.EndPauseIfOver(p, kT0 + absl::Seconds(201)));
  EXPECT_TRUE(h.Failure(p, kT0 + absl::Seconds(270), 1));
  // An instance that becomes ready ends the run.
  EXPECT_TRUE(h.EndPauseIfOver(p, kT0 + absl::Seconds(331)));
  h.Recovered();
  EXPECT_FALSE(h.Failure(p, kT0 + absl::Seconds(400), 1));
}

TEST(ServiceHistoryTest, ResetForgetsACrashLoop) {
  RestartPolicy p{1, absl::Seconds(60), absl::Seconds(1), absl::Seconds(10)};
  ServiceHistory h;
  EXPECT_TRUE(h.Failure(p, kT0, 1));
  EXPECT_TRUE(h.Paused(p, kT0));
  h.Reset();
  EXPECT_FALSE(h.Paused(p, kT0));
  EXPECT_EQ(h.next_attempt(), absl::InfinitePast());
}

TEST(ServiceHistoryTest, ReplacementBudgetIsTenPercentAtLeastOnePerInterval) {
  ServiceHistory h;
  EXPECT_EQ(h.ReplaceBudget(5, absl::Minutes(1), kT0), 1);
  EXPECT_EQ(h.ReplaceBudget(100, absl::Minutes(1), kT0), 10);
  for (int k = 0; k < 7; ++k) h.Replaced(kT0 + absl::Seconds(k));
  EXPECT_EQ(h.ReplaceBudget(100, absl::Minutes(1), kT0 + absl::Seconds(10)), 3);
  EXPECT_EQ(h.ReplaceBudget(20, absl::Minutes(1), kT0 + absl::Seconds(10)), 0);
  // Replacements older than the interval no longer count.
  EXPECT_EQ(h.ReplaceBudget(100, absl::Minutes(1), kT0 + absl::Seconds(63)), 7);  // 4 s, 5 s, 6 s remain
  EXPECT_EQ(h.ReplaceBudget(100, absl::Minutes(1), kT0 + absl::Minutes(5)), 10);
}

}  // namespace
}  // namespace mariposa::convergence
