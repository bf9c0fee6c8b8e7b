// A project's firewall rules (the manifest's `firewall:`), written against
// its own service names and turned into Triton fwrule text for FWAPI.
//
// FWAPI's rule language has no AND between targets, so "the instances of
// service web of this project" cannot be said with the ownership tags
// (mariposa.project and mariposa.service) together. The instances of a
// service a rule names carry one more tag, mariposa.firewall =
// "<project uuid>/<service>", and the rule targets that: no other project's
// instances match, whatever their service names. Pure; no I/O.
#ifndef MARIPOSA_PROJECTS_FIREWALL_H_
#define MARIPOSA_PROJECTS_FIREWALL_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mariposa {

inline constexpr char kTagFirewall[] = "mariposa.firewall";

// One side of a rule: a service of this project, any address, one address
// or a subnet.
struct FirewallEndpoint {
  enum class Kind { kService, kAny, kIp, kSubnet };
  Kind kind = Kind::kAny;
  std::string value;  // the service, the address or the CIDR
  bool operator==(const FirewallEndpoint& o) const { return kind == o.kind && value == o.value; }
};

struct FirewallRuleSpec {
  std::vector<FirewallEndpoint> from, to;
  std::string protocol = "tcp";    // tcp udp icmp icmp6
  std::vector<std::string> ports;  // tcp/udp: "80" or "8000-8100"; icmp: types; empty: all
  std::string action = "allow";    // allow block
  bool enabled = true;
  std::string description;
  int priority = 0;  // fwrule's PRIORITY (0..100; higher wins when rules conflict); 0 = none written
  bool log = false;  // FWAPI's log: connections the rule matches are logged (cfwlogd)
};

// "web", "any", "ip 10.0.0.1", "subnet 10.0.0.0/8": the endpoint, or an
// error saying what is accepted. Service names are checked by the caller
// (they must be services of the manifest).
std::optional<FirewallEndpoint> ParseFirewallEndpoint(const std::string& text, std::string* error);
// "80", "8000-8100" (tcp, udp: 1..65535) or an ICMP type (0..255); "" when
// good, else what is wrong.
std::string CheckFirewallPort(const std::string& protocol, const std::string& port);

// The value of kTagFirewall on the instances of `service`.
std::string FirewallTagValue(const std::string& project_uuid, const std::string& service);
// The fwrule text FWAPI gets, e.g. FROM tag "mariposa.firewall" =
// "<uuid>/web" TO tag "mariposa.firewall" = "<uuid>/db" ALLOW tcp PORT 5432.
std::string FirewallRuleText(const std::string& project_uuid, const FirewallRuleSpec& r);
// The same with the project's service names, for plans and status:
// FROM web TO db ALLOW tcp PORT 5432.
std::string FirewallRuleSummary(const FirewallRuleSpec& r);

// What the rules ask of each service's instances: the tag (named by any
// rule) and firewall_enabled (an ALLOW rule's TO side, a BLOCK rule's FROM
// side: where Triton applies the rule; enabling it blocks other inbound
// traffic, as Triton's firewall does).
struct FirewallNeeds {
  std::set<std::string> tagged, enabled;
};
FirewallNeeds FirewallNeedsOf(const std::map<std::string, FirewallRuleSpec>& rules);

// FWAPI rules a project owns: a uuid derived from the project and the rule
// name (a retried create after a crash meets its own rule, never a second
// one), and a description that starts with a marker naming both and a hash
// of the rule as Mariposa wrote it (so FWAPI's rewriting of the rule text
// never looks like a change).
std::string FirewallRuleUuid(const std::string& project_uuid, const std::string& name);
std::string FirewallDescription(const std::string& project_uuid, const std::string& name,
                                const std::string& rule_text, const FirewallRuleSpec& r);
// What the project owns in Triton (FWAPI rules, NAPI fabric networks and
// VLANs) says so in its description: "mariposa <project uuid> <kind> <name>
// <hash of 12 hex digits>", then ": " and the manifest's description when
// there is one.
std::string OwnedDescription(const std::string& project_uuid, const std::string& kind, const std::string& name,
                             const std::string& hash, const std::string& description);
// From such a description: the name and hash when the project owns it as
// `kind`, else nullopt.
struct OwnedMarker {
  std::string name, hash;
};
std::optional<OwnedMarker> ParseOwnedMarker(const std::string& project_uuid, const std::string& kind,
                                            const std::string& description);
inline std::optional<OwnedMarker> ParseFirewallDescription(const std::string& project_uuid,
                                                           const std::string& description) {
  return ParseOwnedMarker(project_uuid, "rule", description);
}
// The hash FirewallDescription puts in its marker.
std::string FirewallRuleHash(const std::string& rule_text, const FirewallRuleSpec& r);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_FIREWALL_H_
