#include "convergence/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mariposa::convergence {
namespace {

prometheus::MetricFamily GaugeFamily(const std::string& name, const std::string& help) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = prometheus::MetricType::Gauge;
  return f;
}

void AddGauge(prometheus::MetricFamily* f, std::vector<prometheus::ClientMetric::Label> labels, double v) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = v;
  f->metric.push_back(std::move(m));
}

// Adds one label to every metric another collectable gives (a metric that
// has it already keeps its own).
class WithLabel : public prometheus::Collectable {
 public:
  WithLabel(std::shared_ptr<prometheus::Collectable> inner, std::string name, std::string value)
      : inner_(std::move(inner)), name_(std::move(name)), value_(std::move(value)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out = inner_->Collect();
    for (auto& f : out) {
      for (auto& m : f.metric) {
        bool has = false;
        for (const auto& l : m.label) has = has || l.name == name_;
        if (!has) m.label.push_back({name_, value_});
      }
    }
    return out;
  }

 private:
  std::shared_ptr<prometheus::Collectable> inner_;
  std::string name_, value_;
};

}  // namespace

std::shared_ptr<prometheus::Collectable> ControllerMetrics::Labelled(std::shared_ptr<prometheus::Collectable> c) const {
  if (datacenter_.empty()) return c;
  return std::make_shared<WithLabel>(std::move(c), "datacenter", datacenter_);
}

// Gauges computed at scrape time: tasks and freezes from the store, instance
// counts from the last sync of each project.
class ControllerMetrics::Collector : public prometheus::Collectable {
 public:
  explicit Collector(ProjectStore* store) : store_(store) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out;
    auto tasks = GaugeFamily("mariposa_tasks", "Tasks by kind and state (every project).");
    auto frozen = GaugeFamily("mariposa_frozen", "Active freezes by project and scope (1 each).");
    auto depth = GaugeFamily("mariposa_workqueue_depth", "Tasks queued or active, and projects waiting for a sync.");
    auto frozen_since = GaugeFamily("mariposa_frozen_since_seconds",
                                    "When each active freeze began (unix seconds), by project and scope.");
    int64_t open_tasks = 0;
    if (store_ != nullptr) {
      if (auto counts = store_->CountTasks(); counts.ok()) {
        for (const TaskCount& c : *counts) AddGauge(&tasks, {{"state", c.state}, {"type", c.kind}}, c.n);
      }
      auto projects = store_->ListProjects();
      auto open = store_->ListOpenTasks();
      if (projects.ok() && open.ok()) {
        std::map<std::string, std::string> names;
        for (const ProjectRecord& p : *projects) names[p.uuid] = p.name;
        std::map<std::pair<std::string, std::string>, int> scopes;
        std::map<std::pair<std::string, std::string>, absl::Time> since;
        for (const TaskRecord& t : *open) {
          if (t.kind != "freeze") {
            if (t.state != "terminating") ++open_tasks;
            continue;
          }
          if (t.state != "active" && t.state != "queued") continue;
          std::string scope = t.services.empty() ? "project" : absl::StrJoin(t.services, ",");
          auto key = std::make_pair(names[t.project_uuid], scope);
          scopes[key] = 1;
          absl::Time at = t.started_at != absl::InfinitePast() ? t.started_at : t.created_at;
          if (!since.count(key) || at < since[key]) since[key] = at;
        }
        for (const auto& kv : scopes) AddGauge(&frozen, {{"project", kv.first.first}, {"scope", kv.first.second}}, 1);
        for (const auto& kv : since) {
          AddGauge(&frozen_since, {{"project", kv.first.first}, {"scope", kv.first.second}},
                   absl::ToDoubleSeconds(kv.second - absl::UnixEpoch()));
        }
      }
    }
    auto desired = GaugeFamily("mariposa_service_desired_instances", "Instances each service should have.");
    auto actual = GaugeFamily("mariposa_service_instances", "Instances each service has, by VM state (last sync).");
    auto crash = GaugeFamily("mariposa_service_crashlooping",
                             "1 while replacement of a service is paused after restart.max_attempts failures.");
    auto ready = GaugeFamily("mariposa_service_ready_instances",
                             "Instances of each service running its current spec and ready (healthy when checked).");
    auto unhealthy = GaugeFamily("mariposa_service_unhealthy_instances",
                                 "Instances of each service running with failing health checks.");
    auto verdict = GaugeFamily("mariposa_service_verdict",
                               "1 for each service's verdict of the last sync, 0 for the other verdicts.");
    {
      absl::MutexLock l(&mu_);
      for (const auto& p : projects_) {
        for (const ServiceCounts& s : p.second) {
          AddGauge(&desired, {{"project", p.first}, {"service", s.service}}, s.desired);
          // The usual states are always there (0 when none): a service with
          // no running instance still has a series to alert on.
          std::map<std::string, int64_t> states = {{"provisioning", 0}, {"running", 0}, {"stopped", 0}, {"failed", 0}};
          for (const auto& st : s.by_state) states[st.first] = st.second;
          for (const auto& st : states) {
            AddGauge(&actual, {{"project", p.first}, {"service", s.service}, {"state", st.first}}, st.second);
          }
          AddGauge(&ready, {{"project", p.first}, {"service", s.service}}, s.ready);
          AddGauge(&unhealthy, {{"project", p.first}, {"service", s.service}}, s.unhealthy);
          for (const char* v : {"converged", "progressing", "degraded", "paused", "failed", "unknown"}) {
            AddGauge(&verdict, {{"project", p.first}, {"service", s.service}, {"verdict", v}}, s.verdict == v ? 1 : 0);
          }
          AddGauge(&crash, {{"project", p.first}, {"service", s.service}}, s.crashlooping ? 1 : 0);
        }
      }
      AddGauge(&depth, {}, open_tasks + dirty_);
    }
    auto leader = GaugeFamily("mariposa_leader", "1 when this mariposad is the active controller of its store.");
    AddGauge(&leader, {}, 1);
    for (auto* f : {&tasks, &frozen, &frozen_since, &depth, &desired, &actual, &ready, &unhealthy, &verdict, &crash,
                    &leader}) {
      out.push_back(std::move(*f));
    }
    return out;
  }

  void SetProject(const std::string& project, std::vector<ServiceCounts> services) {
    absl::MutexLock l(&mu_);
    projects_[project] = std::move(services);
  }
  void ForgetProject(const std::string& project) {
    absl::MutexLock l(&mu_);
    projects_.erase(project);
  }
  void SetDirty(int64_t n) {
    absl::MutexLock l(&mu_);
    dirty_ = n;
  }

 private:
  ProjectStore* store_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::vector<ServiceCounts>> projects_ ABSL_GUARDED_BY(mu_);
  int64_t dirty_ ABSL_GUARDED_BY(mu_) = 0;
};

struct ControllerMetrics::Families {
  prometheus::Family<prometheus::Counter>* triton_requests;
  prometheus::Family<prometheus::Histogram>* triton_latency;
  prometheus::Family<prometheus::Counter>* replacements;
  prometheus::Family<prometheus::Counter>* syncs;
  prometheus::Family<prometheus::Counter>* deferred;
  prometheus::Family<prometheus::Histogram>* task_duration;
  prometheus::Family<prometheus::Counter>* grpc_started;
  prometheus::Family<prometheus::Counter>* grpc_handled;
  prometheus::Family<prometheus::Histogram>* grpc_seconds;
};

ControllerMetrics::ControllerMetrics(ProjectStore* store)
    : registry_(std::make_shared<prometheus::Registry>()),
      collector_(std::make_shared<Collector>(store)),
      families_(std::make_unique<Families>()) {
  families_->triton_requests = &prometheus::BuildCounter()
                                    .Name("mariposa_triton_requests_total")
                                    .Help("Requests to VMAPI, CNAPI and IMGAPI by operation and HTTP code (0 = no answer).")
                                    .Register(*registry_);
  families_->triton_latency = &prometheus::BuildHistogram()
                                   .Name("mariposa_triton_request_duration_seconds")
                                   .Help("Latency of requests to Triton APIs.")
                                   .Register(*registry_);
  families_->replacements = &prometheus::BuildCounter()
                                 .Name("mariposa_replacements_total")
                                 .Help("Instances replaced, by reason.")
                                 .Register(*registry_);
  families_->syncs = &prometheus::BuildCounter()
                          .Name("mariposa_syncs_total")
                          .Help("Project syncs, and resyncs skipped because the project was quiet while VMAPI's "
                                "change feed was watched (outcome synced | quiet).")
                          .Register(*registry_);
  families_->deferred = &prometheus::BuildCounter()
                             .Name("mariposa_replacements_deferred_total")
                             .Help("Replacements held back by the replacement budget or a crash-loop pause.")
                             .Register(*registry_);
  families_->task_duration = &prometheus::BuildHistogram()
                                  .Name("mariposa_task_duration_seconds")
                                  .Help("Time from a task's creation to its end, by kind and final state.")
                                  .Register(*registry_);
  families_->grpc_started = &prometheus::BuildCounter()
                                 .Name("grpc_server_started_total")
                                 .Help("Total number of RPCs started on the server.")
                                 .Register(*registry_);
  families_->grpc_handled = &prometheus::BuildCounter()
                                 .Name("grpc_server_handled_total")
                                 .Help("Total number of RPCs completed on the server, regardless of success or failure.")
                                 .Register(*registry_);
  families_->grpc_seconds = &prometheus::BuildHistogram()
                                 .Name("grpc_server_handling_seconds")
                                 .Help("Response latency (seconds) of gRPC that had been application-level handled by the server.")
                                 .Register(*registry_);
}

void ControllerMetrics::GrpcStarted(const std::string& service, const std::string& method, const std::string& type) {
  families_->grpc_started->Add({{"grpc_service", service}, {"grpc_method", method}, {"grpc_type", type}}).Increment();
}

void ControllerMetrics::GrpcHandled(const std::string& service, const std::string& method, const std::string& type,
                                    const std::string& code, absl::Duration took) {
  families_->grpc_handled
      ->Add({{"grpc_service", service}, {"grpc_method", method}, {"grpc_type", type}, {"grpc_code", code}})
      .Increment();
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                                   0.5,   1,    2.5,   5,    10};
  families_->grpc_seconds->Add({{"grpc_service", service}, {"grpc_method", method}, {"grpc_type", type}}, kBuckets)
      .Observe(absl::ToDoubleSeconds(took));
}

ControllerMetrics::~ControllerMetrics() = default;

absl::Status ControllerMetrics::Serve(const std::string& listen) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve /metrics on ", listen, ": ", e.what()));
  }
  Expose(registry_);
  Expose(collector_);
  for (const auto& c : extra_) Expose(c);
  return absl::OkStatus();
}

void ControllerMetrics::Expose(std::shared_ptr<prometheus::Collectable> c) {
  served_.push_back(Labelled(std::move(c)));
  exposer_->RegisterCollectable(served_.back());
}

int ControllerMetrics::port() const {
  if (!exposer_) return 0;
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports[0];
}

void ControllerMetrics::StopServing() { exposer_.reset(); }

std::string ControllerMetrics::Render() const {
  std::vector<prometheus::MetricFamily> all = Labelled(registry_)->Collect();
  for (auto& f : Labelled(collector_)->Collect()) all.push_back(std::move(f));
  for (const auto& c : extra_) {
    for (auto& f : Labelled(c)->Collect()) all.push_back(std::move(f));
  }
  return prometheus::TextSerializer().Serialize(all);
}

void ControllerMetrics::TritonRequest(const triton::RequestRecord& r) {
  families_->triton_requests->Add({{"api", r.api}, {"op", r.op}, {"code", absl::StrCat(r.code)}}).Increment();
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                                   0.1,   0.25,   0.5,   1,    2.5,   10};
  families_->triton_latency->Add({{"api", r.api}, {"op", r.op}}, kBuckets).Observe(absl::ToDoubleSeconds(r.latency));
}

void ControllerMetrics::Syncs(const std::string& outcome, int64_t n) {
  if (n > 0) families_->syncs->Add({{"outcome", outcome}}).Increment(static_cast<double>(n));
}

void ControllerMetrics::Replacement(const std::string& reason) {
  families_->replacements->Add({{"reason", reason}}).Increment();
}

void ControllerMetrics::ReplacementDeferred(const std::string& project, const std::string& service,
                                            const std::string& why) {
  families_->deferred->Add({{"project", project}, {"service", service}, {"why", why}}).Increment();
}

void ControllerMetrics::TaskEnded(const std::string& kind, const std::string& state, absl::Duration took) {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600, 7200};
  families_->task_duration->Add({{"type", kind}, {"state", state}}, kBuckets).Observe(absl::ToDoubleSeconds(took));
}

void ControllerMetrics::SetProject(const std::string& project, std::vector<ServiceCounts> services) {
  // Deferral counters start at 0 for every service, so that the first
  // deferral is an increase Prometheus sees (rate() of a new series is 0).
  for (const ServiceCounts& c : services) {
    for (const char* why : {"budget", "crashloop"}) {
      families_->deferred->Add({{"project", project}, {"service", c.service}, {"why", why}});
    }
  }
  collector_->SetProject(project, std::move(services));
}

void ControllerMetrics::ForgetProject(const std::string& project) { collector_->ForgetProject(project); }

void ControllerMetrics::SetWorkqueueDepth(int64_t n) { collector_->SetDirty(n); }

void ControllerMetrics::AddCollectable(std::shared_ptr<prometheus::Collectable> c) {
  if (exposer_) Expose(c);
  extra_.push_back(std::move(c));
}

}  // namespace mariposa::convergence
