// Decide as a table of situations, continued: the objects a project owns
// outside VMAPI (FWAPI rules, NAPI fabric, VOLAPI volumes), instances put
// back in place, scheduled and event runs, quiet projects, a check's
// versions, and the backoff of failed changes. No I/O, no clock.
#include "convergence/decide/decide.h"

#include <functional>

#include "convergence/decide/decide_testing.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

using testing::Count;
using testing::GoalOf;
using testing::HasProblem;
using testing::Instance;
using testing::JobOf;
using testing::kT0;
using testing::SnapshotOf;
using testing::Task;

// Issue 31: a changed check used to run at once against the running
// instances. Each instance keeps its own version's checks until replaced,
// and a changed check makes it outdated, so it rolls out.
// CNS names are set in place: an instance whose triton.cns.services tag is
// not the service's names is retagged (not replaced), once, and the service
// is not converged until it is.
TEST(DecideTest, CnsNamesAreSetInPlace) {
  struct Case {
    std::string name, cns;     // the manifest's cns: ("" = default)
    std::string tag;           // the instance's tag
    bool in_flight = false;    // a job already on it
    std::string state = "running";
    int retags;
  };
  const std::vector<Case> cases = {
      {"default, tagged", "", "p-web", false, "running", 0},
      {"default, created before names", "", "", false, "running", 1},
      {"renamed", "cns: [www, api]", "p-web", false, "running", 1},
      {"turned off", "cns: false", "p-web", false, "running", 1},
      {"off and untagged", "cns: false", "", false, "running", 0},
      {"stopped by `mariposa stop` too", "cns: www", "p-web", false, "stopped", 1},
      {"a job on it already", "cns: www", "p-web", true, "running", 0},
      {"provisioning waits", "cns: www", "", false, "provisioning", 0},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf(absl::StrCat("project: p\nservices:\n  web: {image: web@1, count: 1",
                                                c.cns.empty() ? "" : ", ", c.cns, "}\n")));
    s.instances = {Instance(s, "web", 1, c.state)};
    s.instances[0].cns = c.tag;
    if (c.state == "stopped") s.project.stopped.insert("web");
    if (c.in_flight) s.in_flight = {JobOf("j1", "retag", "web", s.instances[0].uuid)};
    Decision d = Decide(s, kT0);
    EXPECT_EQ(Count(d, ActionKind::kRetag, "cns-names"), c.retags) << c.name;
    EXPECT_EQ(Count(d, ActionKind::kCreate) + Count(d, ActionKind::kDelete), 0) << c.name << ": never replaced";
    if (c.retags > 0) {
      EXPECT_FALSE(d.converged) << c.name;
      EXPECT_EQ(d.verdicts.at("web").state, VerdictState::kProgressing) << c.name;
    }
  }
}

// Issue 48: an instance changed by hand in VMAPI (its package, tags or
// metadata differ from what Mariposa made it with) is put back in place by
// a retag naming what changed, the service is not converged meanwhile and
// says so; after kMaxPutBacks put-backs that did not hold it stops, and a
// problem says why.
TEST(DecideTest, InstancesChangedByHandArePutBack) {
  struct Case {
    std::string name, changed;
    int put_backs = 0;        // put-backs that already ended
    bool in_flight = false;
    std::string state = "running";
    int retags;
    VerdictState verdict;
    bool problem = false;
  };
  const std::vector<Case> cases = {
      {"unchanged", "", 0, false, "running", 0, VerdictState::kConverged},
      {"metadata", "metadata", 0, false, "running", 1, VerdictState::kProgressing},
      {"package and tags", "package+tags", 0, false, "running", 1, VerdictState::kProgressing},
      {"stopped", "metadata", 0, false, "stopped", 1, VerdictState::kProgressing},
      {"a put-back in flight", "metadata", 1, true, "running", 0, VerdictState::kProgressing},
      {"changed again twice", "metadata", 2, false, "running", 1, VerdictState::kProgressing},
      {"keeps changing", "package", 3, false, "running", 0, VerdictState::kDegraded, true},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 1}\n"));
    s.instances = {Instance(s, "web", 1, c.state)};
    s.instances[0].cns = "p-web";
    s.instances[0].hand_changed = c.changed;
    if (c.state == "stopped") s.project.stopped.insert("web");
    if (c.put_backs > 0) {
      s.memory["web"].spec_hash = s.goal->services.at("web").record.spec_hash;  // else forgotten
      s.memory["web"].put_backs[s.instances[0].uuid] = c.put_backs;
    }
    if (c.in_flight) s.in_flight = {JobOf("j1", "retag", "web", s.instances[0].uuid)};
    Decision d = Decide(s, kT0);
    EXPECT_EQ(Count(d, ActionKind::kRetag), c.retags) << c.name;
    if (c.retags > 0) {
      EXPECT_EQ(Count(d, ActionKind::kRetag, c.changed), 1) << c.name << ": the reason names it";
    }
    EXPECT_EQ(Count(d, ActionKind::kCreate) + Count(d, ActionKind::kDelete), 0) << c.name << ": never replaced";
    if (c.state == "running") {
      EXPECT_EQ(d.verdicts.at("web").state, c.verdict) << c.name;
    }
    EXPECT_EQ(d.converged, c.changed.empty()) << c.name;
    if (!c.changed.empty() && c.state == "running") {
      EXPECT_TRUE(absl::StrContains(d.verdicts.at("web").reason,
                                    "p-web-1 (" + absl::StrReplaceAll(c.changed, {{"+", ", "}}) +
                                        ") was changed in VMAPI by hand"))
          << c.name << ": " << d.verdicts.at("web").reason;
    }
    bool problem = false;
    for (const auto& pr : d.problems) problem |= pr.kind == "instance-drift";
    EXPECT_EQ(problem, c.problem) << c.name;
  }
  // A put-back that ended is counted, with its event; one that holds is
  // forgotten at the next sync.
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 1}\n"));
  s.instances = {Instance(s, "web", 1, "running")};
  s.instances[0].cns = "p-web";
  FinishedJob f{JobOf("j1", "retag", "web", s.instances[0].uuid), true, ""};
  f.job.reason = absl::StrCat(kPutBack, "metadata");
  s.finished = {f};
  Decision d = Decide(s, kT0);
  EXPECT_EQ(d.memory.at("web").put_backs.size(), 0u) << "held: forgotten";
  bool event = false;
  for (const auto& e : d.events) event |= e.kind == "instance.put-back";
  EXPECT_TRUE(event);
  s.instances[0].hand_changed = "metadata";
  d = Decide(s, kT0);
  EXPECT_EQ(d.memory.at("web").put_backs.at(s.instances[0].uuid), 1);
}

// Issue 48, 8: the automatic task says why it replaces: an instance
// destroyed out of band (gone at the same count, no removal of ours), a
// stopped one, a failed one; a count raised by an apply is the apply's.
TEST(DecideTest, AutomaticTasksNameWhatTheyReplace) {
  struct Case {
    std::string name;
    std::function<void(Snapshot*)> set;
    std::string trigger;
  };
  const std::vector<Case> cases = {
      {"destroyed out of band",
       [](Snapshot* s) {
         s->instances.pop_back();
         s->memory["web"].last_count = 2;
         s->memory["web"].last_seen = 2;
       },
       "destroyed"},
      {"stopped", [](Snapshot* s) { s->instances[1].state = "stopped"; }, "stopped"},
      {"failed", [](Snapshot* s) { s->instances[1].state = "failed"; }, "failed"},
      {"raised by an apply",
       [](Snapshot* s) {
         s->instances.pop_back();
         s->memory["web"].last_count = 1;
         s->memory["web"].last_seen = 1;
       },
       "apply"},
      {"removed by us (a job of ours ended)",
       [](Snapshot* s) {
         FinishedJob f{JobOf("j1", "delete", "web", s->instances[1].uuid), true, ""};
         s->finished = {f};
         s->instances.pop_back();
         s->memory["web"].last_count = 2;
         s->memory["web"].last_seen = 2;
       },
       "apply"},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
    s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
    s.memory["web"].spec_hash = s.goal->services.at("web").record.spec_hash;
    c.set(&s);
    Decision d = Decide(s, kT0);
    ASSERT_EQ(d.new_tasks.size(), 1u) << c.name;
    EXPECT_EQ(d.new_tasks[0].trigger, c.trigger) << c.name;
    EXPECT_EQ(d.memory.at("web").last_count, 2) << c.name;
  }
}

// Firewall rules (DecideFirewall), as a table: what is created, updated and
// deleted in FWAPI, what each instance carries in place, and when the
// project is converged.
TEST(DecideTest, FirewallRulesAndTheirInstances) {
  const std::string text =
      "project: p\nservices:\n  web: {image: web@1, count: 1}\n  db: {image: db@1, count: 1}\n"
      "firewall:\n  w2d: {from: web, to: db, ports: 5432}\n";
  auto goal = GoalOf(text);
  const FirewallRuleSpec& w2d = goal->firewall.at("w2d");
  auto owned = [&](const std::string& uuid, const FirewallRuleSpec& r, const std::string& name = "w2d") {
    std::string t = FirewallRuleText("p-uuid", r);
    return OwnedRule{uuid, name, FirewallRuleHash(t, r), t, r.enabled, r.log, FirewallDescription("p-uuid", name, t, r)};
  };
  // The rule as FWAPI holds it after a hand edit that kept its description.
  auto edited = [&](std::function<void(OwnedRule*)> edit) {
    OwnedRule o = owned(FirewallRuleUuid("p-uuid", "w2d"), w2d);
    edit(&o);
    return o;
  };
  FirewallRuleSpec other = w2d;
  other.ports = {"5433"};
  const std::string mine = FirewallRuleUuid("p-uuid", "w2d");
  struct Case {
    std::string name;
    std::function<void(Snapshot*)> set;
    std::string changes;  // kind:name:uuid, in order
    std::string state;    // the rule's view ("" = no view)
    int retags;           // instances set in place
    bool db_on;           // db's firewall is wanted on (off: wanted off, or left as it is)
    bool converged;
  };
  const std::vector<Case> cases = {
      {"no FWAPI: not applied, instances untouched", [](Snapshot* s) { s->fwapi = false; }, "", "not applied", 0,
       false, false},
      {"FWAPI not read: tagged (harmless), the firewall left as it is",
       [](Snapshot* s) { s->firewall.reset(); s->firewall_error = "FWAPI: timeout"; }, "", "unknown", 2, false, false},
      {"none yet: created at its uuid, instances tagged but the firewall not turned on before it exists",
       [](Snapshot* s) { s->firewall = std::vector<OwnedRule>{}; }, "create:w2d:" + mine, "to create", 2, false,
       false},
      {"in place: the db's firewall turned on",
       [&](Snapshot* s) { s->firewall = std::vector<OwnedRule>{owned(mine, w2d)}; }, "", "in place", 2, true, false},
      {"in place and the instances too",
       [&](Snapshot* s) {
         s->firewall = std::vector<OwnedRule>{owned(mine, w2d)};
         for (auto& i : s->instances) i.firewall = FirewallTagValue("p-uuid", i.service);
         s->instances[1].firewall_enabled = true;
       },
       "", "in place", 0, true, true},
      {"changed by hand: updated at the uuid it has",
       [&](Snapshot* s) { s->firewall = std::vector<OwnedRule>{owned("u-other", other)}; }, "update:w2d:u-other",
       "to update", 2, false, false},
      {"its text edited by hand in FWAPI, the description kept: updated back",
       [&](Snapshot* s) {
         s->firewall = std::vector<OwnedRule>{edited([](OwnedRule* o) { o->rule = "FROM any TO all vms ALLOW tcp PORT 22"; })};
       },
       "update:w2d:" + mine, "to update", 2, false, false},
      {"disabled by hand in FWAPI: updated back",
       [&](Snapshot* s) { s->firewall = std::vector<OwnedRule>{edited([](OwnedRule* o) { o->enabled = false; })}; },
       "update:w2d:" + mine, "to update", 2, false, false},
      {"logging turned on by hand: updated back",
       [&](Snapshot* s) { s->firewall = std::vector<OwnedRule>{edited([](OwnedRule* o) { o->log = true; })}; },
       "update:w2d:" + mine, "to update", 2, false, false},
      {"FWAPI's own spacing and keyword case: in place",
       [&](Snapshot* s) {
         s->firewall = std::vector<OwnedRule>{edited([](OwnedRule* o) {
           o->rule = "  " + absl::AsciiStrToLower(o->rule) + " ";
           for (size_t i = o->rule.find(' ', 3); i != std::string::npos; i = o->rule.find(' ', i + 3)) o->rule.insert(i, " ");
         })};
         for (auto& i : s->instances) i.firewall = FirewallTagValue("p-uuid", i.service);
         s->instances[1].firewall_enabled = true;
       },
       "", "in place", 0, true, true},
      {"a rule the manifest no longer has is deleted",
       [&](Snapshot* s) {
         s->firewall = std::vector<OwnedRule>{owned(mine, w2d), owned("u-old", other, "old")};
       },
       "delete:old:u-old", "in place", 2, true, false},
      {"two claim one name: the one at another uuid goes",
       [&](Snapshot* s) { s->firewall = std::vector<OwnedRule>{owned("u-copy", w2d), owned(mine, w2d)}; },
       "delete:w2d:u-copy", "in place", 2, true, false},
      {"a failing create says why",
       [&](Snapshot* s) {
         s->firewall = std::vector<OwnedRule>{};
         s->firewall_failures["w2d"] = "FWAPI CreateRule: InvalidParameters";
       },
       "create:w2d:" + mine, "to create", 2, false, false},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(goal);
    s.fwapi = true;
    s.firewall_owner = "owner-uuid";
    s.instances = {Instance(s, "web", 1), Instance(s, "db", 1)};
    c.set(&s);
    Decision d = Decide(s, kT0);
    std::vector<std::string> got;
    for (const FirewallChange& f : d.firewall_changes) {
      static const char* kKinds[] = {"create", "update", "delete"};
      got.push_back(absl::StrCat(kKinds[static_cast<int>(f.kind)], ":", f.name, ":", f.rule.uuid));
      EXPECT_EQ(f.rule.owner_uuid, "owner-uuid") << c.name;
    }
    EXPECT_EQ(absl::StrJoin(got, " "), c.changes) << c.name;
    std::string state;
    for (const FirewallRuleView& v : d.firewall_rules) {
      if (v.name == "w2d") state = v.state;
    }
    EXPECT_EQ(state, c.state) << c.name;
    // A hand edit is named as such, with what was changed.
    bool drift_named = false;
    for (const Problem& p : d.problems) drift_named |= p.kind == "firewall-drift" && absl::StrContains(p.error, "by hand");
    EXPECT_EQ(drift_named, absl::StrContains(c.name, "updated back")) << c.name;
    EXPECT_EQ(Count(d, ActionKind::kRetag), c.retags) << c.name;
    InPlaceSettings db = InPlaceFor(s, d.firewall_in_place, "db");
    EXPECT_EQ(db.firewall_enabled.value_or(false), c.db_on) << c.name;
    EXPECT_EQ(d.converged, c.converged) << c.name;
    bool problem = false;
    for (const Problem& p : d.problems) problem |= p.kind == "firewall";
    EXPECT_EQ(problem, c.state == "not applied" || c.state == "unknown" || s.firewall_failures.count("w2d") > 0)
        << c.name;
  }
  // The web side is tagged, never turned on (the rule applies to db).
  Snapshot s = SnapshotOf(goal);
  s.fwapi = true;
  s.firewall = std::vector<OwnedRule>{owned(mine, w2d)};
  InPlaceSettings web = InPlaceFor(s, true, "web");
  EXPECT_EQ(web.firewall, "p-uuid/web");
  EXPECT_EQ(web.firewall_enabled, std::optional<bool>(false));
}

// The fabric (DecideFabric), as a table: the VLAN before its networks, a
// network deleted only once no instance is on it, the VLAN the project made
// with the last network; what NAPI cannot change is a problem, not a change.
TEST(DecideTest, FabricVlanAndNetworks) {
  const std::string with = "project: p\nservices:\n  db: {image: db@1, count: 1, networks: [private]}\n"
                           "fabric:\n  vlan: 44\n  networks:\n    private: {subnet: 10.0.1.0/24, gateway: 10.0.1.1}\n";
  const std::string without = "project: p\nservices:\n  db: {image: db@1, count: 1}\n";
  auto goal_with = GoalOf(with);
  const FabricNetworkSpec& spec = goal_with->fabric->networks.at("private");
  auto net = [&](const std::string& uuid, const FabricNetworkSpec& n, int vlan = 44) {
    triton::FabricNetwork f;
    f.uuid = uuid;
    f.name = "p-private";
    f.vlan_id = vlan;
    f.subnet = n.subnet;
    f.gateway = n.gateway;
    std::tie(f.provision_start_ip, f.provision_end_ip) = ProvisionRange(n);
    f.description = FabricNetworkDescription("p-uuid", "private", n);
    return f;
  };
  const triton::FabricVlan ours{44, "p", FabricVlanDescription("p-uuid", 44)};
  const triton::FabricVlan theirs{44, "shared", "made by hand"};
  FabricNetworkSpec resolvers = spec;
  resolvers.resolvers = {"8.8.8.8"};
  FabricNetworkSpec moved = spec;
  moved.subnet = "10.0.9.0/24";
  moved.gateway = "10.0.9.1";
  struct Case {
    std::string name;
    bool with;
    std::vector<triton::FabricVlan> vlans;
    std::vector<triton::FabricNetwork> networks;
    bool on_it;          // the instance has a NIC on n1
    std::string changes;  // kinds, in order
    std::string state;    // private's view
  };
  const std::vector<Case> cases = {
      {"nothing yet: VLAN, then network", true, {}, {}, false, "vlan+ net+", "to create"},
      {"a VLAN of the account's already: used as it is", true, {theirs}, {}, false, "net+", "to create"},
      {"in place", true, {ours}, {net("n1", spec)}, true, "", "in place"},
      {"resolvers changed: updated", true, {ours}, {net("n1", resolvers)}, true, "net~", "to update"},
      {"subnet changed: not in place", true, {ours}, {net("n1", moved)}, true, "", "cannot change in place"},
      {"on another VLAN: not in place", true, {ours}, {net("n1", spec, 45)}, true, "", "cannot change in place"},
      {"removed, an instance still on it: waits", false, {ours}, {net("n1", spec)}, true, "",
       "waiting: 1 instances still on it"},
      {"removed, nothing on it: network, then our VLAN", false, {ours}, {net("n1", spec)}, false, "net- vlan-",
       "to delete"},
      {"removed: a VLAN not ours stays", false, {theirs}, {net("n1", spec)}, false, "net-", "to delete"},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf(c.with ? with : without));
    s.fabric = Snapshot::FabricSeen{c.vlans, c.networks};
    s.instances = {Instance(s, "db", 1)};
    if (c.on_it) s.instances[0].networks = {"n1"};
    Decision d = Decide(s, kT0);
    std::vector<std::string> got;
    static const char* kKinds[] = {"vlan+", "net+", "net~", "net-", "vlan-"};
    for (const FabricChange& f : d.fabric_changes) got.push_back(kKinds[static_cast<int>(f.kind)]);
    EXPECT_EQ(absl::StrJoin(got, " "), c.changes) << c.name;
    std::string state;
    for (const FabricNetworkView& v : d.fabric_networks) {
      if (v.name == "private") state = v.state;
    }
    EXPECT_EQ(state, c.state) << c.name;
    EXPECT_EQ(d.converged, c.state == "in place") << c.name;
    if (!d.fabric_changes.empty() && d.fabric_changes[0].kind == FabricChange::Kind::kCreateNetwork) {
      const triton::FabricNetwork& n = d.fabric_changes[0].network;
      EXPECT_EQ(n.name, "p-private") << c.name;
      EXPECT_EQ(n.provision_start_ip, "10.0.1.2") << c.name;
      EXPECT_EQ(n.vlan_id, 44) << c.name;
    }
  }
  // Not read: unknown, a problem, nothing changed.
  Snapshot s = SnapshotOf(goal_with);
  s.fabric_error = "NAPI: timeout";
  Decision d = Decide(s, kT0);
  EXPECT_TRUE(d.fabric_changes.empty());
  ASSERT_EQ(d.fabric_networks.size(), 1u);
  EXPECT_EQ(d.fabric_networks[0].state, "unknown");
  EXPECT_FALSE(d.converged);
}

// A network that left the manifest stays while a volume is served on it:
// retained with a retained volume, waiting while the volume is being
// deleted, deleted once it is gone.
TEST(DecideTest, AFabricNetworkStaysForTheVolumesServedOnIt) {
  const std::string with = "project: p\nservices:\n  db: {image: db@1, count: 1, networks: [private]}\n"
                           "fabric:\n  vlan: 44\n  networks:\n    private: {subnet: 10.0.1.0/24}\n";
  const FabricNetworkSpec spec = GoalOf(with)->fabric->networks.at("private");
  triton::FabricNetwork n1;
  n1.uuid = "n1";
  n1.name = "p-private";
  n1.vlan_id = 44;
  n1.subnet = spec.subnet;
  n1.description = FabricNetworkDescription("p-uuid", "private", spec);
  const triton::FabricVlan ours{44, "p", FabricVlanDescription("p-uuid", 44)};
  const triton::Volume data{"v1", "o", "p.data", 10240, "ready", {"n1"}, {}};
  struct Case {
    std::string name, volumes;  // the manifest's volumes: section ("" = none)
    bool in_volapi;
    std::string state, changes;
  };
  const std::vector<Case> cases = {
      {"a retained volume keeps it", "", true, "retained: volume p.data is served on it", ""},
      {"a volume being deleted holds it", "volumes:\n  data: {remove: true, network: 11111111-2222-4333-8444-555555555555}\n", true,
       "waiting: volume p.data is served on it until it is deleted", "vol-"},
      {"once the volume is gone it goes, then the VLAN", "volumes:\n  data: {remove: true, network: 11111111-2222-4333-8444-555555555555}\n", false,
       "to delete", "net- vlan-"},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  db: {image: db@1, count: 1}\n" + c.volumes));
    s.fabric = Snapshot::FabricSeen{{ours}, {n1}};
    s.instances = {Instance(s, "db", 1)};
    s.volapi = true;
    s.volumes = c.in_volapi ? std::vector<triton::Volume>{data} : std::vector<triton::Volume>{};
    Decision d = Decide(s, kT0);
    ASSERT_EQ(d.fabric_networks.size(), 1u) << c.name;
    EXPECT_EQ(d.fabric_networks[0].state, c.state) << c.name;
    std::vector<std::string> got;
    for (const VolumeChange& v : d.volume_changes) got.push_back(v.kind == VolumeChange::Kind::kDelete ? "vol-" : "vol+");
    for (const FabricChange& f : d.fabric_changes) {
      got.push_back(f.kind == FabricChange::Kind::kDeleteNetwork ? "net-"
                    : f.kind == FabricChange::Kind::kDeleteVlan  ? "vlan-"
                                                                  : "other");
    }
    EXPECT_EQ(absl::StrJoin(got, " "), c.changes) << c.name;
  }
}

// Volumes (DecideVolumes), as a table: made on their fabric network once it
// exists, deleted only when the manifest says so and nothing mounts them,
// retained otherwise; a volume of another project (by name) is never
// touched.
TEST(DecideTest, VolumesAreMadeDeletedOnlyWhenAskedAndRetainedOtherwise) {
  const std::string fabric = "fabric:\n  vlan: 44\n  networks:\n    private: {subnet: 10.0.1.0/24}\n";
  const std::string with = "project: p\n" + fabric +
                           "volumes:\n  data: {size: 20g}\n"
                           "services:\n  db: {image: db@1, count: 1, networks: [private], volumes: [data:/d]}\n";
  const std::string removed = "project: p\n" + fabric + "services:\n  db: {image: db@1, count: 1, networks: [private]}\n";
  const std::string remove = "project: p\n" + fabric + "volumes:\n  data: {size: 20g, remove: true}\n"
                             "services:\n  db: {image: db@1, count: 1, networks: [private]}\n";
  auto vol = [](const std::string& name, const std::string& state, std::vector<std::string> refs = {}) {
    triton::Volume v;
    v.uuid = "v-" + name;
    v.name = name;
    v.size = 20480;
    v.state = state;
    v.networks = {"n1"};
    v.refs = std::move(refs);
    return v;
  };
  struct Case {
    std::string name;
    std::string manifest;
    std::vector<triton::Volume> volumes;
    bool network_made;
    std::string changes;  // kinds
    std::string state;    // data's view
    bool converged;
    bool db = true;       // an instance of db (of the current spec, made 10 minutes before kT0) mounts it
  };
  const triton::Volume theirs = vol("pq.data", "ready");  // another project's (pq), same account
  triton::Volume remade = vol("p.data", "ready");
  remade.create_timestamp = absl::FormatTime(absl::RFC3339_full, kT0 - absl::Minutes(1), absl::UTCTimeZone());
  triton::Volume first = remade;
  first.create_timestamp = absl::FormatTime(absl::RFC3339_full, kT0 - absl::Minutes(11), absl::UTCTimeZone());
  const std::string lost = "lost: 1 instance mounts a copy deleted outside Mariposa";
  const std::vector<Case> cases = {
      {"nothing yet: made on the network", with, {theirs}, true, "data+", "to create", false, false},
      {"network not made yet: waits", with, {}, false, "", "waiting: fabric network private is not made yet", false,
       false},
      // Issue 48: deleted by hand while mounted: made again, but a loss.
      {"deleted by hand while db-1 mounts it: lost, made again", with, {}, true, "data+", lost, false},
      {"made again: db-1 still mounts the lost copy", with, {remade}, true, "", lost, false},
      {"made before db-1: the copy it mounts", with, {first}, true, "", "ready", true},
      {"creating", with, {vol("p.data", "creating")}, true, "", "creating", false},
      {"ready", with, {vol("p.data", "ready", {"db-uuid-1"})}, true, "", "ready", true},
      {"failed in VOLAPI: a problem", with, {vol("p.data", "failed")}, true, "", "failed", false},
      {"left out of the manifest: retained", removed, {vol("p.data", "ready")}, true, "",
       "retained (not in the manifest)", true},
      {"remove: true while mounted: waits", remove, {vol("p.data", "ready", {"a", "b"})}, true, "",
       "waiting: 2 instances mount it", false},
      {"remove: true, nothing mounts it: deleted", remove, {vol("p.data", "ready"), theirs}, true, "data-",
       "to delete", false},
      {"remove: true, being deleted", remove, {vol("p.data", "deleting")}, true, "", "deleting", false},
      {"remove: true, gone", remove, {}, true, "", "deleted", true},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf(c.manifest));
    FabricNetworkSpec net = s.goal->fabric->networks.at("private");
    triton::FabricNetwork n1;
    n1.uuid = "n1";
    n1.name = "p-private";
    n1.vlan_id = 44;
    n1.subnet = net.subnet;
    std::tie(n1.provision_start_ip, n1.provision_end_ip) = ProvisionRange(net);
    n1.description = FabricNetworkDescription("p-uuid", "private", net);
    s.fabric = Snapshot::FabricSeen{{{44, "p", FabricVlanDescription("p-uuid", 44)}},
                                    c.network_made ? std::vector<triton::FabricNetwork>{n1}
                                                   : std::vector<triton::FabricNetwork>{}};
    s.volapi = true;
    s.volumes = c.volumes;
    if (c.db) {
      s.instances = {Instance(s, "db", 1)};
      s.instances[0].networks = {"n1"};
    }
    Decision d = Decide(s, kT0);
    bool lost_problem = false;
    for (const auto& pr : d.problems) lost_problem |= pr.kind == "volume-lost";
    EXPECT_EQ(lost_problem, c.state == lost) << c.name;
    std::vector<std::string> got;
    for (const VolumeChange& v : d.volume_changes) {
      EXPECT_EQ(v.lost.empty(), c.state != lost) << c.name;
      got.push_back(v.name + (v.kind == VolumeChange::Kind::kCreate ? "+" : "-"));
      EXPECT_NE(v.volume.name, "pq.data") << c.name;
    }
    EXPECT_EQ(absl::StrJoin(got, " "), c.changes) << c.name;
    ASSERT_EQ(d.volumes.size(), 1u) << c.name << ": only the project's own";
    EXPECT_EQ(d.volumes[0].state, c.state) << c.name;
    EXPECT_EQ(d.converged, c.converged) << c.name;
    if (!d.volume_changes.empty() && d.volume_changes[0].kind == VolumeChange::Kind::kCreate) {
      const triton::Volume& v = d.volume_changes[0].volume;
      EXPECT_EQ(v.name, "p.data");
      EXPECT_EQ(v.size, 20480);
      EXPECT_EQ(v.networks, std::vector<std::string>{"n1"});
    }
    if (c.state == "failed") {
      EXPECT_TRUE(std::any_of(d.problems.begin(), d.problems.end(),
                              [](const Problem& p) { return p.error == "volume data failed in VOLAPI"; }));
    }
  }
  // Without VOLAPI: not applied, said, never converged.
  Snapshot s = SnapshotOf(GoalOf(with));
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.volumes.size(), 1u);
  EXPECT_EQ(d.volumes[0].state, "not applied");
  EXPECT_FALSE(d.converged);
  EXPECT_TRUE(std::any_of(d.problems.begin(), d.problems.end(), [](const Problem& p) {
    return p.fix.find("--volapi") != std::string::npos;
  }));
}

// Issue 48, 11: a volume that names no network (as an earlier release
// stored it) is made on the account's default fabric network; while that is
// not known it waits, with a problem saying how to name one.
TEST(DecideTest, AVolumeWithNoNetworkIsMadeOnTheAccountsDefault) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nvolumes:\n  uploads: {size: 10g}\n"
                                 "services:\n  web: {image: web@1, count: 1, volumes: [uploads:/u]}\n"));
  s.volapi = true;
  s.volumes = std::vector<triton::Volume>{};
  s.default_fabric = {"n-default", "My-Fabric-Network", "192.168.128.0/22", true, false, {"owner"}};
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.volume_changes.size(), 1u);
  EXPECT_EQ(d.volume_changes[0].volume.networks, std::vector<std::string>{"n-default"});
  EXPECT_EQ(d.volume_changes[0].volume.size, 10240);
  ASSERT_EQ(d.volumes.size(), 1u);
  EXPECT_EQ(d.volumes[0].network, "My-Fabric-Network (the account's default)");
  EXPECT_EQ(d.volumes[0].state, "to create");

  s.default_fabric = {};
  s.default_fabric_error = "account owner has no default fabric network (My-Fabric-Network, …)";
  d = Decide(s, kT0);
  EXPECT_TRUE(d.volume_changes.empty());
  ASSERT_EQ(d.volumes.size(), 1u);
  EXPECT_EQ(d.volumes[0].state,
            "waiting: the account's default fabric network is not known: account owner has no default fabric "
            "network (My-Fabric-Network, …)");
  EXPECT_FALSE(d.converged);
  EXPECT_TRUE(std::any_of(d.problems.begin(), d.problems.end(), [](const Problem& p) {
    return p.error == "volume uploads names no network and the account's default fabric network is not known" &&
           p.fix.find("volumes.uploads.network") != std::string::npos;
  }));
}

// Deleting the project deletes the volumes whose deletion_policy says so
// (after the instances that mount them) and keeps the others, with an
// event; the project goes when nothing but what it retains is left.
TEST(DecideTest, ADeletedProjectKeepsTheVolumesItRetains) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nvolumes:\n  data: {network: 11111111-2222-4333-8444-555555555555}\n"
                                 "  scratch: {network: 11111111-2222-4333-8444-555555555555, deletion_policy: delete}\n"
                                 "services:\n  web: {image: web@1, count: 0}\n"));
  // As Gather reads a project being deleted: no goal, the last version's volumes.
  s.volumes_at_deletion = s.goal->volumes;
  s.goal = nullptr;
  s.project.deleting = true;
  s.volapi = true;
  triton::Volume data{"v1", "o", "p.data", 10240, "ready", {}, {}};
  triton::Volume scratch{"v2", "o", "p.scratch", 10240, "ready", {}, {"vm-1"}};
  s.volumes = std::vector<triton::Volume>{data, scratch};
  Decision d = Decide(s, kT0);
  EXPECT_TRUE(d.volume_changes.empty()) << "scratch is still mounted";
  EXPECT_FALSE(d.delete_project);
  s.volumes->at(1).refs.clear();
  d = Decide(s, kT0);
  ASSERT_EQ(d.volume_changes.size(), 1u);
  EXPECT_EQ(d.volume_changes[0].volume.uuid, "v2");
  EXPECT_FALSE(d.delete_project);
  s.volumes->pop_back();
  d = Decide(s, kT0);
  EXPECT_TRUE(d.delete_project);
  ASSERT_EQ(d.volumes.size(), 2u);
  EXPECT_EQ(d.volumes[0].state, "retained (deletion_policy: retain)");
  EXPECT_TRUE(std::any_of(d.events.begin(), d.events.end(), [](const EventRecord& e) {
    return e.kind == "volume.retained" && e.detail.find("p.data v1") != std::string::npos;
  }));
  s.volumes.reset();
  s.volumes_error = "VOLAPI: timeout";  // not read: not yet
  EXPECT_FALSE(Decide(s, kT0).delete_project);
}

// `project delete --delete-volumes`: every volume of the project goes,
// whatever its deletion_policy and whether or not the manifest still names
// it, once nothing mounts it; a volume of another project stays.
TEST(DecideTest, DeleteVolumesTakesEveryVolumeOfTheProject) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nvolumes:\n  data: {network: 11111111-2222-4333-8444-555555555555}\n"
                                 "services:\n  web: {image: web@1, count: 0}\n"));
  s.volumes_at_deletion = s.goal->volumes;
  s.goal = nullptr;
  s.project.deleting = true;
  s.volapi = true;
  triton::Volume data{"v1", "o", "p.data", 10240, "ready", {}, {"vm-1"}};
  triton::Volume old{"v2", "o", "p.old", 10240, "ready", {}, {}};  // left out of the manifest earlier
  triton::Volume other{"v3", "o", "q.data", 10240, "ready", {}, {}};
  s.volumes = std::vector<triton::Volume>{data, old, other};
  Decision d = Decide(s, kT0);
  EXPECT_TRUE(d.volume_changes.empty()) << "without --delete-volumes both are retained";
  EXPECT_TRUE(d.delete_project);
  s.project.delete_volumes = true;
  d = Decide(s, kT0);
  ASSERT_EQ(d.volume_changes.size(), 1u) << "data is still mounted";
  EXPECT_EQ(d.volume_changes[0].volume.uuid, "v2");
  EXPECT_FALSE(d.delete_project);
  s.volumes->at(0).refs.clear();
  d = Decide(s, kT0);
  ASSERT_EQ(d.volume_changes.size(), 2u);
  EXPECT_EQ(d.volume_changes[0].volume.uuid, "v1");
  EXPECT_EQ(d.volume_changes[1].volume.uuid, "v2");
  s.volumes = std::vector<triton::Volume>{other};
  d = Decide(s, kT0);
  EXPECT_TRUE(d.volume_changes.empty());
  EXPECT_TRUE(d.delete_project) << "q.data is another project's";
  ASSERT_EQ(d.volumes.size(), 1u);
  EXPECT_EQ(d.volumes[0].state, "deleted");
}

// Runs of an event service (decide_runs.cc), as a table: a queued run
// starts and creates `count` instances tagged with it; it ends when they
// have all exited and records the outcome; its instances go unless
// run.history keeps them; run.deadline, run.concurrency and freezes.
TEST(DecideTest, RunsStartEndAndRecordTheirOutcome) {
  const std::string base = "project: p\nservices:\n  job:\n    service_type: event\n    image: job@1\n    count: 2\n";
  auto run_task = [](const std::string& uuid, const std::string& state, std::string origin = "user") {
    TaskRecord t = Task(uuid, "run", state, {"job"});
    t.origin = std::move(origin);
    if (state == "active") t.started_at = kT0 - absl::Minutes(1);
    return t;
  };
  auto inst = [](const Snapshot& s, int n, const std::string& run, const std::string& state, int exit_status = -1) {
    InstanceState i = Instance(s, "job", n, state);
    i.run = run;
    i.exit_status = exit_status;
    return i;
  };
  struct Case {
    std::string name;
    std::string run_keys;  // the service's run: settings
    std::function<void(Snapshot*)> setup;
    std::string changes;  // task changes "uuid:state"
    std::string steps;    // "create:RUN", "delete:INSTANCE"
    std::string verdict;
  };
  const std::vector<Case> cases = {
      {"queued: starts and creates its instances", "",
       [&](Snapshot* s) { s->tasks = {run_task("r1", "queued")}; }, "r1:active", "create:r1 create:r1", "progressing"},
      {"active, running: waits", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active")};
         s->tasks[0].created = 2;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "running")};
       },
       "", "", "progressing"},
      {"all exited 0: completed, removed", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active")};
         s->tasks[0].created = 2;
         s->instances = {inst(*s, 1, "r1", "stopped", 0), inst(*s, 2, "r1", "stopped", 0)};
       },
       "r1:completed", "delete:job-uuid-1 delete:job-uuid-2", "converged"},
      {"one exited 3: failed, kept for inspection (history.failed 1)", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active")};
         s->tasks[0].created = 2;
         s->instances = {inst(*s, 1, "r1", "stopped", 0), inst(*s, 2, "r1", "stopped", 3)};
       },
       "r1:failed", "", "degraded"},
      {"a created instance not listed yet: not ended", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active")};
         s->tasks[0].created = 2;
         s->instances = {inst(*s, 1, "r1", "stopped", 0)};
       },
       "", "", "progressing"},
      {"past run.deadline: failed, its instances removed", "    run: {deadline: 30s}\n",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active")};
         s->tasks[0].created = 2;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "stopped", 0)};
       },
       "r1:failed", "delete:job-uuid-1 delete:job-uuid-2", "degraded"},
      {"forbid: a user's run waits for the active one", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active"), run_task("r2", "queued")};
         s->tasks[0].created = 2;
         s->tasks[1].created_at = kT0;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "running")};
       },
       "", "", "progressing"},
      {"forbid: a scheduled run is skipped", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active"), run_task("r2", "queued", "auto")};
         s->tasks[0].created = 2;
         s->tasks[1].created_at = kT0;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "running")};
       },
       "r2:terminated", "", "progressing"},
      {"replace: the active run goes, the new one starts", "    run: {concurrency: replace}\n",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active"), run_task("r2", "queued")};
         s->tasks[0].created = 2;
         s->tasks[1].created_at = kT0;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "running")};
       },
       "r1:terminated r2:active", "create:r2 create:r2 delete:job-uuid-1 delete:job-uuid-2", "progressing"},
      {"allow: both run", "    run: {concurrency: allow}\n",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active"), run_task("r2", "queued")};
         s->tasks[0].created = 2;
         s->tasks[1].created_at = kT0;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "running")};
       },
       "r2:active", "create:r2 create:r2", "progressing"},
      {"frozen: a queued run waits", "",
       [&](Snapshot* s) {
         TaskRecord f = Task("f1", "freeze", "active", {"job"});
         s->tasks = {f, run_task("r1", "queued")};
       },
       "", "", "converged"},
      {"history: the older failed run's instances go", "",
       [&](Snapshot* s) {
         TaskRecord newer = run_task("r2", "failed"), older = run_task("r1", "failed");
         newer.finished_at = kT0 - absl::Minutes(1);
         older.finished_at = kT0 - absl::Minutes(5);
         newer.error = "1 of 2 did not exit 0";
         s->finished_runs = {newer, older};
         s->instances = {inst(*s, 1, "r1", "stopped", 3), inst(*s, 2, "r2", "stopped", 3)};
       },
       "", "delete:job-uuid-1", "degraded"},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf(base + c.run_keys));
    c.setup(&s);
    Decision d = Decide(s, kT0);
    std::vector<std::string> changes, steps;
    for (const TaskChange& t : d.task_changes) changes.push_back(t.task + ":" + t.state);
    for (const Step& st : d.steps) {
      steps.push_back(st.action.kind == ActionKind::kCreate ? "create:" + st.task : "delete:" + st.action.instance);
      if (st.action.kind == ActionKind::kCreate) {
        EXPECT_EQ(st.action.run, st.task) << c.name;
      }
    }
    std::sort(steps.begin(), steps.end());
    EXPECT_EQ(absl::StrJoin(changes, " "), c.changes) << c.name;
    EXPECT_EQ(absl::StrJoin(steps, " "), c.steps) << c.name;
    EXPECT_EQ(VerdictName(d.verdicts.at("job").state), c.verdict) << c.name << ": " << d.verdicts.at("job").reason;
    for (const TaskChange& t : d.task_changes) {
      if (t.state == "failed" || t.state == "completed" || t.state == "terminated") {
        EXPECT_FALSE(t.note.empty()) << c.name << ": the outcome is recorded";
      }
    }
  }
}

// A schedule (decide_runs.cc Schedule): a fire time not acted on adds a
// run; one acted on (a run created since) does not; one later than
// run.starting_deadline is recorded missed; a freeze holds it; a schedule
// does not run for times before it was applied.
TEST(DecideTest, SchedulesAddRunsWhenDue) {
  const std::string text = "project: p\nservices:\n  tick:\n    service_type: scheduled\n    schedule: \"*/5 * * * *\"\n"
                           "    image: job@1\nRUNKEYS";
  // kT0 is 08:00:00 UTC; the schedule fired at 08:00, 07:55, …
  auto snapshot = [&](const std::string& run_keys, absl::Time applied) {
    auto g = std::make_shared<ProjectGoal>(*GoalOf(absl::StrReplaceAll(text, {{"RUNKEYS", run_keys}})));
    g->created_at = applied;
    return SnapshotOf(g);
  };
  absl::Time now = kT0 + absl::Minutes(2);
  Snapshot s = snapshot("", kT0 - absl::Hours(1));
  Decision d = Decide(s, now);
  ASSERT_EQ(d.new_tasks.size(), 1u);
  EXPECT_EQ(d.new_tasks[0].kind, "run");
  EXPECT_EQ(d.new_tasks[0].origin, "auto");
  EXPECT_EQ(d.new_tasks[0].trigger, "schedule");
  EXPECT_EQ(d.new_tasks[0].reason, "scheduled for 2027-01-15T08:00:00Z");
  ASSERT_TRUE(d.runs.at("tick").next.has_value());
  EXPECT_EQ(*d.runs.at("tick").next, kT0 + absl::Minutes(5));
  // Acted on: a run made after it.
  TaskRecord made = Task("r1", "run", "completed", {"tick"});
  made.origin = "auto";
  made.created_at = kT0 + absl::Seconds(3);
  s.finished_runs = {made};
  EXPECT_TRUE(Decide(s, now).new_tasks.empty());
  // Applied after the last fire time: nothing until the next.
  EXPECT_TRUE(Decide(snapshot("", kT0 + absl::Minutes(1)), now).new_tasks.empty());
  // Later than run.starting_deadline: recorded, as missed.
  d = Decide(snapshot("    run: {starting_deadline: 1m}\n", kT0 - absl::Hours(1)), now);
  ASSERT_EQ(d.new_tasks.size(), 1u);
  EXPECT_EQ(d.new_tasks[0].trigger, "missed");
  EXPECT_EQ(d.new_tasks[0].reason, "scheduled for 2027-01-15T08:00:00Z, 2m late");
  // A missed run is terminated when it comes up, with why.
  Snapshot m = snapshot("    run: {starting_deadline: 1m}\n", kT0 - absl::Hours(1));
  TaskRecord missed = Task("r2", "run", "queued", {"tick"});
  missed.origin = "auto";
  missed.trigger = "missed";
  missed.reason = "scheduled for 2027-01-15T08:00:00Z, 2m late";
  missed.created_at = now;
  m.tasks = {missed};
  d = Decide(m, now);
  ASSERT_EQ(d.task_changes.size(), 1u);
  EXPECT_EQ(d.task_changes[0].state, "terminated");
  EXPECT_EQ(d.task_changes[0].note, "missed: scheduled for 2027-01-15T08:00:00Z, 2m late (run.starting_deadline 1m)");
  // Frozen: held, said.
  Snapshot f = snapshot("", kT0 - absl::Hours(1));
  f.tasks = {Task("f1", "freeze", "active", {"tick"})};
  d = Decide(f, now);
  EXPECT_TRUE(d.new_tasks.empty());
  EXPECT_NE(d.runs.at("tick").held.find("waits: frozen since"), std::string::npos) << d.runs.at("tick").held;
  // A scheduled service keeps its project out of Quiet (its syncs fire it).
  EXPECT_FALSE(Quiet(s, Decide(s, now)));
}

// A project being deleted deletes its rules, and goes only when none is
// left.
TEST(DecideTest, ADeletedProjectDeletesItsFirewallRulesFirst) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 0}\n"));
  s.project.deleting = true;
  s.fwapi = true;
  s.firewall = std::vector<OwnedRule>{{"u1", "w", "h", "FROM any TO any ALLOW tcp PORT 1", true}};
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.firewall_changes.size(), 1u);
  EXPECT_EQ(d.firewall_changes[0].kind, FirewallChange::Kind::kDelete);
  EXPECT_FALSE(d.delete_project);
  s.firewall = std::vector<OwnedRule>{};
  EXPECT_TRUE(Decide(s, kT0).delete_project);
  s.firewall.reset();  // FWAPI could not be read: not yet
  EXPECT_FALSE(Decide(s, kT0).delete_project);
}

// Quiet: what may wait for a wake-up instead of a resync, as a table.
TEST(QuietTest, OnlyAConvergedProjectWithNothingGoingOn) {
  struct Case {
    std::string name;
    std::function<void(Snapshot*)> change;
    bool quiet;
  };
  const std::vector<Case> cases = {
      {"converged, nothing open", [](Snapshot*) {}, true},
      {"a freeze is open", [](Snapshot* s) { s->tasks = {Task("f1", "freeze", "active")}; }, true},
      {"a job in flight", [](Snapshot* s) { s->in_flight = {JobOf("j1", "create", "web")}; }, false},
      {"a task open", [](Snapshot* s) { s->tasks = {Task("t1", "reprovision", "queued")}; }, false},
      {"one instance short", [](Snapshot* s) { s->instances.pop_back(); }, false},
      {"an instance starting", [](Snapshot* s) { s->instances[0].created = kT0 - absl::Seconds(1); }, false},
      {"actual state unknown", [](Snapshot* s) { s->actual_known = false; }, false},
      {"being deleted", [](Snapshot* s) { s->project.deleting = true; }, false},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
    s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
    c.change(&s);
    EXPECT_EQ(Quiet(s, Decide(s, kT0)), c.quiet) << c.name;
  }
  // Firewall rules live in FWAPI, which has no feed: read at each resync,
  // never quiet (a rule edited by hand is found within one).
  Snapshot fw = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 0}\n"
                                  "firewall:\n  in: {from: any, to: web, ports: 80}\n"));
  Decision fd = Decide(fw, kT0);
  fd.converged = true;
  fd.problems.clear();
  fd.events.clear();
  EXPECT_FALSE(Quiet(fw, fd));
  // Agents read CNAPI, core zones the admin's VMs: never quiet.
  Snapshot agents = SnapshotOf(GoalOf("project: p\nservices:\n  a: {image: cn-agent@2, compute_type: agent}\n"));
  Decision d = Decide(agents, kT0);
  d.converged = true;
  EXPECT_FALSE(Quiet(agents, d));
}

TEST(HealthSpecForTest, InstancesKeepTheChecksOfTheirVersion) {
  const char* kText =
      "project: p\nservices:\n  web:\n    image: web@1\n    count: 2\n    healthchecks:\n"
      "      h: {type: tcp, port: PORT}\n";
  auto v1 = GoalOf(absl::StrReplaceAll(kText, {{"PORT", "80"}}), 1);
  auto v2 = GoalOf(absl::StrReplaceAll(kText, {{"PORT", "8080"}}), 2);
  std::map<std::string, std::shared_ptr<const ProjectGoal>> older = {{"v1", v1}};
  const ServiceSpec* old_spec = HealthSpecFor(*v2, older, "web", "v1");
  const ServiceSpec* new_spec = HealthSpecFor(*v2, older, "web", "v2");
  ASSERT_NE(old_spec, nullptr);
  ASSERT_NE(new_spec, nullptr);
  EXPECT_EQ(old_spec->healthchecks.at("h").port, 80);
  EXPECT_EQ(new_spec->healthchecks.at("h").port, 8080);
  EXPECT_FALSE(SameChecks(old_spec->healthchecks, new_spec->healthchecks));
  EXPECT_TRUE(SameChecks(old_spec->healthchecks, v1->services.at("web").spec.healthchecks));
  // Its version unknown (deleted, unreadable): the goal's checks.
  EXPECT_EQ(HealthSpecFor(*v2, {}, "web", "v0")->healthchecks.at("h").port, 8080);
  EXPECT_EQ(HealthSpecFor(*v2, {{"v0", nullptr}}, "web", "v0")->healthchecks.at("h").port, 8080);
  // A service the goal no longer has: none.
  EXPECT_EQ(HealthSpecFor(*v2, older, "gone", "v1"), nullptr);
}

// An instance with stale checks is outdated: a rollout replaces it, and the
// service is not converged meanwhile.
TEST(HealthSpecForTest, StaleChecksAreOutdated) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
  ASSERT_TRUE(Decide(s, kT0).converged);
  s.instances[1].stale_checks = true;
  Decision d = Decide(s, kT0);
  EXPECT_FALSE(d.converged);
  EXPECT_EQ(d.verdicts.at("web").old_spec, 1);
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// Issue 48, 5: a failing change to FWAPI, NAPI or VOLAPI is tried again
// after a backoff (5 s, doubling, at most 5 minutes), not at every sync;
// within it the change stays in the decision (a deletion waits for it) but
// is held, not sent. A held VLAN holds its networks.
TEST(ChangeBackoffTest, FailedChangesWaitTheirTurn) {
  EXPECT_EQ(ChangeBackoff(1), absl::Seconds(5));
  EXPECT_EQ(ChangeBackoff(2), absl::Seconds(10));
  EXPECT_EQ(ChangeBackoff(4), absl::Seconds(40));
  EXPECT_EQ(ChangeBackoff(7), absl::Minutes(5));
  EXPECT_EQ(ChangeBackoff(1000), absl::Minutes(5));
  auto goal = GoalOf("project: p\nservices:\n  web: {image: web@1, count: 1}\n"
                     "firewall:\n  in: {from: any, to: web, ports: 80}\n");
  Snapshot s = SnapshotOf(goal);
  s.fwapi = true;
  s.firewall_owner = "owner-uuid";
  s.firewall = std::vector<OwnedRule>{};
  s.firewall_failures["in"] = "FWAPI CreateRule: InvalidParameters";
  s.firewall_retry_at["in"] = kT0 + absl::Seconds(3);
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.firewall_changes.size(), 1u);
  EXPECT_TRUE(d.firewall_changes[0].held) << "within its backoff";
  d = Decide(s, kT0 + absl::Seconds(3));
  ASSERT_EQ(d.firewall_changes.size(), 1u);
  EXPECT_FALSE(d.firewall_changes[0].held) << "its time has come";
}

// A failed change to an owned object is named by what it left undone
// ("fabric network private is not created", not "is not to create").
TEST(NotDoneTest, NamesWhatWasLeftUndone) {
  const std::vector<std::pair<std::string, std::string>> table = {
      {"to create", "is not created"},
      {"to update", "is not updated"},
      {"to delete", "is not deleted"},
      {"cannot change in place", "is not in place (cannot change in place)"},
      {"deleting", "is not in place (deleting)"},
  };
  for (const auto& [state, said] : table) EXPECT_EQ(NotDone(state), said) << state;
}

}  // namespace
}  // namespace mariposa::convergence
