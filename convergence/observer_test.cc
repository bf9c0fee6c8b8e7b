#include "convergence/observer.h"

#include <algorithm>

#include "convergence/triton/fake_clients.h"
#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

triton::Vm V(const std::string& uuid, const std::string& state, std::map<std::string, std::string> tags) {
  triton::Vm v;
  v.uuid = uuid;
  v.state = state;
  v.tags = std::move(tags);
  v.create_timestamp = "2026-11-22T12:00:00.250Z";
  return v;
}

TEST(ObserverTest, OnlyTheProjectsOwnVms) {
  triton::FakeVmapiClient vmapi;
  vmapi.PutVm(V("a", "running", {{kTagProject, "p1"}, {kTagService, "web"}, {kTagVersion, "v2"}, {kTagSpec, "h"}}));
  vmapi.PutVm(V("b", "failed", {{kTagProject, "p1"}, {kTagService, "web"}, {kTagVersion, "v-gone"}}));
  vmapi.PutVm(V("c", "destroyed", {{kTagProject, "p1"}, {kTagService, "web"}}));
  vmapi.PutVm(V("other", "running", {{kTagProject, "p2"}, {kTagService, "web"}}));
  vmapi.PutVm(V("hand-made", "running", {{kTagProject, "p1"}}));  // no service tag
  vmapi.PutVm(V("untagged", "running", {}));
  Observer obs(&vmapi);
  auto got = obs.ObserveProject("p1", {{"v1", 1}, {"v2", 2}});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  const InstanceState& a = (*got)[0];
  EXPECT_EQ(a.uuid, "a");
  EXPECT_EQ(a.service, "web");
  EXPECT_EQ(a.state, "running");
  EXPECT_EQ(a.health, "unknown");
  EXPECT_EQ(a.spec_hash, "h");
  EXPECT_EQ(a.version, 2);
  EXPECT_EQ(a.created, absl::FromUnixMillis(1795348800250));
  EXPECT_EQ((*got)[1].version, 0);  // unknown version uuid: oldest
  // The query asked VMAPI for the project's tag only.
  EXPECT_EQ(vmapi.calls().back(), "ListVms");
}

TEST(ObserverTest, VmapiErrorsCarryContext) {
  triton::FakeVmapiClient vmapi;
  vmapi.FailNext("ListVms", absl::UnavailableError("vmapi ListVms: 503 ServiceUnavailable"));
  Observer obs(&vmapi);
  auto got = obs.ObserveProject("p1", {});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(got.status().message(), "observing project p1: vmapi ListVms: 503 ServiceUnavailable");
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

std::vector<std::string> Uuids(const std::vector<InstanceState>& got) {
  std::vector<std::string> out;
  for (const auto& i : got) out.push_back(i.uuid);
  std::sort(out.begin(), out.end());
  return out;
}

// Read service by service in parallel; a VM of a service that is not asked
// for (it left the manifest) makes the counts disagree and everything is
// read in one listing, so nothing is missed.
TEST(ObserverTest, ParallelPerServiceFallsBackWhenCountsDisagree) {
  triton::FakeVmapiClient vmapi;
  vmapi.PutVm(V("w1", "running", {{kTagProject, "p1"}, {kTagService, "web"}}));
  vmapi.PutVm(V("w2", "failed", {{kTagProject, "p1"}, {kTagService, "web"}}));
  vmapi.PutVm(V("d1", "running", {{kTagProject, "p1"}, {kTagService, "db"}}));
  vmapi.PutVm(V("x", "running", {{kTagProject, "p2"}, {kTagService, "db"}}));
  Observer obs(&vmapi);
  auto got = obs.ObserveProject("p1", {}, {"web", "db"}, 4);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Uuids(*got), (std::vector<std::string>{"d1", "w1", "w2"}));
  int lists = 0;
  for (const auto& c : vmapi.calls()) lists += c == "ListVms";
  EXPECT_EQ(lists, 3);  // one per service and the count (the fake counts by listing); no fallback

  vmapi.PutVm(V("old", "running", {{kTagProject, "p1"}, {kTagService, "cache"}}));  // not in the manifest
  vmapi.ClearCalls();
  got = obs.ObserveProject("p1", {}, {"web", "db"}, 4);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Uuids(*got), (std::vector<std::string>{"d1", "old", "w1", "w2"}));
  lists = 0;
  for (const auto& c : vmapi.calls()) lists += c == "ListVms";
  EXPECT_EQ(lists, 4);  // the same three, then the full listing
}

}  // namespace
}  // namespace mariposa::convergence
