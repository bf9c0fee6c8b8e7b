#include "projects/deletion.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mariposa {

DeletionPlan PlanDeletion(const ProjectHoldings& held, const std::vector<std::string>& agents,
                          const std::map<std::string, VolumeSpec>& volumes, bool delete_volumes) {
  DeletionPlan out;
  if (held.instances > 0) out.removes.push_back(absl::StrCat(held.instances, held.instances == 1 ? " instance" : " instances"));
  if (!agents.empty()) {
    out.removes.push_back(absl::StrCat("agent services ", absl::StrJoin(agents, ", "), " (uninstalled from their servers)"));
  }
  if (!held.firewall_rules.empty()) {
    out.removes.push_back(absl::StrCat("firewall rules ", absl::StrJoin(held.firewall_rules, ", ")));
  }
  bool kept_volume = false;
  for (const std::string& name : held.volumes) {
    auto spec = volumes.find(name);
    if (delete_volumes) {
      out.removes.push_back(absl::StrCat("volume ", name, " (--delete-volumes: its data is lost)"));
    } else if (spec != volumes.end() && spec->second.deletion_policy == "delete") {
      out.removes.push_back(absl::StrCat("volume ", name, " (deletion_policy: delete: its data is lost)"));
    } else {
      kept_volume = true;
      out.retains.push_back(absl::StrCat(
          "volume ", name, spec == volumes.end() ? " (not in the manifest)" : " (deletion_policy: retain)",
          " with its data; --delete-volumes deletes it"));
    }
  }
  if (!held.fabric.empty()) {
    out.removes.push_back(absl::StrCat("fabric ", absl::StrJoin(held.fabric, ", ")));
    if (kept_volume) out.retains.push_back("the fabric network each kept volume is served on, and its VLAN");
  }
  for (const std::string& api : held.unread) {
    out.removes.push_back(absl::StrCat("what it owns in ", api, " (not readable now; removed once it is)"));
  }
  return out;
}

}  // namespace mariposa
