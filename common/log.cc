#include "common/log.h"

#include "common/value.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace mariposa {
namespace {

void Emit(absl::string_view level, absl::string_view msg,
          std::initializer_list<LogField> fields) {
  // Log timestamps are the one place outside main() that reads the wall
  // clock: they describe when the line was written, not controller time.
  std::string line = absl::StrCat(
      "{\"ts\":",
      JsonQuote(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone())),
      ",\"level\":\"", level, "\",\"msg\":", JsonQuote(std::string(msg)));
  for (const auto& f : fields) absl::StrAppend(&line, ",", JsonQuote(std::string(f.first)), ":", JsonQuote(f.second));
  line += "}\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

void LogInfo(absl::string_view msg, std::initializer_list<LogField> fields) { Emit("info", msg, fields); }
void LogWarn(absl::string_view msg, std::initializer_list<LogField> fields) { Emit("warn", msg, fields); }
void LogError(absl::string_view msg, std::initializer_list<LogField> fields) { Emit("error", msg, fields); }

}  // namespace mariposa
