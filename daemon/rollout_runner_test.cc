// The rollout runner's glue: what it sends, what it records, and that a
// readonly mariposad sends nothing.
#include "daemon/rollout_runner.h"

#include "common/clock.h"
#include "gtest/gtest.h"
#include "projects/sql_store.h"

namespace mariposa {
namespace {

class RolloutRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*SqlProjectStore::Open(":memory:", &clock_));
    RolloutRecord r;
    r.project = "shop";
    r.version_uuid = "6d1f2c3a-0b9e-4c1d-8e7f-2a3b4c5d6e7f";
    r.hash = "h";
    r.author = "alice";
    r.origin = "east";
    r.manifest = "project: shop\n";
    for (const char* dc : {"east", "west"}) {
      RolloutStep s;
      s.datacenter = dc;
      r.steps.push_back(s);
    }
    auto added = store_->AddRollout(r, "alice");
    ASSERT_TRUE(added.ok()) << added.status();
    link_.send = [this](const std::string& dc, const v1::ReceiveVersionRequest& req) -> absl::StatusOr<v1::ApplyResponse> {
      sent_.push_back(dc);
      EXPECT_EQ(req.version_uuid(), "6d1f2c3a-0b9e-4c1d-8e7f-2a3b4c5d6e7f");
      v1::ApplyResponse resp;
      resp.set_changed(true);
      resp.mutable_version()->set_number(7);
      resp.set_base_version("before-" + dc);
      return resp;
    };
    link_.state = [this](const std::string&, const std::string&) -> absl::StatusOr<v1::GetStateResponse> {
      v1::GetStateResponse st;
      st.set_version(7);
      st.set_converged(converged_);
      st.set_actual_known(true);
      return st;
    };
    link_.rollback = [](const std::string&, const std::string&, const std::string&, const std::string&) {
      return absl::OkStatus();
    };
  }
  RolloutRecord Stored() { return (*store_->ListRollouts("shop", true)).back(); }

  SimulatedClock clock_;
  std::unique_ptr<SqlProjectStore> store_;
  DataCenterLink link_;
  std::vector<std::string> sent_;
  bool converged_ = false;
};

TEST_F(RolloutRunnerTest, SendsInOrderAndRecordsEachStep) {
  RolloutRunner runner(store_.get(), link_, &clock_, absl::Seconds(1));
  runner.RunOnce();
  EXPECT_EQ(sent_, std::vector<std::string>{"east"});
  EXPECT_EQ(Stored().steps[0].state, "sent");
  EXPECT_EQ(Stored().steps[0].number, 7);
  EXPECT_EQ(Stored().steps[0].previous_version, "before-east");
  runner.RunOnce();  // east converging: nothing more
  EXPECT_EQ(sent_.size(), 1u);
  converged_ = true;
  runner.RunOnce();  // east converged: west is sent
  EXPECT_EQ(sent_, (std::vector<std::string>{"east", "west"}));
  runner.RunOnce();
  EXPECT_EQ(Stored().state, "completed");
  auto events = store_->ListEvents("shop", 0, 100, {"datacenter."});
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->back().kind, "datacenter.rollout.completed");
}

TEST_F(RolloutRunnerTest, AReadonlyMariposadSendsNothing) {
  bool readonly = true;
  RolloutRunner runner(store_.get(), link_, &clock_, absl::Seconds(1), [&] { return readonly; });
  runner.RunOnce();
  EXPECT_TRUE(sent_.empty());
  EXPECT_EQ(Stored().steps[0].state, "pending");
  readonly = false;
  runner.RunOnce();
  EXPECT_EQ(sent_, std::vector<std::string>{"east"});
}

}  // namespace
}  // namespace mariposa
