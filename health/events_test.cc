// Health changes as events: the text of each kind, the project's name.
#include "health/events.h"

#include "common/clock.h"
#include "gtest/gtest.h"
#include "projects/sql_store.h"

namespace mariposa::health {
namespace {

class EventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = SqlProjectStore::Open(":memory:", &clock_);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    auto p = store_->CreateProject("shop", "", "test");
    ASSERT_TRUE(p.ok());
    uuid_ = p->uuid;
  }
  std::vector<EventRecord> Events() { return *store_->ListEvents("shop", 0, 1000); }

  SimulatedClock clock_;
  std::unique_ptr<SqlProjectStore> store_;
  std::string uuid_;
};

TEST_F(EventsTest, ChangesAndFlappingReadAsEvents) {
  ASSERT_TRUE(WriteHealthEvents(store_.get(),
                                {{uuid_, "i-1", "http", Health::kHealthy, Health::kUnhealthy, false, "status 503"},
                                 {uuid_, "i-1", "http", Health::kUnhealthy, Health::kUnhealthy, true, ""}})
                  .ok());
  auto events = Events();
  ASSERT_GE(events.size(), 2u);
  const EventRecord& change = events[events.size() - 2];
  const EventRecord& flap = events.back();
  EXPECT_EQ(change.kind, "instance.health");
  EXPECT_EQ(change.project, "shop");
  EXPECT_EQ(change.subject, "i-1");
  EXPECT_EQ(change.detail, "http: healthy -> unhealthy (status 503)");
  EXPECT_EQ(flap.kind, "instance.flapping");
  EXPECT_EQ(flap.detail, "http: flapping (unhealthy)");
}

// An event names the instance by its alias when the check's target had one.
TEST_F(EventsTest, EventsNameTheInstance) {
  HealthChange c{uuid_, "i-2", "http", Health::kHealthy, Health::kUnhealthy, false, "status 503", "shop-web-2"};
  ASSERT_TRUE(WriteHealthEvents(store_.get(), {c}).ok());
  EXPECT_EQ(Events().back().detail, "shop-web-2 http: healthy -> unhealthy (status 503)");
  EXPECT_EQ(Events().back().subject, "i-2");
}

}  // namespace
}  // namespace mariposa::health
