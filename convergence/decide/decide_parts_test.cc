// The per-service parts of Decide, each a pure function of the project's
// facts, as tables: one row a situation, the value it must return.
#include <set>
#include <string>
#include <vector>

#include "convergence/decide/decide_testing.h"
#include "convergence/decide/decider.h"
#include "convergence/decide/facts.h"
#include "gtest/gtest.h"

namespace mariposa::convergence::decide_internal {
namespace {

using testing::GoalOf;
using testing::Instance;
using testing::JobOf;
using testing::kT0;
using testing::SnapshotOf;

const char kWeb[] = "project: p\nservices:\n  web: {image: web@1, count: 1, cns: [web]}\n";

// DecideRetags on one instance of web.
TEST(DecidePartsTest, RetagsOfOneService) {
  struct Row {
    const char* name;
    std::string state = "running";
    std::string cns;            // its CNS tag; "=" as the manifest says
    std::string hand_changed;   // what was changed by hand in VMAPI
    int put_backs = 0;          // earlier put-backs of it remembered
    bool job = false;           // a job in flight on it
    bool acted = false;         // another action planned for it
    bool outdated = false;      // of an older spec (the rollout replaces it)
    // Wanted:
    std::string retag;          // the retag's reason, "" for none
    bool problem = false;       // instance-drift
    bool forget = false;        // its put-backs forgotten
  };
  const std::vector<Row> rows = {
      {.name = "as made", .cns = "=", .forget = true},
      {.name = "cns names differ", .cns = "other", .retag = "cns-names"},
      {.name = "stopped, names differ", .state = "stopped", .cns = "", .retag = "cns-names"},
      {.name = "provisioning: left alone", .state = "provisioning", .cns = ""},
      {.name = "a job on it", .cns = "", .job = true},
      {.name = "another action for it", .cns = "", .acted = true},
      {.name = "older spec: the rollout's", .cns = "", .outdated = true},
      {.name = "changed by hand", .cns = "=", .hand_changed = "package", .retag = "package"},
      {.name = "changed by hand, put back twice", .cns = "=", .hand_changed = "tags+metadata", .put_backs = 2,
       .retag = "tags+metadata"},
      {.name = "changed by hand again after 3 put-backs", .cns = "=", .hand_changed = "package", .put_backs = 3,
       .problem = true},
      {.name = "put back and now as made: forgotten", .cns = "=", .put_backs = 1, .forget = true},
      {.name = "put back, its job still in flight: remembered", .cns = "=", .put_backs = 1, .job = true},
  };
  for (const Row& r : rows) {
    Snapshot s = SnapshotOf(GoalOf(kWeb));
    InstanceState i = Instance(s, "web", 1, r.state);
    if (r.cns != "=") i.cns = r.cns;
    i.hand_changed = r.hand_changed;
    if (r.outdated) i.spec_hash = "older";
    s.instances = {i};
    if (r.job) s.in_flight = {JobOf("j1", "update", "web", i.uuid)};
    ProjectFacts f(s, kT0);
    GatherInstances(&f);
    std::map<std::string, int> put_backs;
    if (r.put_backs > 0) put_backs[i.uuid] = r.put_backs;
    std::set<std::string> acted;
    if (r.acted) acted.insert(i.uuid);
    InPlaceSettings want = InPlaceFor(s, true, "web");
    RetagOutcome o = DecideRetags(f, "web", want, acted, put_backs);
    std::string got = o.actions.empty() ? "" : o.actions[0].reason;
    EXPECT_EQ(got, r.retag) << r.name;
    EXPECT_LE(o.actions.size(), 1u) << r.name;
    if (!o.actions.empty()) {
      EXPECT_EQ(o.actions[0].kind, ActionKind::kRetag) << r.name;
      EXPECT_EQ(o.actions[0].instance, i.uuid) << r.name;
    }
    EXPECT_EQ(o.problems.size(), r.problem ? 1u : 0u) << r.name;
    if (r.problem) {
      EXPECT_EQ(o.problems[0].kind, "instance-drift") << r.name;
      EXPECT_NE(o.problems[0].error.find("package"), std::string::npos) << r.name;
      EXPECT_NE(o.problems[0].fix.find("reprovision --service web"), std::string::npos) << r.name;
    }
    bool forgot = !o.forget.empty();
    EXPECT_EQ(forgot, r.forget && r.put_backs > 0) << r.name;
  }
}

// PlanServices: what each service's instances need, but nothing for an
// instance with a job in flight.
TEST(DecidePartsTest, PlanOfEachService) {
  struct Row {
    const char* name;
    int count;
    std::vector<std::string> states;  // web's instances
    int job_on = -1;                  // index of the instance with a job in flight
    std::string job = "";             // its kind
    std::multiset<std::string> want;  // "kind reason"
    std::string removed = "";         // the uuid a removal names, when one is wanted
  };
  const std::vector<Row> rows = {
      {"at its count", 2, {"running", "running"}, -1, "", {}},
      {"one short", 2, {"running"}, -1, "", {"create scale-up"}},
      {"one over", 1, {"running", "running"}, -1, "", {"delete scale-down"}},
      {"one over, one being deleted already", 1, {"running", "running"}, 1, "delete", {}},
      {"one over, the other being stopped: the other is not chosen", 1, {"running", "running"}, 1, "stop",
       {"delete scale-down"}, "web-uuid-1"},
      {"one over, a job on the one it would remove: nothing until the job ends", 1, {"running", "running"}, 0, "stop",
       {}},
      {"one failed", 1, {"failed"}, -1, "", {"create replace-broken", "delete remove-broken"}},
  };
  for (const Row& r : rows) {
    Snapshot s = SnapshotOf(GoalOf(absl::StrCat("project: p\nservices:\n  web: {image: web@1, count: ", r.count, "}\n")));
    for (size_t k = 0; k < r.states.size(); ++k) s.instances.push_back(Instance(s, "web", static_cast<int>(k) + 1, r.states[k]));
    if (r.job_on >= 0) s.in_flight = {JobOf("j1", r.job, "web", s.instances[r.job_on].uuid)};
    ProjectFacts f(s, kT0);
    GatherInstances(&f);
    std::multiset<std::string> got;
    for (const Action& a : PlanServices(f, nullptr)) {
      got.insert(absl::StrCat(ActionKindName(a.kind), " ", a.reason));
      if (!r.removed.empty() && Removes(a.kind)) {
        EXPECT_EQ(a.instance, r.removed) << r.name;
      }
    }
    EXPECT_EQ(got, r.want) << r.name;
    // The plan cache gives the same plan.
    PlanCache cache;
    std::multiset<std::string> cached;
    for (const Action& a : PlanServices(f, &cache)) cached.insert(absl::StrCat(ActionKindName(a.kind), " ", a.reason));
    EXPECT_EQ(cached, r.want) << r.name;
  }
}

// A new instance is made out of discovery unless it is ready the moment it
// runs (no start.window and no readiness checks that run): CNS serves only
// running instances, and a hold costs a job per instance (a mass scale's
// creates at half speed).
TEST(DecideDiscoveryTest, ANewInstanceIsMadeOutUnlessReadyOnceRunning) {
  struct Row {
    const char* name;
    std::string web;  // web's extra lines
    bool checks_run;
    bool deleting;
    bool out;
  };
  const std::string http = "    healthchecks:\n      http: {type: http, port: 80";
  const std::string now = "    start: {window: 0s}\n";
  const std::vector<Row> rows = {
      {"no checks, the default start.window", "", true, false, true},
      {"no checks, start.window 5s", "    start: {window: 5s}\n", false, false, true},
      {"no checks, start.window 0s", now, true, false, false},
      {"a check for both, window 0s", now + http + "}\n", true, false, true},
      {"a readiness check, window 0s", now + http + ", liveness: false}\n", true, false, true},
      {"a liveness check only, window 0s", now + http + ", readiness: false}\n", true, false, false},
      {"checks, no health monitor, window 0s", now + http + "}\n", false, false, false},
      {"checks, no CNS names", "    cns: false\n" + http + "}\n", true, false, false},
      {"checks, the project being deleted", http + "}\n", true, true, false},
  };
  for (const Row& r : rows) {
    Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web:\n    image: web@1\n    count: 1\n" + r.web));
    s.project.deleting = r.deleting;
    EXPECT_EQ(MadeOutOfDiscovery(s, "web", r.checks_run), r.out) << r.name;
    EXPECT_FALSE(MadeOutOfDiscovery(s, "nope", r.checks_run)) << r.name << ": a service the goal does not have";
  }
}

}  // namespace
}  // namespace mariposa::convergence::decide_internal
