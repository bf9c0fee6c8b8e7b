// Hostile input against the real mariposad (no Triton needed): every entry of
// the hostile corpus is answered or rejected within 2 s of daemon CPU, the
// daemon never crashes, its peak RSS stays under 300 MB, memory goes back
// after large requests, it still serves afterwards, and work for a client
// that gave up stops within 1 s.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <mutex>
#include <functional>
#include <condition_variable>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>

#include <google/protobuf/descriptor.h>

#include "mariposa/v1/admin.grpc.pb.h"
#include "mariposa/v1/auth.grpc.pb.h"
#include "mariposa/v1/events.grpc.pb.h"
#include "mariposa/v1/images.grpc.pb.h"
#include "mariposa/v1/health.grpc.pb.h"
#include "mariposa/v1/projects.grpc.pb.h"
#include "mariposa/v1/queue.grpc.pb.h"
#include "mariposa/v1/state.grpc.pb.h"
#include "tests/hostile_corpus.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

namespace v1 = ::mariposa::v1;

double CpuSeconds(pid_t pid) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
}

// A /proc/PID/status field in MiB (VmRSS, VmHWM).
double StatusMiB(pid_t pid, const std::string& key) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(f, line)) {
    if (absl::StartsWith(line, key + ":")) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  }
  return -1;
}

class HostileInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<Daemon>(TempDir("hostile"));
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(64 << 20);
    args.SetMaxReceiveMessageSize(128 << 20);
    stub_ = v1::Projects::NewStub(
        grpc::CreateCustomChannel(daemon_->addr(), grpc::InsecureChannelCredentials(), args));
  }

  grpc::Status Apply(const std::string& text, const std::string& name, v1::ApplyResponse* resp,
                     std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    v1::ApplyRequest req;
    req.set_manifest(text);
    req.set_filename(name);
    req.set_force(true);
    return stub_->Apply(&ctx, req, resp);
  }

  bool Alive() const { return kill(daemon_->pid(), 0) == 0; }

  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<v1::Projects::Stub> stub_;
};

TEST_F(HostileInputTest, CorpusAnsweredCheaplyWithoutCrashOrBloat) {
  pid_t pid = daemon_->pid();
  v1::ApplyResponse warm;
  ASSERT_TRUE(Apply(ValidManifest("warmup", 3), "warmup.yaml", &warm).ok());
  double idle_rss = StatusMiB(pid, "VmRSS");

  std::vector<HostileManifest> corpus = HostileManifests(20261123);
  ASSERT_GE(corpus.size(), 100u);
  double worst_cpu = 0;
  std::string worst;
  for (const HostileManifest& h : corpus) {
    double before = CpuSeconds(pid);
    v1::ApplyResponse resp;
    grpc::Status s = Apply(h.text, h.name, &resp);
    double cpu = CpuSeconds(pid) - before;
    if (cpu > worst_cpu) {
      worst_cpu = cpu;
      worst = h.name;
    }
    ASSERT_TRUE(Alive()) << h.name << " killed the daemon\n" << daemon_->log();
    EXPECT_LE(cpu, 2.0) << h.name;
    EXPECT_NE(s.error_code(), grpc::StatusCode::INTERNAL) << h.name << ": " << s.error_message();
    EXPECT_NE(s.error_code(), grpc::StatusCode::UNKNOWN) << h.name << ": " << s.error_message();
    EXPECT_NE(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << h.name;
    if (h.expect_error.empty()) {
      EXPECT_TRUE(s.ok()) << h.name << ": " << s.error_message().substr(0, 500);
    } else if (h.expect_error != "?") {
      ASSERT_FALSE(s.ok()) << h.name << " was accepted";
      EXPECT_NE(s.error_message().find(h.expect_error), std::string::npos)
          << h.name << ": " << s.error_message().substr(0, 800);
    }
    if (!s.ok()) {
      EXPECT_FALSE(s.error_message().empty()) << h.name;
      EXPECT_LE(s.error_message().size(), 8192u) << h.name;
    }
  }
  std::cout << corpus.size() << " hostile manifests; most daemon CPU for one: " << worst_cpu << " s (" << worst
            << ")\n";

  // Hostile RPC arguments: each refused with a code and a message naming
  // what is wrong, never INTERNAL.
  auto expect_refused = [&](const grpc::Status& s, grpc::StatusCode code, const std::string& part,
                            const std::string& what) {
    EXPECT_EQ(s.error_code(), code) << what << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(part), std::string::npos) << what << ": " << s.error_message();
    ASSERT_TRUE(Alive()) << what;
  };
  {
    grpc::ClientContext ctx;
    v1::SetMetaRequest req;
    req.set_project("warmup");
    req.set_key("k");
    req.set_value(std::string("a\0b", 3));
    v1::SetMetaResponse resp;
    expect_refused(stub_->SetMeta(&ctx, req, &resp), grpc::StatusCode::INVALID_ARGUMENT, "SetMetaRequest.value",
                   "NUL in a meta value");
  }
  {
    grpc::ClientContext ctx;
    v1::SetMetaRequest req;
    req.set_project("warmup");
    req.set_key(std::string(20000, 'k'));
    req.set_value("v");
    v1::SetMetaResponse resp;
    expect_refused(stub_->SetMeta(&ctx, req, &resp), grpc::StatusCode::INVALID_ARGUMENT, "over the limit",
                   "20,000-byte meta key");
  }
  {
    grpc::ClientContext ctx;
    v1::GetProjectRequest req;
    req.set_project("\xff\xfe");
    v1::GetProjectResponse resp;
    expect_refused(stub_->GetProject(&ctx, req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                   "GetProjectRequest.project: invalid UTF-8", "invalid UTF-8 project name");
  }
  {
    grpc::ClientContext ctx;
    v1::CreateProjectRequest req;
    req.set_name("nul");
    req.set_description(std::string("x\0", 2));
    v1::CreateProjectResponse resp;
    expect_refused(stub_->CreateProject(&ctx, req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                   "CreateProjectRequest.description: a NUL byte", "NUL in a description");
  }
  {
    grpc::ClientContext c1, c2;
    v1::SetMetaRequest set;
    set.set_project("warmup");
    set.set_key("n");
    set.set_value("9223372036854775807");
    v1::SetMetaResponse sresp;
    ASSERT_TRUE(stub_->SetMeta(&c1, set, &sresp).ok());
    v1::IncrMetaRequest incr;
    incr.set_project("warmup");
    incr.set_key("n");
    incr.set_delta(INT64_MAX);
    v1::IncrMetaResponse iresp;
    expect_refused(stub_->IncrMeta(&c2, incr, &iresp), grpc::StatusCode::OUT_OF_RANGE, "64-bit range",
                   "incr past int64");
  }
  {
    grpc::ClientContext ctx;
    v1::ScaleRequest req;
    req.set_project("warmup");
    req.add_changes("svc0=+9223372036854775807");
    v1::ScaleResponse resp;
    grpc::Status s = stub_->Scale(&ctx, req, &resp);
    EXPECT_FALSE(s.ok());
    EXPECT_TRUE(s.error_code() == grpc::StatusCode::OUT_OF_RANGE ||
                s.error_code() == grpc::StatusCode::INVALID_ARGUMENT)
        << s.error_message();
    EXPECT_NE(s.error_message().find("is not SERVICE=N, SERVICE=+N or SERVICE=-N (N: 0..100000"), std::string::npos)
        << s.error_message();
    EXPECT_EQ(s.error_message().find("gives -"), std::string::npos) << "a wrapped count: " << s.error_message();
  }

  // Memory: bounded at the peak, and given back.
  double peak = StatusMiB(pid, "VmHWM");
  // mariposad's allocator (jemalloc) hands freed pages back within about a
  // second, by a thread of its own (malloc_conf, daemon/main.cc): wait for
  // that rather than catch it just before.
  // What stays varied under glibc's arenas: 19-63 MiB above idle, 66.3
  // once in CI. 96 MiB still catches a leak of the corpus's size (its
  // 200,000-key manifest alone is hundreds of MiB if kept).
  constexpr double kKeptMiB = 96.0;
  double after = StatusMiB(pid, "VmRSS");
  Eventually([&] { return (after = StatusMiB(pid, "VmRSS")) < idle_rss + kKeptMiB; }, absl::Seconds(3));
  std::cout << "RSS idle " << idle_rss << " MiB, after the corpus " << after << " MiB, peak " << peak << " MiB\n";
  EXPECT_LT(peak, 300.0);
  EXPECT_LT(after, idle_rss + kKeptMiB);

  // Still serves: the largest valid project is applied and read back whole.
  v1::ApplyResponse big;
  ASSERT_TRUE(Apply(ValidManifest("big", 1000), "big.yaml", &big).ok());
  grpc::ClientContext ctx;
  v1::GetVersionRequest req;
  req.set_project("big");
  req.set_include_manifest(true);
  v1::GetVersionResponse resp;
  grpc::Status s = stub_->GetVersion(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.services_size(), 1000);
  EXPECT_TRUE(Alive());
}

// A manifest at the limits: 1,000 services with 100 environment entries.
std::string Expensive(const std::string& project) {
  std::string s = absl::StrCat("project: ", project, "\nservices:\n");
  for (int i = 0; i < 1000; ++i) {
    absl::StrAppend(&s, "  s", i, ":\n    image: img@1.0.0\n    environment:\n");
    for (int k = 0; k < 100; ++k) absl::StrAppend(&s, "      VAR_", k, ": value-", i, "-", k, "\n");
  }
  return s;
}

// A version another data center sends (Projects/ReceiveVersion) is outside
// input like an apply: the hostile corpus through it, then a flood of sends
// from four clients, after which an apply is still answered at once.
TEST_F(HostileInputTest, VersionsSentByAnotherDataCenterAreCheckedLikeApplies) {
  pid_t pid = daemon_->pid();
  std::vector<HostileManifest> corpus = HostileManifests(20261129);
  int sent = 0;
  for (size_t k = 0; k < corpus.size(); k += 4) {
    const HostileManifest& h = corpus[k];
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ReceiveVersionRequest req;
    req.set_project("sent");
    req.set_manifest(h.text);
    req.set_version_uuid(absl::StrCat("6d1f2c3a-0b9e-4c1d-8e7f-", absl::Dec(100000000000 + k, absl::kZeroPad12)));
    req.set_origin("us-east-1");
    v1::ApplyResponse resp;
    double before = CpuSeconds(pid);
    grpc::Status s = stub_->ReceiveVersion(&ctx, req, &resp);
    ++sent;
    ASSERT_TRUE(Alive()) << h.name << " killed the daemon\n" << daemon_->log();
    EXPECT_LE(CpuSeconds(pid) - before, 2.0) << h.name;
    EXPECT_NE(s.error_code(), grpc::StatusCode::INTERNAL) << h.name << ": " << s.error_message();
    EXPECT_NE(s.error_code(), grpc::StatusCode::UNKNOWN) << h.name << ": " << s.error_message();
    if (!s.ok()) {
      EXPECT_FALSE(s.error_message().empty()) << h.name;
    }
  }
  EXPECT_GE(sent, 25);

  const std::string manifest = ValidManifest("flood", 3);
  std::atomic<int> answered{0}, refused{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 100; ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        v1::ReceiveVersionRequest req;
        req.set_project("flood");
        req.set_manifest(manifest);
        req.set_version_uuid(absl::StrCat("7d1f2c3a-0b9e-4c1d-8e7f-", absl::Dec(c * 1000 + i, absl::kZeroPad12)));
        v1::ApplyResponse resp;
        (stub_->ReceiveVersion(&ctx, req, &resp).ok() ? answered : refused)++;
      }
    });
  }
  for (auto& t : clients) t.join();
  ASSERT_TRUE(Alive()) << daemon_->log();
  EXPECT_EQ(answered + refused, 400);
  EXPECT_GE(answered, 1);  // the first stores it; the same document again stores nothing
  v1::ApplyResponse after;
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(Apply(ValidManifest("after", 2), "after.yaml", &after, std::chrono::seconds(2)).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(HostileInputTest, CancelledRequestsStopBurningCpuWithinOneSecond) {
  pid_t pid = daemon_->pid();
  // What one such request costs when someone waits for it.
  v1::ApplyResponse resp;
  double before = CpuSeconds(pid);
  grpc::Status full = Apply(Expensive("waited"), "expensive.yaml", &resp);
  double cost = CpuSeconds(pid) - before;
  ASSERT_TRUE(full.ok()) << full.error_message();
  std::cout << "one expensive apply: " << cost << " s of daemon CPU\n";

  // Four clients give up after 50 ms, each with a different project so
  // that nothing is a no-op (the apply got faster: at 100 ms one of the four
  // was once stored on CI's busy cores before the server saw the give-up).
  std::vector<std::thread> clients;
  std::vector<grpc::StatusCode> codes(4);
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      v1::ApplyResponse r;
      codes[i] = Apply(Expensive(absl::StrCat("gaveup", i)), "expensive.yaml", &r, std::chrono::milliseconds(50))
                     .error_code();
    });
  }
  for (auto& t : clients) t.join();
  for (auto c : codes) EXPECT_EQ(c, grpc::StatusCode::DEADLINE_EXCEEDED);
  // Within 1 s of the give-up the work has stopped: the next second is idle.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  double at1 = CpuSeconds(pid);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  double idle = CpuSeconds(pid) - at1;
  std::cout << "daemon CPU in the second after that: " << idle << " s\n";
  EXPECT_LT(idle, 0.15);
  // The server noticed: none of the abandoned applies was stored (each
  // needs several times the 50 ms to finish, and the four share two cores).
  for (int i = 0; i < 4; ++i) {
    grpc::ClientContext ctx;
    v1::GetProjectRequest req;
    req.set_project(absl::StrCat("gaveup", i));
    v1::GetProjectResponse r;
    grpc::Status s = stub_->GetProject(&ctx, req, &r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << "gaveup" << i << " was stored after its client gave up";
  }
  EXPECT_TRUE(Alive());
}

// Issue 31: invalid UTF-8 in the string fields not checked by hand, garbage
// bytes and truncated messages were answered INTERNAL with an empty message
// (and libprotobuf's own lines landed in the JSON log). Every field a user
// fills in is now checked and named; anything unparsable is INVALID_ARGUMENT
// saying what could not be read.
TEST_F(HostileInputTest, UnreadableRequestsAreInvalidArgumentWithAMessage) {
  auto channel = grpc::CreateChannel(daemon_->addr(), grpc::InsecureChannelCredentials());
  auto named = [&](const grpc::Status& s, const std::string& field) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << field << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(field + ": invalid UTF-8"), std::string::npos) << s.error_message();
  };
  {
    grpc::ClientContext ctx;
    v1::CanIRequest req;
    req.set_action("\xff\xfe");
    v1::CanIResponse resp;
    named(v1::Auth::NewStub(channel)->CanI(&ctx, req, &resp), "CanIRequest.action");
  }
  {
    grpc::ClientContext ctx;
    v1::CreateTokenRequest req;
    req.set_name("\xc3\x28");
    req.set_role("viewer");
    v1::CreateTokenResponse resp;
    named(v1::Auth::NewStub(channel)->CreateToken(&ctx, req, &resp), "CreateTokenRequest.name");
  }
  {
    grpc::ClientContext ctx;
    v1::SetStateRequest req;
    req.set_mode("read\xffonly");
    v1::SetStateResponse resp;
    named(v1::Admin::NewStub(channel)->SetState(&ctx, req, &resp), "SetStateRequest.mode");
  }
  // Raw bytes that are no message at all, a truncated one, and a string
  // field (Grant, shared with replies) holding invalid UTF-8.
  v1::SetGrantRequest grant;
  grant.mutable_grant()->set_subject("user:alice");
  grant.mutable_grant()->set_role("viewer");
  std::string good = grant.SerializeAsString();
  std::string bad_utf8 = good;
  bad_utf8[bad_utf8.find("alice")] = '\xff';
  v1::ApplyRequest apply;
  apply.set_manifest(std::string(200, 'x'));
  std::string truncated = apply.SerializeAsString().substr(0, 50);
  struct Raw {
    std::string method, bytes, type;
  };
  for (const Raw& r : std::vector<Raw>{{"/mariposa.v1.Projects/Apply", "\xff\xff\xff\xff\xff", "mariposa.v1.ApplyRequest"},
                                       {"/mariposa.v1.Projects/Apply", truncated, "mariposa.v1.ApplyRequest"},
                                       {"/mariposa.v1.Auth/SetGrant", bad_utf8, "mariposa.v1.SetGrantRequest"}}) {
    grpc::GenericStub generic(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Slice slice(r.bytes);
    grpc::ByteBuffer request(&slice, 1), reply;
    grpc::Status status;
    bool done = false;
    std::mutex mu;
    std::condition_variable cv;
    generic.UnaryCall(&ctx, r.method, grpc::StubOptions(), &request, &reply, [&](grpc::Status s) {
      std::lock_guard<std::mutex> l(mu);
      status = s;
      done = true;
      cv.notify_one();
    });
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return done; });
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << r.method << ": " << status.error_message();
    EXPECT_NE(status.error_message().find("could not be read as " + r.type), std::string::npos)
        << status.error_message();
    EXPECT_NE(status.error_message().find("nothing was done"), std::string::npos);
  }
  ASSERT_TRUE(Alive());
  // Nothing but JSON lines in the log (libprotobuf's messages included).
  std::istringstream log(daemon_->log());
  std::string line;
  while (std::getline(log, line)) {
    if (line.empty() || line.rfind("mariposad:", 0) == 0) continue;
    EXPECT_EQ(line.front(), '{') << "not a JSON log line: " << line;
  }
}

// Issue 31: absurd numbers were accepted silently (a token expiry of
// 2^63-1 s became "never", a rolling of 2^63-1 was queued, negative limits
// and indexes passed). Each is refused naming the field and its range.
TEST_F(HostileInputTest, AbsurdNumbersAreRefusedWithTheirRange) {
  auto channel = grpc::CreateChannel(daemon_->addr(), grpc::InsecureChannelCredentials());
  auto refused = [&](const grpc::Status& s, const std::string& says) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << says << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(says), std::string::npos) << s.error_message();
  };
  {
    grpc::ClientContext ctx;
    v1::CreateTokenRequest req;
    req.set_name("forever");
    req.set_role("viewer");
    req.set_expires_in_seconds(INT64_MAX);
    v1::CreateTokenResponse resp;
    refused(v1::Auth::NewStub(channel)->CreateToken(&ctx, req, &resp),
            "--expires (seconds) 9223372036854775807 is outside 0..315360000");
  }
  {
    grpc::ClientContext ctx;
    v1::ListEventsRequest req;
    req.set_limit(-1);
    v1::ListEventsResponse resp;
    refused(stub_->ListEvents(&ctx, req, &resp), "limit -1 is outside 0..");
  }
  {
    grpc::ClientContext ctx;
    v1::ListEventsRequest req;
    req.set_after_index(-5);
    v1::ListEventsResponse resp;
    refused(stub_->ListEvents(&ctx, req, &resp), "after_index -5 is outside 0..");
  }
  {
    // A project to list the tasks of.
    grpc::ClientContext ctx;
    v1::CreateProjectRequest req;
    req.set_name("numbers");
    v1::CreateProjectResponse resp;
    ASSERT_TRUE(stub_->CreateProject(&ctx, req, &resp).ok());
  }
  {
    grpc::ClientContext ctx;
    v1::ListTasksRequest req;
    req.set_project("numbers");
    req.set_finished_limit(-1);
    v1::ListTasksResponse resp;
    refused(v1::Queue::NewStub(channel)->ListTasks(&ctx, req, &resp), "finished_limit -1 is outside 0..");
  }
  {
    grpc::ClientContext ctx;
    v1::AddTaskRequest req;
    req.set_project("numbers");
    req.set_kind("reprovision");
    req.set_rolling(INT64_MAX);
    v1::AddTaskResponse resp;
    refused(v1::Queue::NewStub(channel)->AddTask(&ctx, req, &resp), "--rolling 9223372036854775807 is outside 0..100000");
  }
  {
    grpc::ClientContext ctx;
    v1::ScaleRequest req;
    req.set_project("numbers");
    req.add_changes("web= 5");
    v1::ScaleResponse resp;
    refused(stub_->Scale(&ctx, req, &resp), "\"web= 5\" is not SERVICE=N, SERVICE=+N or SERVICE=-N");
  }
}

// Every field of every request message is `bytes` (checked and named by
// ValidateRequestText), except Grant's, which is shared with replies (their
// JSON would be base64), and map keys, which cannot be bytes: those are
// answered by the unparsable-request path.
TEST(RequestProtos, UserTextIsBytesSoItsChecksNameTheField) {
  // Linked in, so that their descriptors are in the pool.
  (void)&v1::Events::NewStub, (void)&v1::Images::NewStub, (void)&v1::HealthAgent::NewStub,
      (void)&v1::HealthAgents::NewStub, (void)&v1::Queue::NewStub, (void)&v1::State::NewStub;
  const auto* pool = google::protobuf::DescriptorPool::generated_pool();
  std::vector<std::string> strings;
  std::set<std::string> seen;
  std::function<void(const google::protobuf::Descriptor*)> walk = [&](const google::protobuf::Descriptor* d) {
    if (!seen.insert(d->full_name()).second) return;
    for (int i = 0; i < d->field_count(); ++i) {
      const auto* f = d->field(i);
      if (f->type() == google::protobuf::FieldDescriptor::TYPE_STRING) strings.push_back(f->full_name());
      if (f->message_type() != nullptr) walk(f->message_type());
    }
  };
  int methods = 0;
  for (const char* service : {"mariposa.v1.Projects", "mariposa.v1.Queue", "mariposa.v1.State", "mariposa.v1.Auth",
                              "mariposa.v1.Admin", "mariposa.v1.HealthAgents", "mariposa.v1.HealthAgent",
                              "mariposa.v1.Events", "mariposa.v1.Images"}) {
    const auto* sd = pool->FindServiceByName(service);
    ASSERT_NE(sd, nullptr) << service;
    for (int m = 0; m < sd->method_count(); ++m, ++methods) walk(sd->method(m)->input_type());
  }
  EXPECT_GE(methods, 50);
  for (const std::string& f : strings) {
    // Map keys cannot be bytes: an invalid one makes the request unparsable.
    bool map_key = absl::EndsWith(f, "Entry.key");
    EXPECT_TRUE(absl::StartsWith(f, "mariposa.v1.Grant.") || map_key) << f << " is `string`: make it `bytes`";
  }
}

}  // namespace
}  // namespace mariposa::testing
