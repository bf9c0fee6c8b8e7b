// mariposad's feed reader (convergence/triton/vm_feed) against tritonsim's
// change feed: of several items of one VM that arrive together only the last
// is read whole and handed over, with the VM as it is now (issue 49: a mass
// scale publishes two items per VM, provisioning then running).
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "convergence/triton/vm_feed.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

constexpr char kVm[] = "d0c0e000-0000-4000-8000-000000000001";  // imgapi0 of the example seed

TEST(VmFeedTest, OfAVmsItemsThatArriveTogetherOnlyTheLastIsRead) {
  Tritonsim sim({"--servers", "1", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "0"});
  ASSERT_TRUE(sim.Start()) << sim.log();
  absl::Mutex mu;
  std::vector<std::vector<triton::Vm>> batches;
  triton::VmFeedOptions o;
  o.vmapi_url = sim.addr();
  o.instance = "vm-feed-test";
  o.clock = RealClock::Get();
  o.coalesce = absl::Seconds(1);  // what arrives within a second after a delivery comes together
  triton::VmFeed feed(
      o,
      [&](std::vector<triton::Vm> vms) {
        absl::MutexLock l(&mu);
        batches.push_back(std::move(vms));
      },
      [](const triton::VmFeedStatus&) {});
  feed.Start();
  ASSERT_TRUE(Eventually([&] { return feed.status().watching; }, absl::Seconds(10)));
  httplib::Client c(sim.addr());
  auto tag = [&](int n) {
    auto r = c.Post(absl::StrCat("/vms/", kVm, "/tags"), json{{"n", absl::StrCat(n)}}.dump(), "application/json");
    return r && r->status / 100 == 2;
  };
  auto delivered = [&](int n) {
    absl::MutexLock l(&mu);
    for (const auto& b : batches) {
      for (const triton::Vm& vm : b) {
        auto t = vm.tags.find("n");
        if (vm.uuid == kVm && t != vm.tags.end() && t->second == absl::StrCat(n)) return true;
      }
    }
    return false;
  };
  // One change, handed over at once; the reader then waits a second.
  ASSERT_TRUE(tag(0));
  ASSERT_TRUE(Eventually([&] { return delivered(0); }, absl::Seconds(10)));
  size_t before;
  {
    absl::MutexLock l(&mu);
    before = batches.size();
  }
  const uint64_t superseded = feed.status().superseded, items = feed.status().items;
  // Five more meanwhile: they arrive together.
  for (int n = 1; n <= 5; ++n) ASSERT_TRUE(tag(n));
  ASSERT_TRUE(Eventually([&] { return delivered(5); }, absl::Seconds(10)));
  feed.Stop();
  for (int n = 1; n <= 4; ++n) EXPECT_FALSE(delivered(n)) << "item " << n << " was read although item 5 came with it";
  absl::MutexLock l(&mu);
  ASSERT_EQ(batches.size(), before + 1);
  ASSERT_EQ(batches.back().size(), 1u) << "the VM once, as it is now";
  EXPECT_EQ(feed.status().items - items, 5u);
  EXPECT_EQ(feed.status().superseded - superseded, 4u);
}

}  // namespace
}  // namespace mariposa::testing
