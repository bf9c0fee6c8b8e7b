#include "convergence/decide/agents.h"

#include <algorithm>

namespace mariposa::convergence {
namespace {

bool Named(const std::vector<std::string>& list, const triton::Server& s) {
  for (const std::string& n : list) {
    if (n == s.uuid || n == s.hostname || (n == "headnode" && s.headnode)) return true;
  }
  return false;
}

}  // namespace

AgentGoal AgentGoalFor(const std::string& service, const ServiceSpec& spec, const triton::Image& image) {
  AgentGoal goal;
  goal.service = service;
  goal.name = image.name;
  goal.version = image.version;
  goal.image_uuid = image.uuid;
  if (spec.servers) {
    goal.select = spec.servers->select;
    goal.servers = spec.servers->servers;
    goal.exclude = spec.servers->exclude;
  }
  goal.rolling = std::max(1, spec.update_rolling);
  return goal;
}

std::vector<const triton::Server*> SelectServers(const AgentGoal& goal, const std::vector<triton::Server>& servers) {
  std::vector<const triton::Server*> out;
  for (const triton::Server& s : servers) {
    if (!s.setup) continue;
    bool selected = goal.select == "all" || (goal.select == "headnode" && s.headnode) ||
                    (goal.select == "list" && Named(goal.servers, s));
    if (selected && !Named(goal.exclude, s)) out.push_back(&s);
  }
  return out;
}

bool ExcludedBy(const AgentGoal& goal, const triton::Server& s) { return Named(goal.exclude, s); }

const triton::Agent* AgentOn(const AgentGoal& goal, const triton::Server& s) {
  const triton::Agent* found = nullptr;
  for (const triton::Agent& a : s.agents) {
    if (a.name == goal.name) found = &a;
  }
  return found;
}

bool AgentCurrent(const AgentGoal& goal, const triton::Agent* a) {
  return a != nullptr && (a->image_uuid.empty() ? a->version == goal.version : a->image_uuid == goal.image_uuid);
}

AgentPlan PlanAgents(const AgentGoal& goal, const std::vector<triton::Server>& servers) {
  AgentPlan plan;
  std::vector<const triton::Server*> todo;
  for (const triton::Server* sp : SelectServers(goal, servers)) {
    const triton::Server& s = *sp;
    plan.selected++;
    bool again = goal.reinstall.count(s.uuid) > 0;
    if (AgentCurrent(goal, AgentOn(goal, s))) {
      plan.current++;
      if (!again) continue;
      plan.reinstall++;
    } else {
      plan.outdated++;
    }
    if (goal.skip.count(s.uuid)) {
      plan.skipped++;
      continue;
    }
    if (s.status != "running") {
      plan.unreachable++;
      continue;
    }
    todo.push_back(&s);
  }
  std::sort(todo.begin(), todo.end(), [](const triton::Server* a, const triton::Server* b) {
    return a->hostname != b->hostname ? a->hostname < b->hostname : a->uuid < b->uuid;
  });
  for (size_t i = 0; i < todo.size() && static_cast<int>(i) < std::max(1, goal.rolling); ++i) {
    plan.install_on.push_back(todo[i]->uuid);
  }
  return plan;
}

}  // namespace mariposa::convergence
