// The goal convergence works toward: a project version decoded once into the
// manifest compiler's typed structures (ServiceSpec, with every default
// filled in by the compiler) plus the stored service rows (spec hash,
// count). Convergence never re-parses spec JSON. Thread-safe.
#ifndef MARIPOSA_CONVERGENCE_GOAL_H_
#define MARIPOSA_CONVERGENCE_GOAL_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "projects/manifest.h"
#include "projects/store.h"

namespace mariposa::convergence {

struct ServiceGoalSpec {
  ServiceRecord record;  // count, instance spec hash, image and package as stored
  ServiceSpec spec;      // the typed spec
  std::set<std::string> meta_keys;  // MetaKeysOf(spec), found once
};

struct ProjectGoal {
  std::string version_uuid;
  int64_t number = 0;
  std::string origin;  // how the version was made: apply | rollback | scale
  std::string author;
  absl::Time created_at = absl::InfinitePast();  // when the version was stored
  std::map<std::string, std::string> meta_defaults;  // the manifest's meta
  std::map<std::string, ServiceGoalSpec> services;   // by name
  std::map<std::string, FirewallRuleSpec> firewall;  // the manifest's firewall rules, by name
  std::optional<FabricSpec> fabric;                  // the manifest's fabric
  std::map<std::string, VolumeSpec> volumes;         // the manifest's volumes, by name
};

// The spec whose health checks (and start.window) an instance of `service`
// runs: that of the version it was created from (`version_uuid`, found in
// `older` by uuid), else the goal's. Checks belong to the spec version, as
// Kubernetes probes belong to the pod template: a changed check applies to
// the instances that roll out with it (stale_checks), not at once to the
// running ones. Null when the goal has no such service. A version not in
// `older` (the goal's own, deleted, unreadable) gives the goal's spec.
const ServiceSpec* HealthSpecFor(const ProjectGoal& goal,
                                 const std::map<std::string, std::shared_ptr<const ProjectGoal>>& older,
                                 const std::string& service, const std::string& version_uuid);

// Decodes versions on first use and keeps the most recent `capacity`.
class GoalCache {
 public:
  explicit GoalCache(size_t capacity = 256) : capacity_(capacity) {}
  // This data center's name (ReconcilerOptions::datacenter); set before
  // the first Get. A version that lists data centers is run as its entry
  // for this one makes it (ForDataCenter).
  void set_datacenter(std::string name) { datacenter_ = std::move(name); }
  // The goal of `version_uuid` of the project (DATA_LOSS when the stored
  // canonical text does not parse: the store is damaged; FAILED_PRECONDITION
  // when it lists data centers and this mariposad has no --datacenter).
  absl::StatusOr<std::shared_ptr<const ProjectGoal>> Get(ProjectStore* store, const std::string& project_uuid,
                                                         const std::string& version_uuid);
  int64_t decodes() const;  // versions decoded so far (each at most once while cached)

 private:
  size_t capacity_;
  std::string datacenter_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<const ProjectGoal>> goals_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> order_ ABSL_GUARDED_BY(mu_);  // oldest first
  int64_t decodes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_GOAL_H_
