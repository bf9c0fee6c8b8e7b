#include "convergence/observer.h"

#include "absl/time/time.h"
#include "common/status_macros.h"

namespace mariposa::convergence {

absl::Time ParseTimestamp(const std::string& iso) {
  absl::Time t;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, iso, &t, &err)) return t;
  return absl::InfinitePast();
}

absl::StatusOr<std::vector<InstanceState>> Observer::ObserveProject(
    const std::string& project_uuid, const std::map<std::string, int64_t>& version_numbers) {
  triton::VmFilter filter;
  filter.tags = {{kTagProject, project_uuid}};
  auto vms = vmapi_->ListVms(filter);
  if (!vms.ok()) return Annotate(vms.status(), "observing project " + project_uuid);
  std::vector<InstanceState> out;
  for (const triton::Vm& vm : *vms) {
    if (vm.state == "destroyed") continue;
    auto tag = [&](const char* k) {
      auto it = vm.tags.find(k);
      return it == vm.tags.end() ? std::string() : it->second;
    };
    // A VM that claims the project but lacks the other ownership tags was
    // not made by us (or was edited by hand): leave it alone.
    if (tag(kTagProject) != project_uuid || tag(kTagService).empty()) continue;
    InstanceState i;
    i.uuid = vm.uuid;
    i.service = tag(kTagService);
    i.alias = vm.alias;
    i.state = vm.state;
    i.health = "unknown";
    i.spec_hash = tag(kTagSpec);
    auto v = version_numbers.find(tag(kTagVersion));
    i.version = v == version_numbers.end() ? 0 : v->second;
    i.created = ParseTimestamp(vm.create_timestamp);
    i.version_uuid = tag(kTagVersion);
    i.image_uuid = vm.image_uuid;
    i.server_uuid = vm.server_uuid;
    out.push_back(std::move(i));
  }
  return out;
}

}  // namespace mariposa::convergence
