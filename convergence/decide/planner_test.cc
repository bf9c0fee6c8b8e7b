#include "convergence/decide/planner.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1800000000);

InstanceState I(const std::string& uuid, const std::string& state, const std::string& health, int64_t version,
                int age_s, const std::string& spec = "s1", const std::string& service = "web") {
  InstanceState i;
  i.uuid = uuid;
  i.service = service;
  i.state = state;
  i.health = health;
  i.spec_hash = spec;
  i.version = version;
  i.created = kNow - absl::Seconds(age_s);
  return i;
}

PlanInput Input(int64_t count, std::vector<InstanceState> instances, int rolling = 1, int surge = 1,
                const std::string& spec = "s1") {
  PlanInput in;
  in.services["web"] = ServiceGoal{"web", count, spec, rolling, surge};
  in.instances = std::move(instances);
  return in;
}

std::vector<std::string> Describe(const std::vector<Action>& actions) {
  std::vector<std::string> out;
  for (const auto& a : actions) {
    out.push_back(absl::StrCat(ActionKindName(a.kind), " ", a.service,
                               a.instance.empty() ? "" : " " + a.instance, " (", a.reason, ")"));
  }
  return out;
}

TEST(PlannerTest, Converged) {
  EXPECT_TRUE(Plan(Input(2, {I("a", "running", "healthy", 1, 100), I("b", "running", "healthy", 1, 100)}), kNow).empty());
}

TEST(PlannerTest, ScaleUpFromNothing) {
  EXPECT_EQ(Describe(Plan(Input(2, {}), kNow)),
            (std::vector<std::string>{"create web (scale-up)", "create web (scale-up)"}));
}

TEST(PlannerTest, ScaleDownVictimOrder) {
  // unhealthy first, then not started, then oldest version, then oldest instance.
  auto in = Input(1, {I("new-v2", "running", "healthy", 2, 10), I("old-v1", "running", "healthy", 1, 50),
                      I("older-v1", "running", "healthy", 1, 90), I("booting", "provisioning", "unknown", 2, 1),
                      I("sick", "running", "unhealthy", 2, 5)});
  // An unhealthy running instance is broken: it goes first, as a removal
  // that is not replaced (the count is already exceeded).
  EXPECT_EQ(Describe(Plan(in, kNow)),
            (std::vector<std::string>{"delete web sick (remove-broken)", "delete web booting (scale-down)",
                                      "delete web older-v1 (scale-down)", "delete web old-v1 (scale-down)"}));
  // The order itself: unhealthy, not started, oldest version, oldest instance.
  std::vector<const InstanceState*> live;
  for (const auto& i : in.instances) live.push_back(&i);
  std::vector<std::string> order;
  for (const InstanceState* i : VictimOrder(live)) order.push_back(i->uuid);
  EXPECT_EQ(order, (std::vector<std::string>{"sick", "booting", "older-v1", "old-v1", "new-v2"}));
}

TEST(PlannerTest, UnhealthyInstancesAreReplacedAndChecksGateReadiness) {
  auto in = Input(2, {I("ok", "running", "healthy", 1, 100), I("sick", "running", "unhealthy", 1, 100)});
  EXPECT_EQ(Describe(Plan(in, kNow)),
            (std::vector<std::string>{"delete web sick (remove-broken)", "create web (replace-broken)"}));
  // With checks, an old instance is replaced only once the new one is healthy,
  // however long it has run.
  auto roll = Input(1, {I("old", "running", "healthy", 1, 1000, "s0"), I("new", "running", "starting", 2, 1000)}, 1, 1);
  roll.reprovision = {"web"};
  for (auto& i : roll.instances) i.checked = true;
  EXPECT_TRUE(Plan(roll, kNow).empty());
  roll.instances[1].health = "healthy";
  EXPECT_EQ(Describe(Plan(roll, kNow)), (std::vector<std::string>{"delete web old (reprovision)"}));
}

TEST(PlannerTest, BrokenInstancesAreReplaced) {
  auto in = Input(3, {I("ok", "running", "healthy", 1, 100), I("crashed", "failed", "unknown", 1, 100),
                      I("killed", "stopped", "unknown", 1, 100), I("cn-down", "unknown", "unknown", 1, 100),
                      I("gone", "destroyed", "unknown", 1, 100)});
  EXPECT_EQ(Describe(Plan(in, kNow)),
            (std::vector<std::string>{"delete web cn-down (remove-broken)", "delete web crashed (remove-broken)",
                                      "delete web killed (remove-broken)", "create web (replace-broken)",
                                      "create web (replace-broken)"}));
}

TEST(PlannerTest, PreserveStoppedKeepsWhatLeavesTheService) {
  auto with = [](const std::string& preserve, std::vector<InstanceState> instances, int64_t count = 2) {
    PlanInput in = Input(count, std::move(instances));
    in.services["web"].preserve = preserve;
    in.services["web"].preserve_keep = 2;
    return Describe(Plan(in, kNow));
  };
  std::vector<InstanceState> one_broken = {I("a", "running", "healthy", 1, 100), I("b", "stopped", "unknown", 1, 100)};
  // never: destroyed; on-failure and always: kept, and replaced all the same.
  EXPECT_EQ(with("never", one_broken),
            (std::vector<std::string>{"delete web b (remove-broken)", "create web (replace-broken)"}));
  for (const char* p : {"on-failure", "always"}) {
    EXPECT_EQ(with(p, one_broken),
              (std::vector<std::string>{"preserve web b (remove-broken)", "create web (replace-broken)"}))
        << p;
  }
  // A scale-down keeps its victims only with `always`.
  std::vector<InstanceState> three = {I("a", "running", "healthy", 1, 100), I("b", "running", "healthy", 1, 90),
                                      I("c", "running", "healthy", 1, 80)};
  EXPECT_EQ(with("on-failure", three), (std::vector<std::string>{"delete web a (scale-down)"}));
  EXPECT_EQ(with("always", three), (std::vector<std::string>{"preserve web a (scale-down)"}));
  // Preserved instances count nowhere; beyond preserve_keep the oldest go.
  std::vector<InstanceState> kept = {I("p1", "preserved", "unknown", 1, 300), I("p2", "preserved", "unknown", 1, 200),
                                     I("p3", "preserved", "unknown", 1, 100), I("a", "running", "healthy", 1, 100),
                                     I("b", "running", "healthy", 1, 100)};
  EXPECT_EQ(with("on-failure", kept), (std::vector<std::string>{"delete web p1 (preserved-expired)"}));
  // The first preserved goes first, whatever the instances' age.
  kept[0].preserved_at = kNow - absl::Seconds(10);
  kept[1].preserved_at = kNow - absl::Seconds(30);
  kept[2].preserved_at = kNow - absl::Seconds(20);
  EXPECT_EQ(with("on-failure", kept), (std::vector<std::string>{"delete web p2 (preserved-expired)"}));
  for (InstanceState& i : kept) i.preserved_at = absl::InfinitePast();
  kept.pop_back();
  EXPECT_EQ(with("on-failure", kept),
            (std::vector<std::string>{"delete web p1 (preserved-expired)", "create web (scale-up)"}));
  // A removed service takes its preserved instances with it.
  PlanInput gone;
  gone.instances = {I("p1", "preserved", "unknown", 1, 300)};
  EXPECT_EQ(Describe(Plan(gone, kNow)), (std::vector<std::string>{"delete web p1 (service-removed)"}));
}

TEST(PlannerTest, InPlaceRolloutReprovisionsWithinTheFloor) {
  auto dataset = [](InstanceState i) {
    i.delegate_dataset = true;
    return i;
  };
  auto plan = [&](std::vector<InstanceState> instances, int rolling = 1, std::set<std::string> in_flight = {}) {
    PlanInput in = Input(3, std::move(instances), rolling, /*surge=*/1, "s2");
    in.services["web"].in_place = true;
    in.reprovision = {"web"};
    in.reprovisioning = std::move(in_flight);
    return Describe(Plan(in, kNow));
  };
  std::vector<InstanceState> old = {dataset(I("a", "running", "healthy", 1, 300)),
                                    dataset(I("b", "running", "healthy", 1, 200)),
                                    dataset(I("c", "running", "healthy", 1, 100))};
  // Oldest first, one at a time, nothing created (no surge in place).
  EXPECT_EQ(plan(old), (std::vector<std::string>{"reprovision web a (reprovision)"}));
  EXPECT_EQ(plan(old, 2), (std::vector<std::string>{"reprovision web a (reprovision)", "reprovision web b (reprovision)"}));
  // One in flight: the step is full.
  EXPECT_TRUE(plan(old, 1, {"a"}).empty());
  // Back on the new spec but not healthy yet: still the step's.
  std::vector<InstanceState> coming = old;
  coming[0].spec_hash = "s2";
  coming[0].health = "starting";
  EXPECT_TRUE(plan(coming).empty());
  coming[0].health = "healthy";
  EXPECT_EQ(plan(coming), (std::vector<std::string>{"reprovision web b (reprovision)"}));
  // An unhealthy instance lowers what may go at once (the floor holds).
  std::vector<InstanceState> sick = old;
  sick[2].health = "starting";
  sick[2].spec_hash = "s1";
  EXPECT_TRUE(plan(sick).empty());
  // Without a delegate dataset an instance is replaced (create first), and
  // the in-place ones wait for that.
  std::vector<InstanceState> mixed = old;
  mixed[1].delegate_dataset = false;
  EXPECT_EQ(plan(mixed), (std::vector<std::string>{"create web (reprovision)"}));
  // An instance on another image than the service's is outdated.
  PlanInput in = Input(1, {dataset(I("x", "running", "healthy", 1, 100, "s1"))}, 1, 1, "s1");
  in.services["web"].in_place = true;
  in.services["web"].image_uuid = "new-image";
  in.instances[0].image_uuid = "old-image";
  in.reprovision = {"web"};
  EXPECT_TRUE(Outdated(in.instances[0], in.services["web"]));
  // count 1, rolling 1: the floor is 0, the only instance goes down for it.
  EXPECT_EQ(Describe(Plan(in, kNow)), (std::vector<std::string>{"reprovision web x (reprovision)"}));
  in.instances[0].image_uuid = "new-image";
  EXPECT_TRUE(Plan(in, kNow).empty());
}

TEST(PlannerTest, RemovedServicesAreDeleted) {
  PlanInput in = Input(1, {I("a", "running", "healthy", 1, 100), I("x", "running", "healthy", 1, 100, "s1", "db")});
  EXPECT_EQ(Describe(Plan(in, kNow)), (std::vector<std::string>{"delete db x (service-removed)"}));
}

TEST(PlannerTest, RollingStepWaitsForHealth) {
  PlanInput in = Input(2, {I("a", "running", "healthy", 1, 100, "old"), I("b", "running", "healthy", 1, 90, "old")}, 1, 1,
                       "new");
  in.reprovision = {"web"};
  EXPECT_EQ(Describe(Plan(in, kNow)), (std::vector<std::string>{"create web (reprovision)"}));
  // The new one is not healthy yet: nothing more.
  in.instances.push_back(I("n1", "running", "starting", 2, 5, "new"));
  EXPECT_TRUE(Plan(in, kNow).empty());
  // Healthy: the oldest old instance goes, and (surge allowing) the next new one starts.
  in.instances.back().health = "healthy";
  EXPECT_EQ(Describe(Plan(in, kNow)),
            (std::vector<std::string>{"delete web a (reprovision)"}));
}

// Stale meta makes an instance of the current spec outdated: a reprovision
// replaces it like an older spec, and without one nothing happens to it.
TEST(PlannerTest, StaleMetaIsReplacedByAReprovisionOnly) {
  PlanInput in = Input(2, {I("a", "running", "healthy", 1, 100), I("b", "running", "healthy", 1, 90)});
  in.instances[0].stale_meta = true;
  EXPECT_TRUE(Plan(in, kNow).empty());
  in.reprovision = {"web"};
  EXPECT_EQ(Describe(Plan(in, kNow)), (std::vector<std::string>{"create web (reprovision)"}));
  in.instances.push_back(I("n1", "running", "healthy", 1, 5));
  EXPECT_EQ(Describe(Plan(in, kNow)), (std::vector<std::string>{"delete web a (reprovision)"}));
  EXPECT_TRUE(Outdated(in.instances[0], in.services.at("web")));
  EXPECT_FALSE(Outdated(in.instances[1], in.services.at("web")));
}

// Applies a step: creates land as provisioning at the goal spec, deletes remove.
void Apply(const std::vector<Action>& actions, const PlanInput& in, std::vector<InstanceState>* inst, int* next,
           int64_t version) {
  for (const auto& a : actions) {
    if (a.kind == ActionKind::kDelete) {
      inst->erase(std::remove_if(inst->begin(), inst->end(), [&](const InstanceState& i) { return i.uuid == a.instance; }),
                  inst->end());
    } else {
      inst->push_back(I(absl::StrCat("n", (*next)++), "provisioning", "unknown", version, 0,
                        in.services.at(a.service).spec_hash, a.service));
    }
  }
}

// QUEUE.md: scaling 35 -> 20 during a 5-at-a-time reprovision deletes the
// oldest old instances first and finishes in 4 batches, not 7.
TEST(PlannerTest, ScaleDownDuringRolloutFinishesInFourBatches) {
  PlanInput in;
  in.services["web"] = ServiceGoal{"web", 35, "new", 5, 5};
  in.reprovision = {"web"};
  std::vector<InstanceState> inst;
  for (int k = 0; k < 35; ++k) inst.push_back(I(absl::StrCat("o", k), "running", "healthy", 1, 1000 - k, "old"));
  int next = 0, batches = 0;
  for (int step = 0; step < 50; ++step) {
    if (step == 1) in.services["web"].count = 20;
    in.instances = inst;
    auto actions = Plan(in, kNow);
    if (actions.empty()) break;
    bool created = false;
    for (const auto& a : actions) created |= a.kind == ActionKind::kCreate;
    batches += created;
    if (step == 1) {
      // The scale-down takes the oldest old instances.
      ASSERT_EQ(actions[0].reason, "scale-down");
      EXPECT_EQ(actions[0].instance, "o0");
    }
    Apply(actions, in, &inst, &next, 2);
    for (auto& i : inst) {
      i.state = "running";
      i.health = "healthy";
    }
  }
  EXPECT_EQ(batches, 4);
  ASSERT_EQ(inst.size(), 20u);
  for (const auto& i : inst) EXPECT_EQ(i.spec_hash, "new");
}

// Randomized: rolling reprovisions (with scale changes in the middle) reach
// the goal; live instances never exceed count + max_surge; ready ones never
// drop below the floor; the oldest old instances go first.
TEST(PlannerTest, PropertyRollingReprovisionConverges) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    int64_t count = std::uniform_int_distribution<int>(1, 12)(rng);
    int rolling = std::uniform_int_distribution<int>(1, 4)(rng);
    int surge = std::uniform_int_distribution<int>(0, 3)(rng);
    PlanInput in;
    in.services["web"] = ServiceGoal{"web", count, "new", rolling, surge};
    in.reprovision = {"web"};
    std::vector<InstanceState> inst;
    for (int k = 0; k < count; ++k) {
      inst.push_back(I(absl::StrCat("o", k), "running", "healthy", 1, 1000 - k * 7, "old"));
    }
    int next = 0;
    int64_t floor = surge > 0 ? count : count - rolling;
    bool rescaled = false;
    int steps = 0;
    for (; steps < 200; ++steps) {
      // Sometimes the user scales in the middle of the rollout.
      if (!rescaled && steps == 2 && trial % 3 == 0) {
        count = std::uniform_int_distribution<int>(1, 12)(rng);
        in.services["web"].count = count;
        floor = surge > 0 ? count : count - rolling;
        rescaled = true;
      }
      in.instances = inst;
      std::vector<Action> actions = Plan(in, kNow);
      if (actions.empty()) break;
      // Reprovision deletes take the oldest old instances first.
      std::vector<std::string> old_sorted;
      for (const auto& i : inst) {
        if (i.spec_hash == "old") old_sorted.push_back(i.uuid);
      }
      int64_t live_before = static_cast<int64_t>(inst.size());
      int64_t creates = 0;
      for (const auto& a : actions) creates += a.kind == ActionKind::kCreate;
      int64_t deletes = static_cast<int64_t>(actions.size()) - creates;
      if (!rescaled || steps > 2) {
        ASSERT_LE(live_before + creates, std::max(count + surge, live_before)) << "surge exceeded, trial " << trial;
      }
      Apply(actions, in, &inst, &next, 2);
      int64_t ready = 0;
      for (const auto& i : inst) ready += i.state == "running" && i.health == "healthy";
      if (!rescaled) {
        ASSERT_GE(ready, std::min<int64_t>(floor, count)) << "availability below the floor, trial " << trial;
      }
      (void)deletes;
      // New instances become healthy by the next step.
      for (auto& i : inst) {
        i.state = "running";
        i.health = "healthy";
      }
    }
    ASSERT_LT(steps, 200) << "no convergence, trial " << trial;
    ASSERT_EQ(static_cast<int64_t>(inst.size()), count) << "trial " << trial;
    for (const auto& i : inst) ASSERT_EQ(i.spec_hash, "new") << "trial " << trial;
  }
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// Reprovision limited to some instances (filters, canary): only those are
// replaced, the others keep their old spec, and the count holds.
TEST(PlannerTest, FilteredReprovisionReplacesOnlyTheChosen) {
  std::vector<InstanceState> all;
  for (int k = 0; k < 4; ++k) all.push_back(I(absl::StrCat("old", k), "running", "unknown", 1, 1000 - k, "s0"));
  PlanInput in = Input(4, all, /*rolling=*/2, /*surge=*/2);
  in.reprovision = {"web"};
  in.reprovision_only["web"] = {"old1", "old3"};
  int guard = 0;
  absl::Time now = kNow;
  int next = 0;
  while (true) {
    auto actions = Plan(in, now);
    if (actions.empty()) break;
    ASSERT_LT(++guard, 20);
    for (const Action& a : actions) {
      ASSERT_NE(a.instance, "old0");
      ASSERT_NE(a.instance, "old2");
      if (a.kind == ActionKind::kCreate) {
        in.instances.push_back(I(absl::StrCat("new", next++), "running", "unknown", 2, 0, "s1"));
      } else {
        in.instances.erase(std::remove_if(in.instances.begin(), in.instances.end(),
                                          [&](const InstanceState& i) { return i.uuid == a.instance; }),
                           in.instances.end());
      }
    }
    now += absl::Minutes(2);  // past the start window: new instances count as ready
    for (auto& i : in.instances) i.created = std::min(i.created, now - absl::Minutes(2));
  }
  std::vector<std::string> left;
  for (const auto& i : in.instances) left.push_back(i.uuid);
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"new0", "new1", "old0", "old2"}));
}

TEST(PlannerTest, ReprovisionOrderIsOldestVersionThenOldestInstance) {
  std::vector<InstanceState> all = {I("v2-old", "running", "healthy", 2, 500, "s0"),
                                    I("v1-young", "running", "healthy", 1, 10, "s0"),
                                    I("v1-old", "running", "healthy", 1, 900, "s0"),
                                    I("current", "running", "healthy", 3, 5000, "s1"),
                                    I("stopped", "stopped", "unknown", 1, 9000, "s0"),
                                    I("booting", "provisioning", "unknown", 1, 9000, "s0")};
  ServiceGoal goal{"web", 4, "s1", 1, 1};
  std::vector<std::string> order;
  for (const InstanceState* i : ReprovisionOrder(all, goal)) order.push_back(i->uuid);
  EXPECT_EQ(order, (std::vector<std::string>{"v1-old", "v1-young", "v2-old"}));
}

TEST(PlannerTest, ThrottleHoldsReplacementsBeyondTheBudget) {
  std::vector<Action> plan = {{ActionKind::kDelete, "web", "a", "remove-broken"},
                              {ActionKind::kDelete, "web", "b", "remove-broken"},
                              {ActionKind::kDelete, "web", "c", "remove-broken"},
                              {ActionKind::kCreate, "web", "", "replace-broken"},
                              {ActionKind::kCreate, "web", "", "replace-broken"},
                              {ActionKind::kCreate, "web", "", "replace-broken"},
                              {ActionKind::kCreate, "web", "", "scale-up"},
                              {ActionKind::kCreate, "db", "", "replace-broken"}};
  std::vector<Action> held;
  auto run = Throttle(plan, {{"web", {1, false}}}, &held);
  EXPECT_EQ(Describe(run), (std::vector<std::string>{"delete web a (remove-broken)", "create web (replace-broken)",
                                                     "create web (scale-up)", "create db (replace-broken)"}));
  EXPECT_EQ(held.size(), 4u);

  held.clear();
  run = Throttle(plan, {{"web", {-1, true}}}, &held);
  EXPECT_EQ(Describe(run), (std::vector<std::string>{"create db (replace-broken)"}));
  EXPECT_EQ(held.size(), 7u);

  held.clear();
  run = Throttle(plan, {}, &held);
  EXPECT_EQ(run.size(), plan.size());
  EXPECT_TRUE(held.empty());
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

TEST(PlannerTest, StoppedServiceStopsWhatRunsAndReplacesNothing) {
  auto in = Input(3, {I("a", "running", "healthy", 1, 300), I("b", "running", "healthy", 1, 200),
                      I("c", "stopped", "unknown", 1, 100), I("d", "failed", "unknown", 1, 50)});
  in.services["web"].stopped = true;
  EXPECT_EQ(Describe(Plan(in, kNow)), (std::vector<std::string>{"stop web a (stop)", "stop web b (stop)"}));
  // Once all are stopped the plan is empty: nothing is replaced or created.
  in.instances = {I("a", "stopped", "unknown", 1, 300), I("b", "stopped", "unknown", 1, 200)};
  EXPECT_TRUE(Plan(in, kNow).empty());
}

TEST(PlannerTest, StartingStartsStoppedInstancesInsteadOfReplacingThem) {
  auto in = Input(3, {I("a", "stopped", "unknown", 1, 300), I("b", "stopped", "unknown", 1, 200),
                      I("c", "failed", "unknown", 1, 100)});
  // Without a start task, stopped instances are broken and replaced.
  EXPECT_EQ(Plan(in, kNow).size(), 6u);
  in.starting = {"web"};
  EXPECT_EQ(Describe(Plan(in, kNow)),
            (std::vector<std::string>{"start web a (start)", "start web b (start)", "delete web c (remove-broken)",
                                      "create web (replace-broken)"}));
  // More stopped than count: the extra ones are removed, not started.
  in = Input(1, {I("a", "stopped", "unknown", 1, 300), I("b", "stopped", "unknown", 2, 200)});
  in.starting = {"web"};
  EXPECT_EQ(Describe(Plan(in, kNow)), (std::vector<std::string>{"start web b (start)", "delete web a (scale-down)"}));
}

// PlanCache gives exactly Plan's actions, reusing a service's only while its
// goal, flags and instances are unchanged and no instance crosses its start
// window.
TEST(PlanCacheTest, SameAsPlanAndReusesUnchangedServices) {
  std::mt19937_64 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* kStates[] = {"running", "running", "running", "provisioning", "stopped", "failed", "unknown"};
  const char* kHealth[] = {"unknown", "healthy", "unhealthy", "starting"};
  PlanInput in;
  for (int s = 0; s < 20; ++s) {
    ServiceGoal g;
    g.name = absl::StrCat("svc", s);
    g.count = pick(0, 6);
    g.spec_hash = "h1";
    g.rolling = pick(1, 3);
    g.max_surge = pick(0, 2);
    g.start_window = absl::Seconds(30);
    in.services[g.name] = g;
    for (int k = 0; k < pick(0, 8); ++k) {
      InstanceState i;
      i.uuid = absl::StrCat(g.name, "-", k);
      i.service = g.name;
      i.state = kStates[pick(0, 6)];
      i.health = kHealth[pick(0, 3)];
      i.spec_hash = pick(0, 2) == 0 ? "h0" : "h1";
      i.version = pick(1, 3);
      i.created = kNow - absl::Seconds(pick(0, 60));
      in.instances.push_back(i);
    }
  }
  PlanCache cache;
  absl::Time now = kNow;
  for (int round = 0; round < 200; ++round) {
    // A change to one service, or to none; time moves a little.
    int what = pick(0, 5);
    std::string svc = absl::StrCat("svc", pick(0, 19));
    if (what == 0) in.services[svc].count = pick(0, 6);
    if (what == 1) in.services[svc].spec_hash = pick(0, 1) ? "h1" : "h2";
    if (what == 2) {
      if (in.reprovision.count(svc)) in.reprovision.erase(svc);
      else in.reprovision.insert(svc);
    }
    if (what == 3 && !in.instances.empty()) in.instances[pick(0, static_cast<int>(in.instances.size()) - 1)].state = kStates[pick(0, 6)];
    now += absl::Seconds(pick(0, 3));
    std::map<std::string, PlanCache::ServiceInput> services;
    std::vector<const InstanceState*> removed;
    for (const auto& kv : in.services) {
      PlanCache::ServiceInput& si = services[kv.first];
      for (const InstanceState& i : in.instances) {
        if (i.service == kv.first) si.instances.push_back(&i);
      }
      si.goal = kv.second;
      si.flags.reprovision = in.reprovision.count(kv.first) > 0;
      si.flags.deleting = &in.deleting;
      si.fingerprint = InstancesFingerprint(si.instances);
    }
    std::vector<Action> want = Plan(in, now);
    std::vector<Action> got = cache.Plan(services, removed, now);
    ASSERT_EQ(Describe(got), Describe(want)) << "round " << round;
    EXPECT_EQ(cache.planned() + cache.reused(), 20);
    if (round > 0 && what == 5) {
      EXPECT_GE(cache.reused(), 1) << round;
    }
  }
  // Nothing changed and no time passed: every service is reused.
  std::map<std::string, PlanCache::ServiceInput> same;
  for (const auto& kv : in.services) {
    std::vector<const InstanceState*> mine;
    for (const InstanceState& i : in.instances) {
      if (i.service == kv.first) mine.push_back(&i);
    }
    same[kv.first] = {kv.second, {in.reprovision.count(kv.first) > 0, nullptr, false, &in.deleting}, mine,
                      InstancesFingerprint(mine)};
  }
  cache.Plan(same, {}, now);
  cache.Plan(same, {}, now);
  EXPECT_EQ(cache.reused(), 20);
  // One count change: that service alone is planned again.
  same["svc3"].goal.count += 1;
  cache.Plan(same, {}, now);
  EXPECT_EQ(cache.planned(), 1);
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// An instance whose delete is in flight is neither live nor broken: the rest
// of the service is still planned around it (a refactoring once made one
// such instance end the service's plan, so nothing else was created until
// the delete finished).
TEST(PlannerTest, AnInstanceBeingDeletedDoesNotStopTheRestOfTheService) {
  auto in = Input(3, {I("going", "running", "healthy", 1, 100), I("ok", "running", "healthy", 1, 100)}, 1, 1);
  in.deleting = {"going"};
  // count 3, one live that stays, one going: the ceiling (count + 0) minus
  // the live one minus the one still running while it goes leaves one create.
  EXPECT_EQ(Describe(Plan(in, kNow)), (std::vector<std::string>{"create web (scale-up)"}));
  in.instances.push_back(I("dead", "failed", "unknown", 1, 100));
  EXPECT_EQ(Describe(Plan(in, kNow)),
            (std::vector<std::string>{"delete web dead (remove-broken)", "create web (replace-broken)"}));
}

}  // namespace
}  // namespace mariposa::convergence
