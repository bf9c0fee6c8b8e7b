// The real mariposad on a free loopback port, driven by the real CLI.
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "common/clock.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("cli");
    daemon_ = std::make_unique<Daemon>(dir_ + "/data");
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
    manifest_ = ReadFile("deploy/examples/jupiter.yaml");
    ASSERT_FALSE(manifest_.empty());
    WriteFile(dir_ + "/v1.yaml", manifest_);
    WriteFile(dir_ + "/v2.yaml", absl::StrReplaceAll(manifest_, {{"wordpress@1.2.0", "wordpress@1.3.0"}}));
    WriteFile(dir_ + "/v3.yaml", absl::StrReplaceAll(manifest_, {{"count: 2", "count: 4"}}));
  }
  RunResult M(const std::vector<std::string>& args, const std::string& input = "") {
    return Cli(daemon_->addr(), args, input);
  }

  std::string dir_;
  std::string manifest_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(CliTest, ProjectLifecycle) {
  auto r = M({"project", "create", "apollo", "--description", "moon"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("created project apollo"));
  r = M({"project", "create", "apollo"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mariposa: project \"apollo\" exists already\n");
  r = M({"project", "list"});
  EXPECT_THAT(r.out, HasSubstr("apollo"));
  EXPECT_THAT(r.out, HasSubstr("moon"));
  r = M({"-o", "json", "project", "get", "apollo"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("\"name\": \"apollo\""));
  r = M({"project", "delete", "apollo"});  // stdin is not a terminal: refuses
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("pass --yes"));
  r = M({"project", "delete", "apollo", "--yes"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = M({"project", "get", "apollo"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no project \"apollo\""));
}

TEST_F(CliTest, ApplyDiffVersionsRollback) {
  auto r = M({"apply", "-f", dir_ + "/v1.yaml"});  // no --yes, no terminal
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("create service \"wordpress\": 3 instances"));
  r = M({"apply", "-f", dir_ + "/v1.yaml", "--yes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("applied version 1"));

  r = M({"apply", "-f", dir_ + "/v1.yaml", "--yes"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("no changes"));

  r = M({"diff", "-f", dir_ + "/v1.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // nothing would change
  r = M({"diff", "-f", dir_ + "/v2.yaml"});
  ASSERT_EQ(r.exit_code, 1) << r.err;  // something would (as diff(1); terraform's -detailed-exitcode says 2)
  EXPECT_THAT(r.out, HasSubstr("plan for project \"jupiter\" on mariposad " + daemon_->addr() + ":\n"));
  EXPECT_THAT(r.out, HasSubstr("0 to create, 3 to replace, 0 to delete\n"));
  EXPECT_EQ(M({"-o", "json", "diff", "-f", dir_ + "/v1.yaml"}).exit_code, 0);
  RunResult json_plan = M({"-o", "json", "diff", "-f", dir_ + "/v2.yaml"});
  EXPECT_EQ(json_plan.exit_code, 1);
  EXPECT_THAT(json_plan.out, HasSubstr("\"changed\": true"));
  EXPECT_EQ(M({"diff", "-f", dir_ + "/nosuch.yaml"}).exit_code, 2);  // trouble
  // A manifest for jupiter is not retargeted by -j (or MARIPOSA_PROJECT).
  r = M({"-j", "saturn", "diff", "-f", dir_ + "/v2.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("the manifest is for project \"jupiter\" but -j (or $MARIPOSA_PROJECT) names \"saturn\""));
  r = M({"-j", "saturn", "apply", "-f", dir_ + "/v2.yaml", "--yes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(M({"project", "get", "saturn"}).exit_code, 1);
  r = M({"diff", "-f", dir_ + "/v2.yaml"});
  EXPECT_THAT(r.out, HasSubstr("update \"wordpress\" (3 instances)"));
  EXPECT_THAT(r.out, HasSubstr("~ image: autopilotpattern/wordpress@1.2.0 -> autopilotpattern/wordpress@1.3.0"));
  EXPECT_THAT(r.out, HasSubstr("3 instances will be replaced"));

  r = M({"apply", "-f", dir_ + "/v2.yaml", "--yes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("applied version 2"));
  // --yes plans and stores in one call, and prints the plan it stored.
  EXPECT_THAT(r.out, HasSubstr("plan for project \"jupiter\" on mariposad " + daemon_->addr() + ":\n"));
  EXPECT_THAT(r.out, HasSubstr("3 instances will be replaced"));
  EXPECT_THAT(r.out, HasSubstr("0 to create, 3 to replace, 0 to delete\n"));
  r = M({"diff", "-f", dir_ + "/v3.yaml"});
  EXPECT_THAT(r.out, HasSubstr("scale \"nginx\" 2 -> 4 (+2)"));

  // A stale --previous is rejected and names the current version.
  r = M({"-o", "json", "-j", "jupiter", "version", "get", "1"});
  ASSERT_EQ(r.exit_code, 0);
  r = M({"apply", "-f", dir_ + "/v3.yaml", "--yes", "--previous", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("the current version is 2 ("));
  EXPECT_THAT(r.err, HasSubstr("re-run with --previous"));
  r = M({"apply", "-f", dir_ + "/v3.yaml", "--yes", "--previous", "1", "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  r = M({"-j", "jupiter", "versions"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("VERSION"));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4);  // header + 3

  r = M({"-j", "jupiter", "rollback", "1", "--yes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("version 4"));
  EXPECT_THAT(r.out, HasSubstr("content of version 1"));
  // The rollback's manifest is byte for byte version 1's.
  r = M({"-j", "jupiter", "version", "get", "4", "--manifest"});
  EXPECT_EQ(r.out, manifest_);
  r = M({"-j", "jupiter", "version", "tag", "4", "good"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = M({"-j", "jupiter", "version", "get", "good"});
  EXPECT_THAT(r.out, HasSubstr("version: 4"));
  EXPECT_THAT(r.out, HasSubstr("tags:    good"));
}

TEST_F(CliTest, BadManifestIsRejectedWholeWithLocations) {
  WriteFile(dir_ + "/bad.yaml", "project: jupiter\nservices:\n  web:\n    image: x\n    count: many\n    ports: [0]\n");
  auto r = M({"apply", "-f", dir_ + "/bad.yaml", "--yes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("2 errors in manifest, nothing was changed"));
  EXPECT_THAT(r.err, HasSubstr("/bad.yaml:5:12: services.web.count: \"many\" is not a whole number"));
  EXPECT_THAT(r.err, HasSubstr("/bad.yaml:6:13: services.web.ports[0]: 0 is out of range 1..65535"));
  r = M({"project", "list"});
  EXPECT_THAT(r.out, Not(HasSubstr("jupiter")));
  // Missing meta key: the apply fails naming it.
  WriteFile(dir_ + "/meta.yaml", "project: jupiter\nservices:\n  web:\n    image: x\n    environment: {A: \"{{ .meta.db.host }}\"}\n");
  r = M({"apply", "-f", dir_ + "/meta.yaml", "--yes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("meta key \"db.host\" is not set"));
}

TEST_F(CliTest, MetaWithCasAndSecretsNeverPrinted) {
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  // Never from argv (ps shows it); from stdin with "-".
  auto r = M({"-j", "jupiter", "meta", "set", "mysql.password", "hunter2-sekrit", "--secret"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("not taken from the command line"));
  r = M({"-j", "jupiter", "meta", "set", "mysql.password", "-", "--secret"}, "hunter2-sekrit\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (auto args : std::vector<std::vector<std::string>>{
           {"-j", "jupiter", "meta", "list"},
           {"-j", "jupiter", "meta", "get", "mysql.password"},
           {"-o", "json", "-j", "jupiter", "meta", "list"},
           {"-o", "yaml", "-j", "jupiter", "meta", "get", "mysql.password"},
           {"events", "--all"},
           {"-o", "json", "events", "--all"}}) {
    r = M(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out + r.err, Not(HasSubstr("hunter2"))) << args.back();
  }
  EXPECT_THAT(daemon_->log(), Not(HasSubstr("hunter2")));
  r = M({"-j", "jupiter", "meta", "get", "mysql.password"});
  EXPECT_EQ(r.out, "<secret>\n");

  r = M({"-j", "jupiter", "meta", "set", "n", "1", "--cas", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = M({"-j", "jupiter", "meta", "set", "n", "2", "--cas", "0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("meta key \"n\" is at cas"));
  r = M({"-j", "jupiter", "meta", "incr", "n", "41"});
  EXPECT_THAT(r.out, HasSubstr("n=42"));
  r = M({"-j", "jupiter", "meta", "decr", "n"});
  EXPECT_THAT(r.out, HasSubstr("n=41"));
  WriteFile(dir_ + "/meta.env", "# comment\nregion=us-east\ntier=gold\n");
  r = M({"-j", "jupiter", "meta", "import", dir_ + "/meta.env"});
  EXPECT_THAT(r.out, HasSubstr("imported 2 keys"));
  r = M({"-j", "jupiter", "meta", "get", "tier"});
  EXPECT_EQ(r.out, "gold\n");
  r = M({"-j", "jupiter", "meta", "rm", "tier"});
  EXPECT_EQ(r.exit_code, 0);
  r = M({"-j", "jupiter", "meta", "get", "tier"});
  EXPECT_EQ(r.exit_code, 1);
}

TEST_F(CliTest, FreezeThawAndTheQueue) {
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  auto r = M({"-j", "jupiter", "freeze", "--group", "frontend", "--reason", "incident 42", "--only",
              "replace-unhealthy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("frozen (task "));
  std::string task = r.out.substr(r.out.find("task ") + 5, 36);
  r = M({"-j", "jupiter", "queue", "list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("freeze"));
  EXPECT_THAT(r.out, HasSubstr("nginx,wordpress"));
  EXPECT_THAT(r.out, HasSubstr("incident 42"));
  r = M({"-j", "jupiter", "queue", "get", task});
  EXPECT_THAT(r.out, HasSubstr("only:     replace-unhealthy"));
  // A second freeze of an overlapping scope is refused, naming the first.
  r = M({"-j", "jupiter", "freeze", "--service", "nginx"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(task));
  // Bad scopes and kinds are refused clearly.
  r = M({"-j", "jupiter", "freeze", "--service", "nope"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no service \"nope\" in project jupiter"));
  r = M({"-j", "jupiter", "freeze", "--only", "everything"});
  EXPECT_THAT(r.err, HasSubstr("is not one of: replace-unhealthy, scale, reprovision, agent-rollout"));
  r = M({"-j", "jupiter", "queue", "terminate", task});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("is a freeze; end it with `mariposa thaw`"));
  // The freeze survives a restart of mariposad.
  ASSERT_EQ(daemon_->Stop(), 0);
  ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  r = M({"-j", "jupiter", "thaw", "--service", "mysql"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("nothing to thaw"));
  r = M({"-j", "jupiter", "thaw", "--service", "wordpress"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "thawed 1 freeze\n");
  r = M({"-o", "json", "-j", "jupiter", "queue", "get", task});
  EXPECT_THAT(r.out, HasSubstr("\"state\": \"terminated\""));
  r = M({"events", "--all"});
  EXPECT_THAT(r.out, HasSubstr("task.add"));
  EXPECT_THAT(r.out, HasSubstr("task.terminated"));
}

TEST_F(CliTest, UsageErrorsAndHelp) {
  auto r = M({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command \"frobnicate\""));
  r = M({"apply"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("apply needs -f FILE"));
  r = M({"versions"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no project"));
  for (const char* cmd : {"apply", "diff", "versions", "version", "rollback", "meta", "project", "events", "admin",
                          "queue", "freeze", "thaw", "reprovision", "status", "scale"}) {
    r = M({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_THAT(r.out, HasSubstr("usage: mariposa")) << cmd;
  }
  // Without --triton there is no actual state, and status says so.
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  r = M({"-j", "jupiter", "status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("runs without --triton"));
  r = RunProcess({"cli/mariposa", "--addr", "127.0.0.1:1", "project", "list"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot reach mariposad at 127.0.0.1:1"));
}

TEST_F(CliTest, SecondDaemonRefusesAndShutdownIsGraceful) {
  Daemon second(dir_ + "/data");
  EXPECT_FALSE(second.Start());
  EXPECT_THAT(second.log(), HasSubstr("is in use by mariposad pid " + std::to_string(daemon_->pid())));
  auto r = M({"admin", "status"});
  EXPECT_THAT(r.out, HasSubstr("mode:     active"));
  // Backups go only into the daemon's backup directory, 0600.
  r = M({"admin", "backup", dir_ + "/backup.db"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("only into its backup directory"));
  r = M({"admin", "backup", "../escape.db"});
  EXPECT_EQ(r.exit_code, 1);
  r = M({"admin", "backup", "backup.db"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/data/backups/backup.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  ASSERT_EQ(stat((dir_ + "/data/backups").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700);
  ASSERT_EQ(stat((dir_ + "/data/mariposa.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  ASSERT_EQ(stat((dir_ + "/data").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700);
  EXPECT_EQ(daemon_->Stop(), 0);
  EXPECT_THAT(daemon_->log(), HasSubstr("\"msg\":\"stopped\""));
  // The backup is a working store.
  Daemon restored(dir_ + "/restored");
  ASSERT_EQ(mkdir((dir_ + "/restored").c_str(), 0700), 0);
  ASSERT_EQ(link((dir_ + "/data/backups/backup.db").c_str(), (dir_ + "/restored/mariposa.db").c_str()), 0);
  ASSERT_EQ(link((dir_ + "/data/secrets.key").c_str(), (dir_ + "/restored/secrets.key").c_str()), 0);
  ASSERT_TRUE(restored.Start()) << restored.log();
  EXPECT_EQ(restored.Stop(), 0);
}

}  // namespace
}  // namespace mariposa::testing

namespace mariposa::testing {
namespace {

// `events -f` streams: the history after --after, then what happens while it
// runs, in order, each event once.
TEST_F(CliTest, EventsFollowStreamsNewEvents) {
  ASSERT_EQ(M({"project", "create", "gemini"}).exit_code, 0);
  ASSERT_EQ(M({"-j", "gemini", "meta", "set", "a", "1"}).exit_code, 0);
  RunResult follow;
  std::thread watcher([&] {
    follow = RunProcess({"/usr/bin/timeout", "3", "cli/mariposa", "--addr", daemon_->addr(), "-j", "gemini", "events", "-f",
                         "--after", "0"});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ASSERT_EQ(M({"-j", "gemini", "meta", "set", "b", "2"}).exit_code, 0);
  ASSERT_EQ(M({"-j", "gemini", "meta", "set", "c", "3"}).exit_code, 0);
  watcher.join();
  EXPECT_EQ(follow.exit_code, 124) << follow.err;  // still following when timeout stopped it
  size_t created = follow.out.find("project.create"), a = follow.out.find("meta.set"),
         b = follow.out.find(" b"), c = follow.out.find(" c");
  ASSERT_NE(created, std::string::npos) << follow.out;
  ASSERT_NE(b, std::string::npos) << follow.out;
  ASSERT_NE(c, std::string::npos) << follow.out;
  EXPECT_LT(created, a);
  EXPECT_LT(b, c);
  // A stream for a project that does not exist fails at once.
  auto r = M({"-j", "nope", "events", "-f"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("nope"));
}

// The habits of kubectl and nomad: newest events first with a hint of the
// rest, -jNAME, task id prefixes, "did you mean", shell completion, and an
// `events -f` that survives a restart of mariposad.
TEST_F(CliTest, OperatorHabits) {
  ASSERT_EQ(M({"project", "create", "pluto"}).exit_code, 0);
  for (const char* k : {"a", "b", "c", "d", "e"}) ASSERT_EQ(M({"-jpluto", "meta", "set", k, "1"}).exit_code, 0);
  auto r = M({"-jpluto", "events", "-n", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("project.create")));  // the newest 3: meta c, d, e
  EXPECT_THAT(r.out, HasSubstr(" e"));
  EXPECT_THAT(r.err, HasSubstr("(3 earlier events not shown: --all shows every one"));
  r = M({"-jpluto", "events", "--all"});
  EXPECT_THAT(r.out, HasSubstr("project.create"));
  EXPECT_EQ(r.err, "");
  r = M({"-o", "json", "-jpluto", "events", "--after", "0", "-n", "2"});
  EXPECT_THAT(r.out, HasSubstr("\"later\": \"4\""));

  // A task by a unique prefix of its uuid.
  r = M({"-jpluto", "project", "get"});
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  r = M({"-j", "jupiter", "freeze", "--reason", "prefix"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string task = r.out.substr(r.out.find("task ") + 5, 36);
  r = M({"-jjupiter", "queue", "get", task.substr(0, 8)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(task));
  EXPECT_EQ(M({"-jjupiter", "queue", "get", task.substr(0, 3)}).exit_code, 1);  // too short to be a prefix

  // Did you mean.
  r = M({"stauts"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command \"stauts\"; did you mean \"status\"?"));
  r = M({"project", "lst"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown subcommand \"lst\" of project; did you mean \"list\"?"));

  // Completion scripts that the shell accepts.
  r = M({"completion", "bash"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("complete -o default -F _mariposa mariposa"));
  EXPECT_THAT(r.out, HasSubstr("\"project\") echo \"copy create delete get list move\" ;;"));
  EXPECT_EQ(RunProcess({"/bin/bash", "-n"}, r.out).exit_code, 0);
  EXPECT_EQ(M({"completion", "fish"}).exit_code, 2);

  // events -f across a restart: it reconnects and prints what happened
  // meanwhile, each event once; the stop does not wait for it.
  RunResult follow;
  std::thread watcher([&] {
    follow = RunProcess({"/usr/bin/timeout", "8", "cli/mariposa", "--addr", daemon_->addr(), "-jpluto", "events", "-f"});
  });
  Pause(absl::Milliseconds(700));
  absl::Time stop_at = RealClock::Get()->Now();
  ASSERT_EQ(daemon_->Stop(), 0);
  absl::Duration stop_took = RealClock::Get()->Now() - stop_at;
  EXPECT_LT(stop_took, absl::Seconds(2)) << "graceful stop with a watcher took " << stop_took;
  std::string addr = daemon_->addr();
  daemon_ = std::make_unique<Daemon>(dir_ + "/data", addr);  // the same address
  ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  ASSERT_EQ(M({"-jpluto", "meta", "set", "after-restart", "1"}).exit_code, 0);
  watcher.join();
  EXPECT_EQ(follow.exit_code, 124) << follow.err;
  EXPECT_THAT(follow.err, HasSubstr("reconnecting, resuming after event"));
  EXPECT_THAT(follow.out, HasSubstr("after-restart")) << follow.err;
}

// mariposad --config: the shipped example is accepted (every key a flag), a
// flag on the command line wins, and a bad key is refused naming the file.
// Issue 31: a token file with a second line or stray text used to abort
// every command inside gRPC (SIGABRT, exit 134).
TEST_F(CliTest, BadTokenFileIsAClearErrorNotAnAbort) {
  WriteFile(dir_ + "/two-lines.token", "mpt_abc\nmpt_def\n");
  RunResult r = M({"--token-file", dir_ + "/two-lines.token", "project", "list"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("token file " + dir_ + "/two-lines.token holds more than one line"));
  WriteFile(dir_ + "/spaced.token", "Bearer mpt_abc\n");
  r = M({"--token-file", dir_ + "/spaced.token", "project", "list"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("holds a space at byte 6"));
}

TEST_F(CliTest, ConfigFile) {
  ServerProcess sample({"daemon/mariposad", "--config", "deploy/systemd/mariposad.yaml", "--listen", "127.0.0.1:0",
                        "--data-dir", dir_ + "/sample", "--socket", "none", "--metrics-listen", "127.0.0.1:0"},
                       dir_ + "/sample");
  ASSERT_TRUE(sample.Start()) << sample.log();
  EXPECT_EQ(sample.extra_addrs().size(), 1u);  // metrics-listen from the file, overridden to port 0
  EXPECT_EQ(sample.Stop(), 0);
  WriteFile(dir_ + "/bad.yaml", "listen: 127.0.0.1:0\nlisten-on: 1\n");
  RunResult r = RunProcess({"daemon/mariposad", "--config", dir_ + "/bad.yaml", "--data-dir", dir_ + "/bad"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.yaml:2: unknown setting \"listen-on\""));
}

}  // namespace
}  // namespace mariposa::testing
