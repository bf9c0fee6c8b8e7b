#include "convergence/decide/placement.h"

#include <regex>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace mariposa::convergence {

absl::StatusOr<PlacementRuleText> ParsePlacementRule(const std::string& rule) {
  static const std::regex kRule(R"(^\s*([A-Za-z0-9_.\-]+)(==|!=)(~?)(.+?)\s*$)");
  std::smatch m;
  if (!std::regex_match(rule, m, kRule)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", rule, "\" is not a placement rule (KEY==VALUE, KEY!=~VALUE)"));
  }
  return PlacementRuleText{m[1], m[2] == "==", m[3] == "~", m[4]};
}

namespace {

bool Glob(absl::string_view p, absl::string_view s) {
  // Iterative glob with '*' only.
  size_t pi = 0, si = 0, star = absl::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == s[si]) {
      ++pi;
      ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != absl::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace

bool PlacementValueMatches(const std::string& pattern, const std::string& value) {
  if (pattern.size() > 1 && pattern.front() == '/' && pattern.back() == '/') {
    try {
      return std::regex_search(value, std::regex(pattern.substr(1, pattern.size() - 2)));
    } catch (const std::regex_error&) {
      return false;  // validated at apply time; never matches if it slipped through
    }
  }
  if (pattern.find('*') != std::string::npos) return Glob(pattern, value);
  return pattern == value;
}

bool IsInstanceKey(const std::string& key) { return key == "service" || key == "instance" || key == "container"; }

bool PlacementRuleMatches(const PlacementRuleText& r, const PlacementCandidate& c) {
  if (r.key == "service") return !c.service.empty() && PlacementValueMatches(r.value, c.service);
  if (r.key == "instance" || r.key == "container") {
    return PlacementValueMatches(r.value, c.alias) || PlacementValueMatches(r.value, c.uuid);
  }
  auto t = c.tags.find(r.key);
  return t != c.tags.end() && PlacementValueMatches(r.value, t->second);
}

std::optional<triton::Locality> LocalityFor(const std::vector<PlacementRuleText>& rules,
                                            const std::vector<PlacementCandidate>& candidates) {
  bool any_hard = false;
  for (const auto& r : rules) any_hard |= !r.soft;
  triton::Locality loc;
  loc.strict = any_hard;
  std::set<std::string> near, far;
  for (const auto& r : rules) {
    if (r.soft == any_hard) continue;  // with hard rules present, only they are sent
    for (const auto& c : candidates) {
      bool match = PlacementRuleMatches(r, c);
      if (match) (r.equal ? near : far).insert(c.uuid);
    }
  }
  if (near.empty() && far.empty()) return std::nullopt;
  loc.near.assign(near.begin(), near.end());
  loc.far.assign(far.begin(), far.end());
  return loc;
}

}  // namespace mariposa::convergence
