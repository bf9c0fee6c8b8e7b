#include "convergence/engine_data_center.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convergence/decide/agents.h"
#include "convergence/decide/catalog.h"
#include "convergence/decide/images.h"
#include "convergence/informer/observer.h"
#include "convergence/reconciler.h"

namespace mariposa::convergence {

EngineDataCenter::EngineDataCenter(ProjectStore* store, triton::VmapiClient* vmapi, const ReconcilerOptions* options,
                                   TritonCatalog* catalog, Gatherer* gather, OwnedObjects* owned,
                                   std::function<void(const std::string&, const absl::Status&)> note_api)
    : store_(store),
      vmapi_(vmapi),
      options_(options),
      catalog_(catalog),
      gather_(gather),
      owned_(owned),
      note_api_(std::move(note_api)) {}

absl::StatusOr<std::map<std::string, ImagePlan>> EngineDataCenter::PlanImages(const std::string& project_uuid,
                                                                              const Manifest& m,
                                                                              const std::set<std::string>& services) {
  std::map<std::string, ImagePlan> out;
  std::optional<std::vector<triton::Server>> servers;
  std::optional<std::vector<triton::Vm>> vms;
  std::optional<std::map<std::string, std::vector<triton::Vm>>> zones;  // core zones by role
  // The version of each image an instance runs, by uuid (asked once).
  std::map<std::string, std::string> labels, versions, names;
  auto version_of = [&](const std::string& uuid) {
    if (!labels.count(uuid)) {
      auto im = catalog_->Resolve(uuid);
      labels[uuid] = im.ok() ? absl::StrCat(im->name, "@", im->version) : "";
      versions[uuid] = im.ok() ? im->version : "";
      names[uuid] = im.ok() ? im->name : "";
    }
  };
  for (const std::string& name : services) {
    auto it = m.services.find(name);
    if (it == m.services.end()) continue;
    const ServiceSpec& spec = it->second;
    auto image = catalog_->Resolve(spec.image);
    if (!image.ok()) continue;
    ImagePlan plan;
    plan.image_uuid = image->uuid;
    plan.label = absl::StrCat(image->name, "@", image->version);
    if (!image->source.empty()) {
      plan.download_bytes = std::max<int64_t>(1, image->size);
      plan.source = image->source;
    }
    std::map<std::string, ImagePlanStep> from;  // by image uuid or label
    // `version` of an image named `name`: only another version of the same
    // image can be a downgrade (a new image of another name is a change).
    auto count = [&](const std::string& uuid, const std::string& label, const std::string& name,
                     const std::string& version) {
      plan.instances++;
      if (!uuid.empty() ? uuid == image->uuid : version == image->version) {
        plan.already++;
        return;
      }
      ImagePlanStep& st = from[uuid.empty() ? label : uuid];
      st.image_uuid = uuid;
      st.label = label;
      st.count++;
      st.downgrade = name == image->name && !version.empty() && CompareVersions(image->version, version) < 0;
    };
    if (spec.compute_type == "agent") {
      plan.agent = true;
      if (options_->cnapi == nullptr) continue;
      if (!servers) {
        auto got = options_->cnapi->ListServers();
        note_api_("CNAPI", got.status());
        if (!got.ok()) return got.status();
        servers = std::move(*got);
      }
      AgentGoal goal = AgentGoalFor(name, spec, *image);
      for (const triton::Server* s : SelectServers(goal, *servers)) {
        const triton::Agent* a = AgentOn(goal, *s);
        if (a == nullptr) count("", "not installed", "", "");
        else count(a->image_uuid, absl::StrCat(a->name, "@", a->version), a->name, a->version);
      }
    } else if (spec.compute_type == "core" && !options_->admin_owner_uuid.empty()) {
      // Its zones, adopted or not yet (found by role, as AdoptCoreZones).
      if (!zones) {
        auto got = gather_->CoreZones();
        if (!got.ok()) return got.status();
        zones = std::move(*got);
      }
      for (const triton::Vm& v : (*zones)[name]) {
        auto claimed = v.tags.find(kTagProject);
        if (claimed != v.tags.end() && claimed->second != project_uuid) continue;
        version_of(v.image_uuid);
        count(v.image_uuid, labels[v.image_uuid], names[v.image_uuid], versions[v.image_uuid]);
      }
    } else if (!project_uuid.empty()) {
      if (!vms) {
        ASSIGN_OR_RETURN(ProjectRecord project, store_->GetProject(project_uuid));
        triton::VmFilter f;
        f.tags = {{kTagProject, project_uuid}};
        f.owner_uuid = TenantOf(project, *options_);
        f.state = "active";
        auto got = vmapi_->ListVms(f);
        note_api_("VMAPI", got.status());
        if (!got.ok()) return got.status();
        vms = std::move(*got);
      }
      for (const triton::Vm& v : *vms) {
        auto svc = v.tags.find(kTagService);
        if (svc == v.tags.end() || svc->second != name || v.tags.count(kTagPreserved)) continue;
        version_of(v.image_uuid);
        count(v.image_uuid, labels[v.image_uuid], names[v.image_uuid], versions[v.image_uuid]);
      }
    }
    for (auto& kv : from) plan.from.push_back(std::move(kv.second));
    std::stable_sort(plan.from.begin(), plan.from.end(),
                     [](const ImagePlanStep& a, const ImagePlanStep& b) { return a.count > b.count; });
    out[name] = std::move(plan);
  }
  return out;
}

absl::StatusOr<std::vector<ManifestDiagnostic>> EngineDataCenter::CheckCatalog(const Manifest& m,
                                                                               const std::string& filename,
                                                                               const std::string& owner) {
  ASSIGN_OR_RETURN(std::shared_ptr<const Catalog> read, catalog_->Now());
  Catalog catalog = *read;
  catalog.images = [this](const std::string& ref) { return catalog_->Resolve(ref); };
  return convergence::CheckCatalog(m, catalog, owner.empty() ? options_->owner_uuid : owner, options_->admin_owner_uuid,
                                filename);
}

absl::StatusOr<ProjectHoldings> EngineDataCenter::Holdings(const std::string& project_uuid) {
  ASSIGN_OR_RETURN(ProjectRecord p, store_->GetProject(project_uuid));
  ProjectHoldings h;
  for (const std::string& owner : OwnersOf(p, *options_)) {
    triton::VmFilter f;
    f.tags = {{kTagProject, p.uuid}};
    f.owner_uuid = owner;
    f.state = "active";
    ASSIGN_OR_RETURN(int64_t n, vmapi_->CountVms(f));
    h.instances += n;
  }
  owned_->AddHoldings(p, &h);
  return h;
}

}  // namespace mariposa::convergence
