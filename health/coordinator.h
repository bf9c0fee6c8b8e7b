// The health coordinator in mariposad (HEALTH.md "Agents"): it holds every
// check the controller wants run, shards them over the live health agents by
// rendezvous hashing of the instance (all checks of one instance go to one
// agent; each agent takes only targets on its networks), hands each agent
// the changes of its share, and keeps the health of every check as the
// owning agent reports it.
//
//   - An agent that disconnects, or is silent for longer than the lease, is
//     dropped: its checks move to the others at once (only those; rendezvous
//     hashing moves nothing else). Their last known state is kept until the
//     new owner reports, so a move causes no spurious change.
//   - An agent that reconnects (same id) gets its share back and its
//     known states are accepted for the checks it owns again.
//   - Reports for checks an agent does not own (a stale agent still
//     checking after a partition) are ignored, so each check has one voice.
//
// Pure bookkeeping: no threads and no gRPC (HealthAgentsService carries it
// over the wire); times come from the injected clock. Thread-safe.
#ifndef MARIPOSA_HEALTH_COORDINATOR_H_
#define MARIPOSA_HEALTH_COORDINATOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/rendezvous.h"
#include "health/target.h"

namespace mariposa::health {

struct AgentHello {
  std::string id;                     // stable across restarts (hostname by default)
  std::vector<std::string> networks;  // what it can reach; empty = every network
  std::string grpc_addr, metrics_addr;
};

// Periodic counters an agent sends (also its heartbeat).
struct AgentCounters {
  int64_t checks_run = 0, checks_failed = 0;
  int64_t assigned = 0;
  double lateness_p99_ms = 0;
};

// What an agent must change: `reset` = drop everything not in `add`.
struct Assignment {
  bool reset = false;
  std::vector<std::pair<std::string, Target>> add;     // (group, target), new or changed
  std::vector<std::pair<std::string, std::string>> remove;  // (group, instance/check)
  bool empty() const { return !reset && add.empty() && remove.empty(); }
};

// Agents are chosen per instance by RendezvousScore(agent, instance)
// (common/rendezvous.h).
using ::mariposa::RendezvousScore;

class Coordinator {
 public:
  // `on_changes` runs (outside the lock) with the changes of a check's state
  // as the coordinator sees them, and flapping reports: once per agent
  // message that has any, so that they can be stored in one transaction.
  using OnChanges = std::function<void(const std::vector<HealthChange>&)>;
  Coordinator(const Clock* clock, absl::Duration lease, OnChanges on_changes);

  // --- The controller's side (same shape as HealthMonitor's).
  // Replaces the targets of `group`; unchanged ones keep their state.
  void Assign(const std::string& group, std::vector<Target> targets);
  std::optional<Health> InstanceHealth(const std::string& instance) const;
  // The worst state of the instance's checks for one purpose (Target's
  // readiness, liveness); nullopt when it has none for it.
  enum class Purpose { kReadiness, kLiveness };
  std::optional<Health> InstanceHealth(const std::string& instance, Purpose purpose) const;
  struct CheckStatus {
    std::string instance, check, type, address;
    int port = 0;
    Health state = Health::kUnknown;
    std::string last_detail;  // the last failing change's reason ("" once healthy)
    absl::Time since = absl::InfinitePast();  // when the state was last changed
    std::string agent;        // who checks it ("" = no live agent can)
  };
  std::vector<CheckStatus> Checks(const std::string& group) const;

  // --- The agents' side. Connect returns a session number; every later call
  // names it, and calls of a replaced or dropped session do nothing.
  uint64_t Connect(const AgentHello& hello);
  void Disconnect(const std::string& agent, uint64_t session);
  // A message arrived: the agent is alive. False if the session is over.
  bool Touch(const std::string& agent, uint64_t session, const AgentCounters* counters = nullptr);
  // State changes (from == to: a state it already knew) from the agent.
  void Report(const std::string& agent, uint64_t session, const std::vector<HealthChange>& changes);
  // Waits up to `wait` for work for the agent. nullopt: the session is over.
  std::optional<Assignment> TakeAssignment(const std::string& agent, uint64_t session, absl::Duration wait);
  // Drops agents silent for longer than the lease; returns their ids.
  std::vector<std::string> ExpireAgents();

  struct AgentStatus {
    AgentHello hello;
    absl::Time connected, last_seen;
    AgentCounters counters;
    int64_t owned = 0;
  };
  std::vector<AgentStatus> Agents() const;
  int64_t ignored_reports() const;
  int64_t unowned() const;  // checks no live agent can take

 private:
  struct Check {
    std::string group;
    Target target;
    std::string owner;  // agent id, "" = none
    Health state = Health::kUnknown;
    std::string detail;
    absl::Time since = absl::InfinitePast();
  };
  struct Agent {
    AgentHello hello;
    uint64_t session = 0;
    absl::Time connected, last_seen;
    AgentCounters counters;
    bool reset = true;  // the next assignment replaces everything
    std::set<std::string> to_add, to_remove;  // keys
    std::map<std::string, std::string> removed_group;  // key -> group, for keys gone from checks_
  };
  bool Reaches(const Agent& a, const Target& t) const;
  std::string OwnerOf(const Target& t) const;
  void SetOwner(const std::string& key, Check& c, const std::string& owner);
  void Reshard();
  void DropLocked(const std::string& agent);

  const Clock* clock_;
  absl::Duration lease_;
  OnChanges on_changes_;
  mutable absl::Mutex mu_;
  uint64_t next_session_ = 1;
  std::map<std::string, Check> checks_;  // instance/check -> check
  std::map<std::string, std::set<std::string>> by_group_;
  std::map<std::string, Agent> agents_;
  int64_t ignored_ = 0;
};

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_COORDINATOR_H_
