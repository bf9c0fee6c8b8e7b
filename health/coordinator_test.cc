// Sharding of checks over health agents with a simulated clock: every check
// has exactly one agent, an agent's loss moves only its checks (within the
// lease), a reconnect gets them back, reports from non-owners are ignored.
#include "health/coordinator.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace mariposa::health {
namespace {

Target T(int instance, const std::string& check = "http", const std::string& network = "net-a") {
  Target t;
  t.instance = absl::StrCat("i-", instance);
  t.check = check;
  t.network = network;
  t.spec.address = "10.0.0.1";
  t.policy.interval = absl::Seconds(1);
  return t;
}

std::vector<Target> Many(int n) {
  std::vector<Target> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(T(i, "http"));
    out.push_back(T(i, "tcp"));
  }
  return out;
}

// What each agent holds, as it would after applying every assignment.
class Agents {
 public:
  explicit Agents(Coordinator* c) : c_(c) {}
  void Connect(const std::string& id, std::vector<std::string> networks = {}) {
    sessions_[id] = c_->Connect({id, std::move(networks), "", ""});
    held_[id].clear();
  }
  // Applies pending assignments; returns how many keys each one added.
  std::map<std::string, int> Pump() {
    std::map<std::string, int> added;
    for (auto& [id, session] : sessions_) {
      auto a = c_->TakeAssignment(id, session, absl::ZeroDuration());
      if (!a) continue;
      if (a->reset) held_[id].clear();
      for (const auto& [g, t] : a->add) held_[id].insert(TargetKey(t));
      for (const auto& [g, key] : a->remove) held_[id].erase(key);
      added[id] += static_cast<int>(a->add.size());
      removed_[id] += static_cast<int>(a->remove.size());
    }
    return added;
  }
  void Forget(const std::string& id) {
    sessions_.erase(id);
    held_.erase(id);
  }
  const std::set<std::string>& held(const std::string& id) { return held_[id]; }
  std::map<std::string, std::set<std::string>>& all() { return held_; }
  uint64_t session(const std::string& id) { return sessions_[id]; }
  int removed(const std::string& id) { return removed_[id]; }

 private:
  Coordinator* c_;
  std::map<std::string, uint64_t> sessions_;
  std::map<std::string, std::set<std::string>> held_;
  std::map<std::string, int> removed_;
};

// Every key held by exactly one agent; returns the owner of each.
std::map<std::string, std::string> Partition(Agents& agents, size_t expected) {
  std::map<std::string, std::string> owner;
  for (const auto& [id, keys] : agents.all()) {
    for (const std::string& k : keys) {
      EXPECT_TRUE(owner.emplace(k, id).second) << k << " is checked by " << owner[k] << " and " << id;
    }
  }
  EXPECT_EQ(owner.size(), expected);
  return owner;
}

TEST(CoordinatorTest, ThreeAgentsOneLostItsChecksMoveWithinTheLeaseAndOnlyThose) {
  SimulatedClock clock;
  Coordinator c(&clock, absl::Seconds(10), nullptr);
  c.Assign("p", Many(300));
  Agents agents(&c);
  for (const char* id : {"a1", "a2", "a3"}) agents.Connect(id);
  agents.Pump();
  auto before = Partition(agents, 600);
  // Balanced, and both checks of an instance on one agent.
  for (const char* id : {"a1", "a2", "a3"}) {
    EXPECT_GT(agents.held(id).size(), 120u) << id;
    EXPECT_LT(agents.held(id).size(), 280u) << id;
  }
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(before[absl::StrCat("i-", i, "/http")], before[absl::StrCat("i-", i, "/tcp")]);
  }
  // Steady state: nothing more to send.
  for (auto& [id, n] : agents.Pump()) EXPECT_EQ(n, 0) << id;

  // a3 goes silent; the others keep touching. Nothing moves inside the lease.
  std::set<std::string> lost = agents.held("a3");
  clock.Advance(absl::Seconds(9));
  c.Touch("a1", agents.session("a1"));
  c.Touch("a2", agents.session("a2"));
  EXPECT_TRUE(c.ExpireAgents().empty());
  clock.Advance(absl::Seconds(2));
  EXPECT_EQ(c.ExpireAgents(), std::vector<std::string>{"a3"});
  EXPECT_FALSE(c.TakeAssignment("a3", agents.session("a3"), absl::ZeroDuration()).has_value());
  agents.Forget("a3");
  auto added = agents.Pump();
  EXPECT_EQ(static_cast<size_t>(added["a1"] + added["a2"]), lost.size());
  EXPECT_EQ(agents.removed("a1") + agents.removed("a2"), 0);  // nothing else moved
  auto after = Partition(agents, 600);
  for (const auto& [key, id] : before) {
    if (id != "a3") {
      EXPECT_EQ(after[key], id) << key;
    }
  }

  // a3 comes back with the same id: it gets exactly its share back.
  agents.Connect("a3");
  agents.Pump();
  EXPECT_EQ(agents.held("a3"), lost);
  EXPECT_EQ(Partition(agents, 600), before);
}

TEST(CoordinatorTest, ReportsFromTheOwnerCountOthersAreIgnoredAndMovesKeepTheState) {
  SimulatedClock clock;
  std::vector<HealthChange> seen;
  Coordinator c(&clock, absl::Seconds(10), [&](const std::vector<HealthChange>& chs) {
    seen.insert(seen.end(), chs.begin(), chs.end());
  });
  c.Assign("p", {T(1)});
  Agents agents(&c);
  agents.Connect("a1");
  agents.Connect("a2");
  agents.Pump();
  std::string owner = agents.held("a1").empty() ? "a2" : "a1";
  std::string other = owner == "a1" ? "a2" : "a1";
  EXPECT_EQ(c.InstanceHealth("i-1"), Health::kUnknown);

  c.Report(other, agents.session(other), {{"p", "i-1", "http", Health::kUnknown, Health::kUnhealthy, false, "x"}});
  EXPECT_EQ(c.InstanceHealth("i-1"), Health::kUnknown);
  EXPECT_EQ(c.ignored_reports(), 1);
  EXPECT_TRUE(seen.empty());

  c.Report(owner, agents.session(owner), {{"p", "i-1", "http", Health::kUnknown, Health::kHealthy, false, ""}});
  EXPECT_EQ(c.InstanceHealth("i-1"), Health::kHealthy);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].from, Health::kUnknown);
  EXPECT_EQ(seen[0].to, Health::kHealthy);

  // The owner leaves: the other takes the check; the state stays healthy and
  // the new owner's first "unknown -> healthy" is no change.
  c.Disconnect(owner, agents.session(owner));
  agents.Forget(owner);
  agents.Pump();
  EXPECT_EQ(agents.held(other).size(), 1u);
  EXPECT_EQ(c.InstanceHealth("i-1"), Health::kHealthy);
  c.Report(other, agents.session(other), {{"p", "i-1", "http", Health::kUnknown, Health::kHealthy, false, ""}});
  EXPECT_EQ(seen.size(), 1u);
  auto checks = c.Checks("p");
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].agent, other);
  EXPECT_EQ(checks[0].state, Health::kHealthy);

  // A stale session of a replaced agent cannot report.
  uint64_t old = agents.session(other);
  agents.Connect(other);
  c.Report(other, old, {{"p", "i-1", "http", Health::kHealthy, Health::kUnhealthy, false, "stale"}});
  EXPECT_EQ(c.InstanceHealth("i-1"), Health::kHealthy);
  EXPECT_FALSE(c.Touch(other, old));
}

TEST(CoordinatorTest, AgentsTakeOnlyTheirNetworksAndUnreachableChecksAreUnowned) {
  SimulatedClock clock;
  Coordinator c(&clock, absl::Seconds(10), nullptr);
  std::vector<Target> ts;
  for (int i = 0; i < 20; ++i) ts.push_back(T(i, "http", i % 2 ? "net-a" : "net-b"));
  ts.push_back(T(99, "http", "net-c"));
  c.Assign("p", ts);
  Agents agents(&c);
  agents.Connect("only-a", {"net-a"});
  agents.Connect("only-b", {"net-b"});
  agents.Pump();
  EXPECT_EQ(agents.held("only-a").size(), 10u);
  EXPECT_EQ(agents.held("only-b").size(), 10u);
  for (const std::string& k : agents.held("only-a")) {
    int n = std::stoi(k.substr(2, k.find('/') - 2));
    EXPECT_EQ(n % 2, 1) << k;
  }
  EXPECT_EQ(c.unowned(), 1);
  for (const auto& s : c.Checks("p")) {
    if (s.instance == "i-99") {
      EXPECT_EQ(s.agent, "");
    }
  }
  // An agent that reaches everything takes the orphan (and its rendezvous share).
  agents.Connect("any");
  agents.Pump();
  EXPECT_EQ(c.unowned(), 0);
  EXPECT_EQ(agents.held("any").count("i-99/http"), 1u);
  Partition(agents, 21);
}

TEST(CoordinatorTest, AssignSendsOnlyWhatChangedToTheOwner) {
  SimulatedClock clock;
  Coordinator c(&clock, absl::Seconds(10), nullptr);
  c.Assign("p", Many(10));
  Agents agents(&c);
  agents.Connect("a1");
  agents.Pump();
  ASSERT_EQ(agents.held("a1").size(), 20u);
  c.Report("a1", agents.session("a1"), {{"p", "i-3", "http", Health::kUnknown, Health::kHealthy, false, ""}});
  c.Report("a1", agents.session("a1"), {{"p", "i-4", "http", Health::kUnknown, Health::kHealthy, false, ""}});
  // Same targets again: nothing to send, state kept.
  c.Assign("p", Many(10));
  EXPECT_EQ(agents.Pump()["a1"], 0);
  EXPECT_EQ(c.InstanceHealth("i-3"), Health::kUnknown);  // its tcp check is still unknown
  // i-9 gone, i-3's http check changed (port), i-10 new.
  std::vector<Target> next = Many(9);
  next.push_back(T(10));
  for (Target& t : next) {
    if (t.instance == "i-3" && t.check == "http") t.spec.port = 8080;
  }
  c.Assign("p", next);
  auto added = agents.Pump();
  EXPECT_EQ(added["a1"], 2);  // i-3/http changed, i-10/http new
  EXPECT_EQ(agents.removed("a1"), 2);  // both of i-9
  EXPECT_EQ(agents.held("a1").size(), 19u);
  auto checks = c.Checks("p");
  for (const auto& s : checks) {
    if (s.instance == "i-3" && s.check == "http") {  // starts over
      EXPECT_EQ(s.state, Health::kUnknown);
    }
    if (s.instance == "i-4" && s.check == "http") {  // kept
      EXPECT_EQ(s.state, Health::kHealthy);
    }
  }
  c.Assign("p", {});
  agents.Pump();
  EXPECT_TRUE(agents.held("a1").empty());
  EXPECT_TRUE(c.Checks("p").empty());
}

}  // namespace
// A check's purpose: the instance's readiness and liveness are the worst of
// the checks for each; a changed purpose alone keeps the check's state.
TEST(CoordinatorTest, ReadinessAndLivenessAreTheWorstOfTheirOwnChecks) {
  SimulatedClock clock;
  Coordinator c(&clock, absl::Seconds(10), [](const std::vector<HealthChange>&) {});
  Target ready = T(1, "ready");
  ready.liveness = false;
  Target alive = T(1, "alive");
  alive.readiness = false;
  c.Assign("p", {ready, alive});
  Agents agents(&c);
  agents.Connect("a1");
  agents.Pump();
  using Purpose = Coordinator::Purpose;
  c.Report("a1", agents.session("a1"),
           {{"p", "i-1", "ready", Health::kUnknown, Health::kUnhealthy, false, "503"},
            {"p", "i-1", "alive", Health::kUnknown, Health::kHealthy, false, ""}});
  EXPECT_EQ(c.InstanceHealth("i-1", Purpose::kReadiness), Health::kUnhealthy);
  EXPECT_EQ(c.InstanceHealth("i-1", Purpose::kLiveness), Health::kHealthy);
  EXPECT_EQ(c.InstanceHealth("i-1"), Health::kUnhealthy);  // every check
  EXPECT_EQ(c.InstanceHealth("i-2", Purpose::kReadiness), std::nullopt);
  // The readiness check becomes both: same check, same state, now liveness too.
  ready.liveness = true;
  c.Assign("p", {ready, alive});
  EXPECT_EQ(c.InstanceHealth("i-1", Purpose::kLiveness), Health::kUnhealthy);
  // No readiness check left: nothing to say for readiness.
  c.Assign("p", {alive});
  EXPECT_EQ(c.InstanceHealth("i-1", Purpose::kReadiness), std::nullopt);
}

}  // namespace mariposa::health
