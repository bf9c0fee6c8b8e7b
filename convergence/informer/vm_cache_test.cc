#include "convergence/informer/vm_cache.h"

#include <algorithm>

#include "absl/synchronization/mutex.h"
#include "convergence/informer/observer.h"
#include "convergence/triton/fake_clients.h"
#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1795348800);

triton::Vm V(const std::string& uuid, const std::string& state, absl::Time modified, const std::string& project = "p1") {
  triton::Vm v;
  v.uuid = uuid;
  v.state = state;
  v.tags = {{kTagProject, project}, {kTagService, "web"}, {kTagVersion, "v1"}};
  v.create_timestamp = "2026-11-22T12:00:00.000Z";
  v.last_modified = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", modified, absl::UTCTimeZone());
  return v;
}

VmScope Scope(const std::string& project = "p1") { return VmScope{project, project, {}, {"web"}, {{"v1", 1}}}; }

std::vector<std::string> Uuids(const std::vector<InstanceState>& v) {
  std::vector<std::string> out;
  for (const InstanceState& i : v) out.push_back(i.uuid);
  std::sort(out.begin(), out.end());
  return out;
}

size_t Lists(const triton::FakeVmapiClient& vmapi) {
  auto c = vmapi.calls();
  return std::count(c.begin(), c.end(), "ListVms");
}

struct Fixture {
  explicit Fixture(VmCacheOptions o = {}) : cache(&vmapi, o, Hooks()) {}
  VmCacheHooks Hooks() {
    return VmCacheHooks{[this](const absl::Status& st) {
                          absl::MutexLock l(&mu);
                          notes.push_back(st);
                        },
                        [this](const std::string& p) {
                          absl::MutexLock l(&mu);
                          missed.push_back(p);
                        }};
  }
  // A sync: take or list, apply the feed, put back at `now`.
  std::vector<InstanceState> Sync(absl::Time now, bool* took = nullptr) {
    std::vector<InstanceState> got;
    bool unreadable = false;
    auto t = cache.Take(Scope(), now, &got, &unreadable);
    EXPECT_FALSE(unreadable);
    if (took != nullptr) *took = t.has_value();
    absl::Time listed_at = t ? t->listed_at : now;
    if (!t) {
      EXPECT_TRUE(cache.List(Scope(), &got).ok());
    }
    cache.ApplyFeed(Scope(), &got);
    std::vector<InstanceState> copy = got;
    cache.PutBack("p1", listed_at, std::move(got), now);
    return copy;
  }
  triton::FakeVmapiClient vmapi;
  absl::Mutex mu;
  std::vector<absl::Status> notes;
  std::vector<std::string> missed;
  VmCache cache;
};

// Polling: a kept listing serves the syncs within full_observe, then the
// project is listed again; nothing kept before the first sync.
TEST(VmCacheTest, PollingKeepsAListingForFullObserveOnly) {
  Fixture f(VmCacheOptions{absl::Seconds(1), absl::Minutes(5), absl::Seconds(10), 1});
  f.vmapi.PutVm(V("a", "running", kT0));
  bool took = true;
  EXPECT_EQ(Uuids(f.Sync(kT0, &took)), std::vector<std::string>{"a"});
  EXPECT_FALSE(took);
  EXPECT_EQ(Lists(f.vmapi), 1u);
  f.vmapi.PutVm(V("b", "running", kT0));
  EXPECT_EQ(Uuids(f.Sync(kT0 + absl::Milliseconds(500), &took)), std::vector<std::string>{"a"});
  EXPECT_TRUE(took);  // the kept listing: VMAPI not asked
  EXPECT_EQ(Lists(f.vmapi), 1u);
  EXPECT_EQ(Uuids(f.Sync(kT0 + absl::Seconds(1), &took)), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(took);
  EXPECT_EQ(Lists(f.vmapi), 2u);
}

// Watching: the feed's items keep the listing current; items of projects
// not synced here, or without the project tag, are dropped; `status`
// shows what waits for the next sync.
TEST(VmCacheTest, WatchedListingFollowsTheFeed) {
  Fixture f;
  f.cache.FeedChanged(triton::VmFeedStatus{true, kT0 - absl::Seconds(1), ""});
  f.vmapi.PutVm(V("a", "running", kT0));
  f.Sync(kT0);
  std::set<std::string> got = f.cache.VmsChanged(
      {V("b", "running", kT0 + absl::Seconds(1)), V("x", "running", kT0, "p-elsewhere"), triton::Vm{}});
  EXPECT_EQ(got, std::set<std::string>{"p1"});
  std::vector<InstanceState> shown;
  absl::Time at;
  ASSERT_TRUE(f.cache.LastObservation(Scope(), false, &shown, &at));
  EXPECT_EQ(Uuids(shown), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(at, kT0);
  EXPECT_FALSE(f.cache.LastObservation(Scope(), true, &shown, &at));  // VMAPI failing: nothing claimed
  // An older item than the listing read is skipped; a destroyed VM leaves.
  f.cache.VmsChanged({V("a", "stopped", kT0 - absl::Seconds(5)), V("b", "destroyed", kT0 + absl::Seconds(2))});
  bool took = false;
  std::vector<InstanceState> now = f.Sync(kT0 + absl::Minutes(1), &took);
  EXPECT_TRUE(took);
  ASSERT_EQ(Uuids(now), std::vector<std::string>{"a"});
  EXPECT_EQ(now[0].state, "running");
  EXPECT_EQ(Lists(f.vmapi), 1u);
  EXPECT_EQ(f.cache.Current({"p1", "p2"}, kT0 + absl::Minutes(2)), std::set<std::string>{"p1"});
  f.cache.VmsChanged({V("c", "running", kT0 + absl::Minutes(2))});
  EXPECT_TRUE(f.cache.Current({"p1"}, kT0 + absl::Minutes(2)).empty());  // an item waits
  EXPECT_NE(f.cache.WatchSummary().find("watching VMAPI's change feed"), std::string::npos);
}

// The states the feed showed, until a sync applies them: what a pump round
// reads before asking VMAPI about its jobs.
TEST(VmCacheTest, FeedStatesAreTheItemsNotYetApplied) {
  Fixture f;
  f.cache.FeedChanged(triton::VmFeedStatus{true, kT0 - absl::Seconds(1), ""});
  EXPECT_EQ(f.cache.FeedStates("p1", {"a"}), std::vector<std::string>{""});  // nothing kept yet
  f.Sync(kT0);
  f.cache.VmsChanged({V("a", "provisioning", kT0 + absl::Seconds(1)), V("a", "running", kT0 + absl::Seconds(2)),
                      V("b", "destroyed", kT0 + absl::Seconds(1)), V("c", "running", kT0, "p2")});
  EXPECT_EQ(f.cache.FeedStates("p1", {"a", "b", "c", "d"}), (std::vector<std::string>{"running", "destroyed", "", ""}));
  f.Sync(kT0 + absl::Seconds(3));  // applied to the listing: no longer the feed's to tell
  EXPECT_EQ(f.cache.FeedStates("p1", {"a", "b"}), (std::vector<std::string>{"", ""}));
}

// Watching, a listing older than `relist` is read again beside the syncs;
// the sync after it ends takes it, with the items since applied.
TEST(VmCacheTest, RelistReplacesTheKeptListingWithItemsSince) {
  Fixture f(VmCacheOptions{absl::Seconds(1), absl::Minutes(5), absl::ZeroDuration(), 1});
  f.cache.FeedChanged(triton::VmFeedStatus{true, kT0 - absl::Seconds(1), ""});
  f.vmapi.PutVm(V("a", "running", kT0));
  f.Sync(kT0);
  f.vmapi.PutVm(V("lost", "running", kT0 + absl::Minutes(1)));  // a change the feed never brought
  bool took = false;
  EXPECT_EQ(Uuids(f.Sync(kT0 + absl::Minutes(6), &took)), std::vector<std::string>{"a"});
  EXPECT_TRUE(took);  // aged, but watched: kept while the relist runs
  // An item while the relist is asked for: the sync in between applies it
  // to the old listing, and the relisted one must get it too.
  f.cache.VmsChanged({V("new", "running", kT0 + absl::Minutes(6))});
  EXPECT_EQ(Uuids(f.Sync(kT0 + absl::Minutes(6) + absl::Seconds(30))), (std::vector<std::string>{"a", "new"}));
  f.cache.Start();
  f.cache.WaitIdle();
  EXPECT_EQ(Lists(f.vmapi), 2u);
  std::vector<InstanceState> now = f.Sync(kT0 + absl::Minutes(7), &took);
  EXPECT_TRUE(took);
  EXPECT_EQ(Uuids(now), (std::vector<std::string>{"a", "lost", "new"}));
  EXPECT_EQ(Lists(f.vmapi), 2u);
  f.cache.Stop();
}

// The digest names VMs the feed missed; the project is woken and its next
// sync reads them again; one that is not the project's is not read again.
TEST(VmCacheTest, DigestFindsWhatTheFeedMissed) {
  Fixture f(VmCacheOptions{absl::Seconds(1), absl::Minutes(5), absl::Seconds(10), 1});
  f.cache.Start();
  f.cache.FeedChanged(triton::VmFeedStatus{true, kT0 - absl::Seconds(1), ""});
  f.vmapi.PutVm(V("a", "running", kT0));
  f.Sync(kT0);
  f.vmapi.PutVm(V("a", "stopped", kT0 + absl::Seconds(20)));  // the feed missed it
  f.cache.ScheduleAudits({{"p1", {}}}, kT0 + absl::Seconds(5));  // just listed: not yet
  f.cache.WaitIdle();
  EXPECT_TRUE(f.missed.empty());
  f.cache.ScheduleAudits({{"p1", {}}}, kT0 + absl::Seconds(30));
  f.cache.WaitIdle();
  EXPECT_EQ(f.missed, std::vector<std::string>{"p1"});
  std::vector<InstanceState> now = f.Sync(kT0 + absl::Seconds(31));
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].state, "stopped");
  f.cache.Stop();
}

// A project forgotten (its lease went elsewhere, it was deleted) keeps
// nothing: feed items are dropped, a sync lists again, a put-back is lost.
TEST(VmCacheTest, ForgetDropsEverything) {
  Fixture f;
  f.cache.FeedChanged(triton::VmFeedStatus{true, kT0 - absl::Seconds(1), ""});
  f.vmapi.PutVm(V("a", "running", kT0));
  f.Sync(kT0);
  f.cache.Forget("p1");
  EXPECT_TRUE(f.cache.VmsChanged({V("b", "running", kT0)}).empty());
  f.cache.PutBack("p1", kT0, {}, kT0);  // a sync that ended after the Forget
  std::vector<InstanceState> got;
  bool unreadable = false;
  EXPECT_FALSE(f.cache.Take(Scope(), kT0, &got, &unreadable).has_value());
}

// A VMAPI that fails: noted, nothing kept, and `status` claims nothing.
TEST(VmCacheTest, FailedListingIsNoted) {
  Fixture f;
  f.vmapi.FailNext("ListVms", absl::UnavailableError("down"));
  std::vector<InstanceState> got;
  EXPECT_FALSE(f.cache.List(Scope(), &got).ok());
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_TRUE(absl::IsUnavailable(f.notes[0]));
  f.cache.PutBack("p1", absl::InfinitePast(), {}, kT0);
  absl::Time at;
  EXPECT_FALSE(f.cache.LastObservation(Scope(), false, &got, &at));
}

}  // namespace
}  // namespace mariposa::convergence
