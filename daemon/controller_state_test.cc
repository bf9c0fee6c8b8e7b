#include "daemon/controller_state.h"

#include <gtest/gtest.h>

#include "projects/sql_store.h"

namespace mariposa {
namespace {

auth::MethodRule Rule(const char* m, bool writes) { return {m, auth::Permission::kDeploy, false, writes}; }

TEST(GateCall, ReadonlyRefusesWritesOnly) {
  ControllerMode active;
  EXPECT_TRUE(GateCall(active, Rule("Projects/Apply", true)).ok());
  ControllerMode ro{"readonly", "restoring the store", absl::FromUnixSeconds(1700000000), "root"};
  grpc::Status s = GateCall(ro, Rule("Projects/Apply", true));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("restoring the store"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("mariposa admin state set active"), std::string::npos);
  EXPECT_TRUE(GateCall(ro, Rule("Projects/GetProject", false)).ok());
}

TEST(GateCall, EveryRuleThatWritesNeedsARole) {
  // Calls open to anyone, and reads, are never refused by readonly; and
  // SetState itself stays open, or readonly could not end.
  ControllerMode ro{"readonly", "r", absl::UnixEpoch(), "root"};
  for (const auth::MethodRule& r : auth::MethodRules()) {
    bool refused = !GateCall(ro, r).ok();
    if (r.permission == auth::Permission::kAnyone || r.permission == auth::Permission::kRead) {
      EXPECT_FALSE(refused) << r.method;
    }
    if (std::string(r.method) == "Admin/SetState" || std::string(r.method) == "Admin/Status") {
      EXPECT_FALSE(refused) << r.method;
    }
    if (std::string(r.method) == "Projects/Apply" || std::string(r.method) == "Queue/Freeze") {
      EXPECT_TRUE(refused) << r.method;
    }
  }
}

TEST(ModeCodec, RoundTripsAndRefusesGarbage) {
  ControllerMode m{"readonly", "disk swap", absl::FromUnixSeconds(1700000123), "token:ops"};
  auto back = DecodeMode(EncodeMode(m));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->mode, "readonly");
  EXPECT_EQ(back->reason, "disk swap");
  EXPECT_EQ(back->since, m.since);
  EXPECT_EQ(back->by, "token:ops");
  EXPECT_EQ(DecodeMode("")->mode, "active");
  EXPECT_FALSE(DecodeMode("{").ok());
  EXPECT_FALSE(DecodeMode(R"({"mode":"sleepy"})").ok());
}

TEST(ControllerState, PersistsAcrossReopen) {
  SimulatedClock clock;
  std::string path = ::testing::TempDir() + "/controller_state.db";
  std::remove(path.c_str());
  {
    auto store = SqlProjectStore::Open(path, &clock);
    ASSERT_TRUE(store.ok()) << store.status();
    ControllerState st(store->get(), &clock);
    ASSERT_TRUE(st.Load().ok());
    EXPECT_EQ(st.Get().mode, "active");
    EXPECT_FALSE(st.Set("readonly", "", "root").ok()) << "a reason is required";
    EXPECT_FALSE(st.Set("standby", "x", "root").ok());
    int changes = 0;
    st.set_on_change([&](const ControllerMode&) { ++changes; });
    ASSERT_TRUE(st.Set("readonly", "moving the data dir", "root").ok());
    EXPECT_EQ(changes, 1);
    auto events = (*store)->ListNewestEvents("", 0, 10);
    ASSERT_TRUE(events.ok());
    ASSERT_FALSE(events->empty());
    EXPECT_EQ(events->back().kind, "controller.state");
  }
  auto store = SqlProjectStore::Open(path, &clock);
  ASSERT_TRUE(store.ok());
  ControllerState st(store->get(), &clock);
  ASSERT_TRUE(st.Load().ok());
  EXPECT_EQ(st.Get().mode, "readonly");
  EXPECT_EQ(st.Get().reason, "moving the data dir");
  ASSERT_TRUE(st.Set("active", "", "root").ok());
  EXPECT_EQ(st.Get().mode, "active");
}

}  // namespace
}  // namespace mariposa
