#include "convergence/decide/agents.h"

#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

triton::Server S(const std::string& host, const std::string& status, bool headnode,
                 std::vector<triton::Agent> agents) {
  triton::Server s;
  s.uuid = "uuid-" + host;
  s.hostname = host;
  s.status = status;
  s.headnode = headnode;
  s.agents = std::move(agents);
  return s;
}

const triton::Agent kOld{"cn-agent", "2.13.0", "", "a1"};
const triton::Agent kNew{"cn-agent", "2.14.1", "img-new", "a2"};
const triton::Agent kNewByVersion{"cn-agent", "2.14.1", "", "a3"};

AgentGoal Goal() {
  AgentGoal g;
  g.service = "cn-agent";
  g.name = "cn-agent";
  g.image_uuid = "img-new";
  g.version = "2.14.1";
  g.rolling = 2;
  return g;
}

TEST(AgentsTest, RollsOutToOutdatedRunningServersRollingAtATime) {
  std::vector<triton::Server> servers = {S("hn", "running", true, {kOld}),       S("cn3", "running", false, {kOld}),
                                         S("cn1", "running", false, {kNew}),     S("cn2", "running", false, {}),
                                         S("cn4", "unknown", false, {kOld}),     S("cn5", "running", false, {kNewByVersion}),
                                         S("cn6", "running", false, {kOld})};
  AgentGoal g = Goal();
  g.exclude = {"headnode"};
  AgentPlan p = PlanAgents(g, servers);
  EXPECT_EQ(p.selected, 6);
  EXPECT_EQ(p.current, 2);      // cn1 by image, cn5 by version
  EXPECT_EQ(p.outdated, 4);     // cn2 (none), cn3, cn4, cn6
  EXPECT_EQ(p.unreachable, 1);  // cn4 is down
  EXPECT_EQ(p.install_on, (std::vector<std::string>{"uuid-cn2", "uuid-cn3"}));
}

TEST(AgentsTest, SelectsHeadnodeOrAList) {
  std::vector<triton::Server> servers = {S("hn", "running", true, {kOld}), S("cn1", "running", false, {kOld}),
                                         S("cn2", "running", false, {kOld})};
  AgentGoal g = Goal();
  g.select = "headnode";
  EXPECT_EQ(PlanAgents(g, servers).install_on, (std::vector<std::string>{"uuid-hn"}));
  g.select = "list";
  g.servers = {"cn2", "uuid-hn"};
  g.exclude = {"uuid-hn"};
  AgentPlan p = PlanAgents(g, servers);
  EXPECT_EQ(p.selected, 1);
  EXPECT_EQ(p.install_on, (std::vector<std::string>{"uuid-cn2"}));
}

TEST(AgentsTest, NothingToDoWhenCurrent) {
  AgentPlan p = PlanAgents(Goal(), {S("cn1", "running", false, {kNew})});
  EXPECT_TRUE(p.install_on.empty());
  EXPECT_EQ(p.current, 1);
}

}  // namespace
}  // namespace mariposa::convergence
