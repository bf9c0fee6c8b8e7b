// Workflow jobs (VMAPI's /jobs) and the event loop that ends them.
#include "deploy/tritonsim/datacenter.h"

#include <algorithm>
#include <optional>

#include "absl/strings/numbers.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {

int64_t DataCenter::LatencyLocked() {
  double base = opts_.job_latency_ms;
  if (base <= 0) return 0;
  std::uniform_real_distribution<double> d(-opts_.job_jitter, opts_.job_jitter);
  return static_cast<int64_t>(std::max(0.0, base * (1 + d(rng_))));
}

void DataCenter::ScheduleLocked(int64_t delay_ms, std::function<void()> fire) {
  events_.push(Event{NowMs() + delay_ms, event_seq_++, std::move(fire)});
}

void DataCenter::Loop() {
  absl::MutexLock l(&mu_);
  while (!stop_) {
    // Until the first event is due, or one is added, or stop.
    size_t queued = events_.size();
    int64_t first = events_.empty() ? -1 : events_.top().due_ms;
    auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop_ || events_.size() != queued || (!events_.empty() && events_.top().due_ms != first);
    };
    if (events_.empty()) {
      opts_.clock->AwaitUntil(&mu_, absl::Condition(&changed), absl::InfiniteFuture());
      continue;
    }
    if (events_.top().due_ms > NowMs()) {
      opts_.clock->AwaitUntil(&mu_, absl::Condition(&changed), absl::FromUnixMillis(events_.top().due_ms));
      continue;
    }
    Event e = events_.top();
    events_.pop();
    e.fire();
  }
}

Reply DataCenter::StartJobLocked(const std::string& name, const std::string& task, const std::string& vm_uuid,
                                 const json& params, std::function<std::string()> effect, int status) {
  Job j;
  j.uuid = NewUuidLocked();
  j.name = name;
  j.task = task;
  j.vm_uuid = vm_uuid;
  // Keep only the scalar parameters: a copy of every create body would make
  // 100,000 jobs cost more memory than their VMs.
  if (params.is_object()) {
    for (auto it = params.begin(); it != params.end(); ++it) {
      if (it.value().is_primitive()) j.params[it.key()] = it.value();
    }
  }
  j.params["task"] = task;
  if (!vm_uuid.empty()) j.params["vm_uuid"] = vm_uuid;
  j.created_ms = NowMs();
  std::string id = j.uuid;
  jobs_[id] = j;
  int64_t latency = LatencyLocked();
  bool fail = std::uniform_real_distribution<double>(0, 1)(rng_) < opts_.job_failure_rate;
  ScheduleLocked(latency / 2, [this, id] {
    Job& job = jobs_[id];
    if (job.execution == "queued") {
      job.execution = "running";
      job.started_ms = NowMs();
    }
  });
  ScheduleLocked(latency, [this, id, fail, effect] {
    Job& job = jobs_[id];
    if (job.started_ms == 0) job.started_ms = NowMs();
    std::string err = fail ? "simulated job failure" : effect();
    if (fail && job.task == "provision") {
      // A failed provision leaves a failed VM and frees its server's RAM.
      auto it = vms_.find(job.vm_uuid);
      if (it != vms_.end() && it->second.state == "provisioning") {
        it->second.state = "failed";
        it->second.zone_state = "installed";
        Touch(&it->second);
        auto sv = servers_.find(it->second.server_uuid);
        if (sv != servers_.end()) {
          AddUsedRamLocked(&sv->second, -it->second.ram);
          sv->second.vms.erase(job.vm_uuid);
        }
      }
    }
    if (fail && job.task == "import-remote-image") {
      // A failed import leaves nothing behind: the image is only in the source again.
      auto im = images_.find(job.params.value("image_uuid", ""));
      if (im != images_.end() && im->second.state == "unactivated") im->second.state = "remote";
    }
    if (fail && job.task == "reprovision") {
      // A failed reprovision leaves the zone installed but not booted, on
      // its old image (vmadm reprovision rolls back the root): stopped.
      auto it = vms_.find(job.vm_uuid);
      if (it != vms_.end() && it->second.state == "provisioning") {
        it->second.state = "stopped";
        it->second.zone_state = "installed";
        Touch(&it->second);
      }
    }
    job.finished_ms = NowMs();
    job.execution = err.empty() ? "succeeded" : "failed";
    job.error = err;
  });
  Reply r;
  r.status = status;
  r.body = {{"job_uuid", id}};
  if (!vm_uuid.empty()) r.body["vm_uuid"] = vm_uuid;
  r.headers["workflow-api"] = opts_.base_url;
  return r;
}

json DataCenter::ChainResults(const Job& j) const {
  json out = json::array();
  for (const auto& step : j.steps) {
    out.push_back({{"name", step.first}, {"result", step.second}, {"error", ""},
                   {"started_at", Iso(j.started_ms)}, {"finished_at", Iso(j.started_ms)}});
  }
  if (j.finished_ms != 0) {
    json result = {{"name", j.name + ".final"}, {"result", j.error.empty() ? "OK" : ""},
                   {"started_at", Iso(j.started_ms)}, {"finished_at", Iso(j.finished_ms)}};
    result["error"] = j.error.empty() ? json("") : json({{"message", j.error}});
    out.push_back(result);
  }
  return out;
}

json DataCenter::JobJson(const Job& j) const {
  return {{"name", j.name},
          {"uuid", j.uuid},
          {"execution", j.execution},
          {"params", j.params},
          {"created_at", Iso(j.created_ms)},
          {"started", j.started_ms ? json(j.started_ms) : json()},
          {"elapsed", j.finished_ms ? json((j.finished_ms - j.started_ms) / 1000.0) : json()},
          {"timeout", 3600},
          {"chain_results", ChainResults(j)}};
}

Reply DataCenter::GetJob(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  auto it = jobs_.find(uuid);
  if (it == jobs_.end()) return Error(404, "ResourceNotFound", "Job not found");
  Reply r;
  r.body = JobJson(it->second);
  return r;
}

Reply DataCenter::WaitJob(const std::string& uuid, const Params& q) {
  int64_t timeout_s = 60;
  if (const std::string* t = Get(q, "timeout")) ParseInt(*t, &timeout_s);
  absl::MutexLock l(&mu_);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = jobs_.find(uuid);
    return it == jobs_.end() || it->second.execution == "succeeded" || it->second.execution == "failed" ||
           it->second.execution == "canceled";
  };
  opts_.clock->AwaitUntil(&mu_, absl::Condition(&done), opts_.clock->Now() + absl::Seconds(timeout_s));
  auto it = jobs_.find(uuid);
  if (it == jobs_.end()) return Error(404, "ResourceNotFound", "Job not found");
  Reply r;
  r.body = JobJson(it->second);
  return r;
}

Reply DataCenter::ListJobs(const Params& q) {
  Reply r;
  if (!CheckParams(q, {"vm_uuid", "execution", "task", "limit", "offset"}, false, 409, &r)) return r;
  absl::MutexLock l(&mu_);
  std::vector<const Job*> out;
  for (const auto& kv : jobs_) {
    const Job& j = kv.second;
    if (const std::string* v = Get(q, "vm_uuid"); v && j.vm_uuid != *v) continue;
    if (const std::string* v = Get(q, "execution"); v && j.execution != *v) continue;
    if (const std::string* v = Get(q, "task"); v && j.task != *v) continue;
    out.push_back(&j);
  }
  std::sort(out.begin(), out.end(), [](const Job* a, const Job* b) {
    return a->created_ms != b->created_ms ? a->created_ms > b->created_ms : a->uuid > b->uuid;
  });
  int64_t limit = 1000, offset = 0;
  if (const std::string* v = Get(q, "limit")) ParseInt(*v, &limit);
  if (const std::string* v = Get(q, "offset")) ParseInt(*v, &offset);
  r.body = json::array();
  for (size_t i = offset; i < out.size() && static_cast<int64_t>(r.body.size()) < limit; ++i) {
    r.body.push_back(JobJson(*out[i]));
  }
  return r;
}

}  // namespace tritonsim
