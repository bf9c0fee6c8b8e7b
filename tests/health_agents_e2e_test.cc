// End to end with separate health agents: tritonsim --listen-vms, mariposad
// (no embedded agent, a 1 s lease) and mariposa-health processes.
//   - 3 agents share the checks, none checked twice; one killed: its checks
//     move to the others within the lease and a margin, nothing is replaced;
//     back with the same id, it gets its share back.
//   - An agent keeps checking while mariposad is down and reports when it is
//     back: an instance that failed meanwhile is replaced.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/health_fixture.h"

namespace mariposa::testing {
namespace {

using Clock = std::chrono::steady_clock;

class HealthAgentsTest : public HealthE2E {
 protected:
  void SetUp() override { Start("health-agents", {"--health-agents", "--health-lease", "1s"}); }
  std::unique_ptr<ServerProcess> StartAgent(const std::string& id) {
    auto a = std::make_unique<ServerProcess>(
        std::vector<std::string>{"health/mariposa-health", "--mariposad", daemon_->addr(), "--id", id, "--listen",
                                 "127.0.0.1:0", "--heartbeat", "200ms", "--metrics-listen", "127.0.0.1:0"},
        dir_ + "/" + id);
    EXPECT_TRUE(a->Start()) << a->log();
    return a;
  }
  // The checks an agent runs now: instance/check -> state.
  std::map<std::string, std::string> Running(const ServerProcess& agent) {
    json j = json::parse(M({"-o", "json", "health", "--agent", agent.addr()}).out, nullptr, false);
    std::map<std::string, std::string> out;
    if (!j.is_object()) return out;
    for (const auto& c : j["checks"]) {
      out[c["key"]["instance"].get<std::string>() + "/" + c["key"]["check"].get<std::string>()] = c["state"];
    }
    return out;
  }
  std::set<std::string> Held(const ServerProcess& agent) {
    std::set<std::string> out;
    for (const auto& kv : Running(agent)) out.insert(kv.first);
    return out;
  }
  std::string HeldState(const ServerProcess& agent, const std::string& instance) {
    auto running = Running(agent);
    auto it = running.find(instance + "/http");
    return it == running.end() ? "" : it->second;
  }
  void Apply(const std::string& project, int count) {
    WriteFile(dir_ + "/m.yaml", Manifest(project, count));
    auto r = M({"-j", project, "apply", "-f", dir_ + "/m.yaml", "--yes", "--wait", "--timeout", "60s"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
};

// Every key on exactly one agent.
bool IsPartition(const std::vector<std::set<std::string>>& held, size_t n) {
  std::set<std::string> all;
  size_t total = 0;
  for (const auto& h : held) {
    total += h.size();
    all.insert(h.begin(), h.end());
  }
  return total == n && all.size() == n;
}

TEST_F(HealthAgentsTest, ThreeAgentsShareTheChecksAndALostOnesMoveWithinTheLease) {
  std::vector<std::unique_ptr<ServerProcess>> agents;
  for (const char* id : {"agent-1", "agent-2", "agent-3"}) agents.push_back(StartAgent(id));
  Apply("ha", 30);
  ASSERT_TRUE(WaitFor([&] { return Healthy("ha") == 30; })) << daemon_->log();
  std::vector<std::set<std::string>> held;
  ASSERT_TRUE(WaitFor([&] {
    held = {Held(*agents[0]), Held(*agents[1]), Held(*agents[2])};
    return IsPartition(held, 30);
  }));
  int with_checks = 0;
  for (const auto& h : held) with_checks += h.empty() ? 0 : 1;
  EXPECT_GE(with_checks, 2);  // sharded, not all on one
  // mariposad's view: each check names its agent, three agents listed.
  json h = json::parse(M({"-o", "json", "-j", "ha", "health"}).out);
  EXPECT_EQ(h["agents"].size(), 3u);
  for (const auto& c : h["checks"]) EXPECT_NE(c["agent"], "");

  // Kill the busiest agent.
  size_t victim = 0;
  for (size_t i = 1; i < 3; ++i) {
    if (held[i].size() > held[victim].size()) victim = i;
  }
  std::set<std::string> lost = held[victim];
  std::vector<std::set<std::string>> survivors_before;
  for (size_t i = 0; i < 3; ++i) {
    if (i != victim) survivors_before.push_back(held[i]);
  }
  auto killed = Clock::now();
  agents[victim]->Kill();
  std::vector<std::set<std::string>> after;
  ASSERT_TRUE(WaitFor([&] {
    after.clear();
    for (size_t i = 0; i < 3; ++i) {
      if (i != victim) after.push_back(Held(*agents[i]));
    }
    return IsPartition(after, 30);
  }, 10));
  double moved_s = std::chrono::duration<double>(Clock::now() - killed).count();
  EXPECT_LT(moved_s, 1.0 + 2.0) << "lease 1 s + margin";
  // Only the lost checks moved: each survivor kept what it had.
  for (size_t k = 0; k < 2; ++k) {
    for (const std::string& key : survivors_before[k]) EXPECT_TRUE(after[k].count(key)) << key;
  }
  // Nothing was replaced for it.
  EXPECT_EQ(Healthy("ha"), 30);
  EXPECT_EQ(Vms("destroyed").size(), 0u);
  h = json::parse(M({"-o", "json", "-j", "ha", "health"}).out);
  EXPECT_EQ(h["agents"].size(), 2u);

  // Back with the same id: its share returns to it.
  std::string id = "agent-" + std::to_string(victim + 1);
  agents[victim] = StartAgent(id);
  ASSERT_TRUE(WaitFor([&] { return Held(*agents[victim]) == lost; }, 10));
  ASSERT_TRUE(WaitFor([&] {
    held = {Held(*agents[0]), Held(*agents[1]), Held(*agents[2])};
    return IsPartition(held, 30);
  }, 10));
  std::string events = M({"-j", "ha", "events"}).out;
  EXPECT_THAT(events, ::testing::Not(::testing::HasSubstr("-> unhealthy")));
}

TEST_F(HealthAgentsTest, AnAgentKeepsCheckingWhileMariposadIsDownAndReportsWhenBack) {
  auto agent = StartAgent("solo");
  Apply("hb", 3);
  ASSERT_TRUE(WaitFor([&] { return Healthy("hb") == 3; })) << daemon_->log();
  json vms = Vms("running");
  ASSERT_EQ(vms.size(), 3u);
  std::string victim = vms[0]["uuid"];
  std::string addr = daemon_->addr();
  daemon_->Kill();
  auto r = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "vm-health", victim, "unhealthy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The agent, alone, sees it fail.
  ASSERT_TRUE(WaitFor([&] { return HeldState(*agent, victim) == "unhealthy"; }, 10)) << agent->log();
  StartDaemon(addr);
  // Back: the agent reconnects, mariposad learns the state and replaces it.
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& v : Vms("destroyed")) {
      if (v["uuid"] == victim) return true;
    }
    return false;
  }, 30)) << daemon_->log();
  EXPECT_TRUE(WaitFor([&] { return Healthy("hb") == 3; }));
  EXPECT_TRUE(WaitFor([&] { return M({"-j", "hb", "events"}).out.find("-> unhealthy") != std::string::npos; }, 5));
}

}  // namespace
}  // namespace mariposa::testing
