// Decide as a table of situations: each test is one snapshot and the
// decision it must produce. No I/O, no clock.
#include "convergence/decide/decide.h"

#include <functional>

#include "convergence/decide/decide_testing.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

using testing::GoalOf;
using testing::JobOf;
using testing::Instance;
using testing::kT0;
using testing::SnapshotOf;
using testing::Task;

int Count(const Decision& d, ActionKind kind, const std::string& reason = "") {
  int n = 0;
  for (const Step& s : d.steps) n += s.action.kind == kind && (reason.empty() || s.action.reason == reason);
  return n;
}

bool HasProblem(const Decision& d, const std::string& kind) {
  for (const Problem& p : d.problems) {
    if (p.kind == kind) return !p.error.empty() && !p.reason.empty() && !p.fix.empty() && !p.impact.empty();
  }
  return false;
}

TEST(DecideTest, ConvergedOnlyWhenCountInstancesRunTheCurrentSpec) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
  Decision d = Decide(s, kT0);
  EXPECT_TRUE(d.converged);
  EXPECT_EQ(d.verdicts.at("web").state, VerdictState::kConverged);
  EXPECT_TRUE(d.steps.empty());
  // Without checks, ready means running for start.window (default 60s),
  // as for rollouts: a 5 s old instance is starting, not converged
  // (issue 31: `apply --wait` said converged 0.3 s after creation).
  s.instances[1] = Instance(s, "web", 2, "running", absl::Seconds(5));
  d = Decide(s, kT0);
  EXPECT_FALSE(d.converged);
  EXPECT_EQ(d.verdicts.at("web").state, VerdictState::kProgressing);
  EXPECT_EQ(d.verdicts.at("web").ready, 1);
  EXPECT_EQ(d.verdicts.at("web").starting, 1);
  EXPECT_EQ(d.verdicts.at("web").reason, "1/2 ready, 1 starting (ready after 1m up, start.window)");
  EXPECT_TRUE(d.steps.empty()) << "a starting instance is not replaced";
  // At start.window it is ready, and the service converged.
  s.instances[1] = Instance(s, "web", 2, "running", absl::Seconds(60));
  EXPECT_TRUE(Decide(s, kT0).converged);
  // One still provisioning: progressing, not converged.
  s.instances[1] = Instance(s, "web", 2, "provisioning", absl::Seconds(5));
  d = Decide(s, kT0);
  EXPECT_FALSE(d.converged);
  EXPECT_EQ(d.verdicts.at("web").state, VerdictState::kProgressing);
  // One of an older spec: degraded, not converged.
  s.instances[1] = Instance(s, "web", 2);
  s.instances[1].spec_hash = "older";
  d = Decide(s, kT0);
  EXPECT_FALSE(d.converged);
  EXPECT_NE(d.verdicts.at("web").state, VerdictState::kConverged);
}

// One definition of ready: the verdict counts an instance ready exactly
// when the rollout does (InstanceReady), for every age around the window.
TEST(DecideTest, VerdictReadyIsTheRolloutsReady) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 3, start: {window: 30s}}\n"));
  for (int age : {0, 1, 29, 30, 31, 300}) {
    s.instances = {Instance(s, "web", 1, "running", absl::Seconds(age)), Instance(s, "web", 2),
                   Instance(s, "web", 3)};
    Decision d = Decide(s, kT0);
    bool ready = InstanceReady(s.instances[0], kT0, absl::Seconds(30));
    EXPECT_EQ(ready, age >= 30) << age;
    EXPECT_EQ(d.verdicts.at("web").ready, ready ? 3 : 2) << age;
    EXPECT_EQ(d.converged, ready) << age;
  }
}

TEST(DecideTest, ChecksUnknownOrFailingAreNotConverged) {
  Snapshot s = SnapshotOf(GoalOf(
      "project: p\nservices:\n  web:\n    image: web@1\n    count: 2\n    healthchecks:\n      h: {type: tcp, port: 80}\n"));
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
  for (auto& i : s.instances) i.checked = true;  // health "unknown"
  Decision d = Decide(s, kT0);
  EXPECT_FALSE(d.converged);
  EXPECT_NE(d.verdicts.at("web").state, VerdictState::kConverged);
  s.instances[0].health = s.instances[1].health = "healthy";
  EXPECT_TRUE(Decide(s, kT0).converged);
  s.instances[1].health = "unhealthy";
  d = Decide(s, kT0);
  EXPECT_FALSE(d.converged);
  EXPECT_EQ(Count(d, ActionKind::kDelete, "remove-broken"), 1);
}

TEST(DecideTest, StoppedServiceIsStoppedNotBroken) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
  s.project.stopped = {"web"};
  s.instances = {Instance(s, "web", 1, "stopped"), Instance(s, "web", 2, "stopped")};
  Decision d = Decide(s, kT0);
  const ServiceVerdict& v = d.verdicts.at("web");
  EXPECT_EQ(v.broken, 0);
  EXPECT_EQ(v.stopped, 2);
  EXPECT_EQ(v.state, VerdictState::kConverged);
  EXPECT_TRUE(d.steps.empty());
}

TEST(DecideTest, VmapiOutageIsUnknownWithAProblem) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
  s.actual_known = false;
  s.api_problems = {{"VMAPI", "http://127.0.0.1:1", "connection refused", kT0 - absl::Minutes(3)}};
  Decision d = Decide(s, kT0);
  EXPECT_FALSE(d.converged);
  EXPECT_TRUE(d.steps.empty());
  EXPECT_EQ(d.verdicts.at("web").state, VerdictState::kUnknown);
  ASSERT_TRUE(HasProblem(d, "triton-unreachable"));
  EXPECT_NE(d.problems[0].error.find("VMAPI"), std::string::npos);
  EXPECT_NE(d.problems[0].error.find("http://127.0.0.1:1"), std::string::npos);
  EXPECT_NE(d.problems[0].reason.find("since"), std::string::npos);
}

TEST(DecideTest, MissingImageFailsTheServiceWithAProblem) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@9, count: 2}\n"));
  s.images.clear();
  s.image_errors["web"] = "IMGAPI has no image web@9";
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kCreate), 0);
  EXPECT_EQ(d.verdicts.at("web").state, VerdictState::kFailed);
  EXPECT_TRUE(HasProblem(d, "image-missing"));
}

TEST(DecideTest, AgentInstallFailingEverywhereIsFailed) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  cn-agent:\n    image: cn-agent@2\n    compute_type: agent\n"));
  s.images["cn-agent"] = triton::Image{"img-2", "cn-agent", "2", "active"};
  s.servers_known = true;
  for (int k = 0; k < 2; ++k) {
    triton::Server srv;
    srv.uuid = absl::StrCat("s", k);
    srv.hostname = absl::StrCat("cn", k);
    srv.status = "running";
    srv.agents = {{"cn-agent", "1", "img-1", ""}};
    s.servers.push_back(srv);
  }
  JobRecord j = JobOf("t1", "install", "cn-agent", "s0");
  s.finished = {{j, false, "image not in IMGAPI"}};
  Decision d = Decide(s, kT0);
  EXPECT_EQ(d.verdicts.at("cn-agent").state, VerdictState::kFailed);
  EXPECT_FALSE(d.converged);
  EXPECT_TRUE(HasProblem(d, "agent-install-failing"));
  EXPECT_TRUE(d.installs.empty());  // backoff after the failure
}

// Servers of one agent service, each running `version` of cn-agent.
std::vector<triton::Server> AgentServers(int n, const std::string& name, const std::string& image_uuid) {
  std::vector<triton::Server> out;
  for (int k = 0; k < n; ++k) {
    triton::Server srv;
    srv.uuid = absl::StrCat("s", k);
    srv.hostname = absl::StrCat("cn", k);
    srv.status = "running";
    srv.agents = {{name, "1", image_uuid, ""}};
    out.push_back(srv);
  }
  return out;
}

TEST(DecideTest, AnImageOnlyInTheSourceIsImportedOnceBeforeAnyCreate) {
  Snapshot s = SnapshotOf(GoalOf(
      "project: p\nservices:\n  a:\n    image: wp@2\n    count: 2\n  b:\n    image: wp@2\n    count: 1\n"));
  for (const char* svc : {"a", "b"}) {
    s.images.erase(svc);
    triton::Image im{"img-wp2", "wp", "2", "active"};
    im.size = 72351744;
    im.source = "https://updates";
    s.imports[svc] = im;
  }
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kCreate), 0);
  ASSERT_EQ(d.imports.size(), 1u);  // one job for the image both services need
  EXPECT_EQ(d.imports[0].image_uuid, "img-wp2");
  EXPECT_EQ(d.verdicts.at("a").state, VerdictState::kProgressing);
  EXPECT_EQ(d.verdicts.at("a").reason, "importing image wp@2 (69 MiB) from https://updates");
  // In flight: not asked again. Failed: the verdict says so, retried after a backoff.
  JobRecord j = JobOf("j1", "import", "a", "img-wp2");
  j.api = "imgapi";
  s.in_flight = {j};
  EXPECT_TRUE(Decide(s, kT0).imports.empty());
  s.in_flight.clear();
  s.finished = {{j, false, "source unreachable"}};
  d = Decide(s, kT0);
  EXPECT_EQ(d.verdicts.at("b").state, VerdictState::kFailed);
  EXPECT_TRUE(HasProblem(d, "image-import-failing"));
  EXPECT_TRUE(d.imports.empty());
  s.finished.clear();
  s.memory = d.memory;
  EXPECT_TRUE(Decide(s, kT0 + absl::Milliseconds(500)).imports.empty());
  EXPECT_EQ(Decide(s, kT0 + absl::Seconds(2)).imports.size(), 1u);
}

TEST(DecideTest, AServerIsSkippedAfterMaxAttemptsFailedInstallsAndTheRolloutFails) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  cn-agent:\n    image: cn-agent@2\n"
                                 "    compute_type: agent\n    restart: {max_attempts: 2}\n"));
  s.images["cn-agent"] = triton::Image{"img-2", "cn-agent", "2", "active"};
  s.servers_known = true;
  s.servers = AgentServers(2, "cn-agent", "img-1");
  s.servers[1].agents[0].image_uuid = "img-2";  // cn1 is current
  TaskRecord t;
  t.uuid = "t-roll";
  t.kind = "reprovision";
  t.services = {"cn-agent"};
  t.state = "active";
  t.origin = "auto";
  t.version_uuid = s.goal->version_uuid;
  s.tasks = {t};
  absl::Time now = kT0;
  for (int round = 0; round < 2; ++round) {
    JobRecord j = JobOf(absl::StrCat("j", round), "install", "cn-agent", "s0");
    s.finished = {{j, false, "disk full"}};
    Decision d = Decide(s, now);
    s.memory = d.memory;
    s.finished.clear();
    now += absl::Minutes(5);
  }
  Decision d = Decide(s, now);
  EXPECT_TRUE(d.installs.empty());
  EXPECT_EQ(d.verdicts.at("cn-agent").state, VerdictState::kDegraded);
  EXPECT_EQ(d.verdicts.at("cn-agent").reason, "1 servers skipped after 2 failed installs: cn0");
  bool failed = false;
  for (const TaskChange& c : d.task_changes) {
    failed |= c.task == "t-roll" && c.state == "failed" && c.note.find("cn0") != std::string::npos;
  }
  EXPECT_TRUE(failed);
  const std::vector<AgentServer>& rows = d.agent_servers.at("cn-agent");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].state, "skipped");
  EXPECT_EQ(rows[0].error, "disk full");
  EXPECT_EQ(rows[1].state, "current");
  // A user's reprovision tries it again.
  TaskRecord user = t;
  user.uuid = "t-user";
  user.origin = "user";
  user.state = "queued";
  s.tasks = {user};
  d = Decide(s, now);
  ASSERT_EQ(d.installs.size(), 1u);
  EXPECT_EQ(d.installs[0].server, "s0");
}

// sdcadm's forced same-image update: a user's reprovision reinstalls the
// current image on every selected server, `rolling` at a time, each once;
// then the task completes. An automatic task never does.
TEST(DecideTest, AUsersReprovisionReinstallsTheCurrentAgentOnEveryServerOnce) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  cn-agent:\n    image: cn-agent@2\n"
                                 "    compute_type: agent\n    update: {rolling: 2}\n"));
  s.images["cn-agent"] = triton::Image{"img-2", "cn-agent", "2", "active"};
  s.servers_known = true;
  s.servers = AgentServers(3, "cn-agent", "img-2");  // all current
  TaskRecord t;
  t.uuid = "t-auto";
  t.kind = "reprovision";
  t.services = {"cn-agent"};
  t.state = "queued";
  t.origin = "auto";
  t.version_uuid = s.goal->version_uuid;
  s.tasks = {t};
  Decision d = Decide(s, kT0);
  EXPECT_TRUE(d.installs.empty()) << "an automatic task does not reinstall";
  t.uuid = "t-user";
  t.origin = "user";
  s.tasks = {t};
  std::set<std::string> installed;
  absl::Time now = kT0;
  for (int round = 0; round < 2; ++round) {
    d = Decide(s, now);
    EXPECT_EQ(d.verdicts.at("cn-agent").state, VerdictState::kProgressing) << round;
    EXPECT_NE(d.verdicts.at("cn-agent").reason.find("reinstalling 2 (forced)"), std::string::npos);
    ASSERT_EQ(d.installs.size(), round == 0 ? 2u : 1u) << round;
    s.memory = d.memory;
    s.finished.clear();
    for (const AgentInstall& in : d.installs) {
      EXPECT_TRUE(installed.insert(in.server).second) << in.server << " reinstalled twice";
      JobRecord j = JobOf("j-" + in.server, "install", "cn-agent", in.server);
      j.alias = "cn-agent 2.14.1";
      j.task_uuid = "t-user";
      s.finished.push_back({j, true, ""});
    }
    s.tasks[0].state = "active";
    now += absl::Seconds(10);
  }
  // Issue 31: each agent.install event names its server.
  int install_events = 0;
  for (const EventRecord& e : d.events) {
    if (e.kind != "agent.install") continue;
    ++install_events;
    EXPECT_EQ(e.detail, "cn-agent 2.14.1 on server " + e.subject);
  }
  EXPECT_EQ(install_events, 2);
  d = Decide(s, now);
  EXPECT_TRUE(d.installs.empty());
  EXPECT_EQ(installed.size(), 3u);
  bool completed = false;
  for (const TaskChange& c : d.task_changes) completed |= c.task == "t-user" && c.state == "completed";
  EXPECT_TRUE(completed);
  EXPECT_EQ(d.verdicts.at("cn-agent").state, VerdictState::kConverged);
}

TEST(DecideTest, ARemovedAgentServiceIsUninstalledRollingAndCountsAsLeftover) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web:\n    image: web@1\n    count: 0\n"));
  s.servers_known = true;
  s.servers = AgentServers(3, "vm-agent", "img-1");
  s.servers[2].status = "unknown";  // down: waits
  s.removed_agents["vm-agent"] = {"vm-agent", 1};
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.uninstalls.size(), 1u);
  EXPECT_EQ(d.uninstalls[0].server, "s0");
  EXPECT_EQ(d.uninstalls[0].name, "vm-agent");
  EXPECT_EQ(d.leftover, 3);
  EXPECT_FALSE(d.converged);
  JobRecord j = JobOf("u1", "uninstall", "vm-agent", "s0");
  j.api = "cnapi";
  s.in_flight = {j};
  EXPECT_TRUE(Decide(s, kT0).uninstalls.empty());  // a step at a time
  s.in_flight.clear();
  for (auto& srv : s.servers) srv.agents.clear();
  d = Decide(s, kT0);
  EXPECT_EQ(d.leftover, 0);
  EXPECT_TRUE(d.converged);
}

// Only the servers the removed service selected are uninstalled: a copy on a
// server it excluded is not the service's.
TEST(DecideTest, ARemovedAgentIsUninstalledOnlyFromTheServersItSelected) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web:\n    image: web@1\n    count: 0\n"));
  s.servers_known = true;
  s.servers = AgentServers(2, "cn-agent", "img-1");
  Snapshot::RemovedAgent ra{"cn-agent", 5};
  ra.exclude = {"cn0"};
  s.removed_agents["cn-agent"] = ra;
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.uninstalls.size(), 1u);
  EXPECT_EQ(d.uninstalls[0].server, "s1");
  EXPECT_EQ(d.leftover, 1);
}

// A project deleted with agent services: they are uninstalled first; the
// project goes once nothing of it is left.
TEST(DecideTest, ADeletedProjectUninstallsItsAgentsBeforeItGoes) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web:\n    image: web@1\n    count: 0\n"));
  s.goal = nullptr;
  s.project.deleting = true;
  s.servers_known = true;
  s.servers = AgentServers(2, "vm-agent", "img-1");
  s.removed_agents["vm-agent"] = {"vm-agent", 2};
  Decision d = Decide(s, kT0);
  EXPECT_FALSE(d.delete_project);
  EXPECT_EQ(d.uninstalls.size(), 2u);
  for (auto& srv : s.servers) srv.agents.clear();
  d = Decide(s, kT0);
  EXPECT_TRUE(d.delete_project);
  EXPECT_TRUE(d.uninstalls.empty());
}

TEST(DecideTest, HealthReplacementsCountTowardTheCrashLoop) {
  Snapshot s = SnapshotOf(GoalOf(
      "project: p\nservices:\n  web:\n    image: web@1\n    count: 1\n    healthchecks:\n      h: {type: tcp, port: 80}\n"));
  absl::Time now = kT0;
  // The check never passes: each instance is replaced, ~70 s apart (slower
  // than the 60 s window).
  for (int round = 0; round < 3; ++round) {
    s.instances = {Instance(s, "web", 1, "running", absl::Seconds(70))};
    s.instances[0].created = now - absl::Seconds(70);
    s.instances[0].checked = true;
    s.instances[0].health = "unhealthy";
    Decision d = Decide(s, now);
    ASSERT_EQ(Count(d, ActionKind::kDelete, "remove-broken"), 1) << round;
    s.memory = d.memory;
    now += absl::Seconds(70);
  }
  s.instances.clear();
  Decision d = Decide(s, now - absl::Seconds(60));
  EXPECT_EQ(Count(d, ActionKind::kCreate), 0);
  EXPECT_EQ(d.verdicts.at("web").state, VerdictState::kPaused);
  EXPECT_TRUE(HasProblem(d, "crash-loop"));
}

// Issue 31: failed provisions left after a burst of job failures were
// removed one per budget interval (and not at all in a crash loop), though
// removing them takes no capacity away.
TEST(DecideTest, FailedProvisionsAreRemovedAtOnceEvenInACrashLoop) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 10}\n"));
  for (int k = 1; k <= 6; ++k) s.instances.push_back(Instance(s, "web", k));
  for (int k = 7; k <= 10; ++k) s.instances.push_back(Instance(s, "web", k, "failed", absl::Seconds(5)));
  // A crash loop: max_attempts (3) failures in a row just now.
  absl::Time now = kT0;
  Decision warm = Decide(s, now);
  s.memory = warm.memory;
  for (int k = 0; k < 3; ++k) s.memory["web"].history.Failure(RestartPolicy{3, absl::Minutes(1)}, now, 0.5);
  Decision d = Decide(s, now);
  ASSERT_EQ(d.verdicts.at("web").state, VerdictState::kPaused) << d.verdicts.at("web").reason;
  EXPECT_EQ(Count(d, ActionKind::kDelete, "remove-broken"), 4) << "every failed provision goes at once";
  EXPECT_EQ(Count(d, ActionKind::kCreate), 0) << "replacements stay paused";
  // A stopped (once running) instance is still removed at the budget's pace.
  s.instances[0].state = "stopped";
  d = Decide(s, now);
  EXPECT_EQ(Count(d, ActionKind::kDelete, "remove-broken"), 4);
}

TEST(DecideTest, HardPlacementWaitsForItsTargetInsteadOfBeingBroken) {
  Snapshot s = SnapshotOf(GoalOf(
      "project: p\nservices:\n  app:\n    image: app@1\n    count: 2\n    placement: ['service==db']\n"
      "  db: {image: db@1, count: 1}\n"));
  Decision d = Decide(s, kT0);
  int app = 0, db = 0;
  for (const Step& st : d.steps) (st.action.service == "app" ? app : db) += st.action.kind == ActionKind::kCreate;
  EXPECT_EQ(app, 0);
  EXPECT_EQ(db, 1);
  EXPECT_EQ(d.verdicts.at("app").state, VerdictState::kPaused);
  EXPECT_NE(d.verdicts.at("app").reason.find("service==db"), std::string::npos);
  // Once db is placed, app's creates go.
  s.instances = {Instance(s, "db", 1, "provisioning")};
  d = Decide(s, kT0);
  app = 0;
  for (const Step& st : d.steps) app += st.action.service == "app" && st.action.kind == ActionKind::kCreate;
  EXPECT_EQ(app, 2);
}

TEST(DecideTest, TerminatedRolloutSaysHowManyAreOnAnOlderSpec) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@2, count: 6}\n", 2));
  for (int k = 1; k <= 6; ++k) s.instances.push_back(Instance(s, "web", k));
  for (int k = 3; k < 6; ++k) s.instances[k].spec_hash = "old";
  Decision d = Decide(s, kT0);
  const ServiceVerdict& v = d.verdicts.at("web");
  EXPECT_EQ(v.state, VerdictState::kDegraded);
  EXPECT_EQ(v.old_spec, 3);
  EXPECT_NE(v.reason.find("3 of 6"), std::string::npos);
  EXPECT_NE(v.fix.find("reprovision --service web"), std::string::npos);
  EXPECT_TRUE(HasProblem(d, "older-spec"));
}

TEST(DecideTest, ATaskForANewerVersionWaitsForIt) {
  // The snapshot's goal is version 1; a reprovision queued for version 2
  // (added right after the apply) must not complete against version 1.
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n", 1));
  s.version_numbers["v2"] = 2;
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
  TaskRecord t = Task("r1", "reprovision", "queued");
  t.version_uuid = "v2";
  s.tasks = {t};
  Decision d = Decide(s, kT0);
  EXPECT_TRUE(d.task_changes.empty());
}

TEST(DecideTest, FreezeHoldsAutomaticWorkAndSaysWho) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
  TaskRecord f = Task("f1", "freeze", "active");
  f.reason = "maintenance";
  s.tasks = {f};
  Decision d = Decide(s, kT0);
  EXPECT_TRUE(d.steps.empty());
  EXPECT_EQ(d.held.size(), 2u);
  EXPECT_EQ(d.verdicts.at("web").state, VerdictState::kPaused);
  EXPECT_NE(d.verdicts.at("web").reason.find("alice"), std::string::npos);
  EXPECT_TRUE(d.new_tasks.empty());
}

TEST(DecideTest, QueuedStopActivatesThenStopsUnderItsTask) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
  s.tasks = {Task("s1", "stop", "queued", {"web"})};
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.task_changes.size(), 1u);
  EXPECT_EQ(d.task_changes[0].state, "active");
  EXPECT_EQ(Count(d, ActionKind::kStop), 2);
  for (const Step& st : d.steps) EXPECT_EQ(st.task, "s1");
}

TEST(DecideTest, ACreateInFlightIsNotSentTwiceAndNamesAreTheLowestFree) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 3}\n"));
  s.instances = {Instance(s, "web", 2)};
  JobRecord j = JobOf("create:x", "create", "web", "x");
  j.alias = "p-web-1";
  s.in_flight = {j};  // VMAPI has not listed it yet
  Decision d = Decide(s, kT0);
  ASSERT_EQ(Count(d, ActionKind::kCreate), 1);
  EXPECT_EQ(d.steps[0].alias, "p-web-3");
}

TEST(DecideTest, FinishedJobsAreCountedOnceEach) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 1}\n"));
  s.instances = {Instance(s, "web", 1)};
  JobRecord j = JobOf("job-1", "delete", "web");
  j.task_uuid = "t1";
  j.reason = "reprovision";
  s.finished = {{j, true, ""}};
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.job_progress.size(), 1u);
  EXPECT_EQ(d.job_progress[0].first, "job-1");
  EXPECT_EQ(d.job_progress[0].second.deleted, 1);
  EXPECT_EQ(d.job_progress[0].second.replaced, 1);
}

// restart.condition decides which broken instances are replaced; the others
// keep their place, nothing is created for them, and the verdict says why
// and what to do.
TEST(DecideTest, RestartConditionChoosesWhatIsReplaced) {
  auto with = [](const std::string& cond) {
    // count 20: the replacement budget (10 % of count) allows both at once.
    Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web:\n    image: web@1\n    count: 20\n" +
                                   (cond.empty() ? std::string() : "    restart: {condition: " + cond + "}\n")));
    for (int k = 1; k <= 18; ++k) s.instances.push_back(Instance(s, "web", k));
    s.instances.push_back(Instance(s, "web", 19, "stopped"));
    s.instances.push_back(Instance(s, "web", 20, "unknown"));
    return Decide(s, kT0);
  };
  // The default covers both: the stopped one and the one on a silent server.
  Decision d = with("");
  EXPECT_EQ(Count(d, ActionKind::kDelete, "remove-broken"), 2);
  EXPECT_EQ(Count(d, ActionKind::kCreate, "replace-broken"), 2);
  d = with("always");
  EXPECT_EQ(Count(d, ActionKind::kCreate, "replace-broken"), 2);
  // on-failure: the stopped one only; the other keeps its place.
  d = with("[on-failure]");
  EXPECT_EQ(Count(d, ActionKind::kDelete, "remove-broken"), 1);
  EXPECT_EQ(Count(d, ActionKind::kCreate), 1);
  d = with("[on-cn-restart]");
  ASSERT_EQ(Count(d, ActionKind::kDelete, "remove-broken"), 1);
  EXPECT_EQ(Count(d, ActionKind::kCreate), 1);
  for (const Step& st : d.steps) {
    if (st.action.kind == ActionKind::kDelete) {
      EXPECT_EQ(st.action.instance, "web-uuid-20");
    }
  }
  // never: nothing is replaced or created; degraded, with the reason and a fix.
  d = with("never");
  EXPECT_TRUE(d.steps.empty());
  EXPECT_FALSE(d.converged);
  const ServiceVerdict& v = d.verdicts.at("web");
  EXPECT_EQ(v.state, VerdictState::kDegraded);
  EXPECT_EQ(v.reason, "2 broken instances are not replaced (restart.condition: never)");
  EXPECT_NE(v.fix.find("start --service web"), std::string::npos);
  EXPECT_TRUE(HasProblem(d, "not-restarted"));
  // A scale-down removes those left broken first.
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web:\n    image: web@1\n    count: 1\n"
                                 "    restart: {condition: never}\n"));
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2, "stopped")};
  d = Decide(s, kT0);
  ASSERT_EQ(Count(d, ActionKind::kDelete, "scale-down"), 1);
  EXPECT_EQ(d.steps[0].action.instance, "web-uuid-2");
}

// start.parallelism bounds the VMAPI starts of a service in flight at once.
TEST(DecideTest, StartParallelismBoundsStartsInFlight) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web:\n    image: web@1\n    count: 4\n"
                                 "    start: {parallelism: 2}\n"));
  for (int k = 1; k <= 4; ++k) s.instances.push_back(Instance(s, "web", k, "stopped"));
  s.tasks = {Task("t1", "start", "active", {"web"})};
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kStart), 2);
  int held = 0;
  for (const Held& h : d.held) held += h.action.kind == ActionKind::kStart && h.why == "start.parallelism 2: 2 starting";
  EXPECT_EQ(held, 2);
  // One start in flight leaves room for one more.
  s.in_flight = {JobOf("job-1", "start", "web", "web-uuid-1")};
  d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kStart), 1);
}

// A rollout of version 2 over 3 instances of version 1, its task active
// since kT0 - 10m; `spec` adds update fields.
Snapshot Rollout(const std::string& update, TaskRecord* task) {
  auto v1 = GoalOf("project: p\nservices:\n  web:\n    image: i\n    count: 3\n    start: {window: 10s}\n");
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web:\n    image: i2\n    count: 3\n    start: {window: 10s}\n"
                                 "    update: {max_surge: 0, " + update + "}\n", 2));
  Snapshot old = SnapshotOf(v1);
  for (int k = 1; k <= 3; ++k) s.instances.push_back(Instance(old, "web", k));
  *task = Task("t1", "reprovision", "active", {"web"});
  task->version_uuid = "v2";
  task->started_at = kT0 - absl::Minutes(10);
  s.tasks = {*task};
  return s;
}

TEST(DecideTest, APausedRolloutStartsNothingUntilResumed) {
  TaskRecord t;
  Snapshot s = Rollout("rolling: 1", &t);
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kDelete), 1);  // max_surge 0: one old goes first
  s.tasks[0].paused = "alice at 2027-01-15T08:00:00Z: checking the canary";
  d = Decide(s, kT0);
  EXPECT_TRUE(d.steps.empty());
  EXPECT_TRUE(d.task_changes.empty());  // still open, not ended
  const ServiceVerdict& v = d.verdicts.at("web");
  EXPECT_NE(v.state, VerdictState::kConverged);
  EXPECT_NE(v.reason.find("paused by alice"), std::string::npos) << v.reason;
  s.tasks[0].paused.clear();
  EXPECT_EQ(Count(Decide(s, kT0), ActionKind::kDelete), 1);
}

TEST(DecideTest, RolloutDeadlinesFailTheRollout) {
  TaskRecord t;
  // One new instance came up 6 minutes ago and is not ready (checks failing).
  Snapshot s = Rollout("healthy_deadline: 5m", &t);
  InstanceState fresh = Instance(s, "web", 4, "running", absl::Minutes(6));
  fresh.checked = true;
  fresh.health = "starting";
  fresh.up_since = kT0 - absl::Minutes(6);
  s.instances.push_back(fresh);
  s.instances.erase(s.instances.begin());
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.task_changes.size(), 1u);
  EXPECT_EQ(d.task_changes[0].state, "failed");
  EXPECT_NE(d.task_changes[0].note.find("update.healthy_deadline 5m: p-web-4 of web was not ready 6m"),
            std::string::npos)
      << d.task_changes[0].note;
  EXPECT_TRUE(d.steps.empty());
  // Within the deadline: the rollout goes on.
  s.instances.back().up_since = kT0 - absl::Minutes(4);
  d = Decide(s, kT0);
  EXPECT_TRUE(d.task_changes.empty() || d.task_changes[0].state != "failed");
  // Without checks: not ready until start.window (10s) has passed.
  s.instances.back().checked = false;
  s.instances.back().health = "unknown";
  s.instances.back().up_since = kT0 - absl::Seconds(8);
  d = Decide(s, kT0);
  EXPECT_TRUE(d.task_changes.empty() || d.task_changes[0].state != "failed");
  d = Decide(s, kT0 + absl::Minutes(5));  // ready since kT0 + 2s
  for (const TaskChange& c : d.task_changes) EXPECT_NE(c.state, "failed") << c.note;
  // One created in the millisecond the rollout started is the rollout's
  // (VMAPI's create_timestamp has milliseconds, the task's start more).
  s.tasks[0].started_at = kT0 - absl::Minutes(6) + absl::Microseconds(400);
  s.instances.back().checked = true;
  s.instances.back().health = "starting";
  s.instances.back().up_since = kT0 - absl::Minutes(6);
  d = Decide(s, kT0);
  ASSERT_FALSE(d.task_changes.empty());
  EXPECT_EQ(d.task_changes[0].state, "failed");
  s.tasks[0].started_at = kT0 - absl::Minutes(10);
  // An instance up before the rollout started is not the rollout's.
  s.instances.back().up_since = kT0 - absl::Minutes(11);
  d = Decide(s, kT0);
  EXPECT_TRUE(d.task_changes.empty() || d.task_changes[0].state != "failed");

  // progress_deadline: nothing became ready for 10 minutes.
  s = Rollout("progress_deadline: 8m", &t);
  d = Decide(s, kT0);
  ASSERT_EQ(d.task_changes.size(), 1u);
  EXPECT_EQ(d.task_changes[0].state, "failed");
  EXPECT_NE(d.task_changes[0].note.find("update.progress_deadline 8m"), std::string::npos);
  // An instance of the new spec ready 2 minutes ago is progress.
  InstanceState ready = Instance(s, "web", 4, "running", absl::Minutes(3));
  ready.up_since = kT0 - absl::Minutes(3);  // + start.window 10s
  s.instances.push_back(ready);
  d = Decide(s, kT0);
  for (const TaskChange& c : d.task_changes) EXPECT_NE(c.state, "failed") << c.note;
  // A resume restarts the clock.
  s.instances.pop_back();
  s.tasks[0].resumed_at = kT0 - absl::Minutes(1);
  d = Decide(s, kT0);
  for (const TaskChange& c : d.task_changes) EXPECT_NE(c.state, "failed") << c.note;
  // auto_rollback turns a missed deadline into a rollback.
  s = Rollout("progress_deadline: 8m, auto_rollback: true", &t);
  d = Decide(s, kT0);
  ASSERT_EQ(d.rollbacks.size(), 1u);
  EXPECT_NE(d.rollbacks[0].why.find("progress_deadline"), std::string::npos);
}

TEST(DecideTest, MinHealthyTimeHoldsTheNextStep) {
  TaskRecord t;
  Snapshot s = Rollout("rolling: 1, min_healthy_time: 30s", &t);
  s.instances.erase(s.instances.begin());
  InstanceState fresh = Instance(s, "web", 4, "running", absl::Minutes(1));
  fresh.checked = true;
  fresh.health = "healthy";
  fresh.healthy_since = kT0 - absl::Seconds(20);
  s.instances.push_back(fresh);
  // Healthy for 20 s of 30: not counted yet, so no old one may go.
  EXPECT_EQ(Count(Decide(s, kT0), ActionKind::kDelete), 0);
  EXPECT_EQ(Count(Decide(s, kT0 + absl::Seconds(11)), ActionKind::kDelete), 1);
}

TEST(DecideTest, AnInPlaceRolloutStopsAtTheFirstInstanceTheNewImageBreaks) {
  auto goal = GoalOf("project: p\nservices:\n  db:\n    image: i2\n    count: 3\n    delegate_dataset: true\n"
                     "    update: {strategy: reprovision}\n"
                     "    healthchecks: {sql: {type: tcp, port: 3306}}\n", 2);
  Snapshot s = SnapshotOf(goal);
  for (int k = 1; k <= 3; ++k) {
    InstanceState i = Instance(s, "db", k);
    i.delegate_dataset = true;
    i.checked = true;
    i.health = "healthy";
    i.image_uuid = k == 1 ? "img-db" : "old-image";
    if (k != 1) i.spec_hash = "old";
    s.instances.push_back(i);
  }
  TaskRecord t = Task("t1", "reprovision", "active", {"db"});
  t.version_uuid = "v2";
  t.started_at = kT0 - absl::Minutes(2);
  s.tasks = {t};
  s.instances[0].up_since = kT0 - absl::Minutes(1);  // reprovisioned by this rollout
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kReprovision), 1);  // healthy: the next one goes
  s.instances[0].health = "unhealthy";
  d = Decide(s, kT0);
  ASSERT_EQ(d.task_changes.size(), 1u);
  EXPECT_EQ(d.task_changes[0].state, "failed");
  EXPECT_NE(d.task_changes[0].note.find("p-db-1 of db fails its health checks since it was reprovisioned"),
            std::string::npos)
      << d.task_changes[0].note;
  EXPECT_EQ(Count(d, ActionKind::kReprovision), 0);
  // The broken one is kept (its dataset), not destroyed; a new one takes its place.
  EXPECT_EQ(Count(d, ActionKind::kDelete), 0);
  EXPECT_EQ(Count(d, ActionKind::kPreserve), 1);
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// Issue 31: a changed check used to run at once against the running
// instances. Each instance keeps its own version's checks until replaced,
// and a changed check makes it outdated, so it rolls out.
// CNS names are set in place: an instance whose triton.cns.services tag is
// not the service's names is retagged (not replaced), once, and the service
// is not converged until it is.
TEST(DecideTest, CnsNamesAreSetInPlace) {
  struct Case {
    std::string name, cns;     // the manifest's cns: ("" = default)
    std::string tag;           // the instance's tag
    bool in_flight = false;    // a job already on it
    std::string state = "running";
    int retags;
  };
  const std::vector<Case> cases = {
      {"default, tagged", "", "p-web", false, "running", 0},
      {"default, created before names", "", "", false, "running", 1},
      {"renamed", "cns: [www, api]", "p-web", false, "running", 1},
      {"turned off", "cns: false", "p-web", false, "running", 1},
      {"off and untagged", "cns: false", "", false, "running", 0},
      {"stopped by `mariposa stop` too", "cns: www", "p-web", false, "stopped", 1},
      {"a job on it already", "cns: www", "p-web", true, "running", 0},
      {"provisioning waits", "cns: www", "", false, "provisioning", 0},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf(absl::StrCat("project: p\nservices:\n  web: {image: web@1, count: 1",
                                                c.cns.empty() ? "" : ", ", c.cns, "}\n")));
    s.instances = {Instance(s, "web", 1, c.state)};
    s.instances[0].cns = c.tag;
    if (c.state == "stopped") s.project.stopped.insert("web");
    if (c.in_flight) s.in_flight = {JobOf("j1", "retag", "web", s.instances[0].uuid)};
    Decision d = Decide(s, kT0);
    EXPECT_EQ(Count(d, ActionKind::kRetag, "cns-names"), c.retags) << c.name;
    EXPECT_EQ(Count(d, ActionKind::kCreate) + Count(d, ActionKind::kDelete), 0) << c.name << ": never replaced";
    if (c.retags > 0) {
      EXPECT_FALSE(d.converged) << c.name;
      EXPECT_EQ(d.verdicts.at("web").state, VerdictState::kProgressing) << c.name;
    }
  }
}

// Issue 48: an instance changed by hand in VMAPI (its package, tags or
// metadata differ from what Mariposa made it with) is put back in place by
// a retag naming what changed, the service is not converged meanwhile and
// says so; after kMaxPutBacks put-backs that did not hold it stops, and a
// problem says why.
TEST(DecideTest, InstancesChangedByHandArePutBack) {
  struct Case {
    std::string name, changed;
    int put_backs = 0;        // put-backs that already ended
    bool in_flight = false;
    std::string state = "running";
    int retags;
    VerdictState verdict;
    bool problem = false;
  };
  const std::vector<Case> cases = {
      {"unchanged", "", 0, false, "running", 0, VerdictState::kConverged},
      {"metadata", "metadata", 0, false, "running", 1, VerdictState::kProgressing},
      {"package and tags", "package+tags", 0, false, "running", 1, VerdictState::kProgressing},
      {"stopped", "metadata", 0, false, "stopped", 1, VerdictState::kProgressing},
      {"a put-back in flight", "metadata", 1, true, "running", 0, VerdictState::kProgressing},
      {"changed again twice", "metadata", 2, false, "running", 1, VerdictState::kProgressing},
      {"keeps changing", "package", 3, false, "running", 0, VerdictState::kDegraded, true},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 1}\n"));
    s.instances = {Instance(s, "web", 1, c.state)};
    s.instances[0].cns = "p-web";
    s.instances[0].hand_changed = c.changed;
    if (c.state == "stopped") s.project.stopped.insert("web");
    if (c.put_backs > 0) {
      s.memory["web"].spec_hash = s.goal->services.at("web").record.spec_hash;  // else forgotten
      s.memory["web"].put_backs[s.instances[0].uuid] = c.put_backs;
    }
    if (c.in_flight) s.in_flight = {JobOf("j1", "retag", "web", s.instances[0].uuid)};
    Decision d = Decide(s, kT0);
    EXPECT_EQ(Count(d, ActionKind::kRetag), c.retags) << c.name;
    if (c.retags > 0) {
      EXPECT_EQ(Count(d, ActionKind::kRetag, c.changed), 1) << c.name << ": the reason names it";
    }
    EXPECT_EQ(Count(d, ActionKind::kCreate) + Count(d, ActionKind::kDelete), 0) << c.name << ": never replaced";
    if (c.state == "running") {
      EXPECT_EQ(d.verdicts.at("web").state, c.verdict) << c.name;
    }
    EXPECT_EQ(d.converged, c.changed.empty()) << c.name;
    if (!c.changed.empty() && c.state == "running") {
      EXPECT_TRUE(absl::StrContains(d.verdicts.at("web").reason,
                                    "p-web-1 (" + absl::StrReplaceAll(c.changed, {{"+", ", "}}) +
                                        ") was changed in VMAPI by hand"))
          << c.name << ": " << d.verdicts.at("web").reason;
    }
    bool problem = false;
    for (const auto& pr : d.problems) problem |= pr.kind == "instance-drift";
    EXPECT_EQ(problem, c.problem) << c.name;
  }
  // A put-back that ended is counted, with its event; one that holds is
  // forgotten at the next sync.
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 1}\n"));
  s.instances = {Instance(s, "web", 1, "running")};
  s.instances[0].cns = "p-web";
  FinishedJob f{JobOf("j1", "retag", "web", s.instances[0].uuid), true, ""};
  f.job.reason = absl::StrCat(kPutBack, "metadata");
  s.finished = {f};
  Decision d = Decide(s, kT0);
  EXPECT_EQ(d.memory.at("web").put_backs.size(), 0u) << "held: forgotten";
  bool event = false;
  for (const auto& e : d.events) event |= e.kind == "instance.put-back";
  EXPECT_TRUE(event);
  s.instances[0].hand_changed = "metadata";
  d = Decide(s, kT0);
  EXPECT_EQ(d.memory.at("web").put_backs.at(s.instances[0].uuid), 1);
}

// Issue 48, 8: the automatic task says why it replaces: an instance
// destroyed out of band (gone at the same count, no removal of ours), a
// stopped one, a failed one; a count raised by an apply is the apply's.
TEST(DecideTest, AutomaticTasksNameWhatTheyReplace) {
  struct Case {
    std::string name;
    std::function<void(Snapshot*)> set;
    std::string trigger;
  };
  const std::vector<Case> cases = {
      {"destroyed out of band",
       [](Snapshot* s) {
         s->instances.pop_back();
         s->memory["web"].last_count = 2;
         s->memory["web"].last_seen = 2;
       },
       "destroyed"},
      {"stopped", [](Snapshot* s) { s->instances[1].state = "stopped"; }, "stopped"},
      {"failed", [](Snapshot* s) { s->instances[1].state = "failed"; }, "failed"},
      {"raised by an apply",
       [](Snapshot* s) {
         s->instances.pop_back();
         s->memory["web"].last_count = 1;
         s->memory["web"].last_seen = 1;
       },
       "apply"},
      {"removed by us (a job of ours ended)",
       [](Snapshot* s) {
         FinishedJob f{JobOf("j1", "delete", "web", s->instances[1].uuid), true, ""};
         s->finished = {f};
         s->instances.pop_back();
         s->memory["web"].last_count = 2;
         s->memory["web"].last_seen = 2;
       },
       "apply"},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
    s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
    s.memory["web"].spec_hash = s.goal->services.at("web").record.spec_hash;
    c.set(&s);
    Decision d = Decide(s, kT0);
    ASSERT_EQ(d.new_tasks.size(), 1u) << c.name;
    EXPECT_EQ(d.new_tasks[0].trigger, c.trigger) << c.name;
    EXPECT_EQ(d.memory.at("web").last_count, 2) << c.name;
  }
}

// Firewall rules (DecideFirewall), as a table: what is created, updated and
// deleted in FWAPI, what each instance carries in place, and when the
// project is converged.
TEST(DecideTest, FirewallRulesAndTheirInstances) {
  const std::string text =
      "project: p\nservices:\n  web: {image: web@1, count: 1}\n  db: {image: db@1, count: 1}\n"
      "firewall:\n  w2d: {from: web, to: db, ports: 5432}\n";
  auto goal = GoalOf(text);
  const FirewallRuleSpec& w2d = goal->firewall.at("w2d");
  auto owned = [&](const std::string& uuid, const FirewallRuleSpec& r, const std::string& name = "w2d") {
    std::string t = FirewallRuleText("p-uuid", r);
    return OwnedRule{uuid, name, FirewallRuleHash(t, r), t, r.enabled, r.log, FirewallDescription("p-uuid", name, t, r)};
  };
  // The rule as FWAPI holds it after a hand edit that kept its description.
  auto edited = [&](std::function<void(OwnedRule*)> edit) {
    OwnedRule o = owned(FirewallRuleUuid("p-uuid", "w2d"), w2d);
    edit(&o);
    return o;
  };
  FirewallRuleSpec other = w2d;
  other.ports = {"5433"};
  const std::string mine = FirewallRuleUuid("p-uuid", "w2d");
  struct Case {
    std::string name;
    std::function<void(Snapshot*)> set;
    std::string changes;  // kind:name:uuid, in order
    std::string state;    // the rule's view ("" = no view)
    int retags;           // instances set in place
    bool db_on;           // db's firewall is wanted on (off: wanted off, or left as it is)
    bool converged;
  };
  const std::vector<Case> cases = {
      {"no FWAPI: not applied, instances untouched", [](Snapshot* s) { s->fwapi = false; }, "", "not applied", 0,
       false, false},
      {"FWAPI not read: tagged (harmless), the firewall left as it is",
       [](Snapshot* s) { s->firewall.reset(); s->firewall_error = "FWAPI: timeout"; }, "", "unknown", 2, false, false},
      {"none yet: created at its uuid, instances tagged but the firewall not turned on before it exists",
       [](Snapshot* s) { s->firewall = std::vector<OwnedRule>{}; }, "create:w2d:" + mine, "to create", 2, false,
       false},
      {"in place: the db's firewall turned on",
       [&](Snapshot* s) { s->firewall = std::vector<OwnedRule>{owned(mine, w2d)}; }, "", "in place", 2, true, false},
      {"in place and the instances too",
       [&](Snapshot* s) {
         s->firewall = std::vector<OwnedRule>{owned(mine, w2d)};
         for (auto& i : s->instances) i.firewall = FirewallTagValue("p-uuid", i.service);
         s->instances[1].firewall_enabled = true;
       },
       "", "in place", 0, true, true},
      {"changed by hand: updated at the uuid it has",
       [&](Snapshot* s) { s->firewall = std::vector<OwnedRule>{owned("u-other", other)}; }, "update:w2d:u-other",
       "to update", 2, false, false},
      {"its text edited by hand in FWAPI, the description kept: updated back",
       [&](Snapshot* s) {
         s->firewall = std::vector<OwnedRule>{edited([](OwnedRule* o) { o->rule = "FROM any TO all vms ALLOW tcp PORT 22"; })};
       },
       "update:w2d:" + mine, "to update", 2, false, false},
      {"disabled by hand in FWAPI: updated back",
       [&](Snapshot* s) { s->firewall = std::vector<OwnedRule>{edited([](OwnedRule* o) { o->enabled = false; })}; },
       "update:w2d:" + mine, "to update", 2, false, false},
      {"logging turned on by hand: updated back",
       [&](Snapshot* s) { s->firewall = std::vector<OwnedRule>{edited([](OwnedRule* o) { o->log = true; })}; },
       "update:w2d:" + mine, "to update", 2, false, false},
      {"FWAPI's own spacing and keyword case: in place",
       [&](Snapshot* s) {
         s->firewall = std::vector<OwnedRule>{edited([](OwnedRule* o) {
           o->rule = "  " + absl::AsciiStrToLower(o->rule) + " ";
           for (size_t i = o->rule.find(' ', 3); i != std::string::npos; i = o->rule.find(' ', i + 3)) o->rule.insert(i, " ");
         })};
         for (auto& i : s->instances) i.firewall = FirewallTagValue("p-uuid", i.service);
         s->instances[1].firewall_enabled = true;
       },
       "", "in place", 0, true, true},
      {"a rule the manifest no longer has is deleted",
       [&](Snapshot* s) {
         s->firewall = std::vector<OwnedRule>{owned(mine, w2d), owned("u-old", other, "old")};
       },
       "delete:old:u-old", "in place", 2, true, false},
      {"two claim one name: the one at another uuid goes",
       [&](Snapshot* s) { s->firewall = std::vector<OwnedRule>{owned("u-copy", w2d), owned(mine, w2d)}; },
       "delete:w2d:u-copy", "in place", 2, true, false},
      {"a failing create says why",
       [&](Snapshot* s) {
         s->firewall = std::vector<OwnedRule>{};
         s->firewall_failures["w2d"] = "FWAPI CreateRule: InvalidParameters";
       },
       "create:w2d:" + mine, "to create", 2, false, false},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(goal);
    s.fwapi = true;
    s.firewall_owner = "owner-uuid";
    s.instances = {Instance(s, "web", 1), Instance(s, "db", 1)};
    c.set(&s);
    Decision d = Decide(s, kT0);
    std::vector<std::string> got;
    for (const FirewallChange& f : d.firewall_changes) {
      static const char* kKinds[] = {"create", "update", "delete"};
      got.push_back(absl::StrCat(kKinds[static_cast<int>(f.kind)], ":", f.name, ":", f.rule.uuid));
      EXPECT_EQ(f.rule.owner_uuid, "owner-uuid") << c.name;
    }
    EXPECT_EQ(absl::StrJoin(got, " "), c.changes) << c.name;
    std::string state;
    for (const FirewallRuleView& v : d.firewall_rules) {
      if (v.name == "w2d") state = v.state;
    }
    EXPECT_EQ(state, c.state) << c.name;
    // A hand edit is named as such, with what was changed.
    bool drift_named = false;
    for (const Problem& p : d.problems) drift_named |= p.kind == "firewall-drift" && absl::StrContains(p.error, "by hand");
    EXPECT_EQ(drift_named, absl::StrContains(c.name, "updated back")) << c.name;
    EXPECT_EQ(Count(d, ActionKind::kRetag), c.retags) << c.name;
    InPlaceSettings db = InPlaceFor(s, d.firewall_in_place, "db");
    EXPECT_EQ(db.firewall_enabled.value_or(false), c.db_on) << c.name;
    EXPECT_EQ(d.converged, c.converged) << c.name;
    bool problem = false;
    for (const Problem& p : d.problems) problem |= p.kind == "firewall";
    EXPECT_EQ(problem, c.state == "not applied" || c.state == "unknown" || s.firewall_failures.count("w2d") > 0)
        << c.name;
  }
  // The web side is tagged, never turned on (the rule applies to db).
  Snapshot s = SnapshotOf(goal);
  s.fwapi = true;
  s.firewall = std::vector<OwnedRule>{owned(mine, w2d)};
  InPlaceSettings web = InPlaceFor(s, true, "web");
  EXPECT_EQ(web.firewall, "p-uuid/web");
  EXPECT_EQ(web.firewall_enabled, std::optional<bool>(false));
}

// The fabric (DecideFabric), as a table: the VLAN before its networks, a
// network deleted only once no instance is on it, the VLAN the project made
// with the last network; what NAPI cannot change is a problem, not a change.
TEST(DecideTest, FabricVlanAndNetworks) {
  const std::string with = "project: p\nservices:\n  db: {image: db@1, count: 1, networks: [private]}\n"
                           "fabric:\n  vlan: 44\n  networks:\n    private: {subnet: 10.0.1.0/24, gateway: 10.0.1.1}\n";
  const std::string without = "project: p\nservices:\n  db: {image: db@1, count: 1}\n";
  auto goal_with = GoalOf(with);
  const FabricNetworkSpec& spec = goal_with->fabric->networks.at("private");
  auto net = [&](const std::string& uuid, const FabricNetworkSpec& n, int vlan = 44) {
    triton::FabricNetwork f;
    f.uuid = uuid;
    f.name = "p-private";
    f.vlan_id = vlan;
    f.subnet = n.subnet;
    f.gateway = n.gateway;
    std::tie(f.provision_start_ip, f.provision_end_ip) = ProvisionRange(n);
    f.description = FabricNetworkDescription("p-uuid", "private", n);
    return f;
  };
  const triton::FabricVlan ours{44, "p", FabricVlanDescription("p-uuid", 44)};
  const triton::FabricVlan theirs{44, "shared", "made by hand"};
  FabricNetworkSpec resolvers = spec;
  resolvers.resolvers = {"8.8.8.8"};
  FabricNetworkSpec moved = spec;
  moved.subnet = "10.0.9.0/24";
  moved.gateway = "10.0.9.1";
  struct Case {
    std::string name;
    bool with;
    std::vector<triton::FabricVlan> vlans;
    std::vector<triton::FabricNetwork> networks;
    bool on_it;          // the instance has a NIC on n1
    std::string changes;  // kinds, in order
    std::string state;    // private's view
  };
  const std::vector<Case> cases = {
      {"nothing yet: VLAN, then network", true, {}, {}, false, "vlan+ net+", "to create"},
      {"a VLAN of the account's already: used as it is", true, {theirs}, {}, false, "net+", "to create"},
      {"in place", true, {ours}, {net("n1", spec)}, true, "", "in place"},
      {"resolvers changed: updated", true, {ours}, {net("n1", resolvers)}, true, "net~", "to update"},
      {"subnet changed: not in place", true, {ours}, {net("n1", moved)}, true, "", "cannot change in place"},
      {"on another VLAN: not in place", true, {ours}, {net("n1", spec, 45)}, true, "", "cannot change in place"},
      {"removed, an instance still on it: waits", false, {ours}, {net("n1", spec)}, true, "",
       "waiting: 1 instances still on it"},
      {"removed, nothing on it: network, then our VLAN", false, {ours}, {net("n1", spec)}, false, "net- vlan-",
       "to delete"},
      {"removed: a VLAN not ours stays", false, {theirs}, {net("n1", spec)}, false, "net-", "to delete"},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf(c.with ? with : without));
    s.fabric = Snapshot::FabricSeen{c.vlans, c.networks};
    s.instances = {Instance(s, "db", 1)};
    if (c.on_it) s.instances[0].networks = {"n1"};
    Decision d = Decide(s, kT0);
    std::vector<std::string> got;
    static const char* kKinds[] = {"vlan+", "net+", "net~", "net-", "vlan-"};
    for (const FabricChange& f : d.fabric_changes) got.push_back(kKinds[static_cast<int>(f.kind)]);
    EXPECT_EQ(absl::StrJoin(got, " "), c.changes) << c.name;
    std::string state;
    for (const FabricNetworkView& v : d.fabric_networks) {
      if (v.name == "private") state = v.state;
    }
    EXPECT_EQ(state, c.state) << c.name;
    EXPECT_EQ(d.converged, c.state == "in place") << c.name;
    if (!d.fabric_changes.empty() && d.fabric_changes[0].kind == FabricChange::Kind::kCreateNetwork) {
      const triton::FabricNetwork& n = d.fabric_changes[0].network;
      EXPECT_EQ(n.name, "p-private") << c.name;
      EXPECT_EQ(n.provision_start_ip, "10.0.1.2") << c.name;
      EXPECT_EQ(n.vlan_id, 44) << c.name;
    }
  }
  // Not read: unknown, a problem, nothing changed.
  Snapshot s = SnapshotOf(goal_with);
  s.fabric_error = "NAPI: timeout";
  Decision d = Decide(s, kT0);
  EXPECT_TRUE(d.fabric_changes.empty());
  ASSERT_EQ(d.fabric_networks.size(), 1u);
  EXPECT_EQ(d.fabric_networks[0].state, "unknown");
  EXPECT_FALSE(d.converged);
}

// A network that left the manifest stays while a volume is served on it:
// retained with a retained volume, waiting while the volume is being
// deleted, deleted once it is gone.
TEST(DecideTest, AFabricNetworkStaysForTheVolumesServedOnIt) {
  const std::string with = "project: p\nservices:\n  db: {image: db@1, count: 1, networks: [private]}\n"
                           "fabric:\n  vlan: 44\n  networks:\n    private: {subnet: 10.0.1.0/24}\n";
  const FabricNetworkSpec spec = GoalOf(with)->fabric->networks.at("private");
  triton::FabricNetwork n1;
  n1.uuid = "n1";
  n1.name = "p-private";
  n1.vlan_id = 44;
  n1.subnet = spec.subnet;
  n1.description = FabricNetworkDescription("p-uuid", "private", spec);
  const triton::FabricVlan ours{44, "p", FabricVlanDescription("p-uuid", 44)};
  const triton::Volume data{"v1", "o", "p.data", 10240, "ready", {"n1"}, {}};
  struct Case {
    std::string name, volumes;  // the manifest's volumes: section ("" = none)
    bool in_volapi;
    std::string state, changes;
  };
  const std::vector<Case> cases = {
      {"a retained volume keeps it", "", true, "retained: volume p.data is served on it", ""},
      {"a volume being deleted holds it", "volumes:\n  data: {remove: true, network: 11111111-2222-4333-8444-555555555555}\n", true,
       "waiting: volume p.data is served on it until it is deleted", "vol-"},
      {"once the volume is gone it goes, then the VLAN", "volumes:\n  data: {remove: true, network: 11111111-2222-4333-8444-555555555555}\n", false,
       "to delete", "net- vlan-"},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  db: {image: db@1, count: 1}\n" + c.volumes));
    s.fabric = Snapshot::FabricSeen{{ours}, {n1}};
    s.instances = {Instance(s, "db", 1)};
    s.volapi = true;
    s.volumes = c.in_volapi ? std::vector<triton::Volume>{data} : std::vector<triton::Volume>{};
    Decision d = Decide(s, kT0);
    ASSERT_EQ(d.fabric_networks.size(), 1u) << c.name;
    EXPECT_EQ(d.fabric_networks[0].state, c.state) << c.name;
    std::vector<std::string> got;
    for (const VolumeChange& v : d.volume_changes) got.push_back(v.kind == VolumeChange::Kind::kDelete ? "vol-" : "vol+");
    for (const FabricChange& f : d.fabric_changes) {
      got.push_back(f.kind == FabricChange::Kind::kDeleteNetwork ? "net-"
                    : f.kind == FabricChange::Kind::kDeleteVlan  ? "vlan-"
                                                                  : "other");
    }
    EXPECT_EQ(absl::StrJoin(got, " "), c.changes) << c.name;
  }
}

// Volumes (DecideVolumes), as a table: made on their fabric network once it
// exists, deleted only when the manifest says so and nothing mounts them,
// retained otherwise; a volume of another project (by name) is never
// touched.
TEST(DecideTest, VolumesAreMadeDeletedOnlyWhenAskedAndRetainedOtherwise) {
  const std::string fabric = "fabric:\n  vlan: 44\n  networks:\n    private: {subnet: 10.0.1.0/24}\n";
  const std::string with = "project: p\n" + fabric +
                           "volumes:\n  data: {size: 20g}\n"
                           "services:\n  db: {image: db@1, count: 1, networks: [private], volumes: [data:/d]}\n";
  const std::string removed = "project: p\n" + fabric + "services:\n  db: {image: db@1, count: 1, networks: [private]}\n";
  const std::string remove = "project: p\n" + fabric + "volumes:\n  data: {size: 20g, remove: true}\n"
                             "services:\n  db: {image: db@1, count: 1, networks: [private]}\n";
  auto vol = [](const std::string& name, const std::string& state, std::vector<std::string> refs = {}) {
    triton::Volume v;
    v.uuid = "v-" + name;
    v.name = name;
    v.size = 20480;
    v.state = state;
    v.networks = {"n1"};
    v.refs = std::move(refs);
    return v;
  };
  struct Case {
    std::string name;
    std::string manifest;
    std::vector<triton::Volume> volumes;
    bool network_made;
    std::string changes;  // kinds
    std::string state;    // data's view
    bool converged;
    bool db = true;       // an instance of db (of the current spec, made 10 minutes before kT0) mounts it
  };
  const triton::Volume theirs = vol("pq.data", "ready");  // another project's (pq), same account
  triton::Volume remade = vol("p.data", "ready");
  remade.create_timestamp = absl::FormatTime(absl::RFC3339_full, kT0 - absl::Minutes(1), absl::UTCTimeZone());
  triton::Volume first = remade;
  first.create_timestamp = absl::FormatTime(absl::RFC3339_full, kT0 - absl::Minutes(11), absl::UTCTimeZone());
  const std::string lost = "lost: 1 instance mounts a copy deleted outside Mariposa";
  const std::vector<Case> cases = {
      {"nothing yet: made on the network", with, {theirs}, true, "data+", "to create", false, false},
      {"network not made yet: waits", with, {}, false, "", "waiting: fabric network private is not made yet", false,
       false},
      // Issue 48: deleted by hand while mounted: made again, but a loss.
      {"deleted by hand while db-1 mounts it: lost, made again", with, {}, true, "data+", lost, false},
      {"made again: db-1 still mounts the lost copy", with, {remade}, true, "", lost, false},
      {"made before db-1: the copy it mounts", with, {first}, true, "", "ready", true},
      {"creating", with, {vol("p.data", "creating")}, true, "", "creating", false},
      {"ready", with, {vol("p.data", "ready", {"db-uuid-1"})}, true, "", "ready", true},
      {"failed in VOLAPI: a problem", with, {vol("p.data", "failed")}, true, "", "failed", false},
      {"left out of the manifest: retained", removed, {vol("p.data", "ready")}, true, "",
       "retained (not in the manifest)", true},
      {"remove: true while mounted: waits", remove, {vol("p.data", "ready", {"a", "b"})}, true, "",
       "waiting: 2 instances mount it", false},
      {"remove: true, nothing mounts it: deleted", remove, {vol("p.data", "ready"), theirs}, true, "data-",
       "to delete", false},
      {"remove: true, being deleted", remove, {vol("p.data", "deleting")}, true, "", "deleting", false},
      {"remove: true, gone", remove, {}, true, "", "deleted", true},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf(c.manifest));
    FabricNetworkSpec net = s.goal->fabric->networks.at("private");
    triton::FabricNetwork n1;
    n1.uuid = "n1";
    n1.name = "p-private";
    n1.vlan_id = 44;
    n1.subnet = net.subnet;
    std::tie(n1.provision_start_ip, n1.provision_end_ip) = ProvisionRange(net);
    n1.description = FabricNetworkDescription("p-uuid", "private", net);
    s.fabric = Snapshot::FabricSeen{{{44, "p", FabricVlanDescription("p-uuid", 44)}},
                                    c.network_made ? std::vector<triton::FabricNetwork>{n1}
                                                   : std::vector<triton::FabricNetwork>{}};
    s.volapi = true;
    s.volumes = c.volumes;
    if (c.db) {
      s.instances = {Instance(s, "db", 1)};
      s.instances[0].networks = {"n1"};
    }
    Decision d = Decide(s, kT0);
    bool lost_problem = false;
    for (const auto& pr : d.problems) lost_problem |= pr.kind == "volume-lost";
    EXPECT_EQ(lost_problem, c.state == lost) << c.name;
    std::vector<std::string> got;
    for (const VolumeChange& v : d.volume_changes) {
      EXPECT_EQ(v.lost.empty(), c.state != lost) << c.name;
      got.push_back(v.name + (v.kind == VolumeChange::Kind::kCreate ? "+" : "-"));
      EXPECT_NE(v.volume.name, "pq.data") << c.name;
    }
    EXPECT_EQ(absl::StrJoin(got, " "), c.changes) << c.name;
    ASSERT_EQ(d.volumes.size(), 1u) << c.name << ": only the project's own";
    EXPECT_EQ(d.volumes[0].state, c.state) << c.name;
    EXPECT_EQ(d.converged, c.converged) << c.name;
    if (!d.volume_changes.empty() && d.volume_changes[0].kind == VolumeChange::Kind::kCreate) {
      const triton::Volume& v = d.volume_changes[0].volume;
      EXPECT_EQ(v.name, "p.data");
      EXPECT_EQ(v.size, 20480);
      EXPECT_EQ(v.networks, std::vector<std::string>{"n1"});
    }
    if (c.state == "failed") {
      EXPECT_TRUE(std::any_of(d.problems.begin(), d.problems.end(),
                              [](const Problem& p) { return p.error == "volume data failed in VOLAPI"; }));
    }
  }
  // Without VOLAPI: not applied, said, never converged.
  Snapshot s = SnapshotOf(GoalOf(with));
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.volumes.size(), 1u);
  EXPECT_EQ(d.volumes[0].state, "not applied");
  EXPECT_FALSE(d.converged);
  EXPECT_TRUE(std::any_of(d.problems.begin(), d.problems.end(), [](const Problem& p) {
    return p.fix.find("--volapi") != std::string::npos;
  }));
}

// Issue 48, 11: a volume that names no network (as an earlier release
// stored it) is made on the account's default fabric network; while that is
// not known it waits, with a problem saying how to name one.
TEST(DecideTest, AVolumeWithNoNetworkIsMadeOnTheAccountsDefault) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nvolumes:\n  uploads: {size: 10g}\n"
                                 "services:\n  web: {image: web@1, count: 1, volumes: [uploads:/u]}\n"));
  s.volapi = true;
  s.volumes = std::vector<triton::Volume>{};
  s.default_fabric = {"n-default", "My-Fabric-Network", "192.168.128.0/22", true, false, {"owner"}};
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.volume_changes.size(), 1u);
  EXPECT_EQ(d.volume_changes[0].volume.networks, std::vector<std::string>{"n-default"});
  EXPECT_EQ(d.volume_changes[0].volume.size, 10240);
  ASSERT_EQ(d.volumes.size(), 1u);
  EXPECT_EQ(d.volumes[0].network, "My-Fabric-Network (the account's default)");
  EXPECT_EQ(d.volumes[0].state, "to create");

  s.default_fabric = {};
  s.default_fabric_error = "account owner has no default fabric network (My-Fabric-Network, …)";
  d = Decide(s, kT0);
  EXPECT_TRUE(d.volume_changes.empty());
  ASSERT_EQ(d.volumes.size(), 1u);
  EXPECT_EQ(d.volumes[0].state,
            "waiting: the account's default fabric network is not known: account owner has no default fabric "
            "network (My-Fabric-Network, …)");
  EXPECT_FALSE(d.converged);
  EXPECT_TRUE(std::any_of(d.problems.begin(), d.problems.end(), [](const Problem& p) {
    return p.error == "volume uploads names no network and the account's default fabric network is not known" &&
           p.fix.find("volumes.uploads.network") != std::string::npos;
  }));
}

// Deleting the project deletes the volumes whose deletion_policy says so
// (after the instances that mount them) and keeps the others, with an
// event; the project goes when nothing but what it retains is left.
TEST(DecideTest, ADeletedProjectKeepsTheVolumesItRetains) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nvolumes:\n  data: {network: 11111111-2222-4333-8444-555555555555}\n"
                                 "  scratch: {network: 11111111-2222-4333-8444-555555555555, deletion_policy: delete}\n"
                                 "services:\n  web: {image: web@1, count: 0}\n"));
  // As Gather reads a project being deleted: no goal, the last version's volumes.
  s.volumes_at_deletion = s.goal->volumes;
  s.goal = nullptr;
  s.project.deleting = true;
  s.volapi = true;
  triton::Volume data{"v1", "o", "p.data", 10240, "ready", {}, {}};
  triton::Volume scratch{"v2", "o", "p.scratch", 10240, "ready", {}, {"vm-1"}};
  s.volumes = std::vector<triton::Volume>{data, scratch};
  Decision d = Decide(s, kT0);
  EXPECT_TRUE(d.volume_changes.empty()) << "scratch is still mounted";
  EXPECT_FALSE(d.delete_project);
  s.volumes->at(1).refs.clear();
  d = Decide(s, kT0);
  ASSERT_EQ(d.volume_changes.size(), 1u);
  EXPECT_EQ(d.volume_changes[0].volume.uuid, "v2");
  EXPECT_FALSE(d.delete_project);
  s.volumes->pop_back();
  d = Decide(s, kT0);
  EXPECT_TRUE(d.delete_project);
  ASSERT_EQ(d.volumes.size(), 2u);
  EXPECT_EQ(d.volumes[0].state, "retained (deletion_policy: retain)");
  EXPECT_TRUE(std::any_of(d.events.begin(), d.events.end(), [](const EventRecord& e) {
    return e.kind == "volume.retained" && e.detail.find("p.data v1") != std::string::npos;
  }));
  s.volumes.reset();
  s.volumes_error = "VOLAPI: timeout";  // not read: not yet
  EXPECT_FALSE(Decide(s, kT0).delete_project);
}

// `project delete --delete-volumes`: every volume of the project goes,
// whatever its deletion_policy and whether or not the manifest still names
// it, once nothing mounts it; a volume of another project stays.
TEST(DecideTest, DeleteVolumesTakesEveryVolumeOfTheProject) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nvolumes:\n  data: {network: 11111111-2222-4333-8444-555555555555}\n"
                                 "services:\n  web: {image: web@1, count: 0}\n"));
  s.volumes_at_deletion = s.goal->volumes;
  s.goal = nullptr;
  s.project.deleting = true;
  s.volapi = true;
  triton::Volume data{"v1", "o", "p.data", 10240, "ready", {}, {"vm-1"}};
  triton::Volume old{"v2", "o", "p.old", 10240, "ready", {}, {}};  // left out of the manifest earlier
  triton::Volume other{"v3", "o", "q.data", 10240, "ready", {}, {}};
  s.volumes = std::vector<triton::Volume>{data, old, other};
  Decision d = Decide(s, kT0);
  EXPECT_TRUE(d.volume_changes.empty()) << "without --delete-volumes both are retained";
  EXPECT_TRUE(d.delete_project);
  s.project.delete_volumes = true;
  d = Decide(s, kT0);
  ASSERT_EQ(d.volume_changes.size(), 1u) << "data is still mounted";
  EXPECT_EQ(d.volume_changes[0].volume.uuid, "v2");
  EXPECT_FALSE(d.delete_project);
  s.volumes->at(0).refs.clear();
  d = Decide(s, kT0);
  ASSERT_EQ(d.volume_changes.size(), 2u);
  EXPECT_EQ(d.volume_changes[0].volume.uuid, "v1");
  EXPECT_EQ(d.volume_changes[1].volume.uuid, "v2");
  s.volumes = std::vector<triton::Volume>{other};
  d = Decide(s, kT0);
  EXPECT_TRUE(d.volume_changes.empty());
  EXPECT_TRUE(d.delete_project) << "q.data is another project's";
  ASSERT_EQ(d.volumes.size(), 1u);
  EXPECT_EQ(d.volumes[0].state, "deleted");
}

// Runs of an event service (decide_runs.cc), as a table: a queued run
// starts and creates `count` instances tagged with it; it ends when they
// have all exited and records the outcome; its instances go unless
// run.history keeps them; run.deadline, run.concurrency and freezes.
TEST(DecideTest, RunsStartEndAndRecordTheirOutcome) {
  const std::string base = "project: p\nservices:\n  job:\n    service_type: event\n    image: job@1\n    count: 2\n";
  auto run_task = [](const std::string& uuid, const std::string& state, std::string origin = "user") {
    TaskRecord t = Task(uuid, "run", state, {"job"});
    t.origin = std::move(origin);
    if (state == "active") t.started_at = kT0 - absl::Minutes(1);
    return t;
  };
  auto inst = [](const Snapshot& s, int n, const std::string& run, const std::string& state, int exit_status = -1) {
    InstanceState i = Instance(s, "job", n, state);
    i.run = run;
    i.exit_status = exit_status;
    return i;
  };
  struct Case {
    std::string name;
    std::string run_keys;  // the service's run: settings
    std::function<void(Snapshot*)> setup;
    std::string changes;  // task changes "uuid:state"
    std::string steps;    // "create:RUN", "delete:INSTANCE"
    std::string verdict;
  };
  const std::vector<Case> cases = {
      {"queued: starts and creates its instances", "",
       [&](Snapshot* s) { s->tasks = {run_task("r1", "queued")}; }, "r1:active", "create:r1 create:r1", "progressing"},
      {"active, running: waits", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active")};
         s->tasks[0].created = 2;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "running")};
       },
       "", "", "progressing"},
      {"all exited 0: completed, removed", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active")};
         s->tasks[0].created = 2;
         s->instances = {inst(*s, 1, "r1", "stopped", 0), inst(*s, 2, "r1", "stopped", 0)};
       },
       "r1:completed", "delete:job-uuid-1 delete:job-uuid-2", "converged"},
      {"one exited 3: failed, kept for inspection (history.failed 1)", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active")};
         s->tasks[0].created = 2;
         s->instances = {inst(*s, 1, "r1", "stopped", 0), inst(*s, 2, "r1", "stopped", 3)};
       },
       "r1:failed", "", "degraded"},
      {"a created instance not listed yet: not ended", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active")};
         s->tasks[0].created = 2;
         s->instances = {inst(*s, 1, "r1", "stopped", 0)};
       },
       "", "", "progressing"},
      {"past run.deadline: failed, its instances removed", "    run: {deadline: 30s}\n",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active")};
         s->tasks[0].created = 2;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "stopped", 0)};
       },
       "r1:failed", "delete:job-uuid-1 delete:job-uuid-2", "degraded"},
      {"forbid: a user's run waits for the active one", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active"), run_task("r2", "queued")};
         s->tasks[0].created = 2;
         s->tasks[1].created_at = kT0;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "running")};
       },
       "", "", "progressing"},
      {"forbid: a scheduled run is skipped", "",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active"), run_task("r2", "queued", "auto")};
         s->tasks[0].created = 2;
         s->tasks[1].created_at = kT0;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "running")};
       },
       "r2:terminated", "", "progressing"},
      {"replace: the active run goes, the new one starts", "    run: {concurrency: replace}\n",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active"), run_task("r2", "queued")};
         s->tasks[0].created = 2;
         s->tasks[1].created_at = kT0;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "running")};
       },
       "r1:terminated r2:active", "create:r2 create:r2 delete:job-uuid-1 delete:job-uuid-2", "progressing"},
      {"allow: both run", "    run: {concurrency: allow}\n",
       [&](Snapshot* s) {
         s->tasks = {run_task("r1", "active"), run_task("r2", "queued")};
         s->tasks[0].created = 2;
         s->tasks[1].created_at = kT0;
         s->instances = {inst(*s, 1, "r1", "running"), inst(*s, 2, "r1", "running")};
       },
       "r2:active", "create:r2 create:r2", "progressing"},
      {"frozen: a queued run waits", "",
       [&](Snapshot* s) {
         TaskRecord f = Task("f1", "freeze", "active", {"job"});
         s->tasks = {f, run_task("r1", "queued")};
       },
       "", "", "converged"},
      {"history: the older failed run's instances go", "",
       [&](Snapshot* s) {
         TaskRecord newer = run_task("r2", "failed"), older = run_task("r1", "failed");
         newer.finished_at = kT0 - absl::Minutes(1);
         older.finished_at = kT0 - absl::Minutes(5);
         newer.error = "1 of 2 did not exit 0";
         s->finished_runs = {newer, older};
         s->instances = {inst(*s, 1, "r1", "stopped", 3), inst(*s, 2, "r2", "stopped", 3)};
       },
       "", "delete:job-uuid-1", "degraded"},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf(base + c.run_keys));
    c.setup(&s);
    Decision d = Decide(s, kT0);
    std::vector<std::string> changes, steps;
    for (const TaskChange& t : d.task_changes) changes.push_back(t.task + ":" + t.state);
    for (const Step& st : d.steps) {
      steps.push_back(st.action.kind == ActionKind::kCreate ? "create:" + st.task : "delete:" + st.action.instance);
      if (st.action.kind == ActionKind::kCreate) {
        EXPECT_EQ(st.action.run, st.task) << c.name;
      }
    }
    std::sort(steps.begin(), steps.end());
    EXPECT_EQ(absl::StrJoin(changes, " "), c.changes) << c.name;
    EXPECT_EQ(absl::StrJoin(steps, " "), c.steps) << c.name;
    EXPECT_EQ(VerdictName(d.verdicts.at("job").state), c.verdict) << c.name << ": " << d.verdicts.at("job").reason;
    for (const TaskChange& t : d.task_changes) {
      if (t.state == "failed" || t.state == "completed" || t.state == "terminated") {
        EXPECT_FALSE(t.note.empty()) << c.name << ": the outcome is recorded";
      }
    }
  }
}

// A schedule (decide_runs.cc Schedule): a fire time not acted on adds a
// run; one acted on (a run created since) does not; one later than
// run.starting_deadline is recorded missed; a freeze holds it; a schedule
// does not run for times before it was applied.
TEST(DecideTest, SchedulesAddRunsWhenDue) {
  const std::string text = "project: p\nservices:\n  tick:\n    service_type: scheduled\n    schedule: \"*/5 * * * *\"\n"
                           "    image: job@1\nRUNKEYS";
  // kT0 is 08:00:00 UTC; the schedule fired at 08:00, 07:55, …
  auto snapshot = [&](const std::string& run_keys, absl::Time applied) {
    auto g = std::make_shared<ProjectGoal>(*GoalOf(absl::StrReplaceAll(text, {{"RUNKEYS", run_keys}})));
    g->created_at = applied;
    return SnapshotOf(g);
  };
  absl::Time now = kT0 + absl::Minutes(2);
  Snapshot s = snapshot("", kT0 - absl::Hours(1));
  Decision d = Decide(s, now);
  ASSERT_EQ(d.new_tasks.size(), 1u);
  EXPECT_EQ(d.new_tasks[0].kind, "run");
  EXPECT_EQ(d.new_tasks[0].origin, "auto");
  EXPECT_EQ(d.new_tasks[0].trigger, "schedule");
  EXPECT_EQ(d.new_tasks[0].reason, "scheduled for 2027-01-15T08:00:00Z");
  ASSERT_TRUE(d.runs.at("tick").next.has_value());
  EXPECT_EQ(*d.runs.at("tick").next, kT0 + absl::Minutes(5));
  // Acted on: a run made after it.
  TaskRecord made = Task("r1", "run", "completed", {"tick"});
  made.origin = "auto";
  made.created_at = kT0 + absl::Seconds(3);
  s.finished_runs = {made};
  EXPECT_TRUE(Decide(s, now).new_tasks.empty());
  // Applied after the last fire time: nothing until the next.
  EXPECT_TRUE(Decide(snapshot("", kT0 + absl::Minutes(1)), now).new_tasks.empty());
  // Later than run.starting_deadline: recorded, as missed.
  d = Decide(snapshot("    run: {starting_deadline: 1m}\n", kT0 - absl::Hours(1)), now);
  ASSERT_EQ(d.new_tasks.size(), 1u);
  EXPECT_EQ(d.new_tasks[0].trigger, "missed");
  EXPECT_EQ(d.new_tasks[0].reason, "scheduled for 2027-01-15T08:00:00Z, 2m late");
  // A missed run is terminated when it comes up, with why.
  Snapshot m = snapshot("    run: {starting_deadline: 1m}\n", kT0 - absl::Hours(1));
  TaskRecord missed = Task("r2", "run", "queued", {"tick"});
  missed.origin = "auto";
  missed.trigger = "missed";
  missed.reason = "scheduled for 2027-01-15T08:00:00Z, 2m late";
  missed.created_at = now;
  m.tasks = {missed};
  d = Decide(m, now);
  ASSERT_EQ(d.task_changes.size(), 1u);
  EXPECT_EQ(d.task_changes[0].state, "terminated");
  EXPECT_EQ(d.task_changes[0].note, "missed: scheduled for 2027-01-15T08:00:00Z, 2m late (run.starting_deadline 1m)");
  // Frozen: held, said.
  Snapshot f = snapshot("", kT0 - absl::Hours(1));
  f.tasks = {Task("f1", "freeze", "active", {"tick"})};
  d = Decide(f, now);
  EXPECT_TRUE(d.new_tasks.empty());
  EXPECT_NE(d.runs.at("tick").held.find("waits: frozen since"), std::string::npos) << d.runs.at("tick").held;
  // A scheduled service keeps its project out of Quiet (its syncs fire it).
  EXPECT_FALSE(Quiet(s, Decide(s, now)));
}

// A project being deleted deletes its rules, and goes only when none is
// left.
TEST(DecideTest, ADeletedProjectDeletesItsFirewallRulesFirst) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 0}\n"));
  s.project.deleting = true;
  s.fwapi = true;
  s.firewall = std::vector<OwnedRule>{{"u1", "w", "h", "FROM any TO any ALLOW tcp PORT 1", true}};
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.firewall_changes.size(), 1u);
  EXPECT_EQ(d.firewall_changes[0].kind, FirewallChange::Kind::kDelete);
  EXPECT_FALSE(d.delete_project);
  s.firewall = std::vector<OwnedRule>{};
  EXPECT_TRUE(Decide(s, kT0).delete_project);
  s.firewall.reset();  // FWAPI could not be read: not yet
  EXPECT_FALSE(Decide(s, kT0).delete_project);
}

// Quiet: what may wait for a wake-up instead of a resync, as a table.
TEST(QuietTest, OnlyAConvergedProjectWithNothingGoingOn) {
  struct Case {
    std::string name;
    std::function<void(Snapshot*)> change;
    bool quiet;
  };
  const std::vector<Case> cases = {
      {"converged, nothing open", [](Snapshot*) {}, true},
      {"a freeze is open", [](Snapshot* s) { s->tasks = {Task("f1", "freeze", "active")}; }, true},
      {"a job in flight", [](Snapshot* s) { s->in_flight = {JobOf("j1", "create", "web")}; }, false},
      {"a task open", [](Snapshot* s) { s->tasks = {Task("t1", "reprovision", "queued")}; }, false},
      {"one instance short", [](Snapshot* s) { s->instances.pop_back(); }, false},
      {"an instance starting", [](Snapshot* s) { s->instances[0].created = kT0 - absl::Seconds(1); }, false},
      {"actual state unknown", [](Snapshot* s) { s->actual_known = false; }, false},
      {"being deleted", [](Snapshot* s) { s->project.deleting = true; }, false},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
    s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
    c.change(&s);
    EXPECT_EQ(Quiet(s, Decide(s, kT0)), c.quiet) << c.name;
  }
  // Firewall rules live in FWAPI, which has no feed: read at each resync,
  // never quiet (a rule edited by hand is found within one).
  Snapshot fw = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 0}\n"
                                  "firewall:\n  in: {from: any, to: web, ports: 80}\n"));
  Decision fd = Decide(fw, kT0);
  fd.converged = true;
  fd.problems.clear();
  fd.events.clear();
  EXPECT_FALSE(Quiet(fw, fd));
  // Agents read CNAPI, core zones the admin's VMs: never quiet.
  Snapshot agents = SnapshotOf(GoalOf("project: p\nservices:\n  a: {image: cn-agent@2, compute_type: agent}\n"));
  Decision d = Decide(agents, kT0);
  d.converged = true;
  EXPECT_FALSE(Quiet(agents, d));
}

TEST(HealthSpecForTest, InstancesKeepTheChecksOfTheirVersion) {
  const char* kText =
      "project: p\nservices:\n  web:\n    image: web@1\n    count: 2\n    healthchecks:\n"
      "      h: {type: tcp, port: PORT}\n";
  auto v1 = GoalOf(absl::StrReplaceAll(kText, {{"PORT", "80"}}), 1);
  auto v2 = GoalOf(absl::StrReplaceAll(kText, {{"PORT", "8080"}}), 2);
  std::map<std::string, std::shared_ptr<const ProjectGoal>> older = {{"v1", v1}};
  const ServiceSpec* old_spec = HealthSpecFor(*v2, older, "web", "v1");
  const ServiceSpec* new_spec = HealthSpecFor(*v2, older, "web", "v2");
  ASSERT_NE(old_spec, nullptr);
  ASSERT_NE(new_spec, nullptr);
  EXPECT_EQ(old_spec->healthchecks.at("h").port, 80);
  EXPECT_EQ(new_spec->healthchecks.at("h").port, 8080);
  EXPECT_FALSE(SameChecks(old_spec->healthchecks, new_spec->healthchecks));
  EXPECT_TRUE(SameChecks(old_spec->healthchecks, v1->services.at("web").spec.healthchecks));
  // Its version unknown (deleted, unreadable): the goal's checks.
  EXPECT_EQ(HealthSpecFor(*v2, {}, "web", "v0")->healthchecks.at("h").port, 8080);
  EXPECT_EQ(HealthSpecFor(*v2, {{"v0", nullptr}}, "web", "v0")->healthchecks.at("h").port, 8080);
  // A service the goal no longer has: none.
  EXPECT_EQ(HealthSpecFor(*v2, older, "gone", "v1"), nullptr);
}

// An instance with stale checks is outdated: a rollout replaces it, and the
// service is not converged meanwhile.
TEST(HealthSpecForTest, StaleChecksAreOutdated) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
  ASSERT_TRUE(Decide(s, kT0).converged);
  s.instances[1].stale_checks = true;
  Decision d = Decide(s, kT0);
  EXPECT_FALSE(d.converged);
  EXPECT_EQ(d.verdicts.at("web").old_spec, 1);
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// Issue 48, 5: a failing change to FWAPI, NAPI or VOLAPI is tried again
// after a backoff (5 s, doubling, at most 5 minutes), not at every sync;
// within it the change stays in the decision (a deletion waits for it) but
// is held, not sent. A held VLAN holds its networks.
TEST(ChangeBackoffTest, FailedChangesWaitTheirTurn) {
  EXPECT_EQ(ChangeBackoff(1), absl::Seconds(5));
  EXPECT_EQ(ChangeBackoff(2), absl::Seconds(10));
  EXPECT_EQ(ChangeBackoff(4), absl::Seconds(40));
  EXPECT_EQ(ChangeBackoff(7), absl::Minutes(5));
  EXPECT_EQ(ChangeBackoff(1000), absl::Minutes(5));
  auto goal = GoalOf("project: p\nservices:\n  web: {image: web@1, count: 1}\n"
                     "firewall:\n  in: {from: any, to: web, ports: 80}\n");
  Snapshot s = SnapshotOf(goal);
  s.fwapi = true;
  s.firewall_owner = "owner-uuid";
  s.firewall = std::vector<OwnedRule>{};
  s.firewall_failures["in"] = "FWAPI CreateRule: InvalidParameters";
  s.firewall_retry_at["in"] = kT0 + absl::Seconds(3);
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.firewall_changes.size(), 1u);
  EXPECT_TRUE(d.firewall_changes[0].held) << "within its backoff";
  d = Decide(s, kT0 + absl::Seconds(3));
  ASSERT_EQ(d.firewall_changes.size(), 1u);
  EXPECT_FALSE(d.firewall_changes[0].held) << "its time has come";
}

}  // namespace
}  // namespace mariposa::convergence
