// HTTP implementations of VmapiClient, CnapiClient and ImgapiClient against a
// real Triton (or tritonsim). Thread-safe.
#ifndef MARIPOSA_CONVERGENCE_TRITON_HTTP_CLIENTS_H_
#define MARIPOSA_CONVERGENCE_TRITON_HTTP_CLIENTS_H_

#include <memory>

#include "common/clock.h"
#include "convergence/triton/clients.h"
#include "convergence/triton/http.h"

namespace mariposa::triton {

class HttpVmapiClient : public VmapiClient {
 public:
  // `clock` (for job-wait deadlines) must outlive the client.
  // Retry pauses, job polls and latencies are measured on `clock`.
  HttpVmapiClient(HttpOptions options, const Clock* clock, MetricsHook hook = nullptr)
      : http_("vmapi", std::move(options), clock, std::move(hook)), clock_(clock) {}
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
  HttpClient http_;
  const Clock* clock_;
};

class HttpCnapiClient : public CnapiClient {
 public:
  // Retry pauses, job polls and latencies are measured on `clock`.
  HttpCnapiClient(HttpOptions options, const Clock* clock, MetricsHook hook = nullptr)
      : http_("cnapi", std::move(options), clock, std::move(hook)), clock_(clock) {}
  absl::StatusOr<std::vector<Server>> ListServers() override;
  absl::StatusOr<Server> GetServer(const std::string& uuid) override;
  absl::StatusOr<std::string> InstallAgent(const std::string& server_uuid, const std::string& image_uuid) override;
  absl::StatusOr<std::string> UninstallAgents(const std::string& server_uuid,
                                              const std::vector<std::string>& names) override;
  absl::StatusOr<Task> GetTask(const std::string& id) override;
  absl::StatusOr<Task> WaitTask(const std::string& id, absl::Duration timeout) override;

 private:
  HttpClient http_;
  const Clock* clock_;
};

class HttpImgapiClient : public ImgapiClient {
 public:
  // Retry pauses, job polls and latencies are measured on `clock`.
  // `workflow_url`: where its jobs are followed when a reply does not say
  // (the data center's workflow API; "" = IMGAPI's own address).
  HttpImgapiClient(HttpOptions options, const Clock* clock, MetricsHook hook = nullptr, std::string workflow_url = "")
      : http_("imgapi", std::move(options), clock, std::move(hook)), clock_(clock),
        workflow_url_(std::move(workflow_url)) {}
  absl::StatusOr<std::vector<Image>> ListImages(const ImageFilter& filter) override;
  absl::StatusOr<Image> GetImage(const std::string& uuid) override;
  absl::StatusOr<Image> FindImage(const std::string& name, const std::string& version) override;
  absl::StatusOr<JobRef> ImportRemote(const std::string& uuid, const std::string& source) override;
  absl::StatusOr<JobRef> CreateFromVm(const std::string& vm_uuid, const std::string& name,
                                      const std::string& version, const std::string& prepare_script) override;
  absl::StatusOr<Job> WaitJob(const JobRef& job, absl::Duration timeout) override;

 private:
  HttpClient http_;
  const Clock* clock_;
  std::string workflow_url_;
};

class HttpPapiClient : public PapiClient {
 public:
  HttpPapiClient(HttpOptions options, const Clock* clock, MetricsHook hook = nullptr)
      : http_("papi", std::move(options), clock, std::move(hook)) {}
  absl::StatusOr<std::vector<Package>> ListPackages() override;

 private:
  HttpClient http_;
};

class HttpNapiClient : public NapiClient {
 public:
  HttpNapiClient(HttpOptions options, const Clock* clock, MetricsHook hook = nullptr)
      : http_("napi", std::move(options), clock, std::move(hook)) {}
  absl::StatusOr<std::vector<Network>> ListNetworks() override;
  absl::StatusOr<std::vector<FabricVlan>> ListFabricVlans(const std::string& owner) override;
  absl::Status CreateFabricVlan(const std::string& owner, const FabricVlan& v) override;
  absl::Status DeleteFabricVlan(const std::string& owner, int vlan_id) override;
  absl::StatusOr<std::vector<FabricNetwork>> ListFabricNetworks(const std::string& owner) override;
  absl::StatusOr<FabricNetwork> CreateFabricNetwork(const std::string& owner, const FabricNetwork& n) override;
  absl::Status UpdateNetwork(const FabricNetwork& n) override;
  absl::Status DeleteFabricNetwork(const std::string& owner, int vlan_id, const std::string& uuid) override;

 private:
  HttpClient http_;
};

class HttpFwapiClient : public FwapiClient {
 public:
  HttpFwapiClient(HttpOptions options, const Clock* clock, MetricsHook hook = nullptr)
      : http_("fwapi", std::move(options), clock, std::move(hook)) {}
  absl::StatusOr<std::vector<FwRule>> ListRules(const std::string& owner_uuid) override;
  absl::Status CreateRule(const FwRule& r) override;
  absl::Status UpdateRule(const FwRule& r) override;
  absl::Status DeleteRule(const std::string& uuid, const std::string& owner_uuid) override;

 private:
  HttpClient http_;
};

class HttpVolapiClient : public VolapiClient {
 public:
  HttpVolapiClient(HttpOptions options, const Clock* clock, MetricsHook hook = nullptr)
      : http_("volapi", std::move(options), clock, std::move(hook)) {}
  absl::StatusOr<std::vector<Volume>> ListVolumes(const std::string& owner_uuid) override;
  absl::Status CreateVolume(const Volume& v) override;
  absl::Status DeleteVolume(const std::string& uuid, const std::string& owner_uuid) override;
  absl::StatusOr<std::vector<int64_t>> ListVolumeSizes() override;

 private:
  HttpClient http_;
};

}  // namespace mariposa::triton

#endif  // MARIPOSA_CONVERGENCE_TRITON_HTTP_CLIENTS_H_
