#include "convergence/triton/fake_clients.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mariposa::triton {
namespace {

// Deterministic uuids, readable in test failures.
std::string FakeUuid(const char* kind, int64_t n) {
  return absl::StrFormat("%08x-0000-4000-8000-%012d", static_cast<unsigned>(kind[0]), n);
}

}  // namespace

std::vector<std::string> FakeBase::calls() const {
  std::lock_guard<std::mutex> l(mu_);
  return calls_;
}

void FakeBase::ClearCalls() {
  std::lock_guard<std::mutex> l(mu_);
  calls_.clear();
}

void FakeBase::FailNext(const std::string& op, absl::Status status, int n) {
  std::lock_guard<std::mutex> l(mu_);
  for (int i = 0; i < n; ++i) failures_[op].push_back(status);
}

absl::Status FakeBase::Enter(const std::string& op, const std::string& arg) {
  calls_.push_back(arg.empty() ? op : absl::StrCat(op, " ", arg));
  auto it = failures_.find(op);
  if (it == failures_.end() || it->second.empty()) return absl::OkStatus();
  absl::Status s = it->second.front();
  it->second.pop_front();
  return s;
}

// ---------------------------------------------------------------- VMAPI

void FakeVmapiClient::set_auto_complete(bool v) {
  std::lock_guard<std::mutex> l(mu_);
  auto_complete_ = v;
}

void FakeVmapiClient::set_servers(std::vector<std::string> servers) {
  std::lock_guard<std::mutex> l(mu_);
  servers_ = std::move(servers);
}

void FakeVmapiClient::PutVm(const Vm& vm) {
  std::lock_guard<std::mutex> l(mu_);
  vms_[vm.uuid] = vm;
}

std::vector<Vm> FakeVmapiClient::AllVms() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Vm> out;
  for (const auto& kv : vms_) out.push_back(kv.second);
  return out;
}

void FakeVmapiClient::CompleteJobs(const std::set<std::string>& fail_vms) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& kv : jobs_) {
    if (kv.second.job.done()) continue;
    if (fail_vms.count(kv.second.job.vm_uuid)) {
      kv.second.job.execution = "failed";
      kv.second.job.error = "injected failure";
    } else {
      CompleteLocked(kv.first);
    }
  }
}

void FakeVmapiClient::CompleteJobsAfterNextList() {
  std::lock_guard<std::mutex> l(mu_);
  complete_after_list_ = true;
}

void FakeVmapiClient::CompleteLocked(const std::string& job_uuid) {
  PendingJob& p = jobs_[job_uuid];
  if (p.job.done()) return;
  p.effect();
  p.job.execution = "succeeded";
}

JobRef FakeVmapiClient::StartLocked(const std::string& task, const std::string& vm_uuid, std::function<void()> effect) {
  PendingJob p;
  p.job.uuid = FakeUuid("job", ++seq_);
  p.job.name = task;
  p.job.task = task;
  p.job.vm_uuid = vm_uuid;
  p.job.execution = "running";
  p.effect = std::move(effect);
  std::string id = p.job.uuid;
  jobs_[id] = std::move(p);
  if (auto_complete_) CompleteLocked(id);
  return JobRef{vm_uuid, id, "", ""};
}

bool FakeVmapiClient::MatchesLocked(const Vm& vm, const VmFilter& f) const {
  for (const auto& kv : f.tags) {
    auto t = vm.tags.find(kv.first);
    if (t == vm.tags.end() || (kv.second != "*" && t->second != kv.second)) return false;
  }
  if (f.state == "active") {
    if (vm.state == "destroyed" || vm.state == "failed") return false;
  } else if (!f.state.empty() && vm.state != f.state) {
    return false;
  }
  if (!f.owner_uuid.empty() && vm.owner_uuid != f.owner_uuid) return false;
  if (!f.server_uuid.empty() && vm.server_uuid != f.server_uuid) return false;
  if (!f.alias.empty() && vm.alias.rfind(f.alias, 0) != 0) return false;
  if (!f.image_uuid.empty() && vm.image_uuid != f.image_uuid) return false;
  if (!f.uuids.empty() && std::find(f.uuids.begin(), f.uuids.end(), vm.uuid) == f.uuids.end()) return false;
  return true;
}

absl::StatusOr<std::vector<Vm>> FakeVmapiClient::ListVms(const VmFilter& f) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("ListVms", ""); !s.ok()) return s;
  if (!f.predicate.empty()) return absl::UnimplementedError("FakeVmapiClient does not evaluate predicates");
  std::vector<Vm> out;
  for (const auto& kv : vms_) {
    if (MatchesLocked(kv.second, f)) out.push_back(kv.second);
  }
  if (complete_after_list_) {
    complete_after_list_ = false;
    for (auto& kv : jobs_) CompleteLocked(kv.first);
  }
  return out;
}

absl::StatusOr<int64_t> FakeVmapiClient::CountVms(const VmFilter& f) {
  auto all = ListVms(f);
  if (!all.ok()) return all.status();
  return static_cast<int64_t>(all->size());
}

bool FakeVmapiClient::HasLocked(const VmRef& vm) const {
  auto it = vms_.find(vm.uuid);
  return it != vms_.end() && (vm.owner_uuid.empty() || it->second.owner_uuid == vm.owner_uuid);
}

absl::StatusOr<Vm> FakeVmapiClient::GetVm(const VmRef& vm) {
  const std::string& uuid = vm.uuid;
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("GetVm", uuid); !s.ok()) return s;
  if (!HasLocked(vm)) return absl::NotFoundError(absl::StrCat("vmapi GetVm: 404 ResourceNotFound: VM ", uuid));
  return vms_.at(uuid);
}

absl::StatusOr<JobRef> FakeVmapiClient::CreateVm(const CreateVmRequest& req) {
  std::function<void(const CreateVmRequest&)> hook;
  {
    std::lock_guard<std::mutex> l(mu_);
    hook = on_create_vm_;
  }
  if (hook) hook(req);
  std::lock_guard<std::mutex> l(mu_);
  std::string uuid = req.uuid.empty() ? FakeUuid("vm", ++seq_) : req.uuid;
  if (auto s = Enter("CreateVm", uuid); !s.ok()) return s;
  if (vms_.count(uuid)) return absl::AlreadyExistsError(absl::StrCat("vmapi CreateVm: VM ", uuid, " exists"));
  Vm vm;
  vm.uuid = uuid;
  vm.alias = req.alias;
  vm.owner_uuid = req.owner_uuid;
  vm.brand = req.brand;
  vm.image_uuid = req.image_uuid;
  vm.ram = req.dim.ram;
  vm.billing_id = req.dim.billing_id;
  vm.tags = req.tags;
  vm.customer_metadata = req.customer_metadata;
  vm.internal_metadata = req.internal_metadata;
  vm.docker = req.docker;
  vm.firewall_enabled = req.firewall_enabled;
  if (req.delegate_dataset) vm.datasets = {"zones/" + vm.uuid + "/data"};
  vm.quota = req.dim.quota;
  vm.cpu_cap = req.dim.cpu_cap;
  vm.state = "provisioning";
  vm.create_timestamp = absl::StrFormat("2026-01-01T00:00:%02d.%03dZ", (seq_ / 1000) % 60, seq_ % 1000);
  if (!servers_.empty()) vm.server_uuid = servers_[next_server_++ % servers_.size()];
  vms_[uuid] = vm;
  return StartLocked("provision", uuid, [this, uuid] { vms_[uuid].state = "running"; });
}

absl::StatusOr<JobRef> FakeVmapiClient::Act(const VmRef& vm, VmAction action, absl::Duration timeout) {
  const std::string& uuid = vm.uuid;
  static const char* kNames[] = {"start", "stop", "reboot", "kill"};
  std::lock_guard<std::mutex> l(mu_);
  std::string arg = absl::StrCat(kNames[static_cast<int>(action)], " ", uuid);
  if (timeout > absl::ZeroDuration()) absl::StrAppend(&arg, " timeout=", absl::FormatDuration(timeout));
  if (auto s = Enter("Act", arg); !s.ok()) return s;
  if (!HasLocked(vm)) return absl::NotFoundError("vmapi VmAction: 404 ResourceNotFound");
  std::string to = action == VmAction::kStart || action == VmAction::kReboot ? "running" : "stopped";
  return StartLocked(kNames[static_cast<int>(action)], uuid, [this, uuid, to] { vms_[uuid].state = to; });
}

absl::StatusOr<JobRef> FakeVmapiClient::Reprovision(const VmRef& vm, const std::string& image_uuid) {
  const std::string& uuid = vm.uuid;
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("Reprovision", uuid); !s.ok()) return s;
  if (!HasLocked(vm)) return absl::NotFoundError("vmapi VmAction: 404 ResourceNotFound");
  return StartLocked("reprovision", uuid, [this, uuid, image_uuid] { vms_[uuid].image_uuid = image_uuid; });
}

absl::StatusOr<JobRef> FakeVmapiClient::Update(const VmRef& vm, const UpdateVmRequest& req) {
  const std::string& uuid = vm.uuid;
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("Update", uuid); !s.ok()) return s;
  if (!HasLocked(vm)) return absl::NotFoundError("vmapi VmAction: 404 ResourceNotFound");
  return StartLocked("update", uuid, [this, uuid, req] {
    Vm& vm = vms_[uuid];
    for (const auto& kv : req.customer_metadata) vm.customer_metadata[kv.first] = kv.second;
    for (const auto& kv : req.internal_metadata) vm.internal_metadata[kv.first] = kv.second;
    for (const auto& k : req.remove_customer_metadata) vm.customer_metadata.erase(k);
    for (const auto& k : req.remove_internal_metadata) vm.internal_metadata.erase(k);
    if (req.dim.ram > 0) vm.ram = req.dim.ram;
    if (!req.dim.billing_id.empty()) vm.billing_id = req.dim.billing_id;
    if (req.dim.quota > 0) vm.quota = req.dim.quota;
    if (req.dim.cpu_cap > 0) vm.cpu_cap = req.dim.cpu_cap;
  });
}

absl::StatusOr<JobRef> FakeVmapiClient::DeleteVm(const VmRef& vm) {
  const std::string& uuid = vm.uuid;
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("DeleteVm", uuid); !s.ok()) return s;
  if (!HasLocked(vm)) return absl::NotFoundError("vmapi DeleteVm: 404 ResourceNotFound");
  return StartLocked("destroy", uuid, [this, uuid] { vms_[uuid].state = "destroyed"; });
}

absl::StatusOr<JobRef> FakeVmapiClient::SetTags(const VmRef& vm, const std::map<std::string, std::string>& tags,
                                                bool replace) {
  const std::string& uuid = vm.uuid;
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("SetTags", uuid); !s.ok()) return s;
  if (!HasLocked(vm)) return absl::NotFoundError("vmapi VmTags: 404 ResourceNotFound");
  return StartLocked("update", uuid, [this, uuid, tags, replace] {
    if (replace) vms_[uuid].tags.clear();
    for (const auto& kv : tags) vms_[uuid].tags[kv.first] = kv.second;
  });
}

absl::StatusOr<JobRef> FakeVmapiClient::DeleteTag(const VmRef& vm, const std::string& key) {
  const std::string& uuid = vm.uuid;
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("DeleteTag", uuid); !s.ok()) return s;
  if (!HasLocked(vm) || !vms_[uuid].tags.count(key)) return absl::NotFoundError("vmapi VmTags: 404 ResourceNotFound");
  return StartLocked("update", uuid, [this, uuid, key] { vms_[uuid].tags.erase(key); });
}

void FakeVmapiClient::set_on_create_vm(std::function<void(const CreateVmRequest&)> f) {
  std::lock_guard<std::mutex> l(mu_);
  on_create_vm_ = std::move(f);
}

void FakeVmapiClient::set_on_get_job(std::function<void(const Job&)> f) {
  std::lock_guard<std::mutex> l(mu_);
  on_get_job_ = std::move(f);
}

absl::StatusOr<Job> FakeVmapiClient::GetJob(const std::string& uuid) {
  Job job;
  std::function<void(const Job&)> hook;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto s = Enter("GetJob", uuid); !s.ok()) return s;
    auto it = jobs_.find(uuid);
    if (it == jobs_.end()) return absl::NotFoundError("vmapi GetJob: 404 ResourceNotFound");
    job = it->second.job;
    hook = on_get_job_;
  }
  if (hook) hook(job);
  return job;
}

absl::StatusOr<Job> FakeVmapiClient::WaitJob(const std::string& uuid, absl::Duration timeout) {
  auto j = GetJob(uuid);
  if (j.ok() && !j->done()) {
    return absl::DeadlineExceededError(absl::StrCat("job ", uuid, " did not finish within ", absl::FormatDuration(timeout)));
  }
  return j;
}

absl::Status FakeVmapiClient::Ping() {
  std::lock_guard<std::mutex> l(mu_);
  return Enter("Ping", "");
}

// ---------------------------------------------------------------- CNAPI

void FakeCnapiClient::PutServer(const Server& s) {
  std::lock_guard<std::mutex> l(mu_);
  servers_[s.uuid] = s;
}

void FakeCnapiClient::PutAgentImage(const std::string& image_uuid, const std::string& name, const std::string& version) {
  std::lock_guard<std::mutex> l(mu_);
  agent_images_[image_uuid] = {name, version};
}

absl::StatusOr<std::vector<Server>> FakeCnapiClient::ListServers() {
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("ListServers", ""); !s.ok()) return s;
  std::vector<Server> out;
  for (const auto& kv : servers_) out.push_back(kv.second);
  return out;
}

absl::StatusOr<Server> FakeCnapiClient::GetServer(const std::string& uuid) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("GetServer", uuid); !s.ok()) return s;
  auto it = servers_.find(uuid);
  if (it == servers_.end()) return absl::NotFoundError("cnapi GetServer: 404 ResourceNotFound");
  return it->second;
}

absl::StatusOr<std::string> FakeCnapiClient::InstallAgent(const std::string& server_uuid,
                                                          const std::string& image_uuid) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("InstallAgent", absl::StrCat(server_uuid, " ", image_uuid)); !s.ok()) return s;
  auto it = servers_.find(server_uuid);
  if (it == servers_.end()) return absl::NotFoundError("cnapi InstallAgent: 404 ResourceNotFound");
  if (it->second.status != "running") {
    return absl::FailedPreconditionError("cnapi InstallAgent: 409 ServerNotRunning");
  }
  Task t{FakeUuid("task", ++seq_), "agent_install", server_uuid, "complete", ""};
  auto img = agent_images_.find(image_uuid);
  if (img == agent_images_.end()) {
    t.status = "failure";
    t.error = "image " + image_uuid + " not found";
  } else {
    bool found = false;
    for (Agent& a : it->second.agents) {
      if (a.name == img->second.first) {
        a.version = img->second.second;
        a.image_uuid = image_uuid;
        found = true;
      }
    }
    if (!found) it->second.agents.push_back(Agent{img->second.first, img->second.second, image_uuid, ""});
  }
  tasks_[t.id] = t;
  return t.id;
}

absl::StatusOr<std::string> FakeCnapiClient::UninstallAgents(const std::string& server_uuid,
                                                             const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("UninstallAgents", server_uuid); !s.ok()) return s;
  auto it = servers_.find(server_uuid);
  if (it == servers_.end()) return absl::NotFoundError("cnapi UninstallAgents: 404 ResourceNotFound");
  auto& agents = it->second.agents;
  agents.erase(std::remove_if(agents.begin(), agents.end(),
                              [&](const Agent& a) { return std::find(names.begin(), names.end(), a.name) != names.end(); }),
               agents.end());
  Task t{FakeUuid("task", ++seq_), "agents_uninstall", server_uuid, "complete", ""};
  tasks_[t.id] = t;
  return t.id;
}

absl::StatusOr<Task> FakeCnapiClient::GetTask(const std::string& id) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("GetTask", id); !s.ok()) return s;
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return absl::NotFoundError("cnapi GetTask: 404 ResourceNotFound");
  Task t = it->second;
  if (hold_) t.status = "active";
  return t;
}

void FakeCnapiClient::HoldTasks(bool hold) {
  std::lock_guard<std::mutex> l(mu_);
  hold_ = hold;
}

absl::StatusOr<Task> FakeCnapiClient::WaitTask(const std::string& id, absl::Duration) { return GetTask(id); }

// ---------------------------------------------------------------- IMGAPI

void FakeImgapiClient::PutImage(const Image& i) {
  std::lock_guard<std::mutex> l(mu_);
  images_[i.uuid] = i;
}

void FakeImgapiClient::PutRemoteImage(const Image& i) {
  std::lock_guard<std::mutex> l(mu_);
  remote_[i.uuid] = i;
}

absl::StatusOr<std::vector<Image>> FakeImgapiClient::ListImages(const ImageFilter& f) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("ListImages", f.name); !s.ok()) return s;
  std::vector<Image> out;
  std::string state = f.state.empty() ? "active" : f.state;
  for (const auto& kv : images_) {
    const Image& i = kv.second;
    if (state != "all" && i.state != state) continue;
    if (!f.name.empty() && i.name != f.name) continue;
    if (!f.version.empty() && i.version != f.version) continue;
    if (!f.os.empty() && i.os != f.os) continue;
    if (!f.type.empty() && i.type != f.type) continue;
    out.push_back(i);
  }
  std::sort(out.begin(), out.end(), [](const Image& a, const Image& b) { return a.published_at < b.published_at; });
  return out;
}

absl::StatusOr<Image> FakeImgapiClient::GetImage(const std::string& uuid) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("GetImage", uuid); !s.ok()) return s;
  auto it = images_.find(uuid);
  if (it == images_.end()) return absl::NotFoundError("imgapi GetImage: 404 ResourceNotFound");
  return it->second;
}

absl::StatusOr<Image> FakeImgapiClient::FindImage(const std::string& name, const std::string& version) {
  ImageFilter f;
  f.name = name;
  f.version = version;
  auto all = ListImages(f);
  if (!all.ok()) return all.status();
  if (all->empty()) return absl::NotFoundError(absl::StrCat("no active image ", name, "@", version));
  return all->back();
}

absl::StatusOr<JobRef> FakeImgapiClient::ImportRemote(const std::string& uuid, const std::string& source) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("ImportRemote", absl::StrCat(uuid, " ", source)); !s.ok()) return s;
  if (images_.count(uuid)) return absl::AlreadyExistsError("imgapi ImportRemote: 409 ImageUuidAlreadyExists");
  Job j{FakeUuid("job", ++seq_), "import-remote-image", "import-remote-image", "succeeded", "", ""};
  auto it = remote_.find(uuid);
  if (it == remote_.end()) {
    j.execution = "failed";
    j.error = "image " + uuid + " was not found at the source";
  } else {
    images_[uuid] = it->second;
    images_[uuid].state = "active";
  }
  jobs_[j.uuid] = j;
  return JobRef{"", j.uuid, uuid, ""};
}

absl::StatusOr<JobRef> FakeImgapiClient::CreateFromVm(const std::string& vm_uuid, const std::string& name,
                                                      const std::string& version, const std::string&) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("CreateFromVm", vm_uuid); !s.ok()) return s;
  Image i;
  i.uuid = FakeUuid("image", ++seq_);
  i.name = name;
  i.version = version;
  i.state = "active";
  images_[i.uuid] = i;
  Job j;
  j.uuid = FakeUuid("job", ++seq_);
  j.name = j.task = "create-from-vm";
  j.execution = "succeeded";
  j.vm_uuid = vm_uuid;
  jobs_[j.uuid] = j;
  return JobRef{vm_uuid, j.uuid, i.uuid, ""};
}

absl::StatusOr<Job> FakeImgapiClient::WaitJob(const JobRef& ref, absl::Duration) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto s = Enter("WaitJob", ref.job_uuid); !s.ok()) return s;
  auto it = jobs_.find(ref.job_uuid);
  if (it == jobs_.end()) return absl::NotFoundError("GetJob: 404 ResourceNotFound");
  return it->second;
}

}  // namespace mariposa::triton
