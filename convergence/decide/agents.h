// Agents (compute_type: agent): one instance per selected server, installed
// through CNAPI and tracked in the servers' `agents` lists (RFD 82). The
// rollout planner is pure; thread-safe.
#ifndef MARIPOSA_CONVERGENCE_AGENTS_H_
#define MARIPOSA_CONVERGENCE_AGENTS_H_

#include <set>
#include <string>
#include <vector>

#include "convergence/triton/clients.h"
#include "projects/manifest.h"

namespace mariposa::convergence {

struct AgentGoal {
  std::string service;
  std::string name;        // the agent's name: the image name (cn-agent)
  std::string image_uuid;  // the image to run
  std::string version;     // its version
  std::string select = "all";          // all | headnode | list
  std::vector<std::string> servers;    // select == list: uuids or hostnames
  std::vector<std::string> exclude;    // "headnode", uuids or hostnames
  int rolling = 1;                     // servers updated at a time
  std::set<std::string> skip;          // server uuids not tried again (too many failed installs)
  // Server uuids installed again although current (a forced reinstall).
  std::set<std::string> reinstall;
};

struct AgentPlan {
  std::vector<std::string> install_on;  // server uuids for this step (at most `rolling`)
  int reinstall = 0;                    // current servers still to be installed again (goal.reinstall)
  int selected = 0;                     // servers the service covers
  int current = 0;                      // of them, running the goal's image
  int outdated = 0;                     // running another version, or none
  int unreachable = 0;                  // outdated on a server that is not running
  int skipped = 0;                      // outdated on a server in goal.skip
};

// The goal of agent service `service` with `image`.
AgentGoal AgentGoalFor(const std::string& service, const ServiceSpec& spec, const triton::Image& image);

// The set-up servers `goal` selects and does not exclude, in their order.
std::vector<const triton::Server*> SelectServers(const AgentGoal& goal, const std::vector<triton::Server>& servers);

// `s` is in goal.exclude (by uuid, hostname or "headnode").
bool ExcludedBy(const AgentGoal& goal, const triton::Server& s);

// The goal's agent on `s`, or null when it is not installed there.
const triton::Agent* AgentOn(const AgentGoal& goal, const triton::Server& s);

// `a` (the goal's agent on a server, or null) runs the goal's image, or,
// when it reports no image uuid, the goal's version.
bool AgentCurrent(const AgentGoal& goal, const triton::Agent* a);

// Selects the servers and picks the next `rolling` outdated, reachable ones
// (by hostname). An agent is current when its image uuid is the goal's, or,
// when the server does not report an image uuid, its version is.
AgentPlan PlanAgents(const AgentGoal& goal, const std::vector<triton::Server>& servers);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_AGENTS_H_
