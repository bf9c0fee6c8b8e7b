// Health changes into the store's event log (HEALTH.md: only changes are
// written): `instance.health` ("http: healthy -> unhealthy (status 503)")
// and `instance.flapping`, one transaction per batch. mariposad's
// coordinator writes each agent message's changes through this, before the
// controller acts on them, so the log reads in causal order.
#ifndef MARIPOSA_HEALTH_EVENTS_H_
#define MARIPOSA_HEALTH_EVENTS_H_

#include <vector>

#include "health/target.h"
#include "projects/store.h"

namespace mariposa::health {

// Writes `changes` (group = project uuid) as events in one transaction.
// A change from `unknown` (the first result after mariposad or an agent
// started) is left out when the project's newest kRecentHealthEvents health
// events already end that instance's check in the same state.
absl::Status WriteHealthEvents(ProjectStore* store, const std::vector<HealthChange>& changes);

inline constexpr int kRecentHealthEvents = 2000;

// For each change: whether it repeats what `recent` (events, oldest first)
// last recorded for its instance's check — only a change from unknown can.
std::vector<bool> AlreadyRecorded(const std::vector<HealthChange>& changes, const std::vector<EventRecord>& recent);

// Collects changes and writes them every `every` in one transaction, off
// the caller's thread: the controller acts on the coordinator's state at
// once, the event log follows. Each commit is an fsync that holds the store,
// so fewer of them keep API latency flat while thousands of checks run.
// A crash loses at most `every` of events, not health: agents report every
// state again when they reconnect. Thread-safe; flushes when destroyed.
}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_EVENTS_H_
