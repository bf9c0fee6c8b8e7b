// mariposad's side of the health agents: the gRPC HealthAgents.Connect
// stream that carries a Coordinator's assignments to an agent and its state
// changes and counters back, and the reaper that drops agents silent for
// longer than the lease. gRPC stays out of coordinator.h.
#ifndef MARIPOSA_HEALTH_AGENTS_SERVICE_H_
#define MARIPOSA_HEALTH_AGENTS_SERVICE_H_

#include <atomic>
#include <functional>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "health/coordinator.h"
#include "mariposa/v1/health.grpc.pb.h"

namespace mariposa::health {

// An assignment as messages of at most `chunk` targets or keys each; the
// first carries `reset`, all but the last `more`.
std::vector<v1::Assignment> Chunks(const Assignment& a, absl::Duration lease, size_t chunk = 1000);

class HealthAgentsService final : public v1::HealthAgents::Service {
 public:
  // `coordinator` must outlive this; `lease` is the coordinator's.
  // The reaper looks for silent agents every lease/4, on `clock`.
  // At most `max_agents` agents are connected at once; more are refused
  // (RESOURCE_EXHAUSTED).
  HealthAgentsService(Coordinator* coordinator, absl::Duration lease, const Clock* clock, int max_agents = 256);
  ~HealthAgentsService() override;  // stops the reaper

  // Ends every stream (before the server shuts down).
  void Stop();

  // Several nodes on one store: this node's name and every live node's
  // (name, address), sent to the agents with each assignment and whenever
  // they change, so an agent links to every node (health/links.h). Unset
  // (one node): nothing is sent. Set before the server starts.
  struct Directory {
    std::string self;
    std::vector<std::pair<std::string, std::string>> live;  // (name, address)
    bool operator==(const Directory& o) const { return self == o.self && live == o.live; }
  };
  void SetDirectory(std::function<Directory()> directory) { directory_ = std::move(directory); }

  grpc::Status Connect(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<v1::Assignment, v1::AgentMessage>* stream) override;

 private:
  Coordinator* coordinator_;
  absl::Duration lease_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> streams_{0};
  const Clock* clock_;
  int max_agents_;
  std::function<Directory()> directory_;
  absl::Mutex mu_;
  std::thread reaper_;
};

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_AGENTS_SERVICE_H_
