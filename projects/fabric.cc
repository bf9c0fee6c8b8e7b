#include "projects/fabric.h"

#include <arpa/inet.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/ids.h"
#include "projects/firewall.h"

namespace mariposa {
namespace {

bool Ipv4(const std::string& s, uint32_t* out) {
  in_addr a;
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return false;
  *out = ntohl(a.s_addr);
  return true;
}

std::string Dotted(uint32_t a) {
  in_addr x;
  x.s_addr = htonl(a);
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &x, buf, sizeof buf) ? buf : "";
}

bool Subnet(const std::string& s, uint32_t* base, int* prefix) {
  std::vector<std::string> p = absl::StrSplit(s, '/');
  if (p.size() != 2 || !Ipv4(p[0], base) || !absl::SimpleAtoi(p[1], prefix) || *prefix < 8 || *prefix > 30) {
    return false;
  }
  uint32_t mask = ~uint32_t{0} << (32 - *prefix);
  return (*base & ~mask) == 0;
}

// A host of the subnet (not its network or broadcast address).
bool Host(uint32_t base, int prefix, const std::string& ip, uint32_t* out) {
  if (!Ipv4(ip, out)) return false;
  uint32_t mask = ~uint32_t{0} << (32 - prefix);
  return (*out & mask) == base && *out != base && *out != (base | ~mask);
}

}  // namespace

std::string FabricNetworkName(const std::string& project, const std::string& network) {
  return absl::StrCat(project, "-", network);
}

std::pair<std::string, std::string> ProvisionRange(const FabricNetworkSpec& n) {
  uint32_t base = 0, gw = 0;
  int prefix = 0;
  if (!Subnet(n.subnet, &base, &prefix)) return {"", ""};
  uint32_t first = base + 1, last = (base | ~(~uint32_t{0} << (32 - prefix))) - 1;
  if (!n.gateway.empty() && Ipv4(n.gateway, &gw)) {
    if (gw == first) ++first;
    else if (gw == last) --last;
  }
  return {n.provision_start.empty() ? Dotted(first) : n.provision_start,
          n.provision_end.empty() ? Dotted(last) : n.provision_end};
}

std::string CheckFabricNetwork(const FabricNetworkSpec& n) {
  uint32_t base = 0, a = 0, b = 0;
  int prefix = 0;
  if (!Subnet(n.subnet, &base, &prefix)) {
    return absl::StrCat("subnet: \"", n.subnet, "\" is not an IPv4 subnet ADDRESS/BITS with 8 to 30 bits, the address "
                        "on its boundary (e.g. 10.0.1.0/24)");
  }
  if (!n.gateway.empty() && !Host(base, prefix, n.gateway, &a)) {
    return absl::StrCat("gateway: \"", n.gateway, "\" is not a host of ", n.subnet);
  }
  auto [start, end] = ProvisionRange(n);
  if (!Host(base, prefix, start, &a)) return absl::StrCat("provision_start: \"", start, "\" is not a host of ", n.subnet);
  if (!Host(base, prefix, end, &b)) return absl::StrCat("provision_end: \"", end, "\" is not a host of ", n.subnet);
  if (b < a) return absl::StrCat("provision_end: ", end, " comes before provision_start ", start);
  for (const std::string& r : n.resolvers) {
    if (!Ipv4(r, &a)) return absl::StrCat("resolvers: \"", r, "\" is not an IPv4 address");
  }
  for (const auto& [dest, gw] : n.routes) {
    uint32_t d = 0;
    int p = 0;
    if (!Ipv4(dest, &d) && !Subnet(dest, &d, &p)) {
      return absl::StrCat("routes: \"", dest, "\" is not an address or a subnet");
    }
    if (!Ipv4(gw, &a)) return absl::StrCat("routes.", dest, ": \"", gw, "\" is not an IPv4 address");
  }
  return "";
}

bool SubnetsOverlap(const std::string& a, const std::string& b) {
  uint32_t x = 0, y = 0;
  int p = 0, q = 0;
  if (!Subnet(a, &x, &p) || !Subnet(b, &y, &q)) return false;
  uint32_t mask = ~uint32_t{0} << (32 - std::min(p, q));
  return (x & mask) == (y & mask);
}

std::string FabricFixed(const FabricNetworkSpec& n) {
  auto [start, end] = ProvisionRange(n);
  return absl::StrCat(n.subnet, " gateway ", n.gateway.empty() ? "none" : n.gateway, " range ", start, "-", end,
                      n.internet_nat ? " nat" : " no-nat");
}

std::string FixedFabricChange(const std::optional<FabricSpec>& before, const std::optional<FabricSpec>& after) {
  if (!before || !after) return "";
  for (const auto& [name, b] : before->networks) {
    auto a = after->networks.find(name);
    if (a == after->networks.end()) continue;
    std::string field = b.subnet != a->second.subnet                 ? "subnet"
                        : b.gateway != a->second.gateway             ? "gateway"
                        : ProvisionRange(b) != ProvisionRange(a->second) ? "provision_start"
                        : b.internet_nat != a->second.internet_nat   ? "internet_nat"
                        : before->vlan != after->vlan                ? ""
                                                                     : "-";
    if (field == "-") continue;
    std::string path = field.empty() ? "fabric.vlan" : absl::StrCat("fabric.networks.", name, ".", field);
    return absl::StrCat(path, ": network ", name, " (", FabricFixed(b), " on VLAN ", before->vlan,
                        ") cannot become ", FabricFixed(a->second), " on VLAN ", after->vlan,
                        " in place: NAPI changes no network's subnet, range, gateway, NAT zone or VLAN; nothing was "
                        "changed. Give the network a new name (its instances move to it by a rollout), then remove "
                        "the old one");
  }
  return "";
}

std::string FabricMutableHash(const FabricNetworkSpec& n) {
  std::vector<std::string> routes;
  for (const auto& [d, g] : n.routes) routes.push_back(absl::StrCat(d, "=", g));
  return Sha256Hex(absl::StrCat(absl::StrJoin(n.resolvers, ","), "\n", absl::StrJoin(routes, ","), "\n",
                                n.description))
      .substr(0, 12);
}

std::string FabricNetworkDescription(const std::string& project_uuid, const std::string& name,
                                     const FabricNetworkSpec& n) {
  return OwnedDescription(project_uuid, "network", name, FabricMutableHash(n), n.description);
}

std::string FabricVlanDescription(const std::string& project_uuid, int vlan) {
  return OwnedDescription(project_uuid, "vlan", absl::StrCat(vlan), std::string(12, '0'), "");
}

}  // namespace mariposa
