// End to end: tritonsim --listen-vms (each VM answers HTTP on 127.a.b.c),
// mariposad --embedded-health, the CLI. Unhealthy instances are found and
// replaced; a correlated failure is held by the replacement budget.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/health_fixture.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

class HealthTest : public HealthE2E {
 protected:
  void SetUp() override { Start("health", {"--embedded-health"}); }
  // Two instances listening on 8080 and checked there, rolled one at a
  // time with update.auto_rollback.
  static std::string RollingWeb(const std::string& project) {
    return "project: " + project + "\n" + R"(services:
  web:
    image: autopilotpattern/nginx@1.4.0
    count: 2
    ports: [8080]
    start: {window: 1s}
    update: {rolling: 1, max_surge: 1, auto_rollback: true}
    healthchecks:
      http: {type: http, port: 8080, path: /healthz, interval: 200ms, timeout: 150ms, retries: 2}
)";
  }
};

TEST_F(HealthTest, UnhealthyInstanceIsDetectedAndReplaced) {
  WriteFile(dir_ + "/m.yaml", Manifest("hc", 3));
  ASSERT_EQ(M({"apply", "-f", dir_ + "/m.yaml", "--yes", "--wait", "--timeout", "60s"}).exit_code, 0) << daemon_->log();
  ASSERT_TRUE(WaitHealthy("hc", 3)) << M({"-j", "hc", "status", "-v"}).out << daemon_->log();
  std::string victim = Vms("running")[0]["uuid"];
  auto marked = std::chrono::steady_clock::now();
  MarkUnhealthy(victim);
  // interval x retries = 0.4 s, then the replacement: allow a generous margin.
  bool replaced = false;
  for (int i = 0; i < 100 && !replaced; ++i) {
    bool gone = true;
    for (const auto& vm : Vms("active")) gone &= vm["uuid"] != victim;
    replaced = gone && Vms("running").size() == 3;
    if (!replaced) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - marked).count();
  ASSERT_TRUE(replaced) << daemon_->log();
  EXPECT_LT(took, 5.0);
  // Events are written as the agent's message arrives (changes wait up to
  // 100 ms for others), so the replacement may be seen first.
  std::string events;
  EXPECT_TRUE(WaitFor([&] {
    events = M({"-j", "hc", "events", "--limit", "1000"}).out;
    return events.find("http: healthy -> unhealthy (status 503)") != std::string::npos;
  }, 5)) << events;
  EXPECT_THAT(events, ::testing::HasSubstr("(replace-broken)"));
  EXPECT_TRUE(WaitHealthy("hc", 3));
  EXPECT_THAT(M({"-o", "json", "-j", "hc", "queue", "list"}).out, ::testing::HasSubstr("\"trigger\": \"health\""));
  // `mariposa health`: one row per instance and check, all healthy now, the
  // victim's checks gone with it.
  auto h = M({"-j", "hc", "health"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_THAT(h.out, ::testing::HasSubstr("INSTANCE"));
  EXPECT_THAT(h.out, ::testing::HasSubstr("hc-web-"));
  EXPECT_THAT(h.out, ::testing::HasSubstr(":8080"));
  EXPECT_THAT(h.out, ::testing::Not(::testing::HasSubstr("unhealthy")));
  // header + 3 checks, a blank line, the agents' header + the embedded agent
  EXPECT_EQ(std::count(h.out.begin(), h.out.end(), '\n'), 7) << h.out;
  EXPECT_THAT(h.out, ::testing::HasSubstr("AGENT"));
  EXPECT_THAT(h.out, ::testing::HasSubstr("embedded"));
}

TEST_F(HealthTest, CorrelatedFailureIsHeldByTheBudget) {
  WriteFile(dir_ + "/m.yaml", Manifest("many", 10));
  ASSERT_EQ(M({"apply", "-f", dir_ + "/m.yaml", "--yes", "--wait", "--timeout", "60s"}).exit_code, 0) << daemon_->log();
  ASSERT_TRUE(WaitHealthy("many", 10)) << daemon_->log();
  json vms = Vms("running");
  std::set<std::string> marked;
  for (int k = 0; k < 8; ++k) {  // 80 %
    MarkUnhealthy(vms[k]["uuid"]);
    marked.insert(vms[k]["uuid"].get<std::string>());
  }
  std::this_thread::sleep_for(std::chrono::seconds(4));
  int still_there = 0;
  for (const auto& vm : Vms("active")) still_there += marked.count(vm["uuid"].get<std::string>());
  EXPECT_EQ(still_there, 7) << "max(1, 10 % of 10) = 1 replacement per minute";
  std::string events = M({"-j", "many", "events", "--limit", "1000"}).out;
  EXPECT_THAT(events, ::testing::HasSubstr("replacement.budget-exceeded"));
}

// Issue 48, 1: `apply --wait` of a version that mariposad rolled back
// (update.auto_rollback) exits 1 and says so; it printed "converged" and
// exited 0 for the restored version.
TEST_F(HealthTest, ApplyWaitOfARolledBackVersionFails) {
  std::string v1 = RollingWeb("aw");
  v1.replace(v1.find("auto_rollback: true}"), 20, "auto_rollback: true, on_change: rollout}");
  WriteFile(dir_ + "/v1.yaml", v1);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes", "--wait", "--timeout", "60s"}).exit_code, 0) << daemon_->log();
  ASSERT_TRUE(WaitHealthy("aw", 2));
  std::string v2 = v1;
  v2.replace(v2.find("ports: [8080]"), 13, "ports: [8081]");
  WriteFile(dir_ + "/v2.yaml", v2);
  RunResult r = M({"apply", "-f", dir_ + "/v2.yaml", "--yes", "--wait", "--timeout", "90s"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err << daemon_->log();
  EXPECT_THAT(r.err, ::testing::HasSubstr("version 2 did not converge: version 3 replaced it, a rollback to version 1"))
      << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::Not(::testing::HasSubstr("converged after"))) << r.out;
}

// update.auto_rollback: a rollout whose new instances never pass is failed,
// the project goes back to the previous version, and the instances follow.
TEST_F(HealthTest, RolloutThatNeverPassesIsRolledBack) {
  std::string v1 = RollingWeb("ar");
  WriteFile(dir_ + "/v1.yaml", v1);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes", "--wait", "--timeout", "60s"}).exit_code, 0) << daemon_->log();
  ASSERT_TRUE(WaitHealthy("ar", 2));
  // Version 2 listens on another port than the one checked: it never passes.
  std::string v2 = v1;
  v2.replace(v2.find("ports: [8080]"), 13, "ports: [8081]");
  WriteFile(dir_ + "/v2.yaml", v2);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v2.yaml", "--yes"}).exit_code, 0);
  auto r = M({"-j", "ar", "reprovision"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string task = r.out.substr(r.out.find("task ") + 5, 36);
  bool failed = false;
  std::string out;
  for (int i = 0; i < 150 && !failed; ++i) {
    out = M({"-o", "json", "queue", "get", task}).out;
    failed = out.find("\"state\": \"failed\"") != std::string::npos;
    if (!failed) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(failed) << out << daemon_->log();
  EXPECT_THAT(out, ::testing::HasSubstr("auto_rollback: ar-web-"));
  auto versions = M({"-j", "ar", "versions"}).out;
  EXPECT_THAT(versions, ::testing::HasSubstr("rollback"));
  // Back on version 1's spec: every running instance listens on 8080 and is healthy.
  bool back = false;
  for (int i = 0; i < 150 && !back; ++i) {
    json vms = Vms("active");
    back = vms.size() == 2;
    for (const auto& vm : vms) back &= vm["state"] == "running" && vm["tags"].value("ports", "") == "8080";
    back &= Healthy("ar") == 2;
    if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(back) << Vms("active").dump() << daemon_->log();
  EXPECT_THAT(M({"-j", "ar", "events", "--limit", "1000"}).out, ::testing::HasSubstr("rollout.auto-rollback"));
}

// Issue 31: a changed check used to run at once against the healthy
// running instances, which were removed as broken before any new instance
// had proven itself. Checks belong to the version an instance was created
// from: the change rolls out, the new instance fails the new check, the
// rollout rolls back, and the old instances are never touched.
TEST_F(HealthTest, ChangedCheckRollsOutAndNeverTakesOutTheRunningFleet) {
  std::string v1 = RollingWeb("cc");
  WriteFile(dir_ + "/v1.yaml", v1);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes", "--wait", "--timeout", "60s"}).exit_code, 0) << daemon_->log();
  ASSERT_TRUE(WaitHealthy("cc", 2));
  std::set<std::string> fleet;
  for (const auto& vm : Vms("running")) fleet.insert(vm["uuid"].get<std::string>());
  ASSERT_EQ(fleet.size(), 2u);
  // Version 2 checks a port nothing listens on.
  std::string v2 = v1;
  v2.replace(v2.find("port: 8080"), 10, "port: 8081");
  WriteFile(dir_ + "/v2.yaml", v2);
  RunResult diff = M({"diff", "-f", dir_ + "/v2.yaml"});
  EXPECT_THAT(diff.out, ::testing::HasSubstr("2 instances will be replaced by a rollout when applied"));
  RunResult r = M({"apply", "-f", dir_ + "/v2.yaml", "--yes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("rolling out web"));
  // Until the rollout is rolled back, both old instances keep running and
  // stay healthy on their own check.
  bool rolled_back = false;
  for (int i = 0; i < 200 && !rolled_back; ++i) {
    std::set<std::string> running;
    for (const auto& vm : Vms("running")) running.insert(vm["uuid"].get<std::string>());
    for (const std::string& u : fleet) ASSERT_EQ(running.count(u), 1u) << "old instance " << u << " was removed";
    rolled_back = M({"-j", "cc", "events", "--limit", "1000"}).out.find("rollout.auto-rollback") != std::string::npos;
    if (!rolled_back) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(rolled_back) << M({"-j", "cc", "status", "-v"}).out << daemon_->log();
  std::string health = M({"-j", "cc", "health"}).out;
  std::string events = M({"-j", "cc", "events", "--limit", "1000"}).out;
  for (const std::string& u : fleet) {
    EXPECT_THAT(events, ::testing::Not(::testing::HasSubstr(u.substr(0, 8) + " (remove-broken)"))) << events;
  }
  // Back on version 1: the two old instances are the fleet, healthy.
  EXPECT_TRUE(WaitHealthy("cc", 2));
  std::set<std::string> after;
  EXPECT_TRUE(WaitFor([&] {
    after.clear();
    for (const auto& vm : Vms("active")) after.insert(vm["uuid"].get<std::string>());
    return after == fleet;
  }, 20)) << "the failed new instance is removed, the old ones stay";
}

// A check's `network` names the NIC: net0 is the instance's one NIC; a
// network the service is not on is refused at apply, naming the field.
TEST_F(HealthTest, CheckNetworkNamesTheNic) {
  std::string text = R"(project: nn
services:
  web:
    image: autopilotpattern/nginx@1.4.0
    count: 1
    ports: [8080]
    start: {window: 1s}
    healthchecks:
      http: {type: http, port: 8080, path: /healthz, network: net0, interval: 200ms, timeout: 150ms, retries: 2}
      admin: {type: tcp, port: 8080, network: backend, interval: 200ms, timeout: 150ms, retries: 2}
)";
  WriteFile(dir_ + "/n.yaml", text);
  RunResult r = M({"apply", "-f", dir_ + "/n.yaml", "--yes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("services.web.healthchecks.admin.network: the service names no networks"));
  EXPECT_THAT(M({"project", "list"}).out, ::testing::Not(::testing::HasSubstr("nn")));
  WriteFile(dir_ + "/n.yaml", text.substr(0, text.find("      admin:")));
  ASSERT_EQ(M({"apply", "-f", dir_ + "/n.yaml", "--yes"}).exit_code, 0);
  std::string events;
  EXPECT_TRUE(WaitFor([&] {
    events = M({"-j", "nn", "events", "--limit", "1000"}).out;
    // The first check may run before tritonsim's listener for the new VM
    // answers (unknown -> starting -> healthy): either path ends healthy.
    return events.find("http: unknown -> healthy") != std::string::npos ||
           events.find("http: starting -> healthy") != std::string::npos;
  }, 15)) << events;
}

// With `networks:`, an instance has one NIC per network (the first primary)
// and a check names the one it runs on by network name or interface; each
// answers on its own address (tritonsim's loopback twin 127.b.c.d).
TEST_F(HealthTest, ChecksRunOnTheNicOfTheNetworkTheyName) {
  WriteFile(dir_ + "/m.yaml", R"(project: multi
services:
  web:
    image: autopilotpattern/nginx@1.4.0
    count: 1
    ports: [8080]
    networks: [my-fabric-network, external]
    start: {window: 1s}
    healthchecks:
      fabric: {type: tcp, port: 8080, network: my-fabric-network, interval: 200ms, timeout: 150ms, retries: 2}
      public: {type: tcp, port: 8080, network: net1, interval: 200ms, timeout: 150ms, retries: 2}
)");
  ASSERT_EQ(M({"apply", "-f", dir_ + "/m.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitHealthy("multi", 1));
  json vms = Vms("running");
  ASSERT_EQ(vms.size(), 1u);
  ASSERT_EQ(vms[0]["nics"].size(), 2u);
  std::string fabric_ip = vms[0]["nics"][0]["ip"], public_ip = vms[0]["nics"][1]["ip"];
  EXPECT_EQ(fabric_ip.rfind("172.16.", 0), 0u) << fabric_ip;
  EXPECT_EQ(public_ip.rfind("10.", 0), 0u) << public_ip;
  std::string health = M({"-j", "multi", "health"}).out;
  EXPECT_THAT(health, ::testing::HasSubstr("127" + fabric_ip.substr(fabric_ip.find('.')) + ":8080"));
  EXPECT_THAT(health, ::testing::HasSubstr("127" + public_ip.substr(public_ip.find('.')) + ":8080"));
}

}  // namespace
}  // namespace mariposa::testing
