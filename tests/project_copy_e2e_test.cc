// Copying and moving a project (issue 52, point 6) as an operator does it:
// the CLI against a real mariposad converging tritonsim. The copy runs
// beside its source with its own instances and CNS names, its changes
// applied; a move converges the copy, then removes the source; a move whose
// copy cannot converge leaves the source serving.
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

const char* kShop = R"(project: shop
services:
  web:
    image: autopilotpattern/nginx@1.4.0
    package: g4-highcpu-512M
    count: 3
    tags: {tier: front}
    start: {window: 1s}
    environment: {DB: "{{ .meta.dbhost }}"}
)";

class ProjectCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("copy");
    sim_ = std::make_unique<Tritonsim>(std::vector<std::string>{
        "--servers", "3", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "20"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    d_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/d", "--triton",
                                 sim_->addr(), "--owner", "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                                 "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms"},
        dir_ + "/d");
    ASSERT_TRUE(d_->Start()) << d_->log();
    std::ofstream(dir_ + "/shop.yaml") << kShop;
    ASSERT_EQ(Run({"project", "create", "shop"}).exit_code, 0);
    RunResult set = Run({"-j", "shop", "meta", "set", "dbhost", "db.prod"});
    ASSERT_EQ(set.exit_code, 0) << set.out << set.err;
    ASSERT_EQ(Run({"-j", "shop", "meta", "set", "--secret", "dbpass", "-"}, "hunter2").exit_code, 0);
    RunResult applied = Run({"apply", "--yes", "-f", dir_ + "/shop.yaml", "--wait", "--timeout", "60s"});
    ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err << d_->log();
  }
  RunResult Run(const std::vector<std::string>& args, const std::string& input = "") {
    return Cli(d_->addr(), args, input);
  }
  // Active VMs of a project, by name, from VMAPI: uuid -> the VM.
  std::map<std::string, json> Vms(const std::string& project) {
    RunResult got = Run({"-o", "json", "project", "get", project});
    std::map<std::string, json> out;
    if (got.exit_code != 0) return out;
    std::string uuid = json::parse(got.out)["project"].value("uuid", "");
    httplib::Client c(sim_->addr());
    auto r = c.Get(("/vms?state=active&tag.mariposa.project=" + uuid).c_str());
    if (!r || r->status != 200) return out;
    for (const json& vm : json::parse(r->body)) out[vm["uuid"].get<std::string>()] = vm;
    return out;
  }

  std::string dir_;
  std::unique_ptr<Tritonsim> sim_;
  std::unique_ptr<ServerProcess> d_;
};

TEST_F(ProjectCopyTest, ACopyRunsBesideItsSourceWithItsChanges) {
  RunResult copied = Run({"project", "copy", "shop", "shop-staging", "--set", "services.web.count=1", "--set",
                          "services.web.tags.tier=staging", "--meta", "dbhost=db.staging", "--wait", "--timeout",
                          "60s"});
  ASSERT_EQ(copied.exit_code, 0) << copied.out << copied.err << d_->log();
  EXPECT_TRUE(absl::StrContains(copied.out, "copied project shop version 1 to shop-staging")) << copied.out;
  EXPECT_TRUE(absl::StrContains(copied.out, "1 meta key, 1 secret")) << copied.out;
  EXPECT_TRUE(absl::StrContains(copied.out, "converged")) << copied.out;
  EXPECT_FALSE(absl::StrContains(copied.out + copied.err, "hunter2"));
  auto staging = Vms("shop-staging");
  auto shop = Vms("shop");
  ASSERT_EQ(staging.size(), 1u);
  EXPECT_EQ(shop.size(), 3u) << "the source is untouched";
  for (const auto& [uuid, vm] : staging) {
    EXPECT_EQ(vm["tags"].value("tier", ""), "staging");
    EXPECT_EQ(vm["tags"].value("triton.cns.services", ""), "shop-staging-web") << "its own CNS name";
    EXPECT_EQ(vm["customer_metadata"].value("DB", vm["internal_metadata"].value("DB", "")), "")
        << "environment is not metadata";
  }
  for (const auto& [uuid, vm] : shop) EXPECT_EQ(vm["tags"].value("tier", ""), "front");
  RunResult status = Run({"-j", "shop-staging", "status"});
  EXPECT_TRUE(absl::StrContains(status.out, "project shop-staging at version 1: converged")) << status.out;
  RunResult meta = Run({"-j", "shop-staging", "meta", "list"});
  EXPECT_TRUE(absl::StrContains(meta.out, "db.staging")) << meta.out;
  EXPECT_TRUE(absl::StrContains(meta.out, "<secret>")) << meta.out;
  // Copying onto a project that exists is refused, and says how to go on.
  RunResult again = Run({"project", "copy", "shop", "shop-staging"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(again.err, "exists; a copy makes a new project")) << again.err;
  EXPECT_EQ(Vms("shop-staging").size(), 1u);
}

TEST_F(ProjectCopyTest, AMoveConvergesTheCopyThenRemovesTheSource) {
  RunResult moved = Run({"project", "move", "shop", "shop2", "--yes", "--timeout", "60s"});
  ASSERT_EQ(moved.exit_code, 0) << moved.out << moved.err << d_->log();
  EXPECT_TRUE(absl::StrContains(moved.out, "moved project shop to shop2")) << moved.out;
  EXPECT_EQ(Vms("shop2").size(), 3u);
  EXPECT_TRUE(Eventually([&] { return Run({"project", "get", "shop"}).exit_code != 0; }, absl::Seconds(30)))
      << Run({"-j", "shop", "status"}).out;
  RunResult list = Run({"project", "list"});
  EXPECT_FALSE(absl::StrContains(list.out, "shop ")) << list.out;
  EXPECT_TRUE(absl::StrContains(list.out, "shop2")) << list.out;
}

TEST_F(ProjectCopyTest, AMoveWhoseCopyCannotConvergeLeavesTheSourceServing) {
  // An image tritonsim's IMGAPI does not have: the copy's apply is refused
  // before anything is made, and the source stays.
  RunResult moved = Run({"project", "move", "shop", "shop2", "--yes", "--timeout", "20s", "--set",
                         "services.web.image=nosuch@9"});
  EXPECT_NE(moved.exit_code, 0) << moved.out;
  EXPECT_TRUE(absl::StrContains(moved.err, "nosuch")) << moved.err;
  EXPECT_NE(Run({"project", "get", "shop2"}).exit_code, 0) << "nothing made";
  // A copy that is made but cannot converge (its instances fail): the move
  // waits, stops, and the source is untouched.
  ASSERT_EQ(RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "knobs", "--job-failure-rate", "1"})
                .exit_code,
            0);
  moved = Run({"project", "move", "shop", "shop3", "--yes", "--timeout", "8s"});
  EXPECT_NE(moved.exit_code, 0) << moved.out << moved.err;
  EXPECT_TRUE(absl::StrContains(moved.err, "move stopped")) << moved.err;
  EXPECT_TRUE(absl::StrContains(moved.err, "shop is untouched and still serving")) << moved.err;
  EXPECT_EQ(Run({"project", "get", "shop"}).exit_code, 0);
  EXPECT_EQ(Vms("shop").size(), 3u);
}

}  // namespace
}  // namespace mariposa::testing
