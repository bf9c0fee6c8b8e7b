#include "health/state_machine.h"

#include "gtest/gtest.h"

namespace mariposa::health {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1800000000);
absl::Time At(int s) { return kT0 + absl::Seconds(s); }

CheckPolicy Policy(int retries = 3, int successes = 1, int window_s = 60) {
  CheckPolicy p;
  p.interval = absl::Seconds(10);
  p.unhealthy_interval = absl::Seconds(5);
  p.retries = retries;
  p.successes = successes;
  p.start_window = absl::Seconds(window_s);
  p.flap_limit = 4;
  p.flap_window = absl::Minutes(10);
  return p;
}

TEST(StateMachineTest, GraceThenHealthy) {
  CheckState c(Policy(), kT0);
  EXPECT_EQ(c.state(), Health::kUnknown);
  auto t = c.Record(false, At(5));  // inside the window: not counted
  EXPECT_EQ(c.state(), Health::kStarting);
  EXPECT_TRUE(t.changed);
  for (int s = 10; s < 60; s += 10) c.Record(false, At(s));
  EXPECT_EQ(c.state(), Health::kStarting);  // many failures, all in the window
  t = c.Record(true, At(55));
  EXPECT_TRUE(t.changed);
  EXPECT_EQ(t.from, Health::kStarting);
  EXPECT_EQ(c.state(), Health::kHealthy);
}

TEST(StateMachineTest, WindowEndsWithoutAPass) {
  CheckState c(Policy(), kT0);
  c.Record(false, At(30));
  EXPECT_EQ(c.state(), Health::kStarting);
  EXPECT_FALSE(c.Tick(At(59)).changed);
  auto t = c.Tick(At(60));  // e.g. a check that hangs past the window
  EXPECT_TRUE(t.changed);
  EXPECT_EQ(c.state(), Health::kUnhealthy);
  CheckState d(Policy(), kT0);
  d.Record(false, At(61));  // first result already after the window
  EXPECT_EQ(d.state(), Health::kUnhealthy);
}

TEST(StateMachineTest, RetriesAndSuccesses) {
  CheckState c(Policy(/*retries=*/3, /*successes=*/2), kT0);
  c.Record(true, At(1));
  EXPECT_EQ(c.state(), Health::kStarting);  // one pass of two
  c.Record(true, At(2));
  EXPECT_EQ(c.state(), Health::kHealthy);
  c.Record(false, At(100));
  c.Record(false, At(110));
  EXPECT_EQ(c.state(), Health::kHealthy);  // 2 of 3
  c.Record(true, At(120));                 // resets the count
  c.Record(false, At(130));
  c.Record(false, At(140));
  EXPECT_EQ(c.state(), Health::kHealthy);
  auto t = c.Record(false, At(150));
  EXPECT_TRUE(t.changed);
  EXPECT_EQ(c.state(), Health::kUnhealthy);
  c.Record(true, At(160));
  EXPECT_EQ(c.state(), Health::kUnhealthy);  // 1 of 2 passes
  c.Record(true, At(165));
  EXPECT_EQ(c.state(), Health::kHealthy);
}

TEST(StateMachineTest, OnlyChangesAreReported) {
  CheckState c(Policy(1, 1), kT0);
  EXPECT_TRUE(c.Record(true, At(1)).changed);
  EXPECT_FALSE(c.Record(true, At(11)).changed);
  EXPECT_FALSE(c.Record(true, At(21)).changed);
  EXPECT_TRUE(c.Record(false, At(31)).changed);
  EXPECT_FALSE(c.Record(false, At(36)).changed);
}

TEST(StateMachineTest, FlappingIsReportedOncePerWindow) {
  CheckState c(Policy(1, 1), kT0);
  c.Record(true, At(1));
  int reports = 0;
  for (int k = 0; k < 12; ++k) reports += c.Record(k % 2 == 0 ? false : true, At(100 + k * 10)).flapping;
  EXPECT_EQ(reports, 1);  // 12 flips within 10 minutes: one report
  // A window later it is reported again if it goes on.
  for (int k = 0; k < 12; ++k) reports += c.Record(k % 2 == 0 ? false : true, At(800 + k * 10)).flapping;
  EXPECT_EQ(reports, 2);
}

TEST(StateMachineTest, IntervalsFollowTheState) {
  CheckState c(Policy(1, 1), kT0);
  EXPECT_EQ(c.NextDue(At(0)), At(5));  // not yet healthy: unhealthy_interval
  c.Record(true, At(1));
  EXPECT_EQ(c.NextDue(At(1)), At(11));
}

TEST(StateMachineTest, InstanceIsTheWorstOfItsChecks) {
  EXPECT_EQ(Worst({Health::kHealthy, Health::kHealthy}), Health::kHealthy);
  EXPECT_EQ(Worst({Health::kHealthy, Health::kStarting}), Health::kStarting);
  EXPECT_EQ(Worst({Health::kUnknown, Health::kHealthy}), Health::kUnknown);
  EXPECT_EQ(Worst({Health::kStarting, Health::kUnhealthy}), Health::kUnhealthy);
  EXPECT_EQ(Worst({}), Health::kUnknown);
}

}  // namespace
}  // namespace mariposa::health
