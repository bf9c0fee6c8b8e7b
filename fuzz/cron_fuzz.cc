// A cron expression (projects/cron.h): an accepted one fires, if at all,
// after the time asked and at most a few years on, in UTC and in a zone
// with daylight saving time.
#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "projects/cron.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto spec = mariposa::ParseCron(std::string(reinterpret_cast<const char*>(data), size));
  if (!spec.ok()) return 0;
  absl::Time after = absl::FromUnixSeconds(1700000000);
  absl::TimeZone zones[2] = {absl::UTCTimeZone(), absl::FixedTimeZone(-5 * 3600)};
  for (const absl::TimeZone& tz : zones) {
    auto next = mariposa::NextFire(*spec, tz, after);
    if (next && *next <= after) __builtin_trap();
    auto last = mariposa::LastFire(*spec, tz, after, absl::Hours(24 * 8));
    if (last && *last > after) __builtin_trap();
  }
  return 0;
}
