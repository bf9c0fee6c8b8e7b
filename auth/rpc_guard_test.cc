// The guard against real gRPC calls: a handler that checks nothing itself is
// never reached by a refused call, for unary, server-streaming and
// bidirectional methods; the project, task and variant come from the fields
// each RPC's (access) rule names; and every method mariposad serves has a
// rule the guard can use.
#include "auth/rpc_guard.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "mariposa/v1/admin.grpc.pb.h"
#include "mariposa/v1/auth.grpc.pb.h"
#include "mariposa/v1/events.grpc.pb.h"
#include "mariposa/v1/health.grpc.pb.h"
#include "mariposa/v1/images.grpc.pb.h"
#include "mariposa/v1/projects.grpc.pb.h"
#include "mariposa/v1/queue.grpc.pb.h"
#include "mariposa/v1/state.grpc.pb.h"
#include "projects/access.h"

namespace mariposa::auth {
namespace {

// Refuses project "forbidden" (PERMISSION_DENIED) and, when deny_all is set,
// everything (UNAUTHENTICATED); records what it was asked.
class FakeAccess : public Access {
 public:
  grpc::Status Authorize(grpc::ServerContext*, const std::string& project, const std::string& variant) override {
    absl::MutexLock l(&mu_);
    asked_.push_back(variant.empty() ? project : project + "#" + variant);
    if (deny_all_) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no credential");
    if (project == "forbidden") return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not on forbidden");
    return grpc::Status::OK;
  }
  std::string Author(const grpc::ServerContext*) override { return "test"; }
  bool CanSee(const grpc::ServerContext*, const std::string&) override { return true; }
  std::string CallerName(const grpc::ServerContext*) override { return "test"; }
  std::string ProjectOfTask(const std::string& task) override { return task == "t1" ? "forbidden" : "p-of-" + task; }

  std::vector<std::string> Asked() {
    absl::MutexLock l(&mu_);
    return std::exchange(asked_, {});
  }
  std::atomic<bool> deny_all_{false};

 private:
  absl::Mutex mu_;
  std::vector<std::string> asked_;
};

// Handlers that check nothing and count their runs.
class OpenProjects : public v1::Projects::Service {
 public:
  grpc::Status GetProject(grpc::ServerContext*, const v1::GetProjectRequest*, v1::GetProjectResponse*) override {
    ++runs;
    return grpc::Status::OK;
  }
  grpc::Status Apply(grpc::ServerContext*, const v1::ApplyRequest*, v1::ApplyResponse*) override {
    ++runs;
    return grpc::Status::OK;
  }
  std::atomic<int> runs{0};
};
class OpenQueue : public v1::Queue::Service {
 public:
  grpc::Status PauseTask(grpc::ServerContext*, const v1::PauseTaskRequest*, v1::PauseTaskResponse*) override {
    ++runs;
    return grpc::Status::OK;
  }
  grpc::Status AddTask(grpc::ServerContext*, const v1::AddTaskRequest*, v1::AddTaskResponse*) override {
    ++runs;
    return grpc::Status::OK;
  }
  std::atomic<int> runs{0};
};
class OpenEvents : public v1::Events::Service {
 public:
  grpc::Status Watch(grpc::ServerContext*, const v1::WatchEventsRequest*, grpc::ServerWriter<v1::Event>* w) override {
    ++runs;
    v1::Event e;
    w->Write(e);
    return grpc::Status::OK;
  }
  std::atomic<int> runs{0};
};
class OpenAgents : public v1::HealthAgents::Service {
 public:
  grpc::Status Connect(grpc::ServerContext*, grpc::ServerReaderWriter<v1::Assignment, v1::AgentMessage>*) override {
    ++runs;
    return grpc::Status::OK;
  }
  std::atomic<int> runs{0};
};

class RpcGuardTest : public ::testing::Test {
 protected:
  void Start(bool guard) {
    if (guard) {
      for (grpc::Service* s : std::vector<grpc::Service*>{&projects_, &queue_, &events_, &agents_}) {
        ASSERT_TRUE(GuardEveryMethod(s).ok());
      }
    }
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&projects_);
    b.RegisterService(&queue_);
    b.RegisterService(&events_);
    b.RegisterService(&agents_);
    server_ = b.BuildAndStart();
    ASSERT_NE(port, 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  }
  void SetUp() override { SetAccess(&access_); }
  void TearDown() override {
    if (server_) server_->Shutdown();
    SetAccess(nullptr);
  }
  grpc::Status GetProject(const std::string& project) {
    grpc::ClientContext ctx;
    v1::GetProjectRequest req;
    v1::GetProjectResponse resp;
    req.set_project(project);
    return v1::Projects::NewStub(channel_)->GetProject(&ctx, req, &resp);
  }

  FakeAccess access_;
  OpenProjects projects_;
  OpenQueue queue_;
  OpenEvents events_;
  OpenAgents agents_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(RpcGuardTest, ARefusedCallNeverReachesItsHandler) {
  Start(true);
  grpc::Status s = GetProject("forbidden");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "not on forbidden");
  EXPECT_EQ(projects_.runs.load(), 0);
  EXPECT_EQ(access_.Asked(), std::vector<std::string>{"forbidden"});
  EXPECT_TRUE(GetProject("fine").ok());
  EXPECT_EQ(projects_.runs.load(), 1);
  EXPECT_EQ(access_.Asked(), std::vector<std::string>{"fine"});
  // Many refusals in a row leave the server serving (the refused requests
  // are freed, the calls answered).
  for (int i = 0; i < 200; ++i) ASSERT_EQ(GetProject("forbidden").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(GetProject("fine").ok());
  EXPECT_EQ(projects_.runs.load(), 2);
}

// Without the guard the same handler runs for anyone: what the guard adds.
TEST_F(RpcGuardTest, WithoutTheGuardTheHandlerWouldRun) {
  Start(false);
  EXPECT_TRUE(GetProject("forbidden").ok());
  EXPECT_EQ(projects_.runs.load(), 1);
  EXPECT_TRUE(access_.Asked().empty());
}

TEST_F(RpcGuardTest, ProjectTaskAndVariantComeFromTheRulesFields) {
  Start(true);
  auto projects = v1::Projects::NewStub(channel_);
  auto queue = v1::Queue::NewStub(channel_);
  {
    grpc::ClientContext ctx;
    v1::ApplyRequest req;
    v1::ApplyResponse resp;
    req.set_project("web");
    req.set_dry_run(true);
    EXPECT_TRUE(projects->Apply(&ctx, req, &resp).ok());
  }
  {
    grpc::ClientContext ctx;
    v1::ApplyRequest req;
    v1::ApplyResponse resp;
    req.set_project("web");
    EXPECT_TRUE(projects->Apply(&ctx, req, &resp).ok());
  }
  for (const char* kind : {"start", "stop", "reprovision"}) {
    grpc::ClientContext ctx;
    v1::AddTaskRequest req;
    v1::AddTaskResponse resp;
    req.set_project("web");
    req.set_kind(kind);
    EXPECT_TRUE(queue->AddTask(&ctx, req, &resp).ok());
  }
  EXPECT_EQ(access_.Asked(), (std::vector<std::string>{"web#dry-run", "web", "web#start", "web#stop", "web"}));
  // A task's project is the call's: t1 belongs to "forbidden".
  {
    grpc::ClientContext ctx;
    v1::PauseTaskRequest req;
    v1::PauseTaskResponse resp;
    req.set_task("t1");
    EXPECT_EQ(queue->PauseTask(&ctx, req, &resp).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    grpc::ClientContext ctx;
    v1::PauseTaskRequest req;
    v1::PauseTaskResponse resp;
    req.set_task("t2");
    EXPECT_TRUE(queue->PauseTask(&ctx, req, &resp).ok());
  }
  EXPECT_EQ(access_.Asked(), (std::vector<std::string>{"forbidden", "p-of-t2"}));
  EXPECT_EQ(queue_.runs.load(), 4);
  EXPECT_EQ(projects_.runs.load(), 2);
}

TEST_F(RpcGuardTest, TextThatBreaksTheRuleIsRefusedBeforeAnyLookUp) {
  Start(true);
  grpc::Status s = GetProject(std::string("we\0b", 4));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("GetProjectRequest.project"), std::string::npos) << s.error_message();
  EXPECT_TRUE(access_.Asked().empty());
  EXPECT_EQ(projects_.runs.load(), 0);
}

TEST_F(RpcGuardTest, StreamingCallsAreGuardedToo) {
  Start(true);
  {
    grpc::ClientContext ctx;
    v1::WatchEventsRequest req;
    req.set_project("forbidden");
    auto reader = v1::Events::NewStub(channel_)->Watch(&ctx, req);
    v1::Event e;
    EXPECT_FALSE(reader->Read(&e));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    grpc::ClientContext ctx;
    v1::WatchEventsRequest req;
    req.set_project("fine");
    auto reader = v1::Events::NewStub(channel_)->Watch(&ctx, req);
    v1::Event e;
    EXPECT_TRUE(reader->Read(&e));
    EXPECT_TRUE(reader->Finish().ok());
  }
  EXPECT_EQ(events_.runs.load(), 1);
  access_.deny_all_ = true;
  {
    grpc::ClientContext ctx;
    auto stream = v1::HealthAgents::NewStub(channel_)->Connect(&ctx);
    stream->WritesDone();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  EXPECT_EQ(agents_.runs.load(), 0);
  access_.deny_all_ = false;
  {
    grpc::ClientContext ctx;
    auto stream = v1::HealthAgents::NewStub(channel_)->Connect(&ctx);
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  EXPECT_EQ(agents_.runs.load(), 1);
}

// Every method of every service mariposad serves has a rule the guard can
// use (a method without one would make mariposad refuse to start).
TEST(RpcGuard, EveryServedMethodHasAUsableRule) {
  v1::Projects::Service projects;
  v1::Events::Service events;
  v1::Queue::Service queue;
  v1::State::Service state;
  v1::Images::Service images;
  v1::Admin::Service admin;
  v1::Auth::Service auth;
  v1::HealthAgents::Service agents;
  for (grpc::Service* s : std::vector<grpc::Service*>{&projects, &events, &queue, &state, &images, &admin, &auth,
                                                      &agents}) {
    absl::Status st = GuardEveryMethod(s);
    EXPECT_TRUE(st.ok()) << st;
  }
  // mariposa-health's own list service carries no rule: refused.
  v1::HealthAgent::Service unruled;
  absl::Status st = GuardEveryMethod(&unruled);
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_NE(st.message().find("mariposa.v1.HealthAgent.ListChecks has no access rule"), std::string::npos) << st;
}

}  // namespace
}  // namespace mariposa::auth
