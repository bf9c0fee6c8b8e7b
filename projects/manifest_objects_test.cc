// The manifest's keys beyond a service's instances: CNS names, the
// service keys one by one, firewall rules, fabric networks, runs.
#include <functional>

#include "common/ids.h"
#include "gtest/gtest.h"
#include "projects/firewall.h"
#include "projects/manifest.h"
#include "projects/manifest_testing.h"

namespace mariposa {
namespace {

using ::mariposa::manifest_testing::Errors;
using ::mariposa::manifest_testing::MustParse;

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

// cns: each form, what it names, and every refusal with its place.
TEST(ManifestCnsTest, FormsAndNames) {
  struct Case {
    std::string name, cns;
    std::vector<std::string> names;
  };
  const std::vector<Case> cases = {
      {"default", "", {"jupiter-web"}},
      {"true is the default", "cns: true", {"jupiter-web"}},
      {"false: none", "cns: false", {}},
      {"one name", "cns: www", {"www"}},
      {"a list, sorted", "cns: [www, api:8080]", {"api:8080", "www"}},
  };
  for (const Case& c : cases) {
    Manifest m = MustParse(absl::StrCat("project: jupiter\nservices:\n  web: {image: x", c.cns.empty() ? "" : ", ",
                                        c.cns, "}\n"));
    EXPECT_EQ(CnsNames(m.project, "web", m.services.at("web")), c.names) << c.name;
  }
}

TEST(ManifestCnsTest, RefusalsAreLocated) {
  struct Case {
    std::string name, text, error;
  };
  const std::vector<Case> cases = {
      {"upper case", "project: p\nservices:\n  web: {image: x, cns: WWW}\n",
       "t.yaml:3:24: services.web.cns: \"WWW\" is not a CNS service name: write a DNS label (a-z, 0-9 and '-', at "
       "most 63, not starting or ending with '-'), optionally NAME:PORT\n"},
      {"bad port", "project: p\nservices:\n  web: {image: x, cns: [www:0]}\n",
       "t.yaml:3:25: services.web.cns[0]: \"www:0\": the port after ':' must be 1 to 65535\n"},
      {"twice", "project: p\nservices:\n  web: {image: x, cns: [a, a]}\n",
       "t.yaml:3:28: services.web.cns[1]: CNS name \"a\" is listed twice\n"},
      {"empty list", "project: p\nservices:\n  web: {image: x, cns: []}\n",
       "t.yaml:3:24: services.web.cns: an empty list names nothing; write `cns: false` for no names\n"},
      {"a map", "project: p\nservices:\n  web: {image: x, cns: {a: b}}\n",
       "t.yaml:3:24: services.web.cns: must be false, a CNS service name or a list of them, not a map\n"},
      {"the tag by hand", "project: p\nservices:\n  web: {image: x, tags: {triton.cns.services: a}}\n",
       "t.yaml:3:8: services.web.tags.triton.cns.services: CNS service names are set with the service's cns: key "
       "(the tag is Mariposa's); move them there\n"},
      {"agent", "project: p\nservices:\n  a: {image: x, compute_type: agent, cns: x}\n",
       "t.yaml:3:6: services.a.cns: agents and core zones get no CNS names from Mariposa; remove cns:\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(Errors(c.text), c.error) << c.name;
}

// New names are set in place: not part of the instance's spec hash, but
// stored in the canonical form (diff, history).
TEST(ManifestCnsTest, NamesAreNotInTheInstanceHashButAreStored) {
  Manifest a = MustParse("project: p\nservices:\n  web: {image: x}\n");
  Manifest b = MustParse("project: p\nservices:\n  web: {image: x, cns: [www]}\n");
  Manifest off = MustParse("project: p\nservices:\n  web: {image: x, cns: false}\n");
  EXPECT_EQ(InstanceSpecHash(a.services.at("web")), InstanceSpecHash(b.services.at("web")));
  EXPECT_NE(CanonicalHash(a), CanonicalHash(b));
  EXPECT_NE(CanonicalHash(b), CanonicalHash(off));
  Manifest again = MustParse(CanonicalYaml(off));
  ASSERT_TRUE(again.services.at("web").cns.has_value());
  EXPECT_TRUE(again.services.at("web").cns->empty());
  EXPECT_EQ(CanonicalYaml(MustParse(CanonicalYaml(b))), CanonicalYaml(b));
}

TEST(ManifestCnsTest, TooLongADefaultIsWarnedAndNamesNothing) {
  std::string project(40, 'p'), service(30, 's');
  ParseOptions o;
  o.filename = "t.yaml";
  ParseResult r = ParseManifest(absl::StrCat("project: ", project, "\nservices:\n  ", service, ": {image: x}\n"), o);
  ASSERT_TRUE(r.manifest.has_value());
  ASSERT_EQ(r.manifest->warnings.size(), 1u);
  EXPECT_NE(r.manifest->warnings[0].message.find("longer than a DNS label"), std::string::npos);
  EXPECT_TRUE(CnsNames(project, service, r.manifest->services.at(service)).empty());
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

// The service's small parsers, one row per key: what a value becomes.
TEST(ManifestServiceKeysTest, EachKeyParsesToItsField) {
  struct Case {
    std::string name, keys;
    std::function<bool(const ServiceSpec&)> holds;
  };
  const std::vector<Case> cases = {
      {"compute_type lx", "compute_type: lx",
       [](const ServiceSpec& s) { return s.compute_type == "infrastructure" && s.brand == "lx"; }},
      {"resources", "resources: {memory: 512m, disk: 10g, cpu: 0.5}",
       [](const ServiceSpec& s) {
         return s.memory_bytes == int64_t{512} << 20 && s.disk_bytes == int64_t{10} << 30 && s.cpu == 0.5;
       }},
      {"ports sorted", "ports: [443, 80]", [](const ServiceSpec& s) { return s.ports == std::vector<int>{80, 443}; }},
      {"command list", "command: [run, --fast]", [](const ServiceSpec& s) { return s.command == "run --fast"; }},
      {"start", "start: {parallelism: 4, window: 5s}",
       [](const ServiceSpec& s) { return s.start_parallelism == 4 && s.start_window == absl::Seconds(5); }},
      {"restart condition, deduplicated and sorted", "restart: {condition: [on-failure, always, on-failure]}",
       [](const ServiceSpec& s) { return s.restart_condition == std::vector<std::string>{"always", "on-failure"}; }},
      {"stop", "stop: {timeout: 10s, preserve_stopped: always}",
       [](const ServiceSpec& s) { return s.stop_timeout == absl::Seconds(10) && s.preserve_stopped == "always"; }},
      {"update", "update: {rolling: 2, canary: 1, max_surge: 0, on_change: manual}",
       [](const ServiceSpec& s) {
         return s.update_rolling == 2 && s.update_canary == 1 && s.update_max_surge == 0 &&
                s.update_on_change == "manual";
       }},
      {"placement", "placement: [\"service!=~web\"]",
       [](const ServiceSpec& s) { return s.placement.size() == 1 && s.placement[0].soft && !s.placement[0].equal; }},
  };
  for (const Case& c : cases) {
    Manifest m = MustParse(absl::StrCat("project: p\nservices:\n  web: {image: x, ", c.keys, "}\n"));
    EXPECT_TRUE(c.holds(m.services.at("web"))) << c.name;
  }
}

// The rules that tie keys together, each with its located error.
TEST(ManifestServiceKeysTest, RulesAcrossKeys) {
  struct Case {
    std::string name, text, error;
  };
  const std::vector<Case> cases = {
      {"no image", "project: p\nservices:\n  web: {count: 1}\n",
       "t.yaml:3:8: services.web.image: missing: every service needs an image (name[@version], uuid or docker "
       "reference)\n"},
      {"package twice", "project: p\nservices:\n  web: {image: x, package: a, resources: {package: b}}\n",
       "t.yaml:3:52: services.web.resources.package: package is given twice (here and in package:); keep one\n"},
      {"reprovision without a delegate dataset", "project: p\nservices:\n  web: {image: x, update: {strategy: reprovision}}\n",
       "t.yaml:3:38: services.web.update.strategy: reprovision rewrites the instance's root; only a delegate dataset "
       "survives it. Add `delegate_dataset: true` to the service (and keep the data under /zones/<uuid>/data), or use "
       "strategy: replace\n"},
      {"core zone replaced", "project: p\nservices:\n  z: {image: x, compute_type: core, update: {strategy: replace}}\n",
       "t.yaml:3:56: services.z.update.strategy: core zones are updated in place (VMAPI reprovision, their delegate "
       "dataset kept), as sdcadm does; use strategy: reprovision or leave it out\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(Errors(c.text), c.error) << c.name;
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

const char kTwo[] = "project: p\nservices:\n  web: {image: x}\n  db: {image: x}\n";

// firewall: each form and what FWAPI gets.
TEST(ManifestFirewallTest, FormsBecomeFwruleText) {
  const std::string u = "11111111-2222-4333-8444-555555555555";
  const std::string web = "tag \"mariposa.firewall\" = \"" + u + "/web\"";
  const std::string db = "tag \"mariposa.firewall\" = \"" + u + "/db\"";
  struct Case {
    std::string name, rule, text, summary;
  };
  const std::vector<Case> cases = {
      {"one port", "{from: web, to: db, ports: 5432}", "FROM " + web + " TO " + db + " ALLOW tcp PORT 5432",
       "FROM web TO db ALLOW tcp PORT 5432"},
      {"several ports and a range", "{from: any, to: web, ports: [80, 443, 8000-8100]}",
       "FROM any TO " + web + " ALLOW tcp PORTS 80, 443, 8000 - 8100", "FROM any TO web ALLOW tcp PORTS 80, 443, 8000 - 8100"},
      {"all ports by default", "{from: web, to: db}", "FROM " + web + " TO " + db + " ALLOW tcp ALL PORTS",
       "FROM web TO db ALLOW tcp ALL PORTS"},
      {"ports: all", "{from: web, to: db, ports: all, protocol: udp}",
       "FROM " + web + " TO " + db + " ALLOW udp ALL PORTS", "FROM web TO db ALLOW udp ALL PORTS"},
      {"addresses, a list, block", "{from: [ip 10.0.0.1, subnet 192.168.0.0/16], to: web, action: block}",
       "FROM (ip 10.0.0.1 OR subnet 192.168.0.0/16) TO " + web + " BLOCK tcp ALL PORTS",
       "FROM (ip 10.0.0.1 OR subnet 192.168.0.0/16) TO web BLOCK tcp ALL PORTS"},
      {"icmp types", "{from: any, to: web, protocol: icmp, ports: [8, 0]}",
       "FROM any TO " + web + " ALLOW icmp (TYPE 8 AND TYPE 0)", "FROM any TO web ALLOW icmp (TYPE 8 AND TYPE 0)"},
      {"icmp, all types", "{from: any, to: web, protocol: icmp}", "FROM any TO " + web + " ALLOW icmp TYPE all",
       "FROM any TO web ALLOW icmp TYPE all"},
      {"a priority", "{from: any, to: web, ports: 80, action: block, priority: 10}",
       "FROM any TO " + web + " BLOCK tcp PORT 80 PRIORITY 10", "FROM any TO web BLOCK tcp PORT 80 PRIORITY 10"},
  };
  for (const Case& c : cases) {
    Manifest m = MustParse(absl::StrCat(kTwo, "firewall:\n  r: ", c.rule, "\n"));
    ASSERT_EQ(m.firewall.size(), 1u) << c.name;
    const FirewallRuleSpec& r = m.firewall.at("r");
    EXPECT_EQ(FirewallRuleText(u, r), c.text) << c.name;
    EXPECT_EQ(FirewallRuleSummary(r), c.summary) << c.name;
    // The canonical form keeps the rule as written.
    Manifest again = MustParse(CanonicalYaml(m));
    EXPECT_EQ(FirewallRuleText(u, again.firewall.at("r")), c.text) << c.name << "\n" << CanonicalYaml(m);
  }
}

TEST(ManifestFirewallTest, RefusalsAreLocated) {
  struct Case {
    std::string name, rule, error;
  };
  const std::vector<Case> cases = {
      {"no to", "{from: web}", "t.yaml:6:6: firewall.r: a rule needs both from: and to: (to is missing); each is a "
                               "service of this project, any, ip ADDRESS or subnet CIDR, or a list of them\n"},
      {"unknown service", "{from: wbe, to: db}",
       "t.yaml:6:13: firewall.r.from: \"wbe\" is not a service of this manifest, nor any, ip ADDRESS or subnet CIDR\n"},
      {"no service of ours", "{from: any, to: ip 10.0.0.1}",
       "t.yaml:6:13: firewall.r: the rule names none of this project's services: it would reach every instance of the "
       "account; name a service in from: or to:\n"},
      {"bad address", "{from: ip 10.0.0.300, to: db}",
       "t.yaml:6:13: firewall.r.from: \"10.0.0.300\" is not an IPv4 or IPv6 address\n"},
      {"bad subnet", "{from: subnet 10.0.0.0/33, to: db}",
       "t.yaml:6:13: firewall.r.from: \"10.0.0.0/33\" is not a subnet (ADDRESS/BITS, e.g. 10.0.0.0/8)\n"},
      {"bad port", "{from: web, to: db, ports: [80, 70000]}",
       "t.yaml:6:33: firewall.r.ports[1]: \"70000\" is not a port (1..65535) or a range FIRST-LAST\n"},
      {"backwards range", "{from: web, to: db, ports: 90-80}",
       "t.yaml:6:33: firewall.r.ports[0]: the range \"90-80\" ends before it starts\n"},
      {"bad icmp type", "{from: web, to: db, protocol: icmp, ports: 300}",
       "t.yaml:6:49: firewall.r.ports[0]: \"300\" is not an ICMP type (0..255)\n"},
      {"bad protocol", "{from: web, to: db, protocol: sctp}",
       "t.yaml:6:36: firewall.r.protocol: \"sctp\" is not one of: tcp, udp, icmp, icmp6\n"},
      {"bad action", "{from: web, to: db, action: deny}",
       "t.yaml:6:34: firewall.r.action: \"deny\" is not one of: allow, block\n"},
      {"twice", "{from: [web, web], to: db}", "t.yaml:6:19: firewall.r.from[1]: \"web\" is listed twice\n"},
      {"unknown key", "{from: web, to: db, port: 80}",
       "t.yaml:6:26: firewall.r.port: unknown key \"port\"; expected one of: action, description, enabled, from, "
       "log, ports, priority, protocol, to\n"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Errors(absl::StrCat(kTwo, "firewall:\n  r: ", c.rule, "\n")), c.error) << c.name;
  }
  EXPECT_EQ(Errors("project: p\nservices:\n  a: {image: x, compute_type: agent}\n  db: {image: x}\nfirewall:\n"
                   "  r: {from: a, to: db}\n"),
            "t.yaml:6:13: firewall.r.from: service \"a\" is an agent: firewall rules name the project's own "
            "instances only\n");
  EXPECT_EQ(Errors(absl::StrCat(kTwo, "firewall:\n  Bad_Name: {from: web, to: db}\n")),
            "t.yaml:6:3: firewall.Bad_Name: rule name \"Bad_Name\" is not a DNS label\n");
}

// Which instances carry the tag and which turn their firewall on: an
// ALLOW rule's TO side, a BLOCK rule's FROM side; a disabled rule turns
// nothing on.
// log: FWAPI's field, not the rule text; it changes the rule in place (its
// hash), and a rule without it keeps the hash it had before log existed.
TEST(ManifestFirewallTest, LogIsTheRulesFieldAndChangesItInPlace) {
  Manifest m = MustParse(absl::StrCat(kTwo, "firewall:\n  r: {from: web, to: db, ports: 5432, log: true}\n"));
  const FirewallRuleSpec& r = m.firewall.at("r");
  EXPECT_TRUE(r.log);
  EXPECT_EQ(FirewallRuleSummary(r), "FROM web TO db ALLOW tcp PORT 5432");
  Manifest again = MustParse(CanonicalYaml(m));
  EXPECT_TRUE(again.firewall.at("r").log);
  FirewallRuleSpec quiet = r;
  quiet.log = false;
  EXPECT_NE(FirewallRuleHash("x", r), FirewallRuleHash("x", quiet));
  FirewallRuleSpec plain;
  EXPECT_EQ(FirewallRuleHash("x", plain),
            Sha256Hex(std::string("x\nenabled\n")).substr(0, 12)) << "rules made before log keep their hash";
  EXPECT_EQ(Errors(absl::StrCat(kTwo, "firewall:\n  r: {from: web, to: db, priority: 101}\n")),
            "t.yaml:6:36: firewall.r.priority: 101 is out of range 0..100\n");
}

TEST(ManifestFirewallTest, NeedsOfTheRules) {
  Manifest m = MustParse(absl::StrCat("project: p\nservices:\n  web: {image: x}\n  db: {image: x}\n  cache: {image: x}\n"
                                      "  smtp: {image: x}\n  off: {image: x}\n",
                                      "firewall:\n  a: {from: web, to: db}\n  b: {from: smtp, to: any, action: block}\n"
                                      "  c: {from: any, to: off, enabled: false}\n"));
  FirewallNeeds n = FirewallNeedsOf(m.firewall);
  EXPECT_EQ(n.tagged, (std::set<std::string>{"db", "off", "smtp", "web"}));
  EXPECT_EQ(n.enabled, (std::set<std::string>{"db", "smtp"}));
}

// The project's rules are known by their uuid and their description's
// marker; a hand-made rule or another project's is not.
TEST(ManifestFirewallTest, OwnershipMarkerAndUuid) {
  const std::string u = "11111111-2222-4333-8444-555555555555";
  const std::string other = "66666666-2222-4333-8444-555555555555";
  FirewallRuleSpec r;
  r.from = {{FirewallEndpoint::Kind::kAny, ""}};
  r.to = {{FirewallEndpoint::Kind::kService, "web"}};
  r.description = "public: web";
  std::string text = FirewallRuleText(u, r);
  std::string d = FirewallDescription(u, "web-in", text, r);
  auto m = ParseFirewallDescription(u, d);
  ASSERT_TRUE(m.has_value()) << d;
  EXPECT_EQ(m->name, "web-in");
  EXPECT_EQ(m->hash, FirewallRuleHash(text, r));
  EXPECT_FALSE(ParseFirewallDescription(other, d).has_value());
  EXPECT_FALSE(ParseFirewallDescription(u, "by hand").has_value());
  EXPECT_FALSE(ParseFirewallDescription(u, "mariposa " + u + " rule web-in xyz").has_value());
  // Stable, distinct, a uuid.
  EXPECT_EQ(FirewallRuleUuid(u, "web-in"), FirewallRuleUuid(u, "web-in"));
  EXPECT_NE(FirewallRuleUuid(u, "web-in"), FirewallRuleUuid(other, "web-in"));
  EXPECT_NE(FirewallRuleUuid(u, "web-in"), FirewallRuleUuid(u, "web-out"));
  EXPECT_TRUE(IsUuid(FirewallRuleUuid(u, "web-in"))) << FirewallRuleUuid(u, "web-in");
  // Any change to what FWAPI holds changes the hash.
  FirewallRuleSpec off = r;
  off.enabled = false;
  EXPECT_NE(FirewallRuleHash(text, r), FirewallRuleHash(text, off));
  FirewallRuleSpec said = r;
  said.description = "other";
  EXPECT_NE(FirewallRuleHash(text, r), FirewallRuleHash(text, said));
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

const char kFabricBase[] = "project: p\nservices:\n  db: {image: x, networks: [private, external]}\n";

TEST(ManifestFabricTest, FormsAndTheirDefaults) {
  Manifest m = MustParse(absl::StrCat(kFabricBase, "fabric:\n  vlan: 44\n  networks:\n"
                                                   "    private: {subnet: 10.0.1.0/24, gateway: 10.0.1.1, resolvers: [8.8.8.8],"
                                                   " routes: {10.2.0.0/16: 10.0.1.254}, internet_nat: false}\n"
                                                   "    back: {subnet: 10.0.2.0/24, provision_start: 10.0.2.10, "
                                                   "provision_end: 10.0.2.20}\n"));
  ASSERT_TRUE(m.fabric.has_value());
  EXPECT_EQ(m.fabric->vlan, 44);
  const FabricNetworkSpec& p = m.fabric->networks.at("private");
  EXPECT_EQ(ProvisionRange(p), (std::pair<std::string, std::string>{"10.0.1.2", "10.0.1.254"})) << "after the gateway";
  EXPECT_FALSE(p.internet_nat);
  EXPECT_EQ(p.routes.at("10.2.0.0/16"), "10.0.1.254");
  EXPECT_EQ(ProvisionRange(m.fabric->networks.at("back")),
            (std::pair<std::string, std::string>{"10.0.2.10", "10.0.2.20"}));
  EXPECT_EQ(FabricNetworkName("p", "private"), "p-private");
  // The canonical form keeps it; only resolvers, routes and description
  // change in place.
  Manifest again = MustParse(CanonicalYaml(m));
  ASSERT_TRUE(again.fabric.has_value());
  EXPECT_EQ(FabricFixed(again.fabric->networks.at("private")), FabricFixed(p));
  EXPECT_EQ(FabricMutableHash(again.fabric->networks.at("private")), FabricMutableHash(p));
  FabricNetworkSpec moved = p;
  moved.resolvers = {"1.1.1.1"};
  EXPECT_EQ(FabricFixed(moved), FabricFixed(p));
  EXPECT_NE(FabricMutableHash(moved), FabricMutableHash(p));
  moved.subnet = "10.0.9.0/24";
  EXPECT_NE(FabricFixed(moved), FabricFixed(p));
  // The networks NAPI must have already: not the fabric's.
  auto marker = ParseOwnedMarker("u", "network", FabricNetworkDescription("u", "private", p));
  ASSERT_TRUE(marker.has_value());
  EXPECT_EQ(marker->name, "private");
  EXPECT_FALSE(ParseOwnedMarker("u", "rule", FabricNetworkDescription("u", "private", p)).has_value());
}

TEST(ManifestFabricTest, RefusalsAreLocated) {
  struct Case {
    std::string name, fabric, error;
  };
  const std::vector<Case> cases = {
      {"no vlan", "  networks: {a: {subnet: 10.0.1.0/24}}\n",
       "t.yaml:5:3: fabric: vlan: is required: the account's VLAN id (2..4094) the networks go on\n"},
      {"vlan out of range", "  vlan: 1\n  networks: {a: {subnet: 10.0.1.0/24}}\n",
       "t.yaml:5:9: fabric.vlan: 1 is out of range 2..4094\n"},
      {"no networks", "  vlan: 44\n", "t.yaml:5:3: fabric: networks: names none; a fabric holds at least one network\n"},
      {"no subnet", "  vlan: 44\n  networks: {a: {gateway: 10.0.1.1}}\n",
       "t.yaml:6:17: fabric.networks.a: subnet: is required (e.g. subnet: 10.0.1.0/24)\n"},
      {"bad subnet", "  vlan: 44\n  networks: {a: {subnet: 10.0.1.7/24}}\n",
       "t.yaml:6:17: fabric.networks.a.subnet: \"10.0.1.7/24\" is not an IPv4 subnet ADDRESS/BITS with 8 to 30 bits, the "
       "address on its boundary (e.g. 10.0.1.0/24)\n"},
      {"gateway outside", "  vlan: 44\n  networks: {a: {subnet: 10.0.1.0/24, gateway: 10.0.2.1}}\n",
       "t.yaml:6:17: fabric.networks.a.gateway: \"10.0.2.1\" is not a host of 10.0.1.0/24\n"},
      {"range backwards",
       "  vlan: 44\n  networks: {a: {subnet: 10.0.1.0/24, provision_start: 10.0.1.9, provision_end: 10.0.1.3}}\n",
       "t.yaml:6:17: fabric.networks.a.provision_end: 10.0.1.3 comes before provision_start 10.0.1.9\n"},
      {"bad resolver", "  vlan: 44\n  networks: {a: {subnet: 10.0.1.0/24, resolvers: [dns]}}\n",
       "t.yaml:6:17: fabric.networks.a.resolvers: \"dns\" is not an IPv4 address\n"},
      {"overlap", "  vlan: 44\n  networks: {a: {subnet: 10.0.0.0/16}, b: {subnet: 10.0.1.0/24}}\n",
       "t.yaml:5:3: fabric.networks.b.subnet: 10.0.1.0/24 overlaps network a's 10.0.0.0/16: the networks of one VLAN "
       "need subnets of their own\n"},
      {"unknown key", "  vlan: 44\n  networks: {a: {subnet: 10.0.1.0/24, mtu: 9000}}\n",
       "t.yaml:6:39: fabric.networks.a.mtu: unknown key \"mtu\"; expected one of: description, gateway, internet_nat, "
       "provision_end, provision_start, resolvers, routes, subnet\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(Errors(absl::StrCat(kFabricBase, "fabric:\n", c.fabric)), c.error) << c.name;
}

TEST(ManifestRunsTest, ScheduledAndEventServices) {
  Manifest m = MustParse(R"(project: p
services:
  report:
    service_type: scheduled
    schedule: {cron: "0 3 * * MON-FRI", time_zone: Europe/Berlin}
    image: x
    count: 2
    run: {concurrency: replace, starting_deadline: 5m, deadline: 1h, history: {succeeded: 2, failed: 3}}
  migrate:
    service_type: event
    image: x
  nightly:
    service_type: scheduled
    schedule: "@daily"
    image: x
)");
  const ServiceSpec& r = m.services.at("report");
  EXPECT_TRUE(RunsToCompletion(r));
  EXPECT_EQ(r.schedule, "0 3 * * MON-FRI");
  EXPECT_EQ(r.time_zone, "Europe/Berlin");
  EXPECT_EQ(r.run_concurrency, "replace");
  EXPECT_EQ(r.run_starting_deadline, absl::Minutes(5));
  EXPECT_EQ(r.run_deadline, absl::Hours(1));
  EXPECT_EQ(r.run_keep_succeeded, 2);
  EXPECT_EQ(r.run_keep_failed, 3);
  const ServiceSpec& e = m.services.at("migrate");
  EXPECT_EQ(e.run_concurrency, "forbid") << "Kubernetes' default is allow; a migration run twice at once is worse";
  EXPECT_EQ(e.run_keep_succeeded, 0);
  EXPECT_EQ(e.run_keep_failed, 1);
  EXPECT_EQ(m.services.at("nightly").time_zone, "UTC");
  // The canonical form reads back to the same manifest; the run settings are
  // not the instances' spec (a new schedule replaces nothing).
  Manifest again = MustParse(CanonicalYaml(m));
  EXPECT_EQ(CanonicalHash(again), CanonicalHash(m));
  Manifest later = m;
  later.services.at("report").schedule = "0 4 * * *";
  EXPECT_EQ(InstanceSpecHash(later.services.at("report")), InstanceSpecHash(r));
  EXPECT_NE(CanonicalHash(later), CanonicalHash(m));
}

TEST(ManifestRunsTest, RefusalsAreLocated) {
  struct Case {
    std::string name, service, error;
  };
  const std::vector<Case> cases = {
      {"bad cron", "service_type: scheduled, schedule: \"61 * * * *\"",
       "t.yaml:3:52: services.j.schedule: minute: \"61\" is not a value, range or step of 0-59\n"},
      {"bad zone", "service_type: scheduled, schedule: {cron: \"@daily\", time_zone: Mars/Olympus}",
       "t.yaml:3:80: services.j.schedule.time_zone: \"Mars/Olympus\" is not a time zone of the tz database (e.g. UTC, "
       "Europe/Berlin, America/New_York)\n"},
      {"event with a schedule", "service_type: event, schedule: \"@daily\"",
       "t.yaml:3:48: services.j.schedule: an event service runs on `mariposa run`, not on a schedule; use "
       "service_type: scheduled, or remove schedule:\n"},
      {"continuous with a schedule", "schedule: \"@daily\"",
       "t.yaml:3:27: services.j.schedule: schedule: is for service_type scheduled or event; this service is "
       "continuous\n"},
      {"continuous with run", "run: {deadline: 1h}",
       "t.yaml:3:22: services.j.run: run: is for service_type scheduled or event; this service is continuous\n"},
      {"health checks", "service_type: event, healthchecks: {h: {type: tcp, port: 1}}",
       "t.yaml:3:52: services.j.healthchecks: a run's instances end by design: health checks are for continuous "
       "services; remove healthchecks:\n"},
      {"restart", "service_type: event, restart: {condition: always}",
       "t.yaml:3:47: services.j.restart: a run's instances are not restarted: a run ends when they do (run.deadline "
       "stops a run that hangs); remove restart:\n"},
      {"bad concurrency", "service_type: event, run: {concurrency: queue}",
       "t.yaml:3:57: services.j.run.concurrency: \"queue\" is not one of: forbid, replace, allow\n"},
      {"an agent", "service_type: event, compute_type: agent",
       "t.yaml:3:31: services.j.service_type: agents and core zones run continuously; event is for the project's own "
       "jobs\n"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Errors(absl::StrCat("project: p\nservices:\n  j: {image: x, ", c.service, "}\n")), c.error) << c.name;
  }
}

TEST(ManifestCnsTest, TheProjectsCnsKey) {
  const std::string services = "services:\n  web: {image: x}\n  db: {image: x, cns: [mysql]}\n  a: {image: x, compute_type: agent}\n";
  Manifest off = MustParse("project: shop\ncns: false\n" + services);
  EXPECT_EQ(CnsNames("shop", "web", off.services.at("web")), std::vector<std::string>{}) << "no default names";
  EXPECT_EQ(CnsNames("shop", "db", off.services.at("db")), std::vector<std::string>{"mysql"}) << "a service's own win";
  EXPECT_EQ(CnsNames("shop", "a", off.services.at("a")), std::vector<std::string>{});
  Manifest renamed = MustParse("project: shop\ncns: store\n" + services);
  EXPECT_EQ(CnsNames("shop", "web", renamed.services.at("web")), std::vector<std::string>{"store-web"});
  EXPECT_EQ(CnsNames("shop", "db", renamed.services.at("db")), std::vector<std::string>{"mysql"});
  Manifest plain = MustParse("project: shop\n" + services);
  EXPECT_EQ(CnsNames("shop", "web", plain.services.at("web")), std::vector<std::string>{"shop-web"});
  // Kept by the canonical form, and a change shows.
  Manifest again = MustParse(CanonicalYaml(renamed));
  EXPECT_EQ(CanonicalHash(again), CanonicalHash(renamed));
  EXPECT_NE(CanonicalHash(renamed), CanonicalHash(plain));
  EXPECT_EQ(Errors("project: shop\ncns: Store_1\n" + services),
            "t.yaml:2:6: cns: \"Store_1\" is not a DNS label (lower-case letters, digits and '-', at most 63)\n");
  EXPECT_EQ(Errors("project: shop\ncns: {zone: x}\n" + services),
            "t.yaml:2:6: cns: must be false or a name (the default CNS names become NAME-SERVICE), not a map\n");
}

}  // namespace
}  // namespace mariposa
