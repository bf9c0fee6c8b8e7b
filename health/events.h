// Health changes into the store's event log (HEALTH.md: only changes are
// written): `instance.health` ("http: healthy -> unhealthy (status 503)")
// and `instance.flapping`, one transaction per batch. mariposad's
// coordinator writes through a HealthEventSink.
#ifndef MARIPOSA_HEALTH_EVENTS_H_
#define MARIPOSA_HEALTH_EVENTS_H_

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/time.h"

#include "health/target.h"
#include "projects/store.h"

namespace mariposa::health {

// Writes `changes` (group = project uuid) as events in one transaction.
absl::Status WriteHealthEvents(ProjectStore* store, const std::vector<HealthChange>& changes);

// Collects changes and writes them every `every` in one transaction, off
// the caller's thread: the controller acts on the coordinator's state at
// once, the event log follows. Each commit is an fsync that holds the store,
// so fewer of them keep API latency flat while thousands of checks run.
// A crash loses at most `every` of events, not health: agents report every
// state again when they reconnect. Thread-safe; flushes when destroyed.
inline constexpr absl::Duration kHealthEventFlush = absl::Seconds(1);  // mariposad's

class HealthEventSink {
 public:
  HealthEventSink(ProjectStore* store, absl::Duration every);
  ~HealthEventSink();
  void Add(const std::vector<HealthChange>& changes);
  int64_t transactions() const;

 private:
  void Flush(std::unique_lock<std::mutex>& l);
  ProjectStore* store_;
  absl::Duration every_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<HealthChange> pending_;
  int64_t transactions_ = 0;
  std::thread thread_;
};

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_EVENTS_H_
