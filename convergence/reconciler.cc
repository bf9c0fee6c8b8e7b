#include "convergence/reconciler.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "convergence/observer.h"
#include "convergence/planner.h"
#include "convergence/queue.h"

namespace mariposa::convergence {
namespace {

using json = nlohmann::json;

// Triton brand for a service's compute type.
std::string BrandFor(const ServiceRecord& s) {
  if (!s.brand.empty()) return s.brand;
  if (s.compute_type == "docker") return "lx";
  if (s.compute_type == "kvm") return "bhyve";
  return "joyent";
}

// MiB from a canonical size ("512m", "4g"); 1024 when unset.
int64_t RamMiB(const json& spec) {
  std::string mem = spec.value("resources", json::object()).value("memory", "");
  if (mem.size() < 2) return 1024;
  int64_t n = 0;
  if (!absl::SimpleAtoi(mem.substr(0, mem.size() - 1), &n)) return 1024;
  switch (mem.back()) {
    case 't': return n << 20;
    case 'g': return n << 10;
    case 'm': return n;
    case 'k': return std::max<int64_t>(1, n >> 10);
  }
  return 1024;
}

std::map<std::string, std::string> StringMap(const json& j) {
  std::map<std::string, std::string> out;
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
  }
  return out;
}

}  // namespace

Reconciler::Reconciler(ProjectStore* store, triton::VmapiClient* vmapi, triton::ImgapiClient* imgapi,
                       const Clock* clock, ReconcilerOptions options)
    : store_(store), vmapi_(vmapi), imgapi_(imgapi), clock_(clock), options_(std::move(options)) {}

Reconciler::~Reconciler() { Stop(); }

absl::StatusOr<SyncResult> Reconciler::SyncProject(const std::string& name) {
  SyncResult result;
  ASSIGN_OR_RETURN(ProjectRecord p, store_->GetProject(name));
  std::vector<ServiceRecord> services;
  if (!p.current_version.empty()) {
    ASSIGN_OR_RETURN(services, store_->ListServices(p.current_version));
  }
  ASSIGN_OR_RETURN(auto numbers, VersionNumbers(store_, p.uuid));

  PlanInput in;
  std::map<std::string, const ServiceRecord*> by_name;
  std::map<std::string, json> specs;
  for (const ServiceRecord& s : services) {
    if (s.compute_type == "agent") continue;  // agents are rolled out per server (not built yet)
    json spec = json::parse(s.spec_json, nullptr, false);
    ServiceGoal g{s.name, s.count, s.spec_hash, 1, 1};
    if (spec.is_object() && spec.contains("update")) {
      g.rolling = spec["update"].value("rolling", 1);
      g.max_surge = spec["update"].value("max_surge", 1);
    }
    absl::Duration window;
    if (spec.is_object() && spec.contains("start") &&
        absl::ParseDuration(spec["start"].value("window", "60s"), &window)) {
      g.start_window = window;
    }
    in.services[s.name] = g;
    by_name[s.name] = &s;
    specs[s.name] = spec;
  }
  Observer observer(vmapi_);
  ASSIGN_OR_RETURN(in.instances, observer.ObserveProject(p.uuid, numbers));

  // Reprovision tasks: runnable once what they wait for has ended; complete
  // when no instance in their scope is at another spec.
  ASSIGN_OR_RETURN(std::vector<TaskRecord> open, store_->ListTasks(p.uuid, 0));
  std::set<std::string> open_ids;
  for (const TaskRecord& t : open) open_ids.insert(t.uuid);
  for (const TaskRecord& t : open) {
    if (t.kind != "reprovision") continue;
    if (t.state == "terminating") {
      store_->SetTaskState(t.uuid, "terminated", "").IgnoreError();
      continue;
    }
    bool waiting = false;
    for (const std::string& w : t.wait_for) waiting |= open_ids.count(w) > 0;
    if (waiting) continue;
    std::set<std::string> scope(t.services.begin(), t.services.end());
    bool pending = false;
    for (const InstanceState& i : in.instances) {
      auto g = in.services.find(i.service);
      if (g == in.services.end() || (!scope.empty() && !scope.count(i.service))) continue;
      pending |= (i.state == "running" || i.state == "provisioning") && i.spec_hash != g->second.spec_hash;
    }
    if (!pending) {
      store_->SetTaskState(t.uuid, "completed", "").IgnoreError();
      store_->AppendEvent("mariposad", p.name, "task.completed", t.uuid, "reprovision").IgnoreError();
      continue;
    }
    if (t.state == "queued") store_->SetTaskState(t.uuid, "active", "").IgnoreError();
    for (const auto& kv : in.services) {
      if (scope.empty() || scope.count(kv.first)) in.reprovision.insert(kv.first);
    }
  }

  std::vector<Action> planned = Plan(in, clock_->Now());
  // Freezes stop automatic work in their scope (or just the --only kinds).
  std::vector<Action> actions;
  for (const Action& a : planned) {
    std::string kind = a.reason == "replace-broken" || a.reason == "remove-broken" ? "replace-unhealthy"
                       : a.reason == "reprovision"                                ? "reprovision"
                                                                                  : "scale";
    bool frozen = false;
    for (const TaskRecord& t : open) frozen |= FreezeHolds(t, a.service, kind);
    if (frozen) {
      result.held++;
    } else {
      actions.push_back(a);
    }
  }
  result.converged = planned.empty();
  // Ordinals in use, per service, from the aliases <project>-<service>-<n>.
  std::map<std::string, std::set<int>> used;
  for (const auto& i : in.instances) {
    std::string prefix = absl::StrCat(p.name, "-", i.service, "-");
    int n = 0;
    if (i.alias.rfind(prefix, 0) == 0 && absl::SimpleAtoi(i.alias.substr(prefix.size()), &n)) used[i.service].insert(n);
  }
  std::map<std::string, std::string> image_uuids;
  std::vector<std::pair<std::string, std::string>> jobs;  // (job, what)
  for (const Action& a : actions) {
    if (a.kind == ActionKind::kDelete) {
      auto job = vmapi_->DeleteVm(a.instance);
      if (!job.ok() && !absl::IsNotFound(job.status())) {
        result.failed++;
        LogWarn("delete failed", {{"project", p.name}, {"vm", a.instance}, {"error", job.status().ToString()}});
        continue;
      }
      if (job.ok()) jobs.emplace_back(job->job_uuid, absl::StrCat("delete ", a.instance));
      result.deleted++;
      store_->AppendEvent("mariposad", p.name, "instance.delete", a.instance, absl::StrCat(a.service, " (", a.reason, ")"))
          .IgnoreError();
      continue;
    }
    const ServiceRecord& s = *by_name.at(a.service);
    if (!image_uuids.count(s.name)) {
      std::string image = s.image;
      if (!IsUuid(image)) {
        size_t at = image.rfind('@');
        auto found = imgapi_->FindImage(image.substr(0, at), at == std::string::npos ? "" : image.substr(at + 1));
        if (!found.ok()) {
          result.failed++;
          store_->AppendEvent("mariposad", p.name, "instance.create-failed", s.name, std::string(found.status().message()))
              .IgnoreError();
          image_uuids[s.name] = "";
          continue;
        }
        image = found->uuid;
      }
      image_uuids[s.name] = image;
    }
    if (image_uuids[s.name].empty()) {
      result.failed++;
      continue;
    }
    int ordinal = 1;
    while (used[s.name].count(ordinal)) ++ordinal;
    used[s.name].insert(ordinal);
    const json& spec = specs[s.name];
    triton::CreateVmRequest req;
    req.uuid = NewUuid();  // chosen here: a retried create cannot make a second VM
    req.owner_uuid = options_.owner_uuid;
    req.alias = absl::StrCat(p.name, "-", s.name, "-", ordinal);
    req.brand = BrandFor(s);
    req.image_uuid = image_uuids[s.name];
    req.ram = RamMiB(spec);
    req.networks = {options_.network_uuid};
    req.billing_id = s.package;
    req.tags = StringMap(spec.value("tags", json::object()));
    req.tags[kTagProject] = p.uuid;
    req.tags[kTagService] = s.name;
    req.tags[kTagVersion] = p.current_version;
    req.tags[kTagSpec] = s.spec_hash;
    if (spec.contains("ports")) {
      std::string ports;
      for (const auto& port : spec["ports"]) ports += (ports.empty() ? "" : ",") + port.dump();
      req.tags["ports"] = ports;
    }
    req.customer_metadata = StringMap(spec.value("mdata", json::object()));
    auto job = vmapi_->CreateVm(req);
    if (!job.ok()) {
      result.failed++;
      LogWarn("create failed", {{"project", p.name}, {"service", s.name}, {"error", job.status().ToString()}});
      store_->AppendEvent("mariposad", p.name, "instance.create-failed", s.name, std::string(job.status().message()))
          .IgnoreError();
      continue;
    }
    jobs.emplace_back(job->job_uuid, absl::StrCat("create ", req.uuid));
    result.created++;
    store_->AppendEvent("mariposad", p.name, "instance.create", req.uuid,
                        absl::StrCat(req.alias, " (", a.reason, ")"))
        .IgnoreError();
  }
  for (const auto& j : jobs) {
    auto done = vmapi_->WaitJob(j.first, options_.job_timeout);
    if (!done.ok() || done->execution != "succeeded") {
      result.failed++;
      LogWarn("job failed", {{"project", p.name}, {"job", j.first}, {"what", j.second},
                             {"error", done.ok() ? done->error : done.status().ToString()}});
    }
  }
  return result;
}

void Reconciler::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Reconciler::Wake() {
  absl::MutexLock l(&mu_);
  dirty_ = true;
}

void Reconciler::Stop() {
  {
    absl::MutexLock l(&mu_);
    if (stop_) return;
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Reconciler::Loop() {
  while (true) {
    {
      absl::MutexLock l(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return dirty_ || stop_; };
      mu_.AwaitWithTimeout(absl::Condition(&ready), options_.resync);
      if (stop_) return;
      dirty_ = false;
    }
    auto projects = store_->ListProjects();
    if (!projects.ok()) {
      LogWarn("cannot list projects", {{"error", projects.status().ToString()}});
      continue;
    }
    for (const auto& p : *projects) {
      auto r = SyncProject(p.name);
      if (!r.ok()) {
        LogWarn("sync failed", {{"project", p.name}, {"error", r.status().ToString()}});
      } else if (r->created + r->deleted + r->failed > 0) {
        LogInfo("synced", {{"project", p.name}, {"created", absl::StrCat(r->created)},
                           {"deleted", absl::StrCat(r->deleted)}, {"failed", absl::StrCat(r->failed)},
                           {"held", absl::StrCat(r->held)}});
        // More steps may follow (rolling batches): go again at once when this
        // one acted and nothing failed. Failures and held (frozen) work wait
        // for the resync interval, so neither turns into a busy loop.
        if (r->failed == 0 && r->created + r->deleted > 0) Wake();
      }
    }
  }
}

}  // namespace mariposa::convergence
