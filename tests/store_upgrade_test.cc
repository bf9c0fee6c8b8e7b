// Upgrades (issue 48, 11): stores written by earlier releases of mariposad,
// kept in tests/fixtures/stores (scripts/make_store_fixtures.sh made each
// with the commit named in its COMMIT file, by running that commit's own
// demo). Today's mariposad must open each (migrating its schema), keep every
// stored version readable, and converge every project against a fresh
// tritonsim, as an operator upgrading in place would expect; the project
// whose volume names no network (which those releases stored with a
// warning) gets it on the account's default fabric network.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

constexpr char kFixtures[] = "tests/fixtures/stores";
constexpr char kOwner[] = "930896af-bf8c-48d4-885c-6573a94b1853";
constexpr char kAdminOwner[] = "a5a0b0c3-1d2e-4f60-8a7b-9c0d1e2f3a4b";

std::vector<std::string> Fixtures() {
  std::vector<std::string> out;
  if (DIR* d = opendir(kFixtures)) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      struct stat st;
      std::string path = absl::StrCat(kFixtures, "/", name);
      if (name.rfind("schema-", 0) == 0 && stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.push_back(name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t Number(const json& j) { return j.is_string() ? std::stoll(j.get<std::string>()) : j.get<int64_t>(); }

class StoreUpgradeTest : public ::testing::TestWithParam<std::string> {};

TEST(StoreUpgradeFixturesTest, EveryEarlierSchemaHasAStore) {
  // Schemas 2 to 12, and 13 before volumes were a manifest key (schema 1
  // was never released: the store's first commit made schema 2).
  std::vector<std::string> want;
  for (int s = 2; s <= 13; ++s) want.push_back(absl::StrCat("schema-", s));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(Fixtures(), want);
}

TEST_P(StoreUpgradeTest, StartsMigratesKeepsItsVersionsAndConverges) {
  const std::string fixture = absl::StrCat(kFixtures, "/", GetParam());
  const std::string dir = TempDir("upgrade-" + GetParam());
  ASSERT_EQ(RunProcess({"/bin/cp", "-rL", fixture, dir + "/data"}).exit_code, 0);
  ASSERT_EQ(RunProcess({"/bin/chmod", "-R", "u+w,go-rwx", dir + "/data"}).exit_code, 0);
  Tritonsim sim({"--servers", "8", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "20"});
  ASSERT_TRUE(sim.Start()) << sim.log();
  ServerProcess daemon({"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir + "/data", "--triton",
                        sim.addr(), "--owner", kOwner, "--network", "aaaaaaaa-0000-4000-8000-000000000001", "--resync",
                        "300ms", "--image-source", sim.addr() + "/updates", "--admin-owner", kAdminOwner},
                       dir + "/data");
  ASSERT_TRUE(daemon.Start()) << "mariposad did not start on the store of " << ReadFile(fixture + "/COMMIT")
                              << daemon.log();
  auto m = [&](const std::vector<std::string>& args) { return Cli(daemon.addr(), args); };

  // Migrated to today's schema.
  RunResult admin = m({"admin", "status"});
  ASSERT_EQ(admin.exit_code, 0) << admin.err;
  EXPECT_NE(admin.out.find("(schema 14)"), std::string::npos) << admin.out;

  // Every project, and every stored version of each, readable.
  RunResult list = m({"-o", "json", "project", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::vector<std::string> projects;
  for (const json& p : json::parse(list.out).value("projects", json::array())) projects.push_back(p["name"]);
  ASSERT_FALSE(projects.empty()) << list.out;
  EXPECT_NE(std::find(projects.begin(), projects.end(), "jupiter"), projects.end()) << list.out;
  for (const std::string& p : projects) {
    RunResult versions = m({"-j", p, "-o", "json", "versions"});
    ASSERT_EQ(versions.exit_code, 0) << p << ": " << versions.err;
    json vs = json::parse(versions.out).value("versions", json::array());
    ASSERT_FALSE(vs.empty()) << p;
    for (const json& v : vs) {
      std::string n = absl::StrCat(Number(v["number"]));
      RunResult got = m({"-j", p, "version", "get", n, "--manifest"});
      ASSERT_EQ(got.exit_code, 0) << p << " version " << n << ": " << got.err;
      EXPECT_NE(got.out.find("services"), std::string::npos) << p << " version " << n << ": " << got.out;
      // Today's parser reads what was stored: a diff against it is 0 (no
      // change) or 1 (changes), never a refusal.
      WriteFile(dir + "/v.yaml", got.out);
      RunResult diff = m({"-j", p, "diff", "-f", dir + "/v.yaml"});
      EXPECT_TRUE(diff.exit_code == 0 || diff.exit_code == 1)
          << p << " version " << n << " (exit " << diff.exit_code << "): " << diff.out << diff.err;
    }
  }

  // Every project converges on the fresh data center.
  for (const std::string& p : projects) {
    EXPECT_TRUE(Eventually([&] { return m({"-j", p, "status"}).exit_code == 0; }, absl::Seconds(150)))
        << p << ":\n" << m({"-j", p, "status"}).out << daemon.log();
  }

  // The volume an earlier release stored without a network: made on the
  // account's default fabric network (my-fabric-network in tritonsim).
  if (std::find(projects.begin(), projects.end(), "uploads") != projects.end()) {
    httplib::Client c(sim.addr());
    auto r = c.Get(absl::StrCat("/volumes?owner_uuid=", kOwner, "&name=uploads.uploads"));
    ASSERT_TRUE(r && r->status == 200);
    json vols = json::parse(r->body);
    ASSERT_EQ(vols.size(), 1u) << r->body;
    EXPECT_EQ(vols[0]["networks"], json::array({"aaaaaaaa-0000-4000-8000-000000000003"})) << r->body;
    RunResult status = m({"-j", "uploads", "status"});
    EXPECT_NE(status.out.find("my-fabric-network (the account's default)"), std::string::npos) << status.out;
  }
  EXPECT_EQ(daemon.Stop(), 0) << daemon.log();
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StoreUpgradeTest, ::testing::ValuesIn(Fixtures()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace mariposa::testing
