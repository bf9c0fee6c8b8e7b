// End to end, Triton's own core as managed services (issue 12): tritonsim
// with 20 servers and its "updates" image source, mariposad with
// --image-source, and the CLI as an operator runs it.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <thread>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

constexpr char kCore[] = R"(project: core
services:
  cn-agent:
    compute_type: agent
    image: cn-agent@2.14.1
    servers: {select: all, exclude: [headnode]}
    update: {rolling: 8}
    restart: {max_attempts: 2}
  vm-agent:
    compute_type: agent
    image: vm-agent@1.9.0
    servers: {select: all}
    update: {rolling: 8}
    restart: {max_attempts: 2}
)";

// The seed's admin account, owner of its core zones (imgapi0, moray0 …).
constexpr char kAdmin[] = "a5a0b0c3-1d2e-4f60-8a7b-9c0d1e2f3a4b";

class TritonCoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("core");
    sim_ = std::make_unique<Tritonsim>(std::vector<std::string>{
        "--servers", "20", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "20", "--listen-vms"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    daemon_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/data", "--triton",
                                 sim_->addr(), "--owner", "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                                 "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms", "--image-source",
                                 sim_->addr() + "/updates", "--admin-owner", kAdmin, "--embedded-health",
                                 "--health-loopback"},
        dir_ + "/data");
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  }
  RunResult M(const std::vector<std::string>& args) { return Cli(daemon_->addr(), args); }
  RunResult Apply(const std::string& text, std::vector<std::string> extra = {}) {
    WriteFile(dir_ + "/m.yaml", text);
    std::vector<std::string> args = {"apply", "-f", dir_ + "/m.yaml", "--yes"};
    args.insert(args.end(), extra.begin(), extra.end());
    return M(args);
  }
  // hostname -> agent name -> version, from CNAPI.
  std::map<std::string, std::map<std::string, std::string>> Agents() {
    httplib::Client c(sim_->addr());
    std::map<std::string, std::map<std::string, std::string>> out;
    for (const auto& s : json::parse(c.Get("/servers?extras=agents")->body)) {
      auto& m = out[s["hostname"].get<std::string>()];
      for (const auto& a : s["agents"]) m[a["name"].get<std::string>()] = a["version"].get<std::string>();
    }
    return out;
  }
  RunResult Ctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv);
  }
  // Polls `status -j core` (up to 30 s) until it contains `text`.
  std::string StatusWith(const std::string& text, bool verbose = false) {
    std::string out;
    for (int i = 0; i < 300; ++i) {
      out = verbose ? M({"-j", "core", "status", "-v"}).out : M({"-j", "core", "status"}).out;
      if (out.find(text) != std::string::npos) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "status never said \"" << text << "\":\n" << out << daemon_->log();
    return out;
  }

  // The zones of a core role in VMAPI: alias -> image uuid.
  std::map<std::string, std::string> CoreZones(const std::string& role) {
    httplib::Client c(sim_->addr());
    std::map<std::string, std::string> out;
    auto r = c.Get(("/vms?state=active&owner_uuid=" + std::string(kAdmin) + "&tag.smartdc_role=" + role).c_str());
    if (!r) return out;
    for (const auto& v : json::parse(r->body)) out[v["alias"].get<std::string>()] = v["image_uuid"].get<std::string>();
    return out;
  }

  std::string dir_;
  std::unique_ptr<Tritonsim> sim_;
  std::unique_ptr<ServerProcess> daemon_;
};

// A cn-agent update alone, to an image only in the source: planned in
// sdcadm's shape, imported inside the task, installed on the selected
// servers; vm-agent and the excluded headnode are left as they were. Then a
// downgrade is refused, and done with --force.
TEST_F(TritonCoreTest, UpdateFromTheSourceThenDowngradeRefusedThenForced) {
  auto r = Apply(kCore, {"--wait", "--timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << daemon_->log();
  EXPECT_THAT(r.out, HasSubstr("create \"cn-agent\" service (19 instances) of image 0b3f3c1e (cn-agent@2.14.1):\n"
                               "    19 instances will be updated from image cn-agent@2.13.0\n"));
  auto before = Agents();

  std::string v2 = absl::StrReplaceAll(kCore, {{"cn-agent@2.14.1", "cn-agent@2.15.0"}});
  WriteFile(dir_ + "/v2.yaml", v2);
  auto plan = M({"diff", "-f", dir_ + "/v2.yaml"});
  EXPECT_THAT(plan.out, HasSubstr("update \"cn-agent\" service (19 instances) to image e9c4b1a0 (cn-agent@2.15.0):\n"
                                  "    19 instances will be updated from image 0b3f3c1e (cn-agent@2.14.1)\n"));
  EXPECT_THAT(plan.out, HasSubstr("download 1 image (31 MiB):\n    image e9c4b1a0 (cn-agent@2.15.0) (31 MiB) from "));
  r = Apply(v2, {"--wait", "--timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << daemon_->log();
  EXPECT_THAT(r.out, HasSubstr("importing image cn-agent@2.15.0"));
  std::string events = M({"-j", "core", "events", "--all"}).out;
  EXPECT_THAT(events, HasSubstr("image.imported"));
  auto after = Agents();
  for (const auto& kv : after) {
    EXPECT_EQ(kv.second.at("cn-agent"), kv.first == "headnode" ? "2.13.0" : "2.15.0") << kv.first;
    EXPECT_EQ(kv.second.at("vm-agent"), before[kv.first].at("vm-agent")) << kv.first;
    EXPECT_EQ(kv.second.at("gz-tools"), "3.0.0") << "untouched: " << kv.first;
  }

  // Back to 2.14.1: a downgrade, refused and nothing changed ...
  r = Apply(kCore);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("19 instances would be downgraded from image e9c4b1a0 (cn-agent@2.15.0): refused "
                               "without --force"));
  EXPECT_THAT(r.err, HasSubstr("this is a downgrade: \"cn-agent\": 19 servers run a newer version (cn-agent@2.15.0) "
                               "than cn-agent@2.14.1; nothing was changed"));
  EXPECT_THAT(M({"-j", "core", "versions"}).out, ::testing::Not(HasSubstr("\n3 ")));
  // ... then forced.
  r = Apply(kCore, {"--force", "--wait", "--timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("19 instances forced downgrade from image e9c4b1a0 (cn-agent@2.15.0)"));
  for (const auto& kv : Agents()) EXPECT_EQ(kv.second.at("cn-agent"), kv.first == "headnode" ? "2.13.0" : "2.14.1");
}

TEST_F(TritonCoreTest, AnImageFoundNowhereIsRefusedNamingTheNearestVersions) {
  auto r = Apply(absl::StrReplaceAll(kCore, {{"vm-agent@1.9.0", "vm-agent@1.11.0"}}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("services.vm-agent.image: image vm-agent@1.11.0 is not in IMGAPI or in the image "
                               "source "));
  EXPECT_THAT(r.err, HasSubstr("nearest versions: 1.10.0, 1.9.0"));
  EXPECT_THAT(M({"project", "list"}).out, ::testing::Not(HasSubstr("core")));
  // avail and changes read the source.
  ASSERT_EQ(Apply(kCore, {"--wait", "--timeout", "60s"}).exit_code, 0);
  r = M({"-j", "core", "image", "avail"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("cn-agent +cn-agent@2\\.14\\.1 +2\\.15\\.0 "));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("2.16.0")));  // the dev channel is not followed
  r = M({"image", "changes", "cn-agent", "2.14.1", "2.15.0"});
  EXPECT_THAT(r.out, HasSubstr("TRITON-2342 cn-agent retries a lost task callback"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("TRITON-2301")));  // 2.14.1's own changes are not after it
}

// An install failing everywhere is retried with backoff, then each server is
// skipped after restart.max_attempts failures: named in status -v, in the
// verdict, by `core check` (exit 1) and in the task, which fails.
TEST_F(TritonCoreTest, FailingInstallsAreRetriedThenSkippedAndNamed) {
  ASSERT_EQ(Apply(kCore, {"--wait", "--timeout", "60s"}).exit_code, 0);
  ASSERT_EQ(Ctl({"knobs", "--job-failure-rate", "1"}).exit_code, 0);
  ASSERT_EQ(M({"image", "import", "vm-agent@1.10.0"}).exit_code, 1);  // the import job fails too
  ASSERT_EQ(Ctl({"knobs", "--job-failure-rate", "0"}).exit_code, 0);
  ASSERT_EQ(M({"image", "import", "vm-agent@1.10.0"}).exit_code, 0);
  ASSERT_EQ(Ctl({"knobs", "--job-failure-rate", "1"}).exit_code, 0);
  ASSERT_EQ(Apply(absl::StrReplaceAll(kCore, {{"vm-agent@1.9.0", "vm-agent@1.10.0"}})).exit_code, 0);
  std::string status = StatusWith("20 servers skipped after 2 failed installs");
  EXPECT_THAT(status, ::testing::ContainsRegex("vm-agent +failed +20 +0 .* installs: cn1, cn10, cn11, "));
  EXPECT_THAT(status, HasSubstr("simulated agent install failure"));
  std::string verbose = M({"-j", "core", "status", "-v"}).out;
  EXPECT_THAT(verbose, ::testing::ContainsRegex("vm-agent +headnode +[0-9a-f-]+ +1\\.9\\.0 +0b3f3c1e +skipped"));
  EXPECT_THAT(verbose, ::testing::ContainsRegex("vm-agent +cn7 +[0-9a-f-]+ +1\\.9\\.0 +0b3f3c1e +skipped +simulated"));
  auto check = M({"-j", "core", "core", "check"});
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_THAT(check.out, HasSubstr("20 drifts"));
  std::string tasks = M({"-j", "core", "-o", "json", "queue", "list"}).out;
  EXPECT_THAT(tasks, HasSubstr("20 servers skipped after 2 failed installs each"));
  EXPECT_THAT(tasks, HasSubstr("\"state\": \"failed\""));
  // Fixed, a user's reprovision tries them again.
  ASSERT_EQ(Ctl({"knobs", "--job-failure-rate", "0"}).exit_code, 0);
  ASSERT_EQ(M({"-j", "core", "reprovision", "--service", "vm-agent"}).exit_code, 0);
  StatusWith("20/20 servers at 1.10.0");
  EXPECT_EQ(M({"-j", "core", "core", "check"}).exit_code, 0);
}

// Removing an agent service uninstalls it everywhere; a server deleted
// from CNAPI drops out without an error.
TEST_F(TritonCoreTest, RemovedAgentIsUninstalledAndADeletedServerDropsOut) {
  ASSERT_EQ(Apply(kCore, {"--wait", "--timeout", "60s"}).exit_code, 0);
  std::string only_cn = kCore;
  only_cn = only_cn.substr(0, only_cn.find("  vm-agent:"));
  auto r = Apply(only_cn, {"--wait", "--timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << daemon_->log();
  for (const auto& kv : Agents()) EXPECT_EQ(kv.second.count("vm-agent"), 0u) << kv.first << " still has vm-agent";
  EXPECT_THAT(M({"-j", "core", "events", "--all"}).out, HasSubstr("agent.uninstalled"));
  ASSERT_EQ(Ctl({"server-delete", "cn3"}).exit_code, 0);
  std::string status = StatusWith("18/18 servers at 2.14.1");
  EXPECT_THAT(status, HasSubstr("converged"));
  EXPECT_THAT(status, ::testing::Not(HasSubstr("Error:")));
  // Deleting the project uninstalls its agents from the servers it managed
  // (the headnode, excluded, keeps its own cn-agent), then it goes.
  r = M({"project", "delete", "core", "--yes"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("agent services (cn-agent) installed on its servers"));
  ASSERT_EQ(M({"project", "delete", "core", "--force", "--yes"}).exit_code, 0);
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    gone = M({"project", "get", "core"}).exit_code != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(gone) << daemon_->log();
  for (const auto& kv : Agents()) {
    EXPECT_EQ(kv.second.count("cn-agent"), kv.first == "headnode" ? 1u : 0u) << kv.first;
  }
}

// sdcadm's forced same-image update: `apply --force` of an unchanged
// manifest reinstalls every agent on every selected server once.
TEST_F(TritonCoreTest, ForcedNoOpUpdateReinstallsEveryAgent) {
  ASSERT_EQ(Apply(kCore, {"--wait", "--timeout", "60s"}).exit_code, 0);
  auto installs = [&] {
    std::string events = M({"-j", "core", "events", "--limit", "100000"}).out;
    int n = 0;
    for (size_t at = 0; (at = events.find("agent.install ", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  int first = installs();
  auto r = Apply(kCore);
  EXPECT_THAT(r.out, HasSubstr("no changes"));
  EXPECT_EQ(installs(), first) << "a plain no-op changes nothing";
  r = Apply(kCore, {"--force", "--wait", "--timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << daemon_->log();
  EXPECT_THAT(r.out, HasSubstr("queued reprovision task"));
  EXPECT_THAT(r.out, HasSubstr("reinstalling"));
  // cn-agent on 19 servers (headnode excluded) and vm-agent on 20.
  EXPECT_EQ(installs() - first, 39) << r.out;
  // The timeline: the version, its rollouts, the forced reinstall.
  std::string history = M({"-j", "core", "history"}).out;
  EXPECT_THAT(history, HasSubstr("version 1: apply (2 services"));
  EXPECT_THAT(history, HasSubstr("reprovision cn-agent (apply) for version 1"));
  EXPECT_THAT(history, HasSubstr("completed +19"));
  EXPECT_THAT(history, HasSubstr("reprovision the project (reprovision) for version 1"));
  EXPECT_THAT(history, HasSubstr("completed +39"));
  EXPECT_LT(history.find("version 1: apply"), history.find("completed +39"));
}

// RFD 109: an image created from a prototype instance (its steps in order:
// stopped, snapshotted, the operator script before its services, imaged,
// rolled back, running again), then used by a manifest and rolled out.
TEST_F(TritonCoreTest, ImageCreatedFromAPrototypeIsRolledOut) {
  std::string web = R"(project: blog
services:
  web:
    compute_type: docker
    image: autopilotpattern/wordpress@1.3.0
    count: 2
    start: {window: 100ms}
)";
  ASSERT_EQ(Apply(web, {"--wait", "--timeout", "60s"}).exit_code, 0);
  httplib::Client c(sim_->addr());
  json vms = json::parse(c.Get("/vms?state=running&tag.mariposa.service=web")->body);
  ASSERT_EQ(vms.size(), 2u);
  std::string proto = vms[0]["uuid"];
  ASSERT_EQ(Ctl({"write-file", proto, "/etc/wordpress/theme", "golden"}).exit_code, 0);
  WriteFile(dir_ + "/prep.sh", "rm -f /var/log/*\n");
  auto r = M({"image", "create", "--from", proto, "--name", "wordpress-golden", "--version", "1.0.0", "--prepare",
              dir_ + "/prep.sh"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> order = {"stop:", "snapshot:", "boot:", "operator-script:", "services:", "create-image:",
                                    "rollback:", "start:"};
  size_t at = 0;
  for (const std::string& step : order) {
    size_t next = r.out.find("  " + step, at);
    ASSERT_NE(next, std::string::npos) << step << " missing or out of order in:\n" << r.out;
    at = next;
  }
  EXPECT_THAT(r.out, HasSubstr("the operator's script (17 bytes) before the instance's services"));
  EXPECT_EQ(json::parse(c.Get("/vms/" + proto)->body)["state"], "running");
  auto v2 = Apply(absl::StrReplaceAll(web, {{"autopilotpattern/wordpress@1.3.0", "wordpress-golden@1.0.0"}}),
                  {"--wait", "--timeout", "60s"});
  ASSERT_EQ(v2.exit_code, 0) << v2.out << v2.err << daemon_->log();
  json now = json::parse(c.Get("/vms?state=running&tag.mariposa.service=web")->body);
  ASSERT_EQ(now.size(), 2u);
  for (const auto& vm : now) {
    json files = json::parse(c.Get("/_sim/vms/" + vm["uuid"].get<std::string>() + "/files")->body);
    EXPECT_EQ(files["files"]["/etc/wordpress/theme"], "golden") << files.dump();
  }
}

// Core zones as sdcadm updates them: the headnode's moray0..2 and imgapi0
// (admin-owned, tagged smartdc_role) are adopted, none created beside them;
// a new moray image is rolled out by reprovision, one zone at a time, each
// gated on its health checks, the delegate dataset kept; imgapi's new image
// is imported from the source first. Removing a core service or deleting the
// project is refused.
constexpr char kCoreZones[] = R"(project: tcore
services:
  imgapi:
    compute_type: core
    image: imgapi@2026.10.1
    package: g4-highcpu-1G
    start: {window: 1s}
  moray:
    compute_type: core
    image: moray@2026.10.1
    package: g4-highcpu-1G
    count: 3
    ports: [2020]
    update: {min_healthy_time: 2s}
    # The grace after a reprovision: a zone's service is not listening the
    # moment VMAPI says it runs (a probe in that gap failed the rollout at
    # once, about one run in ten, before the zone ever passed).
    start: {window: 2s}
    healthchecks:
      ping: {type: http, port: 2020, path: /ping, interval: 200ms, timeout: 150ms, retries: 2}
)";

TEST_F(TritonCoreTest, CoreZonesAreAdoptedAndReprovisionedOneAtATimeGatedOnHealth) {
  const std::string kOld = "f6c0e206-4d5e-4f60-8a7b-000000000206", kNew = "07c0e207-4d5e-4f60-8a7b-000000000207";
  const std::string moray0 = "d0c0e000-0000-4000-8000-000000000010";
  std::map<std::string, std::string> before = CoreZones("moray");
  ASSERT_EQ(before.size(), 3u);
  WriteFile(dir_ + "/m.yaml", kCoreZones);
  auto plan = M({"diff", "-f", dir_ + "/m.yaml"});
  EXPECT_THAT(plan.out, HasSubstr("create \"moray\" service (3 instances) of image f6c0e206 (moray@2026.10.1):\n"
                                  "    3 instances already at image f6c0e206"))
      << plan.out << plan.err;
  auto r = Apply(kCoreZones, {"--wait", "--timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << daemon_->log();
  EXPECT_EQ(CoreZones("moray"), before) << "no zone created or changed";
  EXPECT_EQ(CoreZones("imgapi").size(), 1u);
  std::string events = M({"-j", "tcore", "events", "--all"}).out;
  const std::string adopted = "moray0 (smartdc_role=moray, image f6c0e206) is now an instance of moray; it runs the goal image";
  ASSERT_THAT(events, HasSubstr(adopted));
  EXPECT_EQ(events.find(adopted), events.rfind(adopted)) << "announced once:\n" << events;
  ASSERT_EQ(Ctl({"write-file", moray0, "/zones/" + moray0 + "/data/moray.db", "rows"}).exit_code, 0);
  ASSERT_EQ(Ctl({"write-file", moray0, "/etc/old-root", "x"}).exit_code, 0);

  // moray@2026.11.15: planned in sdcadm's shape, then reprovisioned.
  std::string v2 = kCoreZones;
  v2.replace(v2.find("moray@2026.10.1"), 15, "moray@2026.11.15");
  r = Apply(v2);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("update \"moray\" service (3 instances) to image 07c0e207 (moray@2026.11.15):\n"
                               "    3 instances will be updated from image f6c0e206 (moray@2026.10.1)"));
  // The first zone on the new image is made unhealthy at once: the rollout
  // stops there, naming it (the others keep the old image); once it is
  // healthy again, `reprovision --service` finishes the update.
  std::string first;
  for (int i = 0; i < 300 && first.empty(); ++i) {
    for (const auto& kv : CoreZones("moray")) {
      if (kv.second == kNew) first = kv.first;
    }
    if (first.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(first.empty()) << "no zone was reprovisioned\n" << daemon_->log();
  httplib::Client c(sim_->addr());
  std::string first_uuid =
      json::parse(c.Get(("/vms?alias=" + first + "&tag.smartdc_role=moray").c_str())->body)[0]["uuid"];
  ASSERT_EQ(Ctl({"vm-health", first_uuid, "unhealthy"}).exit_code, 0);
  auto wait_status = [&](const std::string& text) {
    std::string out;
    for (int i = 0; i < 600; ++i) {
      out = M({"-j", "tcore", "status"}).out;
      if (out.find(text) != std::string::npos) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "status never said \"" << text << "\":\n" << out << daemon_->log();
    return out;
  };
  wait_status("1 broken instance is not replaced (restart.condition: never)");
  EXPECT_THAT(M({"-j", "tcore", "events", "--all"}).out,
              HasSubstr(first + " of moray fails its health checks since it was reprovisioned onto moray@2026.11.15"));
  int on_new = 0;
  for (const auto& kv : CoreZones("moray")) on_new += kv.second == kNew;
  EXPECT_EQ(on_new, 1) << "a second zone was reprovisioned while " << first << " was unhealthy";
  ASSERT_EQ(Ctl({"vm-health", first_uuid, "healthy"}).exit_code, 0);
  r = M({"-j", "tcore", "reprovision", "--service", "moray", "--wait", "--timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << M({"-j", "tcore", "events", "--all"}).out
                            << M({"-j", "tcore", "queue", "list", "--finished", "10"}).out << daemon_->log();
  wait_status("tcore at version 2: converged");
  for (const auto& kv : CoreZones("moray")) EXPECT_EQ(kv.second, kNew) << kv.first;
  EXPECT_EQ(CoreZones("moray").size(), 3u);
  std::string files = Ctl({"files", moray0}).out;
  EXPECT_THAT(files, HasSubstr("moray.db\":\"rows\"")) << "the delegate dataset was kept";
  EXPECT_THAT(files, ::testing::Not(HasSubstr("old-root"))) << "the root was rewritten";
  EXPECT_THAT(files, HasSubstr("\"reprovisions\":1"));
  // Still the admin's, still tagged as a core zone.
  json vm = json::parse(c.Get(("/vms/" + moray0).c_str())->body);
  EXPECT_EQ(vm["owner_uuid"], kAdmin);
  EXPECT_EQ(vm["tags"]["smartdc_role"], "moray");
  EXPECT_EQ(vm["tags"]["smartdc_type"], "core");

  // imgapi's new image is only in the source: imported inside the task.
  std::string v3 = v2;
  v3.replace(v3.find("imgapi@2026.10.1"), 16, "imgapi@2026.11.15");
  r = Apply(v3, {"--wait", "--timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << daemon_->log();
  EXPECT_THAT(r.out, HasSubstr("download 1 image"));
  EXPECT_EQ(CoreZones("imgapi")["imgapi0"], "d4c0e204-4d5e-4f60-8a7b-000000000204");
  EXPECT_THAT(M({"-j", "tcore", "events", "--all"}).out, HasSubstr("image.imported"));

  // Core zones are never destroyed by leaving the manifest or the project.
  std::string no_imgapi = v3.substr(0, v3.find("  moray:")).substr(0, v3.find("  imgapi:")) +
                          v3.substr(v3.find("  moray:"));
  r = Apply(no_imgapi);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("core service imgapi would leave the project"));
  r = M({"project", "delete", "tcore", "--force", "--yes"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("manages Triton core zones (imgapi, moray)"));
  EXPECT_EQ(CoreZones("imgapi").size(), 1u);
  EXPECT_EQ(CoreZones("moray").size(), 3u);
}

}  // namespace
}  // namespace mariposa::testing
