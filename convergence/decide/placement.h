// Placement rules (MANIFEST.md `placement`, the RFD 36 / DOCKER-630 syntax)
// turned into VMAPI locality hints for CreateVm. Pure; thread-safe.
//
//   service==web       near instances of this project's service `web`
//   service!=~db       far from them, soft (a preference)
//   instance!=web-1    far from the instance with that alias or uuid
//   role!=database     far from the owner's VMs tagged role=database
//
// `==` asks for the same servers (near), `!=` for others (far); `~` makes a
// rule soft. Values match exactly, by glob (`*`), or by /regex/. VMAPI has
// one `strict` flag per request: with any hard rule only the hard rules are
// sent, strictly (a provision that cannot satisfy them fails with VMAPI's
// reason); otherwise the soft ones, as preferences.
#ifndef MARIPOSA_CONVERGENCE_PLACEMENT_H_
#define MARIPOSA_CONVERGENCE_PLACEMENT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "convergence/triton/clients.h"

namespace mariposa::convergence {

struct PlacementRuleText {
  std::string key;
  bool equal = true;
  bool soft = false;
  std::string value;
};

// Parses "KEY==VALUE", "KEY!=~VALUE", …; INVALID_ARGUMENT otherwise.
absl::StatusOr<PlacementRuleText> ParsePlacementRule(const std::string& rule);

// Exact, glob (`*`), or /regex/ match of `value` against `pattern`.
bool PlacementValueMatches(const std::string& pattern, const std::string& value);

// A VM a rule may point at.
struct PlacementCandidate {
  std::string uuid;
  std::string alias;
  std::string service;                      // this project's service ("" for other VMs)
  std::map<std::string, std::string> tags;  // for label rules
};

// Does the rule's key and value point at this VM (whatever its operator)?
bool PlacementRuleMatches(const PlacementRuleText& rule, const PlacementCandidate& candidate);

// The locality for a new instance, or nullopt when no rule points anywhere.
std::optional<triton::Locality> LocalityFor(const std::vector<PlacementRuleText>& rules,
                                            const std::vector<PlacementCandidate>& candidates);

// True for the keys that name this project's instances (service, instance,
// container); other keys are tags of any of the owner's VMs.
bool IsInstanceKey(const std::string& key);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_PLACEMENT_H_
