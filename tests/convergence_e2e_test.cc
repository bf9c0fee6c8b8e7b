// End to end: tritonsim + mariposad --triton + the CLI. A project applied is
// converged in VMAPI; scaling, freezes, rollouts, a killed instance and a
// killed mariposad are followed.
#include "tests/convergence_fixture.h"

#include <chrono>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace mariposa::testing {
namespace {

TEST_F(ConvergenceTest, ApplyScaleAndReplace) {
  WriteFile(dir_ + "/v1.yaml", manifest_);
  auto r = M({"apply", "-f", dir_ + "/v1.yaml", "--yes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}})) << daemon_->log();

  // The VMs run; the project is converged once the syncs after them have
  // seen their jobs end and closed the scale tasks.
  auto st = M({"-j", "jupiter", "status", "-v"});
  for (int i = 0; i < 100 && st.out.find(": converged") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    st = M({"-j", "jupiter", "status", "-v"});
  }
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_THAT(st.out, ::testing::HasSubstr("project jupiter at version 1: converged"));
  // Status says how old its observation is: it never lists VMAPI itself.
  EXPECT_THAT(st.out, ::testing::ContainsRegex("actual state as read [0-9.]+m?s ago \\(the last sync's"));
  EXPECT_THAT(st.out, ::testing::HasSubstr("jupiter-wordpress-3"));
  st = M({"-o", "json", "-j", "jupiter", "status"});
  EXPECT_THAT(st.out, ::testing::HasSubstr("\"desired\": \"3\""));  // int64 in JSON is a string

  // Every VM carries the ownership tags and a <project>-<service>-<n> alias.
  httplib::Client c(sim_->addr());
  json vms = json::parse(c.Get("/vms?state=running&tag.mariposa.service=wordpress")->body);
  std::set<std::string> aliases;
  for (const auto& vm : vms) {
    EXPECT_FALSE(vm["tags"]["mariposa.project"].get<std::string>().empty());
    EXPECT_FALSE(vm["tags"]["mariposa.version"].get<std::string>().empty());
    EXPECT_FALSE(vm["tags"]["mariposa.spec"].get<std::string>().empty());
    aliases.insert(vm["alias"].get<std::string>());
  }
  EXPECT_EQ(aliases, (std::set<std::string>{"jupiter-wordpress-1", "jupiter-wordpress-2", "jupiter-wordpress-3"}));

  // Scale up and down through apply.
  WriteFile(dir_ + "/v2.yaml", absl::StrReplaceAll(manifest_, {{"count: 3", "count: 5"}, {"count: 2", "count: 1"}}));
  r = M({"apply", "-f", dir_ + "/v2.yaml", "--yes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitFor({{"nginx", 1}, {"wordpress", 5}, {"mysql", 1}})) << daemon_->log();

  // mariposa scale: a new version, and the instances follow.
  r = M({"-j", "jupiter", "scale", "wordpress=-2", "nginx=+1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("scale \"wordpress\" 5 -> 3 (-2)"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("applied version 3"));
  EXPECT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}})) << daemon_->log();
  r = M({"-j", "jupiter", "scale", "wordpress=-9"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("gives -6, outside 0..100000"));
  r = M({"-j", "jupiter", "scale", "nope=1"});
  EXPECT_THAT(r.err, ::testing::HasSubstr("no service \"nope\""));
  r = M({"-j", "jupiter", "scale", "wordpress=5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 5}, {"mysql", 1}})) << daemon_->log();
  r = M({"-j", "jupiter", "scale", "nginx=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitFor({{"nginx", 1}, {"wordpress", 5}, {"mysql", 1}})) << daemon_->log();
  r = M({"-j", "jupiter", "versions"});
  EXPECT_THAT(r.out, ::testing::HasSubstr("scale"));

  // A VM killed out of band is replaced.
  vms = json::parse(c.Get("/vms?state=running&tag.mariposa.service=mysql")->body);
  ASSERT_EQ(vms.size(), 1u);
  std::string victim = vms[0]["uuid"];
  RunResult k = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "kill-vm", victim});
  ASSERT_EQ(k.exit_code, 0) << k.err;
  EXPECT_TRUE(WaitFor({{"nginx", 1}, {"wordpress", 5}, {"mysql", 1}}));
  vms = json::parse(c.Get("/vms?state=running&tag.mariposa.service=mysql")->body);
  ASSERT_EQ(vms.size(), 1u);
  EXPECT_NE(vms[0]["uuid"], victim);
  r = M({"events", "--all"});
  EXPECT_THAT(r.out, ::testing::HasSubstr("instance.create"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("instance.delete"));
  // Deleting the project's services removes every instance (nginx's changed
  // spec rolls out: its replacement is ready after its start window).
  WriteFile(dir_ + "/v3.yaml",
            "project: jupiter\nservices:\n  nginx: {image: autopilotpattern/nginx@1.4.0, count: 1, start: {window: 300ms}}\n");
  r = M({"apply", "-f", dir_ + "/v3.yaml", "--yes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitFor({{"nginx", 1}})) << M({"-j", "jupiter", "status", "-v"}).out << M({"-j", "jupiter", "queue", "list"}).out
                                       << daemon_->log();
}

TEST_F(ConvergenceTest, FreezeHoldsReplacementThawResumesIt) {
  WriteFile(dir_ + "/v1.yaml", manifest_);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}}));
  // Issue 48, 7: status answers in its exit code, 0 when converged.
  ASSERT_TRUE(Eventually([&] { return M({"-j", "jupiter", "status"}).exit_code == 0; }, absl::Seconds(20)));
  EXPECT_EQ(M({"-o", "json", "-j", "jupiter", "status"}).exit_code, 0);
  auto r = M({"-j", "jupiter", "freeze", "--service", "mysql", "--reason", "db maintenance"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  httplib::Client c(sim_->addr());
  std::string victim = json::parse(c.Get("/vms?state=running&tag.mariposa.service=mysql")->body)[0]["uuid"];
  ASSERT_EQ(RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "kill-vm", victim}).exit_code, 0);
  // Several resyncs pass: the frozen service is left alone, the others are not frozen.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(Running(), (std::map<std::string, int>{{"nginx", 2}, {"wordpress", 3}}));
  // status says why mysql waits, and who froze it.
  r = M({"-j", "jupiter", "status"});
  EXPECT_THAT(r.out, ::testing::HasSubstr("mysql      paused"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("frozen since"));
  EXPECT_EQ(r.exit_code, 3) << "not converged: status's exit code says so";
  EXPECT_EQ(M({"-o", "json", "-j", "jupiter", "status"}).exit_code, 3);
  // QUEUE.md: user commands in a frozen scope are refused and change nothing.
  r = M({"-j", "jupiter", "scale", "mysql=2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("project is frozen since"));
  EXPECT_THAT(r.err, ::testing::HasSubstr("(db maintenance) for services mysql; thaw first"));
  std::string v2 = manifest_;
  v2.replace(v2.find("percona@5.7.1"), 13, "percona@5.7.2");
  WriteFile(dir_ + "/v2.yaml", v2);
  r = M({"apply", "-f", dir_ + "/v2.yaml", "--yes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("thaw first"));
  EXPECT_THAT(M({"-j", "jupiter", "status"}).out, ::testing::HasSubstr("project jupiter at version 1:"));
  // A change to a service the freeze does not cover goes through.
  ASSERT_EQ(M({"-j", "jupiter", "scale", "nginx=3"}).exit_code, 0);
  EXPECT_TRUE(WaitFor({{"nginx", 3}, {"wordpress", 3}}));
  // --thaw ends the freeze and applies: mysql is replaced and scaled.
  r = M({"-j", "jupiter", "scale", "mysql=2", "--thaw", "--wait", "--timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Running(), (std::map<std::string, int>{{"nginx", 3}, {"wordpress", 3}, {"mysql", 2}}));
  EXPECT_THAT(M({"-j", "jupiter", "queue", "list", "--finished", "20"}).out, ::testing::HasSubstr("thawed by"));
}

TEST_F(ConvergenceTest, RollingReprovisionWithinSurge) {
  std::string v1 = R"(project: shop
services:
  web:
    image: autopilotpattern/wordpress@1.2.0
    count: 3
    start: {window: 300ms}
    update: {rolling: 1, max_surge: 1, on_change: manual}
)";
  WriteFile(dir_ + "/v1.yaml", v1);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitFor({{"web", 3}}));
  WriteFile(dir_ + "/v2.yaml", absl::StrReplaceAll(v1, {{"@1.2.0", "@1.3.0"}}));
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v2.yaml", "--yes"}).exit_code, 0);
  // With update.on_change: manual a spec change alone does not touch
  // running instances.
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  httplib::Client c(sim_->addr());
  auto images = [&] { return ImageCounts("web"); };
  const std::string kOld = "0b3f3c1e-5a61-4c2c-9a1a-000000000002", kNew = "0b3f3c1e-5a61-4c2c-9a1a-000000000003";
  EXPECT_EQ(images(), (std::map<std::string, int>{{kOld, 3}}));
  auto r = M({"-j", "shop", "reprovision", "--service", "web"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string task = TaskOf(r);
  int peak = 0;
  bool done = false;
  for (int i = 0; i < 200 && !done; ++i) {
    auto now = images();
    int total = 0;
    for (const auto& kv : now) total += kv.second;
    peak = std::max(peak, total);
    done = now == std::map<std::string, int>{{kNew, 3}};
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(done) << daemon_->log();
  EXPECT_LE(peak, 4);  // count + max_surge
  EXPECT_FALSE(WaitCompleted(task).empty());
}

// The value of one sample of /metrics, or -1.
double Sample(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, series + " ")) {
      double v = -1;
      if (absl::SimpleAtod(line.substr(series.size() + 1), &v)) return v;
    }
  }
  return -1;
}

TEST_F(ConvergenceTest, MetricsDescribeTheController) {
  ASSERT_EQ(daemon_->extra_addrs().size(), 1u);
  httplib::Client m(daemon_->extra_addrs()[0]);
  WriteFile(dir_ + "/v1.yaml", manifest_);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}}));
  ASSERT_EQ(M({"-j", "jupiter", "freeze", "--service", "mysql"}).exit_code, 0);
  std::string text;
  for (int i = 0; i < 50; ++i) {
    auto r = m.Get("/metrics");
    ASSERT_TRUE(r) << "no answer from " << daemon_->extra_addrs()[0];
    text = r->body;
    if (Sample(text, R"(mariposa_service_instances{project="jupiter",service="wordpress",state="running"})") == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Sample(text, R"(mariposa_service_desired_instances{project="jupiter",service="wordpress"})"), 3) << text;
  EXPECT_EQ(Sample(text, R"(mariposa_service_instances{project="jupiter",service="wordpress",state="running"})"), 3);
  EXPECT_EQ(Sample(text, R"(mariposa_frozen{project="jupiter",scope="mysql"})"), 1);
  EXPECT_EQ(Sample(text, R"(mariposa_tasks{state="active",type="freeze"})"), 1);
  EXPECT_EQ(Sample(text, R"(mariposa_service_crashlooping{project="jupiter",service="nginx"})"), 0);
  EXPECT_GE(Sample(text, R"(mariposa_triton_requests_total{api="vmapi",code="202",op="CreateVm"})"), 6);
  EXPECT_GE(Sample(text, R"(mariposa_triton_request_duration_seconds_count{api="vmapi",op="ListVms"})"), 1);
  EXPECT_EQ(Sample(text, "mariposa_leader"), 1);
}

// The user's reprovision alone: `on_change: manual`, so the apply of v2
// starts no automatic rollout of its own (which, when the machine is quick,
// finished its own canary before the user's reprovision terminated it, and
// then two instances were new: a race of the test, not of the product).
TEST_F(ConvergenceTest, ReprovisionCanaryThenFilteredByVersion) {
  std::string v1 = R"(project: shop
services:
  web:
    image: autopilotpattern/wordpress@1.2.0
    count: 4
    start: {window: 200ms}
    update: {rolling: 2, max_surge: 1, canary: 1, on_change: manual}
)";
  WriteFile(dir_ + "/v1.yaml", v1);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitFor({{"web", 4}}));
  WriteFile(dir_ + "/v2.yaml", absl::StrReplaceAll(v1, {{"@1.2.0", "@1.3.0"}}));
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v2.yaml", "--yes"}).exit_code, 0);
  httplib::Client c(sim_->addr());
  auto images = [&] { return ImageCounts("web", "running"); };
  const std::string kOld = "0b3f3c1e-5a61-4c2c-9a1a-000000000002", kNew = "0b3f3c1e-5a61-4c2c-9a1a-000000000003";
  // A filter naming nothing that exists is refused at once.
  auto bad = M({"-j", "shop", "reprovision", "--version", "9"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, ::testing::HasSubstr("--version \"9\": project shop has no such version"));

  // The manifest's canary: one instance, then the task completes.
  auto r = M({"-j", "shop", "reprovision"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string out = WaitCompleted(TaskOf(r));
  ASSERT_FALSE(out.empty()) << daemon_->log();
  EXPECT_THAT(out, ::testing::HasSubstr("\"replaced\": \"1\""));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(images(), (std::map<std::string, int>{{kOld, 3}, {kNew, 1}}));

  // Then the rest, chosen by the version they were created for.
  r = M({"-j", "shop", "reprovision", "--version", "1", "--canary", "0", "--rolling", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string task = TaskOf(r);
  out = WaitCompleted(task);
  ASSERT_FALSE(out.empty()) << daemon_->log();
  EXPECT_THAT(out, ::testing::HasSubstr("\"replaced\": \"3\""));
  EXPECT_EQ(images(), (std::map<std::string, int>{{kNew, 4}}));
  auto shown = M({"queue", "get", task});
  EXPECT_THAT(shown.out, ::testing::HasSubstr("versions: 1"));
  EXPECT_THAT(shown.out, ::testing::HasSubstr("replaced 3"));
  EXPECT_THAT(shown.out, ::testing::HasSubstr("rolling:  3"));
}

// Jobs fail half of the time during a rolling update: failed creates are
// backed off and retried, failed VMs removed, and the rollout still ends with
// every instance at the new image and no failed VM left. The user's
// reprovision alone rolls out (`on_change: manual`: the apply's automatic
// rollout could otherwise replace some first, and the task count fewer).
TEST_F(ConvergenceTest, RollingUpdateWithInjectedJobFailures) {
  std::string v1 = R"(project: flaky
services:
  web:
    image: autopilotpattern/wordpress@1.2.0
    count: 6
    start: {window: 100ms}
    restart: {max_attempts: 50, window: 60s}
    update: {rolling: 2, max_surge: 2, on_change: manual}
)";
  WriteFile(dir_ + "/v1.yaml", v1);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitFor({{"web", 6}}));
  ASSERT_EQ(RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "knobs", "--job-failure-rate",
                        "0.5"})
                .exit_code,
            0);
  WriteFile(dir_ + "/v2.yaml", absl::StrReplaceAll(v1, {{"@1.2.0", "@1.3.0"}}));
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v2.yaml", "--yes"}).exit_code, 0);
  auto r = M({"-j", "flaky", "reprovision"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string task = TaskOf(r);
  httplib::Client c(sim_->addr());
  const std::string kNew = "0b3f3c1e-5a61-4c2c-9a1a-000000000003";
  bool done = false;
  int peak = 0;
  std::string out;
  // Half the jobs fail: a streak of failures backs creates off (up to
  // --backoff-cap 8s each), so allow two minutes.
  for (int i = 0; i < 1200 && !done; ++i) {
    json vms = json::parse(c.Get("/vms?state=active&tag.mariposa.service=web")->body);
    int fresh = 0, live = 0, failed = 0;
    for (const auto& vm : vms) {
      bool is_live = vm["state"] == "running" || vm["state"] == "provisioning";
      live += is_live;
      failed += vm["state"] == "failed";
      fresh += vm["image_uuid"] == kNew && vm["state"] == "running";
    }
    peak = std::max(peak, live);
    out = M({"-o", "json", "queue", "get", task}).out;
    done = fresh == 6 && live == 6 && failed == 0 && out.find("\"completed\"") != std::string::npos;
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(done) << out << daemon_->log();
  EXPECT_LE(peak, 8);  // count + max_surge
  // Failures happened (a run of ~14 jobs without one has odds of 1 in 16,000)
  // and were counted on the task; each instance was replaced once.
  EXPECT_THAT(out, ::testing::Not(::testing::HasSubstr("\"failed\": \"0\""))) << daemon_->log();
  EXPECT_THAT(out, ::testing::HasSubstr("\"replaced\": \"6\""));
}

// Stop keeps instances stopped (never replaced) until start, which starts
// the same instances again.
TEST_F(ConvergenceTest, StopThenStartKeepsTheSameInstances) {
  WriteFile(dir_ + "/v1.yaml", manifest_);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}}));
  httplib::Client c(sim_->addr());
  auto uuids = [&](const std::string& state) {
    std::set<std::string> out;
    for (const auto& vm : json::parse(c.Get("/vms?state=" + state + "&tag.mariposa.service=wordpress")->body)) {
      out.insert(vm["uuid"].get<std::string>());
    }
    return out;
  };
  std::set<std::string> before = uuids("running");
  auto r = M({"-j", "jupiter", "stop", "--service", "wordpress"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string stop_task = TaskOf(r);
  EXPECT_TRUE(WaitFor({{"nginx", 2}, {"mysql", 1}})) << daemon_->log();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // several resyncs: nothing is replaced
  EXPECT_EQ(uuids("stopped"), before);
  EXPECT_EQ(Running(), (std::map<std::string, int>{{"nginx", 2}, {"mysql", 1}}));
  EXPECT_FALSE(WaitCompleted(stop_task).empty());
  EXPECT_THAT(M({"project", "get", "jupiter"}).out, ::testing::HasSubstr("stopped:     wordpress"));

  r = M({"-j", "jupiter", "start", "--service", "wordpress"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}})) << daemon_->log();
  EXPECT_EQ(uuids("running"), before);  // started, not replaced
  EXPECT_THAT(M({"project", "get", "jupiter"}).out, ::testing::Not(::testing::HasSubstr("stopped:")));
}

// A project with instances is not deleted unless --force, which removes the
// instances first and then the project.
TEST_F(ConvergenceTest, ProjectDeleteRemovesInstancesOnlyWithForce) {
  WriteFile(dir_ + "/v1.yaml", manifest_);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}}));
  auto r = M({"project", "delete", "jupiter", "--yes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("project jupiter has 6 instances"));
  EXPECT_EQ(M({"project", "get", "jupiter"}).exit_code, 0);
  r = M({"project", "delete", "jupiter", "--yes", "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("removes first:\n  6 instances\n"));
  EXPECT_TRUE(WaitFor({})) << daemon_->log();
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    gone = M({"project", "get", "jupiter"}).exit_code != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone);
  httplib::Client c(sim_->addr());
  json left = json::parse(c.Get("/vms?state=active&tag.mariposa.service=*")->body);
  EXPECT_TRUE(left.empty()) << left.dump();
}

// apply --wait and scale --wait follow the instances until they settle; the
// work shows as scale tasks; a crash loop ends the wait with its reason.
TEST_F(ConvergenceTest, ApplyAndScaleWaitFollowProgress) {
  WriteFile(dir_ + "/v1.yaml", manifest_);
  auto r = M({"apply", "-f", dir_ + "/v1.yaml", "--yes", "--wait", "--timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.err << daemon_->log();
  EXPECT_THAT(r.out, ::testing::HasSubstr("wordpress converged: 3/3 ready"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("converged after"));
  EXPECT_EQ(Running(), (std::map<std::string, int>{{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}}));

  r = M({"-j", "jupiter", "scale", "wordpress=+2", "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("wordpress converged: 5/5 ready"));
  EXPECT_EQ(Running()["wordpress"], 5);
  std::string tasks;
  for (int i = 0; i < 50; ++i) {  // the task completes on the sync after the last create
    tasks = M({"-o", "json", "-j", "jupiter", "queue", "list"}).out;
    if (tasks.find("\"trigger\": \"scale\"") != std::string::npos &&
        tasks.find("\"state\": \"active\"") == std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_THAT(tasks, ::testing::HasSubstr("\"trigger\": \"scale\""));  // the user's scale, as a task
  EXPECT_THAT(tasks, ::testing::HasSubstr("\"origin\": \"auto\""));    // the first apply's work
  EXPECT_THAT(tasks, ::testing::HasSubstr("\"created\": \"2\""));

  // Issue 48, 9: a scale's --wait waits for what it changed: mysql, frozen
  // with its instance killed, is not converged, and nginx's scale still
  // ends as soon as nginx is.
  ASSERT_EQ(M({"-j", "jupiter", "freeze", "--service", "mysql"}).exit_code, 0);
  httplib::Client sim(sim_->addr());
  std::string mysql = json::parse(sim.Get("/vms?state=running&tag.mariposa.service=mysql")->body)[0]["uuid"];
  ASSERT_EQ(sim.Post("/_sim/vms/" + mysql + "/kill")->status / 100, 2);
  ASSERT_TRUE(Eventually([&] { return M({"-j", "jupiter", "status"}).exit_code == 3; }, absl::Seconds(10)));
  r = M({"-j", "jupiter", "scale", "nginx=+1", "--wait", "--timeout", "30s"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("nginx converged after"));
  EXPECT_THAT(r.out, ::testing::Not(::testing::HasSubstr("mysql")));
  EXPECT_EQ(Running()["nginx"], 3);
  EXPECT_EQ(M({"-j", "jupiter", "status"}).exit_code, 3) << "the project as a whole is not converged";
  ASSERT_EQ(M({"-j", "jupiter", "thaw", "--service", "mysql"}).exit_code, 0);

  std::string broken = R"(project: broken
services:
  web:
    image: no-such-image@1
    restart: {max_attempts: 2, window: 10m}
)";
  WriteFile(dir_ + "/broken.yaml", broken);
  r = M({"apply", "-f", dir_ + "/broken.yaml", "--yes", "--wait", "--timeout", "60s"});
  EXPECT_EQ(r.exit_code, 1);
  // Images are resolved at apply: a missing one is refused, nothing is
  // stored (no crash loop of doomed creates).
  EXPECT_THAT(r.err, ::testing::HasSubstr("services.web.image: image no-such-image@1 is not in IMGAPI"));
  EXPECT_THAT(r.err, ::testing::HasSubstr("nothing was changed"));
  EXPECT_THAT(M({"project", "list"}).out, ::testing::Not(::testing::HasSubstr("broken")));
}

// Placement rules become VMAPI locality hints; {{ }} values are filled in
// when an instance is created; a hard rule that cannot be met fails the
// create with VMAPI's reason.
TEST_F(ConvergenceTest, PlacementAndInterpolationAtCreate) {
  std::string m = R"(project: spread
meta: {greeting: hello}
services:
  db:
    compute_type: lx
    image: percona@5.7.1
    count: 1
    start: {window: 1s}
  web:
    image: autopilotpattern/nginx@1.4.0
    count: 4
    start: {window: 1s}
    placement: ["service!=db", "service!=~web"]
    mdata: {welcome: "{{ .meta.greeting }} from {{ .placement.instance.name }}"}
    tags: {project-name: "{{ .project.name }}"}
)";
  WriteFile(dir_ + "/spread.yaml", m);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/spread.yaml", "--yes", "--wait", "--timeout", "60s"}).exit_code, 0)
      << daemon_->log();
  ASSERT_EQ(M({"-j", "spread", "meta", "set", "greeting", "hi"}).exit_code, 0);
  httplib::Client c(sim_->addr());
  json db = json::parse(c.Get("/vms?state=running&tag.mariposa.service=db")->body);
  ASSERT_EQ(db.size(), 1u);
  std::string db_server = db[0]["server_uuid"];
  json web = json::parse(c.Get("/vms?state=running&tag.mariposa.service=web")->body);
  ASSERT_EQ(web.size(), 4u);
  std::set<std::string> servers;
  for (const auto& vm : web) {
    EXPECT_NE(vm["server_uuid"], db_server) << "hard rule service!=db broken";
    servers.insert(vm["server_uuid"].get<std::string>());
    EXPECT_EQ(vm["customer_metadata"]["welcome"], "hello from " + vm["alias"].get<std::string>());
    EXPECT_EQ(vm["tags"]["project-name"], "spread");
  }
  // Only the hard rule is sent with it; tritonsim then places by free RAM
  // (DAPI's default) over the 4 servers that are not db's, the headnode (its
  // core zones make it the fullest) last: at least 3 of them.
  EXPECT_GE(servers.size(), 3u);

  // Five servers and a hard "one per server" rule for 6 instances: five are
  // placed, the sixth fails with the reason, and the service crash-loops.
  std::string tight = R"(project: tight
services:
  web:
    image: autopilotpattern/nginx@1.4.0
    count: 6
    placement: ["service!=web"]
    restart: {max_attempts: 2, window: 10m}
)";
  WriteFile(dir_ + "/tight.yaml", tight);
  auto r = M({"apply", "-f", dir_ + "/tight.yaml", "--yes", "--wait", "--timeout", "60s"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("satisfy the strict locality hints"));
  EXPECT_EQ(Running()["web"], 4 + 5);  // spread's 4 and tight's 5
  EXPECT_THAT(M({"-j", "tight", "events"}).out, ::testing::HasSubstr("instance.create-failed"));
}

// Triton's own agents as services (RFD 82): the core example rolls cn-agent
// and vm-agent out through CNAPI; `apply --wait` follows it.
TEST_F(ConvergenceTest, CoreAgentsRollOutThroughCnapi) {
  auto r = M({"apply", "-f", "deploy/examples/core.yaml", "--yes", "--wait", "--timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << daemon_->log();
  EXPECT_THAT(r.out, ::testing::HasSubstr("vm-agent converged: 5/5 servers at 1.9.0"));
  httplib::Client c(sim_->addr());
  json servers = json::parse(c.Get("/servers?extras=agents")->body);
  ASSERT_EQ(servers.size(), 5u);
  for (const auto& s : servers) {
    std::map<std::string, std::string> versions;
    for (const auto& a : s["agents"]) versions[a["name"]] = a["version"];
    EXPECT_EQ(versions["vm-agent"], "1.9.0") << s["hostname"];
    EXPECT_EQ(versions["cn-agent"], s["headnode"].get<bool>() ? "2.13.0" : "2.14.1") << s["hostname"];
  }
  std::string tasks = M({"-o", "json", "-j", "core", "queue", "list"}).out;
  EXPECT_THAT(tasks, ::testing::HasSubstr("\"kind\": \"reprovision\""));
  EXPECT_THAT(tasks, ::testing::Not(::testing::HasSubstr("\"state\": \"active\"")));
}

// QUEUE.md / DESIGN.md "Restart-safe": SIGKILL of mariposad in the middle of
// a 200-instance rolling reprovision; after a restart the rollout finishes
// with exactly 200 instances, every alias once, nothing left behind.
TEST_F(ConvergenceTest, KillDuringA200InstanceRolloutLeavesNoDuplicateOrOrphan) {
  std::string v1 = R"(project: big
services:
  web:
    image: autopilotpattern/wordpress@1.2.0
    count: 200
    start: {window: 100ms}
    update: {rolling: 20, max_surge: 20}
)";
  WriteFile(dir_ + "/v1.yaml", v1);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  for (int i = 0; i < 300 && Running()["web"] != 200; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(Running()["web"], 200) << daemon_->log();
  WriteFile(dir_ + "/v2.yaml", absl::StrReplaceAll(v1, {{"@1.2.0", "@1.3.0"}}));
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v2.yaml", "--yes"}).exit_code, 0);
  auto r = M({"-j", "big", "reprovision"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string task = TaskOf(r);
  httplib::Client c(sim_->addr());
  const std::string kNew = "0b3f3c1e-5a61-4c2c-9a1a-000000000003";
  auto vms = [&] { return json::parse(c.Get("/vms?state=active&tag.mariposa.service=web")->body); };
  auto count_new = [&] {
    int n = 0;
    for (const auto& vm : vms()) n += vm["image_uuid"] == kNew;
    return n;
  };
  for (int i = 0; i < 300 && count_new() < 40; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  int at_kill = count_new();
  ASSERT_GE(at_kill, 40);
  ASSERT_LT(at_kill, 200) << "the rollout finished before the kill";
  daemon_->Kill();
  ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  bool done = false;
  json final_vms;
  for (int i = 0; i < 600 && !done; ++i) {
    final_vms = vms();
    int fresh = 0, running = 0;
    for (const auto& vm : final_vms) {
      fresh += vm["image_uuid"] == kNew;
      running += vm["state"] == "running";
    }
    done = fresh == 200 && running == 200 && final_vms.size() == 200;
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(done) << "after the restart: " << final_vms.size() << " active VMs\n" << daemon_->log();
  std::set<std::string> aliases;
  for (const auto& vm : final_vms) {
    EXPECT_TRUE(aliases.insert(vm["alias"].get<std::string>()).second) << "duplicate alias " << vm["alias"];
  }
  // Nothing else of the project exists in any state but destroyed.
  json all = json::parse(c.Get("/vms?tag.mariposa.service=web&limit=1000")->body);
  int not_destroyed = 0;
  for (const auto& vm : all) not_destroyed += vm["state"] != "destroyed";
  EXPECT_EQ(not_destroyed, 200);
  EXPECT_FALSE(WaitCompleted(task).empty());
}

TEST_F(ConvergenceTest, RestartDoesNotDuplicate) {
  WriteFile(dir_ + "/v1.yaml", manifest_);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}}));
  daemon_->Kill();
  ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // several resyncs
  EXPECT_EQ(Running(), (std::map<std::string, int>{{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}}));
}

// What the controller remembers of failures outlives it: a crash-looping
// service is still paused after kill -9 and a restart, and no create is
// tried again before its window has passed.
TEST_F(ConvergenceTest, CrashLoopSurvivesARestart) {
  auto creates = [&] {
    httplib::Client c(sim_->addr());
    auto r = c.Get("/_sim/stats");
    return r && r->status == 200 ? json::parse(r->body)["calls"].value("CreateVm", 0) : -1;
  };
  auto status = [&] { return M({"-j", "loop", "status"}).out; };
  ASSERT_EQ(RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "fail", "CreateVm", "1000", "500"})
                .exit_code,
            0);
  WriteFile(dir_ + "/loop.yaml",
            "project: loop\nservices:\n  web:\n    image: autopilotpattern/nginx@1.4.0\n"
            "    restart: {max_attempts: 2, window: 10m}\n");
  ASSERT_EQ(M({"apply", "-f", dir_ + "/loop.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return status().find("crash-looping") != std::string::npos; }, absl::Seconds(15)))
      << status();
  int before = creates();
  ASSERT_GE(before, 2);
  daemon_->Kill();
  ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // several resyncs
  std::string out = status();
  EXPECT_THAT(out, ::testing::HasSubstr("web      paused")) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("Error:  service web is crash-looping")) << out;
  EXPECT_EQ(creates(), before) << "a restart tried creates again inside the crash loop's window";
  EXPECT_THAT(daemon_->log(), ::testing::HasSubstr("kept memory recalled"));
}

}  // namespace
}  // namespace mariposa::testing
