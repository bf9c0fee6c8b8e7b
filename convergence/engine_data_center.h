// What apply and a project's deletion ask of the data center
// (projects/data_center.h), answered from the engine's own readers: the
// catalog and images as TritonCatalog keeps them, core zones through the
// Gatherer, the project's VMs from VMAPI and what it owns in FWAPI, NAPI
// and VOLAPI through OwnedObjects. It decides nothing and keeps nothing.
#ifndef MARIPOSA_CONVERGENCE_ENGINE_DATA_CENTER_H_
#define MARIPOSA_CONVERGENCE_ENGINE_DATA_CENTER_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "convergence/gather.h"
#include "convergence/informer/triton_catalog.h"
#include "convergence/owned/owned_objects.h"
#include "projects/data_center.h"

namespace mariposa::convergence {

struct ReconcilerOptions;

class EngineDataCenter : public DataCenter {
 public:
  // `note_api`: remembers each Triton call's outcome (the reconciler's
  // failing-API problems). All collaborators must outlive it.
  EngineDataCenter(ProjectStore* store, triton::VmapiClient* vmapi, const ReconcilerOptions* options,
                   TritonCatalog* catalog, Gatherer* gather, OwnedObjects* owned,
                   std::function<void(const std::string& api, const absl::Status& st)> note_api);

  // Apply's check (CheckCatalog) of a manifest against the catalog and
  // IMGAPI; an error status when the catalog cannot be read.
  // `owner`: the project's account ("" = --owner).
  absl::StatusOr<std::vector<ManifestDiagnostic>> CheckCatalog(const Manifest& m, const std::string& filename,
                                                               const std::string& owner) override;
  // sdcadm's plan for `services` of manifest `m` (project uuid "" = a new
  // project): for each, its target image and which of its instances
  // (servers, for agents) move from which image. Services whose image
  // cannot be resolved are left out (apply's check reports them).
  absl::StatusOr<std::map<std::string, ImagePlan>> PlanImages(const std::string& project_uuid, const Manifest& m,
                                                              const std::set<std::string>& services) override;
  // How many active VMs the project (uuid) has under its accounts, and what
  // it owns in FWAPI, NAPI and VOLAPI (the APIs mariposad has addresses
  // for): what deleting it must remove first.
  absl::StatusOr<ProjectHoldings> Holdings(const std::string& project_uuid) override;

 private:
  ProjectStore* store_;
  triton::VmapiClient* vmapi_;
  const ReconcilerOptions* options_;
  TritonCatalog* catalog_;
  Gatherer* gather_;
  OwnedObjects* owned_;
  std::function<void(const std::string&, const absl::Status&)> note_api_;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_ENGINE_DATA_CENTER_H_
