#include "projects/firewall.h"

#include <arpa/inet.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/ids.h"

namespace mariposa {
namespace {

bool IsAddress(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

bool IsSubnet(const std::string& s) {
  std::vector<std::string> parts = absl::StrSplit(s, '/');
  int bits = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &bits) || !IsAddress(parts[0])) return false;
  return bits >= 0 && bits <= (absl::StrContains(parts[0], ':') ? 128 : 32);
}

std::string Target(const std::string& project_uuid, const FirewallEndpoint& e, bool summary) {
  switch (e.kind) {
    case FirewallEndpoint::Kind::kAny: return "any";
    case FirewallEndpoint::Kind::kIp: return absl::StrCat("ip ", e.value);
    case FirewallEndpoint::Kind::kSubnet: return absl::StrCat("subnet ", e.value);
    case FirewallEndpoint::Kind::kService:
      if (summary) return e.value;
      return absl::StrCat("tag \"", kTagFirewall, "\" = \"", FirewallTagValue(project_uuid, e.value), "\"");
  }
  return "";
}

std::string Targets(const std::string& project_uuid, const std::vector<FirewallEndpoint>& es, bool summary) {
  std::vector<std::string> t;
  for (const auto& e : es) t.push_back(Target(project_uuid, e, summary));
  if (t.size() == 1) return t[0];
  return absl::StrCat("(", absl::StrJoin(t, " OR "), ")");
}

std::string PortsText(const FirewallRuleSpec& r) {
  bool icmp = r.protocol == "icmp" || r.protocol == "icmp6";
  if (icmp) {
    if (r.ports.empty()) return "TYPE all";
    std::vector<std::string> t;
    for (const auto& p : r.ports) t.push_back(absl::StrCat("TYPE ", p));
    return t.size() == 1 ? t[0] : absl::StrCat("(", absl::StrJoin(t, " AND "), ")");
  }
  if (r.ports.empty()) return "ALL PORTS";
  if (r.ports.size() == 1 && !absl::StrContains(r.ports[0], '-')) return absl::StrCat("PORT ", r.ports[0]);
  std::vector<std::string> t;
  for (const auto& p : r.ports) t.push_back(absl::StrJoin(absl::StrSplit(p, '-'), " - "));
  return absl::StrCat("PORTS ", absl::StrJoin(t, ", "));
}

std::string Rule(const std::string& project_uuid, const FirewallRuleSpec& r, bool summary) {
  return absl::StrCat("FROM ", Targets(project_uuid, r.from, summary), " TO ", Targets(project_uuid, r.to, summary),
                      " ", r.action == "block" ? "BLOCK" : "ALLOW", " ", r.protocol, " ", PortsText(r),
                      r.priority > 0 ? absl::StrCat(" PRIORITY ", r.priority) : "");
}

}  // namespace

std::optional<FirewallEndpoint> ParseFirewallEndpoint(const std::string& text, std::string* error) {
  FirewallEndpoint e;
  if (text == "any") {
    e.kind = FirewallEndpoint::Kind::kAny;
  } else if (absl::StartsWith(text, "ip ")) {
    e.kind = FirewallEndpoint::Kind::kIp;
    e.value = std::string(absl::StripAsciiWhitespace(text.substr(3)));
    if (!IsAddress(e.value)) {
      *error = absl::StrCat("\"", e.value, "\" is not an IPv4 or IPv6 address");
      return std::nullopt;
    }
  } else if (absl::StartsWith(text, "subnet ")) {
    e.kind = FirewallEndpoint::Kind::kSubnet;
    e.value = std::string(absl::StripAsciiWhitespace(text.substr(7)));
    if (!IsSubnet(e.value)) {
      *error = absl::StrCat("\"", e.value, "\" is not a subnet (ADDRESS/BITS, e.g. 10.0.0.0/8)");
      return std::nullopt;
    }
  } else {
    e.kind = FirewallEndpoint::Kind::kService;
    e.value = text;
  }
  return e;
}

std::string CheckFirewallPort(const std::string& protocol, const std::string& port) {
  if (protocol == "icmp" || protocol == "icmp6") {
    int t = 0;
    if (!absl::SimpleAtoi(port, &t) || t < 0 || t > 255) {
      return absl::StrCat("\"", port, "\" is not an ICMP type (0..255)");
    }
    return "";
  }
  std::vector<std::string> ends = absl::StrSplit(port, '-');
  if (ends.size() > 2) return absl::StrCat("\"", port, "\" is not a port or a range FIRST-LAST");
  int prev = 0;
  for (const auto& e : ends) {
    int n = 0;
    if (!absl::SimpleAtoi(e, &n) || n < 1 || n > 65535) {
      return absl::StrCat("\"", port, "\" is not a port (1..65535) or a range FIRST-LAST");
    }
    if (n < prev) return absl::StrCat("the range \"", port, "\" ends before it starts");
    prev = n;
  }
  return "";
}

std::string FirewallTagValue(const std::string& project_uuid, const std::string& service) {
  return absl::StrCat(project_uuid, "/", service);
}

std::string FirewallRuleText(const std::string& project_uuid, const FirewallRuleSpec& r) {
  return Rule(project_uuid, r, false);
}

std::string FirewallRuleSummary(const FirewallRuleSpec& r) { return Rule("", r, true); }

FirewallNeeds FirewallNeedsOf(const std::map<std::string, FirewallRuleSpec>& rules) {
  FirewallNeeds n;
  for (const auto& [name, r] : rules) {
    for (const auto* side : {&r.from, &r.to}) {
      bool applies = (side == &r.to) == (r.action != "block");
      for (const auto& e : *side) {
        if (e.kind != FirewallEndpoint::Kind::kService) continue;
        n.tagged.insert(e.value);
        if (applies && r.enabled) n.enabled.insert(e.value);
      }
    }
  }
  return n;
}

std::string FirewallRuleUuid(const std::string& project_uuid, const std::string& name) {
  // A name-based uuid (the layout of RFC 4122 version 5, from SHA-256).
  std::string h = Sha256Hex(absl::StrCat("mariposa firewall rule\n", project_uuid, "\n", name));
  h[12] = '5';
  static const char kVariant[] = "89ab";
  h[16] = kVariant[std::stoi(h.substr(16, 1), nullptr, 16) & 3];
  return absl::StrCat(h.substr(0, 8), "-", h.substr(8, 4), "-", h.substr(12, 4), "-", h.substr(16, 4), "-",
                      h.substr(20, 12));
}

std::string FirewallRuleHash(const std::string& rule_text, const FirewallRuleSpec& r) {
  // `log` counts only when on: rules made before it existed keep their hash.
  return Sha256Hex(absl::StrCat(rule_text, "\n", r.enabled ? "enabled" : "disabled", "\n", r.description,
                                r.log ? "\nlog" : ""))
      .substr(0, 12);
}

std::string FirewallDescription(const std::string& project_uuid, const std::string& name,
                                const std::string& rule_text, const FirewallRuleSpec& r) {
  return OwnedDescription(project_uuid, "rule", name, FirewallRuleHash(rule_text, r), r.description);
}

std::string OwnedDescription(const std::string& project_uuid, const std::string& kind, const std::string& name,
                             const std::string& hash, const std::string& description) {
  std::string d = absl::StrCat("mariposa ", project_uuid, " ", kind, " ", name, " ", hash);
  if (!description.empty()) absl::StrAppend(&d, ": ", description);
  return d;
}

std::optional<OwnedMarker> ParseOwnedMarker(const std::string& project_uuid, const std::string& kind,
                                            const std::string& description) {
  absl::string_view d = description;
  if (!absl::ConsumePrefix(&d, absl::StrCat("mariposa ", project_uuid, " ", kind, " "))) return std::nullopt;
  size_t space = d.find(' ');
  if (space == absl::string_view::npos || space == 0) return std::nullopt;
  OwnedMarker m{std::string(d.substr(0, space)), std::string(d.substr(space + 1, 12))};
  d.remove_prefix(std::min(d.size(), space + 1 + 12));
  if (m.hash.size() != 12 || !(d.empty() || absl::StartsWith(d, ": "))) return std::nullopt;
  return m;
}

}  // namespace mariposa
