#include "common/bounded.h"

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace mariposa {
namespace {

TEST(BoundedRunner, AnswersInTimeOrSaysWhatDidNot) {
  RealClock* clock = RealClock::Get();
  BoundedRunner runner(clock);
  auto fast = runner.Run<int>([] { return absl::StatusOr<int>(7); }, absl::Seconds(5), "the fast one");
  ASSERT_TRUE(fast.ok());
  EXPECT_EQ(*fast, 7);
  absl::Notification release;
  absl::Time start = clock->Now();
  auto slow = runner.Run<int>(
      [&release] {
        release.WaitForNotification();
        return absl::StatusOr<int>(1);
      },
      absl::Milliseconds(200), "PAPI and NAPI");
  EXPECT_TRUE(absl::IsDeadlineExceeded(slow.status()));
  EXPECT_EQ(slow.status().message(), "PAPI and NAPI did not answer within 200ms");
  EXPECT_LT(clock->Now() - start, absl::Seconds(3));
  auto error = runner.Run<int>([] { return absl::StatusOr<int>(absl::UnavailableError("down")); }, absl::Seconds(5),
                               "x");
  EXPECT_EQ(error.status().message(), "down");
  release.Notify();  // the runner joins the slow one when it goes
}

}  // namespace
}  // namespace mariposa
