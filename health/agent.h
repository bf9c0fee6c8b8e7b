// A health agent (HEALTH.md "Agents"): one HealthMonitor fed by the
// assignments mariposad streams over HealthAgents.Connect, sending state
// changes and periodic counters (its heartbeat) back. When mariposad is
// unreachable it keeps checking what it was assigned, remembers the
// changes, reconnects with backoff, and once assigned again sends the state
// of every check it already knows. `mariposa-health` is this plus /metrics and ListChecks;
// `mariposad --embedded-health` runs one in-process against itself.
//
// Several nodes (a PostgreSQL store): each node assigns the checks of the
// projects it runs, so the agent keeps one stream (a link) to every live
// node, learnt from the node it was given (links.h decides which). Its one
// HealthMonitor runs the union of the links' assignments, each check once;
// a change goes back on the links whose node assigned that check.
#ifndef MARIPOSA_HEALTH_AGENT_H_
#define MARIPOSA_HEALTH_AGENT_H_

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "auth/client.h"
#include "common/clock.h"
#include "health/monitor.h"

namespace grpc {
class ClientContext;
}  // namespace grpc

namespace mariposa::v1 {
class AgentMessage;
class Assignment;
}  // namespace mariposa::v1

namespace mariposa::health {

class Agent {
 public:
  struct Options {
    std::string id;                     // stable: the same id gets its checks back
    std::vector<std::string> seeds;     // mariposad's gRPC address (any node's, or several)
    bool discover = true;               // link to every node the seeds list (false: the seeds only)
    auth::ClientCredentials credentials;  // TLS and the token to present (health-agent role)
    std::vector<std::string> networks;  // reachable networks; empty = all
    std::string grpc_addr, metrics_addr;  // advertised to mariposad
    absl::Duration heartbeat = absl::Seconds(2);  // at most lease/3 once the lease is known
    // A change waits this long for others to go in the same message (and one
    // store transaction in mariposad).
    absl::Duration flush = absl::Milliseconds(100);
    size_t max_outbox = 100000;         // changes queued while connected (current states follow a reconnect anyway)
    const Clock* clock = nullptr;       // heartbeats, backoff, checks' schedules (required)
  };
  // `hooks.on_result` and `hooks.on_start` (metrics) are called besides the
  // agent's own bookkeeping; `hooks.on_change` is the agent's and ignored.
  Agent(Options options, HealthMonitor::Hooks hooks = {});
  ~Agent();  // Stop()
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // The gRPC address mariposad is told (before Start).
  void Advertise(std::string grpc_addr) { options_.grpc_addr = std::move(grpc_addr); }
  void Start();
  void Stop();

  bool connected() const { return connected_links() > 0; }  // to at least one node
  int connected_links() const;
  const std::string& id() const { return options_.id; }
  const HealthMonitor& monitor() const { return *monitor_; }
  int64_t sessions() const { return sessions_; }  // connections made so far

 private:
  using Targets = std::map<std::string, std::map<std::string, Target>>;  // group -> instance/check -> target
  struct Link {
    std::string address;
    std::thread thread;
    bool stop = false;
    bool connected = false;
    grpc::ClientContext* ctx = nullptr;
    std::string node;
    std::map<std::string, std::string> nodes;  // as its node last listed them
    std::deque<HealthChange> outbox;
    Targets targets;  // what its node assigned
  };
  void Run();                  // keeps the links (PlanLinks)
  void LinkLoop(Link* link);   // one link's sessions, with backoff
  void Session(Link* link);
  // Session's two directions.
  void WriteLoop(Link* link, const std::function<bool(const v1::AgentMessage&)>& write,
                 const std::function<void()>& cancel, std::atomic<bool>* done, std::atomic<int64_t>* heartbeat_ms);
  bool ReadLoop(Link* link, const std::function<bool(v1::Assignment*)>& read, std::atomic<int64_t>* heartbeat_ms);
  void Apply(Link* link, bool reset, Targets& add, const std::vector<std::pair<std::string, std::string>>& removes);
  void Close(std::unique_ptr<Link> link, bool reassign);  // ends it; drops the checks only it assigned
  // Gives the monitor the union of the links' targets of each group in `groups`.
  void Reassign(const std::set<std::string>& groups);
  double LatenessP99Ms();

  Options options_;
  HealthMonitor::Hooks hooks_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> sessions_{0};
  std::atomic<int64_t> checks_run_{0}, checks_failed_{0};
  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Link>> links_ ABSL_GUARDED_BY(mu_);  // by address
  std::vector<double> lateness_ms_;  // a ring of recent samples
  size_t lateness_next_ = 0;
  absl::Mutex assign_mu_;  // one Reassign at a time (the monitor sees the unions in order)
  std::unique_ptr<HealthMonitor> monitor_;
  std::thread thread_;
};

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_AGENT_H_
