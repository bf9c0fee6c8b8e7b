// --max-jobs shared among projects: each project's fair share and which
// waiting projects a freed slot wakes (project_state.h).
#include "convergence/project_state.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

struct Other {
  std::string uuid;
  int in_flight = 0, reserved = 0;
  bool held = false, woken = false;
};

std::map<std::string, ProjectState> Projects(const std::vector<Other>& others) {
  std::map<std::string, ProjectState> m;
  for (const Other& o : others) {
    ProjectState& ps = m[o.uuid];
    ps.in_flight = o.in_flight;
    ps.reserved = o.reserved;
    ps.window_held = o.held;
    ps.wake_sent = o.woken;
  }
  return m;
}

// Watching, a create or a delete waits for its VM's item until it is
// feed_grace past the time its project's jobs take; polled, and every other
// job, is asked at each look.
TEST(AskJobNowTest, CreatesAndDeletesWaitForTheFeedUntilOverdue) {
  const absl::Time t0 = absl::FromUnixSeconds(1800000000);
  const absl::Duration grace = absl::Milliseconds(50);
  struct Case {
    std::string api, job_uuid, kind, instance;
    bool watching;
    absl::Duration age, took;
    bool ask;
  };
  const absl::Duration ms = absl::Milliseconds(1);
  const std::vector<Case> cases = {
      {"vmapi", "j", "create", "vm", true, 10 * ms, absl::ZeroDuration(), false},
      {"vmapi", "j", "create", "vm", true, 49 * ms, absl::ZeroDuration(), false},
      {"vmapi", "j", "create", "vm", true, 50 * ms, absl::ZeroDuration(), true},
      {"vmapi", "j", "create", "vm", true, 200 * ms, 200 * ms, false},  // jobs take 200 ms here
      {"vmapi", "j", "create", "vm", true, 250 * ms, 200 * ms, true},
      {"vmapi", "j", "delete", "vm", true, 10 * ms, absl::ZeroDuration(), false},
      {"vmapi", "j", "delete", "vm", true, 60 * ms, absl::ZeroDuration(), true},
      {"vmapi", "j", "create", "vm", false, 1 * ms, absl::ZeroDuration(), true},  // polled
      {"vmapi", "j", "start", "vm", true, 1 * ms, absl::ZeroDuration(), true},
      {"vmapi", "j", "stop", "vm", true, 1 * ms, absl::ZeroDuration(), true},
      {"vmapi", "j", "retag", "vm", true, 1 * ms, absl::ZeroDuration(), true},
      {"cnapi", "t", "install", "cn", true, 1 * ms, absl::ZeroDuration(), true},
      {"vmapi", "create:vm", "create", "vm", true, 1 * ms, absl::ZeroDuration(), true},  // no job: GatherJobs' own rule
      {"vmapi", "j", "create", "", true, 1 * ms, absl::ZeroDuration(), true},              // no VM to watch
  };
  for (const Case& c : cases) {
    JobRecord j;
    j.api = c.api;
    j.job_uuid = c.job_uuid;
    j.kind = c.kind;
    j.instance = c.instance;
    j.sent_at = t0;
    EXPECT_EQ(AskJobNow(j, c.watching, t0 + c.age, c.took, grace), c.ask)
        << c.api << " " << c.kind << " " << c.job_uuid << (c.watching ? " watched" : " polled") << ", "
        << absl::FormatDuration(c.age) << " old, jobs take " << absl::FormatDuration(c.took);
  }
}

// An agent project's servers: listed in full without a good listing and
// once it is full_observe old, except while a batch is busy (its CNAPI
// tasks ended in this sync, which sends the next, or still run) until the
// listing is kServersListingDeferral times that old.
TEST(ListServersInFullTest, TheSafetyNetWaitsForASyncThatSendsNoBatch) {
  const absl::Duration full = absl::Seconds(1), ms = absl::Milliseconds(1);
  struct Case {
    bool listed, failing;
    absl::Duration age;
    bool busy, in_full;
  };
  const std::vector<Case> cases = {
      {false, false, absl::InfiniteDuration(), false, true},  // never listed
      {false, false, absl::InfiniteDuration(), true, true},
      {true, true, 10 * ms, false, true},  // CNAPI failing: the listing is what says why
      {true, true, 10 * ms, true, true},
      {true, false, 10 * ms, false, false},
      {true, false, 999 * ms, true, false},
      {true, false, full, false, true},  // the safety net
      {true, false, full, true, false},  // put off: a batch ends or runs
      {true, false, kServersListingDeferral * full - ms, true, false},
      {true, false, kServersListingDeferral * full, true, true},  // no longer
      {true, false, 10 * full, true, true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ListServersInFull(c.listed, c.failing, c.age, full, c.busy), c.in_full)
        << (c.listed ? "listed " : "not listed ") << absl::FormatDuration(c.age) << " ago"
        << (c.failing ? ", CNAPI failing" : "") << (c.busy ? ", a batch busy" : "");
  }
}

TEST(FairJobShareTest, MaxMinFairAmongTheProjectsThatWantSlots) {
  struct Row {
    const char* what;
    int max_jobs, per_project;
    std::vector<Other> others;  // "me" is the project asked about
    int64_t share;
  } rows[] = {
      {"alone: the whole window up to its own", 64, 32, {{"me"}}, 32},
      {"idle projects take nothing", 64, 64, {{"me"}, {"a"}, {"b"}}, 64},
      {"one waiting: halves", 64, 64, {{"me"}, {"a", 0, 0, true}}, 32},
      {"nine waiting: a tenth, rounded up", 64, 64,
       {{"me"}, {"a", 0, 0, true}, {"b", 0, 0, true}, {"c", 0, 0, true}, {"d", 0, 0, true}, {"e", 0, 0, true},
        {"f", 0, 0, true}, {"g", 0, 0, true}, {"h", 0, 0, true}, {"i", 0, 0, true}},
       7},
      {"one holding little: the rest is mine", 64, 64, {{"me"}, {"a", 2, 0, false}}, 62},
      {"one holding much but not waiting: an equal share", 64, 64, {{"me"}, {"a", 60, 0, false}}, 32},
      {"reserved counts as held", 64, 64, {{"me"}, {"a", 0, 3, false}}, 61},
      {"little, much and waiting", 60, 60, {{"me"}, {"a", 6, 0, false}, {"b", 0, 0, true}}, 27},
      {"own window below the equal share", 64, 8, {{"me"}, {"a", 0, 0, true}}, 8},
      {"more waiting than slots: one each", 4, 4,
       {{"me"}, {"a", 0, 0, true}, {"b", 0, 0, true}, {"c", 0, 0, true}, {"d", 0, 0, true}, {"e", 0, 0, true}},
       1},
      {"my own jobs do not count against me", 64, 64, {{"me", 40, 0, false}, {"a", 0, 0, true}}, 32},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(FairJobShare(r.max_jobs, r.per_project, Projects(r.others), "me"), r.share) << r.what;
  }
}

TEST(FairJobShareTest, SharesOfWaitingProjectsNeverPassMaxJobsByMoreThanRounding) {
  for (int max_jobs : {1, 4, 7, 64, 100}) {
    for (int waiting = 1; waiting <= 12; ++waiting) {
      std::vector<Other> others;
      for (int i = 0; i < waiting; ++i) others.push_back({"p" + std::to_string(i), 0, 0, true});
      auto projects = Projects(others);
      int64_t sum = 0;
      for (int i = 0; i < waiting; ++i) {
        int64_t s = FairJobShare(max_jobs, max_jobs, projects, "p" + std::to_string(i));
        EXPECT_GE(s, 1);
        sum += s;
      }
      EXPECT_GE(sum, max_jobs) << "slots left unused: " << max_jobs << " among " << waiting;
      EXPECT_LT(sum, max_jobs + waiting) << max_jobs << " among " << waiting;
    }
  }
}

TEST(FreeJobSlotsTest, TheShareHoldsAProjectThatHasItsShareInFlight) {
  // "big" has 64 in flight (its own window is 80) and nine projects wait:
  // it sends nothing more until it is under its share, and says the others
  // hold it.
  std::vector<Other> others = {{"big", 64, 0, false}};
  for (int i = 0; i < 9; ++i) others.push_back({"w" + std::to_string(i), 0, 0, true});
  auto projects = Projects(others);
  JobWindow big = FreeJobSlots(64, 80, projects, "big", 64);
  EXPECT_EQ(big.free(), 0);
  EXPECT_TRUE(big.held_by_others());
  big = FreeJobSlots(64, 80, projects, "big", 3);
  EXPECT_EQ(big.free(), 4) << "share 7, 3 in flight";
  // A waiting one gets its share once big's jobs end.
  projects["big"].in_flight = 7;
  EXPECT_EQ(FreeJobSlots(64, 80, projects, "w0", 0).free(), 7);
}

TEST(HeldProjectsToWakeTest, WakesOnlyWhatCanUseTheFreeSlotsInTurn) {
  struct Row {
    const char* what;
    int max_jobs;
    std::vector<Other> projects;
    std::string after;
    std::vector<std::string> wake;
  } rows[] = {
      {"no slot free: nobody", 4, {{"a", 4, 0, false}, {"b", 0, 0, true}, {"c", 0, 0, true}}, "", {}},
      {"reserved slots are not free", 4, {{"a", 1, 3, false}, {"b", 0, 0, true}}, "", {}},
      {"one slot: one project", 4, {{"a", 3, 0, false}, {"b", 0, 0, true}, {"c", 0, 0, true}}, "", {"b"}},
      {"in turn after the last woken", 4, {{"a", 3, 0, false}, {"b", 0, 0, true}, {"c", 0, 0, true}}, "b", {"c"}},
      {"wrapping around", 4, {{"a", 3, 0, false}, {"b", 0, 0, true}, {"c", 0, 0, true}}, "c", {"b"}},
      {"not waiting: not woken", 4, {{"a", 0, 0, false}, {"b", 0, 0, false}}, "", {}},
      {"already woken: not again", 4, {{"a", 2, 0, false}, {"b", 0, 0, true, true}, {"c", 0, 0, true}}, "", {"c"}},
      {"enough for all", 64,
       {{"a", 8, 0, false}, {"b", 0, 0, true}, {"c", 0, 0, true}, {"d", 0, 0, true}},
       "",
       {"b", "c", "d"}},
      {"a waiting one at its share is not woken", 8, {{"a", 0, 0, true}, {"b", 4, 0, true}, {"c", 2, 0, false}}, "",
       {"a"}},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(HeldProjectsToWake(r.max_jobs, r.max_jobs, Projects(r.projects), r.after), r.wake) << r.what;
  }
}


// PlanJobPoll: when a project's jobs in flight are asked again.
TEST(PlanJobPollTest, Table) {
  const absl::Time t0 = absl::FromUnixSeconds(1000000);
  auto ms = [](int64_t n) { return absl::Milliseconds(n); };
  struct Row {
    const char* what;
    absl::Duration prev, took;
    int64_t prev_asked_ms, now_ms;  // from t0; -1: never asked
    std::vector<int64_t> ended_ms, running_ms;  // sent times, from t0
    absl::Duration want_after, want_took;
  };
  const Row rows[] = {
      {"nothing learned, none ended: the wait doubles", ms(8), ms(0), 100, 120, {}, {0}, ms(16), ms(0)},
      {"nothing learned: the doubling stops at the cap", ms(200), ms(0), 100, 120, {}, {0}, ms(250), ms(0)},
      {"one ended: asked again at once", ms(200), ms(0), 100, 120, {0}, {}, ms(1), ms(100)},
      {"one ended, seen running at the ask before: it took at least that", ms(250), ms(0), 755, 1005, {0}, {}, ms(1),
       ms(755)},
      {"a job sent after the ask before teaches nothing", ms(250), ms(900), 500, 1005, {600}, {}, ms(1), ms(900)},
      {"never asked before: nothing learned", ms(250), ms(0), -1, 1005, {0}, {}, ms(1), ms(0)},
      {"a job due before the doubling wait ends: asked when it is due", ms(250), ms(1000), 700, 755, {}, {0},
       ms(245), ms(1000)},
      {"a job due after the doubling wait ends: the doubling wait", ms(64), ms(1000), 700, 755, {}, {0}, ms(128),
       ms(1000)},
      {"a job just past due: asked again soon", ms(250), ms(1000), 995, 1000, {}, {0}, ms(5), ms(1000)},
      {"a job long past due: asked again after as long as it is late, up to the doubling wait", ms(16), ms(1000),
       1200, 1300, {}, {0}, ms(32), ms(1000)},
      {"a job 40 ms late with a long doubling wait: after 40 ms", ms(250), ms(1000), 1000, 1040, {}, {0}, ms(40),
       ms(1000)},
      {"the batch just sent: asked when its first job is due", ms(1), ms(1000), 1005, 1010, {0}, {1010, 1012},
       ms(1), ms(1005)},
      {"of several in flight, the next due counts", ms(250), ms(1000), 1300, 1310, {}, {400, 390, 900}, ms(80),
       ms(1000)},
  };
  for (const Row& r : rows) {
    JobPollInput in;
    in.prev = r.prev;
    in.took = r.took;
    in.prev_asked = r.prev_asked_ms < 0 ? absl::InfinitePast() : t0 + ms(r.prev_asked_ms);
    in.now = t0 + ms(r.now_ms);
    for (int64_t e : r.ended_ms) in.ended_sent.push_back(t0 + ms(e));
    for (int64_t e : r.running_ms) in.running_sent.push_back(t0 + ms(e));
    JobPollPlan p = PlanJobPoll(in);
    EXPECT_EQ(p.after, r.want_after) << r.what;
    EXPECT_EQ(p.took, r.want_took) << r.what;
  }
}

// The wait without PlanJobPoll's cut: doubling while no job ends.
absl::Duration DoublingOnly(const JobPollInput& in) {
  return in.ended_sent.empty() ? std::min(std::max(in.prev * 2, in.first), in.cap) : in.first;
}

// Properties: the wait is never longer than the doubling wait alone and
// never shorter than `first`; and a rollout of batches that each take 1 s is
// seen ending within a few milliseconds after a few batches, where the
// doubling wait alone sees each up to 250 ms late.
TEST(PlanJobPollTest, NeverLongerThanDoublingAndARolloutIsSeenOnTime) {
  const absl::Time t0 = absl::FromUnixSeconds(1000000);
  uint32_t seed = 7;
  auto rnd = [&seed](int64_t n) {
    seed = seed * 1103515245u + 12345u;
    return static_cast<int64_t>((seed >> 8) % static_cast<uint32_t>(n));
  };
  for (int k = 0; k < 2000; ++k) {
    JobPollInput in;
    in.prev = absl::Milliseconds(rnd(300));
    in.took = absl::Milliseconds(rnd(3) == 0 ? 0 : rnd(5000));
    in.prev_asked = t0 + absl::Milliseconds(rnd(10000));
    in.now = in.prev_asked + absl::Milliseconds(rnd(3000));
    for (int n = rnd(4); n > 0; --n) in.ended_sent.push_back(t0 + absl::Milliseconds(rnd(12000)));
    for (int n = rnd(6); n > 0; --n) in.running_sent.push_back(t0 + absl::Milliseconds(rnd(12000)));
    JobPollPlan p = PlanJobPoll(in);
    EXPECT_LE(p.after, DoublingOnly(in));
    EXPECT_GE(p.after, in.first);
  }

  // 50 batches, each sent when the one before was seen ending, each job
  // ending 1,100 ms after it was sent; each ask takes no time.
  auto rollout = [&](bool plan) {
    absl::Duration late_total;
    absl::Duration prev, took;
    absl::Time prev_asked = absl::InfinitePast();
    absl::Time now = t0;
    int asks = 0;
    for (int batch = 0; batch < 50; ++batch) {
      absl::Time sent = now, ends = sent + absl::Milliseconds(1100);
      prev = absl::Milliseconds(1);
      std::vector<absl::Time> ended, running = {sent};
      while (true) {
        JobPollInput in;
        in.prev = prev;
        in.took = took;
        in.prev_asked = prev_asked;
        in.now = now;
        in.ended_sent = ended;
        in.running_sent = running;
        JobPollPlan p = PlanJobPoll(in);
        if (!plan) p.after = DoublingOnly(in);
        prev = p.after;
        took = p.took;
        if (!ended.empty()) break;
        prev_asked = now;
        now += p.after;  // the next ask
        ++asks;
        if (now >= ends) {
          ended = {sent};
          running.clear();
          late_total += now - ends;
        }
      }
    }
    return std::make_pair(late_total / 50, asks);
  };
  auto [late_doubling, asks_doubling] = rollout(false);
  auto [late_planned, asks_planned] = rollout(true);
  EXPECT_GE(late_doubling, absl::Milliseconds(100)) << "the doubling wait alone";
  EXPECT_LE(late_planned, absl::Milliseconds(20)) << "planned: " << late_planned;
  EXPECT_LE(asks_planned, asks_doubling + 3 * 50) << "at most a few more asks per batch";
}

}  // namespace
}  // namespace mariposa::convergence
