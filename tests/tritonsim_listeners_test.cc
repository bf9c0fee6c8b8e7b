// tritonsim --listen-vms: each running VM answers on its own loopback address
// as its health says.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

// Polls until `pred` holds (listeners follow VM changes within ~100 ms).
template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 50; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }
  return false;
}

TEST(ListenersTest, VmsAnswerAsTheirHealthSays) {
  std::string tmp = TempDir("listeners");
  WriteFile(tmp + "/seed.json",
            R"({"images": [{"uuid": "11111111-1111-4111-8111-111111111111", "name": "web", "version": "1"}]})");
  Tritonsim sim({"--servers", "2", "--seed", tmp + "/seed.json", "--listen-vms"});
  ASSERT_TRUE(sim.Start()) << sim.log();
  httplib::Client api(sim.addr());
  json body = {{"owner_uuid", "930896af-bf8c-48d4-885c-6573a94b1853"}, {"brand", "lx"}, {"ram", 128},
               {"networks", {"aaaaaaaa-0000-4000-8000-000000000001"}},
               {"image_uuid", "11111111-1111-4111-8111-111111111111"}, {"tags", {{"ports", "18080,18081"}}}};
  auto r = api.Post("/vms", body.dump(), "application/json");
  ASSERT_EQ(r->status, 202);
  std::string vm = json::parse(r->body)["vm_uuid"];
  api.Get(("/jobs/" + json::parse(r->body)["job_uuid"].get<std::string>() + "/wait").c_str());
  std::string ip = json::parse(api.Get(("/vms/" + vm).c_str())->body)["nics"][0]["ip"];
  ASSERT_EQ(ip.rfind("10.", 0), 0u);
  std::string loopback = "127." + ip.substr(3);

  auto status = [&](int port) {
    httplib::Client c(loopback, port);
    c.set_connection_timeout(0, 300000);
    c.set_read_timeout(0, 500000);
    auto res = c.Get("/healthz");
    return res ? res->status : -static_cast<int>(res.error());
  };
  EXPECT_TRUE(Eventually([&] { return status(18080) == 200; }));
  EXPECT_EQ(status(18081), 200);
  auto ctl = [&](const std::string& state) {
    RunResult c = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim.addr(), "vm-health", vm, state});
    ASSERT_EQ(c.exit_code, 0) << c.err;
  };
  ctl("unhealthy");
  EXPECT_EQ(status(18080), 503);
  ctl("hang");
  EXPECT_EQ(status(18080), -static_cast<int>(httplib::Error::Read));  // accepted, never answered
  ctl("refuse");
  EXPECT_TRUE(Eventually([&] { return status(18080) == -static_cast<int>(httplib::Error::Connection); }));
  ctl("healthy");
  EXPECT_TRUE(Eventually([&] { return status(18080) == 200; }));
  // A VM that stops stops answering.
  RunResult k = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim.addr(), "kill-vm", vm});
  ASSERT_EQ(k.exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return status(18080) == -static_cast<int>(httplib::Error::Connection); }));
}

}  // namespace
}  // namespace mariposa::testing
