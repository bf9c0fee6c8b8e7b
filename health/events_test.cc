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

// Found by the oracle (issue 48): after a kill -9, the restarted mariposad's
// first result of each check ("unknown -> healthy") was written again right
// after the same event of the process before it.
TEST_F(EventsTest, AFirstResultTheLogAlreadyHoldsIsNotWrittenAgain) {
  HealthChange first{uuid_, "i-3", "http", Health::kUnknown, Health::kHealthy, false, "", "shop-web-3"};
  ASSERT_TRUE(WriteHealthEvents(store_.get(), {first}).ok());
  size_t n = Events().size();
  ASSERT_TRUE(WriteHealthEvents(store_.get(), {first}).ok());  // the restarted process's
  EXPECT_EQ(Events().size(), n) << Events().back().detail;
  // A different state after the restart is written.
  HealthChange now_bad = first;
  now_bad.to = Health::kUnhealthy;
  ASSERT_TRUE(WriteHealthEvents(store_.get(), {now_bad}).ok());
  EXPECT_EQ(Events().back().detail, "shop-web-3 http: unknown -> unhealthy");
}

TEST(AlreadyRecordedTest, OnlyAFirstResultEqualToTheNewestRecordedState) {
  auto ev = [](const std::string& subject, const std::string& detail) {
    EventRecord e;
    e.kind = "instance.health";
    e.subject = subject;
    e.detail = detail;
    return e;
  };
  std::vector<EventRecord> log = {ev("i-1", "web-1 http: unknown -> healthy"),
                                  ev("i-1", "web-1 tcp: unknown -> unhealthy (refused)"),
                                  ev("i-2", "http: healthy -> unhealthy (status 503)"),
                                  ev("i-1", "web-1 http: healthy -> starting")};
  struct Case {
    HealthChange change;
    bool repeated;
  } cases[] = {
      {{"p", "i-1", "http", Health::kUnknown, Health::kStarting, false, ""}, true},    // newest http: starting
      {{"p", "i-1", "http", Health::kUnknown, Health::kHealthy, false, ""}, false},    // an older one said healthy
      {{"p", "i-1", "tcp", Health::kUnknown, Health::kUnhealthy, false, ""}, true},    // per check
      {{"p", "i-2", "http", Health::kUnknown, Health::kUnhealthy, false, ""}, true},   // no alias in the text
      {{"p", "i-2", "http", Health::kHealthy, Health::kUnhealthy, false, ""}, false},  // not a first result
      {{"p", "i-2", "http", Health::kUnknown, Health::kUnhealthy, true, ""}, false},   // flapping
      {{"p", "i-3", "http", Health::kUnknown, Health::kHealthy, false, ""}, false},    // never recorded
  };
  for (const Case& c : cases) {
    EXPECT_EQ(AlreadyRecorded({c.change}, log)[0], c.repeated)
        << c.change.instance << " " << c.change.check << " -> " << HealthName(c.change.to);
  }
}

}  // namespace
}  // namespace mariposa::health
