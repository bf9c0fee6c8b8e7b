// Prometheus metrics of mariposad (DESIGN.md "Observability"). The controller
// records what happens through plain methods; gauges that describe stored
// state (tasks by kind and state, frozen scopes) are read from the store at
// scrape time, so they are never stale. prometheus-cpp stays out of this
// header. Thread-safe.
#ifndef MARIPOSA_CONVERGENCE_METRICS_H_
#define MARIPOSA_CONVERGENCE_METRICS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "convergence/triton/http.h"
#include "projects/store.h"

namespace prometheus {
class Collectable;
class Exposer;
class Registry;
}  // namespace prometheus

namespace mariposa::convergence {

// One service of one project as the last sync saw it.
struct ServiceCounts {
  std::string service;
  int64_t desired = 0;
  std::map<std::string, int64_t> by_state;  // provisioning running stopped failed …
  int64_t ready = 0;                         // running the current spec and ready (healthy when checked)
  int64_t unhealthy = 0;                     // running, checks failing
  std::string verdict;                       // converged progressing degraded paused failed unknown
  bool crashlooping = false;
};

class ControllerMetrics {
 public:
  // `store` (may be null) is read at scrape time; it must outlive this.
  explicit ControllerMetrics(ProjectStore* store);
  ~ControllerMetrics();

  // Every metric then carries datacenter="NAME" (mariposad --datacenter),
  // so several data centers' metrics stay apart in one Prometheus. Call
  // before Serve and AddCollectable.
  void SetDataCenter(std::string name) { datacenter_ = std::move(name); }
  // Serves GET /metrics on `listen` (host:port, port 0 = any free port).
  absl::Status Serve(const std::string& listen);
  int port() const;  // after Serve
  // Stops serving (before the store goes away).
  void StopServing();

  // The text exposition format of everything, as /metrics answers.
  std::string Render() const;

  // Recording.
  void TritonRequest(const triton::RequestRecord& r);
  void Replacement(const std::string& reason);  // an instance replaced: broken, unhealthy, …
  // `n` project syncs (outcome "synced"), or resyncs skipped ("quiet").
  void Syncs(const std::string& outcome, int64_t n);
  void ReplacementDeferred(const std::string& project, const std::string& service, const std::string& why);
  void TaskEnded(const std::string& kind, const std::string& state, absl::Duration took);
  void SetProject(const std::string& project, std::vector<ServiceCounts> services);
  void ForgetProject(const std::string& project);
  void SetWorkqueueDepth(int64_t n);
  // gRPC server calls (go-grpc-prometheus names): `service` is the full
  // proto service name, `type` unary|client_stream|server_stream|bidi_stream,
  // `code` the status code's name (OK, PermissionDenied, …).
  void GrpcStarted(const std::string& service, const std::string& method, const std::string& type);
  void GrpcHandled(const std::string& service, const std::string& method, const std::string& type,
                   const std::string& code, absl::Duration took);
  // Served and rendered next to the controller's own (health metrics).
  void AddCollectable(std::shared_ptr<prometheus::Collectable> c);

 private:
  class Collector;
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<Collector> collector_;
  std::unique_ptr<Families> families_;
  std::vector<std::shared_ptr<prometheus::Collectable>> extra_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string datacenter_;
  // `c`, its metrics labelled with datacenter_ (when set).
  std::shared_ptr<prometheus::Collectable> Labelled(std::shared_ptr<prometheus::Collectable> c) const;
  // What the exposer serves (it holds them weakly): kept here.
  std::vector<std::shared_ptr<prometheus::Collectable>> served_;
  void Expose(std::shared_ptr<prometheus::Collectable> c);
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_METRICS_H_
