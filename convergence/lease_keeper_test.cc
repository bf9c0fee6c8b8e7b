// The lease keeper against a real store: nodes joining share the projects
// without overlap, a dead node's projects are taken over with higher epochs
// once its leases expire, and a node that stops renewing stops acting
// before its leases run out. On SQLite with a simulated clock (the store's
// clock is the database's), and on PostgreSQL in real time with short TTLs.
#include "convergence/lease_keeper.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "projects/sql_store.h"
#include "tests/store_backends.h"

namespace mariposa::convergence {
namespace {

std::set<std::string> HeldBy(const LeaseKeeper& k) {
  std::set<std::string> out;
  for (const auto& h : k.HeldNow()) out.insert(h.project);
  return out;
}

std::unique_ptr<SqlProjectStore> OpenStore(const std::string& spec, const Clock* clock) {
  auto s = SqlProjectStore::OpenSpec(spec, clock);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(LeaseKeeperTest, NodesShareTakeOverAndStopActingInTime) {
  SimulatedClock clock;
  auto spec = testing::NewStoreSpec(testing::Backend::kSqlite);
  ASSERT_TRUE(spec.ok());
  auto store_a = OpenStore(*spec, &clock), store_b = OpenStore(*spec, &clock);
  ASSERT_TRUE(store_a && store_b);
  std::set<std::string> all;
  for (int i = 0; i < 20; ++i) {
    auto p = store_a->CreateProject(absl::StrCat("p", i), "", "alice");
    ASSERT_TRUE(p.ok());
    all.insert(p->uuid);
  }
  LeaseKeeperOptions oa{"node-a", "a:7740", LeasePolicy{}, absl::Seconds(1)};
  LeaseKeeperOptions ob{"node-b", "b:7740", LeasePolicy{}, absl::Seconds(1)};
  std::vector<std::string> gained_b;
  LeaseKeeper a(store_a.get(), &clock, oa, nullptr);
  LeaseKeeper b(store_b.get(), &clock, ob, [&](const std::string& p) { gained_b.push_back(p); });

  ASSERT_TRUE(a.RunOnce().ok());
  EXPECT_EQ(HeldBy(a), all);  // alone: every project
  ASSERT_TRUE(b.RunOnce().ok());
  EXPECT_TRUE(HeldBy(b).empty());  // held by a, not expired
  // a hands back what b outranks it on; b takes it at its next round.
  ASSERT_TRUE(a.RunOnce().ok());
  ASSERT_TRUE(b.RunOnce().ok());
  std::set<std::string> ha = HeldBy(a), hb = HeldBy(b);
  EXPECT_FALSE(ha.empty());
  EXPECT_FALSE(hb.empty());
  std::set<std::string> both = ha;
  both.insert(hb.begin(), hb.end());
  EXPECT_EQ(both, all);
  EXPECT_EQ(ha.size() + hb.size(), all.size()) << "a project held by two nodes";
  EXPECT_EQ(gained_b.size(), hb.size());
  for (const std::string& p : hb) {
    EXPECT_FALSE(a.Holds(p));
    ASSERT_TRUE(b.Holds(p));
    EXPECT_TRUE(store_b->CheckFence(*b.Holds(p)).ok());
  }
  // Renewals keep it so: rounds every second for a minute.
  for (int i = 0; i < 60; ++i) {
    clock.Advance(absl::Seconds(1));
    ASSERT_TRUE(a.RunOnce().ok());
    ASSERT_TRUE(b.RunOnce().ok());
  }
  EXPECT_EQ(HeldBy(a), ha);
  EXPECT_EQ(HeldBy(b), hb);
  // Both live, with where they serve (what health agents are told).
  using Addrs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(b.LiveAddresses(), (Addrs{{"node-a", "a:7740"}, {"node-b", "b:7740"}}));

  // a freezes (no more rounds: dead, paused or cut off). Before its leases
  // can expire it no longer acts on them, by its own clock alone.
  std::string some_a = *ha.begin();
  std::optional<Fence> old_fence = a.Holds(some_a);
  ASSERT_TRUE(old_fence);
  absl::Time last_renewal = clock.Now();
  clock.Advance(LeasePolicy{}.ttl - LeasePolicy{}.safety);
  EXPECT_FALSE(a.Holds(some_a)) << "a still acts " << absl::FormatDuration(clock.Now() - last_renewal)
                                << " after its last renewal";
  // b takes every project once a's heartbeat is old and its leases expired.
  clock.Advance(LeasePolicy{}.node_ttl);
  ASSERT_TRUE(b.RunOnce().ok());
  EXPECT_EQ(HeldBy(b), all);
  EXPECT_EQ(b.LiveAddresses(), (Addrs{{"node-b", "b:7740"}})) << "a dead node is no longer offered to agents";
  EXPECT_GT(b.Holds(some_a)->epoch, old_fence->epoch);
  // a, thawed, writes under its old fence: refused.
  EXPECT_EQ(store_a->CheckFence(*old_fence).code(), absl::StatusCode::kAborted);
  {
    ScopedFence f(*old_fence);
    EXPECT_EQ(store_a->PutControllerMemory(some_a, "stale").code(), absl::StatusCode::kAborted);
  }
  // a's next round sees it lost everything and takes back its share later.
  ASSERT_TRUE(a.RunOnce().ok());
  EXPECT_TRUE(HeldBy(a).empty());
}

// Real time on PostgreSQL: b joins and gets a share; a leaves (Stop) and b
// has every project within a couple of ticks; then b is killed (no Stop)
// and a fresh node c takes over after the TTL.
TEST(LeaseKeeperTest, TakeoverOnPostgres) {
  const Clock* clock = RealClock::Get();
  auto spec = testing::NewStoreSpec(testing::Backend::kPostgres);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto sa = OpenStore(*spec, clock), sb = OpenStore(*spec, clock), sc = OpenStore(*spec, clock);
  ASSERT_TRUE(sa && sb && sc);
  std::set<std::string> all;
  for (int i = 0; i < 12; ++i) {
    auto p = sa->CreateProject(absl::StrCat("p", i), "", "alice");
    ASSERT_TRUE(p.ok());
    all.insert(p->uuid);
  }
  LeasePolicy fast;
  fast.ttl = absl::Seconds(2);
  fast.renew_before = absl::Seconds(1);
  fast.node_ttl = absl::Seconds(2);
  fast.safety = absl::Milliseconds(500);
  auto wait_for = [&](const std::function<bool()>& done, absl::Duration limit) {
    absl::Time end = clock->Now() + limit;
    while (!done() && clock->Now() < end) clock->SleepFor(absl::Milliseconds(20));
    return done();
  };
  LeaseKeeper a(sa.get(), clock, {"node-a", "", fast, absl::Milliseconds(100)}, nullptr);
  a.Start();
  ASSERT_TRUE(wait_for([&] { return HeldBy(a) == all; }, absl::Seconds(5)));
  auto b = std::make_unique<LeaseKeeper>(sb.get(), clock, LeaseKeeperOptions{"node-b", "", fast, absl::Milliseconds(100)},
                                         nullptr);
  b->Start();
  ASSERT_TRUE(wait_for([&] { return !HeldBy(*b).empty() && HeldBy(a).size() + HeldBy(*b).size() == all.size(); },
                       absl::Seconds(5)));
  a.Stop();  // leaves: hands its leases back at once
  absl::Time left = clock->Now();
  ASSERT_TRUE(wait_for([&] { return HeldBy(*b) == all; }, absl::Seconds(5)));
  EXPECT_LT(clock->Now() - left, absl::Seconds(1)) << "a clean leave is taken over at the next rounds";
  // b dies without a word: its leases must expire first.
  absl::Time died = clock->Now();
  b->Stop(/*leave=*/false);
  LeaseKeeper c(sc.get(), clock, {"node-c", "", fast, absl::Milliseconds(100)}, nullptr);
  c.Start();
  ASSERT_TRUE(wait_for([&] { return HeldBy(c) == all; }, absl::Seconds(8)));
  EXPECT_LT(clock->Now() - died, fast.ttl + absl::Seconds(2));
  c.Stop();
}

}  // namespace
}  // namespace mariposa::convergence
