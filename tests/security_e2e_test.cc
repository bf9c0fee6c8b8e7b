// Security end to end (docs/security.md): every RPC against every role on a
// real mariposad, then TLS with client certificates and a wrong CA, tokens
// that expired or were revoked, project scoping, health agents, audit, and
// secrets at rest. Certificates are made with the openssl command.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <google/protobuf/descriptor.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "auth/rbac.h"
#include "gateway/routes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mariposa/v1/admin.grpc.pb.h"
#include "mariposa/v1/auth.grpc.pb.h"
#include "mariposa/v1/events.grpc.pb.h"
#include "mariposa/v1/health.grpc.pb.h"
#include "mariposa/v1/images.grpc.pb.h"
#include "mariposa/v1/projects.grpc.pb.h"
#include "mariposa/v1/queue.grpc.pb.h"
#include "mariposa/v1/state.grpc.pb.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The least role of every RPC, written out here as the specification: the
// daemon's table (auth/rbac.cc) must say the same.
const std::map<std::string, std::string>& ExpectedLeastRole() {
  static const auto* m = new std::map<std::string, std::string>{
      {"Projects/CreateProject", "deployer"}, {"Projects/CreateProject#owner", "admin"}, {"Projects/ListProjects", "viewer"},
      {"Projects/GetProject", "viewer"},      {"Projects/DeleteProject", "operator"},
      {"Projects/Apply", "deployer"},         {"Projects/Apply#core", "admin"}, {"Projects/Apply#dry-run", "viewer"},
      {"Projects/CopyProject", "deployer"},   {"Projects/CopyProject#dry-run", "viewer"},
      {"Projects/CopyProject#source", "deployer"},
      {"Projects/ReceiveCopy", "deployer"},   {"Projects/ReceiveCopy#dry-run", "viewer"},
      {"Projects/ReceiveVersion", "deployer"}, {"Projects/ReceiveVersion#dry-run", "viewer"},
      {"Projects/ListRollouts", "viewer"},    {"Projects/CancelRollout", "deployer"},
      {"State/ProjectAcross", "viewer"},
      {"Admin/DataCenters", "viewer"},
      {"Projects/ListVersions", "viewer"},    {"Projects/GetVersion", "viewer"},
      {"Projects/TagVersion", "deployer"},    {"Projects/Rollback", "deployer"},
      {"Projects/Rollback#core", "admin"}, {"Projects/Rollback#dry-run", "viewer"},    {"Projects/Scale", "deployer"},
      {"Projects/Scale#core", "admin"}, {"Projects/Scale#dry-run", "viewer"},       {"Projects/ListMeta", "viewer"},
      {"Projects/GetMeta", "viewer"},         {"Projects/SetMeta", "deployer"},
      {"Projects/DeleteMeta", "deployer"},    {"Projects/IncrMeta", "deployer"},
      {"Projects/ImportMeta", "deployer"},    {"Projects/ListEvents", "viewer"},
      {"Events/Watch", "viewer"},             {"Queue/ListTasks", "viewer"},
      {"Queue/GetTask", "viewer"},            {"Queue/AddTask", "deployer"},
      {"Queue/AddTask#start", "operator"},    {"Queue/AddTask#stop", "operator"},
      {"Queue/TerminateTask", "operator"},    {"Queue/PauseTask", "operator"},
      {"Queue/ResumeTask", "operator"},       {"Queue/Freeze", "operator"},
      {"Queue/Thaw", "operator"},             {"State/GetState", "viewer"},
      {"State/GetHealth", "viewer"},          {"Images/List", "viewer"},
      {"Images/Get", "viewer"},               {"Images/Avail", "viewer"},
      {"Images/Changes", "viewer"},           {"Images/Import", "admin"},
      {"Images/Create", "admin"},             {"Admin/Status", "viewer"},
      {"Admin/Ping", "anyone"},               {"Admin/Backup", "admin"}, {"Admin/SetState", "admin"},
      {"Admin/Nodes", "viewer"},
      {"Auth/WhoAmI", "anyone"},              {"Auth/CanI", "anyone"},
      {"Auth/Permissions", "anyone"},         {"Auth/CreateToken", "admin"},
      {"Auth/ListTokens", "admin"},           {"Auth/RevokeToken", "admin"},
      {"Auth/SetGrant", "admin"},             {"Auth/ListGrants", "admin"},
      {"Auth/DeleteGrant", "admin"},          {"Auth/RotateKey", "admin"},
      {"HealthAgents/Connect", "health-agent"},
  };
  return *m;
}

bool RoleMayCall(const std::string& role, const std::string& least) {
  static const std::map<std::string, int> rank = {{"viewer", 1}, {"deployer", 2}, {"operator", 3}, {"admin", 4}};
  if (least == "anyone") return true;
  if (least == "health-agent") return role == "health-agent" || role == "admin";
  if (role == "health-agent") return false;
  return rank.at(role) >= rank.at(least);
}

constexpr char kCoreManifest[] = R"(project: corep
services:
  web:
    compute_type: infrastructure
    image: percona@5.7.1
  cn-agent:
    compute_type: agent
    image: cn-agent@2.14.1
)";

class SecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("sec");
    sim_ = std::make_unique<Tritonsim>(
        std::vector<std::string>{"--servers", "3", "--seed", "deploy/examples/tritonsim-seed.json"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
  }
  void TearDown() override {
    if (!sock_dir_.empty()) {
      unlink((sock_dir_ + "/s").c_str());
      rmdir(sock_dir_.c_str());
    }
  }
  std::vector<std::string> DaemonArgv(std::vector<std::string> extra) {
    std::vector<std::string> argv = {"daemon/mariposad", "--data-dir", dir_ + "/data", "--triton", sim_->addr(),
                                     "--owner", "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                                     "aaaaaaaa-0000-4000-8000-000000000001", "--health-agents", "--resync", "300ms"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  void StartPlain() {
    daemon_ = std::make_unique<ServerProcess>(DaemonArgv({"--listen", "127.0.0.1:0"}), dir_ + "/data");
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  }
  RunResult M(const std::vector<std::string>& args, const std::string& input = "") {
    return Cli(daemon_->addr(), args, input);
  }
  // A token from `admin token create` (as root on loopback: admin).
  std::string Token(const std::string& name, const std::string& role, const std::string& project = "") {
    std::vector<std::string> args = {"admin", "token", "create", "--name", name, "--role", role};
    if (project.empty()) args.push_back("--all-projects");
    else args.insert(args.begin(), {"-j", project});
    RunResult r = M(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::string(absl::StripAsciiWhitespace(r.out));
  }
  std::string TokenFile(const std::string& name, const std::string& token) {
    std::string path = dir_ + "/" + name + ".token";
    WriteFile(path, token + "\n");
    return path;
  }
  // The daemon on TLS (client certificates verified against "ca"), with its
  // Unix socket at a short path for the local admin.
  void StartTls(const std::vector<std::string>& extra = {}) {
    ASSERT_EQ(MakeCa(dir_, "ca"), "");
    ASSERT_EQ(MakeCert(dir_, "ca", "server"), "");
    ASSERT_EQ(MakeCert(dir_, "ca", "alice"), "");
    ASSERT_EQ(MakeCa(dir_, "evil"), "");
    ASSERT_EQ(MakeCert(dir_, "evil", "mallory"), "");
    char tmpl[] = "/tmp/mpsXXXXXX";
    sock_dir_ = mkdtemp(tmpl);
    std::vector<std::string> argv = {"--listen", "127.0.0.1:0", "--tls-cert", dir_ + "/server.pem", "--tls-key",
                                     dir_ + "/server.key", "--tls-client-ca", dir_ + "/ca.pem", "--socket",
                                     sock_dir_ + "/s"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    daemon_ = std::make_unique<ServerProcess>(DaemonArgv(argv), dir_ + "/data");
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  }
  RunResult Local(const std::vector<std::string>& args) { return Cli("unix:" + sock_dir_ + "/s", args); }

  std::string dir_, sock_dir_;
  RunResult r_;
  std::unique_ptr<Tritonsim> sim_;
  std::unique_ptr<ServerProcess> daemon_;
};

// A request for `rule` (variants need their own): empty for most, so that an
// allowed call fails validation without changing anything.
std::string RequestFor(const std::string& rule) {
  std::string out;
  if (rule == "Queue/AddTask" || rule == "Queue/AddTask#start" || rule == "Queue/AddTask#stop") {
    v1::AddTaskRequest r;
    r.set_project("nosuch");
    r.set_kind(rule == "Queue/AddTask" ? "reprovision" : rule.substr(rule.find('#') + 1));
    r.SerializeToString(&out);
  } else if (rule == "Projects/CreateProject#owner") {
    v1::CreateProjectRequest r;  // an owner that is not a uuid: refused after the role check
    r.set_name("other-account");
    r.set_owner_uuid("not-a-uuid");
    r.SerializeToString(&out);
  } else if (rule == "Projects/Apply#core" || rule == "Projects/Apply#dry-run") {
    // The project's own manifest again: a no-op for whoever may apply it.
    v1::ApplyRequest r;
    r.set_manifest(kCoreManifest);
    r.set_dry_run(rule == "Projects/Apply#dry-run");
    r.SerializeToString(&out);
  } else if (rule == "Projects/CopyProject#dry-run" || rule == "Projects/CopyProject#source") {
    v1::CopyProjectRequest r;  // a source that does not exist: NOT_FOUND after the role checks
    r.set_source("nosuch");
    r.set_target("nosuch-copy");
    r.set_dry_run(rule == "Projects/CopyProject#dry-run");
    r.SerializeToString(&out);
  } else if (rule == "Projects/ReceiveCopy#dry-run") {
    v1::ReceiveCopyRequest r;
    r.set_target("received");
    r.set_manifest("project: received\nservices:\n  web: {image: nosuch@1}\n");
    r.set_dry_run(true);
    r.SerializeToString(&out);
  } else if (rule == "Projects/ReceiveVersion#dry-run") {
    v1::ReceiveVersionRequest r;
    r.set_project("received");
    r.set_manifest("project: received\nservices:\n  web: {image: nosuch@1}\n");
    r.set_dry_run(true);
    r.SerializeToString(&out);
  } else if (rule == "Projects/Rollback#core" || rule == "Projects/Rollback#dry-run") {
    v1::RollbackRequest r;
    r.set_project("corep");
    r.set_version("1");
    r.set_dry_run(rule == "Projects/Rollback#dry-run");
    r.SerializeToString(&out);
  } else if (rule == "Projects/Scale#core" || rule == "Projects/Scale#dry-run") {
    v1::ScaleRequest r;
    r.set_project("corep");
    r.add_changes("web=1");
    r.set_dry_run(rule == "Projects/Scale#dry-run");
    r.SerializeToString(&out);
  }
  return out;
}

// Calls `method` ("/mariposa.v1.Projects/Apply") with raw request bytes;
// works for unary and streaming methods alike.
grpc::Status Call(grpc::GenericStub* stub, const std::string& method, const std::string& request,
                  const std::string& token, std::string* answer = nullptr) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(method.find("Watch") != std::string::npos ||
                                                                                     method.find("Connect") != std::string::npos
                                                                                 ? 700
                                                                                 : 5000));
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  grpc::CompletionQueue cq;
  auto call = stub->PrepareCall(&ctx, method, &cq);
  void* tag;
  bool ok;
  call->StartCall(reinterpret_cast<void*>(1));
  cq.Next(&tag, &ok);
  grpc::Slice slice(request);
  grpc::ByteBuffer buf(&slice, 1);
  if (ok) {
    call->WriteLast(buf, grpc::WriteOptions(), reinterpret_cast<void*>(2));
    cq.Next(&tag, &ok);
  }
  // Every answer is read (a stream until it ends or the deadline passes), so
  // that Finish has the status.
  grpc::ByteBuffer reply;
  do {
    call->Read(&reply, reinterpret_cast<void*>(4));
    cq.Next(&tag, &ok);
    if (ok && answer != nullptr) {
      std::vector<grpc::Slice> slices;
      (void)reply.Dump(&slices);
      answer->clear();
      for (const grpc::Slice& sl : slices) answer->append(reinterpret_cast<const char*>(sl.begin()), sl.size());
    }
  } while (ok);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(3));
  while (cq.Next(&tag, &ok)) {
    if (tag == reinterpret_cast<void*>(3)) break;
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

// Every RPC mariposad serves is in the permission table, the table says what
// this test's specification says, and a real call with a token of each role
// is refused (PERMISSION_DENIED, or UNAUTHENTICATED for a token nobody
// issued) exactly when the role is below the rule's.
TEST_F(SecurityTest, EveryRpcTimesEveryRole) {
  StartPlain();
  std::set<std::string> served;
  for (const char* file : {"mariposa/v1/projects.proto", "mariposa/v1/admin.proto", "mariposa/v1/queue.proto",
                           "mariposa/v1/state.proto", "mariposa/v1/events.proto", "mariposa/v1/health.proto",
                           "mariposa/v1/images.proto", "mariposa/v1/auth.proto"}) {
    const auto* fd = google::protobuf::DescriptorPool::generated_pool()->FindFileByName(file);
    ASSERT_NE(fd, nullptr) << file;
    for (int s = 0; s < fd->service_count(); ++s) {
      const auto* svc = fd->service(s);
      if (svc->name() == "HealthAgent") continue;  // served by mariposa-health, not mariposad
      for (int m = 0; m < svc->method_count(); ++m) served.insert(absl::StrCat(svc->name(), "/", svc->method(m)->name()));
    }
  }
  std::map<std::string, std::string> table;
  for (const auto& r : auth::MethodRules()) table[r.method] = std::string(auth::PermissionName(r.permission));
  EXPECT_EQ(table, ExpectedLeastRole());
  for (const std::string& m : served) EXPECT_EQ(table.count(m), 1u) << m << " is served but not in the table";
  for (const auto& [m, role] : table) {
    EXPECT_EQ(served.count(m.substr(0, m.find('#'))), 1u) << m << " is in the table but not served";
  }

  // A project with an agent service, for the #core rules.
  WriteFile(dir_ + "/core.yaml", kCoreManifest);
  RunResult r = M({"apply", "-f", dir_ + "/core.yaml", "--yes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> tokens;
  for (const char* role : {"viewer", "deployer", "operator", "admin", "health-agent"}) {
    tokens[role] = Token(absl::StrCat("all-", role), role);
  }
  auto channel = grpc::CreateChannel(daemon_->addr(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  int calls = 0;
  for (const auto& [rule, least] : table) {
    std::string method = absl::StrCat("/mariposa.v1.", rule.substr(0, rule.find('#')));
    std::string request = RequestFor(rule);
    for (const auto& [role, token] : tokens) {
      grpc::Status s = Call(&stub, method, request, token);
      ++calls;
      bool allowed = RoleMayCall(role, least);
      if (allowed) {
        EXPECT_NE(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << rule << " as " << role << ": " << s.error_message();
        EXPECT_NE(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << rule << " as " << role << ": " << s.error_message();
      } else {
        EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << rule << " as " << role << ": " << s.error_message();
        EXPECT_THAT(s.error_message(), HasSubstr(least)) << rule << " as " << role;
      }
    }
    grpc::Status s = Call(&stub, method, request, "mpt_0000000000000000000000000000000000000000");
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << rule << ": " << s.error_message();
    ++calls;
  }
  EXPECT_GT(calls, 300);
  // Refusals are events, naming who and from where.
  r = M({"events", "--all", "--limit", "1000"});
  EXPECT_THAT(r.out, HasSubstr("auth.denied"));
  EXPECT_THAT(r.out, HasSubstr("token:all-viewer (127.0.0.1:"));
}

TEST_F(SecurityTest, TokensAreScopedAuditedRevokedAndExpire) {
  StartPlain();
  ASSERT_EQ(M({"apply", "-f", "deploy/examples/jupiter.yaml", "--yes"}).exit_code, 0);
  ASSERT_EQ(M({"project", "create", "saturn"}).exit_code, 0);
  ASSERT_EQ(M({"-j", "saturn", "meta", "set", "api.key", "-", "--secret"}, "saturn-secret-42\n").exit_code, 0);
  std::string ci = TokenFile("ci", Token("ci", "deployer", "jupiter"));
  // Scoped: jupiter only.
  r_ = M({"--token-file", ci, "auth", "whoami"});
  EXPECT_THAT(r_.out, HasSubstr("token:ci"));
  EXPECT_THAT(r_.out, HasSubstr("deployer on project jupiter"));
  r_ = M({"--token-file", ci, "project", "list"});
  EXPECT_THAT(r_.out, HasSubstr("jupiter"));
  EXPECT_THAT(r_.out, Not(HasSubstr("saturn")));
  for (auto args : std::vector<std::vector<std::string>>{{"-j", "saturn", "meta", "list"},
                                                         {"-j", "saturn", "meta", "get", "api.key"},
                                                         {"-j", "saturn", "versions"}}) {
    std::vector<std::string> full = {"--token-file", ci};
    full.insert(full.end(), args.begin(), args.end());
    r_ = M(full);
    EXPECT_EQ(r_.exit_code, 1) << args.back();
    EXPECT_THAT(r_.err, HasSubstr("may not call"));
    EXPECT_THAT(r_.out + r_.err, Not(HasSubstr("saturn-secret-42")));
  }
  r_ = M({"--token-file", ci, "events", "--all", "--limit", "1000"});
  EXPECT_THAT(r_.out, Not(HasSubstr("saturn")));
  // A deployer changes, but does not operate.
  r_ = M({"--token-file", ci, "-j", "jupiter", "meta", "set", "theme", "dark"});
  EXPECT_EQ(r_.exit_code, 0) << r_.err;
  r_ = M({"--token-file", ci, "-j", "jupiter", "freeze"});
  EXPECT_EQ(r_.exit_code, 1);
  EXPECT_THAT(r_.err, HasSubstr("needs the operator role"));
  r_ = M({"--token-file", ci, "-j", "jupiter", "auth", "can-i", "freeze"});
  EXPECT_EQ(r_.exit_code, 1);
  EXPECT_THAT(r_.out, HasSubstr("no (Queue/Freeze needs operator"));
  EXPECT_EQ(M({"--token-file", ci, "-j", "jupiter", "auth", "can-i", "apply"}).exit_code, 0);
  // A viewer reads plans (diff is a dry run) but changes nothing.
  std::string ro = TokenFile("ro", Token("ro", "viewer", "jupiter"));
  r_ = M({"--token-file", ro, "diff", "-f", "deploy/examples/jupiter.yaml"});
  EXPECT_LE(r_.exit_code, 1) << r_.err;  // 0 or 1: a plan, not an error
  EXPECT_EQ(M({"--token-file", ro, "-j", "jupiter", "auth", "can-i", "diff"}).exit_code, 0);
  std::string bigger = Slurp("deploy/examples/jupiter.yaml");
  bigger.replace(bigger.find("count: 2"), 8, "count: 4");
  WriteFile(dir_ + "/bigger.yaml", bigger);
  r_ = M({"--token-file", ro, "apply", "-f", dir_ + "/bigger.yaml", "--yes"});
  EXPECT_EQ(r_.exit_code, 1);
  EXPECT_THAT(r_.err, HasSubstr("needs the deployer role"));
  // Audit: the author is the token and its peer, whatever the client says.
  r_ = M({"-j", "jupiter", "events", "--limit", "1000"});
  EXPECT_THAT(r_.out, ::testing::ContainsRegex("meta.set +token:ci \\(127\\.0\\.0\\.1:[0-9]+ uid 0\\)"));
  EXPECT_THAT(r_.out, HasSubstr("auth.denied"));
  // Only hashes are stored; list shows no secret.
  std::string secret = Slurp(ci);
  secret = std::string(absl::StripAsciiWhitespace(secret));
  EXPECT_THAT(M({"admin", "token", "list"}).out, Not(HasSubstr(secret)));
  // Revoked: refused at once.
  ASSERT_EQ(M({"admin", "token", "revoke", "ci"}).exit_code, 0);
  r_ = M({"--token-file", ci, "auth", "whoami"});
  EXPECT_EQ(r_.exit_code, 1);
  EXPECT_THAT(r_.err, HasSubstr("token ci was revoked"));
  // Expired: a token of one second.
  auto ch = grpc::CreateChannel(daemon_->addr(), grpc::InsecureChannelCredentials());
  auto auth = v1::Auth::NewStub(ch);
  grpc::ClientContext ctx;
  v1::CreateTokenRequest req;
  req.set_name("brief");
  req.set_role("viewer");
  req.set_expires_in_seconds(1);
  v1::CreateTokenResponse resp;
  ASSERT_TRUE(auth->CreateToken(&ctx, req, &resp).ok());
  std::string brief = TokenFile("brief", resp.secret());
  EXPECT_EQ(M({"--token-file", brief, "project", "list"}).exit_code, 0);
  Pause(absl::Milliseconds(1500));
  r_ = M({"--token-file", brief, "project", "list"});
  EXPECT_EQ(r_.exit_code, 1);
  EXPECT_THAT(r_.err, HasSubstr("token brief expired"));
  // Never on the command line.
  r_ = M({"--token", secret, "project", "list"});
  EXPECT_EQ(r_.exit_code, 2);
}

TEST_F(SecurityTest, SecretsSealedAtRestAndKeyRotationKeepsThem) {
  StartPlain();
  ASSERT_EQ(M({"apply", "-f", "deploy/examples/jupiter.yaml", "--yes"}).exit_code, 0);
  ASSERT_EQ(M({"-j", "jupiter", "meta", "set", "db.password", "-", "--secret"}, "horse-battery-staple-77\n").exit_code, 0);
  ASSERT_EQ(M({"admin", "backup", "before.db"}).exit_code, 0);
  RunResult r = M({"admin", "rotate-key"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 secrets sealed again"));
  ASSERT_EQ(M({"admin", "backup", "after.db"}).exit_code, 0);
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/data/secrets.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  EXPECT_EQ(daemon_->Stop(), 0);
  for (const char* f : {"/data/mariposa.db", "/data/mariposa.db-wal", "/data/backups/before.db",
                        "/data/backups/after.db"}) {
    EXPECT_THAT(Slurp(dir_ + f), Not(HasSubstr("horse-battery-staple"))) << f;
  }
  // Restarted on the rotated key: the secret still reaches Triton's
  // instances (the store opens it), and is never shown.
  StartPlain();
  EXPECT_EQ(M({"-j", "jupiter", "meta", "get", "db.password"}).out, "<secret>\n");
  EXPECT_THAT(daemon_->log(), Not(HasSubstr("horse-battery-staple")));
  // A key file others may read is refused at start.
  EXPECT_EQ(daemon_->Stop(), 0);
  chmod((dir_ + "/data/secrets.key").c_str(), 0644);
  ServerProcess refused(DaemonArgv({"--listen", "127.0.0.1:0"}), dir_ + "/data");
  EXPECT_FALSE(refused.Start());
  EXPECT_THAT(refused.log(), HasSubstr("chmod 600"));
}

TEST_F(SecurityTest, TlsClientCertificatesWrongCaAndNonLoopbackListen) {
  StartTls();
  // A verified certificate is cert:CN, with only what it was granted.
  std::vector<std::string> alice = {"--ca", dir_ + "/ca.pem", "--cert", dir_ + "/alice.pem", "--key",
                                    dir_ + "/alice.key"};
  auto as_alice = [&](std::vector<std::string> args) {
    args.insert(args.begin(), alice.begin(), alice.end());
    return M(args);
  };
  RunResult r = as_alice({"auth", "whoami"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cert:alice"));
  EXPECT_THAT(r.out, HasSubstr("roles:     none"));
  EXPECT_EQ(as_alice({"project", "list"}).exit_code, 1);
  ASSERT_EQ(Local({"admin", "grant", "cert:alice", "deployer", "-j", "jupiter"}).exit_code, 0);
  r = as_alice({"apply", "-f", "deploy/examples/jupiter.yaml", "--yes"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(Local({"-j", "jupiter", "events"}).out, HasSubstr("cert:alice"));
  // A token over TLS, no certificate.
  std::string viewer = TokenFile("v", std::string(absl::StripAsciiWhitespace(
                                          Local({"admin", "token", "create", "--name", "v", "--role", "viewer",
                                                 "--all-projects"}).out)));
  r = M({"--ca", dir_ + "/ca.pem", "--token-file", viewer, "project", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Neither: anonymous, refused.
  r = M({"--ca", dir_ + "/ca.pem", "project", "list"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no credential"));
  // The wrong CA: no connection either way.
  r = M({"--ca", dir_ + "/evil.pem", "--token-file", viewer, "project", "list"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot reach mariposad"));
  r = M({"--ca", dir_ + "/ca.pem", "--cert", dir_ + "/mallory.pem", "--key", dir_ + "/mallory.key", "auth", "whoami"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, Not(HasSubstr("mallory")));
  // Plain text to a TLS port: nothing.
  EXPECT_EQ(M({"project", "list"}).exit_code, 1);

  // Health agents: a credential with the health-agent role, named as the agent.
  auto ch = grpc::CreateChannel(daemon_->addr(), grpc::SslCredentials({Slurp(dir_ + "/ca.pem"), "", ""}));
  auto agents = v1::HealthAgents::NewStub(ch);
  auto connect = [&](const std::string& token, const std::string& id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1500));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    auto stream = agents->Connect(&ctx);
    v1::AgentMessage hello;
    hello.mutable_hello()->set_agent_id(id);
    stream->Write(hello);
    v1::Assignment a;
    bool got = stream->Read(&a);
    if (got) ctx.TryCancel();  // it serves; end it
    grpc::Status s = stream->Finish();
    return std::make_pair(got, s);
  };
  auto [got, s] = connect("", "agent-1");
  EXPECT_FALSE(got);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  std::string agent_token = std::string(absl::StripAsciiWhitespace(
      Local({"admin", "token", "create", "--name", "agent-1", "--role", "health-agent", "--all-projects"}).out));
  std::tie(got, s) = connect(agent_token, "agent-2");
  EXPECT_FALSE(got);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("may only connect as agent \"agent-1\""));
  std::tie(got, s) = connect(agent_token, "agent-1");
  EXPECT_TRUE(got) << s.error_message();  // its first assignment
  std::tie(got, s) = connect(Slurp(viewer).substr(0, 44), "agent-1");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();

  // A non-loopback address without TLS is refused, unless insecure on purpose.
  ServerProcess open(DaemonArgv({"--listen", "0.0.0.0:0", "--socket", "none"}), dir_ + "/other");
  EXPECT_FALSE(open.Start());
  EXPECT_THAT(open.log(), HasSubstr("is not a loopback address and there is no TLS"));
}

// grpc.health.v1.Health/Check answers SERVING to anyone, as reflection
// does: it says nothing but that mariposad serves.
TEST_F(SecurityTest, GrpcHealthServiceAnswersServing) {
  StartPlain();
  auto channel = grpc::CreateChannel(daemon_->addr(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  std::string answer;
  grpc::Status s = Call(&stub, "/grpc.health.v1.Health/Check", "", "", &answer);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(answer, std::string("\x08\x01", 2));  // HealthCheckResponse{status: SERVING}
}

TEST_F(SecurityTest, InsecureListenIsSaidInStatus) {
  ServerProcess d(DaemonArgv({"--listen", "0.0.0.0:0", "--insecure-listen", "--socket", "none"}), dir_ + "/data");
  ASSERT_TRUE(d.Start()) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("--insecure-listen"));
  std::string port = d.addr().substr(d.addr().rfind(':') + 1);
  // No identity there but a token; the status says what is wrong.
  RunResult r = Cli("127.0.0.1:" + port, {"admin", "status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no credential"));
  EXPECT_EQ(d.Stop(), 0);
}

}  // namespace
}  // namespace mariposa::testing

namespace mariposa::testing {
namespace {

// The HTTP URL mariposad wrote to its address file (--http-listen).
std::string HttpUrl(const ServerProcess& d) {
  for (const std::string& a : d.extra_addrs()) {
    if (a.rfind("http", 0) == 0) return a;
  }
  return "";
}

// An HTTP request built for `route`: its path fields "nosuch", an empty JSON
// body where it takes one.
std::string PathFor(const gateway::Route& r) {
  std::string path = r.path;
  for (const std::string& p : r.Params()) path = absl::StrReplaceAll(path, {{"{" + p + "}", "nosuch"}});
  return path;
}

httplib::Result Send(httplib::Client* c, const gateway::Route& r, const httplib::Headers& h) {
  std::string path = PathFor(r);
  if (r.verb == "GET") return c->Get(path, h);
  if (r.verb == "DELETE") return c->Delete(path, h);
  if (r.verb == "PUT") return c->Put(path, h, r.body ? "{}" : "", "application/json");
  if (r.verb == "PATCH") return c->Patch(path, h, r.body ? "{}" : "", "application/json");
  return c->Post(path, h, r.body ? "{}" : "", "application/json");
}

// Every HTTP route goes through the gRPC path's authorization: a token of
// each role gets 403 exactly where the RPC's least role is above it, a
// token nobody issued 401 everywhere; refusals are JSON with the code, the
// fix, and are audited with the HTTP caller's address.
TEST_F(SecurityTest, EveryHttpRouteTimesEveryRole) {
  daemon_ = std::make_unique<ServerProcess>(DaemonArgv({"--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"}),
                                            dir_ + "/data");
  ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  std::string url = HttpUrl(*daemon_);
  ASSERT_FALSE(url.empty()) << daemon_->log();
  auto routes = gateway::Routes::Read(gateway::Routes::Served());
  ASSERT_TRUE(routes.ok()) << routes.status();
  std::map<std::string, std::string> tokens;
  for (const char* role : {"viewer", "deployer", "operator", "admin"}) tokens[role] = Token(absl::StrCat("h-", role), role);
  httplib::Client c(url);
  c.set_read_timeout(10, 0);
  int checked = 0;
  for (const gateway::Route& r : routes->all()) {
    std::string rule = absl::StrCat(r.method->service()->name(), "/", r.method->name());
    const std::string& least = ExpectedLeastRole().at(rule);
    for (const auto& [role, token] : tokens) {
      httplib::Headers h = {{"Authorization", "Bearer " + token}};
      int status = 0;
      std::string body;
      if (r.Streaming()) {
        // An open stream answers 200 and waits: its status is read, then it is left.
        c.Get(PathFor(r), h, [&](const httplib::Response& res) { status = res.status; return res.status != 200; },
              [&](const char* data, size_t n) { body.append(data, n); return false; });
      } else {
        auto res = Send(&c, r, h);
        ASSERT_TRUE(res) << r.verb << " " << r.path;
        status = res->status;
        body = res->body;
      }
      ++checked;
      if (RoleMayCall(role, least)) {
        EXPECT_NE(status, 403) << r.verb << " " << PathFor(r) << " as " << role << ": " << body;
        EXPECT_NE(status, 401) << r.verb << " " << PathFor(r) << " as " << role << ": " << body;
      } else {
        EXPECT_EQ(status, 403) << r.verb << " " << PathFor(r) << " as " << role << ": " << body;
        auto j = nlohmann::json::parse(body, nullptr, false);
        EXPECT_EQ(j.value("status", ""), "PERMISSION_DENIED") << body;
        EXPECT_THAT(j.value("fix", ""), HasSubstr("mariposa admin token create")) << body;
      }
    }
    auto res = Send(&c, r, {{"Authorization", "Bearer mpt_0000000000000000000000000000000000000000"}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401) << r.verb << " " << r.path << ": " << res->body;
  }
  EXPECT_GT(checked, 200);
  RunResult events = M({"events", "--all", "--limit", "1000"});
  EXPECT_THAT(events.out, HasSubstr("token:h-viewer (127.0.0.1:"));
  EXPECT_THAT(events.out, HasSubstr(" (http))"));
}

// Plain HTTP on loopback: a non-browser caller is the uid owning its socket
// (as the gRPC loopback listener); a browser's request (Origin, Sec-Fetch-*)
// is anonymous without a token; other Host names are refused (DNS
// rebinding); the gateway's headers sent over gRPC are refused; the
// OpenAPI document and event streams resume from Last-Event-ID.
TEST_F(SecurityTest, HttpLoopbackIdentityBrowsersAndForgedGatewayHeaders) {
  daemon_ = std::make_unique<ServerProcess>(DaemonArgv({"--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"}),
                                            dir_ + "/data");
  ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  httplib::Client c(HttpUrl(*daemon_));
  auto who = [&](const httplib::Headers& h) {
    auto res = c.Get("/v1/auth/whoami", h);
    return res ? nlohmann::json::parse(res->body, nullptr, false) : nlohmann::json();
  };
  nlohmann::json me = who({});
  if (getuid() == 0) EXPECT_EQ(me.value("name", ""), "root") << me.dump();
  else EXPECT_EQ(me.value("name", "").rfind("user:", 0), 0u) << me.dump();
  EXPECT_EQ(me.value("method", ""), "loopback") << me.dump();
  EXPECT_EQ(who({{"Origin", "http://127.0.0.1:1"}}).value("name", ""), "anonymous");
  EXPECT_EQ(who({{"Sec-Fetch-Mode", "cors"}}).value("name", ""), "anonymous");
  auto browser = c.Post("/v1/projects:apply", {{"Origin", "http://example.com"}}, "{}", "application/json");
  ASSERT_TRUE(browser);
  EXPECT_NE(browser->status, 200);
  auto rebound = c.Get("/v1/auth/whoami", {{"Host", "attacker.example:80"}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 403);
  EXPECT_THAT(rebound->body, HasSubstr("not a loopback name"));
  auto form = c.Post("/v1/projects", "name=x", "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 415);
  // The gateway's headers over gRPC, without its secret (or with a guess).
  auto channel = grpc::CreateChannel(daemon_->addr(), grpc::InsecureChannelCredentials());
  for (const std::string& secret : {std::string(""), std::string("mpt_guess")}) {
    grpc::ClientContext ctx;
    if (!secret.empty()) ctx.AddMetadata("x-mariposa-gateway", secret);
    ctx.AddMetadata("x-mariposa-http-uid", "0");
    ctx.AddMetadata("x-mariposa-http-cert", "admin");
    v1::WhoAmIResponse out;
    grpc::Status s = v1::Auth::NewStub(channel)->WhoAmI(&ctx, v1::WhoAmIRequest(), &out);
    v1::ListProjectsResponse lp;
    grpc::ClientContext ctx2;
    if (!secret.empty()) ctx2.AddMetadata("x-mariposa-gateway", secret);
    ctx2.AddMetadata("x-mariposa-http-uid", "0");
    grpc::Status s2 = v1::Projects::NewStub(channel)->ListProjects(&ctx2, v1::ListProjectsRequest(), &lp);
    EXPECT_EQ(s2.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s2.error_message();
    EXPECT_THAT(s2.error_message(), HasSubstr("gateway's headers without its secret"));
  }
  // The OpenAPI document names every route. Large answers are gzipped for a
  // client that takes it (never brotli: httplib's is too slow for a big state).
  auto doc = c.Get("/v1/openapi.json", {{"Accept-Encoding", "br, gzip"}});
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->get_header_value("Content-Encoding"), "gzip");
  auto j = nlohmann::json::parse(doc->body, nullptr, false);
  auto routes = gateway::Routes::Read(gateway::Routes::Served());
  ASSERT_TRUE(routes.ok());
  for (const gateway::Route& r : routes->all()) EXPECT_TRUE(j["paths"].contains(r.path)) << r.path;
  // Events as SSE, resumed after the index the client last saw.
  ASSERT_EQ(M({"apply", "-f", "deploy/examples/jupiter.yaml", "--yes"}).exit_code, 0);
  // The ids of the first `n` events of a stream.
  auto ids = [&](const httplib::Headers& h, size_t n) {
    std::string text;
    std::vector<std::string> out;
    c.set_read_timeout(5, 0);
    c.Get("/v1/projects/jupiter/events:watch", h, [&](const char* data, size_t len) {
      text.append(data, len);
      out.clear();
      for (size_t at = text.find("id: "); at != std::string::npos; at = text.find("id: ", at + 1)) {
        out.push_back(text.substr(at + 4, text.find('\n', at) - at - 4));
      }
      return out.size() < n;
    });
    return out;
  };
  std::vector<std::string> first = ids({}, 3);
  ASSERT_EQ(first.size(), 3u);
  std::vector<std::string> resumed = ids({{"Last-Event-ID", first[0]}}, 2);
  ASSERT_EQ(resumed.size(), 2u);
  EXPECT_EQ(resumed[0], first[1]) << "the event after the last one seen";
  EXPECT_EQ(resumed[1], first[2]);
  // A refused stream is an HTTP error, not an empty stream.
  auto missing = c.Get("/v1/projects/nosuch/events:watch");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

// HTTPS with the gRPC listener's certificate: a client certificate of the
// configured CA is "cert:CN" with its grants; one of another CA is not; a
// token works beside them; the audit names the HTTPS caller.
TEST_F(SecurityTest, HttpsClientCertificatesAndTokens) {
  StartTls({"--http-listen", "127.0.0.1:0"});
  std::string url = HttpUrl(*daemon_);
  ASSERT_EQ(url.rfind("https://", 0), 0u) << url;
  ASSERT_EQ(Local({"admin", "grant", "cert:alice", "viewer", "-j", "jupiter"}).exit_code, 0);
  auto client = [&](const std::string& cert) {
    std::string host = url.substr(8, url.rfind(':') - 8);
    int port = std::stoi(url.substr(url.rfind(':') + 1));
    auto c = cert.empty() ? std::make_unique<httplib::SSLClient>(host, port)
                          : std::make_unique<httplib::SSLClient>(host, port, dir_ + "/" + cert + ".pem",
                                                                 dir_ + "/" + cert + ".key");
    c->set_ca_cert_path((dir_ + "/ca.pem").c_str());
    c->enable_server_certificate_verification(true);
    return c;
  };
  auto who = [](httplib::SSLClient* c, const httplib::Headers& h = {}) {
    auto res = c->Get("/v1/auth/whoami", h);
    return res ? nlohmann::json::parse(res->body, nullptr, false) : nlohmann::json{{"error", httplib::to_string(res.error())}};
  };
  nlohmann::json alice = who(client("alice").get());
  EXPECT_EQ(alice.value("name", ""), "cert:alice") << alice.dump();
  EXPECT_EQ(alice.value("method", ""), "certificate");
  EXPECT_EQ(alice.value("transport", ""), "https");
  EXPECT_EQ(who(client("mallory").get()).value("name", ""), "anonymous") << "another CA's certificate";
  EXPECT_EQ(who(client("").get()).value("name", ""), "anonymous") << "no certificate, no token";
  RunResult made = Local({"admin", "token", "create", "--name", "web-ci", "--role", "deployer", "--all-projects"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::string token(absl::StripAsciiWhitespace(made.out.substr(0, made.out.find('\n'))));
  EXPECT_EQ(who(client("").get(), {{"Authorization", "Bearer " + token}}).value("name", ""), "token:web-ci");
  // alice may look, not change; the token may apply.
  auto c = client("alice");
  const std::string body = nlohmann::json{{"manifest", ReadFile("deploy/examples/jupiter.yaml")}}.dump();
  auto refused = c->Post("/v1/projects/jupiter:apply", body, "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403) << refused->body;
  auto applied =
      client("")->Post("/v1/projects/jupiter:apply", {{"Authorization", "Bearer " + token}}, body, "application/json");
  ASSERT_TRUE(applied);
  EXPECT_EQ(applied->status, 200) << applied->body;
  RunResult events = Local({"-j", "jupiter", "events"});
  EXPECT_THAT(events.out, HasSubstr("token:web-ci (127.0.0.1:"));
  EXPECT_THAT(events.out, HasSubstr("(https)"));
}

}  // namespace
}  // namespace mariposa::testing
