// What a health agent is asked to check and what it reports back: shared by
// the monitor (which runs checks), the coordinator in mariposad (which
// shards them over agents) and the wire format between the two.
#ifndef MARIPOSA_HEALTH_TARGET_H_
#define MARIPOSA_HEALTH_TARGET_H_

#include <string>

#include "absl/time/time.h"
#include "health/check_engine.h"
#include "health/state_machine.h"

namespace mariposa::health {

struct Target {
  std::string instance;  // uuid
  std::string check;     // the check's name in the manifest
  CheckSpec spec;
  CheckPolicy policy;
  absl::Time created;    // the instance's creation (its start window runs from there, or from when
                         // its check begins if later: HealthMonitor::Assign)
  std::string network;   // the network the address is on (agents with --network take only theirs);
                         // spec.address "" = the instance has no NIC there: the check fails
  std::string alias;     // the instance's alias, named in events (mariposad only; not sent to agents)
  // What a failure of the check means (mariposad only; not sent to agents):
  // readiness (out of discovery, rollouts wait), liveness (replaced), or both.
  bool readiness = true;
  bool liveness = true;
};

// instance/check: one check of one instance.
inline std::string TargetKey(const std::string& instance, const std::string& check) {
  return instance + "/" + check;
}
inline std::string TargetKey(const Target& t) { return TargetKey(t.instance, t.check); }

// Whether a and b ask for the same check (a changed target restarts its state).
bool SameTarget(const Target& a, const Target& b);

struct HealthChange {
  std::string group;     // what Assign named (a project uuid)
  std::string instance;
  std::string check;
  Health from = Health::kUnknown;
  Health to = Health::kUnknown;
  bool flapping = false;
  std::string detail;    // the failing result's reason
  std::string alias;     // the instance's alias ("" when not known)
};

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_TARGET_H_
