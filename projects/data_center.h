// What the Projects service asks of the data center, at apply and at a
// project's deletion. mariposad answers through its reconciler (which holds
// the catalog, the image cache and the listings), each call bounded by the
// apply check's deadline; without Triton (tests, a store-only mariposad)
// the service has none and checks nothing against a data center.
#ifndef MARIPOSA_PROJECTS_DATA_CENTER_H_
#define MARIPOSA_PROJECTS_DATA_CENTER_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "projects/image_plan.h"
#include "projects/manifest.h"
#include "projects/store.h"

namespace mariposa {

class DataCenter {
 public:
  virtual ~DataCenter() = default;
  // An applied manifest against the data center (packages, networks,
  // brands, images): located errors refuse the apply; an error status (the
  // catalog cannot be read) lets it through with a warning.
  // `owner`: the project's account ("" = mariposad's --owner).
  virtual absl::StatusOr<std::vector<ManifestDiagnostic>> CheckCatalog(const Manifest& m, const std::string& filename,
                                                                       const std::string& owner) = 0;
  // sdcadm's plan of the services whose image an apply changes (project
  // uuid "" = a new project).
  virtual absl::StatusOr<std::map<std::string, ImagePlan>> PlanImages(const std::string& project_uuid, const Manifest& m,
                                                                      const std::set<std::string>& services) = 0;
  // What a project (uuid) has in the data center (its instances, firewall
  // rules, fabric, volumes), so that a delete orphans none of them.
  virtual absl::StatusOr<ProjectHoldings> Holdings(const std::string& project_uuid) = 0;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_DATA_CENTER_H_
