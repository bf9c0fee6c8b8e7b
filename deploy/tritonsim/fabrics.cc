// NAPI's fabrics (sdc-napi docs, "Fabric VLANs" and "Fabric Networks"): an
// account's VLANs and the networks on them, and UpdateNetwork.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "deploy/tritonsim/datacenter.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {

json DataCenter::VlanJson(const FabricVlan& v) {
  json j = {{"name", v.name}, {"owner_uuid", v.owner_uuid}, {"vlan_id", v.vlan_id}, {"vnet_id", 7757106}};
  if (!v.description.empty()) j["description"] = v.description;
  return j;
}

namespace {

Reply Invalid(const std::string& field, const std::string& message) {
  return Validation(422, field, "InvalidParameter", message);
}

// "10.0.1.0/24" into base and prefix (8..30, the base on its boundary).
bool ParseSubnet(const std::string& s, uint32_t* base, uint32_t* prefix) {
  size_t slash = s.find('/');
  if (slash == std::string::npos || !ParseDotted(s.substr(0, slash), base) ||
      !absl::SimpleAtoi(s.substr(slash + 1), prefix) || *prefix < 8 || *prefix > 30) {
    return false;
  }
  return (*base & ~Mask(*prefix)) == 0;
}

}  // namespace

uint32_t DataCenter::HostIndex(const Network& n, const json& body, const char* field) {
  uint32_t a = 0;
  if (!body.contains(field) || !body[field].is_string() || !ParseDotted(body[field].get<std::string>(), &a)) return 0;
  if ((a & Mask(n.prefix)) != n.base) return 0;
  uint32_t i = a - n.base;
  return i >= 1 && i <= n.hosts() ? i : 0;
}

Reply DataCenter::FillNetworkFields(const json& body, Network* n) {
  if (body.contains("resolvers")) {
    if (!body["resolvers"].is_array()) return Invalid("resolvers", "must be an array of IP addresses");
    n->resolvers.clear();
    for (const json& r : body["resolvers"]) {
      uint32_t a = 0;
      if (!r.is_string() || !ParseDotted(r.get<std::string>(), &a)) return Invalid("resolvers", "invalid IP address");
      n->resolvers.push_back(r.get<std::string>());
    }
  }
  if (body.contains("routes")) {
    if (!body["routes"].is_object()) return Invalid("routes", "must be an object");
    for (const auto& [dest, gw] : body["routes"].items()) {
      uint32_t a = 0, b = 0, p = 0;
      if (!gw.is_string() || !ParseDotted(gw.get<std::string>(), &a) ||
          !(ParseDotted(dest, &b) || ParseSubnet(dest, &b, &p))) {
        return Invalid("routes", "invalid route: " + dest);
      }
    }
    n->routes = body["routes"];
  }
  for (auto [field, out] : {std::pair{"description", &n->description}, {"name", &n->name}}) {
    if (!body.contains(field)) continue;
    if (!body[field].is_string()) return Invalid(field, "must be a string");
    *out = body[field].get<std::string>();
  }
  return Reply{};
}

DataCenter::FabricVlan* DataCenter::FindVlanLocked(const std::string& owner, const std::string& vlan, Reply* err) {
  int id = 0;
  auto it = absl::SimpleAtoi(vlan, &id) ? vlans_.find({owner, id}) : vlans_.end();
  if (it == vlans_.end()) {
    *err = Error(404, "ResourceNotFound", "vlan not found");
    return nullptr;
  }
  return &it->second;
}

Reply DataCenter::ListFabricVlans(const std::string& owner) {
  absl::MutexLock l(&mu_);
  Reply r;
  r.body = json::array();
  for (const auto& [key, v] : vlans_) {
    if (key.first == owner) r.body.push_back(VlanJson(v));
  }
  return r;
}

Reply DataCenter::CreateFabricVlan(const std::string& owner, const json& body) {
  if (!mariposa::IsUuid(owner)) return Invalid("owner_uuid", "invalid UUID");
  if (!body.is_object() || !body.contains("vlan_id") || !body["vlan_id"].is_number_integer()) {
    return Invalid("vlan_id", "VLAN ID must be a number");
  }
  FabricVlan v;
  v.owner_uuid = owner;
  v.vlan_id = body["vlan_id"].get<int>();
  if (v.vlan_id < 0 || v.vlan_id > 4094 || v.vlan_id == 1) return Invalid("vlan_id", "VLAN ID must be between 0-4094 (1 is reserved)");
  if (!body.contains("name") || !body["name"].is_string() || body["name"].get<std::string>().empty()) {
    return Invalid("name", "must be a non-empty string");
  }
  v.name = body["name"];
  if (body.contains("description") && body["description"].is_string()) v.description = body["description"];
  absl::MutexLock l(&mu_);
  if (vlans_.count({owner, v.vlan_id})) return Validation(422, "vlan_id", "Duplicate", "VLAN ID is already in use");
  vlans_[{owner, v.vlan_id}] = v;
  Reply r;
  r.body = VlanJson(v);
  return r;
}

Reply DataCenter::GetFabricVlan(const std::string& owner, const std::string& vlan) {
  absl::MutexLock l(&mu_);
  Reply r;
  FabricVlan* v = FindVlanLocked(owner, vlan, &r);
  if (v != nullptr) r.body = VlanJson(*v);
  return r;
}

Reply DataCenter::UpdateFabricVlan(const std::string& owner, const std::string& vlan, const json& body) {
  absl::MutexLock l(&mu_);
  Reply r;
  FabricVlan* v = FindVlanLocked(owner, vlan, &r);
  if (v == nullptr) return r;
  if (body.contains("name") && body["name"].is_string()) v->name = body["name"];
  if (body.contains("description") && body["description"].is_string()) v->description = body["description"];
  r.body = VlanJson(*v);
  return r;
}

Reply DataCenter::DeleteFabricVlan(const std::string& owner, const std::string& vlan) {
  absl::MutexLock l(&mu_);
  Reply r;
  FabricVlan* v = FindVlanLocked(owner, vlan, &r);
  if (v == nullptr) return r;
  for (const auto& [uuid, n] : networks_) {
    if (n.owner_uuid == owner && n.vlan_id == v->vlan_id) {
      return Error(422, "InUse", "VLAN has networks: delete them first");
    }
  }
  vlans_.erase({owner, v->vlan_id});
  r.status = 204;
  return r;
}

Reply DataCenter::ListFabricNetworks(const std::string& owner, const std::string& vlan) {
  absl::MutexLock l(&mu_);
  Reply r;
  FabricVlan* v = FindVlanLocked(owner, vlan, &r);
  if (v == nullptr) return r;
  r.body = json::array();
  for (const auto& [uuid, n] : networks_) {
    if (n.owner_uuid == owner && n.vlan_id == v->vlan_id) r.body.push_back(NetworkJson(n));
  }
  return r;
}

Reply DataCenter::CreateFabricNetwork(const std::string& owner, const std::string& vlan, const json& body) {
  if (!body.is_object()) return Invalid("name", "the body must be a JSON object");
  Network n;
  n.owner_uuid = owner;
  n.owner_uuids = {owner};
  n.fabric = true;
  n.nic_tag = "sdc_overlay";
  n.mtu = 1400;
  if (!body.contains("subnet") || !body["subnet"].is_string() || !ParseSubnet(body["subnet"], &n.base, &n.prefix)) {
    return Invalid("subnet", "Subnet must be in CIDR form, with a prefix of 8 to 30");
  }
  if (!body.contains("name") || !body["name"].is_string() || body["name"].get<std::string>().empty()) {
    return Invalid("name", "must be a non-empty string");
  }
  if (Reply bad = FillNetworkFields(body, &n); bad.status != 200) return bad;
  n.first = HostIndex(n, body, "provision_start_ip");
  n.last = HostIndex(n, body, "provision_end_ip");
  if (n.first == 0) return Invalid("provision_start_ip", "IP must be within subnet");
  if (n.last == 0 || n.last < n.first) return Invalid("provision_end_ip", "IP must be within subnet, after the start");
  if (body.contains("gateway")) {
    uint32_t g = HostIndex(n, body, "gateway");
    if (g == 0) return Invalid("gateway", "IP must be within subnet");
    n.gateway = body["gateway"];
  }
  if (body.contains("internet_nat") && body["internet_nat"].is_boolean()) n.internet_nat = body["internet_nat"];
  n.next = n.first - 1;
  absl::MutexLock l(&mu_);
  Reply r;
  FabricVlan* v = FindVlanLocked(owner, vlan, &r);
  if (v == nullptr) return r;
  n.vlan_id = v->vlan_id;
  for (const auto& [uuid, other] : networks_) {
    if (other.owner_uuid == owner && other.name == n.name) {
      return Validation(422, "name", "Duplicate", "name is already in use");
    }
    if (other.owner_uuid == owner && other.vlan_id == n.vlan_id &&
        (other.base & Mask(std::min(other.prefix, n.prefix))) == (n.base & Mask(std::min(other.prefix, n.prefix)))) {
      return Invalid("subnet", "subnet overlaps with another network on the VLAN");
    }
  }
  n.uuid = NewUuidLocked();
  networks_[n.uuid] = n;
  r.body = NetworkJson(n);
  return r;
}

DataCenter::Network* DataCenter::FindFabricNetworkLocked(const std::string& owner, const std::string& vlan,
                                                         const std::string& uuid, Reply* err) {
  FabricVlan* v = FindVlanLocked(owner, vlan, err);
  if (v == nullptr) return nullptr;
  auto it = networks_.find(uuid);
  if (it == networks_.end() || it->second.owner_uuid != owner || it->second.vlan_id != v->vlan_id) {
    *err = Error(404, "ResourceNotFound", "network not found");
    return nullptr;
  }
  return &it->second;
}

Reply DataCenter::GetFabricNetwork(const std::string& owner, const std::string& vlan, const std::string& uuid) {
  absl::MutexLock l(&mu_);
  Reply r;
  if (Network* n = FindFabricNetworkLocked(owner, vlan, uuid, &r)) r.body = NetworkJson(*n);
  return r;
}

Reply DataCenter::DeleteFabricNetwork(const std::string& owner, const std::string& vlan, const std::string& uuid) {
  absl::MutexLock l(&mu_);
  Reply r;
  if (FindFabricNetworkLocked(owner, vlan, uuid, &r) == nullptr) return r;
  // NAPI refuses to delete a network that still has NICs.
  for (const auto& [id, vm] : vms_) {
    if (vm.state == "destroyed") continue;
    for (const Nic& nic : vm.nics) {
      if (nic.network_uuid == uuid) {
        return Error(422, "InUse", absl::StrCat("network has NICs: VM ", id, " (", vm.alias, ")"));
      }
    }
  }
  networks_.erase(uuid);
  r.status = 204;
  return r;
}

Reply DataCenter::UpdateNetwork(const std::string& uuid, const json& body) {
  absl::MutexLock l(&mu_);
  auto it = networks_.find(uuid);
  if (it == networks_.end()) return Error(404, "ResourceNotFound", "network not found");
  Network next = it->second;
  if (Reply bad = FillNetworkFields(body.is_object() ? body : json::object(), &next); bad.status != 200) return bad;
  it->second = next;
  Reply r;
  r.body = NetworkJson(next);
  return r;
}

}  // namespace tritonsim
