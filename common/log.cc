#include "common/log.h"

#include "common/value.h"

#include <atomic>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace mariposa {
namespace {

std::atomic<const Clock*> log_clock{nullptr};

void Emit(absl::string_view level, absl::string_view msg,
          std::initializer_list<LogField> fields) {
  // Stamped with the clock main() gave (SetLogClock); without one, no "ts".
  const Clock* clock = log_clock.load();
  std::string line = "{";
  if (clock != nullptr) {
    absl::StrAppend(&line, "\"ts\":",
                    JsonQuote(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", clock->Now(), absl::UTCTimeZone())), ",");
  }
  absl::StrAppend(&line, "\"level\":\"", level, "\",\"msg\":", JsonQuote(std::string(msg)));
  for (const auto& f : fields) absl::StrAppend(&line, ",", JsonQuote(std::string(f.first)), ":", JsonQuote(f.second));
  line += "}\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

void SetLogClock(const Clock* clock) { log_clock.store(clock); }

void LogInfo(absl::string_view msg, std::initializer_list<LogField> fields) { Emit("info", msg, fields); }
void LogWarn(absl::string_view msg, std::initializer_list<LogField> fields) { Emit("warn", msg, fields); }
void LogError(absl::string_view msg, std::initializer_list<LogField> fields) { Emit("error", msg, fields); }

}  // namespace mariposa
