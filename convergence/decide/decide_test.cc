// Decide as a table of situations: each test is one snapshot and the
// decision it must produce. No I/O, no clock.
#include "convergence/decide/decide.h"

#include <functional>
#include <set>

#include "convergence/decide/decide_testing.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

using testing::Count;
using testing::GoalOf;
using testing::HasProblem;
using testing::JobOf;
using testing::Instance;
using testing::kT0;
using testing::SnapshotOf;
using testing::Task;


// Converged only when `count` instances run the current spec and are ready.
// Without checks, ready means running for start.window (default 60s), as
// for rollouts (issue 31: `apply --wait` said converged 0.3 s after
// creation). One row a second instance; the first is running and ready.
TEST(DecideTest, ConvergedOnlyWhenCountInstancesRunTheCurrentSpec) {
  struct Row {
    const char* name;
    std::string state;
    absl::Duration age;
    bool older_spec;
    VerdictState want;
    std::string reason;  // the verdict's reason, "" not compared
  };
  const std::vector<Row> rows = {
      {"both ready", "running", absl::Minutes(10), false, VerdictState::kConverged, ""},
      {"5 s old: starting, not replaced", "running", absl::Seconds(5), false, VerdictState::kProgressing,
       "1/2 ready, 1 starting (ready after 1m up, start.window)"},
      {"at start.window: ready", "running", absl::Seconds(60), false, VerdictState::kConverged, ""},
      {"still provisioning", "provisioning", absl::Seconds(5), false, VerdictState::kProgressing, ""},
      {"of an older spec", "running", absl::Minutes(10), true, VerdictState::kDegraded, ""},
  };
  for (const Row& r : rows) {
    Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 2}\n"));
    s.instances = {Instance(s, "web", 1), Instance(s, "web", 2, r.state, r.age)};
    if (r.older_spec) s.instances[1].spec_hash = "older";
    Decision d = Decide(s, kT0);
    EXPECT_EQ(d.converged, r.want == VerdictState::kConverged) << r.name;
    EXPECT_EQ(d.verdicts.at("web").state, r.want) << r.name;
    if (!r.reason.empty()) {
      EXPECT_EQ(d.verdicts.at("web").reason, r.reason) << r.name;
    }
    if (!r.older_spec) {
      EXPECT_TRUE(d.steps.empty()) << r.name << ": a starting instance is not replaced";
    }
  }
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
  struct Row {
    std::string health[2];
    bool converged;
    int removed;  // remove-broken steps
  };
  const std::vector<Row> rows = {
      {{"unknown", "unknown"}, false, 0},
      {{"healthy", "unknown"}, false, 0},
      {{"healthy", "healthy"}, true, 0},
      {{"healthy", "unhealthy"}, false, 1},
  };
  for (const Row& r : rows) {
    Snapshot s = SnapshotOf(GoalOf(
        "project: p\nservices:\n  web:\n    image: web@1\n    count: 2\n    healthchecks:\n      h: {type: tcp, port: "
        "80}\n"));
    s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
    for (int k = 0; k < 2; ++k) {
      s.instances[k].checked = true;
      s.instances[k].health = r.health[k];
    }
    Decision d = Decide(s, kT0);
    std::string row = absl::StrCat(r.health[0], ", ", r.health[1]);
    EXPECT_EQ(d.converged, r.converged) << row;
    EXPECT_EQ(d.verdicts.at("web").state == VerdictState::kConverged, r.converged) << row;
    EXPECT_EQ(Count(d, ActionKind::kDelete, "remove-broken"), r.removed) << row;
  }
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

// The job window holds what does not fit and says whose jobs fill it: this
// project's (--max-jobs-per-project) or the other projects' (--max-jobs).
TEST(DecideTest, TheJobWindowSaysWhoseJobsFillIt) {
  struct Case {
    int per_project, in_flight, global_free;
    size_t sent;
    std::string why;
  } cases[] = {
      {4, 0, 100, 4, ""},
      {4, 1, 100, 3, "job window: 1 jobs of this project in flight"},
      {4, 0, 2, 2, "job window: the other projects' jobs hold the rest of --max-jobs or wait for their share of it (0 of this project's in flight)"},
      {4, 1, 3, 3, "job window: 1 jobs of this project in flight"},
      {4, 1, 1, 1, "job window: the other projects' jobs hold the rest of --max-jobs or wait for their share of it (1 of this project's in flight)"},
      {4, 0, 0, 0, "job window: the other projects' jobs hold the rest of --max-jobs or wait for their share of it (0 of this project's in flight)"},
  };
  for (const Case& c : cases) {
    Snapshot s = SnapshotOf(GoalOf("project: p\ncns: false\nservices:\n  web: {image: web@1, count: 4}\n"));
    s.policy.max_jobs_per_project = c.per_project;
    s.global_jobs_free = c.global_free;
    for (int k = 0; k < c.in_flight; ++k) {
      JobRecord j;
      j.job_uuid = absl::StrCat("job-", k);
      j.kind = "start";
      s.in_flight.push_back(j);
    }
    Decision d = Decide(s, kT0);
    size_t creates = 0;
    for (const Step& st : d.steps) creates += st.action.kind == ActionKind::kCreate;
    std::string label = absl::StrCat(c.per_project, "/", c.in_flight, "/", c.global_free);
    EXPECT_EQ(creates, c.sent) << label;
    std::set<std::string> whys;
    for (const Held& h : d.held) whys.insert(h.why);
    if (c.why.empty()) {
      EXPECT_TRUE(whys.empty()) << label << ": " << *whys.begin();
    } else {
      EXPECT_EQ(whys, std::set<std::string>{c.why}) << label;
    }
  }
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

// The events the ended jobs tell come first and are counted apart: the
// executor writes them with the jobs' end in one transaction, so status
// (which reads the jobs in flight) never shows a put-back done before its
// event is in the log.
TEST(DecideTest, TheEndedJobsEventsAreCountedApartAndFirst) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 3}\n"));
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
  JobRecord put_back = JobOf("job-1", "retag", "web", s.instances[0].uuid);
  put_back.alias = "p-web-1";
  put_back.reason = std::string(kPutBack) + "metadata";
  JobRecord failed = JobOf("job-2", "create", "web", "x");
  failed.alias = "p-web-3";
  s.finished = {{put_back, true, ""}, {failed, false, "no capacity"}};
  Decision d = Decide(s, kT0);
  ASSERT_EQ(d.job_events, 2u);
  ASSERT_GE(d.events.size(), 2u);
  EXPECT_EQ(d.events[0].kind, "instance.put-back");
  EXPECT_EQ(d.events[1].kind, "instance.create-failed");
  s.finished.clear();
  EXPECT_EQ(Decide(s, kT0).job_events, 0u);
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
  // Which of the stopped one (19) and the one on a silent server (20) each
  // condition replaces.
  struct Row {
    std::string condition;
    std::set<std::string> removed;
  };
  const std::vector<Row> rows = {
      {"", {"web-uuid-19", "web-uuid-20"}},  // the default covers both
      {"always", {"web-uuid-19", "web-uuid-20"}},
      {"[on-failure]", {"web-uuid-19"}},    // the stopped one only; the other keeps its place
      {"[on-cn-restart]", {"web-uuid-20"}},
      {"[on-failure, on-cn-restart]", {"web-uuid-19", "web-uuid-20"}},
  };
  for (const Row& r : rows) {
    Decision d = with(r.condition);
    std::set<std::string> removed;
    for (const Step& st : d.steps) {
      if (st.action.kind == ActionKind::kDelete && st.action.reason == "remove-broken") removed.insert(st.action.instance);
    }
    EXPECT_EQ(removed, r.removed) << r.condition;
    EXPECT_EQ(Count(d, ActionKind::kCreate, "replace-broken"), static_cast<int>(r.removed.size())) << r.condition;
    EXPECT_EQ(Count(d, ActionKind::kCreate), static_cast<int>(r.removed.size())) << r.condition;
  }
  // never: nothing is replaced or created; degraded, with the reason and a fix.
  Decision d = with("never");
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
  fresh.cns_down = true;  // never ready: out of discovery since it was made
  fresh.discovery = DiscoveryHoldValue(fresh.created, "not ready: created");
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

// Readiness and liveness apart: a check says what its failure means.
TEST(DecideReadinessTest, AReadinessFailureKeepsTheInstanceButItIsNotReady) {
  Snapshot s = SnapshotOf(GoalOf(
      "project: p\nservices:\n  web:\n    image: web@1\n    count: 2\n    healthchecks:\n"
      "      ready: {type: http, port: 80, liveness: false}\n      alive: {type: tcp, port: 80, readiness: false}\n"));
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
  for (auto& i : s.instances) {
    i.checked = true;
    i.health = "healthy";  // its readiness checks
    i.liveness = "healthy";
  }
  EXPECT_TRUE(Decide(s, kT0).converged);
  s.instances[1].health = "unhealthy";  // readiness fails, liveness passes
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kDelete), 0) << "a readiness failure does not replace";
  EXPECT_EQ(Count(d, ActionKind::kCreate), 0);
  ASSERT_EQ(Count(d, ActionKind::kDiscovery), 1) << "it is taken out of discovery";
  EXPECT_EQ(d.steps[0].action.instance, s.instances[1].uuid);
  EXPECT_EQ(d.steps[0].action.reason, "down: not ready: failing its readiness checks");
  // Once out (the job done), the verdict says why it is not ready.
  s.instances[1].cns_down = true;
  s.instances[1].discovery = DiscoveryHoldValue(kT0, "not ready: failing its readiness checks");
  d = Decide(s, kT0);
  EXPECT_TRUE(d.steps.empty());
  const ServiceVerdict& v = d.verdicts.at("web");
  EXPECT_EQ(v.ready, 1);
  EXPECT_EQ(v.broken, 0);
  EXPECT_EQ(v.unhealthy, 1);
  EXPECT_EQ(v.state, VerdictState::kDegraded) << v.reason;
  EXPECT_NE(v.reason.find("not ready: failing readiness checks"), std::string::npos) << v.reason;
  s.instances[1].health = "healthy";
  EXPECT_EQ(Count(Decide(s, kT0), ActionKind::kDiscovery, "up: ready"), 1) << "ready again: back in discovery";
  s.instances[1].liveness = "unhealthy";  // liveness fails: replaced
  d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kDelete, "remove-broken"), 1);
  EXPECT_EQ(d.verdicts.at("web").broken, 1);
}

TEST(DecideReadinessTest, OnlyLivenessChecksMakeItReadyAfterTheStartWindow) {
  Snapshot s = SnapshotOf(GoalOf(
      "project: p\nservices:\n  web:\n    image: web@1\n    start: {window: 30s}\n"
      "    healthchecks:\n      alive: {type: tcp, port: 80, readiness: false}\n"));
  InstanceState i = Instance(s, "web", 1, "running", absl::Seconds(10));
  i.checked = false;  // no readiness checks
  i.liveness = "healthy";
  s.instances = {i};
  EXPECT_EQ(Decide(s, kT0).verdicts.at("web").ready, 0) << "not ready before start.window";
  EXPECT_EQ(Decide(s, kT0 + absl::Seconds(25)).verdicts.at("web").ready, 1);
  s.instances[0].liveness = "unhealthy";
  EXPECT_EQ(Count(Decide(s, kT0 + absl::Seconds(25)), ActionKind::kDelete, "remove-broken"), 1);
}

TEST(DecideReadinessTest, ARolloutWaitsForItsNewInstanceToBeReady) {
  Snapshot s = SnapshotOf(GoalOf(
      "project: p\nservices:\n  web:\n    image: web@2\n    count: 1\n    update: {rolling: 1, max_surge: 1}\n"
      "    healthchecks:\n      ready: {type: http, port: 80, liveness: false}\n",
      2));
  InstanceState old = Instance(s, "web", 1);
  old.spec_hash = "older";
  old.version = 1;
  old.version_uuid = "v1";
  old.checked = true;
  old.health = "healthy";
  InstanceState fresh = Instance(s, "web", 2, "running", absl::Minutes(1));
  fresh.checked = true;
  fresh.health = "unhealthy";  // failing readiness, alive
  fresh.liveness = "none";
  s.instances = {old, fresh};
  TaskRecord t = testing::Task("t1", "reprovision", "active", {"web"});
  t.version_uuid = "v2";
  t.started_at = kT0 - absl::Minutes(2);
  s.tasks = {t};
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kDelete), 0) << "the old one stays while its replacement is not ready";
  EXPECT_EQ(Count(d, ActionKind::kCreate), 0);
  s.instances[1].health = "healthy";
  d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kDelete), 1) << "ready: the old one goes";
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

Snapshot TwoWebs(const std::string& extra = "") {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web:\n    image: web@1\n    count: 1\n" + extra));
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};  // one too many: a scale-down
  return s;
}

// Before a removal, the instance leaves discovery and stays for stop.drain.
TEST(DecideDiscoveryTest, AScaleDownDrainsTheInstanceFirst) {
  Snapshot s = TwoWebs("    stop: {drain: 30s}\n");
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kDelete), 0) << "not before it has drained";
  ASSERT_EQ(Count(d, ActionKind::kDiscovery), 1);
  const Step& out = d.steps[0];
  EXPECT_EQ(out.action.reason, "down: draining before its removal");
  ASSERT_EQ(d.held.size(), 1u);
  EXPECT_EQ(d.held[0].action.kind, ActionKind::kDelete);
  EXPECT_NE(d.held[0].why.find("is taken out of discovery first"), std::string::npos) << d.held[0].why;
  EXPECT_NE(d.verdicts.at("web").reason.find("draining"), std::string::npos) << d.verdicts.at("web").reason;
  // Out since 10 s: still draining, and nothing more is sent.
  InstanceState& victim = s.instances[d.held[0].action.instance == s.instances[0].uuid ? 0 : 1];
  victim.cns_down = true;
  victim.discovery = DiscoveryHoldValue(kT0 - absl::Seconds(10), "draining before its removal");
  d = Decide(s, kT0);
  EXPECT_TRUE(d.steps.empty());
  ASSERT_EQ(d.held.size(), 1u);
  EXPECT_NE(d.held[0].why.find("goes ahead at"), std::string::npos) << d.held[0].why;
  // Drained: it goes.
  d = Decide(s, kT0 + absl::Seconds(21));
  EXPECT_EQ(Count(d, ActionKind::kDelete), 1);
  EXPECT_EQ(d.steps[0].action.instance, victim.uuid);
}

TEST(DecideDiscoveryTest, AFreezeDuringTheDrainPutsItBack) {
  Snapshot s = TwoWebs("    stop: {drain: 30s}\n");
  s.instances[1].cns_down = true;
  s.instances[1].discovery = DiscoveryHoldValue(kT0 - absl::Seconds(10), "draining before its removal");
  TaskRecord freeze = testing::Task("f1", "freeze", "active", {"web"});
  s.tasks = {freeze};
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kDelete), 0);
  ASSERT_EQ(Count(d, ActionKind::kDiscovery, "up: ready"), 1) << "frozen: the removal waits and it serves again";
  EXPECT_EQ(d.steps[0].action.instance, s.instances[1].uuid);
}

TEST(DecideDiscoveryTest, TheDrainDefaultsToTwiceTheCnsTtlAndZeroWithout) {
  Snapshot s = TwoWebs();
  EXPECT_EQ(Count(Decide(s, kT0), ActionKind::kDelete), 1) << "no CNS TTL known, no stop.drain: no drain";
  s.policy.default_drain = absl::Seconds(60);  // --cns-ttl 30s
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kDelete), 0);
  EXPECT_EQ(Count(d, ActionKind::kDiscovery), 1);
  s = TwoWebs("    stop: {drain: 0s}\n");
  s.policy.default_drain = absl::Seconds(60);
  EXPECT_EQ(Count(Decide(s, kT0), ActionKind::kDelete), 1) << "stop.drain 0s: no drain";
}

// A project's deletion and a service taken out of the manifest drain
// their instances too, when those carry CNS names: out of discovery first,
// deleted once drained.
TEST(DecideDiscoveryTest, ADeletionAndARemovedServiceDrainToo) {
  struct Row {
    const char* name;
    bool deleting;      // the project is being deleted (else: web left the manifest)
    std::string drain;  // web's stop.drain in the goal ("" none)
    bool cns;           // the instance carries CNS names
    absl::Duration out;  // out of discovery since (0: not out)
    int deletes, discovery;
  };
  const absl::Duration kNotOut = absl::ZeroDuration();
  const std::vector<Row> rows = {
      {"deletion: out first", true, "", true, kNotOut, 0, 1},
      {"deletion: draining", true, "", true, absl::Seconds(30), 0, 0},
      {"deletion: drained (default 60s)", true, "", true, absl::Seconds(60), 1, 0},
      {"deletion: the goal's stop.drain 10s", true, "10s", true, absl::Seconds(10), 1, 0},
      {"deletion: stop.drain 0s", true, "0s", true, kNotOut, 1, 0},
      {"deletion: no CNS names on it", true, "", false, kNotOut, 1, 0},
      {"removed service: out first", false, "", true, kNotOut, 0, 1},
      {"removed service: drained", false, "", true, absl::Seconds(60), 1, 0},
      {"removed service: no CNS names on it", false, "", false, kNotOut, 1, 0},
  };
  for (const Row& r : rows) {
    std::string web = absl::StrCat("  web:\n    image: web@1\n    count: 1\n",
                                   r.drain.empty() ? "" : absl::StrCat("    stop: {drain: ", r.drain, "}\n"));
    Snapshot with = SnapshotOf(GoalOf("project: p\nservices:\n" + web));
    InstanceState i = Instance(with, "web", 1);
    ASSERT_FALSE(i.cns.empty());
    if (!r.cns) i.cns = "";
    if (r.out > kNotOut) {
      i.cns_down = true;
      i.discovery = DiscoveryHoldValue(kT0 - r.out, "draining before its removal");
    }
    Snapshot s = r.deleting ? with : SnapshotOf(GoalOf("project: p\nservices:\n  api: {image: api@1, count: 0}\n"));
    s.project.deleting = r.deleting;
    s.policy.default_drain = absl::Seconds(60);  // --cns-ttl 30s
    s.instances = {i};
    Decision d = Decide(s, kT0);
    EXPECT_EQ(Count(d, ActionKind::kDelete), r.deletes) << r.name;
    EXPECT_EQ(Count(d, ActionKind::kDiscovery, "down: draining before its removal"), r.discovery) << r.name;
    if (r.deletes == 0) {
      ASSERT_EQ(d.held.size(), 1u) << r.name;
      EXPECT_NE(d.held[0].why.find("draining: "), std::string::npos) << r.name << ": " << d.held[0].why;
      EXPECT_FALSE(d.converged) << r.name;
    }
  }
}

TEST(DecideDiscoveryTest, AServiceWithoutCnsNamesHasNoDiscoveryToFollow) {
  Snapshot s = TwoWebs("    cns: false\n    stop: {drain: 30s}\n");
  s.instances[0].checked = true;
  s.instances[0].health = "unhealthy";
  s.instances[0].liveness = "none";
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kDiscovery), 0);
  EXPECT_EQ(Count(d, ActionKind::kDelete), 1) << "no drain either";
}

TEST(DecideDiscoveryTest, AnInstanceThatSetItsOwnStatusIsLeftAlone) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web: {image: web@1, count: 1}\n"));
  s.instances = {Instance(s, "web", 1)};
  s.instances[0].cns_down = true;  // `mdata-put triton.cns.status down` in the zone: no hold of ours
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kDiscovery), 0);
  EXPECT_TRUE(d.converged);
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// A mariposad that just started knows no check's state yet: the instances
// that serve keep serving until a readiness check fails.
TEST(DecideDiscoveryTest, UnknownHealthKeepsAServingInstanceInDiscovery) {
  Snapshot s = SnapshotOf(GoalOf(
      "project: p\nservices:\n  web:\n    image: web@1\n    count: 2\n    healthchecks:\n      h: {type: tcp, port: 80}\n"));
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2)};
  for (auto& i : s.instances) {
    i.checked = true;
    i.health = "unknown";
    i.cns_down = false;
    i.discovery.clear();
  }
  EXPECT_EQ(Count(Decide(s, kT0), ActionKind::kDiscovery), 0);
  s.instances[0].health = "unhealthy";  // its readiness fails (alive: not replaced)
  s.instances[0].liveness = "healthy";
  Decision d = Decide(s, kT0);
  ASSERT_EQ(Count(d, ActionKind::kDiscovery), 1);
  EXPECT_EQ(d.steps[0].action.instance, s.instances[0].uuid);
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// A broken instance drained before its removal: the replacement budget let
// the removal through when the drain began; it does not count it again.
TEST(DecideDiscoveryTest, ADrainedBrokenInstanceGoesWithoutSpendingTheBudgetTwice) {
  Snapshot s = SnapshotOf(GoalOf("project: p\nservices:\n  web:\n    image: web@1\n    count: 2\n"
                                 "    stop: {drain: 2s}\n    healthchecks:\n      h: {type: tcp, port: 80}\n"));
  s.instances = {Instance(s, "web", 1), Instance(s, "web", 2), Instance(s, "web", 3)};  // 3: the replacement
  for (auto& i : s.instances) {
    i.checked = true;
    i.health = "healthy";
  }
  InstanceState& broken = s.instances[0];
  broken.health = "unhealthy";
  broken.cns_down = true;
  broken.discovery = DiscoveryHoldValue(kT0 - absl::Seconds(3), "draining before its removal");
  s.memory["web"].history.Replaced(kT0 - absl::Seconds(3));  // the replacement's create spent the budget
  s.memory["web"].spec_hash = s.goal->services.at("web").record.spec_hash;
  Decision d = Decide(s, kT0);
  EXPECT_EQ(Count(d, ActionKind::kDelete, "remove-broken"), 1) << (d.held.empty() ? "" : d.held[0].why);
}

}  // namespace
}  // namespace mariposa::convergence
