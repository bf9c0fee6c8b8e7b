// A project's fabric (the manifest's `fabric:`): its VLAN and the private
// networks on it, made through NAPI's fabric routes for the project's
// account. Services attach to them by their manifest name. Pure; no I/O.
#ifndef MARIPOSA_PROJECTS_FABRIC_H_
#define MARIPOSA_PROJECTS_FABRIC_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mariposa {

struct FabricNetworkSpec {
  std::string subnet;                     // CIDR, prefix 8..30
  std::string gateway;                    // "" = none
  std::string provision_start, provision_end;  // "" = the subnet's hosts (after the gateway)
  std::vector<std::string> resolvers;
  std::map<std::string, std::string> routes;  // destination (IP or CIDR) -> gateway
  bool internet_nat = true;
  std::string description;
};

struct FabricSpec {
  int vlan = 0;  // the account's VLAN id (2..4094), made when missing
  std::map<std::string, FabricNetworkSpec> networks;
};

// What an apply may not change of a network both versions have (NAPI
// changes no network's subnet, provisioning range, gateway, NAT zone or
// VLAN): "" when nothing, else the error, naming the field.
std::string FixedFabricChange(const std::optional<FabricSpec>& before, const std::optional<FabricSpec>& after);

// NAPI's name of a network: unique in the account, so the project's name
// comes first ("jupiter-private").
std::string FabricNetworkName(const std::string& project, const std::string& network);

// The provisioning range NAPI gets when the manifest gives none: the
// subnet's hosts, the gateway's side excluded (".2" to the last host when
// the gateway is the first). Both "" when the subnet does not parse.
std::pair<std::string, std::string> ProvisionRange(const FabricNetworkSpec& n);

// "" when `n` is a network NAPI would take, else what is wrong, naming the
// field ("subnet: …").
std::string CheckFabricNetwork(const FabricNetworkSpec& n);

// Whether two subnets share an address (false when either does not parse).
bool SubnetsOverlap(const std::string& a, const std::string& b);

// What cannot change in place (NAPI takes no new subnet, range, gateway or
// NAT zone for a network): a text equal for equal networks.
std::string FabricFixed(const FabricNetworkSpec& n);
// A hash of what can (resolvers, routes, description).
std::string FabricMutableHash(const FabricNetworkSpec& n);

// The description NAPI keeps for an owned network: "mariposa <project uuid>
// network <name> <mutable hash>", then ": " and the manifest's description.
// ParseOwnedMarker (projects/firewall.h) reads it back with kind "network".
std::string FabricNetworkDescription(const std::string& project_uuid, const std::string& name,
                                     const FabricNetworkSpec& n);
// A VLAN the project made: "mariposa <project uuid> vlan <id> 0".
std::string FabricVlanDescription(const std::string& project_uuid, int vlan);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_FABRIC_H_
