// Structured logging: one JSON object per line on stderr
// ({"ts":"…","level":"info","msg":"…", "key":"value", …}). Thread-safe.
#ifndef MARIPOSA_COMMON_LOG_H_
#define MARIPOSA_COMMON_LOG_H_

#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "common/clock.h"

namespace mariposa {

// The clock that stamps log lines ("ts"); main() sets it. Until then lines
// carry no timestamp.
void SetLogClock(const Clock* clock);

using LogField = std::pair<absl::string_view, std::string>;

void LogInfo(absl::string_view msg, std::initializer_list<LogField> fields = {});
void LogWarn(absl::string_view msg, std::initializer_list<LogField> fields = {});
void LogError(absl::string_view msg, std::initializer_list<LogField> fields = {});

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_LOG_H_
