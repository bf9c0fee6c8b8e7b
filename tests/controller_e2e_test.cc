// End to end: the controller's own states (docs/operations.md, "The
// controller's states"): a standby that takes over after kill -9 of the
// active, readonly, initfail, scheduled backups and restore. Real
// mariposad, tritonsim and CLI on loopback.
#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("controller");
    manifest_ = dir_ + "/jupiter.yaml";
    WriteFile(manifest_, ReadFile("deploy/examples/jupiter.yaml"));
  }
  void StartSim() {
    sim_ = std::make_unique<Tritonsim>(std::vector<std::string>{"--servers", "5", "--seed",
                                                                "deploy/examples/tritonsim-seed.json", "--job-latency", "20"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
  }
  std::vector<std::string> DaemonArgs(const std::string& listen, std::vector<std::string> more = {}) {
    std::vector<std::string> a = {"daemon/mariposad", "--listen", listen, "--data-dir", dir_ + "/data"};
    if (sim_) {
      for (const char* s : {"--owner", "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                            "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms"}) {
        a.push_back(s);
      }
      a.push_back("--triton");
      a.push_back(sim_->addr());
    }
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  std::map<std::string, int> Running() { return RunningPerService(sim_->addr()); }
  // Every VM tagged for a project that is not destroyed.
  int Existing() {
    httplib::Client c(sim_->addr());
    auto r = c.Get("/vms?tag.mariposa.service=*");
    int n = 0;
    if (!r || r->status != 200) return -1;
    for (const auto& vm : json::parse(r->body)) n += vm["state"] != "destroyed" && vm["state"] != "failed";
    return n;
  }
  json Status(const std::string& addr) {
    RunResult r = Cli(addr, {"-o", "json", "admin", "status"});
    if (r.exit_code != 0) return json::object();
    return json::parse(r.out, nullptr, false);
  }

  std::string dir_, manifest_;
  std::unique_ptr<Tritonsim> sim_;
};

// Two mariposad on one data dir and one address: the second waits as a
// standby, refuses every change naming the active one, and takes over on
// the same address when the active is killed with SIGKILL — with every
// acknowledged write, and without creating an instance twice.
TEST_F(ControllerTest, StandbyTakesOverAfterKill9) {
  StartSim();
  std::string addr = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
  ServerProcess active(DaemonArgs(addr, {"--standby"}), dir_ + "/active");
  ASSERT_TRUE(active.Start()) << active.log();
  ASSERT_EQ(Cli(addr, {"-j", "jupiter", "apply", "-f", manifest_, "--yes", "--wait", "--timeout", "60s"}).exit_code, 0);

  ServerProcess standby(DaemonArgs(addr, {"--standby", "--standby-listen", "127.0.0.1:0"}), dir_ + "/standby");
  ASSERT_TRUE(standby.Start()) << standby.log();
  json st = Status(standby.addr());
  EXPECT_EQ(st.value("mode", ""), "standby") << st.dump();
  EXPECT_EQ(st.value("active_pid", ""), std::to_string(active.pid())) << st.dump();
  RunResult refused = Cli(standby.addr(), {"-j", "jupiter", "meta", "set", "k", "v"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("standby"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find(absl::StrCat("pid ", active.pid())), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find("cannot reach"), std::string::npos) << refused.err;
  // The active acknowledges a meta write and a scale-up, then dies at once,
  // its creates possibly in flight.
  ASSERT_EQ(Cli(addr, {"-j", "jupiter", "meta", "set", "acked", "yes"}).exit_code, 0);
  RunResult scaled = Cli(addr, {"-j", "jupiter", "scale", "nginx=5"});
  ASSERT_EQ(scaled.exit_code, 0) << scaled.err;
  active.Kill();

  ASSERT_TRUE(Eventually([&] { return Status(addr).value("pid", "") == std::to_string(standby.pid()); },
                         absl::Seconds(10)))
      << standby.log();
  EXPECT_EQ(Status(addr).value("mode", ""), "active");
  RunResult meta = Cli(addr, {"-j", "jupiter", "meta", "get", "acked"});
  EXPECT_NE(meta.out.find("yes"), std::string::npos) << meta.out << meta.err;
  std::map<std::string, int> want = {{"nginx", 5}, {"wordpress", 3}, {"mysql", 1}};
  ASSERT_TRUE(Eventually([&] { return Running() == want; }, absl::Seconds(20))) << standby.log();
  Pause(absl::Milliseconds(1500));  // several resyncs: nothing more is created
  EXPECT_EQ(Running(), want);
  EXPECT_EQ(Existing(), 9) << "no instance created twice";
  EXPECT_EQ(standby.Stop(), 0);
}

// readonly: reads work, changes are refused with the reason, a killed
// instance is not replaced; the state outlives a restart; active resumes.
TEST_F(ControllerTest, ReadonlyRefusesChangesAndPausesConvergence) {
  StartSim();
  ServerProcess d(DaemonArgs("127.0.0.1:0"), dir_ + "/d");
  ASSERT_TRUE(d.Start()) << d.log();
  ASSERT_EQ(Cli(d.addr(), {"-j", "jupiter", "apply", "-f", manifest_, "--yes", "--wait", "--timeout", "60s"}).exit_code, 0);
  EXPECT_EQ(Cli(d.addr(), {"admin", "state", "set", "readonly"}).exit_code, 1) << "a reason is required";
  ASSERT_EQ(Cli(d.addr(), {"admin", "state", "set", "readonly", "--reason", "moving the disk"}).exit_code, 0);
  RunResult scale = Cli(d.addr(), {"-j", "jupiter", "scale", "nginx=4"});
  EXPECT_EQ(scale.exit_code, 1);
  EXPECT_NE(scale.err.find("readonly"), std::string::npos) << scale.err;
  EXPECT_NE(scale.err.find("moving the disk"), std::string::npos) << scale.err;
  RunResult status = Cli(d.addr(), {"-j", "jupiter", "status"});
  // Reads work: status answers (0 converged, 3 not, 4 unknown), not an error.
  EXPECT_TRUE(status.exit_code == 0 || status.exit_code == 3 || status.exit_code == 4) << status.exit_code << status.err;
  EXPECT_NE((status.out + status.err).find("mariposad is readonly: moving the disk"), std::string::npos)
      << "status says why nothing converges: " << status.out;
  EXPECT_EQ(Cli(d.addr(), {"-j", "jupiter", "diff", "-f", manifest_}).exit_code, 0) << "dry runs are reads";
  // A killed instance stays killed while readonly.
  httplib::Client c(sim_->addr());
  auto vms = json::parse(c.Get("/vms?state=running&tag.mariposa.service=nginx")->body);
  ASSERT_EQ(vms.size(), 2u);
  ASSERT_EQ(RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "kill-vm",
                        vms[0]["uuid"].get<std::string>()}).exit_code, 0);
  Pause(absl::Seconds(2));
  EXPECT_EQ(Running()["nginx"], 1);
  json st = Status(d.addr());
  EXPECT_EQ(st.value("mode", ""), "readonly");
  bool stated = false;
  for (const auto& p : st["problems"]) stated |= p.value("kind", "") == "readonly" && !p.value("fix", "").empty();
  EXPECT_TRUE(stated) << st.dump();
  // Kept across a restart.
  ASSERT_EQ(d.Stop(), 0);
  ASSERT_TRUE(d.Start()) << d.log();
  EXPECT_EQ(Status(d.addr()).value("mode", ""), "readonly");
  Pause(absl::Seconds(1));
  EXPECT_EQ(Running()["nginx"], 1);
  ASSERT_EQ(Cli(d.addr(), {"admin", "state", "set", "active"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return Running()["nginx"] == 2; }, absl::Seconds(10)));
  RunResult events = Cli(d.addr(), {"events", "-n", "50"});
  EXPECT_NE(events.out.find("controller.state"), std::string::npos) << events.out;
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') out.push_back(e->d_name);
  }
  closedir(d);
  return out;
}

// Scheduled backups are written and pruned; restore refuses a running
// store and a damaged backup, and brings back the backup's projects.
TEST_F(ControllerTest, ScheduledBackupsAndRestore) {
  std::string backups = dir_ + "/backups";
  ServerProcess d(DaemonArgs("127.0.0.1:0", {"--backup-dir", backups, "--backup-interval", "1s", "--backup-keep", "2",
                                              "--metrics-listen", "127.0.0.1:0"}),
                  dir_ + "/d");
  ASSERT_TRUE(d.Start()) << d.log();
  ASSERT_EQ(Cli(d.addr(), {"-j", "jupiter", "apply", "-f", manifest_, "--yes"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return std::stoi(Status(d.addr())["backups"].value("successes", "0")) >= 3; },
                         absl::Seconds(10)));
  int scheduled = 0;
  for (const auto& f : Files(backups)) scheduled += absl::StartsWith(f, "mariposa-");
  EXPECT_LE(scheduled, 2) << "--backup-keep 2";
  EXPECT_GE(scheduled, 1);
  httplib::Client m(d.extra_addrs().at(0));
  std::string metrics = m.Get("/metrics")->body;
  EXPECT_NE(metrics.find("mariposa_backup_interval_seconds 1"), std::string::npos);
  EXPECT_NE(metrics.find("mariposa_backup_last_success_timestamp_seconds 1"), std::string::npos) << "a real time";
  EXPECT_NE(metrics.find("mariposa_controller_state{state=\"active\"} 1"), std::string::npos);

  // A backup with jupiter only, then a change it does not have.
  ASSERT_EQ(Cli(d.addr(), {"admin", "backup", "before.db"}).exit_code, 0);
  ASSERT_EQ(Cli(d.addr(), {"project", "create", "saturn"}).exit_code, 0);
  RunResult running = Cli(d.addr(), {"admin", "restore", backups + "/before.db", "--data-dir", dir_ + "/data"});
  EXPECT_EQ(running.exit_code, 1);
  EXPECT_NE(running.err.find(absl::StrCat("pid ", d.pid())), std::string::npos) << running.err;
  ASSERT_EQ(d.Stop(), 0);

  WriteFile(dir_ + "/damaged.db", "SQLite format 3" + std::string(5000, 'x'));
  RunResult damaged = Cli("127.0.0.1:1", {"admin", "restore", dir_ + "/damaged.db", "--data-dir", dir_ + "/data"});
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_NE(damaged.err.find("nothing was changed"), std::string::npos) << damaged.err;
  RunResult restored = Cli("127.0.0.1:1", {"admin", "restore", backups + "/before.db", "--data-dir", dir_ + "/data"});
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_NE(restored.out.find("1 projects"), std::string::npos) << restored.out;
  EXPECT_NE(restored.out.find("before-restore-"), std::string::npos) << restored.out;

  ASSERT_TRUE(d.Start()) << d.log();
  RunResult list = Cli(d.addr(), {"project", "list"});
  EXPECT_NE(list.out.find("jupiter"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("saturn"), std::string::npos) << list.out;
}

// A store that cannot be opened: with --on-init-failure serve, mariposad
// stays up as initfail and states the problem; every other call says so.
TEST_F(ControllerTest, InitfailStatesWhyItDoesNotServe) {
  {
    ServerProcess d(DaemonArgs("127.0.0.1:0"), dir_ + "/first");
    ASSERT_TRUE(d.Start()) << d.log();
    ASSERT_EQ(d.Stop(), 0);
  }
  WriteFile(dir_ + "/data/mariposa.db", "");  // emptied: refused without --init
  for (const char* f : {"/data/mariposa.db-wal", "/data/mariposa.db-shm"}) unlink((dir_ + f).c_str());
  ServerProcess d(DaemonArgs("127.0.0.1:0", {"--on-init-failure", "serve"}), dir_ + "/d");
  ASSERT_TRUE(d.Start()) << d.log();
  json st = Status(d.addr());
  EXPECT_EQ(st.value("mode", ""), "initfail") << st.dump();
  ASSERT_EQ(st["problems"].size(), 1u) << st.dump();
  EXPECT_NE(st["problems"][0].value("error", "").find("is empty"), std::string::npos) << st.dump();
  EXPECT_FALSE(st["problems"][0].value("fix", "").empty());
  RunResult list = Cli(d.addr(), {"project", "list"});
  EXPECT_EQ(list.exit_code, 1);
  EXPECT_NE(list.err.find("failed to start (initfail)"), std::string::npos) << list.err;
  EXPECT_EQ(d.Stop(), 1) << "it did not start: exit 1 when stopped";
  // Without the flag: exit 1 at once, the same words on stderr.
  RunResult plain = RunProcess(DaemonArgs("127.0.0.1:0"));
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_NE(plain.err.find("Fix:"), std::string::npos) << plain.err;
}

// With TLS on --listen, initfail answers there over TLS (never in clear);
// when the TLS files are what cannot be read, it is initfail itself and
// answers on the Unix socket only.
TEST_F(ControllerTest, InitfailAnswersOverTls) {
  ASSERT_EQ(MakeCa(dir_, "ca"), "");
  ASSERT_EQ(MakeCert(dir_, "ca", "server"), "");
  {
    ServerProcess d(DaemonArgs("127.0.0.1:0"), dir_ + "/first");
    ASSERT_TRUE(d.Start()) << d.log();
    ASSERT_EQ(d.Stop(), 0);
  }
  WriteFile(dir_ + "/data/mariposa.db", "");
  for (const char* f : {"/data/mariposa.db-wal", "/data/mariposa.db-shm"}) unlink((dir_ + f).c_str());
  char tmpl[] = "/tmp/mpcXXXXXX";
  std::string sock_dir = mkdtemp(tmpl);
  std::string sock = "unix:" + sock_dir + "/s";
  std::vector<std::string> tls = {"--tls-cert", dir_ + "/server.pem", "--tls-key", dir_ + "/server.key",
                                  "--socket", sock_dir + "/s", "--on-init-failure", "serve"};
  {
    ServerProcess d(DaemonArgs("127.0.0.1:0", tls), dir_ + "/d");
    ASSERT_TRUE(d.Start()) << d.log();
    RunResult st = Cli(d.addr(), {"--ca", dir_ + "/ca.pem", "-o", "json", "admin", "status"});
    ASSERT_EQ(st.exit_code, 0) << st.err;
    EXPECT_EQ(json::parse(st.out).value("mode", ""), "initfail") << st.out;
    RunResult clear = Cli(d.addr(), {"--request-timeout", "2s", "admin", "status"});
    EXPECT_EQ(clear.exit_code, 1) << "no answer in clear on a TLS --listen: " << clear.out;
    EXPECT_EQ(Status(sock).value("mode", ""), "initfail");
    EXPECT_EQ(d.Stop(), 1);
  }
  // The key cannot be read: initfail says which file, on the socket.
  tls[3] = dir_ + "/missing.key";
  ServerProcess d(DaemonArgs("127.0.0.1:0", tls), dir_ + "/d2");
  ASSERT_TRUE(d.Start()) << d.log();
  EXPECT_EQ(d.addr(), sock) << "the TLS --listen is not served without its key";
  json st = Status(sock);
  EXPECT_EQ(st.value("mode", ""), "initfail") << st.dump();
  ASSERT_GE(st["problems"].size(), 1u) << st.dump();
  EXPECT_NE(st["problems"][0].value("reason", "").find("missing.key"), std::string::npos) << st.dump();
  EXPECT_NE(st["problems"][0].value("error", "").find("cannot serve TLS"), std::string::npos) << st.dump();
  EXPECT_EQ(d.Stop(), 1);
  // A file that is not PEM is named too (gRPC alone says "cannot listen").
  WriteFile(dir_ + "/garbage.pem", "not a certificate\n");
  RunResult garbage = RunProcess(DaemonArgs("127.0.0.1:0", {"--tls-cert", dir_ + "/garbage.pem", "--tls-key",
                                                            dir_ + "/server.key"}));
  EXPECT_EQ(garbage.exit_code, 1);
  EXPECT_NE(garbage.err.find("garbage.pem is not PEM"), std::string::npos) << garbage.err;
  unlink((sock_dir + "/s").c_str());
  rmdir(sock_dir.c_str());
}

}  // namespace
}  // namespace mariposa::testing
