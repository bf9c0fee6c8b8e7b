// Joyent's own Node.js clients (sdc-clients, from npm) drive tritonsim
// unchanged: list/get/create/delete VMs, jobs, servers, agent install and
// tasks, images; and changefeed's Listener and changefeedsnoop read VMAPI's
// change feed. Needs `npm ci --prefix tests/conformance` (scripts/test.sh
// runs it); without the modules the test is skipped, saying so.
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

// The script's real (source tree) path, where its node_modules are; "" when
// the modules are not installed.
std::string Script(const std::string& name) {
  char real[PATH_MAX];
  if (realpath(("tests/conformance/" + name).c_str(), real) == nullptr) return "";
  std::string dir = std::string(real).substr(0, std::string(real).rfind('/'));
  if (access((dir + "/node_modules/sdc-clients/package.json").c_str(), R_OK) != 0) return "";
  if (access((dir + "/node_modules/changefeed/package.json").c_str(), R_OK) != 0) return "";
  return real;
}

std::string Node() {
  for (const char* candidate : {"/usr/local/bin/node", "/usr/bin/node", "/usr/bin/nodejs"}) {
    if (access(candidate, X_OK) == 0) return candidate;
  }
  return "/usr/bin/node";
}

constexpr char kNotInstalled[] =
    "sdc-clients and changefeed are not installed: run `npm ci --prefix tests/conformance` (scripts/test.sh does)";

TEST(SdcClientsConformanceTest, JoyentClientsWorkUnchanged) {
  std::string real = Script("sdc_clients_conformance.js");
  if (real.empty()) GTEST_SKIP() << kNotInstalled;
  std::string node = Node();
  std::string tmp = TempDir("conformance");
  WriteFile(tmp + "/seed.json", R"({"images": [
    {"uuid": "11111111-1111-4111-8111-111111111111", "name": "nginx", "version": "1.4.0", "os": "linux"},
    {"uuid": "22222222-2222-4222-8222-222222222222", "name": "cn-agent", "version": "2.14.1", "os": "other"}]})");
  Tritonsim sim({"--servers", "3", "--seed", tmp + "/seed.json", "--job-latency", "30"});
  ASSERT_TRUE(sim.Start()) << sim.log();
  RunResult r = RunProcess({node, real, sim.addr(), "11111111-1111-4111-8111-111111111111",
                            "22222222-2222-4222-8222-222222222222"});
  std::cout << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("46 passed, 0 failed"));
}

TEST(SdcClientsConformanceTest, ChangefeedListenerAndSnoopWorkUnchanged) {
  std::string real = Script("changefeed_conformance.js");
  if (real.empty()) GTEST_SKIP() << kNotInstalled;
  std::string tmp = TempDir("changefeed");
  WriteFile(tmp + "/seed.json", R"({"images": [
    {"uuid": "11111111-1111-4111-8111-111111111111", "name": "nginx", "version": "1.4.0", "os": "linux"}]})");
  Tritonsim sim({"--servers", "3", "--seed", tmp + "/seed.json", "--job-latency", "30"});
  ASSERT_TRUE(sim.Start()) << sim.log();
  RunResult r = RunProcess({Node(), real, sim.addr(), "11111111-1111-4111-8111-111111111111"});
  std::cout << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("20 passed, 0 failed"));
}

}  // namespace
}  // namespace mariposa::testing
