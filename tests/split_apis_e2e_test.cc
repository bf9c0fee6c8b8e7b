// One address per Triton API (issue 34): tritonsim --api-ports serves each
// API on a port of its own that answers only that API's routes; mariposad
// given each API's address (no --triton) converges a project against them,
// so every call it makes went to the right API; an API that fails is named
// by `status` with its own address; SAPI-style metadata works the same.
#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

class SplitApisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("split-apis");
    sim_ = std::make_unique<Tritonsim>(std::vector<std::string>{
        "--api-ports", "--servers", "5", "--seed", "deploy/examples/tritonsim-seed.json"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    for (const std::string& line : sim_->extra_addrs()) {
      size_t eq = line.find('=');
      if (eq != std::string::npos) api_[line.substr(0, eq)] = line.substr(eq + 1);
    }
    ASSERT_EQ(api_.size(), 9u) << "one address per API in the addr file";
    // mariposad does not call VOLAPI yet (docs/status.md): its routes are
    // checked here, but it is given to mariposad nowhere.
    volapi_ = api_["volapi"];
    api_.erase("volapi");
  }
  std::unique_ptr<ServerProcess> Mariposad(const std::vector<std::string>& api_args) {
    std::vector<std::string> argv = {"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/d",
                                     "--owner", "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                                     "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "500ms"};
    argv.insert(argv.end(), api_args.begin(), api_args.end());
    auto d = std::make_unique<ServerProcess>(argv, dir_ + "/d");
    EXPECT_TRUE(d->Start()) << d->log();
    return d;
  }
  int Status(const std::string& url, const std::string& path) {
    httplib::Client c(url);
    auto r = c.Get(path.c_str());
    return r ? r->status : -1;
  }
  bool Converged(const std::string& addr) {
    RunResult r = Cli(addr, {"-j", "jupiter", "status"});
    return r.exit_code == 0 && absl::StrContains(r.out, "project jupiter at version 1: converged");
  }

  std::string dir_;
  std::unique_ptr<Tritonsim> sim_;
  std::map<std::string, std::string> api_;  // the APIs mariposad calls
  std::string volapi_;
};

TEST_F(SplitApisTest, EachPortAnswersOnlyItsOwnApi) {
  // (API, its own route, another API's route)
  const char* routes[][3] = {{"vmapi", "/vms", "/servers"},    {"cnapi", "/servers", "/vms"},
                             {"imgapi", "/images", "/packages"}, {"papi", "/packages", "/networks"},
                             {"napi", "/networks", "/images"},   {"wfapi", "/jobs", "/vms"},
                             {"fwapi", "/rules", "/vms"},      {"volapi", "/volumes", "/rules"}};
  std::map<std::string, std::string> all = api_;
  all["volapi"] = volapi_;
  for (const auto& r : routes) {
    EXPECT_EQ(Status(all[r[0]], r[1]), 200) << r[0] << " " << r[1];
    EXPECT_EQ(Status(all[r[0]], r[2]), 404) << r[0] << " " << r[2];
  }
  EXPECT_EQ(Status(api_["vmapi"], "/rules"), 404) << "FWAPI's routes are on FWAPI's port only";
  EXPECT_EQ(Status(api_["vmapi"], "/volumes"), 404) << "VOLAPI's routes are on VOLAPI's port only";
  // mahi: /accounts without a login is mahi's 400, elsewhere no route.
  EXPECT_EQ(Status(all["mahi"], "/accounts"), 400);
  EXPECT_EQ(Status(all["mahi"], "/vms"), 404);
  EXPECT_EQ(Status(api_["vmapi"], "/accounts"), 404) << "mahi's routes are on mahi's port only";
  for (const auto& [api, url] : all) {
    EXPECT_EQ(Status(url, "/ping"), 200) << api;
    EXPECT_EQ(Status(url, "/_sim/stats"), 404) << api << ": the control API is on the main address only";
  }
}

TEST_F(SplitApisTest, ConvergesWithEachApiAtItsOwnAddressAndNamesTheOneThatFails) {
  std::vector<std::string> args;
  for (const auto& [api, url] : api_) {
    args.push_back("--" + api);
    args.push_back(url);
  }
  auto d = Mariposad(args);
  RunResult applied = Cli(d->addr(), {"apply", "--yes", "-f", "deploy/examples/jupiter.yaml"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  ASSERT_TRUE(Eventually([&] { return Converged(d->addr()); }, absl::Seconds(30))) << d->log();
  // Every create went to VMAPI's port (the others would have answered 404).
  httplib::Client c(sim_->addr());
  auto stats = nlohmann::json::parse(c.Get("/_sim/stats")->body);
  EXPECT_GE(stats["calls"].value("CreateVm", 0), 6) << stats.dump();

  // VMAPI fails (its listings, and its change feed drops and cannot come
  // back): status names it, at VMAPI's own address.
  for (std::vector<std::string> args : {std::vector<std::string>{"fail", "ListVms", "100000", "503"},
                                        {"fail", "ChangeFeeds", "100000", "503"}, {"changefeed", "drop"}}) {
    args.insert(args.begin(), {"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr()});
    RunResult failed = RunProcess(args);
    ASSERT_EQ(failed.exit_code, 0) << failed.err;
  }
  EXPECT_TRUE(Eventually(
      [&] {
        RunResult st = Cli(d->addr(), {"-j", "jupiter", "status"});
        return absl::StrContains(st.out + st.err, absl::StrCat("VMAPI is unreachable at ", api_["vmapi"]));
      },
      absl::Seconds(15)))
      << Cli(d->addr(), {"-j", "jupiter", "status"}).out;
  RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "fail", "ListVms", "0"});
  RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "fail", "ChangeFeeds", "0"});
  EXPECT_TRUE(Eventually([&] { return Converged(d->addr()); }, absl::Seconds(15))) << "not back once VMAPI answers";
}

// A core zone's SAPI metadata names each API's host; mariposad reads it.
TEST_F(SplitApisTest, SapiMetadataGivesEachApiItsAddress) {
  nlohmann::json meta = {{"datacenter_name", "coal"}};
  for (const auto& [api, url] : api_) {
    std::string key = api == "wfapi" ? "WORKFLOW_SERVICE" : absl::AsciiStrToUpper(api) + "_SERVICE";
    meta[key] = url.substr(std::string("http://").size());  // a host:port, as SAPI gives a host
  }
  WriteFile(dir_ + "/metadata.json", meta.dump());
  auto d = Mariposad({"--sapi-metadata", dir_ + "/metadata.json"});
  ASSERT_EQ(Cli(d->addr(), {"apply", "--yes", "-f", "deploy/examples/jupiter.yaml"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return Converged(d->addr()); }, absl::Seconds(30))) << d->log();
  // Some APIs named, others not: refused at start, naming what is missing.
  RunResult refused = RunProcess({"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/e",
                                  "--vmapi", api_["vmapi"], "--owner", "930896af-bf8c-48d4-885c-6573a94b1853",
                                  "--network", "aaaaaaaa-0000-4000-8000-000000000001"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(refused.err, "no address for cnapi, imgapi, napi, papi, wfapi: give --cnapi URL"))
      << refused.err;
}

}  // namespace
}  // namespace mariposa::testing
