#include "projects/task_queue.h"

#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "projects/sql_store.h"

namespace mariposa {
namespace {

using ::testing::HasSubstr;

class QueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/queue_" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(path_.c_str());
    auto s = SqlProjectStore::Open(path_, &clock_);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    auto p = store_->CreateProject("jupiter", "", "alice");
    ASSERT_TRUE(p.ok());
    project_ = p->uuid;
  }
  TaskRecord T(const std::string& kind, std::vector<std::string> services = {}) {
    TaskRecord t;
    t.project_uuid = project_;
    t.kind = kind;
    t.services = std::move(services);
    t.actor = "alice";
    return t;
  }

  SimulatedClock clock_;
  std::string path_;
  std::unique_ptr<SqlProjectStore> store_;
  std::string project_;
};

TEST_F(QueueTest, AddWaitRejectTerminate) {
  TaskQueue q(store_.get());
  auto scale = q.Add(T("scale", {"web"}));
  ASSERT_TRUE(scale.ok()) << scale.status();
  EXPECT_EQ(scale->state, "queued");
  auto rep = q.Add(T("reprovision", {"web"}));  // concurrent with scale
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(rep->wait_for.empty());
  auto start = q.Add(T("start"));  // FIFO behind both
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(start->wait_for, (std::vector<std::string>{scale->uuid, rep->uuid}));
  auto again = q.Add(T("scale", {"web"}));  // scale + scale: rejected, naming the task
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(again.status().message()), HasSubstr(scale->uuid));

  // Active tasks become terminating; queued ones terminated at once.
  ASSERT_TRUE(store_->SetTaskState(scale->uuid, "active", "").ok());
  auto stop = q.Add(T("stop"));
  ASSERT_TRUE(stop.ok()) << stop.status();
  EXPECT_EQ(store_->GetTask(scale->uuid)->state, "terminating");
  EXPECT_EQ(store_->GetTask(rep->uuid)->state, "terminated");
  EXPECT_EQ(store_->GetTask(start->uuid)->state, "terminated");
}

TEST_F(QueueTest, TerminateFreezesTheSameScopeAndSurvivesRestart) {
  TaskQueue q(store_.get());
  auto rep = q.Add(T("reprovision", {"web", "api"}));
  ASSERT_TRUE(rep.ok());
  ASSERT_TRUE(store_->SetTaskState(rep->uuid, "active", "").ok());
  auto t = q.Terminate(rep->uuid, "bob", "bad image");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->state, "terminating");
  auto tasks = store_->ListTasks(project_, 10);
  ASSERT_TRUE(tasks.ok());
  const TaskRecord* freeze = nullptr;
  for (const auto& x : *tasks) {
    if (x.kind == "freeze") freeze = &x;
  }
  ASSERT_NE(freeze, nullptr);
  EXPECT_EQ(freeze->services, (std::vector<std::string>{"web", "api"}));
  EXPECT_EQ(freeze->actor, "bob");
  EXPECT_EQ(freeze->reason, "bad image");

  // Restart: reopen the file; the freeze still refuses work in its scope.
  store_.reset();
  auto reopened = SqlProjectStore::Open(path_, &clock_);
  ASSERT_TRUE(reopened.ok());
  store_ = std::move(*reopened);
  TaskQueue q2(store_.get());
  auto blocked = q2.Add(T("scale", {"web"}));
  EXPECT_EQ(blocked.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(blocked.status().message()), HasSubstr("frozen since"));
  EXPECT_THAT(std::string(blocked.status().message()), HasSubstr("by bob (bad image)"));
  TaskRecord automatic = T("scale", {"api"});
  automatic.origin = "auto";
  automatic.auto_kind = "replace-unhealthy";
  EXPECT_EQ(q2.Add(automatic).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(q2.Add(T("scale", {"db"})).ok());  // outside the frozen scope
  TaskRecord thaw = T("scale", {"web"});
  thaw.trigger = "thaw";
  std::string freeze_uuid = freeze->uuid;
  EXPECT_TRUE(q2.Add(thaw).ok());  // --thaw ends the freeze
  EXPECT_EQ(store_->GetTask(freeze_uuid)->state, "terminated");
}

TEST_F(QueueTest, StateMachine) {
  TaskQueue q(store_.get());
  auto t = q.Add(T("scale"));
  ASSERT_TRUE(t.ok());
  clock_.Advance(absl::Seconds(3));
  auto active = store_->SetTaskState(t->uuid, "active", "");
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(active->started_at, clock_.Now());
  auto done = store_->SetTaskState(t->uuid, "failed", "vmapi CreateVm: 503");
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->error, "vmapi CreateVm: 503");
  EXPECT_EQ(done->finished_at, clock_.Now());
  EXPECT_EQ(store_->SetTaskState(t->uuid, "active", "").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->SetTaskState(t->uuid, "sleeping", "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(q.Add(T("nap")).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

TaskRecord FreezeOf(std::vector<std::string> services, std::vector<std::string> only = {}) {
  TaskRecord f;
  f.uuid = "freeze-1";
  f.kind = "freeze";
  f.state = "active";
  f.services = std::move(services);
  f.only = std::move(only);
  f.actor = "alice";
  f.reason = "incident 7";
  f.created_at = absl::FromUnixSeconds(1800000000);
  return f;
}

// QUEUE.md: a user's change in a frozen scope is refused (who, since when,
// why, how to go on) unless --thaw, which names the freezes to end.
TEST(ManifestCanaryTest, LargestUpdateCanaryOfTheScope) {
  auto rec = [](const std::string& name, const std::string& spec) {
    ServiceRecord r;
    r.name = name;
    r.spec_json = spec;
    return r;
  };
  std::vector<ServiceRecord> v = {rec("web", R"({"update":{"canary":1}})"), rec("db", R"({"update":{"canary":3}})"),
                                  rec("cache", R"({"update":{}})"), rec("bad", "not json")};
  EXPECT_EQ(ManifestCanary(v, {"web"}), 1);
  EXPECT_EQ(ManifestCanary(v, {"web", "db"}), 3);
  EXPECT_EQ(ManifestCanary(v, {}), 3);
  EXPECT_EQ(ManifestCanary(v, {"cache", "bad"}), 0);
  // The same rule over a parsed manifest (apply's rollouts).
  Manifest m;
  m.services["web"].update_canary = 1;
  m.services["db"].update_canary = 3;
  EXPECT_EQ(ManifestCanary(m, {"web"}), 1);
  EXPECT_EQ(ManifestCanary(m, {}), 3);
  EXPECT_EQ(ManifestCanary(m, {"other"}), 0);
}

TEST(FreezesInTheWayTest, RefusedUnlessThaw) {
  std::vector<TaskRecord> open = {FreezeOf({"db"})};
  auto r = FreezesInTheWay(open, {"db"}, false);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status()));
  EXPECT_THAT(std::string(r.status().message()),
              ::testing::HasSubstr("frozen since 2027-01-15T08:00:00Z by alice (incident 7) for services db; thaw first"));
  r = FreezesInTheWay(open, {"db", "web"}, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, std::vector<std::string>{"freeze-1"});
  // Outside the freeze's scope, or nothing changed: no freeze in the way.
  EXPECT_TRUE(FreezesInTheWay(open, {"web"}, false)->empty());
  EXPECT_TRUE(FreezesInTheWay(open, {}, false)->empty());
  // A whole-project freeze covers every service.
  EXPECT_FALSE(FreezesInTheWay({FreezeOf({})}, {"web"}, false).ok());
  // A freeze with --only suspends automatic work only.
  EXPECT_TRUE(FreezesInTheWay({FreezeOf({}, {"replace-unhealthy"})}, {"web"}, false)->empty());
  // An ended freeze is no freeze.
  TaskRecord ended = FreezeOf({});
  ended.state = "terminated";
  EXPECT_TRUE(FreezesInTheWay({ended}, {"web"}, false)->empty());
}

}  // namespace
}  // namespace mariposa
