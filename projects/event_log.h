// The append-only event log. One part of ProjectStore (store.h);
// SqlProjectStore implements it on SQLite and PostgreSQL (sql_events.cc).
#ifndef MARIPOSA_PROJECTS_EVENT_LOG_H_
#define MARIPOSA_PROJECTS_EVENT_LOG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "projects/store_records.h"
#include "common/change_signal.h"

namespace mariposa {

class EventLog {
 public:
  virtual ~EventLog() = default;

  // Events after `after_index`, oldest first; `project` empty for all;
  // `kinds` non-empty: only those kinds, or those under a prefix ending in
  // "." ("volume.").
  virtual absl::StatusOr<std::vector<EventRecord>> ListEvents(const std::string& project, int64_t after_index,
                                                              int limit, const std::vector<std::string>& kinds) = 0;
  absl::StatusOr<std::vector<EventRecord>> ListEvents(const std::string& project, int64_t after_index, int limit) {
    return ListEvents(project, after_index, limit, {});
  }
  // The newest `limit` events after `after_index` (oldest first).
  virtual absl::StatusOr<std::vector<EventRecord>> ListNewestEvents(const std::string& project, int64_t after_index,
                                                                    int limit,
                                                                    const std::vector<std::string>& kinds) = 0;
  absl::StatusOr<std::vector<EventRecord>> ListNewestEvents(const std::string& project, int64_t after_index,
                                                            int limit) {
    return ListNewestEvents(project, after_index, limit, {});
  }
  // How many events of `project` ("" = all) and `kinds` have an index in
  // (after, before).
  virtual absl::StatusOr<int64_t> CountEvents(const std::string& project, int64_t after_index, int64_t before_index,
                                              const std::vector<std::string>& kinds) = 0;
  virtual absl::StatusOr<int64_t> LastEventIndex() = 0;
  // Moves when events were committed (here, or on another node when the
  // daemon relays the database's notices to it); null when the store cannot
  // tell, and readers poll.
  virtual ChangeSignal* EventsSignal() { return nullptr; }
  // Appends a controller event (instance.create, …); returns its index.
  // Appends controller events in one transaction (one fsync for many).
  virtual absl::Status AppendEvents(const std::vector<EventRecord>& events) = 0;
  virtual absl::StatusOr<int64_t> AppendEvent(const std::string& actor, const std::string& project,
                                              const std::string& kind, const std::string& subject,
                                              const std::string& detail) = 0;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_EVENT_LOG_H_
