// Prometheus metrics of health checking: what each agent serves on its
// /metrics (checks by type and result, durations, lateness against the due
// time, checks assigned, connected to mariposad), and for mariposad the
// coordinator's view (live agents, checks each owns, checks no agent can
// take). Gauges are read at scrape time. prometheus-cpp stays out of this
// header. Thread-safe.
#ifndef MARIPOSA_HEALTH_METRICS_H_
#define MARIPOSA_HEALTH_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "health/monitor.h"

namespace prometheus {
class Collectable;
class Exposer;
}  // namespace prometheus

namespace mariposa::health {

class Agent;
class Coordinator;

class HealthMetrics {
 public:
  HealthMetrics();
  ~HealthMetrics();

  // Recorders for an agent's monitor (on_result, on_start).
  HealthMonitor::Hooks Hooks();
  // Gauges read from these at scrape time; each must outlive serving.
  void Watch(const Agent* agent);
  void Watch(const Coordinator* coordinator);

  // For another exposer (mariposad serves these next to its own).
  std::shared_ptr<prometheus::Collectable> collectable() const;
  // Serves GET /metrics on `listen` (host:port, port 0 = any).
  absl::Status Serve(const std::string& listen);
  int port() const;
  void StopServing();
  std::string Render() const;

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
  std::vector<std::shared_ptr<prometheus::Collectable>> process_;  // process_* and build info, when served alone
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_METRICS_H_
