// What the health end-to-end tests share: a tritonsim with --listen-vms, a
// mariposad against it with health flags, the CLI, and a manifest whose
// service answers its check on 8080.
#ifndef MARIPOSA_TESTS_HEALTH_FIXTURE_H_
#define MARIPOSA_TESTS_HEALTH_FIXTURE_H_

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {

class HealthE2E : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  // tritonsim, then mariposad on `listen` with `health_flags`.
  void Start(const std::string& name, std::vector<std::string> health_flags) {
    dir_ = TempDir(name);
    health_flags_ = std::move(health_flags);
    sim_ = ListeningTritonsim();
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    StartDaemon("127.0.0.1:0");
  }
  void StartDaemon(const std::string& listen) {
    std::vector<std::string> argv{"daemon/mariposad", "--listen", listen, "--data-dir", dir_ + "/data",
                                  "--triton", sim_->addr(), "--owner", "930896af-bf8c-48d4-885c-6573a94b1853",
                                  "--network", "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms",
                                  "--health-loopback"};
    argv.insert(argv.end(), health_flags_.begin(), health_flags_.end());
    daemon_ = std::make_unique<ServerProcess>(argv, dir_ + "/data");
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  }
  RunResult M(const std::vector<std::string>& args) { return Cli(daemon_->addr(), args); }
  json Vms(const std::string& state) {
    httplib::Client c(sim_->addr());
    return json::parse(c.Get("/vms?state=" + state + "&tag.mariposa.service=web")->body);
  }
  // The service's healthy count as `status` reports it.
  int Healthy(const std::string& project) {
    json st = json::parse(M({"-o", "json", "-j", project, "status"}).out, nullptr, false);
    if (!st.is_object() || !st.contains("services")) return -1;
    return std::stoi(st["services"][0].value("healthy", "0"));
  }
  bool WaitFor(const std::function<bool()>& f, int seconds = 20) { return Eventually(f, absl::Seconds(seconds)); }
  bool WaitHealthy(const std::string& project, int n) {
    return WaitFor([&] { return Healthy(project) == n; }, 15);
  }
  void MarkUnhealthy(const std::string& uuid) {
    auto r = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "vm-health", uuid, "unhealthy"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // One service "web" of `count` answering an http check on 8080.
  std::string Manifest(const std::string& project, int count) {
    return "project: " + project + R"(
services:
  web:
    image: autopilotpattern/nginx@1.4.0
    count: )" + std::to_string(count) + R"(
    ports: [8080]
    start: {window: 3s}
    healthchecks:
      http: {type: http, port: 8080, path: /healthz, interval: 200ms, timeout: 150ms, retries: 2}
)";
  }

  std::string dir_;
  std::vector<std::string> health_flags_;
  std::unique_ptr<Tritonsim> sim_;
  std::unique_ptr<ServerProcess> daemon_;
};

}  // namespace mariposa::testing

#endif  // MARIPOSA_TESTS_HEALTH_FIXTURE_H_
