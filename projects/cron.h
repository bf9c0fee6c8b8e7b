// Cron schedules for scheduled services (`schedule:`): the five fields of
// crontab(5) — minute, hour, day of month, month, day of week — with `*`,
// lists, ranges and steps (`*/15`, `1-5`, `MON-FRI`, `JAN`), the macros
// @hourly, @daily (@midnight), @weekly, @monthly, @yearly (@annually), in a
// time zone from the system's tz database. As in cron and Kubernetes, when
// both day fields are restricted a day matching either runs. Pure.
#ifndef MARIPOSA_PROJECTS_CRON_H_
#define MARIPOSA_PROJECTS_CRON_H_

#include <bitset>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace mariposa {

struct CronSpec {
  std::bitset<60> minutes;
  std::bitset<24> hours;
  std::bitset<32> days;     // 1..31
  std::bitset<13> months;   // 1..12
  std::bitset<7> weekdays;  // 0 = Sunday
  bool any_day = true, any_weekday = true;  // the field was `*`
};

// INVALID_ARGUMENT naming the field and what it takes.
absl::StatusOr<CronSpec> ParseCron(const std::string& text);

// The first time after `after` (strictly) that the schedule fires in `tz`,
// at a whole minute; nullopt when none within five years (e.g. 30 FEB). A
// local time skipped by a daylight-saving change fires at the instant after
// the gap; one repeated fires once, at its first occurrence.
std::optional<absl::Time> NextFire(const CronSpec& spec, const absl::TimeZone& tz, absl::Time after);

// The last time at or before `at` that it fires, searching back at most
// `horizon`; nullopt when none.
std::optional<absl::Time> LastFire(const CronSpec& spec, const absl::TimeZone& tz, absl::Time at,
                                   absl::Duration horizon);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_CRON_H_
