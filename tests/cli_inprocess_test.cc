// Every CLI command, run in-process (cmd::Run from the cli library, with
// its own output streams and environment) against a real mariposad and
// tritonsim; and against fake services, for what a real daemon does not do
// on demand (hang past a deadline, refuse as readonly, report a failure).
#include <unistd.h>

#include <set>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/notification.h"
#include "cli/cli.h"
#include "common/clock.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "projects/limits.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

struct Ran {
  int code;
  std::string out, err;
};

// `mariposa args...` in this process, reaching mariposad through `dial`.
Ran RunCli(const std::vector<std::string>& args, const std::map<std::string, std::string>& env, cli::Dialer dial,
           const std::string& stdin_text = "") {
  std::ostringstream out, err;
  std::istringstream in(stdin_text);
  cmd::Io io{&out, &err, &in, false, false, RealClock::Get(), env, std::move(dial)};
  int code = cmd::Run(args, io);
  return {code, out.str(), err.str()};
}

// The command path (as the registry names it) an invocation runs.
std::string PathOf(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  auto globals = cli::ParseFlags(cmd::Commands().globals(), args, true, &rest, "mariposa");
  if (!globals.ok()) return "";
  std::vector<std::string> words;
  for (const auto& w : rest) {
    if (w.size() < 2 || w[0] != '-') words.push_back(w);
  }
  size_t used = 0;
  auto c = cmd::Commands().Find(words, &used);
  return c.ok() ? (*c)->path : "";
}

class CliInProcess : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(TempDir("inprocess"));
    sim_ = new Tritonsim({"--servers", "3", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "10"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    daemon_ = new ServerProcess({"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", *dir_ + "/data",
                                 "--triton", sim_->addr(), "--owner", "930896af-bf8c-48d4-885c-6573a94b1853",
                                 "--network", "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms",
                                 "--backup-dir", *dir_ + "/backups", "--image-source", sim_->addr() + "/updates"},
                                *dir_ + "/data");
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
    WriteFile(*dir_ + "/jupiter.yaml", ReadFile("deploy/examples/jupiter.yaml"));
  }
  static void TearDownTestSuite() {
    delete daemon_;
    delete sim_;
  }
  // `mariposa --addr ADDR args...`, in this process.
  static Ran Run(std::vector<std::string> args, const std::string& stdin_text = "") {
    args.insert(args.begin(), {"--addr", daemon_->addr()});
    return RunCli(args, {{"MARIPOSA_CONFIG", *dir_ + "/config.yaml"}}, cli::DefaultDialer(), stdin_text);
  }
  static std::string* dir_;
  static Tritonsim* sim_;
  static ServerProcess* daemon_;
};
std::string* CliInProcess::dir_ = nullptr;
Tritonsim* CliInProcess::sim_ = nullptr;
ServerProcess* CliInProcess::daemon_ = nullptr;

// Each command with what its output must show; in order, as a session.
TEST_F(CliInProcess, EveryCommand) {
  const std::string m = *dir_ + "/jupiter.yaml";
  struct Step {
    std::vector<std::string> args;
    int code;
    std::string shows;  // in stdout + stderr
  } steps[] = {
      {{"help"}, 0, "Global options"},
      {{"completion", "bash"}, 0, "complete"},
      {{"completion", "fish"}, 2, "no completion for \"fish\": bash or zsh"},
      {{"project", "lst"}, 2, "did you mean \"list\""},
      {{"meta", "set", "k", "v", "--cass", "1"}, 2, "unknown option \"--cass\" for mariposa meta set; did you mean \"--cas\"?"},
      {{"-j", "jupiter", "meta", "get"}, 2, "usage: mariposa -j PROJECT meta get KEY"},
      {{"-j", "jupiter", "versions", "extra"}, 2, "too many arguments for versions: \"extra\" (it takes none)"},
      {{"meta", "list"}, 2, "no project: pass -j PROJECT"},
      {{"meta", "--help"}, 0, "meta set KEY [VALUE|-]"},
      {{"help", "events"}, 0, "-f, --follow"},
      {{"stauts"}, 2, "did you mean \"status\""},
      {{"--request-timeout", "nope", "project", "list"}, 2, "--request-timeout"},
      {{"project", "create", "mars", "--description", "red"}, 0, "mars"},
      {{"project", "list"}, 0, "mars"},
      {{"project", "get", "mars"}, 0, "red"},
      {{"-j", "jupiter", "diff", "-f", m}, 1, "6 to create, 0 to replace, 0 to delete"},
      {{"-j", "jupiter", "apply", "-f", m, "--yes", "--wait", "--timeout", "60s"}, 0, "converged"},
      {{"-j", "jupiter", "diff", "-f", m}, 0, "no changes"},
      {{"-j", "jupiter", "status"}, 0, "converged"},
      {{"project", "copy", "jupiter", "jupiter-copy", "--set", "services.nginx.count=1", "--dry-run"}, 0,
       "would copy project jupiter version 1 to jupiter-copy"},
      {{"project", "copy", "jupiter", "jupiter-copy", "--set", "services.wordpress.count=0"}, 0,
       "copied project jupiter version 1 to jupiter-copy"},
      {{"project", "move", "jupiter-copy", "jupiter-moved", "--yes", "--timeout", "60s"}, 0,
       "moved project jupiter-copy to jupiter-moved"},
      {{"import", "compose", *dir_ + "/compose.yml", "--project", "fromcompose"}, 0, "project: fromcompose"},
      {{"datacenters"}, 0, "one data center"},
      {{"-j", "jupiter", "rollouts", "--all"}, 0, "no rollouts across data centers"},
      {{"-j", "jupiter", "rollouts", "cancel", "0000"}, 1, "no rollout 0000"},
      {{"-j", "jupiter", "versions"}, 0, "1"},
      {{"-j", "jupiter", "version", "get", "1"}, 0, "version"},
      {{"-j", "jupiter", "version", "tag", "1", "first"}, 0, "first"},
      {{"-j", "jupiter", "history"}, 0, "apply"},
      {{"-j", "jupiter", "scale", "nginx=3", "--wait", "--timeout", "60s"}, 0, "converged"},
      {{"-j", "jupiter", "rollback", "first", "--yes", "--wait", "--timeout", "60s"}, 0, "converged"},
      {{"-j", "jupiter", "meta", "set", "color", "blue"}, 0, ""},
      {{"-j", "jupiter", "meta", "get", "color"}, 0, "blue"},
      {{"-j", "jupiter", "meta", "list"}, 0, "color"},
      {{"-j", "jupiter", "meta", "rm", "color"}, 0, ""},
      {{"-j", "jupiter", "meta", "incr", "n", "5"}, 0, "n=5"},
      {{"-j", "jupiter", "meta", "decr", "n"}, 0, "n=4"},
      {{"-j", "jupiter", "meta", "import", *dir_ + "/meta.env"}, 0, "imported 2 keys"},
      {{"-j", "jupiter", "--timeout", "1s", "events", "-f", "--after", "1"}, 0, "project.create"},
      {{"-j", "jupiter", "events", "-n", "5"}, 0, "earlier"},
      {{"-j", "jupiter", "freeze", "--service", "nginx"}, 0, "frozen"},
      {{"-j", "jupiter", "queue", "list"}, 0, "freeze"},
      {{"-j", "jupiter", "thaw", "--service", "nginx"}, 0, ""},
      {{"-j", "jupiter", "reprovision", "--service", "mysql"}, 0, "queued reprovision task"},
      {{"-j", "jupiter", "health"}, 1, "--embedded-health or --health-agents"},
      {{"image", "list"}, 0, "nginx"},
      {{"image", "get", "autopilotpattern/nginx@1.4.0"}, 0, "where:     IMGAPI"},
      {{"-j", "jupiter", "image", "avail"}, 0, "5.7.3"},
      {{"image", "changes", "cn-agent", "2.14.1", "2.15.0"}, 0, "TRITON-2342"},
      {{"image", "import", "cn-agent@2.15.0"}, 0, "into IMGAPI"},
      {{"-j", "jupiter", "core", "check"}, 0, "has no agent services"},
      {{"health", "--agent", "127.0.0.1:1"}, 1, "cannot reach the health agent at 127.0.0.1:1"},
      {{"auth", "permissions"}, 0, "Projects/Apply"},
      {{"auth", "whoami"}, 0, "admin"},
      {{"auth", "can-i", "apply", "-j", "jupiter"}, 0, "yes"},
      {{"admin", "status"}, 0, "mode:     active"},
      {{"admin", "backup", "inproc.db"}, 0, "backed up"},
      {{"nodes"}, 0, "one node: this mariposad runs every project"},
      {{"admin", "store-copy", "--from", "sqlite:" + *dir_ + "/backups/inproc.db", "--to",
        "sqlite:" + *dir_ + "/copy.db"},
       0, "events: "},
      {{"admin", "store-copy", "--from", "sqlite:" + *dir_ + "/backups/inproc.db", "--to",
        "sqlite:" + *dir_ + "/copy.db"},
       1, "is not empty"},
      {{"admin", "store-copy", "--from", "mysql://x", "--to", "sqlite:" + *dir_ + "/copy2.db"}, 1,
       "neither sqlite:PATH nor a PostgreSQL URI"},
      {{"admin", "state", "set", "readonly", "--reason", "in-process test"}, 0, "readonly"},
      {{"admin", "state"}, 0, "readonly since"},
      {{"-j", "mars", "meta", "set", "k", "v"}, 1, "in-process test"},
      {{"admin", "state", "set", "active"}, 0, "active (was readonly)"},
      {{"admin", "restore", *dir_ + "/backups/inproc.db", "--data-dir", *dir_ + "/data"}, 1, "is running on"},
      {{"admin", "token", "create", "--name", "ci", "--role", "viewer", "--all-projects"}, 0, "mpt_"},
      {{"admin", "token", "list"}, 0, "ci"},
      {{"admin", "grant", "user:nobody", "viewer"}, 0, "viewer"},
      {{"admin", "grants"}, 0, "user:nobody"},
      {{"admin", "ungrant", "user:nobody"}, 0, "no longer has a grant on every project"},
      {{"admin", "token", "revoke", "ci"}, 0, "revoked token ci"},
      {{"admin", "rotate-key"}, 0, "secrets key rotated"},
      {{"config", "set-context", "local", "--addr", "127.0.0.1:1"}, 0, "saved"},
      {{"config", "get-contexts"}, 0, "local"},
      {{"config", "current-context"}, 0, "local"},
      {{"config", "use-context", "local"}, 0, "now using context local"},
      {{"config", "delete-context", "local"}, 0, "context local deleted"},
      {{"project", "delete", "mars", "--yes"}, 0, "mars"},
  };
  WriteFile(*dir_ + "/meta.env", "a=1\nb=2\n");
  WriteFile(*dir_ + "/compose.yml", "services:\n  web: {image: nginx, ports: [\"8080:80\"]}\n");
  std::set<std::string> covered;
  for (const Step& s : steps) {
    covered.insert(PathOf(s.args));
    Ran r = Run(s.args);
    std::string all = r.out + r.err;
    std::string cmd;
    for (const auto& a : s.args) absl::StrAppend(&cmd, a, " ");
    EXPECT_EQ(r.code, s.code) << cmd << "\n" << all;
    EXPECT_NE(all.find(s.shows), std::string::npos) << cmd << " should show \"" << s.shows << "\":\n" << all;
  }
  // Commands that take what an earlier one printed.
  auto run = [&](std::vector<std::string> args) {
    covered.insert(PathOf(args));
    return Run(args);
  };
  Ran r = run({"-j", "jupiter", "stop", "--service", "mysql"});
  EXPECT_EQ(r.code, 0) << r.err;
  std::string task = r.out.substr(r.out.rfind(' ') + 1, 8);  // a prefix of its uuid
  r = run({"queue", "get", task});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("kind:     stop"), std::string::npos) << r.out;
  // With 10 ms jobs the stop may already be over on a busy machine: a start
  // is refused, naming it, only while it is at work.
  bool at_work = false;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    if (absl::StartsWith(line, "state:")) at_work = absl::StrContains(line, "queued") || absl::StrContains(line, "active");
  }
  if (at_work) {
    // The stop may also end between that read and this start: a start
    // accepted must then find the stop ended (admission_test holds the
    // refusal itself without a race).
    r = run({"-j", "jupiter", "start", "--service", "mysql"});
    if (r.code == 0) {
      Ran stop = Run({"queue", "get", task});
      EXPECT_NE(stop.out.find("state:    completed"), std::string::npos)
          << "a start was accepted while the stop was at work:\n" << stop.out;
    } else {
      EXPECT_EQ(r.code, 1);  // the stop is still at work, and named
      EXPECT_NE(r.err.find("stop task " + task), std::string::npos) << r.err;
    }
  }
  r = run({"-j", "jupiter", "start", "--service", "nginx"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("queued start task"), std::string::npos) << r.out;
  // A run is of a scheduled or event service only (convergence_e2e_test
  // runs them).
  r = run({"-j", "jupiter", "run", "nginx"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("service nginx is continuous: it runs all the time"), std::string::npos) << r.err;
  r = run({"-j", "jupiter", "run", "nosuch"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("has no service \"nosuch\""), std::string::npos) << r.err;
  r = run({"-j", "jupiter", "reprovision", "--service", "wordpress", "--rolling", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string rollout = r.out.substr(r.out.rfind(' ') + 1, 36);
  r = run({"pause", rollout, "--reason", "look first"});
  Ran resumed = run({"resume", rollout});
  // Either it was still open (paused, then resumed) or it had already
  // finished (it may between the two), and each says so.
  if (r.code == 0) {
    EXPECT_NE(r.out.find("is paused"), std::string::npos) << r.out;
    EXPECT_TRUE(resumed.out.find("continues") != std::string::npos ||
                resumed.err.find("already ended") != std::string::npos)
        << resumed.out << resumed.err;
  } else {
    EXPECT_NE(r.err.find(rollout), std::string::npos) << r.err;
  }
  r = run({"-j", "jupiter", "freeze", "--service", "nginx"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string freeze = r.out.substr(r.out.find("task ") + 5, 36);
  r = run({"queue", "terminate", freeze});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("is a freeze; end it with `mariposa thaw`"), std::string::npos) << r.err;
  ASSERT_EQ(Run({"-j", "jupiter", "thaw"}).code, 0);
  r = Run({"-o", "json", "-j", "jupiter", "status", "-v"});
  size_t at = r.out.find("\"uuid\": \"");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::string instance = r.out.substr(at + 9, 36);
  r = run({"image", "create", "--from", instance, "--name", "inproc-golden", "--version", "1.0.0"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("use it in a manifest as image: inproc-golden@1.0.0"), std::string::npos) << r.out;

  // A restore elsewhere: the backup's secret must open with the key given.
  r = Run({"-j", "jupiter", "meta", "set", "pw", "-", "--secret"}, "s3cret\n");
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(Run({"admin", "backup", "with-secret.db"}).code, 0);
  const std::string elsewhere = *dir_ + "/elsewhere";
  ASSERT_EQ(system(("mkdir -p " + elsewhere).c_str()), 0);
  r = Run({"admin", "restore", *dir_ + "/backups/with-secret.db", "--data-dir", elsewhere});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("there is no secrets key at " + elsewhere + "/secrets.key"), std::string::npos) << r.err;
  r = Run({"admin", "restore", *dir_ + "/backups/with-secret.db", "--data-dir", elsewhere, "--secrets-key",
           *dir_ + "/data/secrets.key"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1 secrets (they open with " + *dir_ + "/data/secrets.key)"), std::string::npos) << r.out;

  // Every registered command ran at least once above.
  for (const cli::Command& c : cmd::Commands().commands()) {
    EXPECT_TRUE(covered.count(c.path)) << "no in-process test runs `mariposa " << c.path << "`";
  }
}

// A manifest is read whole, in pieces, from a file or stdin up to the limit
// (the project's first line, a long comment, then the rest: a piece lost or
// read twice would not parse to the same manifest), and one byte more is
// refused before anything is sent.
TEST_F(CliInProcess, ManifestsAreReadWholeUpToTheLimit) {
  std::string m = ReadFile("deploy/examples/jupiter.yaml");
  size_t first = m.find('\n') + 1;
  std::string padded = m.substr(0, first) + "# " + std::string(150000, 'x') + "\n" + m.substr(first);
  absl::StrReplaceAll({{"project: jupiter", "project: padded"}}, &padded);
  ASSERT_NE(padded.find("project: padded"), std::string::npos);
  WriteFile(*dir_ + "/padded.yaml", padded);
  Ran r = Run({"apply", "-f", "-", "--yes"}, padded);
  ASSERT_EQ(r.code, 0) << r.err;
  r = Run({"diff", "-f", *dir_ + "/padded.yaml"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no changes: the manifest matches version 1"), std::string::npos) << r.out;

  std::string over = padded + "#" + std::string(Limits::kMaxManifestBytes + 1 - padded.size() - 2, 'y') + "\n";
  ASSERT_EQ(over.size(), Limits::kMaxManifestBytes + 1);
  WriteFile(*dir_ + "/over.yaml", over);
  for (const std::string& from : {std::string("-"), *dir_ + "/over.yaml"}) {
    r = Run({"apply", "-f", from, "--yes"}, over);
    EXPECT_EQ(r.code, 1) << from;
    EXPECT_NE(r.err.find("is larger than 4194304 bytes, the limit for one manifest"), std::string::npos) << r.err;
  }
}

// Piped output has no escape codes; --no-color is accepted everywhere.
TEST_F(CliInProcess, NoColorWhenNotATerminal) {
  Ran r = Run({"--no-color", "-j", "jupiter", "status"});
  // 0 converged or 3 not yet (the session above may leave a task at work):
  // either is an answer; the colour is what is checked here.
  EXPECT_TRUE(r.code == 0 || r.code == 3) << r.code << " " << r.err;
  EXPECT_EQ(r.out.find("\033["), std::string::npos);
  r = Run({"-j", "jupiter", "status"});
  EXPECT_EQ(r.out.find("\033["), std::string::npos) << "stdout of a test is not a terminal";
}


// ---- Against fake services: what a real mariposad does not do on demand.

// Projects that hang until the caller gives up, or refuse as a readonly
// mariposad does, or reject a request.
class FakeProjects : public v1::Projects::Service {
 public:
  grpc::Status ListProjects(grpc::ServerContext* ctx, const v1::ListProjectsRequest*,
                            v1::ListProjectsResponse*) override {
    while (!ctx->IsCancelled() && !released_.WaitForNotificationWithTimeout(absl::Milliseconds(10))) {
    }
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded");
  }
  grpc::Status CreateProject(grpc::ServerContext*, const v1::CreateProjectRequest* req,
                             v1::CreateProjectResponse*) override {
    if (req->name() == "ro") {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "mariposad is readonly: restoring the store (set by root at 10:00); every change is refused");
    }
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "project name \"" + req->name() + "\" has a space");
  }
  grpc::Status ListEvents(grpc::ServerContext*, const v1::ListEventsRequest*, v1::ListEventsResponse* resp) override {
    resp->add_events()->set_index(7);
    return grpc::Status::OK;
  }
  ~FakeProjects() override { released_.Notify(); }

 private:
  absl::Notification released_;
};

// A watch that sends two events, then stays open.
class FakeEvents : public v1::Events::Service {
 public:
  grpc::Status Watch(grpc::ServerContext* ctx, const v1::WatchEventsRequest* req,
                     grpc::ServerWriter<v1::Event>* out) override {
    for (int64_t i = req->after_index() + 1; i <= req->after_index() + 2; ++i) {
      v1::Event e;
      e.set_index(i);
      e.set_kind("fake.event");
      e.set_detail(absl::StrCat("number ", i));
      out->Write(e);
    }
    while (!ctx->IsCancelled()) absl::SleepFor(absl::Milliseconds(10));
    return grpc::Status::OK;
  }
};

// A task is queued; its service then fails.
class FakeQueueAndState : public v1::Queue::Service, public v1::State::Service {
 public:
  grpc::Status AddTask(grpc::ServerContext*, const v1::AddTaskRequest* req, v1::AddTaskResponse* resp) override {
    resp->mutable_task()->set_uuid("0f0f0f0f-0000-4000-8000-000000000001");
    resp->mutable_task()->set_kind(req->kind());
    return grpc::Status::OK;
  }
  grpc::Status GetState(grpc::ServerContext*, const v1::GetStateRequest* req, v1::GetStateResponse* resp) override {
    resp->set_project(req->project());
    resp->set_actual_known(true);
    auto* s = resp->add_services();
    s->set_name("web");
    if (req->project() == "fresh") {
      // Read "after" now (clocks a little apart): an age of zero.
      resp->mutable_observed_at()->set_seconds(absl::ToUnixSeconds(absl::Now()) + 3600);
      s->set_verdict("converged");
      return grpc::Status::OK;
    }
    if (req->project() == "slow") {
      s->set_verdict("progressing");
      s->set_reason("1/3 ready");
      return grpc::Status::OK;
    }
    s->set_verdict("failed");
    s->set_reason("3 of 3 replacements failed: image not found");
    s->set_fix("mariposa -j p image import IMAGE");
    return grpc::Status::OK;
  }
};

class CliAgainstFakes : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.RegisterService(&projects_);
    b.RegisterService(&events_);
    b.RegisterService(static_cast<v1::Queue::Service*>(&queue_state_));
    b.RegisterService(static_cast<v1::State::Service*>(&queue_state_));
    server_ = b.BuildAndStart();
  }
  void TearDown() override { server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1))); }
  Ran Run(const std::vector<std::string>& args) {
    grpc::Server* server = server_.get();
    return RunCli(args, {{"MARIPOSA_CONFIG", "/nonexistent/config.yaml"}},
                  [server](const std::string&, const auth::ClientCredentials&, const grpc::ChannelArguments& a)
                      -> absl::StatusOr<std::shared_ptr<grpc::Channel>> { return server->InProcessChannel(a); });
  }
  FakeProjects projects_;
  FakeEvents events_;
  FakeQueueAndState queue_state_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(CliAgainstFakes, RequestTimeoutAndTimeoutSayWhichPassed) {
  Ran r = Run({"--request-timeout", "200ms", "project", "list"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("did not answer within 200ms (--request-timeout)"), std::string::npos) << r.err;
  r = Run({"--timeout", "300ms", "project", "list"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--timeout 300ms passed before mariposad"), std::string::npos) << r.err;
  r = Run({"--timeout", "soon", "project", "list"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--timeout \"soon\" is not a positive duration"), std::string::npos) << r.err;
}

TEST_F(CliAgainstFakes, RefusalsAreMariposadsOwnAndServerErrorsAreNotUsageErrors) {
  Ran r = Run({"project", "create", "ro"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "mariposa: mariposad is readonly: restoring the store (set by root at 10:00); every change is "
                   "refused\n");
  r = Run({"project", "create", "a b"});
  EXPECT_EQ(r.code, 1);  // mariposad's INVALID_ARGUMENT is an error, not a usage error
  EXPECT_EQ(r.err, "mariposa: project name \"a b\" has a space\n");
}

TEST_F(CliAgainstFakes, FollowEndsWhenTimeoutPasses) {
  Ran r = Run({"--timeout", "500ms", "events", "-f"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("8  "), std::string::npos) << r.out;  // after the newest (7)
  EXPECT_NE(r.out.find("number 9"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("number 7"), std::string::npos) << r.out;
}

TEST_F(CliAgainstFakes, StatusSaysTheAgeOfItsObservationWithAUnit) {
  Ran r = Run({"-j", "fresh", "status"});
  EXPECT_NE(r.out.find("actual state as read 0s ago (the last sync's"), std::string::npos) << r.out;
}

TEST_F(CliAgainstFakes, WaitEndsAtTimeoutNamingIt) {
  Ran r = Run({"-j", "slow", "reprovision", "--wait", "--timeout", "1s"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("[0s] web progressing: 1/3 ready"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("not converged after 1s (--timeout)"), std::string::npos) << r.err;
}

TEST_F(CliAgainstFakes, WaitStopsAtAFailedServiceWithItsFix) {
  Ran r = Run({"-j", "p", "reprovision", "--wait", "--timeout", "5s"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("queued reprovision task 0f0f0f0f"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("web is failed: 3 of 3 replacements failed: image not found\n  fix: mariposa -j p image "
                       "import IMAGE"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace mariposa::testing
