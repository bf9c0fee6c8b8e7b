// One project across data centers (issue 52, points 2 to 4), as an operator
// runs it: a tritonsim and a mariposad per data center on loopback, each
// mariposad the others' peer with a deployer token each issued. An apply
// through any of them is checked and planned by every data center, then
// rolled out in the manifest's order, the next only once the one before
// converged, under one version id; each runs its own entry (count,
// package, CNS names). A failure in the second stops the third; a data
// center whose mariposad goes away mid-rollout is shown unknown, keeps
// converging what it holds, and is caught up when it is back; one whose
// VMAPI is slow to create holds the rollout until it converged. One view:
// status and events across data centers. A move into another data center.
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

class RolloutsTest : public ::testing::Test {
 protected:
  struct Dc {
    std::string name, addr;
    std::unique_ptr<Tritonsim> sim;
    std::unique_ptr<ServerProcess> daemon;
  };

  // Data centers `names`, each with its tritonsim and its mariposad.
  void Make(const std::vector<std::string>& names) {
    dir_ = TempDir("rollouts");
    for (const std::string& n : names) {
      Dc dc;
      dc.name = n;
      dc.sim = std::make_unique<Tritonsim>(std::vector<std::string>{
          "--servers", "2", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "20"});
      ASSERT_TRUE(dc.sim->Start()) << dc.sim->log();
      dcs_[n] = std::move(dc);
    }
    // Each issues a deployer token to every other (what `project copy` and
    // a rollout need there).
    for (const std::string& n : names) {
      // Each data center's address is fixed before its peers learn it: a
      // free port taken by another process before this one binds it is
      // given up for another (the simulators are already listening).
      std::unique_ptr<ServerProcess> alone;
      bool up = false;
      for (int attempt = 0; attempt < 5 && !up; ++attempt) {
        dcs_[n].addr = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
        alone = std::make_unique<ServerProcess>(
            std::vector<std::string>{"daemon/mariposad", "--listen", dcs_[n].addr, "--data-dir", dir_ + "/" + n},
            dir_ + "/" + n);
        up = alone->Start();
        if (!up && !absl::StrContains(alone->log(), "Address already in use")) break;
      }
      ASSERT_TRUE(up) << alone->log();
      for (const std::string& o : names) {
        if (o == n) continue;
        RunResult made = Cli(dcs_[n].addr, {"admin", "token", "create", "--name", "peer-" + o, "--role", "deployer",
                                            "--all-projects"});
        ASSERT_EQ(made.exit_code, 0) << made.err;
        size_t at = made.out.find("mpt_");
        ASSERT_NE(at, std::string::npos) << made.out;
        std::ofstream(TokenFile(n, o)) << made.out.substr(at, made.out.find_first_of(" \n", at) - at) << "\n";
      }
    }
    for (const std::string& n : names) StartDaemon(n);
    // As an operator would: apply once every data center sees the others
    // (a peer started after this one is found at the next question).
    for (const std::string& n : names) {
      ASSERT_TRUE(Eventually([&] { return At(n, {"datacenters"}).exit_code == 0; }, absl::Seconds(20)))
          << At(n, {"datacenters"}).out;
    }
  }
  std::string TokenFile(const std::string& issuer, const std::string& holder) {
    return absl::StrCat(dir_, "/", issuer, "-for-", holder, ".token");
  }
  void StartDaemon(const std::string& n, bool named = true) {
    std::string peers, tokens;
    for (const auto& [o, dc] : dcs_) {
      if (o == n) continue;
      absl::StrAppend(&peers, peers.empty() ? "" : ",", o, "=", dc.addr);
      absl::StrAppend(&tokens, tokens.empty() ? "" : ",", o, "=", TokenFile(o, n));
    }
    std::vector<std::string> argv = {"daemon/mariposad", "--listen", dcs_[n].addr, "--data-dir", dir_ + "/" + n,
                                     "--triton", dcs_[n].sim->addr(), "--owner",
                                     "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                                     "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms"};
    if (named) {
      argv.insert(argv.end(), {"--datacenter", n, "--peers", peers, "--peer-tokens", tokens, "--peer-interval", "1s"});
    }
    dcs_[n].daemon = std::make_unique<ServerProcess>(argv, dir_ + "/" + n);
    ASSERT_TRUE(dcs_[n].daemon->Start()) << dcs_[n].daemon->log();
  }
  RunResult At(const std::string& n, const std::vector<std::string>& args) { return Cli(dcs_[n].addr, args); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // The project's newest rollout as `rollouts --all -o json` shows it.
  json Rollout(const std::string& n, const std::string& project) {
    RunResult r = At(n, {"-j", project, "-o", "json", "rollouts", "--all"});
    if (r.exit_code != 0 || r.out.empty()) return json::object();
    json j = json::parse(r.out);
    return j.value("rollouts", json::array()).empty() ? json::object() : j["rollouts"].back();
  }
  std::string StepState(const json& rollout, const std::string& dc) {
    for (const json& s : rollout.value("steps", json::array())) {
      if (s.value("datacenter", "") == dc) return s.value("state", "");
    }
    return "";
  }
  // The project's version in force there: {number, uuid}.
  std::pair<int64_t, std::string> Current(const std::string& n, const std::string& project) {
    RunResult r = At(n, {"-j", project, "-o", "json", "versions"});
    if (r.exit_code != 0 || r.out.empty()) return {0, ""};
    json v = json::parse(r.out).value("versions", json::array());
    if (v.empty()) return {0, ""};
    return {std::stoll(v.back().value("number", "0")), v.back().value("uuid", "")};
  }

  std::string dir_;
  std::map<std::string, Dc> dcs_;
};

constexpr char kJupiter[] = "deploy/examples/jupiter-datacenters.yaml";

TEST_F(RolloutsTest, AnApplyThroughEitherGoesInOrderAndEachRunsItsOwnEntry) {
  Make({"us-east-1", "us-west-1"});
  // Through the second: every data center checks and plans it first.
  RunResult plan = At("us-west-1", {"diff", "-f", kJupiter});
  EXPECT_EQ(plan.exit_code, 1) << plan.out << plan.err;
  EXPECT_TRUE(absl::StrContains(plan.out, "by data center, in rollout order:\n"
                                          "  us-east-1 (canary: first; planned and checked there; new to the project): "
                                          "5 to create"))
      << plan.out;
  EXPECT_TRUE(absl::StrContains(plan.out, "  us-west-1 (this data center; new to the project): 3 to create"))
      << plan.out;
  EXPECT_EQ(Current("us-east-1", "jupiter").first, 0) << "a plan stores nothing";

  RunResult applied = At("us-west-1", {"apply", "--yes", "-f", kJupiter, "--wait", "--timeout", "90s"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  EXPECT_TRUE(absl::StrContains(applied.out, "rollout completed: converged in every data center: us-east-1, us-west-1"))
      << applied.out;
  // West was sent the version only once east had converged.
  size_t east_done = applied.out.find("us-east-1 (canary): converged");
  size_t west_sent = applied.out.find("us-west-1: sent");
  ASSERT_NE(east_done, std::string::npos) << applied.out;
  ASSERT_NE(west_sent, std::string::npos) << applied.out;
  EXPECT_LT(east_done, west_sent) << applied.out;
  EXPECT_EQ(RunningPerService(dcs_["us-east-1"].sim->addr()),
            (std::map<std::string, int>{{"nginx", 2}, {"wordpress", 3}}));
  EXPECT_EQ(RunningPerService(dcs_["us-west-1"].sim->addr()),
            (std::map<std::string, int>{{"nginx", 1}, {"wordpress", 2}}));
  // West's own package and CNS name, as its VMAPI holds them.
  httplib::Client vmapi(dcs_["us-west-1"].sim->addr());
  auto vms = vmapi.Get("/vms?state=running&tag.mariposa.service=*");
  ASSERT_TRUE(vms);
  for (const json& vm : json::parse(vms->body)) {
    const json tags = vm.value("tags", json::object());
    if (tags.value("mariposa.service", "") == "wordpress") {
      EXPECT_EQ(vm.value("ram", 0), 512) << vm.dump();
    }
    if (tags.value("mariposa.service", "") == "nginx") {
      EXPECT_EQ(tags.value("triton.cns.services", ""), "jupiter-nginx-west") << vm.dump();
    }
  }
  // One version id (and hash) in both.
  EXPECT_EQ(Current("us-east-1", "jupiter").second, Current("us-west-1", "jupiter").second);
  EXPECT_FALSE(Current("us-east-1", "jupiter").second.empty());
  json r = Rollout("us-east-1", "jupiter");
  EXPECT_TRUE(r.empty()) << "the rollout is kept where it was applied: " << r.dump();
  r = Rollout("us-west-1", "jupiter");
  EXPECT_EQ(r.value("state", ""), "completed") << r.dump();
  EXPECT_EQ(r.value("version_uuid", ""), Current("us-east-1", "jupiter").second);

  // Dropped from the list, through east: west removes its instances.
  std::string east_only = Write("east-only.yaml",
                                "project: jupiter\nservices:\n  nginx: {image: autopilotpattern/nginx@1.4.0, "
                                "package: g4-highcpu-512M, count: 2, start: {window: 1s}}\n"
                                "datacenters: [{name: us-east-1}]\n");
  RunResult dropped = At("us-east-1", {"apply", "--yes", "-f", east_only, "--wait", "--timeout", "90s"});
  EXPECT_EQ(dropped.exit_code, 0) << dropped.out << dropped.err;
  EXPECT_TRUE(absl::StrContains(dropped.out, "us-west-1 (planned and checked there; no longer listed: its instances "
                                             "are removed): 0 to create, 0 to replace, 3 to delete"))
      << dropped.out;
  EXPECT_TRUE(Eventually([&] { return RunningPerService(dcs_["us-west-1"].sim->addr()).empty(); }, absl::Seconds(30)))
      << At("us-west-1", {"-j", "jupiter", "status"}).out;

  // A mariposad without its data center's name refuses such a manifest,
  // and never reads a stored one as "nothing runs here".
  dcs_["us-west-1"].daemon->Stop();
  StartDaemon("us-west-1", /*named=*/false);
  RunResult nameless = At("us-west-1", {"apply", "--yes", "-f", kJupiter});
  EXPECT_NE(nameless.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(nameless.err, "this mariposad has no data center name; start it with --datacenter NAME"))
      << nameless.err;
  RunResult status = At("us-west-1", {"-j", "jupiter", "status"});
  EXPECT_TRUE(absl::StrContains(status.out + status.err, "restart it with --datacenter NAME")) << status.out << status.err;
}

TEST_F(RolloutsTest, AFailureStopsTheRestAndACutOffDataCenterCatchesUp) {
  Make({"east", "west", "north"});
  auto manifest = [](const std::string& project, int count) {
    return absl::StrCat("project: ", project,
                        "\nservices:\n  web: {image: autopilotpattern/nginx@1.4.0, package: g4-highcpu-512M, count: ",
                        count, ", start: {window: 1s}}\n",
                        "datacenters:\n  - {name: east, canary: true}\n  - {name: west}\n"
                        "  - name: north\n    services: {web: {count: ",
                        count + 1, "}}\n");
  };
  // Version 1 of two projects, through the last data center.
  for (std::string p : {"shop", "fail"}) {
    RunResult first = At("north", {"apply", "--yes", "-f", Write(p + "-1.yaml", manifest(p, 1)), "--wait",
                                   "--timeout", "90s"});
    ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  }
  EXPECT_EQ(RunningPerService(dcs_["north"].sim->addr())["web"], 4);

  // West's Triton fails every job: its part fails, north is not started.
  ASSERT_EQ(RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", dcs_["west"].sim->addr(), "knobs",
                        "--job-failure-rate", "1"})
                .exit_code,
            0);
  RunResult failed = At("east", {"apply", "--yes", "-f", Write("fail-2.yaml", manifest("fail", 3)), "--wait",
                                 "--timeout", "120s"});
  EXPECT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  EXPECT_TRUE(absl::StrContains(failed.err, "mariposa: rollout failed: west failed: web")) << failed.err;
  json r = Rollout("east", "fail");
  EXPECT_EQ(StepState(r, "east"), "converged") << r.dump();
  EXPECT_EQ(StepState(r, "west"), "failed") << r.dump();
  EXPECT_EQ(StepState(r, "north"), "not started") << r.dump();
  EXPECT_EQ(Current("north", "fail").first, 1) << "north keeps its version";
  ASSERT_EQ(RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", dcs_["west"].sim->addr(), "knobs",
                        "--job-failure-rate", "0"})
                .exit_code,
            0);

  // West's mariposad goes away once it holds version 2 of shop: the rollout
  // shows it silent and waits; north is not sent anything meanwhile.
  RunResult started = At("east", {"apply", "--yes", "-f", Write("shop-2.yaml", manifest("shop", 2))});
  ASSERT_EQ(started.exit_code, 0) << started.out << started.err;
  ASSERT_TRUE(Eventually([&] { return StepState(Rollout("east", "shop"), "west") == "sent"; }, absl::Seconds(60)))
      << Rollout("east", "shop").dump();
  dcs_["west"].daemon->Kill();
  ASSERT_TRUE(Eventually(
      [&] {
        json x = Rollout("east", "shop");
        for (const json& s : x.value("steps", json::array())) {
          if (s.value("datacenter", "") == "west") return absl::StartsWith(s.value("detail", ""), "no answer");
        }
        return false;
      },
      absl::Seconds(20)))
      << Rollout("east", "shop").dump();
  RunResult shown = At("east", {"-j", "shop", "rollouts"});
  EXPECT_TRUE(absl::StrContains(shown.out, "west: sent, version 2: no answer (last")) << shown.out;
  EXPECT_TRUE(absl::StrContains(shown.out, "north: pending")) << shown.out;
  EXPECT_EQ(Current("north", "shop").first, 1);
  // One view (point 5): the project in each data center and as a whole.
  RunResult across = At("east", {"-j", "shop", "status", "--datacenters"});
  EXPECT_EQ(across.exit_code, 4) << across.out << across.err;  // one is unknown
  EXPECT_TRUE(absl::StrContains(across.out, "project shop across data centers: converged in 2 of 2 data centers that "
                                            "have it; at different versions"))
      << across.out;
  EXPECT_TRUE(absl::StrContains(across.out, "; unknown: west (last answer")) << across.out;
  // Back: it answers, converged on its own, and north is caught up.
  StartDaemon("west");
  ASSERT_TRUE(Eventually([&] { return Rollout("east", "shop").value("state", "") == "completed"; }, absl::Seconds(60)))
      << Rollout("east", "shop").dump();
  EXPECT_EQ(Current("north", "shop").second, Current("west", "shop").second);
  EXPECT_EQ(Current("north", "shop").second, Current("east", "shop").second);
  EXPECT_EQ(RunningPerService(dcs_["north"].sim->addr())["web"], 3 + 2) << "shop 3 and fail 2 in north";
  // One timeline of the project's events in every data center.
  RunResult timeline = At("north", {"-j", "shop", "events", "--datacenters", "--limit", "200"});
  EXPECT_EQ(timeline.exit_code, 0) << timeline.err;
  for (std::string dc : {"east", "west", "north"}) {
    EXPECT_TRUE(absl::StrContains(timeline.out, "  " + dc + "  ")) << dc << "\n" << timeline.out;
  }
  EXPECT_TRUE(absl::StrContains(timeline.out, "datacenter.rollout.completed")) << timeline.out;  // east's, the origin
  across = At("north", {"-j", "shop", "status", "--datacenters"});
  EXPECT_EQ(across.exit_code, 0) << across.out << across.err;
  EXPECT_TRUE(absl::StrContains(across.out, "converged in 3 of 3 data centers that have it\n")) << across.out;

  // West's VMAPI is slow to take creates (8 s each): west's part waits, the
  // rollout with it, then completes on its own. (A VMAPI that refuses every
  // create pauses the service as a crash loop after a few tries: the rollout
  // then fails, as a failure in the second data center does above.)
  ASSERT_EQ(RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", dcs_["west"].sim->addr(), "slow", "CreateVm",
                        "4", "8000"})
                .exit_code,
            0);
  ASSERT_EQ(At("east", {"apply", "--yes", "-f", Write("shop-3.yaml", manifest("shop", 3))}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return StepState(Rollout("east", "shop"), "west") == "sent"; }, absl::Seconds(60)))
      << Rollout("east", "shop").dump();
  Pause(absl::Seconds(3));
  json held = Rollout("east", "shop");
  EXPECT_EQ(held.value("state", ""), "active") << held.dump();
  EXPECT_EQ(StepState(held, "west"), "sent") << held.dump();
  EXPECT_EQ(StepState(held, "north"), "pending") << held.dump();
  ASSERT_TRUE(Eventually([&] { return Rollout("east", "shop").value("state", "") == "completed"; }, absl::Seconds(90)))
      << Rollout("east", "shop").dump();

  // A move to another data center (point 6): copied there, followed there
  // until converged, then the source deleted here.
  RunResult moved = At("east", {"project", "move", "fail", "fail-moved", "--datacenter", "north", "--yes",
                                "--timeout", "60s"});
  EXPECT_EQ(moved.exit_code, 0) << moved.out << moved.err;
  EXPECT_TRUE(absl::StrContains(moved.out, "fail-moved converged in north")) << moved.out;
  EXPECT_TRUE(absl::StrContains(moved.out, "moved project fail to fail-moved")) << moved.out;
  EXPECT_TRUE(Eventually([&] { return At("east", {"project", "get", "fail"}).exit_code != 0; }, absl::Seconds(30)))
      << "the source is gone here: " << At("east", {"project", "get", "fail"}).out;
  RunResult there = At("north", {"-j", "fail-moved", "status"});
  EXPECT_EQ(there.exit_code, 0) << there.out << there.err;
}

}  // namespace
}  // namespace mariposa::testing
