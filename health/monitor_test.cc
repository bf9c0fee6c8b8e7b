// The monitor against a real loopback HTTP server whose answer the test
// flips: states change once per change, and checks keep their interval.
#include "health/monitor.h"

#include <httplib.h>

#include <atomic>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "gtest/gtest.h"

namespace mariposa::health {
namespace {

// An http check of 127.0.0.1:port/healthz every `interval` (5 s timeout,
// one failure or success changes the state).
Target HttpTarget(int port, absl::Duration interval, absl::Time created) {
  Target target;
  target.instance = "i-1";
  target.check = "http";
  target.spec.address = "127.0.0.1";
  target.spec.port = port;
  target.spec.path = "/healthz";
  target.spec.timeout = absl::Seconds(5);
  target.policy.interval = interval;
  target.policy.unhealthy_interval = interval;
  target.policy.retries = 1;
  target.policy.successes = 1;
  target.created = created;
  return target;
}

// A loopback /healthz server answering `status` (200 unless changed) and
// counting its hits; stopped when destroyed.
class HealthzServer {
 public:
  HealthzServer() {
    server_.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      hits++;
      res.status = status.load();
    });
    port = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~HealthzServer() {
    server_.stop();
    thread_.join();
  }
  std::atomic<int> status{200};
  std::atomic<int> hits{0};
  int port = 0;

 private:
  httplib::Server server_;
  std::thread thread_;
};

// An instance created long ago whose check begins now (checked again after
// it was not running: a restart, a zone reprovisioned in place) gets its
// start window from now: its first failures do not count. Before, the
// window ran from its creation, so the first failed probe of a zone still
// booting after a reprovision failed the rollout (tests/triton_core_e2e_test).
TEST(MonitorTest, TheStartWindowRunsFromWhenTheCheckBegins) {
  HealthzServer server;
  server.status = 503;  // not serving yet
  HealthMonitor monitor(HealthMonitor::Hooks{[](const HealthChange&) {}}, RealClock::Get());
  Target target = HttpTarget(server.port, absl::Milliseconds(50), RealClock::Get()->Now() - absl::Hours(1));
  target.spec.timeout = absl::Milliseconds(500);
  target.policy.start_window = absl::Seconds(2);
  monitor.Assign("p", {target});
  for (int i = 0; i < 100 && server.hits.load() < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GE(server.hits.load(), 4);
  EXPECT_EQ(monitor.InstanceHealth("i-1"), Health::kStarting) << "failures inside the window counted";
  server.status = 200;
  bool healthy = false;
  for (int i = 0; i < 100 && !healthy; ++i) {
    healthy = monitor.InstanceHealth("i-1") == Health::kHealthy;
    if (!healthy) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(healthy);
}

TEST(MonitorTest, FollowsTheTargetAndReportsOnlyChanges) {
  HealthzServer server;
  std::atomic<int>& status = server.status;
  std::atomic<int>& hits = server.hits;
  int port = server.port;

  std::mutex mu;
  std::vector<HealthChange> changes;
  HealthMonitor monitor(HealthMonitor::Hooks{[&](const HealthChange& c) {
    std::lock_guard<std::mutex> l(mu);
    changes.push_back(c);
  }}, RealClock::Get());
  Target target = HttpTarget(port, absl::Milliseconds(50), absl::Now());
  target.spec.timeout = absl::Milliseconds(500);
  target.policy.retries = 2;
  target.policy.start_window = absl::Seconds(0);
  EXPECT_FALSE(monitor.InstanceHealth("i-1").has_value());
  monitor.Assign("p", {target});
  auto wait_for = [&](Health h) {
    for (int i = 0; i < 100; ++i) {
      if (monitor.InstanceHealth("i-1") == h) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  ASSERT_TRUE(wait_for(Health::kHealthy));
  status = 503;
  ASSERT_TRUE(wait_for(Health::kUnhealthy));
  status = 200;
  ASSERT_TRUE(wait_for(Health::kHealthy));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  {
    std::lock_guard<std::mutex> l(mu);
    ASSERT_EQ(changes.size(), 3u);  // unknown->healthy, ->unhealthy, ->healthy; steady passes are not reported
    EXPECT_EQ(changes[1].to, Health::kUnhealthy);
    EXPECT_EQ(changes[1].detail, "status 503");
    EXPECT_EQ(changes[1].group, "p");
  }
  // At a 50 ms interval (±10 %) about 20 checks per second ran, not a burst.
  int before = hits;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int ran = hits - before;
  EXPECT_GE(ran, 6);
  EXPECT_LE(ran, 14);
  // Unassigned: no more checks, no health.
  monitor.Assign("p", {});
  EXPECT_FALSE(monitor.InstanceHealth("i-1").has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  before = hits;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(hits.load(), before);
}

// Schedules run on the injected clock: while it stands still no check runs
// however long the test waits; each advance by the interval runs one.
TEST(MonitorTest, RunsOnTheInjectedClock) {
  HealthzServer server;
  std::atomic<int>& hits = server.hits;
  int port = server.port;
  SimulatedClock clock(absl::FromUnixSeconds(1800000000));
  std::atomic<int> results{0};
  HealthMonitor::Hooks hooks;
  hooks.on_result = [&](const std::string&, bool, absl::Duration) { results++; };
  HealthMonitor monitor(hooks, &clock);
  Target target = HttpTarget(port, absl::Minutes(1), clock.Now());
  monitor.Assign("p", {target});
  // Waits (real time: the check's HTTP round trip) for n results; a short
  // look when none is expected.
  auto results_reach = [&](int n, int tries = 500) {
    for (int i = 0; i < tries && results < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return results.load();
  };
  // The first run is spread within the first interval: nothing before time moves.
  EXPECT_EQ(results_reach(1, 30), 0);
  EXPECT_EQ(hits.load(), 0);
  clock.Advance(absl::Minutes(1));
  EXPECT_EQ(results_reach(1), 1);
  EXPECT_EQ(monitor.InstanceHealth("i-1"), Health::kHealthy);
  // The next is due an interval (±10 %) later: not after 50 s, by 70 s.
  clock.Advance(absl::Seconds(50));
  EXPECT_EQ(results_reach(2, 30), 1);
  clock.Advance(absl::Seconds(20));
  EXPECT_EQ(results_reach(2), 2);
  EXPECT_EQ(hits.load(), 2);
}


// 1,000 checks every 500 ms (2,000 a second): the loop wakes about once per
// HealthMonitor::kBatch, not once per result, and checks still run at their
// interval.
TEST(MonitorTest, ResultsDoNotWakeTheLoopOneByOne) {
  HealthzServer server;
  int port = server.port;
  std::atomic<int64_t> results{0}, negative_lateness{0};
  HealthMonitor::Hooks hooks;
  hooks.on_result = [&](const std::string&, bool, absl::Duration) { results++; };
  hooks.on_start = [&](absl::Duration late) { negative_lateness += late < absl::ZeroDuration(); };
  {
    HealthMonitor monitor(hooks, RealClock::Get());
    std::vector<Target> targets;
    for (int i = 0; i < 1000; ++i) {
      Target target = HttpTarget(port, absl::Milliseconds(500), absl::Now());
      target.instance = "i-" + std::to_string(i);
      target.policy.start_window = absl::ZeroDuration();
      targets.push_back(target);
    }
    monitor.Assign("p", targets);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));  // first runs spread over one interval
    int64_t passes0 = monitor.LoopPassesForTest(), results0 = results;
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    int64_t passes = monitor.LoopPassesForTest() - passes0, ran = results - results0;
    EXPECT_GT(ran, 1000) << "about 2,000 checks should have run in that second";
    EXPECT_LT(passes, ran / 4) << passes << " loop passes for " << ran << " results";
  }
  EXPECT_EQ(negative_lateness.load(), 0);
}

}  // namespace
}  // namespace mariposa::health
