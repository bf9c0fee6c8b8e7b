// `mariposa history`: one timeline of a project's versions and the tasks
// that acted on it — when, who, what and the result. Pure: built from the
// ListVersions and ListTasks answers.
#ifndef MARIPOSA_CLI_HISTORY_H_
#define MARIPOSA_CLI_HISTORY_H_

#include <string>
#include <vector>

#include "proto/mariposa/v1/projects.pb.h"
#include "proto/mariposa/v1/queue.pb.h"

namespace mariposa::cli {

struct HistoryRow {
  int64_t at_nanos = 0;  // sort key
  std::string when;      // filled by the caller's time format
  std::string who;
  std::string what;
  std::string result;
};

// The event kinds history shows besides versions and tasks: what mariposad
// did in FWAPI, NAPI and VOLAPI, and deletion requests.
extern const char* const kHistoryEventKinds[4];

// Oldest first; a version comes before the tasks it started, and those
// before the events of the same instant. The same event row repeated in a
// row is one row whose result ends "(N times, the last at WHEN)". `format_time` formats a timestamp
// for `when`.
std::vector<HistoryRow> History(const std::vector<v1::Version>& versions, const std::vector<v1::Task>& tasks,
                                const std::vector<v1::Event>& events,
                                std::string (*format_time)(const google::protobuf::Timestamp&));

}  // namespace mariposa::cli

#endif  // MARIPOSA_CLI_HISTORY_H_
