// The goal of a stored version as this data center runs it (issue 52): a
// version that lists data centers gives this one's entry, and a mariposad
// without --datacenter refuses it instead of reading "nothing runs here".
#include "convergence/decide/goal.h"

#include "common/clock.h"
#include "gtest/gtest.h"
#include "projects/projects_service.h"
#include "projects/sql_store.h"

namespace mariposa::convergence {
namespace {

TEST(GoalCacheTest, AVersionThatListsDataCentersIsRunAsThisOnesEntry) {
  SimulatedClock clock;
  auto store = std::move(*SqlProjectStore::Open(":memory:", &clock));
  ProjectsService projects(store.get(), &clock);
  projects.set_datacenter("west");
  // As a rollout across data centers stores it here.
  v1::ReceiveVersionRequest req;
  req.set_project("p");
  req.set_manifest(
      "project: p\nservices:\n  web: {image: nginx@1, package: small, count: 3}\n"
      "datacenters:\n  - name: east\n  - name: west\n    services: {web: {count: 1, package: large}}\n");
  req.set_version_uuid("6d1f2c3a-0b9e-4c1d-8e7f-2a3b4c5d6e7f");
  auto resp = projects.ReceiveHere(req, "peer");
  ASSERT_TRUE(resp.ok()) << resp.status();
  const std::string project = resp->version().project_uuid(), version = resp->version().uuid();

  GoalCache west;
  west.set_datacenter("west");
  auto goal = west.Get(store.get(), project, version);
  ASSERT_TRUE(goal.ok()) << goal.status();
  EXPECT_EQ((*goal)->services.at("web").record.count, 1);
  EXPECT_EQ((*goal)->services.at("web").spec.count, 1);
  EXPECT_EQ((*goal)->services.at("web").spec.package, "large");

  GoalCache nameless;
  auto refused = nameless.Get(store.get(), project, version);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("restart it with --datacenter NAME"), std::string::npos);
}

}  // namespace
}  // namespace mariposa::convergence
