// The monitor against a real loopback HTTP server whose answer the test
// flips: states change once per change, and checks keep their interval.
#include "health/monitor.h"

#include <httplib.h>

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace mariposa::health {
namespace {

TEST(MonitorTest, FollowsTheTargetAndReportsOnlyChanges) {
  httplib::Server server;
  std::atomic<int> status{200};
  std::atomic<int> hits{0};
  server.Get("/healthz", [&](const httplib::Request&, httplib::Response& res) {
    hits++;
    res.status = status.load();
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });

  std::mutex mu;
  std::vector<HealthChange> changes;
  HealthMonitor monitor(HealthMonitor::Hooks{[&](const HealthChange& c) {
    std::lock_guard<std::mutex> l(mu);
    changes.push_back(c);
  }});
  Target target;
  target.instance = "i-1";
  target.check = "http";
  target.spec.address = "127.0.0.1";
  target.spec.port = port;
  target.spec.path = "/healthz";
  target.spec.timeout = absl::Milliseconds(500);
  target.policy.interval = absl::Milliseconds(50);
  target.policy.unhealthy_interval = absl::Milliseconds(50);
  target.policy.retries = 2;
  target.policy.successes = 1;
  target.policy.start_window = absl::Seconds(0);
  target.created = absl::Now();
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
  server.stop();
  t.join();
}

}  // namespace
}  // namespace mariposa::health
