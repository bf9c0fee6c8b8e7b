// Drift, end to end (issue 48): every object Mariposa owns outside VMAPI
// and every attribute it sets on instances, changed by hand in tritonsim
// through Triton's own APIs. For each, as an operator reads it: `status`
// exits 3 (not converged) naming what changed while the put-back is held
// up (the repairing call is slowed), then the repair shows in tritonsim,
// with its event, and `status` exits 0 again. Where a repair is not safe
// (a volume deleted while mounted: its data is gone) a problem says what to
// do, and the project is converged only once the operator did it.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

constexpr char kOwner[] = "930896af-bf8c-48d4-885c-6573a94b1853";

constexpr char kManifest[] = R"(project: drift
cns: shop
fabric:
  vlan: 61
  networks:
    private: {subnet: 10.61.0.0/24, gateway: 10.61.0.1, resolvers: [8.8.8.8]}
volumes:
  data: {size: 10g, network: private}
firewall:
  web-in: {from: any, to: web, ports: [80]}
services:
  web:
    image: autopilotpattern/nginx@1.4.0
    count: 2
    networks: [external, private]
    ports: [80]
    tags: {role: frontend}
    mdata: {greeting: hello}
    start: {window: 1s}
  db:
    compute_type: lx
    image: percona@5.7.1
    networks: [private]
    volumes: [data:/var/lib/mysql]
    start: {window: 1s}
)";

class DriftTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("drift");
    sim_ = std::make_unique<Tritonsim>(std::vector<std::string>{
        "--servers", "3", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "20"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    daemon_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/data", "--triton",
                                 sim_->addr(), "--owner", kOwner, "--network", "aaaaaaaa-0000-4000-8000-000000000001",
                                 "--resync", "300ms", "--backoff-cap", "4s"},
        dir_ + "/data");
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
    c_ = std::make_unique<httplib::Client>(sim_->addr());
  }
  RunResult M(const std::vector<std::string>& args) { return Cli(daemon_->addr(), args); }
  json Get(const std::string& path) { return json::parse(c_->Get(path)->body); }
  // The next `n` calls of `op` wait `ms` before they answer (tritonsim's `ctl slow`).
  void Slow(const std::string& op, int n, int ms) {
    ASSERT_EQ(c_->Post("/_sim/fail", json{{"op", op}, {"count", n}, {"hang_ms", ms}}.dump(), "application/json")->status,
              200);
  }
  std::string FirstVm(const std::string& service) {
    json vms = Get("/vms?state=running&tag.mariposa.service=" + service);
    return vms.empty() ? "" : vms[0]["uuid"].get<std::string>();
  }
  std::string NetworkUuid() {
    for (const auto& n : Get(std::string("/networks?fabric=true&provisionable_by=") + kOwner)) {
      if (n["name"] == "drift-private") return n["uuid"];
    }
    return "";
  }
  bool Converged() { return M({"-j", "drift", "status"}).exit_code == 0; }

  std::string dir_;
  std::unique_ptr<Tritonsim> sim_;
  std::unique_ptr<ServerProcess> daemon_;
  std::unique_ptr<httplib::Client> c_;
};

TEST_F(DriftTest, EachChangeByHandIsNamedThenPutBack) {
  WriteFile(dir_ + "/drift.yaml", kManifest);
  RunResult applied = M({"apply", "-f", dir_ + "/drift.yaml", "--yes"});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  ASSERT_TRUE(Eventually([&] { return Converged(); }, absl::Seconds(60)))
      << M({"-j", "drift", "status"}).out << daemon_->log();
  const std::string web = FirstVm("web");
  ASSERT_FALSE(web.empty());
  const json made = Get("/vms/" + web);
  ASSERT_TRUE(made["tags"].contains("mariposa.made")) << made.dump();
  auto update = [&](const json& body) {
    return c_->Post("/vms/" + web + "?action=update", body.dump(), "application/json")->status == 202;
  };
  struct Case {
    std::string name;
    std::string slowed;                   // the op the put-back uses (held up 2.5 s)
    int calls;                            // its calls to hold up: 2 when the edit uses it too
    std::function<bool()> edit;           // the change by hand; false: it was refused
    std::string named;                    // what `status` says meanwhile
    std::function<bool()> put_back;       // tritonsim shows it repaired
    std::string event;                    // the event of the repair
  };
  const std::vector<Case> cases = {
      {"instance metadata", "VmAction", 2, [&] { return update({{"customer_metadata", {{"greeting", "pwned"}}}}); },
       "(metadata) was changed in VMAPI by hand",
       [&] { return Get("/vms/" + web)["customer_metadata"].value("greeting", "") == "hello"; }, "instance.put-back"},
      {"instance package (resized)", "VmAction", 2, [&] { return update({{"ram", 4096}}); },
       "(package) was changed in VMAPI by hand",
       [&] { return Get("/vms/" + web)["ram"] == made["ram"]; }, "instance.put-back"},
      {"instance tag", "VmAction", 1,
       [&] {
         return c_->Post("/vms/" + web + "/tags", json{{"role", "backdoor"}}.dump(), "application/json")->status == 202;
       },
       "(tags) was changed in VMAPI by hand",
       [&] { return Get("/vms/" + web)["tags"].value("role", "") == "frontend"; }, "instance.put-back"},
      {"instance CNS names", "VmTags", 2,
       [&] { return c_->Delete("/vms/" + web + "/tags/triton.cns.services")->status == 202; },
       "(cns-names",
       [&] { return Get("/vms/" + web)["tags"].value("triton.cns.services", "") == "shop-web"; }, "instance.cns-names"},
      {"instance firewall_enabled", "VmAction", 2, [&] { return update({{"firewall_enabled", false}}); }, "(firewall",
       [&] { return Get("/vms/" + web)["firewall_enabled"] == true; }, "instance.firewall"},
      {"FWAPI rule", "UpdateRule", 2,
       [&] {
         for (const auto& r : Get(std::string("/rules?owner_uuid=") + kOwner)) {
           json edited = r;
           edited["rule"] = "FROM any TO all vms ALLOW tcp PORT 22";
           return c_->Put("/rules/" + r["uuid"].get<std::string>(), edited.dump(), "application/json")->status == 202;
         }
         return false;
       },
       "was changed in FWAPI by hand: rule",
       [&] {
         for (const auto& r : Get(std::string("/rules?owner_uuid=") + kOwner)) {
           if (absl::StrContains(r["rule"].get<std::string>(), "PORT 22")) return false;
         }
         return true;
       },
       "firewall.rule-updated"},
      {"NAPI resolvers", "UpdateNetwork", 2,
       [&] {
         return c_->Put("/networks/" + NetworkUuid(), json{{"resolvers", {"1.1.1.1"}}}.dump(), "application/json")
                    ->status == 200;
       },
       "was changed in NAPI by hand: resolvers 1.1.1.1 instead of 8.8.8.8",
       [&] { return Get("/networks/" + NetworkUuid())["resolvers"] == json::array({"8.8.8.8"}); },
       "fabric.network-updated"},
      {"NAPI network renamed", "UpdateNetwork", 2,
       [&] {
         return c_->Put("/networks/" + NetworkUuid(), json{{"name", "stolen"}}.dump(), "application/json")->status == 200;
       },
       "name stolen instead of drift-private", [&] { return !NetworkUuid().empty(); }, "fabric.network-updated"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(Converged()) << M({"-j", "drift", "status"}).out;
    int events_before = 0;
    for (const auto& line : absl::StrSplit(M({"-j", "drift", "events", "--kind", c.event}).out, '\n')) {
      events_before += absl::StrContains(line, c.event);
    }
    // The name of the network is needed after it is renamed.
    const std::string net = NetworkUuid();
    Slow(c.slowed, c.calls, 2500);
    ASSERT_TRUE(c.edit());
    RunResult during;
    ASSERT_TRUE(Eventually(
        [&] {
          during = M({"-j", "drift", "status"});
          return during.exit_code == 3 && absl::StrContains(during.out, c.named);
        },
        absl::Seconds(15)))  // the feed does not carry ram: the digest (--audit 10s) finds it
        << "status did not say so: exit " << during.exit_code << "\n" << during.out;
    ASSERT_TRUE(Eventually(c.put_back, absl::Seconds(20))) << M({"-j", "drift", "status"}).out;
    ASSERT_TRUE(Eventually([&] { return Converged(); }, absl::Seconds(20))) << M({"-j", "drift", "status"}).out;
    int events_after = 0;
    std::string events = M({"-j", "drift", "events", "--kind", c.event}).out;
    for (const auto& line : absl::StrSplit(events, '\n')) events_after += absl::StrContains(line, c.event);
    EXPECT_EQ(events_after, events_before + 1) << events << M({"-j", "drift", "events"}).out;
    (void)net;
  }
  // Nothing was replaced to put it back: the same instance, its own values.
  EXPECT_EQ(FirstVm("web").empty(), false);
  json after = Get("/vms/" + web);
  EXPECT_EQ(after["state"], "running");
  EXPECT_EQ(after["tags"]["mariposa.made"], made["tags"]["mariposa.made"]);
}

// A volume deleted by hand while an instance mounts it: its data is gone.
// Mariposa makes it again (empty) and says so, and the project stays not
// converged, with a problem saying what to do, until the instances that
// mounted the lost copy are replaced.
TEST_F(DriftTest, AVolumeDeletedWhileMountedIsALossNotAQuietRecreate) {
  WriteFile(dir_ + "/drift.yaml", kManifest);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/drift.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Converged(); }, absl::Seconds(60))) << M({"-j", "drift", "status"}).out;
  json vols = Get(std::string("/volumes?owner_uuid=") + kOwner);
  ASSERT_EQ(vols.size(), 1u);
  const std::string first = vols[0]["uuid"];
  const std::string db = FirstVm("db");
  ASSERT_EQ(c_->Delete("/volumes/" + first + "?force=true")->status / 100, 2);
  RunResult status;
  ASSERT_TRUE(Eventually(
      [&] {
        status = M({"-j", "drift", "status"});
        return status.exit_code == 3 && absl::StrContains(status.out, "was deleted outside Mariposa while drift-db-1");
      },
      absl::Seconds(10)))
      << status.exit_code << "\n" << status.out;
  EXPECT_TRUE(absl::StrContains(status.out, "reprovision --service db")) << status.out;
  // Made again, empty, and said so; still not converged: drift-db-1 mounts
  // the copy that is gone.
  ASSERT_TRUE(Eventually(
      [&] {
        json v = Get(std::string("/volumes?owner_uuid=") + kOwner);
        return v.size() == 1 && v[0]["uuid"] != first && v[0]["state"] == "ready";
      },
      absl::Seconds(20)));
  std::string events = M({"-j", "drift", "events", "--kind", "volume."}).out;
  EXPECT_TRUE(absl::StrContains(events, "made again, empty; the earlier one was deleted outside Mariposa while "
                                        "drift-db-1 mounted it"))
      << events;
  std::this_thread::sleep_for(std::chrono::seconds(2));  // several syncs
  status = M({"-j", "drift", "status"});
  EXPECT_EQ(status.exit_code, 3) << status.out;
  EXPECT_TRUE(absl::StrContains(status.out, "lost: 1 instance mounts a copy deleted outside Mariposa")) << status.out;
  EXPECT_EQ(FirstVm("db"), db) << "not replaced without the operator";
  // The operator's fix, as the problem says.
  RunResult fix = M({"-j", "drift", "reprovision", "--service", "db", "--wait", "--timeout", "60s"});
  EXPECT_EQ(fix.exit_code, 0) << fix.out << fix.err;
  ASSERT_TRUE(Eventually([&] { return Converged(); }, absl::Seconds(30))) << M({"-j", "drift", "status"}).out;
  EXPECT_NE(FirstVm("db"), db);
}

}  // namespace
}  // namespace mariposa::testing
