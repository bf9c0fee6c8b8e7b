// --max-jobs shared among projects: each project's fair share and which
// waiting projects a freed slot wakes (project_state.h).
#include "convergence/project_state.h"

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

}  // namespace
}  // namespace mariposa::convergence
