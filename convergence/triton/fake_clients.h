// In-memory fakes of the Triton clients for unit tests: a call log, failure
// injection, and jobs that finish at once (or when told). Thread-safe.
#ifndef MARIPOSA_CONVERGENCE_TRITON_FAKE_CLIENTS_H_
#define MARIPOSA_CONVERGENCE_TRITON_FAKE_CLIENTS_H_

#include <deque>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "convergence/triton/clients.h"

namespace mariposa::triton {

// Shared by the fakes: the call log and injected failures.
class FakeBase {
 public:
  // Every call, as "Op arg" (e.g. "CreateVm 5f1c…"), in order.
  std::vector<std::string> calls() const;
  void ClearCalls();
  // The next `n` calls of `op` fail with `status`.
  void FailNext(const std::string& op, absl::Status status, int n = 1);

 protected:
  // Logs the call; returns the injected failure, if any.
  absl::Status Enter(const std::string& op, const std::string& arg);
  mutable std::mutex mu_;

 private:
  std::vector<std::string> calls_;
  std::map<std::string, std::deque<absl::Status>> failures_;
};

class FakeVmapiClient : public VmapiClient, public FakeBase {
 public:
  // When false, jobs stay "running" until CompleteJobs().
  void set_auto_complete(bool v);
  // Finishes every pending job; those whose VM is in `fail_vms` fail
  // without their effect.
  void CompleteJobs(const std::set<std::string>& fail_vms = {});
  // The next ListVms answers with what it reads, then finishes every
  // pending job: jobs that end between a listing and the poll of them.
  void CompleteJobsAfterNextList();
  // Called with each job GetJob answers, after the answer is made (as if
  // something happened while the job was polled: a feed item).
  void set_on_get_job(std::function<void(const Job&)> f);
  // Called with each CreateVm request before it is taken (it may block: a
  // slow VMAPI while another sync runs).
  void set_on_create_vm(std::function<void(const CreateVmRequest&)> f);
  // Adds or replaces a VM directly (state as given).
  void PutVm(const Vm& vm);
  std::vector<Vm> AllVms() const;
  // Servers a new VM is placed on, round robin ("" = none).
  void set_servers(std::vector<std::string> servers);

  absl::StatusOr<std::vector<Vm>> ListVms(const VmFilter& filter) override;
  absl::StatusOr<int64_t> CountVms(const VmFilter& filter) override;
  absl::StatusOr<Vm> GetVm(const VmRef& vm) override;
  absl::StatusOr<JobRef> CreateVm(const CreateVmRequest& req) override;
  absl::StatusOr<JobRef> Act(const VmRef& vm, VmAction action,
                             absl::Duration timeout = absl::ZeroDuration()) override;
  absl::StatusOr<JobRef> Reprovision(const VmRef& vm, const std::string& image_uuid) override;
  absl::StatusOr<JobRef> Update(const VmRef& vm, const UpdateVmRequest& req) override;
  absl::StatusOr<JobRef> DeleteVm(const VmRef& vm) override;
  absl::StatusOr<JobRef> SetTags(const VmRef& vm, const std::map<std::string, std::string>& tags,
                                 bool replace) override;
  absl::StatusOr<JobRef> DeleteTag(const VmRef& vm, const std::string& key) override;
  absl::StatusOr<Job> GetJob(const std::string& uuid) override;
  absl::StatusOr<Job> WaitJob(const std::string& uuid, absl::Duration timeout) override;
  absl::Status Ping() override;

 private:
  struct PendingJob {
    Job job;
    std::function<void()> effect;  // runs with mu_ held
  };
  JobRef StartLocked(const std::string& task, const std::string& vm_uuid, std::function<void()> effect);
  void CompleteLocked(const std::string& job_uuid);
  bool MatchesLocked(const Vm& vm, const VmFilter& f) const;
  // The VM exists and belongs to the account `vm` names (if any), as VMAPI.
  bool HasLocked(const VmRef& vm) const;

  bool auto_complete_ = true;
  bool complete_after_list_ = false;
  std::function<void(const Job&)> on_get_job_;
  std::function<void(const CreateVmRequest&)> on_create_vm_;
  std::map<std::string, Vm> vms_;
  std::map<std::string, PendingJob> jobs_;
  std::vector<std::string> servers_;
  size_t next_server_ = 0;
  int64_t seq_ = 0;
};

class FakeCnapiClient : public CnapiClient, public FakeBase {
 public:
  void PutServer(const Server& s);
  absl::StatusOr<std::vector<Server>> ListServers() override;
  absl::StatusOr<Server> GetServer(const std::string& uuid) override;
  absl::StatusOr<std::string> InstallAgent(const std::string& server_uuid, const std::string& image_uuid) override;
  absl::StatusOr<std::string> UninstallAgents(const std::string& server_uuid,
                                              const std::vector<std::string>& names) override;
  absl::StatusOr<Task> GetTask(const std::string& id) override;
  absl::StatusOr<Task> WaitTask(const std::string& id, absl::Duration timeout) override;
  // Image uuid -> (agent name, version) for InstallAgent.
  void PutAgentImage(const std::string& image_uuid, const std::string& name, const std::string& version);
  // While held, GetTask reports every task "active" (a batch still running).
  void HoldTasks(bool hold);

 private:
  bool hold_ = false;
  std::map<std::string, Server> servers_;
  std::map<std::string, Task> tasks_;
  std::map<std::string, std::pair<std::string, std::string>> agent_images_;
  int64_t seq_ = 0;
};

class FakeImgapiClient : public ImgapiClient, public FakeBase {
 public:
  void PutImage(const Image& i);
  // Images that ImportRemote can fetch.
  void PutRemoteImage(const Image& i);
  absl::StatusOr<std::vector<Image>> ListImages(const ImageFilter& filter) override;
  absl::StatusOr<Image> GetImage(const std::string& uuid) override;
  absl::StatusOr<Image> FindImage(const std::string& name, const std::string& version) override;
  absl::StatusOr<JobRef> ImportRemote(const std::string& uuid, const std::string& source) override;
  absl::StatusOr<JobRef> CreateFromVm(const std::string& vm_uuid, const std::string& name,
                                      const std::string& version, const std::string& prepare_script) override;
  absl::StatusOr<Job> WaitJob(const JobRef& job, absl::Duration timeout) override;

 private:
  std::map<std::string, Image> images_;
  std::map<std::string, Image> remote_;
  std::map<std::string, Job> jobs_;
  int64_t seq_ = 0;
};

}  // namespace mariposa::triton

#endif  // MARIPOSA_CONVERGENCE_TRITON_FAKE_CLIENTS_H_
