// Every CLI command, run in-process (cmd::Main from the cli library, its
// stdout and stderr captured) against a real mariposad and tritonsim.
#include <unistd.h>

#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

struct Ran {
  int code;
  std::string out, err;
};

class CliInProcess : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(TempDir("inprocess"));
    setenv("MARIPOSA_CONFIG", (*dir_ + "/config.yaml").c_str(), 1);
    unsetenv("MARIPOSA_PROJECT");
    unsetenv("MARIPOSA_ADDR");
    sim_ = new Tritonsim({"--servers", "3", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "10"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    daemon_ = new ServerProcess({"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", *dir_ + "/data",
                                 "--triton", sim_->addr(), "--owner", "930896af-bf8c-48d4-885c-6573a94b1853",
                                 "--network", "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms",
                                 "--backup-dir", *dir_ + "/backups"},
                                *dir_ + "/data");
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
    WriteFile(*dir_ + "/jupiter.yaml", ReadFile("deploy/examples/jupiter.yaml"));
  }
  static void TearDownTestSuite() {
    delete daemon_;
    delete sim_;
  }
  // `mariposa --addr ADDR args...`, in this process.
  static Ran Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"mariposa", "--addr", daemon_->addr()});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    std::ostringstream out, err;
    auto* old_out = std::cout.rdbuf(out.rdbuf());
    auto* old_err = std::cerr.rdbuf(err.rdbuf());
    int code = cmd::Main(static_cast<int>(argv.size()), argv.data(), RealClock::Get());
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
    return {code, out.str(), err.str()};
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
      {{"completion", "fish"}, 2, "expected completion bash|zsh"},
      {{"stauts"}, 2, "did you mean \"status\""},
      {{"--request-timeout", "nope", "project", "list"}, 2, "--request-timeout"},
      {{"project", "create", "mars", "--description", "red"}, 0, "mars"},
      {{"project", "list"}, 0, "mars"},
      {{"project", "get", "mars"}, 0, "red"},
      {{"-j", "jupiter", "diff", "-f", m}, 1, "6 to create, 0 to replace, 0 to delete"},
      {{"-j", "jupiter", "apply", "-f", m, "--yes", "--wait", "--timeout", "60s"}, 0, "converged"},
      {{"-j", "jupiter", "diff", "-f", m}, 0, "no changes"},
      {{"-j", "jupiter", "status"}, 0, "converged"},
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
      {{"-j", "jupiter", "events", "-n", "5"}, 0, "earlier"},
      {{"-j", "jupiter", "freeze", "--service", "nginx"}, 0, "frozen"},
      {{"-j", "jupiter", "queue", "list"}, 0, "freeze"},
      {{"-j", "jupiter", "thaw", "--service", "nginx"}, 0, ""},
      {{"-j", "jupiter", "reprovision", "--service", "mysql"}, 0, "queued reprovision task"},
      {{"-j", "jupiter", "health"}, 1, "--embedded-health or --health-agents"},
      {{"image", "list"}, 0, "nginx"},
      {{"auth", "whoami"}, 0, "admin"},
      {{"auth", "can-i", "apply", "-j", "jupiter"}, 0, "yes"},
      {{"admin", "status"}, 0, "mode:     active"},
      {{"admin", "backup", "inproc.db"}, 0, "backed up"},
      {{"admin", "state", "set", "readonly", "--reason", "in-process test"}, 0, "readonly"},
      {{"admin", "state"}, 0, "readonly since"},
      {{"-j", "mars", "meta", "set", "k", "v"}, 1, "in-process test"},
      {{"admin", "state", "set", "active"}, 0, "active (was readonly)"},
      {{"admin", "restore", *dir_ + "/backups/inproc.db", "--data-dir", *dir_ + "/data"}, 1, "is running on"},
      {{"admin", "token", "create", "--name", "ci", "--role", "viewer", "--all-projects"}, 0, "mpt_"},
      {{"admin", "token", "list"}, 0, "ci"},
      {{"admin", "grant", "user:nobody", "viewer"}, 0, "viewer"},
      {{"admin", "grants"}, 0, "user:nobody"},
      {{"config", "set-context", "local", "--addr", "127.0.0.1:1"}, 0, "saved"},
      {{"config", "get-contexts"}, 0, "local"},
      {{"project", "delete", "mars", "--yes"}, 0, "mars"},
  };
  for (const Step& s : steps) {
    Ran r = Run(s.args);
    std::string all = r.out + r.err;
    std::string cmd;
    for (const auto& a : s.args) absl::StrAppend(&cmd, a, " ");
    EXPECT_EQ(r.code, s.code) << cmd << "\n" << all;
    EXPECT_NE(all.find(s.shows), std::string::npos) << cmd << " should show \"" << s.shows << "\":\n" << all;
  }
}

// Piped output has no escape codes; --no-color is accepted everywhere.
TEST_F(CliInProcess, NoColorWhenNotATerminal) {
  Ran r = Run({"--no-color", "-j", "jupiter", "status"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("\033["), std::string::npos);
  r = Run({"-j", "jupiter", "status"});
  EXPECT_EQ(r.out.find("\033["), std::string::npos) << "stdout of a test is not a terminal";
}

}  // namespace
}  // namespace mariposa::testing
