// Interfaces to Triton's internal APIs — VMAPI (instances), CNAPI (servers
// and their agents), IMGAPI (images) — with the data they return. The HTTP
// implementations are in http_clients.h, in-memory fakes in fake_clients.h.
// Implementations are thread-safe. Errors are absl::Status values whose
// message carries the API, operation, Triton code and message; see http.h.
#ifndef MARIPOSA_CONVERGENCE_TRITON_CLIENTS_H_
#define MARIPOSA_CONVERGENCE_TRITON_CLIENTS_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace mariposa::triton {

struct Nic {
  std::string ip;
  std::string mac;
  std::string network_uuid;
  bool primary = false;
  std::string interface;  // net0, net1, …
};

struct Vm {
  std::string uuid;
  std::string alias;
  std::string owner_uuid;
  std::string brand;
  std::string server_uuid;
  std::string state;  // provisioning running stopped failed destroyed unknown …
  std::string image_uuid;
  std::string billing_id;  // its package's uuid
  int64_t ram = 0;
  std::map<std::string, std::string> tags;  // non-string values as JSON text
  std::map<std::string, std::string> customer_metadata;
  std::map<std::string, std::string> internal_metadata;  // non-string values as JSON text
  bool docker = false;
  bool firewall_enabled = false;
  int exit_status = -1;  // vmadm's exit_status of its init process; -1 while it has not exited
  int64_t quota = 0;    // GiB
  int64_t cpu_cap = 0;  // percent of one CPU
  std::vector<Nic> nics;
  std::vector<std::string> datasets;  // delegated ZFS datasets ("zones/<uuid>/data")
  std::string create_timestamp;  // ISO 8601
  std::string last_modified;
};

struct VmFilter {
  std::map<std::string, std::string> tags;  // tag.K=V, "*" = any value
  std::string state;                        // running|stopped|active|destroyed|…; "" = all
  std::string owner_uuid;
  std::string server_uuid;
  std::string alias;                        // prefix
  std::string image_uuid;
  std::vector<std::string> uuids;
  std::string predicate;                    // JSON text
  std::vector<std::string> fields;          // VMAPI's fields: only these keys; empty = all
  int page_size = 1000;                     // 1..1000
  bool page_by_marker = true;               // else by offset
};

struct Locality {
  bool strict = false;
  std::vector<std::string> near;  // VM uuids
  std::vector<std::string> far;   // VM uuids
};

// An instance's size as VMAPI takes it (create and in-place update): its
// package's uuid and values, or resources given beside it. 0 / "" = VMAPI's
// default on a create, unchanged on an update.
struct Dimensions {
  std::string billing_id;  // the package's uuid
  int64_t ram = 0;         // MiB
  int64_t quota = 0;       // GiB of disk
  int64_t cpu_cap = 0;     // percent of one CPU
  int64_t max_swap = 0;    // MiB
  int64_t max_lwps = 0;
  int64_t zfs_io_priority = 0;
  int64_t vcpus = 0;  // hardware VMs only
};

struct CreateVmRequest {
  std::string uuid;  // chosen by the caller, so a retried create is idempotent
  std::string owner_uuid;
  std::string alias;
  std::string brand;
  std::string image_uuid;
  Dimensions dim;
  std::vector<std::string> networks;
  std::string server_uuid;  // optional
  std::map<std::string, std::string> tags;
  std::map<std::string, std::string> customer_metadata;
  std::map<std::string, std::string> internal_metadata;  // docker:cmd, docker:env … (sdc-docker's keys)
  bool docker = false;  // a Docker container (sdc-docker's `docker: true`)
  bool delegate_dataset = false;  // a ZFS dataset of its own, kept by a reprovision
  bool firewall_enabled = false;  // the manifest's firewall rules apply to it (projects/firewall.h)
  std::optional<Locality> locality;
  // VOLAPI volumes it mounts (VMAPI's `volumes`: name, type tritonnfs, mode,
  // mountpoint), by their VOLAPI name.
  struct Mount {
    std::string name, mountpoint, mode = "rw";
  };
  std::vector<Mount> volumes;
};

// VMAPI's update action: what changes in place (vmadm update). Metadata
// maps are merged; keys in the remove_* lists are deleted; 0 / "" = unchanged.
struct UpdateVmRequest {
  std::map<std::string, std::string> customer_metadata, internal_metadata;
  std::vector<std::string> remove_customer_metadata, remove_internal_metadata;
  Dimensions dim;  // vcpus is not changed in place
  std::optional<bool> firewall_enabled;  // nullopt: unchanged
};

struct JobRef {
  std::string vm_uuid;
  std::string job_uuid;
  std::string image_uuid;        // image jobs
  std::string workflow_api;      // from the workflow-api header
};

struct Job {
  std::string uuid;
  std::string name;
  std::string task;
  std::string execution;  // queued running succeeded failed canceled …
  std::string vm_uuid;
  std::string error;      // of a failed job, from chain_results
  std::vector<std::string> steps;  // chain_results in order: "name: result"
  bool done() const { return execution == "succeeded" || execution == "failed" || execution == "canceled"; }
};

enum class VmAction { kStart, kStop, kReboot, kKill };

// A VM named in a call: its uuid and, when known, the account it must
// belong to. VMAPI answers 404 for a VM of another account (owner_uuid),
// so a project acts only on its own account's VMs.
struct VmRef {
  VmRef(std::string id) : uuid(std::move(id)) {}  // NOLINT: a bare uuid names no account
  VmRef(const char* id) : uuid(id) {}             // NOLINT
  VmRef(std::string id, std::string owner) : uuid(std::move(id)), owner_uuid(std::move(owner)) {}
  std::string uuid;
  std::string owner_uuid;  // "" = any account
};

// VMAPI. ListVms pages until exhausted.
class VmapiClient {
 public:
  virtual ~VmapiClient() = default;
  virtual absl::StatusOr<std::vector<Vm>> ListVms(const VmFilter& filter) = 0;
  // x-joyent-resource-count of a HEAD /vms.
  virtual absl::StatusOr<int64_t> CountVms(const VmFilter& filter) = 0;
  virtual absl::StatusOr<Vm> GetVm(const VmRef& vm) = 0;
  // ALREADY_EXISTS when a VM with req.uuid exists (a retried create).
  virtual absl::StatusOr<JobRef> CreateVm(const CreateVmRequest& req) = 0;
  // Idempotent: starting a running VM or stopping a stopped one succeeds.
  // `timeout` (stop only, > 0): how long the guest gets to shut down
  // before it is halted (VMAPI's `timeout`, seconds).
  virtual absl::StatusOr<JobRef> Act(const VmRef& vm, VmAction action,
                                     absl::Duration timeout = absl::ZeroDuration()) = 0;
  virtual absl::StatusOr<JobRef> Reprovision(const VmRef& vm, const std::string& image_uuid) = 0;
  virtual absl::StatusOr<JobRef> Update(const VmRef& vm, const UpdateVmRequest& req) = 0;
  virtual absl::StatusOr<JobRef> DeleteVm(const VmRef& vm) = 0;
  // Merges `tags` into the VM's (or replaces them all).
  virtual absl::StatusOr<JobRef> SetTags(const VmRef& vm, const std::map<std::string, std::string>& tags,
                                         bool replace) = 0;
  // Removes one tag (VMAPI's DELETE /vms/:uuid/tags/:key); NOT_FOUND when
  // the VM or the tag is not there.
  virtual absl::StatusOr<JobRef> DeleteTag(const VmRef& vm, const std::string& key) = 0;
  virtual absl::StatusOr<Job> GetJob(const std::string& uuid) = 0;
  // Polls until the job ends or `timeout` passes (DEADLINE_EXCEEDED).
  virtual absl::StatusOr<Job> WaitJob(const std::string& uuid, absl::Duration timeout) = 0;
  virtual absl::Status Ping() = 0;
};

// The VMs of `uuids` as VMAPI lists them, `batch` uuids to a ListVms (one
// call per batch, not a GetVm each); a VM it does not list is not returned.
inline absl::StatusOr<std::vector<Vm>> ListVmsByUuid(VmapiClient* vmapi, const std::vector<std::string>& uuids,
                                                     size_t batch) {
  std::vector<Vm> out;
  for (size_t at = 0; at < uuids.size(); at += batch) {
    VmFilter f;
    f.uuids.assign(uuids.begin() + at, uuids.begin() + std::min(uuids.size(), at + batch));
    absl::StatusOr<std::vector<Vm>> vms = vmapi->ListVms(f);
    if (!vms.ok()) return vms.status();
    for (Vm& vm : *vms) out.push_back(std::move(vm));
  }
  return out;
}

struct Agent {
  std::string name;
  std::string version;
  std::string image_uuid;
  std::string uuid;
};

struct Server {
  std::string uuid;
  std::string hostname;
  std::string status;  // running | unknown | …
  bool headnode = false;
  bool reserved = false;
  bool setup = true;
  int64_t ram = 0;
  int64_t unreserved_ram = 0;
  std::string traits_json;
  std::vector<Agent> agents;
};

struct Task {
  std::string id;
  std::string task;
  std::string server_uuid;
  std::string status;  // active | complete | failure
  std::string error;   // of a failed task
  bool done() const { return status == "complete" || status == "failure"; }
};

// CNAPI.
class CnapiClient {
 public:
  virtual ~CnapiClient() = default;
  // All servers with agents and capacity, paged.
  virtual absl::StatusOr<std::vector<Server>> ListServers() = 0;
  virtual absl::StatusOr<Server> GetServer(const std::string& uuid) = 0;
  // Returns the task id. FAILED_PRECONDITION (ServerNotRunning) for a down server.
  virtual absl::StatusOr<std::string> InstallAgent(const std::string& server_uuid, const std::string& image_uuid) = 0;
  virtual absl::StatusOr<std::string> UninstallAgents(const std::string& server_uuid,
                                                      const std::vector<std::string>& names) = 0;
  virtual absl::StatusOr<Task> GetTask(const std::string& id) = 0;
  virtual absl::StatusOr<Task> WaitTask(const std::string& id, absl::Duration timeout) = 0;
};

struct Image {
  std::string uuid;
  std::string name;
  std::string version;
  std::string state;
  std::string os;
  std::string type;
  std::string owner;
  std::string origin;
  std::string published_at;
  std::string requirements_brand;  // requirements.brand: the brand it must run as, if any
  int64_t size = 0;                 // bytes of its first file (what an import downloads)
  std::vector<std::string> channels;  // a source's image: the channels it is in
  std::string changes;                // a source's image: its change log, if it has one
  // Set by the resolver, not IMGAPI: "" = in this data center's IMGAPI;
  // else the source (URL) it must be imported from before it can be used.
  std::string source;
};

struct ImageFilter {
  std::string name;     // "~x" = substring
  std::string version;
  std::string state;    // default active; "all"
  std::string os;
  std::string type;
  std::string channel;  // a source's channel ("" = every channel)
  int page_size = 1000;
};

// IMGAPI. Jobs it starts are waited for on the workflow API it names.
class ImgapiClient {
 public:
  virtual ~ImgapiClient() = default;
  virtual absl::StatusOr<std::vector<Image>> ListImages(const ImageFilter& filter) = 0;
  virtual absl::StatusOr<Image> GetImage(const std::string& uuid) = 0;
  // Resolves name@version to the newest active image of that name and version.
  virtual absl::StatusOr<Image> FindImage(const std::string& name, const std::string& version) = 0;
  virtual absl::StatusOr<JobRef> ImportRemote(const std::string& uuid, const std::string& source) = 0;
  // `prepare_script` (optional): the operator's own script, run with the
  // prepare-image script early in the prototype's boot (RFD 109).
  virtual absl::StatusOr<JobRef> CreateFromVm(const std::string& vm_uuid, const std::string& name,
                                              const std::string& version, const std::string& prepare_script) = 0;
  virtual absl::StatusOr<Job> WaitJob(const JobRef& job, absl::Duration timeout) = 0;
};

// A PAPI package: the dimensions an instance is billed for (MiB, except
// cpu_cap in percent of one CPU).
struct Package {
  std::string uuid;
  std::string name;
  std::string version;
  bool active = true;
  int64_t max_physical_memory = 0;
  int64_t quota = 0;
  int64_t max_swap = 0;
  int64_t max_lwps = 0;
  int64_t cpu_cap = 0;
  int64_t vcpus = 0;
  int64_t zfs_io_priority = 0;
  std::vector<std::string> owner_uuids;  // empty: public
};

// PAPI.
class PapiClient {
 public:
  virtual ~PapiClient() = default;
  // Every package, active or not.
  virtual absl::StatusOr<std::vector<Package>> ListPackages() = 0;
};

// A NAPI network or network pool.
struct Network {
  std::string uuid;
  std::string name;
  std::string subnet;  // networks only
  bool fabric = false;
  bool pool = false;
  std::vector<std::string> owner_uuids;  // empty: anyone may provision on it
};

// An account's fabric VLAN (NAPI).
struct FabricVlan {
  int vlan_id = 0;
  std::string name, description;
};

// A fabric network (NAPI), as created and listed.
struct FabricNetwork {
  std::string uuid, name, subnet, gateway, provision_start_ip, provision_end_ip, description;
  int vlan_id = 0;
  std::vector<std::string> resolvers;
  std::map<std::string, std::string> routes;
  bool internet_nat = true;
};

// NAPI.
class NapiClient {
 public:
  virtual ~NapiClient() = default;
  // Every network, then every network pool (pool = true).
  virtual absl::StatusOr<std::vector<Network>> ListNetworks() = 0;
  // Fabrics, for `owner`'s account.
  virtual absl::StatusOr<std::vector<FabricVlan>> ListFabricVlans(const std::string& owner) = 0;
  virtual absl::Status CreateFabricVlan(const std::string& owner, const FabricVlan& v) = 0;
  virtual absl::Status DeleteFabricVlan(const std::string& owner, int vlan_id) = 0;
  // Every fabric network of the account, on any VLAN.
  virtual absl::StatusOr<std::vector<FabricNetwork>> ListFabricNetworks(const std::string& owner) = 0;
  virtual absl::StatusOr<FabricNetwork> CreateFabricNetwork(const std::string& owner, const FabricNetwork& n) = 0;
  // Resolvers, routes and description of network n.uuid (UpdateNetwork).
  virtual absl::Status UpdateNetwork(const FabricNetwork& n) = 0;
  virtual absl::Status DeleteFabricNetwork(const std::string& owner, int vlan_id, const std::string& uuid) = 0;
};

// An FWAPI firewall rule (sdc-fwapi's rule object).
struct FwRule {
  std::string uuid;
  std::string owner_uuid;  // "" for a global rule
  std::string rule;        // fwrule text
  std::string description;
  bool enabled = true;
  bool global = false;
  bool log = false;  // connections it matches are logged
};

// FWAPI.
class FwapiClient {
 public:
  virtual ~FwapiClient() = default;
  // The owner's rules, and the global ones (as FWAPI lists them).
  virtual absl::StatusOr<std::vector<FwRule>> ListRules(const std::string& owner_uuid) = 0;
  // With the caller's uuid; ALREADY_EXISTS when a rule has it already (a
  // retried create).
  virtual absl::Status CreateRule(const FwRule& r) = 0;
  // Rule text, enabled and description of rule r.uuid.
  virtual absl::Status UpdateRule(const FwRule& r) = 0;
  virtual absl::Status DeleteRule(const std::string& uuid, const std::string& owner_uuid) = 0;
};

// A VOLAPI volume (sdc-volapi's volume object, RFD 26 tritonnfs).
struct Volume {
  std::string uuid;
  std::string owner_uuid;
  std::string name;
  int64_t size = 0;                   // MiB
  std::string state;                  // creating | ready | failed | deleting
  std::vector<std::string> networks;  // fabric network uuids
  std::vector<std::string> refs;      // the VMs that mount it
  std::string create_timestamp;       // ISO 8601
};

// VOLAPI.
class VolapiClient {
 public:
  virtual ~VolapiClient() = default;
  // The owner's volumes, every state but deleted.
  virtual absl::StatusOr<std::vector<Volume>> ListVolumes(const std::string& owner_uuid) = 0;
  // Name, size (0: VOLAPI's default) and networks of `v`. ALREADY_EXISTS
  // when the owner has a volume of that name (a retried create).
  virtual absl::Status CreateVolume(const Volume& v) = 0;
  // FAILED_PRECONDITION while a VM mounts it (VolumeInUse).
  virtual absl::Status DeleteVolume(const std::string& uuid, const std::string& owner_uuid) = 0;
  // The sizes (MiB) VOLAPI makes tritonnfs volumes of (GET /volumesizes).
  virtual absl::StatusOr<std::vector<int64_t>> ListVolumeSizes() = 0;
};

}  // namespace mariposa::triton

#endif  // MARIPOSA_CONVERGENCE_TRITON_CLIENTS_H_
