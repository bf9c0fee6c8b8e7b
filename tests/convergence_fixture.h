// What the convergence end-to-end tests share: tritonsim, mariposad
// --triton against it, the CLI, and reading VMAPI.
#ifndef MARIPOSA_TESTS_CONVERGENCE_FIXTURE_H_
#define MARIPOSA_TESTS_CONVERGENCE_FIXTURE_H_

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "common/clock.h"
#include "tests/process.h"

namespace mariposa::testing {

using json = nlohmann::json;

class ConvergenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("e2e");
    ASSERT_NO_FATAL_FAILURE(StartWith({"--servers", "5", "--job-latency", "20"},
                                      {"--resync", "300ms", "--metrics-listen", "127.0.0.1:0", "--backoff-cap", "8s"},
                                      "data"));
    manifest_ = ReadFile("deploy/examples/jupiter.yaml");
  }
  // A tritonsim (the sample seed and `sim_args`) and a mariposad on a new
  // store in dir_/`data` with `flags` besides, in place of the running ones.
  void StartWith(const std::vector<std::string>& sim_args, const std::vector<std::string>& flags,
                 const std::string& data) {
    daemon_.reset();
    std::vector<std::string> sim = {"--seed", "deploy/examples/tritonsim-seed.json"};
    sim.insert(sim.end(), sim_args.begin(), sim_args.end());
    sim_ = std::make_unique<Tritonsim>(sim);
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    std::vector<std::string> argv = {"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/" + data,
                                     "--triton", sim_->addr(), "--owner", "930896af-bf8c-48d4-885c-6573a94b1853",
                                     "--network", "aaaaaaaa-0000-4000-8000-000000000001"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    daemon_ = std::make_unique<ServerProcess>(argv, dir_ + "/" + data);
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  }
  // Active VMs per service, from VMAPI.
  std::map<std::string, int> Running() { return RunningPerService(sim_->addr()); }
  // VMs of `service` in `state` per image uuid, from VMAPI.
  std::map<std::string, int> ImageCounts(const std::string& service, const std::string& state = "active") {
    httplib::Client c(sim_->addr());
    std::map<std::string, int> out;
    for (const auto& vm : json::parse(c.Get("/vms?state=" + state + "&tag.mariposa.service=" + service)->body)) {
      out[vm["image_uuid"].get<std::string>()]++;
    }
    return out;
  }
  bool WaitFor(const std::map<std::string, int>& want) {
    return Eventually([&] { return Running() == want; }, absl::Seconds(15));
  }
  RunResult M(const std::vector<std::string>& args, const std::string& input = "") {
    return Cli(daemon_->addr(), args, input);
  }
  // Applies `text` (as v1.yaml), kills mariposad with SIGKILL twice while
  // it acts on it (each restart must find what the last one made), and
  // waits for jupiter's instances to run; "" when they do, else why not.
  std::string ApplyKilledTwice(const std::string& text) {
    WriteFile(dir_ + "/v1.yaml", text);
    RunResult r = M({"apply", "-f", dir_ + "/v1.yaml", "--yes"});
    if (r.exit_code != 0) return "apply: " + r.err;
    for (int i = 0; i < 2; ++i) {
      Pause(absl::Milliseconds(40 * i));
      daemon_->Kill();
      if (!daemon_->Start()) return "restart: " + daemon_->log();
    }
    if (!WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}})) return "not running: " + daemon_->log();
    return "";
  }
  // The uuid in "queued <kind> task <uuid>".
  static std::string TaskOf(const RunResult& r) {
    size_t at = r.out.find("task ");
    return at == std::string::npos ? "" : r.out.substr(at + 5, 36);
  }
  // `queue get -o json` once the task has completed (up to 20 s), else "".
  std::string WaitCompleted(const std::string& task) {
    std::string out;
    bool done = Eventually(
        [&] {
          out = M({"-o", "json", "queue", "get", task}).out;
          return out.find("\"state\": \"completed\"") != std::string::npos;
        },
        absl::Seconds(20));
    return done ? out : "";
  }

  std::string dir_, manifest_;
  std::unique_ptr<Tritonsim> sim_;
  std::unique_ptr<ServerProcess> daemon_;
};

}  // namespace mariposa::testing

#endif  // MARIPOSA_TESTS_CONVERGENCE_FIXTURE_H_
