// NAPI: /networks and /network_pools, and the address each NIC gets.
#include <algorithm>
#include <cstdio>

#include "deploy/tritonsim/datacenter.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {
namespace {

bool Provisionable(const std::vector<std::string>& owners, const std::string& owner) {
  return owners.empty() || owner.empty() || std::find(owners.begin(), owners.end(), owner) != owners.end();
}

}  // namespace

json DataCenter::NetworkJson(const Network& n) {
  json j = {{"uuid", n.uuid},
            {"name", n.name},
            {"family", "ipv4"},
            {"subnet", Dotted(n.base) + "/" + std::to_string(n.prefix)},
            {"netmask", Dotted(Mask(n.prefix))},
            {"gateway", n.gateway},
            {"provision_start_ip", Dotted(n.base + n.first)},
            {"provision_end_ip", Dotted(n.base + (n.last != 0 ? n.last : n.hosts()))},
            {"vlan_id", n.vlan_id},
            {"nic_tag", n.nic_tag},
            {"mtu", n.mtu},
            {"fabric", n.fabric},
            {"resolvers", json::array()}};
  if (!n.owner_uuids.empty()) j["owner_uuids"] = n.owner_uuids;
  if (!n.owner_uuid.empty()) {
    j["owner_uuid"] = n.owner_uuid;
    j["resolvers"] = n.resolvers;
    j["internet_nat"] = n.internet_nat;
    j["gateway_provisioned"] = false;
    if (!n.routes.empty()) j["routes"] = n.routes;
  }
  if (!n.description.empty()) j["description"] = n.description;
  return j;
}

void DataCenter::DefaultPackagesAndNetworksLocked() {
  // The packages the examples name, smallest first.
  struct Def {
    const char* name;
    int64_t ram, quota_gib, cpu_cap;
  };
  static const Def kPackages[] = {
      {"g4-highcpu-128M", 128, 3, 25},    {"g4-highcpu-256M", 256, 5, 25},   {"g4-highcpu-512M", 512, 10, 50},
      {"g4-highcpu-1G", 1024, 25, 100},   {"g4-highcpu-2G", 2048, 50, 200},  {"g4-highcpu-4G", 4096, 100, 400},
      {"g4-general-4G", 4096, 130, 200},  {"g4-general-8G", 8192, 260, 400}, {"g4-highram-16G", 16384, 400, 400},
      {"g4-highram-32G", 32768, 800, 800}};
  json list = json::array();
  int k = 0;
  for (const Def& d : kPackages) {
    char uuid[40];
    snprintf(uuid, sizeof(uuid), "cccccccc-0000-4000-8000-%012d", ++k);
    list.push_back({{"uuid", uuid},
                    {"name", d.name},
                    {"max_physical_memory", d.ram},
                    {"quota", d.quota_gib * 1024},
                    {"cpu_cap", d.cpu_cap},
                    {"vcpus", std::max<int64_t>(1, d.cpu_cap / 100)},
                    {"group", std::string(d.name).substr(3, std::string(d.name).find('-', 3) - 3)}});
  }
  LoadPackagesLocked(list);
  json nets = {
      {"networks",
       {{{"uuid", "aaaaaaaa-0000-4000-8000-000000000001"}, {"name", "external"}, {"subnet", "10.0.0.0/8"}},
        {{"uuid", "aaaaaaaa-0000-4000-8000-000000000002"},
         {"name", "internal"},
         {"subnet", "192.168.0.0/16"},
         {"nic_tag", "internal"}},
        {{"uuid", "aaaaaaaa-0000-4000-8000-000000000003"},
         {"name", "my-fabric-network"},
         {"subnet", "172.16.0.0/16"},
         {"vlan_id", 2},
         {"fabric", true},
         {"nic_tag", "sdc_overlay"},
         {"owner_uuids", {"930896af-bf8c-48d4-885c-6573a94b1853"}}}}},
      {"network_pools",
       {{{"uuid", "bbbbbbbb-0000-4000-8000-000000000001"},
         {"name", "public"},
         {"networks", {"aaaaaaaa-0000-4000-8000-000000000001"}}}}}};
  LoadNetworksLocked(nets);
}

std::string DataCenter::LoadNetworksLocked(const json& seed) {
  if (seed.contains("networks")) {
    if (!seed["networks"].is_array()) return "networks must be a list";
    networks_.clear();
    for (const auto& n : seed["networks"]) {
      if (!n.is_object()) return "every network must be an object";
      Network nw;
      nw.uuid = n.value("uuid", NewUuidLocked());
      nw.name = n.value("name", "");
      if (nw.name.empty() || !IsUuid(nw.uuid)) return "every network needs a name (and a uuid, when given, must be one)";
      std::string subnet = n.value("subnet", "");
      size_t slash = subnet.find('/');
      int64_t prefix = 0;
      if (slash == std::string::npos || !ParseDotted(subnet.substr(0, slash), &nw.base) ||
          !ParseInt(subnet.substr(slash + 1), &prefix) || prefix < 8 || prefix > 30) {
        return "network " + nw.name + ": subnet must be A.B.C.D/N with N in 8..30";
      }
      nw.prefix = static_cast<uint32_t>(prefix);
      nw.base &= Mask(nw.prefix);
      nw.gateway = n.value("gateway", Dotted(nw.base + 1));
      nw.nic_tag = n.value("nic_tag", nw.nic_tag);
      nw.vlan_id = n.value("vlan_id", 0);
      nw.mtu = n.value("mtu", 1500);
      nw.fabric = n.value("fabric", false);
      nw.owner_uuids = n.value("owner_uuids", std::vector<std::string>{});
      // A seeded fabric network is its one owner's (as NAPI keeps a fabric
      // network's owner_uuid): VOLAPI serves that account's volumes on it.
      if (nw.fabric && nw.owner_uuids.size() == 1) nw.owner_uuid = nw.owner_uuids[0];
      networks_[nw.uuid] = nw;
    }
  }
  if (seed.contains("network_pools")) {
    if (!seed["network_pools"].is_array()) return "network_pools must be a list";
    pools_.clear();
    for (const auto& p : seed["network_pools"]) {
      NetworkPool pool;
      pool.uuid = p.value("uuid", NewUuidLocked());
      pool.name = p.value("name", "");
      pool.networks = p.value("networks", std::vector<std::string>{});
      pool.owner_uuids = p.value("owner_uuids", std::vector<std::string>{});
      for (const std::string& n : pool.networks) {
        if (!networks_.count(n)) return "network pool " + pool.name + " names network " + n + ", which is not seeded";
      }
      if (pool.name.empty() || !IsUuid(pool.uuid)) return "every network pool needs a name and a uuid";
      pools_[pool.uuid] = pool;
    }
  }
  return "";
}

DataCenter::Network* DataCenter::FindNetworkLocked(const std::string& ref, const std::string& owner, std::string* why) {
  auto usable = [&](Network* n) -> Network* {
    if (!Provisionable(n->owner_uuids, owner)) {
      *why = "network " + n->name + " (" + n->uuid + ") is not provisionable by owner " + owner;
      return nullptr;
    }
    return n;
  };
  auto it = networks_.find(ref);
  if (it != networks_.end()) return usable(&it->second);
  for (auto& kv : networks_) {
    if (kv.second.name == ref) return usable(&kv.second);
  }
  for (auto& kv : pools_) {
    if (kv.first != ref && kv.second.name != ref) continue;
    if (!Provisionable(kv.second.owner_uuids, owner)) {
      *why = "network pool " + kv.second.name + " is not provisionable by owner " + owner;
      return nullptr;
    }
    for (const std::string& n : kv.second.networks) {
      Network& net = networks_[n];
      if (Provisionable(net.owner_uuids, owner) && !net.full()) return &net;
    }
    *why = "network pool " + kv.second.name + " has no network with free addresses";
    return nullptr;
  }
  *why = "network " + ref + " does not exist";
  return nullptr;
}

bool DataCenter::AllocateLocked(Network* n, Nic* nic) {
  // A network large enough starts at the /24 block StartAddressesAtBlock chose.
  if (n->owner_uuid.empty() && n->next < block_start_ && block_start_ + 256 < n->hosts()) n->next = block_start_;
  if (n->full()) return false;
  uint32_t ip = n->base + ++n->next;
  nic->ip = Dotted(ip);
  nic->netmask = Dotted(Mask(n->prefix));
  nic->gateway = n->gateway;
  nic->network_uuid = n->uuid;
  nic->nic_tag = n->nic_tag;
  nic->vlan_id = n->vlan_id;
  return true;
}

void DataCenter::StartAddressesAtBlock(uint32_t block) {
  absl::MutexLock l(&mu_);
  block_start_ = (block & 0xffff) << 8;
}

Reply DataCenter::ListNetworks(const Params& q) {
  Reply r;
  if (!CheckParams(q, {"name", "fabric", "provisionable_by", "nic_tag", "limit", "offset"}, false, 422, &r)) return r;
  absl::MutexLock l(&mu_);
  r.body = json::array();
  for (const auto& kv : networks_) {
    const Network& n = kv.second;
    if (const std::string* v = Get(q, "name"); v && n.name != *v) continue;
    if (const std::string* v = Get(q, "nic_tag"); v && n.nic_tag != *v) continue;
    if (const std::string* v = Get(q, "fabric"); v && (n.fabric ? "true" : "false") != *v) continue;
    if (const std::string* v = Get(q, "provisionable_by"); v && !Provisionable(n.owner_uuids, *v)) continue;
    r.body.push_back(NetworkJson(n));
  }
  return r;
}

Reply DataCenter::GetNetwork(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  auto it = networks_.find(uuid);
  if (it == networks_.end()) return Error(404, "ResourceNotFound", "network not found");
  Reply r;
  r.body = NetworkJson(it->second);
  return r;
}

Reply DataCenter::ListNetworkPools(const Params& q) {
  Reply r;
  if (!CheckParams(q, {"name", "provisionable_by", "limit", "offset"}, false, 422, &r)) return r;
  absl::MutexLock l(&mu_);
  r.body = json::array();
  for (const auto& kv : pools_) {
    const NetworkPool& p = kv.second;
    if (const std::string* v = Get(q, "name"); v && p.name != *v) continue;
    if (const std::string* v = Get(q, "provisionable_by"); v && !Provisionable(p.owner_uuids, *v)) continue;
    json j = {{"uuid", p.uuid}, {"name", p.name}, {"networks", p.networks}, {"nic_tag", p.nic_tag}, {"family", "ipv4"}};
    if (!p.owner_uuids.empty()) j["owner_uuids"] = p.owner_uuids;
    r.body.push_back(j);
  }
  return r;
}

}  // namespace tritonsim
