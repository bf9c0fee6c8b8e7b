// PAPI: /packages. Packages are read-only here (PAPI never deletes one); the
// seed or the defaults below give them.
#include <algorithm>

#include "deploy/tritonsim/datacenter.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {

json DataCenter::PackageJson(const Package& p) {
  json j = {{"uuid", p.uuid},
            {"name", p.name},
            {"version", p.version},
            {"active", p.active},
            {"max_physical_memory", p.max_physical_memory},
            {"quota", p.quota},
            {"max_swap", p.max_swap},
            {"max_lwps", p.max_lwps},
            {"cpu_cap", p.cpu_cap},
            {"zfs_io_priority", p.zfs_io_priority},
            {"fss", p.fss},
            {"default", false},
            {"v", 1}};
  if (p.vcpus > 0) j["vcpus"] = p.vcpus;
  if (!p.group.empty()) j["group"] = p.group;
  if (!p.description.empty()) j["description"] = p.description;
  if (!p.os.empty()) j["os"] = p.os;
  if (!p.brand.empty()) j["brand"] = p.brand;
  if (!p.owner_uuids.empty()) j["owner_uuids"] = p.owner_uuids;
  return j;
}

std::string DataCenter::LoadPackagesLocked(const json& list) {
  if (!list.is_array()) return "packages must be a list";
  packages_.clear();
  for (const auto& p : list) {
    if (!p.is_object()) return "every package must be an object";
    Package pk;
    pk.uuid = p.value("uuid", NewUuidLocked());
    pk.name = p.value("name", "");
    if (pk.name.empty() || !IsUuid(pk.uuid)) return "every package needs a name (and a uuid, when given, must be one)";
    pk.version = p.value("version", pk.version);
    pk.group = p.value("group", "");
    pk.description = p.value("description", "");
    pk.os = p.value("os", "");
    pk.brand = p.value("brand", "");
    // `ram` is accepted as another name of max_physical_memory (CloudAPI's
    // `memory`); both in MiB.
    pk.max_physical_memory = p.value("max_physical_memory", p.value("ram", pk.max_physical_memory));
    pk.quota = p.value("quota", pk.quota);
    pk.max_swap = p.value("max_swap", 2 * pk.max_physical_memory);
    pk.max_lwps = p.value("max_lwps", pk.max_lwps);
    pk.cpu_cap = p.value("cpu_cap", pk.cpu_cap);
    pk.vcpus = p.value("vcpus", pk.vcpus);
    pk.zfs_io_priority = p.value("zfs_io_priority", pk.zfs_io_priority);
    pk.fss = p.value("fss", pk.cpu_cap);
    pk.active = p.value("active", true);
    pk.owner_uuids = p.value("owner_uuids", std::vector<std::string>{});
    packages_[pk.uuid] = pk;
  }
  return "";
}

Reply DataCenter::ListPackages(const Params& q) {
  Reply r;
  if (!CheckParams(q, {"name", "active", "owner_uuids", "version", "limit", "offset"}, false, 409, &r)) return r;
  absl::MutexLock l(&mu_);
  std::vector<const Package*> out;
  for (const auto& kv : packages_) {
    const Package& p = kv.second;
    if (const std::string* v = Get(q, "name"); v && p.name != *v) continue;
    if (const std::string* v = Get(q, "version"); v && p.version != *v) continue;
    if (const std::string* v = Get(q, "active"); v && (p.active ? "true" : "false") != *v) continue;
    // PAPI's owner_uuids filter: packages of that owner and public ones.
    if (const std::string* v = Get(q, "owner_uuids");
        v && !p.owner_uuids.empty() && std::find(p.owner_uuids.begin(), p.owner_uuids.end(), *v) == p.owner_uuids.end()) {
      continue;
    }
    out.push_back(&p);
  }
  std::sort(out.begin(), out.end(), [](const Package* a, const Package* b) {
    return a->name != b->name ? a->name < b->name : a->version < b->version;
  });
  int64_t limit = 1000, offset = 0;
  if (const std::string* v = Get(q, "limit")) ParseInt(*v, &limit);
  if (const std::string* v = Get(q, "offset")) ParseInt(*v, &offset);
  r.body = json::array();
  for (size_t i = std::max<int64_t>(0, offset); i < out.size() && static_cast<int64_t>(r.body.size()) < limit; ++i) {
    r.body.push_back(PackageJson(*out[i]));
  }
  r.headers["x-resource-count"] = std::to_string(out.size());
  return r;
}

Reply DataCenter::GetPackage(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  auto it = packages_.find(uuid);
  if (it == packages_.end()) return Error(404, "ResourceNotFound", "Package " + uuid + " does not exist");
  Reply r;
  r.body = PackageJson(it->second);
  return r;
}

}  // namespace tritonsim
