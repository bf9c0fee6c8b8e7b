#include "projects/deletion.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mariposa {

DeletionPlan PlanDeletion(const ProjectHoldings& held, const std::vector<std::string>& agents,
                          const std::map<std::string, VolumeSpec>& volumes, bool delete_volumes) {
  DeletionPlan out;
  if (held.instances > 0) {
    out.removes.push_back(absl::StrCat(held.instances, held.instances == 1 ? " instance" : " instances"));
  }
  if (!agents.empty()) {
    out.removes.push_back(
        absl::StrCat("agent services ", absl::StrJoin(agents, ", "), " (uninstalled from their servers)"));
  }
  if (!held.firewall_rules.empty()) {
    out.removes.push_back(absl::StrCat("firewall rules ", absl::StrJoin(held.firewall_rules, ", ")));
  }
  std::map<std::string, std::vector<std::string>> served;  // network uuid -> the kept volumes served on it
  for (const ProjectHoldings::Volume& v : held.volumes) {
    auto spec = volumes.find(v.name);
    if (delete_volumes) {
      out.removes.push_back(absl::StrCat("volume ", v.name, " (--delete-volumes: its data is lost)"));
    } else if (spec != volumes.end() && spec->second.deletion_policy == "delete") {
      out.removes.push_back(absl::StrCat("volume ", v.name, " (deletion_policy: delete: its data is lost)"));
    } else {
      for (const std::string& net : v.networks) served[net].push_back(v.name);
      out.retains.push_back(absl::StrCat(
          "volume ", v.name, spec == volumes.end() ? " (not in the manifest)" : " (deletion_policy: retain)",
          " with its data; --delete-volumes deletes it"));
    }
  }
  // A network a kept volume is served on stays, and so does its VLAN (NAPI
  // deletes no VLAN that has networks).
  std::vector<std::string> fabric;
  std::set<int> kept_vlans;
  for (const ProjectHoldings::Network& n : held.networks) {
    auto s = served.find(n.uuid);
    if (s == served.end()) {
      fabric.push_back("network " + n.name);
      continue;
    }
    kept_vlans.insert(n.vlan_id);
    out.retains.push_back(
        absl::StrCat("fabric network ", n.name, " (volume ", absl::StrJoin(s->second, ", "), " is served on it)"));
  }
  for (int vlan : held.vlans) {
    if (!kept_vlans.count(vlan)) fabric.push_back(absl::StrCat("VLAN ", vlan));
    else out.retains.push_back(absl::StrCat("VLAN ", vlan, " (a kept network is on it)"));
  }
  if (!fabric.empty()) out.removes.push_back(absl::StrCat("fabric ", absl::StrJoin(fabric, ", ")));
  for (const std::string& api : held.unread) {
    out.removes.push_back(absl::StrCat("what it owns in ", api, " (not readable now; removed once it is)"));
  }
  return out;
}

}  // namespace mariposa
