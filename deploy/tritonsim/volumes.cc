// VOLAPI (sdc-volapi's docs/api/README.md): RFD 26 NFS shared volumes, the
// VMs that reference them, and the sizes on offer.
#include <algorithm>
#include <regex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ids.h"
#include "deploy/tritonsim/datacenter.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {
namespace {

// VOLAPI's sizes in MiB: 10 to 100 GiB by 10, then to 1000 GiB by 100.
std::vector<int64_t> Sizes() {
  std::vector<int64_t> out;
  for (int64_t g = 10; g <= 100; g += 10) out.push_back(g * 1024);
  for (int64_t g = 200; g <= 1000; g += 100) out.push_back(g * 1024);
  return out;
}

bool Active(const std::string& state) { return state != "destroyed" && state != "failed"; }

}  // namespace

json DataCenter::VolumeJson(const Volume& v) const {
  return json{{"uuid", v.uuid},
              {"owner_uuid", v.owner_uuid},
              {"name", v.name},
              {"type", v.type},
              {"size", v.size},
              {"state", v.state},
              {"networks", v.networks},
              {"filesystem_path", v.filesystem_path},
              {"create_timestamp", Iso(v.create_ms)},
              {"refs", RefsLocked(v)}};
}

std::vector<std::string> DataCenter::RefsLocked(const Volume& v) const {
  std::vector<std::string> refs;
  for (const auto& [uuid, vm] : vms_) {
    if (vm.owner_uuid != v.owner_uuid || !Active(vm.state)) continue;
    for (const json& m : vm.volumes) {
      if (m.is_object() && m.value("name", "") == v.name) {
        refs.push_back(uuid);
        break;
      }
    }
  }
  return refs;
}

std::string DataCenter::CheckMountsLocked(const json& volumes, const std::string& owner) const {
  if (!volumes.is_array()) return "volumes must be an array of {name, type, mode, mountpoint}";
  for (const json& m : volumes) {
    if (!m.is_object() || !m.contains("name") || !m["name"].is_string() || !m.contains("mountpoint") ||
        !m["mountpoint"].is_string() || m["mountpoint"].get<std::string>().rfind('/', 0) != 0) {
      return "each volume needs a name and an absolute mountpoint";
    }
    std::string mode = m.value("mode", "rw");
    if (mode != "rw" && mode != "ro") return "volume mode must be rw or ro";
    const Volume* found = nullptr;
    for (const auto& [uuid, v] : volumes_) {
      if (v.owner_uuid == owner && v.name == m["name"]) found = &v;
    }
    if (found == nullptr) return absl::StrCat("volume ", m["name"].get<std::string>(), " not found");
    if (found->state != "ready") {
      return absl::StrCat("volume ", found->name, " is ", found->state, ", not ready");
    }
  }
  return "";
}

Reply DataCenter::ListVolumes(const Params& q) {
  Reply r;
  if (!CheckParams(q, {"owner_uuid", "name", "state", "type", "size"}, false, 409, &r)) return r;
  absl::MutexLock l(&mu_);
  r.body = json::array();
  for (const auto& [uuid, v] : volumes_) {
    if (const std::string* o = Get(q, "owner_uuid"); o && v.owner_uuid != *o) continue;
    if (const std::string* n = Get(q, "name"); n && v.name != *n) continue;
    if (const std::string* s = Get(q, "state"); s && v.state != *s) continue;
    if (const std::string* t = Get(q, "type"); t && v.type != *t) continue;
    r.body.push_back(VolumeJson(v));
  }
  return r;
}

Reply DataCenter::GetVolume(const std::string& uuid, const Params& q) {
  absl::MutexLock l(&mu_);
  auto it = volumes_.find(uuid);
  const std::string* owner = Get(q, "owner_uuid");
  if (it == volumes_.end() || (owner != nullptr && it->second.owner_uuid != *owner)) {
    return Error(404, "VolumeNotFound", "Volume not found");
  }
  Reply r;
  r.body = VolumeJson(it->second);
  return r;
}

Reply DataCenter::CreateVolume(const json& body) {
  if (!body.is_object()) return Validation(409, "name", "Invalid", "the body must be a JSON object");
  Volume v;
  v.owner_uuid = body.value("owner_uuid", "");
  if (!mariposa::IsUuid(v.owner_uuid)) return Validation(409, "owner_uuid", "Invalid", "owner_uuid must be a UUID");
  v.name = body.value("name", "");
  static const std::regex kName("^[a-zA-Z0-9][a-zA-Z0-9_.-]+$");
  if (v.name.size() > 256 || !std::regex_match(v.name, kName)) {
    return Validation(409, "name", "Invalid", "names match /^[a-zA-Z0-9][a-zA-Z0-9_\\.\\-]+$/, at most 256");
  }
  v.type = body.value("type", "tritonnfs");
  if (v.type != "tritonnfs") return Validation(409, "type", "Invalid", "type must be tritonnfs");
  if (body.contains("size")) {
    if (!body["size"].is_number_integer()) return Validation(409, "size", "Invalid", "size must be a number of MiB");
    v.size = body["size"];
    std::vector<int64_t> sizes = Sizes();
    if (std::find(sizes.begin(), sizes.end(), v.size) == sizes.end()) {
      return Error(409, "VolumeSizeNotAvailable", absl::StrCat("Volume size ", v.size, " is not available"));
    }
  }
  v.networks = body.value("networks", std::vector<std::string>{});
  absl::MutexLock l(&mu_);
  for (const std::string& n : v.networks) {
    auto net = networks_.find(n);
    if (net == networks_.end() || !net->second.fabric || net->second.owner_uuid != v.owner_uuid) {
      return Validation(409, "networks", "Invalid", absl::StrCat("network ", n, " is not a fabric network of the owner"));
    }
  }
  for (const auto& [uuid, other] : volumes_) {
    if (other.owner_uuid == v.owner_uuid && other.name == v.name) {
      return Error(409, "VolumeAlreadyExists", absl::StrCat("Volume with name ", v.name, " already exists"));
    }
  }
  v.uuid = NewUuidLocked();
  v.create_ms = NowMs();
  v.filesystem_path = absl::StrCat("192.168.128.", volumes_.size() % 250 + 2, ":/exports/data");
  volumes_[v.uuid] = v;
  std::string id = v.uuid;
  ScheduleLocked(LatencyLocked(), [this, id] {
    auto it = volumes_.find(id);
    if (it != volumes_.end() && it->second.state == "creating") it->second.state = "ready";
  });
  Reply r;
  r.status = 202;
  r.body = VolumeJson(v);
  return r;
}

Reply DataCenter::DeleteVolume(const std::string& uuid, const Params& q) {
  absl::MutexLock l(&mu_);
  auto it = volumes_.find(uuid);
  const std::string* owner = Get(q, "owner_uuid");
  if (it == volumes_.end() || (owner != nullptr && it->second.owner_uuid != *owner)) {
    return Error(404, "VolumeNotFound", "Volume not found");
  }
  const std::string* force = Get(q, "force");
  std::vector<std::string> refs = RefsLocked(it->second);
  if (!refs.empty() && (force == nullptr || *force != "true")) {
    return Error(409, "VolumeInUse", absl::StrCat("Volume with name ", it->second.name,
                                                  " is used by: ", absl::StrJoin(refs, ", ")));
  }
  it->second.state = "deleting";
  ScheduleLocked(LatencyLocked(), [this, uuid] { volumes_.erase(uuid); });
  Reply r;
  r.status = 204;
  return r;
}

Reply DataCenter::VolumeReferences(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  auto it = volumes_.find(uuid);
  if (it == volumes_.end()) return Error(404, "VolumeNotFound", "Volume not found");
  Reply r;
  r.body = RefsLocked(it->second);
  return r;
}

Reply DataCenter::VolumeSizes(const Params& q) {
  Reply r;
  if (!CheckParams(q, {"type"}, false, 409, &r)) return r;
  r.body = json::array();
  for (int64_t s : Sizes()) r.body.push_back({{"size", s}, {"type", "tritonnfs"}});
  return r;
}

}  // namespace tritonsim
