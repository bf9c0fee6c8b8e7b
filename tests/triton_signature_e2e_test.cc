// Triton accounts as callers, end to end (issue 53, point 1): tritonsim
// serves mahi's accounts, sub-users, SSH keys and roles; mariposad checks
// HTTP Signature requests against them; Joyent's own signers (npm
// http-signature and smartdc-auth, unchanged) sign calls to the HTTP API
// (tests/conformance/signature_conformance.js: the account, a sub-user with
// the role and one without, another account, and every refusal). Then what
// an operator does: a key removed in Triton stops working, mahi down is
// "try again" (503) rather than a refusal, and a flood of forged signatures
// leaves mariposad serving. Needs `npm ci --prefix tests/conformance` and
// ssh-keygen; without them the test is skipped, saying so.
#include <signal.h>
#include <unistd.h>

#include <httplib.h>

#include <atomic>
#include <climits>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kJill[] = "930896af-bf8c-48d4-885c-6573a94b1853";

std::string Script() {
  char real[PATH_MAX];
  if (realpath("tests/conformance/signature_conformance.js", real) == nullptr) return "";
  std::string dir = std::string(real).substr(0, std::string(real).rfind('/'));
  for (const char* m : {"http-signature", "smartdc-auth", "sshpk"}) {
    if (access(absl::StrCat(dir, "/node_modules/", m, "/package.json").c_str(), R_OK) != 0) return "";
  }
  return real;
}

std::string Node() {
  for (const char* candidate : {"/usr/local/bin/node", "/usr/bin/node", "/usr/bin/nodejs"}) {
    if (access(candidate, X_OK) == 0) return candidate;
  }
  return "/usr/bin/node";
}

std::string HttpUrl(const ServerProcess& d) {
  for (const std::string& a : d.extra_addrs()) {
    if (a.rfind("http", 0) == 0) return a;
  }
  return "";
}

class TritonSignatureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    script_ = Script();
    if (script_.empty()) GTEST_SKIP() << "http-signature and smartdc-auth are not installed: run `npm ci --prefix tests/conformance` (scripts/test.sh does)";
    if (access("/usr/bin/ssh-keygen", X_OK) != 0) GTEST_SKIP() << "ssh-keygen is not installed (openssh-client)";
    dir_ = TempDir("signature");
    for (auto [name, type] : std::vector<std::pair<std::string, std::string>>{
             {"jill_ed", "ed25519"}, {"jill_rsa", "rsa"}, {"bob_ec", "ecdsa"}, {"carol_ed", "ed25519"},
             {"eve", "ed25519"}, {"dave", "ed25519"}}) {
      RunResult r = RunProcess({"/usr/bin/ssh-keygen", "-q", "-t", type, "-N", "", "-C", name, "-f", dir_ + "/" + name});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    // The seed's accounts: jill with two keys and sub-user bob (Triton role
    // mariposa-deployer); carol, eve and dave come through `tritonsim ctl`.
    nlohmann::json seed = nlohmann::json::parse(ReadFile("deploy/examples/tritonsim-seed.json"));
    seed["accounts"] = {{{"login", "jill"},
                         {"uuid", kJill},
                         {"keys", {Pub("jill_ed"), Pub("jill_rsa")}},
                         {"users", {{{"login", "bob"}, {"keys", {Pub("bob_ec")}}, {"roles", {"mariposa-deployer"}}}}}}};
    WriteFile(dir_ + "/seed.json", seed.dump());
    sim_ = std::make_unique<Tritonsim>(
        std::vector<std::string>{"--servers", "4", "--seed", dir_ + "/seed.json", "--job-latency", "20"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    Ctl({"user-add", "jill", "carol", "--key", dir_ + "/carol_ed.pub", "--role", "other-role"});
    Ctl({"account-add", "eve", "--key", dir_ + "/eve.pub"});
    daemon_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"daemon/mariposad", "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
                                 "--data-dir", dir_ + "/data", "--triton", sim_->addr(), "--owner",
                                 "aaaaaaaa-1111-4111-8111-111111111111", "--network",
                                 "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms"},
        dir_ + "/data");
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
    url_ = HttpUrl(*daemon_);
    ASSERT_FALSE(url_.empty()) << daemon_->log();
  }
  std::string Pub(const std::string& name) {
    return std::string(absl::StripAsciiWhitespace(ReadFile(dir_ + "/" + name + ".pub")));
  }
  std::string Md5(const std::string& name) {
    RunResult r = RunProcess({"/usr/bin/ssh-keygen", "-l", "-E", "md5", "-f", dir_ + "/" + name + ".pub"});
    std::string out = r.out.substr(r.out.find("MD5:") + 4);
    return out.substr(0, out.find(' '));
  }
  void Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr()});
    RunResult r = RunProcess(args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  // One request signed with `key` as `key_id`: "STATUS BODY".
  std::string Once(const std::string& key, const std::string& key_id, const std::string& method, const std::string& path) {
    RunResult r = RunProcess({Node(), script_, url_, dir_, "once", key, key_id, method, path});
    return std::string(absl::StripAsciiWhitespace(r.out)) + r.err;
  }

  std::string script_, dir_, url_;
  std::unique_ptr<Tritonsim> sim_;
  std::unique_ptr<ServerProcess> daemon_;
};

TEST_F(TritonSignatureTest, JoyentSignersAsAccountsAndSubUsers) {
  RunResult r = RunProcess({Node(), script_, url_, dir_});
  std::cout << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("26 passed, 0 failed"));
  // What the operator sees: the project is jill's account's, its events
  // name the Triton callers, refusals are audited.
  RunResult list = Cli(daemon_->addr(), {"project", "list"});
  EXPECT_THAT(list.out, HasSubstr("jill-web"));
  EXPECT_THAT(list.out, HasSubstr(kJill));
  RunResult events = Cli(daemon_->addr(), {"events", "-j", "jill-web", "--limit", "200"});
  EXPECT_THAT(events.out, HasSubstr("triton:jill/bob"));
  EXPECT_THAT(events.out, HasSubstr("auth.denied"));
  EXPECT_THAT(events.out, HasSubstr("(a replay)"));
}

TEST_F(TritonSignatureTest, AKeyRemovedInTritonStopsWorkingAndMahiDownIsNotARefusal) {
  std::string id = "/jill/keys/" + Md5("jill_ed");
  EXPECT_THAT(Once("jill_ed", id, "GET", "/v1/projects"), ::testing::StartsWith("200 "));
  Ctl({"key-delete", "jill", "SHA256:" + [&] {
         RunResult fp = RunProcess({"/usr/bin/ssh-keygen", "-l", "-f", dir_ + "/jill_ed.pub"});
         std::string out = fp.out.substr(fp.out.find("SHA256:") + 7);
         return out.substr(0, out.find(' '));
       }()});
  // Answers are kept 5 s: within 7 s the key is refused.
  std::string last;
  EXPECT_TRUE(Eventually([&] {
    last = Once("jill_ed", id, "GET", "/v1/projects");
    return last.rfind("401 ", 0) == 0;
  }, absl::Seconds(10))) << last;
  EXPECT_THAT(last, HasSubstr("has no key"));
  // The other key still works.
  EXPECT_THAT(Once("jill_rsa", "/jill/keys/" + Md5("jill_rsa"), "GET", "/v1/projects"), ::testing::StartsWith("200 "));
  // mahi answers 503: the caller is told to try again, not refused.
  Ctl({"account-add", "dave", "--key", dir_ + "/dave.pub"});
  Ctl({"fail", "GetAccount", "20", "503"});
  std::string down = Once("dave", "/dave/keys/" + Md5("dave"), "GET", "/v1/projects");
  EXPECT_THAT(down, ::testing::StartsWith("503 ")) << down;
  EXPECT_THAT(down, HasSubstr("mahi"));
  // The operator sees it, with what it means.
  RunResult st = Cli(daemon_->addr(), {"admin", "status"});
  EXPECT_THAT(st.out, HasSubstr("Triton's auth cache (mahi)"));
  EXPECT_THAT(st.out, HasSubstr("neither taken nor refused"));
  EXPECT_THAT(Cli(daemon_->addr(), {"-o", "json", "admin", "status"}).out, HasSubstr("triton-auth-unreachable"));
  Ctl({"fail", "GetAccount", "0"});
  EXPECT_THAT(Once("dave", "/dave/keys/" + Md5("dave"), "GET", "/v1/projects"), ::testing::StartsWith("200 "));
  EXPECT_THAT(Cli(daemon_->addr(), {"-o", "json", "admin", "status"}).out,
              ::testing::Not(HasSubstr("triton-auth-unreachable")))
      << "mahi answered again: the problem is gone";
}

// The CLI as a Triton user runs it (point 2): a `triton` profile names the
// account and key, the key is in ~/.ssh or in ssh-agent; no token.
TEST_F(TritonSignatureTest, TheCliSignsAsATritonProfileWithAKeyFileOrSshAgent) {
  std::string home = dir_ + "/home";
  for (const std::string& d : {home, home + "/.ssh", home + "/.triton", home + "/.triton/profiles.d"}) {
    ASSERT_EQ(RunProcess({"/bin/mkdir", "-p", d}).exit_code, 0);
  }
  for (const char* f : {"jill_rsa", "jill_rsa.pub"}) WriteFile(home + "/.ssh/" + f, ReadFile(dir_ + "/" + f));
  ASSERT_EQ(RunProcess({"/bin/chmod", "600", home + "/.ssh/jill_rsa"}).exit_code, 0);
  WriteFile(home + "/.triton/profiles.d/jill.json",
            absl::StrCat(R"({"name": "jill", "url": "https://cloudapi.test", "account": "jill", "keyId": ")",
                         Md5("jill_rsa"), R"("})"));
  WriteFile(home + "/.triton/config.json", R"({"profile": "jill"})");
  WriteFile(dir_ + "/m.yaml",
            "project: jill-cli\nservices:\n  web:\n    image: autopilotpattern/nginx@1.4.0\n    package: g4-highcpu-1G\n"
            "    count: 1\n");
  auto mariposa = [&](std::vector<std::string> env, std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "HOME=" + home};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {"cli/mariposa", "--addr", daemon_->addr()});
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv);
  };
  RunResult r = mariposa({}, {"--triton-profile", "current", "apply", "-f", dir_ + "/m.yaml", "--yes"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = mariposa({}, {"--triton-profile", "jill", "project", "list"});
  EXPECT_THAT(r.out, HasSubstr("jill-cli"));
  EXPECT_THAT(r.out, HasSubstr(kJill));
  r = mariposa({"MARIPOSA_TRITON_PROFILE=jill"}, {"auth", "whoami"});
  EXPECT_THAT(r.out, HasSubstr("triton:jill"));
  EXPECT_THAT(r.out, HasSubstr("signature"));
  // Sub-user bob's key only in ssh-agent.
  // A Unix socket path must be short: the test's tmpdir is too deep.
  char agent_dir[] = "/tmp/mariposa-agent-XXXXXX";
  ASSERT_NE(mkdtemp(agent_dir), nullptr);
  std::string sock = std::string(agent_dir) + "/agent.sock";
  RunResult agent = RunProcess({"/usr/bin/ssh-agent", "-s", "-a", sock});
  ASSERT_EQ(agent.exit_code, 0) << agent.err;
  size_t at = agent.out.find("SSH_AGENT_PID=");
  ASSERT_NE(at, std::string::npos) << agent.out;
  pid_t agent_pid = std::atoi(agent.out.c_str() + at + 14);
  ASSERT_GT(agent_pid, 1);
  ASSERT_EQ(RunProcess({"/usr/bin/env", "SSH_AUTH_SOCK=" + sock, "/usr/bin/ssh-add", "-q", dir_ + "/bob_ec"}).exit_code, 0);
  RunResult fp = RunProcess({"/usr/bin/ssh-keygen", "-l", "-f", dir_ + "/bob_ec.pub"});
  std::string sha = fp.out.substr(fp.out.find("SHA256:"));
  sha = sha.substr(0, sha.find(' '));
  std::vector<std::string> bob = {"SSH_AUTH_SOCK=" + sock, "SDC_ACCOUNT=jill", "SDC_USER=bob", "SDC_KEY_ID=" + sha};
  r = mariposa(bob, {"--triton-profile", "env", "scale", "web=2", "-j", "jill-cli"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = mariposa(bob, {"--triton-profile", "env", "freeze", "-j", "jill-cli"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("mariposa-operator"));
  // The triton CLI's own variables are enough: no flag.
  r = mariposa(bob, {"auth", "whoami"});
  EXPECT_THAT(r.out, HasSubstr("triton:jill/bob"));
  // "none" turns it off: root on loopback again.
  r = mariposa(bob, {"--triton-profile", "none", "auth", "whoami"});
  EXPECT_THAT(r.out, HasSubstr("method:    loopback"));
  kill(agent_pid, SIGTERM);
  ASSERT_TRUE(Eventually([&] { return access(sock.c_str(), F_OK) != 0; }, absl::Seconds(5)));
  rmdir(agent_dir);
  // Without the agent, the key is nowhere: said, with the fix.
  r = mariposa(bob, {"--triton-profile", "env", "status", "-j", "jill-cli"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("ssh-add"));
  r = mariposa({}, {"--triton-profile", "nosuch", "project", "list"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("triton profile list"));
}

// A flood of forged Signature headers (bad keys, bad dates, garbage) from
// four clients: each is refused, and mariposad keeps answering others.
TEST_F(TritonSignatureTest, AFloodOfForgedSignaturesLeavesMariposadServing) {
  std::string id = "/jill/keys/" + Md5("jill_rsa");
  std::atomic<int> refused{0}, other{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      httplib::Client c(url_);
      c.set_read_timeout(10, 0);
      for (int i = 0; i < 500; ++i) {
            std::string sig = i % 3 == 0   ? absl::StrCat("Signature keyId=\"", id, "\",algorithm=\"rsa-sha256\",signature=\"", std::string(344, 'A'), "\"")
                          : i % 3 == 1 ? absl::StrCat("Signature keyId=\"/nobody", t, "_", i, "/keys/aa\",algorithm=\"ed25519-sha512\",signature=\"AAAA\"")
                                       : absl::StrCat("Signature ", std::string(i, '='), "\"");
        auto res = c.Get("/v1/projects", {{"Authorization", sig}, {"Date", absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", absl::Now(), absl::UTCTimeZone())}});
        if (res && res->status == 401) ++refused;
        else ++other;
      }
    });
  }
  for (auto& th : clients) th.join();
  EXPECT_EQ(refused.load(), 2000);
  EXPECT_EQ(other.load(), 0);
  absl::Time start = absl::Now();
  EXPECT_THAT(Once("jill_rsa", id, "GET", "/v1/projects"), ::testing::StartsWith("200 "));
  RunResult root = Cli(daemon_->addr(), {"admin", "status"});
  EXPECT_EQ(root.exit_code, 0) << root.out << root.err;
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));  // node's own start included
}

}  // namespace
}  // namespace mariposa::testing
