#include "health/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <atomic>

#include "absl/strings/str_cat.h"
#include "common/process_metrics.h"
#include "health/agent.h"
#include "health/coordinator.h"

namespace mariposa::health {
namespace {

prometheus::MetricFamily Gauge(const std::string& name, const std::string& help) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = prometheus::MetricType::Gauge;
  return f;
}

void Add(prometheus::MetricFamily& f, double v, std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = v;
  f.metric.push_back(std::move(m));
}

}  // namespace

class HealthMetrics::Impl : public prometheus::Collectable {
 public:
  Impl() : registry_(std::make_shared<prometheus::Registry>()) {
    checks_ = &prometheus::BuildCounter()
                   .Name("mariposa_health_checks_total")
                   .Help("Health checks run, by type and result.")
                   .Register(*registry_);
    duration_ = &prometheus::BuildHistogram()
                     .Name("mariposa_health_check_duration_seconds")
                     .Help("Time a health check took, connect to last byte.")
                     .Register(*registry_);
    lateness_ = &prometheus::BuildHistogram()
                     .Name("mariposa_health_check_lateness_seconds")
                     .Help("How late checks started against their due time.")
                     .Register(*registry_);
    static const prometheus::Histogram::BucketBoundaries kLate = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                                  0.1,   0.25,   0.5,   1,    5};
    late_ = &lateness_->Add({}, kLate);
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out = registry_->Collect();
    if (const Agent* a = agent_.load()) {
      auto assigned = Gauge("mariposa_health_checks_assigned", "Checks assigned to this agent.");
      Add(assigned, static_cast<double>(a->monitor().targets()));
      out.push_back(std::move(assigned));
      auto connected = Gauge("mariposa_health_agent_connected", "1 while the agent has its stream to mariposad.");
      Add(connected, a->connected() ? 1 : 0);
      out.push_back(std::move(connected));
      auto nodes = Gauge("mariposa_health_agent_nodes",
                         "mariposad nodes the agent has a stream to (several on one PostgreSQL store).");
      Add(nodes, a->connected_links());
      out.push_back(std::move(nodes));
    }
    if (const Coordinator* c = coordinator_.load()) {
      auto agents = Gauge("mariposa_health_agents", "Live health agents.");
      auto owned = Gauge("mariposa_health_agent_checks", "Checks each live health agent owns.");
      auto statuses = c->Agents();
      Add(agents, static_cast<double>(statuses.size()));
      for (const auto& s : statuses) Add(owned, static_cast<double>(s.owned), {{"agent", s.hello.id}});
      auto unowned = Gauge("mariposa_health_checks_unowned", "Checks no live agent can take (not being checked).");
      Add(unowned, static_cast<double>(c->unowned()));
      out.push_back(std::move(agents));
      out.push_back(std::move(owned));
      out.push_back(std::move(unowned));
    }
    return out;
  }

  void Result(const std::string& type, bool pass, absl::Duration took) {
    static const prometheus::Histogram::BucketBoundaries kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                                     0.05,   0.1,   0.25,   0.5,   1,    2.5, 10};
    checks_->Add({{"type", type}, {"result", pass ? "pass" : "fail"}}).Increment();
    duration_->Add({{"type", type}}, kBuckets).Observe(absl::ToDoubleSeconds(took));
  }
  void Late(absl::Duration d) { late_->Observe(absl::ToDoubleSeconds(d)); }

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* checks_;
  prometheus::Family<prometheus::Histogram>* duration_;
  prometheus::Family<prometheus::Histogram>* lateness_;
  prometheus::Histogram* late_;
  std::atomic<const Agent*> agent_{nullptr};
  std::atomic<const Coordinator*> coordinator_{nullptr};
};

HealthMetrics::HealthMetrics() : impl_(std::make_shared<Impl>()) {}
HealthMetrics::~HealthMetrics() = default;

HealthMonitor::Hooks HealthMetrics::Hooks() {
  HealthMonitor::Hooks h;
  Impl* impl = impl_.get();
  h.on_result = [impl](const std::string& type, bool pass, absl::Duration took) { impl->Result(type, pass, took); };
  h.on_start = [impl](absl::Duration late) { impl->Late(late); };
  return h;
}

void HealthMetrics::Watch(const Agent* agent) { impl_->agent_ = agent; }
void HealthMetrics::Watch(const Coordinator* coordinator) { impl_->coordinator_ = coordinator; }

std::shared_ptr<prometheus::Collectable> HealthMetrics::collectable() const { return impl_; }

absl::Status HealthMetrics::Serve(const std::string& listen) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve /metrics on ", listen, ": ", e.what()));
  }
  exposer_->RegisterCollectable(impl_);
  // Served alone (mariposa-health): the process and build metrics too.
  process_ = {ProcessCollector(), BuildInfoCollector("mariposa-health")};
  for (const auto& c : process_) exposer_->RegisterCollectable(c);
  return absl::OkStatus();
}

int HealthMetrics::port() const {
  if (!exposer_) return 0;
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports[0];
}

void HealthMetrics::StopServing() { exposer_.reset(); }

std::string HealthMetrics::Render() const { return prometheus::TextSerializer().Serialize(impl_->Collect()); }

}  // namespace mariposa::health
