// The project's firewall rules in FWAPI (projects/firewall.h): which to
// create, update and delete, and what each instance carries in place.
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convergence/decide/decide.h"
#include "projects/firewall.h"
#include "projects/manifest.h"

namespace mariposa::convergence {
namespace {

const std::map<std::string, FirewallRuleSpec>& Wanted(const Snapshot& s) {
  static const auto* kNone = new std::map<std::string, FirewallRuleSpec>();
  return s.goal && !s.project.deleting ? s.goal->firewall : *kNone;
}

triton::FwRule RuleFor(const Snapshot& s, const std::string& name, const FirewallRuleSpec& r) {
  triton::FwRule f;
  f.uuid = FirewallRuleUuid(s.project.uuid, name);
  f.owner_uuid = s.firewall_owner;
  f.rule = FirewallRuleText(s.project.uuid, r);
  f.description = FirewallDescription(s.project.uuid, name, f.rule, r);
  f.enabled = r.enabled;
  f.log = r.log;
  return f;
}

FirewallChange Delete(const Snapshot& s, const std::string& name, const std::string& uuid) {
  FirewallChange c;
  c.kind = FirewallChange::Kind::kDelete;
  c.name = name;
  c.rule.uuid = uuid;
  c.rule.owner_uuid = s.firewall_owner;
  return c;
}

// Rules cannot be applied: every wanted rule shows `state`, and the
// problem says why.
void NotApplied(const Snapshot& s, const std::string& state, Problem p, Decision* d) {
  const auto& wanted = Wanted(s);
  if (wanted.empty()) return;
  for (const auto& [name, r] : wanted) d->firewall_rules.push_back({name, FirewallRuleSummary(r), "", state, ""});
  p.kind = "firewall";
  p.impact = absl::StrCat("the traffic the manifest's ", wanted.size(),
                          " firewall rules allow or block is not managed; instances keep their firewall off");
  d->problems.push_back(std::move(p));
  d->firewall_in_place = false;
}

// Rule text as compared: FWAPI answers with its own normal form (spacing,
// keyword case), which is not a change.
std::string Normal(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
    } else {
      out.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// What differs between the rule FWAPI holds and the one Mariposa wrote,
// when its marker says it is current: changed by hand. "" when nothing.
std::string Drift(const OwnedRule& o, const triton::FwRule& f) {
  std::vector<std::string> what;
  if (Normal(o.rule) != Normal(f.rule)) what.push_back(absl::StrCat("rule \"", o.rule, "\" instead of \"", f.rule, "\""));
  if (o.enabled != f.enabled) what.push_back(o.enabled ? "enabled instead of disabled" : "disabled instead of enabled");
  if (o.log != f.log) what.push_back(o.log ? "logging instead of not" : "not logging instead of logging");
  if (o.description != f.description) what.push_back(absl::StrCat("description \"", o.description, "\""));
  return absl::StrJoin(what, ", ");
}

}  // namespace

void DecideFirewall(const Snapshot& s, Decision* d) {
  const auto& wanted = Wanted(s);
  d->firewall_in_place = true;
  if (!s.fwapi) {
    NotApplied(s, "not applied",
               {"", "", absl::StrCat("the manifest's firewall rules are not applied"),
                "mariposad has no FWAPI address", "start mariposad with --fwapi URL (or FWAPI_SERVICE in "
                "--sapi-metadata; --triton serves it with a simulator)", ""},
               d);
    return;
  }
  if (!s.firewall) {
    if (wanted.empty()) return;  // none wanted, none known to be owned: nothing was read
    NotApplied(s, "unknown",
               {"", "", "the project's firewall rules could not be read from FWAPI", s.firewall_error,
                "check FWAPI (mariposad's log, `mariposa admin status`); the rules are compared again at the next "
                "sync", ""},
               d);
    return;
  }
  std::map<std::string, const OwnedRule*> owned;
  for (const OwnedRule& o : *s.firewall) {
    // Two rules claiming one name (one copied by hand): the one at the
    // rule's own uuid is kept, the other deleted.
    auto [it, fresh] = owned.emplace(o.name, &o);
    if (fresh) continue;
    const OwnedRule* extra = &o;
    if (o.uuid == FirewallRuleUuid(s.project.uuid, o.name)) std::swap(it->second, extra);
    d->firewall_changes.push_back(Delete(s, extra->name, extra->uuid));
  }
  for (const auto& [name, r] : wanted) {
    triton::FwRule f = RuleFor(s, name, r);
    FirewallRuleView v{name, FirewallRuleSummary(r), f.uuid, "in place", ""};
    auto o = owned.find(name);
    if (o == owned.end()) {
      v.state = "to create";
      d->firewall_changes.push_back({FirewallChange::Kind::kCreate, name, f});
    } else if (o->second->hash != FirewallRuleHash(f.rule, r)) {  // the manifest changed
      v.state = "to update";
      v.uuid = f.uuid = o->second->uuid;
      d->firewall_changes.push_back({FirewallChange::Kind::kUpdate, name, f});
    } else if (std::string drift = Drift(*o->second, f); !drift.empty()) {
      // Its marker says current, FWAPI holds something else: changed by hand.
      v.state = "to update";
      v.uuid = f.uuid = o->second->uuid;
      d->firewall_changes.push_back({FirewallChange::Kind::kUpdate, name, f, drift});
      d->problems.push_back(DriftProblem("firewall-drift", absl::StrCat("firewall rule ", name, " (", f.uuid, ")"),
                                         "FWAPI", drift, absl::StrCat("firewall.", name),
                                         "until it is put back, the traffic the rule allows or blocks is not as the "
                                         "manifest says"));
    } else {
      v.uuid = o->second->uuid;
    }
    if (auto failed = s.firewall_failures.find(name); failed != s.firewall_failures.end() && v.state != "in place") {
      v.error = failed->second;
    }
    d->firewall_in_place = d->firewall_in_place && v.state == "in place";
    d->firewall_rules.push_back(std::move(v));
  }
  for (const auto& [name, o] : owned) {
    if (wanted.count(name)) continue;
    d->firewall_changes.push_back(Delete(s, name, o->uuid));
    d->firewall_rules.push_back({name, "", o->uuid, "to delete", ""});
    if (auto failed = s.firewall_failures.find(name); failed != s.firewall_failures.end()) {
      d->firewall_rules.back().error = failed->second;
    }
  }
  std::sort(d->firewall_rules.begin(), d->firewall_rules.end(),
            [](const FirewallRuleView& a, const FirewallRuleView& b) { return a.name < b.name; });
  for (const FirewallRuleView& v : d->firewall_rules) {
    if (v.error.empty()) continue;
    d->problems.push_back({"firewall", "", absl::StrCat("firewall rule ", v.name, " ", NotDone(v.state)),
                           v.error, "fix what FWAPI refused (the manifest's firewall." + v.name +
                           ", or FWAPI itself); it is tried again after a backoff (5 s, doubling, at most 5 minutes)",
                           "the traffic this rule allows or blocks is not as the manifest says"});
  }
}

Problem DriftProblem(const std::string& kind, const std::string& what, const std::string& api,
                     const std::string& drift, const std::string& key, const std::string& impact) {
  return {kind, "", absl::StrCat(what, " was changed in ", api, " by hand: ", drift),
          absl::StrCat(api, " holds another value than the manifest's, under the project's marker"),
          absl::StrCat("nothing to do: it is put back to the manifest's at this sync; change ", key,
                       " in the manifest to change it"),
          impact};
}

InPlaceSettings InPlaceFor(const Snapshot& s, std::optional<bool> firewall_in_place, const std::string& service) {
  InPlaceSettings want;
  if (!s.goal) return want;
  auto g = s.goal->services.find(service);
  if (g == s.goal->services.end()) return want;
  want.cns = CnsTagValue(s.project.name, service, g->second.spec);
  if (!s.fwapi) return want;  // rules not applied: the instances' firewall stays as it is made
  FirewallNeeds needs = FirewallNeedsOf(Wanted(s));
  if (needs.tagged.count(service)) want.firewall = FirewallTagValue(s.project.uuid, service);
  if (!needs.enabled.count(service)) {
    want.firewall_enabled = false;
  } else {
    if (!firewall_in_place) {
      Decision d;
      DecideFirewall(s, &d);
      firewall_in_place = d.firewall_in_place;
    }
    if (*firewall_in_place) want.firewall_enabled = true;
  }
  return want;
}

std::string InPlaceDifference(const InstanceState& i, const InPlaceSettings& want) {
  std::vector<std::string> what;
  if (i.cns != want.cns) what.push_back("cns-names");
  if (i.firewall != want.firewall || (want.firewall_enabled && *want.firewall_enabled != i.firewall_enabled)) {
    what.push_back("firewall");
  }
  if (!i.hand_changed.empty()) what.push_back(i.hand_changed);
  return absl::StrJoin(what, "+");
}

}  // namespace mariposa::convergence
