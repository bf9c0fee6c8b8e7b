// Project leases: tables for each rule, then a simulation of nodes that
// join, die and pause against one store of leases written with conditional
// writes (as the database will), checking after every second that each
// project has one holder, epochs only grow, and a dead node's projects are
// taken within the lease's life plus two seconds.
#include "convergence/leases.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1800000000);

TEST(LeasesTest, LiveNodesAndOwners) {
  LeasePolicy p;
  std::vector<NodeBeat> beats = {{"b", kT0 - absl::Seconds(3)}, {"a", kT0}, {"c", kT0 - absl::Seconds(10)}};
  EXPECT_EQ(LiveNodes(beats, kT0, p), (std::vector<std::string>{"a", "b"}));  // c: exactly node_ttl old
  EXPECT_EQ(OwnerOf("web", {}), "");
  std::string o = OwnerOf("web", {"a", "b", "c"});
  EXPECT_EQ(OwnerOf("web", {"c", "b", "a"}), o);  // order does not matter
  // Removing a node that does not own the project does not move it.
  std::vector<std::string> others;
  for (const char* n : {"a", "b", "c"}) {
    if (n != o) others.push_back(n);
  }
  std::vector<std::string> without_one = {o, others[0]};
  EXPECT_EQ(OwnerOf("web", without_one), o);
}

TEST(LeasesTest, PlanRules) {
  LeasePolicy p;
  std::vector<NodeBeat> beats = {{"a", kT0}, {"b", kT0}};
  // Find a project each node owns.
  std::string pa, pb;
  for (int i = 0; pa.empty() || pb.empty(); ++i) {
    std::string proj = absl::StrCat("p", i);
    (OwnerOf(proj, {"a", "b"}) == "a" ? pa : pb) = proj;
  }
  // Free: the owner takes it with the next epoch; the other node does not.
  auto acts = PlanLeases("a", beats, {pa, pb}, {}, kT0, p);
  ASSERT_EQ(acts.size(), 1u);
  EXPECT_EQ(acts[0].kind, LeaseAction::kAcquire);
  EXPECT_EQ(acts[0].project, pa);
  EXPECT_EQ(acts[0].expected_epoch, 0);
  EXPECT_EQ(acts[0].epoch, 1);
  EXPECT_EQ(acts[0].expires, kT0 + p.ttl);
  // Held by b, valid: a leaves it alone even though a owns it.
  std::map<std::string, Lease> leases = {{pa, {pa, "b", 7, kT0 + absl::Seconds(3)}}};
  EXPECT_TRUE(PlanLeases("a", beats, {pa}, leases, kT0, p).empty());
  // Expired: taken with epoch 8.
  acts = PlanLeases("a", beats, {pa}, leases, kT0 + absl::Seconds(3), p);
  ASSERT_EQ(acts.size(), 1u);
  EXPECT_EQ(acts[0].epoch, 8);
  // Held by a, owner, far from expiry: nothing; near expiry: renewed, same epoch.
  leases = {{pa, {pa, "a", 8, kT0 + absl::Seconds(9)}}};
  EXPECT_TRUE(PlanLeases("a", beats, {pa}, leases, kT0, p).empty());
  acts = PlanLeases("a", beats, {pa}, leases, kT0 + absl::Seconds(5), p);
  ASSERT_EQ(acts.size(), 1u);
  EXPECT_EQ(acts[0].kind, LeaseAction::kRenew);
  EXPECT_EQ(acts[0].epoch, 8);
  EXPECT_EQ(acts[0].expires, kT0 + absl::Seconds(15));
  // Held by a but b ranks above it: a hands it back.
  leases = {{pb, {pb, "a", 3, kT0 + absl::Seconds(9)}}};
  acts = PlanLeases("a", beats, {pb}, leases, kT0, p);
  ASSERT_EQ(acts.size(), 1u);
  EXPECT_EQ(acts[0].kind, LeaseAction::kRelease);
  // A node that cannot see its own heartbeat takes nothing and lets go.
  std::vector<NodeBeat> stale = {{"a", kT0 - absl::Seconds(20)}, {"b", kT0}};
  leases = {{pa, {pa, "a", 3, kT0 + absl::Seconds(9)}}};
  acts = PlanLeases("a", stale, {pa, "other"}, leases, kT0, p);
  ASSERT_EQ(acts.size(), 1u);
  EXPECT_EQ(acts[0].kind, LeaseAction::kRelease);
}

TEST(LeasesTest, Fencing) {
  LeasePolicy p;
  Lease l{"web", "a", 4, kT0 + absl::Seconds(10)};
  EXPECT_TRUE(MayAct(l, "a", 4, kT0, p));
  EXPECT_FALSE(MayAct(l, "a", 3, kT0, p));  // the epoch moved on
  EXPECT_FALSE(MayAct(l, "b", 4, kT0, p));
  EXPECT_FALSE(MayAct(l, "a", 4, kT0 + absl::Seconds(8), p));  // within the safety margin
}

// The leases table, written only by conditional writes.
struct Store {
  std::map<std::string, Lease> leases;
  bool Write(const std::string& self, const LeaseAction& a, absl::Time now) {
    Lease& l = leases[a.project];
    l.project = a.project;
    if (l.epoch != a.expected_epoch) return false;
    switch (a.kind) {
      case LeaseAction::kAcquire:
        if (!l.holder.empty() && now < l.expires) return false;
        l = {a.project, self, a.epoch, a.expires};
        return true;
      case LeaseAction::kRenew:
        if (l.holder != self) return false;
        l.expires = a.expires;
        return true;
      case LeaseAction::kRelease:
        if (l.holder != self) return false;
        l.holder.clear();
        return true;
    }
    return false;
  }
};

TEST(LeasesTest, NodesJoinDieAndPauseWithoutTwoHoldersOrAGap) {
  LeasePolicy p;
  std::vector<std::string> projects;
  for (int i = 0; i < 200; ++i) projects.push_back(absl::StrCat("project-", i));
  struct Node {
    std::string id;
    bool alive = true;
    absl::Time paused_until = absl::InfinitePast();
    absl::Time beat;
    std::map<std::string, int64_t> believed;  // project -> epoch it acquired
  };
  std::vector<Node> nodes = {{"n1"}, {"n2"}, {"n3"}};
  Store store;
  std::map<std::string, int64_t> last_epoch;
  std::map<std::string, int64_t> held_before_pause;
  int moved_on_join = 0, fenced = 0;
  for (int sec = 0; sec < 140; ++sec) {
    absl::Time now = kT0 + absl::Seconds(sec);
    if (sec == 30) nodes.push_back({"n4"});  // joins
    if (sec == 60) nodes[1].alive = false;   // n2 dies
    if (sec == 80) {                         // n1 is stopped (SIGSTOP) for 20 s
      nodes[0].paused_until = now + absl::Seconds(20);
      held_before_pause = nodes[0].believed;
    }
    if (sec == 100) {
      // n1 wakes with what it believed at 80: every lease it had was taken
      // meanwhile, so fencing refuses each of its writes.
      for (const auto& [proj, epoch] : held_before_pause) {
        EXPECT_FALSE(MayAct(store.leases[proj], "n1", epoch, now, p)) << proj;
        ++fenced;
      }
    }
    for (Node& n : nodes) {
      if (n.alive && now >= n.paused_until) n.beat = now;
    }
    std::vector<NodeBeat> beats;
    for (const Node& n : nodes) {
      if (n.beat != absl::Time()) beats.push_back({n.id, n.beat});
    }
    std::map<std::string, std::string> holder_before;
    for (const auto& kv : store.leases) holder_before[kv.first] = kv.second.holder;
    for (Node& n : nodes) {
      if (!n.alive || now < n.paused_until) continue;
      for (const LeaseAction& a : PlanLeases(n.id, beats, projects, store.leases, now, p)) {
        if (store.Write(n.id, a, now) && a.kind == LeaseAction::kAcquire) n.believed[a.project] = a.epoch;
        if (a.kind == LeaseAction::kRelease) n.believed.erase(a.project);
      }
    }
    std::vector<std::string> live = LiveNodes(beats, now, p);
    bool settled = (sec >= 12 && sec < 30) || (sec >= 42 && sec < 60) || (sec >= 60 + 10 + 10 + 2 && sec < 80) ||
                   sec >= 112;
    for (const std::string& proj : projects) {
      const Lease& l = store.leases[proj];
      ASSERT_GE(l.epoch, last_epoch[proj]) << proj;
      last_epoch[proj] = l.epoch;
      if (sec >= 30 && sec < 42 && holder_before[proj] != l.holder && l.holder == "n4") ++moved_on_join;
      if (!settled) continue;
      // Settled: held, unexpired, by the live node that owns it.
      ASSERT_FALSE(l.holder.empty()) << proj << " has no holder at " << sec;
      ASSERT_LT(now, l.expires) << proj << " lease lapsed at " << sec;
      ASSERT_EQ(l.holder, OwnerOf(proj, live)) << proj << " at " << sec;
      if (sec >= 60) {
        ASSERT_NE(l.holder, "n2") << proj << ": the dead node, at " << sec;
      }
    }
  }
  EXPECT_GT(fenced, 0);
  // A fourth node takes about a quarter of the projects, and only those.
  EXPECT_GT(moved_on_join, 25);
  EXPECT_LT(moved_on_join, 90);
}

}  // namespace
}  // namespace mariposa::convergence
