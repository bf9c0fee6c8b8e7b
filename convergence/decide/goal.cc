#include "convergence/decide/goal.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "projects/meta_drift.h"

namespace mariposa::convergence {

const ServiceSpec* HealthSpecFor(const ProjectGoal& goal,
                                 const std::map<std::string, std::shared_ptr<const ProjectGoal>>& older,
                                 const std::string& service, const std::string& version_uuid) {
  auto g = goal.services.find(service);
  if (g == goal.services.end()) return nullptr;
  auto v = older.find(version_uuid);
  if (v == older.end() || v->second == nullptr) return &g->second.spec;
  auto then = v->second->services.find(service);
  return then == v->second->services.end() ? &g->second.spec : &then->second.spec;
}

absl::StatusOr<std::shared_ptr<const ProjectGoal>> GoalCache::Get(ProjectStore* store, const std::string& project_uuid,
                                                                  const std::string& version_uuid) {
  {
    absl::MutexLock l(&mu_);
    auto it = goals_.find(version_uuid);
    if (it != goals_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(VersionRecord v, store->GetVersion(project_uuid, version_uuid, /*include_text=*/true));
  ASSIGN_OR_RETURN(std::vector<ServiceRecord> rows, store->ListServices(version_uuid));
  ParseOptions o;
  o.stored = true;
  ParseResult parsed = ParseManifest(v.canonical, o);
  if (!parsed.manifest) {
    return absl::DataLossError(absl::StrCat("stored version ", v.number, " of project ", project_uuid,
                                            " does not parse: ", DiagnosticsToStatus(parsed.errors).message()));
  }
  if (!parsed.manifest->datacenters.empty()) {
    // Never read as "no data center, so nothing runs": that would remove
    // every instance of a mariposad started without its name.
    if (datacenter_.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "version ", v.number, " lists data centers (datacenters:) but this mariposad has no --datacenter; "
          "restart it with --datacenter NAME: nothing of the project is changed until then"));
    }
    parsed.manifest = ForDataCenter(std::move(*parsed.manifest), datacenter_);
  }
  auto goal = std::make_shared<ProjectGoal>();
  goal->version_uuid = version_uuid;
  goal->number = v.number;
  goal->origin = v.origin;
  goal->author = v.author;
  goal->created_at = v.created_at;
  goal->meta_defaults = parsed.manifest->meta;
  goal->firewall = parsed.manifest->firewall;
  goal->fabric = parsed.manifest->fabric;
  goal->volumes = parsed.manifest->volumes;
  for (ServiceRecord& r : rows) {
    auto spec = parsed.manifest->services.find(r.name);
    if (spec == parsed.manifest->services.end()) {
      return absl::DataLossError(absl::StrCat("stored version ", v.number, " lists service ", r.name,
                                              " that its canonical text does not have"));
    }
    std::string name = r.name;
    goal->services[name] = ServiceGoalSpec{std::move(r), spec->second, MetaKeysOf(spec->second)};
  }
  absl::MutexLock l(&mu_);
  ++decodes_;
  auto [it, inserted] = goals_.emplace(version_uuid, std::move(goal));
  if (inserted) {
    order_.push_back(version_uuid);
    while (order_.size() > capacity_) {
      goals_.erase(order_.front());
      order_.pop_front();
    }
  }
  return it->second;
}

int64_t GoalCache::decodes() const {
  absl::MutexLock l(&mu_);
  return decodes_;
}

}  // namespace mariposa::convergence
