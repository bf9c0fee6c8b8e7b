#include "cli/history.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace mariposa::cli {
namespace {

std::string Secs(const google::protobuf::Timestamp& t) { return absl::StrCat(t.seconds()); }

v1::Version Version(int64_t n, int64_t at, const std::string& author, const std::string& origin = "apply") {
  v1::Version v;
  v.set_uuid(absl::StrCat("v", n));
  v.set_number(n);
  v.set_author(author);
  v.set_origin(origin);
  v.set_hash("0123456789abcdef");
  v.set_service_count(2);
  v.mutable_created_at()->set_seconds(at);
  return v;
}

v1::Task Task(const std::string& kind, int64_t at, const std::string& version, const std::string& state) {
  v1::Task t;
  t.set_kind(kind);
  t.set_version(version);
  t.set_state(state);
  t.mutable_created_at()->set_seconds(at);
  return t;
}

TEST(History, OneTimelineOfVersionsAndTheirTasks) {
  v1::Version v1 = Version(1, 100, "ana@ops");
  v1.set_message("first");
  v1::Version v2 = Version(2, 200, "bo@ops");
  v2.add_tags("release");
  v1::Version v3 = Version(3, 300, "ana@ops", "rollback");
  v3.set_rolled_back_to(1);
  v1::Task roll = Task("reprovision", 200, "v2", "failed");  // same instant as v2: after it
  roll.set_origin("auto");
  roll.set_actor("mariposad");
  roll.set_trigger("apply");
  roll.add_services("web");
  roll.set_created(2);
  roll.set_deleted(1);
  roll.set_error("web-3 of web fails its health checks");
  v1::Task back = Task("reprovision", 301, "v3", "active");
  back.set_origin("user");
  back.set_actor("ana@ops");
  v1::Task freeze = Task("freeze", 150, "", "completed");
  freeze.set_actor("bo@ops");
  freeze.set_reason("release window");
  freeze.set_created(5);  // not a count of a freeze
  auto rows = History({v3, v1, v2}, {back, roll, freeze}, {}, &Secs);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].what, "version 1: apply (2 services, 0123456789ab) \"first\"");
  EXPECT_EQ(rows[0].who, "ana@ops");
  EXPECT_EQ(rows[0].result, "replaced by version 2");
  EXPECT_EQ(rows[1].what, "freeze the project");
  EXPECT_EQ(rows[1].result, "completed: release window");
  EXPECT_EQ(rows[2].what, "version 2: apply (2 services, 0123456789ab) [release]");
  EXPECT_EQ(rows[3].what, "reprovision web (apply) for version 2");
  EXPECT_EQ(rows[3].who, "mariposad (auto)");
  EXPECT_EQ(rows[3].result, "failed +2 -1: web-3 of web fails its health checks");
  EXPECT_EQ(rows[4].what, "version 3: rollback to version 1 (2 services, 0123456789ab)");
  EXPECT_EQ(rows[4].result, "current");
  EXPECT_EQ(rows[5].what, "reprovision the project for version 3");
  EXPECT_EQ(rows[5].result, "active");
  EXPECT_EQ(rows[5].when, "301");
}

TEST(History, EmptyIsEmpty) { EXPECT_TRUE(History({}, {}, {}, &Secs).empty()); }

v1::Event Event(int64_t index, int64_t at, const std::string& kind, const std::string& detail) {
  v1::Event e;
  e.set_index(index);
  e.mutable_time()->set_seconds(at);
  e.set_actor("mariposad");
  e.set_kind(kind);
  e.set_detail(detail);
  return e;
}

// mariposad's changes to FWAPI, NAPI and VOLAPI join the timeline: after
// the version and the task of the same instant, in their own order, each
// with its result.
TEST(History, ChangesToOtherResourcesAreInTheTimeline) {
  v1::Version v1 = Version(1, 100, "ana@ops");
  v1::Task scale = Task("scale", 100, "v1", "completed");
  auto rows = History({v1}, {scale},
                      {Event(9, 100, "fabric.network-created", "private (saturn-private, 10.60.0.0/24)"),
                       Event(8, 100, "fabric.vlan-created", "VLAN 60"),
                       Event(12, 150, "volume.change-failed", "data (saturn.data) not created: VOLAPI: 503"),
                       // Issue 48, 9: the same failure at each retry is one row, counted.
                       Event(13, 155, "volume.change-failed", "data (saturn.data) not created: VOLAPI: 503"),
                       Event(17, 165, "volume.change-failed", "data (saturn.data) not created: VOLAPI: 503"),
                       Event(14, 200, "project.delete-requested", "removed first: 2 instances; then the project"),
                       Event(15, 210, "volume.retained", "data (saturn.data v1) is kept with its data"),
                       Event(16, 210, "fabric.network-retained", "private (saturn-private n1) is kept")},
                      &Secs);
  std::vector<std::string> got;
  for (const HistoryRow& r : rows) got.push_back(absl::StrCat(r.when, " ", r.what, " => ", r.result));
  EXPECT_EQ(got, (std::vector<std::string>{
                     "100 version 1: apply (2 services, 0123456789ab) => current",
                     "100 scale the project for version 1 => completed",
                     "100 fabric vlan created VLAN 60 => done",
                     "100 fabric network created private (saturn-private, 10.60.0.0/24) => done",
                     "150 volume change failed data (saturn.data) not created: VOLAPI: 503 => failed (3 times, the "
                     "last at 165)",
                     "200 project delete requested removed first: 2 instances; then the project => requested",
                     "210 volume retained data (saturn.data v1) is kept with its data => kept",
                     "210 fabric network retained private (saturn-private n1) is kept => kept",
                 }));
}

}  // namespace
}  // namespace mariposa::cli
