#include "projects/admission.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace mariposa {
namespace {

using ::testing::HasSubstr;

TaskInfo T(const std::string& uuid, TaskKind kind, std::set<std::string> services = {}) {
  TaskInfo t;
  t.uuid = uuid;
  t.kind = kind;
  t.services = std::move(services);
  t.frozen_by = "alice";
  t.frozen_since = "2026-11-22T10:00:00Z";
  return t;
}

enum class Want { kReject, kTerminate, kFifo, kConcurrent };

// One test per cell of QUEUE.md's table (rows: existing; columns: added).
struct Cell {
  TaskKind existing, added;
  Want want;
};

class TableTest : public ::testing::TestWithParam<Cell> {};

TEST_P(TableTest, Cell) {
  const Cell& c = GetParam();
  TaskInfo incoming = T("new", c.added);
  Admission a = Admit({T("old", c.existing)}, incoming);
  switch (c.want) {
    case Want::kReject:
      EXPECT_EQ(a.verdict, Verdict::kReject);
      EXPECT_THAT(a.message, HasSubstr("old"));  // names the blocking task
      break;
    case Want::kTerminate:
      EXPECT_EQ(a.verdict, Verdict::kAccept);
      EXPECT_EQ(a.terminate, std::vector<std::string>{"old"});
      EXPECT_TRUE(a.wait_for.empty());
      break;
    case Want::kFifo:
      EXPECT_EQ(a.verdict, Verdict::kAccept);
      EXPECT_TRUE(a.terminate.empty());
      EXPECT_EQ(a.wait_for, std::vector<std::string>{"old"});
      break;
    case Want::kConcurrent:
      EXPECT_EQ(a.verdict, Verdict::kAccept);
      EXPECT_TRUE(a.terminate.empty());
      EXPECT_TRUE(a.wait_for.empty());
      break;
  }
}

constexpr TaskKind S = TaskKind::kStart, P = TaskKind::kStop, C = TaskKind::kScale, R = TaskKind::kReprovision,
                   F = TaskKind::kFreeze, N = TaskKind::kRun;
constexpr Want X = Want::kReject, K = Want::kTerminate, Q = Want::kFifo, Y = Want::kConcurrent;

// The freeze row as QUEUE.md reads it for user commands is covered below;
// this row is the explicit --thaw case, where the freeze is terminated.
INSTANTIATE_TEST_SUITE_P(Queue, TableTest,
                         ::testing::Values(
                             Cell{S, S, X}, Cell{S, P, K}, Cell{S, C, Q}, Cell{S, R, Q}, Cell{S, F, K},  //
                             Cell{P, S, X}, Cell{P, P, X}, Cell{P, C, X}, Cell{P, R, X}, Cell{P, F, K},  //
                             Cell{C, S, Q}, Cell{C, P, K}, Cell{C, C, X}, Cell{C, R, Y}, Cell{C, F, K},  //
                             Cell{R, S, Q}, Cell{R, P, K}, Cell{R, C, Y}, Cell{R, R, K}, Cell{R, F, K},  //
                             // A run goes with every other kind (run.concurrency decides between
                             // runs); a freeze, and `queue terminate`, end it.
                             Cell{N, S, Y}, Cell{N, P, Y}, Cell{N, C, Y}, Cell{N, R, Y}, Cell{N, F, K}, Cell{N, N, Y},
                             Cell{S, N, Y}, Cell{P, N, Y}, Cell{C, N, Y}, Cell{R, N, Y}));

TEST(AdmissionTest, FreezeRowTerminatesOnlyWithThaw) {
  for (TaskKind k : {S, P, C, R, N}) {
    TaskInfo in = T("new", k);
    Admission refused = Admit({T("fz", F)}, in);
    EXPECT_EQ(refused.verdict, Verdict::kReject) << KindName(k);
    EXPECT_THAT(refused.message, HasSubstr("project is frozen since 2026-11-22T10:00:00Z by alice"));
    EXPECT_THAT(refused.message, HasSubstr("thaw first"));
    in.thaw = true;
    Admission thawed = Admit({T("fz", F)}, in);
    EXPECT_EQ(thawed.verdict, Verdict::kAccept) << KindName(k);
    EXPECT_EQ(thawed.terminate, std::vector<std::string>{"fz"});
  }
  // freeze + freeze: reject.
  EXPECT_EQ(Admit({T("fz", F)}, T("new", F)).verdict, Verdict::kReject);
}

TEST(AdmissionTest, AutomaticTasksAreNeverCreatedInAFrozenScope) {
  TaskInfo in = T("auto", C, {"web"});
  in.automatic = true;
  in.auto_kind = "replace-unhealthy";
  in.thaw = true;  // ignored for automatic work
  EXPECT_EQ(Admit({T("fz", F, {"web", "db"})}, in).verdict, Verdict::kReject);
  // A freeze of other services does not apply.
  EXPECT_EQ(Admit({T("fz", F, {"db"})}, in).verdict, Verdict::kAccept);
  // --only: just the named kinds of automatic work are suspended.
  TaskInfo only = T("fz", F);
  only.only = {"reprovision"};
  EXPECT_EQ(Admit({only}, in).verdict, Verdict::kAccept);
  only.only = {"replace-unhealthy"};
  EXPECT_EQ(Admit({only}, in).verdict, Verdict::kReject);
  // ... and user commands pass an --only freeze.
  EXPECT_EQ(Admit({only}, T("user", R)).verdict, Verdict::kAccept);
}

TEST(AdmissionTest, ScopesThatDoNotOverlapNeverInteract) {
  EXPECT_EQ(Admit({T("stop-db", P, {"db"})}, T("scale-web", C, {"web"})).verdict, Verdict::kAccept);
  EXPECT_EQ(Admit({T("stop-db", P, {"db"})}, T("scale-all", C)).verdict, Verdict::kReject);  // project overlaps all
  EXPECT_TRUE(Overlaps({}, {"x"}));
  EXPECT_FALSE(Overlaps({"a"}, {"b"}));
  EXPECT_TRUE(Overlaps({"a", "b"}, {"b", "c"}));
}

TEST(AdmissionTest, SeveralExistingTasksCombine) {
  // A scale and a reprovision run together; a stop terminates both.
  Admission a = Admit({T("sc", C), T("rp", R)}, T("stop", P));
  EXPECT_EQ(a.verdict, Verdict::kAccept);
  EXPECT_EQ(a.terminate, (std::vector<std::string>{"sc", "rp"}));
  // A start waits for both.
  a = Admit({T("sc", C), T("rp", R)}, T("start", S));
  EXPECT_EQ(a.wait_for, (std::vector<std::string>{"sc", "rp"}));
  // Any rejection wins and names its task.
  a = Admit({T("rp", R), T("stopping", P)}, T("scale", C));
  EXPECT_EQ(a.verdict, Verdict::kReject);
  EXPECT_THAT(a.message, HasSubstr("stop task stopping"));
  EXPECT_THAT(a.message, HasSubstr("mariposa queue terminate stopping"));
}

}  // namespace
}  // namespace mariposa
