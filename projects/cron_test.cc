#include "projects/cron.h"

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace mariposa {
namespace {

absl::Time At(const std::string& rfc3339) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) << rfc3339 << ": " << err;
  return t;
}

std::string Fmt(std::optional<absl::Time> t, const absl::TimeZone& tz) {
  return t ? absl::FormatTime("%Y-%m-%d %H:%M %a", *t, tz) : "none";
}

TEST(CronTest, NextFireTable) {
  absl::TimeZone utc = absl::UTCTimeZone();
  struct Case {
    std::string cron, after, next;
  };
  const std::vector<Case> cases = {
      {"* * * * *", "2026-11-26T10:15:30Z", "2026-11-26 10:16 Thu"},
      {"*/15 * * * *", "2026-11-26T10:15:00Z", "2026-11-26 10:30 Thu"},
      {"0 3 * * *", "2026-11-26T10:00:00Z", "2026-11-27 03:00 Fri"},
      {"0 3 * * MON-FRI", "2026-11-27T04:00:00Z", "2026-11-30 03:00 Mon"},
      {"30 2 1 * *", "2026-11-26T00:00:00Z", "2026-12-01 02:30 Tue"},
      {"0 0 1 JAN *", "2026-11-26T00:00:00Z", "2027-01-01 00:00 Fri"},
      {"0 12 * * 7", "2026-11-26T00:00:00Z", "2026-11-29 12:00 Sun"},
      {"5/20 * * * *", "2026-11-26T10:06:00Z", "2026-11-26 10:25 Thu"},
      {"0 0 13 * FRI", "2026-11-26T00:00:00Z", "2026-11-27 00:00 Fri"},  // either day field matches
      {"0 0 29 FEB *", "2026-03-01T00:00:00Z", "2028-02-29 00:00 Tue"},
      {"0 0 30 FEB *", "2026-03-01T00:00:00Z", "none"},
      {"@hourly", "2026-11-26T10:15:00Z", "2026-11-26 11:00 Thu"},
      {"@weekly", "2026-11-26T10:15:00Z", "2026-11-29 00:00 Sun"},
  };
  for (const Case& c : cases) {
    auto spec = ParseCron(c.cron);
    ASSERT_TRUE(spec.ok()) << c.cron << ": " << spec.status();
    EXPECT_EQ(Fmt(NextFire(*spec, utc, At(c.after)), utc), c.next) << c.cron;
  }
}

TEST(CronTest, TimeZonesAndDaylightSaving) {
  absl::TimeZone berlin;
  ASSERT_TRUE(absl::LoadTimeZone("Europe/Berlin", &berlin)) << "the tz database (Debian's tzdata)";
  auto daily = ParseCron("0 3 * * *");
  ASSERT_TRUE(daily.ok());
  // 03:00 in Berlin is 02:00 UTC in winter.
  EXPECT_EQ(NextFire(*daily, berlin, At("2026-11-26T10:00:00Z")), At("2026-11-27T02:00:00Z"));
  // 2027-03-28: 02:00-03:00 does not exist in Berlin; "30 2" fires once, at
  // the end of the gap.
  auto skipped = ParseCron("30 2 * * *");
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(NextFire(*skipped, berlin, At("2027-03-27T12:00:00Z")), At("2027-03-28T01:00:00Z"));
  // 2027-10-31: 02:30 happens twice; it fires at the first.
  EXPECT_EQ(NextFire(*skipped, berlin, At("2027-10-30T12:00:00Z")), At("2027-10-31T00:30:00Z"));
  EXPECT_EQ(NextFire(*skipped, berlin, At("2027-10-31T00:30:00Z")), At("2027-11-01T01:30:00Z"));
}

TEST(CronTest, LastFire) {
  absl::TimeZone utc = absl::UTCTimeZone();
  auto every5 = ParseCron("*/5 * * * *");
  ASSERT_TRUE(every5.ok());
  EXPECT_EQ(LastFire(*every5, utc, At("2026-11-26T10:07:00Z"), absl::Hours(1)), At("2026-11-26T10:05:00Z"));
  EXPECT_EQ(LastFire(*every5, utc, At("2026-11-26T10:05:00Z"), absl::Hours(1)), At("2026-11-26T10:05:00Z"));
  auto daily = ParseCron("0 3 * * *");
  ASSERT_TRUE(daily.ok());
  EXPECT_EQ(LastFire(*daily, utc, At("2026-11-26T10:00:00Z"), absl::Hours(1)), std::nullopt);
}

TEST(CronTest, RefusalsNameTheField) {
  struct Case {
    std::string cron, error;
  };
  const std::vector<Case> cases = {
      {"* * * *", "has 4 fields; a schedule has five"},
      {"60 * * * *", "minute: \"60\" is not a value, range or step of 0-59"},
      {"* 24 * * *", "hour: \"24\" is not a value"},
      {"* * 0 * *", "day of month: \"0\" is not a value, range or step of 1-31"},
      {"* * * FOO *", "month: \"FOO\" is not a value, range or step of 1-12 (or a name such as FEB)"},
      {"* * * * 5-1", "day of week: \"5-1\" is not a value"},
      {"*/0 * * * *", "minute: \"*/0\": the step after / is a number from 1 to 59"},
      {"@often", "has 1 fields"},
  };
  for (const Case& c : cases) {
    auto spec = ParseCron(c.cron);
    ASSERT_FALSE(spec.ok()) << c.cron;
    EXPECT_NE(spec.status().message().find(c.error), std::string::npos) << c.cron << ": " << spec.status();
  }
}

}  // namespace
}  // namespace mariposa
