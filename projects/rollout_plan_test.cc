// The decisions of a rollout across data centers (rollout_plan.h), as
// tables: the order, the canary, max_parallel, what an answer changes, a
// failure (stop / rollback), a data center that does not answer.
#include "projects/rollout_plan.h"

#include "gtest/gtest.h"

namespace mariposa {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1800000000);

RolloutRecord Rollout(std::vector<std::pair<std::string, std::string>> steps, int parallel = 1,
                      const std::string& on_failure = "stop", bool canary_first = false) {
  RolloutRecord r;
  r.uuid = "r1";
  r.project = "shop";
  r.max_parallel = parallel;
  r.on_failure = on_failure;
  for (const auto& [dc, state] : steps) {
    RolloutStep s;
    s.datacenter = dc;
    s.state = state;
    s.number = state == "pending" ? 0 : 4;
    s.previous_version = "prev-" + dc;
    s.last_answer = kNow - absl::Seconds(1);
    r.steps.push_back(s);
  }
  if (canary_first) r.steps[0].canary = true;
  return r;
}

std::vector<std::string> Sends(const RolloutDecision& d) {
  std::vector<std::string> out;
  for (const auto& a : d.actions) {
    if (a.kind == RolloutAction::kSend) out.push_back(a.datacenter);
  }
  return out;
}

std::vector<std::string> States(const RolloutDecision& d) {
  std::vector<std::string> out;
  for (const auto& s : d.next.steps) out.push_back(s.state);
  return out;
}

DataCenterAnswer At(int64_t version, bool converged, const std::string& failed = "") {
  DataCenterAnswer a;
  a.answered = true;
  a.version = version;
  a.converged = converged;
  a.failed = failed;
  return a;
}

TEST(RolloutPlanTest, WhatIsSentNext) {
  struct Case {
    const char* name;
    RolloutRecord r;
    std::map<std::string, DataCenterAnswer> answers;
    std::vector<std::string> sends;
  };
  const Case cases[] = {
      {"first one first", Rollout({{"a", "pending"}, {"b", "pending"}, {"c", "pending"}}), {}, {"a"}},
      {"two at a time", Rollout({{"a", "pending"}, {"b", "pending"}, {"c", "pending"}}, 2), {}, {"a", "b"}},
      {"the canary alone, whatever max_parallel",
       Rollout({{"a", "pending"}, {"b", "pending"}, {"c", "pending"}}, 3, "stop", true), {}, {"a"}},
      {"the canary converged: the rest, two at a time",
       Rollout({{"a", "sent"}, {"b", "pending"}, {"c", "pending"}}, 2, "stop", true), {{"a", At(4, true)}},
       {"b", "c"}},
      {"nothing until the one before converged", Rollout({{"a", "sent"}, {"b", "pending"}}),
       {{"a", At(4, false)}}, {}},
      {"next once it converged", Rollout({{"a", "sent"}, {"b", "pending"}}), {{"a", At(4, true)}}, {"b"}},
      {"converged at an older version is not this one", Rollout({{"a", "sent"}, {"b", "pending"}}),
       {{"a", At(3, true)}}, {}},
      {"a silent one holds the rest", Rollout({{"a", "sent"}, {"b", "pending"}}),
       {{"a", DataCenterAnswer{false, "connection refused"}}}, {}},
      {"a window slides", Rollout({{"a", "converged"}, {"b", "sent"}, {"c", "pending"}, {"d", "pending"}}, 2),
       {{"b", At(4, false)}}, {"c"}},
  };
  for (const Case& c : cases) {
    RolloutDecision d = DecideRollout(c.r, c.answers, kNow);
    EXPECT_EQ(Sends(d), c.sends) << c.name;
    EXPECT_EQ(d.next.state, "active") << c.name;
  }
}

TEST(RolloutPlanTest, AllConvergedCompletes) {
  RolloutDecision d = DecideRollout(Rollout({{"a", "converged"}, {"b", "sent"}}), {{"b", At(4, true)}}, kNow);
  EXPECT_EQ(d.next.state, "completed");
  EXPECT_EQ(d.next.message, "converged in every data center: a, b");
  EXPECT_TRUE(d.actions.empty());
  EXPECT_EQ(d.events.back(), "rollout completed: converged in every data center: a, b");
}

TEST(RolloutPlanTest, AFailureStopsTheRest) {
  RolloutDecision d = DecideRollout(Rollout({{"a", "converged"}, {"b", "sent"}, {"c", "pending"}}),
                                    {{"b", At(4, false, "web failed: image not found")}}, kNow);
  EXPECT_EQ(d.next.state, "failed");
  EXPECT_EQ(States(d), (std::vector<std::string>{"converged", "failed", "not started"}));
  EXPECT_TRUE(d.actions.empty());
  EXPECT_EQ(d.next.steps[2].detail, "b failed; its version there is unchanged");
  EXPECT_NE(d.next.message.find("b failed: web failed: image not found; a keeps the new version"), std::string::npos)
      << d.next.message;
}

TEST(RolloutPlanTest, OnFailureRollbackTakesTheFinishedOnesBack) {
  RolloutRecord r = Rollout({{"a", "converged"}, {"b", "converged"}, {"c", "sent"}, {"d", "pending"}}, 1, "rollback");
  r.steps[1].previous_version = "";  // new there: nothing to go back to
  RolloutDecision d = DecideRollout(r, {{"c", At(4, false, "web paused: crash loop")}}, kNow);
  EXPECT_EQ(d.next.state, "failed");
  ASSERT_EQ(d.actions.size(), 1u);
  EXPECT_EQ(d.actions[0].kind, RolloutAction::kRollback);
  EXPECT_EQ(d.actions[0].datacenter, "a");
  EXPECT_EQ(d.actions[0].to_version, "prev-a");
  EXPECT_EQ(States(d), (std::vector<std::string>{"rolled-back", "converged", "failed", "not started"}));
  EXPECT_NE(d.next.steps[1].detail.find("kept: the project was new there"), std::string::npos);
  EXPECT_NE(d.next.message.find("rolled back in a; b keeps the new version"), std::string::npos) << d.next.message;
}

TEST(RolloutPlanTest, AVersionAppliedThereSinceFailsItsPart) {
  RolloutDecision d = DecideRollout(Rollout({{"a", "sent"}, {"b", "pending"}}), {{"a", At(5, true)}}, kNow);
  EXPECT_EQ(d.next.state, "failed");
  EXPECT_EQ(d.next.steps[0].detail, "superseded: version 5 was applied there after this rollout's version 4");
}

TEST(RolloutPlanTest, ASilentDataCenterIsUnknownWithTheAgeOfItsLastAnswer) {
  RolloutRecord r = Rollout({{"a", "sent"}, {"b", "pending"}});
  r.steps[0].last_answer = kNow - absl::Minutes(2);
  RolloutDecision d = DecideRollout(r, {{"a", DataCenterAnswer{false, "connection refused"}}}, kNow);
  EXPECT_EQ(d.next.state, "active");
  EXPECT_EQ(d.next.steps[0].state, "sent");
  EXPECT_EQ(d.next.steps[0].last_answer, kNow - absl::Minutes(2));
  EXPECT_EQ(d.next.steps[0].detail, "no answer (last 2m ago): connection refused");
  EXPECT_EQ(StepLine(d.next.steps[0], kNow),
            "a: unknown (last answer 2m ago), version 4: no answer (last 2m ago): connection refused");
  // It answers again: caught up.
  d = DecideRollout(d.next, {{"a", At(4, true)}}, kNow + absl::Seconds(1));
  EXPECT_EQ(d.next.steps[0].state, "converged");
  EXPECT_EQ(Sends(d), std::vector<std::string>{"b"});
}

TEST(RolloutPlanTest, WhatASendLeaves) {
  RolloutRecord r = Rollout({{"a", "pending"}, {"b", "pending"}});
  EXPECT_EQ(AfterSend(&r, "a", SendResult{true, 7, "v6", "", ""}, kNow), "a: sent (stored as version 7; converging)");
  EXPECT_EQ(r.steps[0].state, "sent");
  EXPECT_EQ(r.steps[0].number, 7);
  EXPECT_EQ(r.steps[0].previous_version, "v6");
  EXPECT_EQ(AfterSend(&r, "b", SendResult{false, 0, "", "", "connection refused"}, kNow), "");
  EXPECT_EQ(r.steps[1].state, "pending");  // tried again at the next look
  EXPECT_EQ(r.steps[1].detail, "not reached (tried again at the next look): connection refused");
  EXPECT_EQ(AfterSend(&r, "b", SendResult{false, 0, "", "package large does not exist", ""}, kNow),
            "b: failed (refused the version: package large does not exist)");
  EXPECT_EQ(DecideRollout(r, {}, kNow).next.state, "failed");
}

TEST(RolloutPlanTest, AnEndedRolloutIsLeftAlone) {
  RolloutRecord r = Rollout({{"a", "pending"}});
  r.state = "cancelled";
  RolloutDecision d = DecideRollout(r, {}, kNow);
  EXPECT_TRUE(d.actions.empty());
  EXPECT_EQ(d.next.state, "cancelled");
}

}  // namespace
}  // namespace mariposa
