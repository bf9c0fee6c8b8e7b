// Health changes into the store's event log (HEALTH.md: only changes are
// written): `instance.health` ("http: healthy -> unhealthy (status 503)")
// and `instance.flapping`, one transaction per batch. mariposad's
// coordinator writes through this.
#ifndef MARIPOSA_HEALTH_EVENTS_H_
#define MARIPOSA_HEALTH_EVENTS_H_

#include <functional>
#include <vector>

#include "health/target.h"
#include "projects/store.h"

namespace mariposa::health {

// Writes `changes` (group = project uuid) as events in one transaction.
absl::Status WriteHealthEvents(ProjectStore* store, const std::vector<HealthChange>& changes);

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_EVENTS_H_
