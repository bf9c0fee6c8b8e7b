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
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

class HealthAgentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("health-agents");
    sim_ = ListeningTritonsim();
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    StartDaemon("127.0.0.1:0");
  }
  void StartDaemon(const std::string& listen) {
    daemon_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"daemon/mariposad", "--listen", listen, "--data-dir", dir_ + "/data", "--triton",
                                 sim_->addr(), "--owner", "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                                 "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms", "--health-agents", "--health-lease", "1s",
                                 "--health-loopback"},
        dir_ + "/data");
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  }
  std::unique_ptr<ServerProcess> StartAgent(const std::string& id) {
    auto a = std::make_unique<ServerProcess>(
        std::vector<std::string>{"health/mariposa-health", "--mariposad", daemon_->addr(), "--id", id, "--listen",
                                 "127.0.0.1:0", "--heartbeat", "200ms", "--metrics-listen", "127.0.0.1:0"},
        dir_ + "/" + id);
    EXPECT_TRUE(a->Start()) << a->log();
    return a;
  }
  RunResult M(const std::vector<std::string>& args) { return Cli(daemon_->addr(), args); }
  // instance/check keys an agent runs now.
  std::set<std::string> Held(const ServerProcess& agent) {
    auto r = M({"-o", "json", "health", "--agent", agent.addr()});
    std::set<std::string> out;
    json j = json::parse(r.out, nullptr, false);
    if (!j.is_object()) return out;
    for (const auto& c : j["checks"]) {
      out.insert(c["key"]["instance"].get<std::string>() + "/" + c["key"]["check"].get<std::string>());
    }
    return out;
  }
  std::string HeldState(const ServerProcess& agent, const std::string& instance) {
    json j = json::parse(M({"-o", "json", "health", "--agent", agent.addr()}).out, nullptr, false);
    if (!j.is_object()) return "";
    for (const auto& c : j["checks"]) {
      if (c["key"]["instance"] == instance) return c["state"];
    }
    return "";
  }
  int Healthy(const std::string& project) {
    json st = json::parse(M({"-o", "json", "-j", project, "status"}).out, nullptr, false);
    if (!st.is_object() || !st.contains("services")) return -1;
    return std::stoi(st["services"][0].value("healthy", "0"));
  }
  bool WaitFor(const std::function<bool()>& f, int seconds = 20) {
    for (auto end = Clock::now() + std::chrono::seconds(seconds); Clock::now() < end;) {
      if (f()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  json Vms(const std::string& state) {
    httplib::Client c(sim_->addr());
    return json::parse(c.Get("/vms?state=" + state + "&tag.mariposa.service=web")->body);
  }
  void Apply(const std::string& project, int count) {
    WriteFile(dir_ + "/m.yaml", "project: " + project + R"(
services:
  web:
    image: autopilotpattern/nginx@1.4.0
    count: )" + std::to_string(count) + R"(
    ports: [8080]
    start: {window: 3s}
    healthchecks:
      http: {type: http, port: 8080, path: /healthz, interval: 200ms, timeout: 150ms, retries: 2}
)");
    auto r = M({"-j", project, "apply", "-f", dir_ + "/m.yaml", "--yes", "--wait", "--timeout", "60s"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  std::string dir_;
  std::unique_ptr<Tritonsim> sim_;
  std::unique_ptr<ServerProcess> daemon_;
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
  EXPECT_THAT(M({"-j", "hb", "events"}).out, ::testing::HasSubstr("-> unhealthy"));
}

}  // namespace
}  // namespace mariposa::testing
