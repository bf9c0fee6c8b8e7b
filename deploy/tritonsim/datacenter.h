// The simulated data center behind tritonsim: servers, images, VMs, workflow
// jobs and CNAPI tasks, with the semantics of VMAPI, CNAPI and IMGAPI (see
// shared/docs/TRITON.md). Every API operation returns the HTTP status, JSON
// body and headers the real service would. Thread-safe: one mutex guards the
// model; a background thread advances jobs and tasks.
#ifndef MARIPOSA_DEPLOY_TRITONSIM_DATACENTER_H_
#define MARIPOSA_DEPLOY_TRITONSIM_DATACENTER_H_

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"

namespace tritonsim {
class ChangeFeed;
class Firewall;
class Mahi;
struct CnsVm;

using json = nlohmann::json;
using Params = std::multimap<std::string, std::string>;

struct Reply {
  int status = 200;
  json body;  // null: no body (unless raw_body is set)
  std::map<std::string, std::string> headers;
  std::string raw_body;  // a body already written as JSON text
};

struct Options {
  int servers = 10;
  int64_t server_ram_mb = 262144;  // 256 GiB
  double job_latency_ms = 0;       // mean time a job or task takes
  double job_jitter = 0;           // +/- fraction of the latency
  double job_failure_rate = 0;     // 0..1
  uint64_t seed = 1;
  std::string datacenter = "sim-1";
  std::string base_url;            // for the workflow-api header
  // Timestamps, job latencies, API delays and waits (required; main() gives
  // the wall clock, tests may give a simulated one).
  const mariposa::Clock* clock = nullptr;
};

// Health behaviour of a VM's listeners (for --listen-vms).
enum class VmHealth { kHealthy, kUnhealthy, kRefuse, kHang };

class DataCenter {
 public:
  // Addresses are given out from each network's .2 upwards; this starts them
  // in the /24 block `block` (1..65535) of every network large enough (the
  // default external 10.0.0.0/8) instead, so that two tritonsims with
  // --listen-vms on one host do not answer for each other's VMs.
  void StartAddressesAtBlock(uint32_t block);
  explicit DataCenter(Options opts);
  ~DataCenter();
  const mariposa::Clock* clock() const { return opts_.clock; }
  // VMAPI's change feed: every change to a VM is published to it (while a
  // listener is registered) with the top-level keys that changed. `feed`
  // must outlive this object; null (the default) publishes nothing.
  void SetChangeFeed(ChangeFeed* feed) { feed_ = feed; }
  ChangeFeed* change_feed() const { return feed_; }
  // FWAPI's rules (fwapi.h).
  Firewall* firewall() const { return firewall_.get(); }
  // mahi's accounts, keys and roles (mahi.h).
  Mahi* mahi() const { return mahi_.get(); }

  // Loads {"servers": [...], "images": [...], "packages": [...], "networks":
  // [...], "network_pools": [...]} (fields as the APIs show them); a list
  // given replaces the defaults.
  // Returns "" or an error message.
  std::string LoadSeed(const json& seed);

  // VMAPI
  Reply ListVms(const Params& q, bool head);
  Reply GetVm(const std::string& uuid, const Params& q);
  Reply CreateVm(const json& body, const Params& q);
  Reply VmAction(const std::string& uuid, const Params& q, const json& body);
  Reply DeleteVm(const std::string& uuid, const Params& q);
  Reply VmTags(const std::string& method, const std::string& uuid, const std::string& key, const Params& q,
               const json& body);
  Reply GetJob(const std::string& uuid);
  Reply WaitJob(const std::string& uuid, const Params& q);
  Reply ListJobs(const Params& q);
  Reply Ping();

  // CNAPI
  Reply ListServers(const Params& q);
  Reply GetServer(const std::string& uuid, const Params& q);
  Reply UpdateServer(const std::string& uuid, const json& body);
  Reply InstallAgent(const std::string& uuid, const json& body);
  Reply UninstallAgents(const std::string& uuid, const json& body);
  Reply GetTask(const std::string& id);
  Reply WaitTask(const std::string& id, const Params& q);

  // IMGAPI
  // `source`: the "updates" source's view (every image in it, with
  // `channels` and `changes`) instead of this IMGAPI's.
  Reply ListImages(const Params& q, bool source = false);
  Reply GetImage(const std::string& uuid, bool source = false);
  Reply ListChannels();
  Reply ImageAction(const std::string& uuid, const Params& q, const json& body);
  Reply CreateImageFromVm(const Params& q, const json& body);

  // PAPI (packages.cc): ?name=, ?active=, ?owner_uuids= filter.
  Reply ListPackages(const Params& q);
  Reply GetPackage(const std::string& uuid);

  // NAPI (networks.cc): ?name=, ?fabric=, ?provisionable_by= filter.
  Reply ListNetworks(const Params& q);
  Reply GetNetwork(const std::string& uuid);
  Reply ListNetworkPools(const Params& q);
  // NAPI's fabrics (fabrics.cc): /fabrics/:owner/vlans[/:vlan_id[/networks[/:uuid]]]
  // and UpdateNetwork (PUT /networks/:uuid).
  Reply ListFabricVlans(const std::string& owner);
  Reply CreateFabricVlan(const std::string& owner, const json& body);
  Reply GetFabricVlan(const std::string& owner, const std::string& vlan);
  Reply UpdateFabricVlan(const std::string& owner, const std::string& vlan, const json& body);
  Reply DeleteFabricVlan(const std::string& owner, const std::string& vlan);
  Reply ListFabricNetworks(const std::string& owner, const std::string& vlan);
  Reply CreateFabricNetwork(const std::string& owner, const std::string& vlan, const json& body);
  Reply GetFabricNetwork(const std::string& owner, const std::string& vlan, const std::string& uuid);
  Reply DeleteFabricNetwork(const std::string& owner, const std::string& vlan, const std::string& uuid);
  Reply UpdateNetwork(const std::string& uuid, const json& body);

  // VOLAPI (volumes.cc): /volumes, /volumes/:uuid[/references], /volumesizes.
  // A volume is `creating` for the job latency, then `ready`; deleting one
  // that active VMs reference is 409 VolumeInUse unless ?force=true.
  Reply ListVolumes(const Params& q);
  Reply GetVolume(const std::string& uuid, const Params& q);
  Reply CreateVolume(const json& body);
  Reply DeleteVolume(const std::string& uuid, const Params& q);
  Reply VolumeReferences(const std::string& uuid);
  static Reply VolumeSizes(const Params& q);

  // Control (fault injection).
  Reply SetServerStatus(const std::string& uuid, const std::string& status);
  // The server leaves CNAPI (decommissioned); its VMs are destroyed.
  Reply DeleteServer(const std::string& uuid_or_hostname);
  Reply KillVm(const std::string& uuid, const std::string& to_state);
  // The VM's process exits with `status`: it stops (a job's end).
  Reply ExitVm(const std::string& uuid, int status);
  Reply SetVmHealth(const std::string& uuid, VmHealth h);
  // A file written inside the guest: under /zones/<uuid>/data/ it lands on
  // the delegate dataset (kept by a reprovision), elsewhere on the root
  // (rewritten by one). Files() lists both.
  Reply WriteFile(const std::string& uuid, const std::string& path, const std::string& content);
  Reply Files(const std::string& uuid);
  Reply SetJobKnobs(const json& body);
  Reply Stats();

  // Fails the next `n` calls of `op` (e.g. "CreateVm") with `status`
  // (500/503), or hangs them for `hang_ms` when status is 0. Replaces what
  // was asked for `op` before: n = 0 ends an injected outage.
  void FailNext(const std::string& op, int n, int status, int hang_ms);
  // Consumes one injected failure for `op`, if any. Returns false when the
  // call should proceed.
  bool TakeFailure(const std::string& op, Reply* reply, int* hang_ms);

  // For listeners: running VMs with their nic IP and ports.
  struct Endpoint {
    std::string vm_uuid;
    std::string ip;
    std::vector<int> ports;
    VmHealth health;
  };
  std::vector<Endpoint> RunningEndpoints();
  // For CNS (cns.h): what it reads of every VM, and the accounts whose CNS
  // is off (UFDS's triton_cns_enabled; every account has it on until
  // `tritonsim ctl cns-account ACCOUNT off`).
  std::vector<CnsVm> CnsVms();
  std::set<std::string> CnsDisabledAccounts();
  void SetCnsEnabled(const std::string& account, bool on);
  VmHealth HealthOf(const std::string& vm_uuid);

  static Reply Error(int status, const std::string& code, const std::string& message);

 private:
  struct Package {
    std::string uuid, name, version = "1.0.0", group, description, os, brand;
    int64_t max_physical_memory = 1024, quota = 10240, max_swap = 2048, max_lwps = 4000, cpu_cap = 100,
            vcpus = 0, zfs_io_priority = 100, fss = 100;
    bool active = true;
    std::vector<std::string> owner_uuids;  // empty: anyone may use it
  };
  struct Network {
    std::string uuid, name, nic_tag = "external", gateway;
    uint32_t base = 0, prefix = 24;  // subnet
    uint32_t next = 1;               // the last host index given out (.1 is the gateway)
    // The provisioning range, as host indexes (last 0: the subnet's last host).
    uint32_t first = 2, last = 0;
    int vlan_id = 0, mtu = 1500;
    bool fabric = false;
    std::vector<std::string> owner_uuids;  // empty: anyone may provision on it
    // A fabric network's (fabrics.cc): its owner, and what CreateFabricNetwork took.
    std::string owner_uuid, description;
    std::vector<std::string> resolvers;
    json routes = json::object();
    bool internet_nat = true;
    // Host addresses, the gateway included (prefix is 8..30).
    uint32_t hosts() const { return (uint32_t{1} << (32 - prefix)) - 2; }
    bool full() const { return next >= (last != 0 ? last : hosts()); }
  };
  // A VOLAPI volume (volumes.cc): an RFD 26 NFS shared volume.
  struct Volume {
    std::string uuid, owner_uuid, name, type = "tritonnfs", state = "creating", filesystem_path;
    int64_t size = 10240;  // MiB
    std::vector<std::string> networks;
    int64_t create_ms = 0;
  };
  // An account's fabric VLAN (fabrics.cc).
  struct FabricVlan {
    std::string owner_uuid, name, description;
    int vlan_id = 0;
  };
  struct NetworkPool {
    std::string uuid, name, nic_tag = "external";
    std::vector<std::string> networks;
    std::vector<std::string> owner_uuids;
  };
  struct Nic {
    std::string interface, mac, nic_tag, ip, netmask, gateway, network_uuid;
    int vlan_id = 0;
    bool primary = false;
  };
  struct Vm {
    std::string uuid, alias, owner_uuid, billing_id, brand, server_uuid, state, zone_state, image_uuid;
    int64_t ram = 0, max_physical_memory = 0, quota = 0, cpu_cap = 0;
    int64_t max_swap = 0, max_lwps = 0, zfs_io_priority = 0, vcpus = 0, cpu_shares = 0;
    int64_t create_ms = 0, modified_ms = 0;
    json tags = json::object(), customer_metadata = json::object(), internal_metadata = json::object();
    json disks;  // kvm/bhyve only
    // RFD 26 volumes it mounts (CreateVm's `volumes`: {name, type, mode,
    // mountpoint}); it references them while active (volumes.cc).
    json volumes = json::array();
    std::vector<Nic> nics;
    // delegate_dataset: "zones/<uuid>/data", with the files written there;
    // root_files: what lives on the zone root (a reprovision replaces it).
    std::vector<std::string> datasets;
    std::map<std::string, std::string> dataset_files, root_files;
    int reprovisions = 0;
    // The exit of its init process (vmadm's exit_status, exit_timestamp):
    // -1 while it has not exited.
    int exit_status = -1;
    int64_t exit_ms = 0;
    bool autoboot = true, firewall_enabled = false, docker = false;
    VmHealth health = VmHealth::kHealthy;
    // Bumped by Touch() on every change; the serialized form (all but the
    // state, which depends on the server) is cached per revision.
    uint64_t rev = 1;
    mutable uint64_t json_rev = 0;
    mutable std::string json_cache;
    mutable size_t json_state_at = 0;
    // The JSON last published to the change feed ("" before the first).
    std::string feed_json;
  };
  struct Agent {
    std::string name, version, image_uuid, uuid;
  };
  struct Server {
    std::string uuid, hostname, status = "running", current_platform = "20261101T000000Z";
    int64_t ram = 0, used_ram = 0;
    bool setup = true, reserved = false, headnode = false;
    double reservation_ratio = 0.15;
    json traits = json::object();
    std::vector<Agent> agents;
    std::set<std::string> vms;
    int64_t boot_ms = 0;
  };
  struct Image {
    std::string uuid, owner, name, version, state = "active", type = "zone-dataset", os = "smartos", origin;
    bool disabled = false, is_public = true;
    int64_t published_ms = 0;
    // In the "updates" source (served at /updates/images): its channels,
    // change log and size.
    bool in_source = false;
    std::vector<std::string> channels;
    std::string changes;
    int64_t size = 104857600;
    // Created from a VM: the prototype's root files (what instances of it start with).
    std::map<std::string, std::string> root_files;
    json tags = json::object(), requirements = json::object(), files = json::array();
  };
  struct Job {
    std::string uuid, name, execution = "queued", task, vm_uuid, image_uuid;
    json params = json::object();
    std::vector<std::pair<std::string, std::string>> steps;  // (name, result) before the final one
    int64_t created_ms = 0, started_ms = 0, finished_ms = 0;
    std::string error;
  };
  struct Task {
    std::string id, task, server_uuid, status = "active";
    json history = json::array();
    json req = json::object();
    int64_t created_ms = 0;
  };
  // A scheduled completion of a job or task.
  struct Event {
    int64_t due_ms;
    uint64_t seq;
    std::function<void()> fire;  // runs with mu_ held
    bool operator>(const Event& o) const { return due_ms != o.due_ms ? due_ms > o.due_ms : seq > o.seq; }
  };

  int64_t NowMs() const;
  static int64_t FreeRam(const Server& s);
  // Every change of a server's used RAM goes through here (keeps by_free_).
  void AddUsedRamLocked(Server* s, int64_t delta);
  // By uuid or hostname; servers_.end() when there is none.
  std::map<std::string, Server>::iterator FindServerLocked(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // VMAPI's loading of /vms/UUID, honouring ?owner_uuid= (vms_.end(): not found).
  std::unordered_map<std::string, Vm>::iterator FindVmLocked(const std::string& uuid, const Params& q)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void IndexServersLocked();
  std::string NewUuidLocked();
  std::string NewMacLocked();
  json VmJson(const Vm& vm) const;
  void AppendVmJson(const Vm& vm, std::string* out) const;
  static void WriteNicsJson(const std::vector<Nic>& nics, std::string* out);
  void WriteVmJson(const Vm& vm, std::string* out, size_t* state_at) const;
  // Records a change to `vm` (last_modified, cache revision) and publishes it.
  void Touch(Vm* vm);
  // Publishes what changed in `vm`'s JSON since it was last published.
  void FeedLocked(Vm* vm);
  json ServerJson(const Server& s, const std::set<std::string>& extras) const;
  json ImageJson(const Image& i, bool source = false) const;
  static json PackageJson(const Package& p);
  static json NetworkJson(const Network& n);
  // Seeds the packages and networks a data center has by default (the
  // examples' g4-* packages; networks external, internal and a fabric).
  void DefaultPackagesAndNetworksLocked();
  std::string LoadPackagesLocked(const json& list);
  std::string LoadVmsLocked(const json& list);
  std::string LoadNetworksLocked(const json& seed);
  // A network named by uuid or name (or a pool's first network with room);
  // null with `why`.
  Network* FindNetworkLocked(const std::string& ref, const std::string& owner, std::string* why);
  // The next address of `n` into `nic`; false when the subnet is full.
  bool AllocateLocked(Network* n, Nic* nic);
  json JobJson(const Job& j) const;
  json ChainResults(const Job& j) const;
  json TaskJson(const Task& t) const;
  std::string EffectiveStateLocked(const Vm& vm) const;
 public:
  // A VM a listing matched, with its sort key (ListVms).
  struct VmMatch {
    const Vm* vm;             // null for a marker's probe
    const std::string* uuid;  // the tie-breaker
    int64_t num;      // numeric sort key (create_timestamp, ram)
    std::string str;  // string sort key (everything else)
  };
 private:
  // CreateVm's steps (vmapi.cc).
  struct CreateCheck;
  void CheckCreateLocked(const json& body, CreateCheck* c, json* errors);
  static void SizeVm(const json& body, const CreateCheck& c, Vm* vm);
  void AttachNicsLocked(const CreateCheck& c, Vm* vm);
  // VmAction's update and reprovision (vmapi.cc).
  void UpdateLocked(Vm* vm, const json& changes);
  Reply ReprovisionLocked(Vm* vm, const json& body);
  std::vector<VmMatch> MatchingVmsLocked(const Params& q, const json& predicate,
                                         const std::set<std::string>& uuids_filter,
                                         const std::string& sort_field) const;
  // Chooses a server for `ram` MiB honouring locality; "" with `why` if none.
  std::string PlaceLocked(int64_t ram, const json& locality, std::string* why);
  // Starts a job that finishes after the configured latency; `effect` runs
  // at the end (with mu_ held) and returns "" or an error (job fails).
  Reply StartJobLocked(const std::string& name, const std::string& task, const std::string& vm_uuid,
                       const json& params, std::function<std::string()> effect, int status = 202);
  void ScheduleLocked(int64_t delay_ms, std::function<void()> fire);
  void ExitLocked(Vm* vm, int status);
  void ScheduleExitLocked(const Vm& vm);
  int64_t LatencyLocked();
  void TagIndexAddLocked(const Vm& vm);
  void TagIndexRemoveLocked(const Vm& vm);
  void Loop();

  Options opts_;
  ChangeFeed* feed_ = nullptr;
  std::unique_ptr<Firewall> firewall_;
  std::unique_ptr<Mahi> mahi_;
  mutable absl::Mutex mu_;  // releasing it wakes the waits on events and job/task completion
  std::mt19937_64 rng_;
  std::unordered_map<std::string, Vm> vms_;
  std::map<std::string, Server> servers_;
  // The servers whose status is not "running" (their VMs read "unknown"),
  // so that a VM's state is known without a lookup while none is down.
  std::set<std::string> servers_down_;
  std::set<std::string> cns_disabled_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<int64_t, std::string>> by_free_;  // (unreserved RAM, server uuid)
  std::map<std::string, Image> images_;
  std::map<std::string, Package> packages_;
  std::map<std::string, Network> networks_;
  std::map<std::string, NetworkPool> pools_;
  std::map<std::pair<std::string, int>, FabricVlan> vlans_;  // by (owner, vlan id)
  std::map<std::string, Volume> volumes_;  // by uuid, deleted ones dropped
  json VolumeJson(const Volume& v) const;
  // The uuids of the active VMs that mount `v`.
  std::vector<std::string> RefsLocked(const Volume& v) const;
  // CreateVm's `volumes`: each names a ready volume of `owner`; "" or why not.
  std::string CheckMountsLocked(const json& volumes, const std::string& owner) const;
  // The VLAN `vlan` (its id as text) of `owner`, or null with the reply.
  FabricVlan* FindVlanLocked(const std::string& owner, const std::string& vlan, Reply* err);
  // Network `uuid` of `owner` on VLAN `vlan`, or null with the reply.
  Network* FindFabricNetworkLocked(const std::string& owner, const std::string& vlan, const std::string& uuid,
                                   Reply* err);
  static json VlanJson(const FabricVlan& v);
  // A host of the network's subnet named by body[field], as its index (1 ..
  // hosts), or 0.
  static uint32_t HostIndex(const Network& n, const json& body, const char* field);
  // resolvers, routes, description and name from `body` (Create/UpdateNetwork).
  static Reply FillNetworkFields(const json& body, Network* n);
  std::unordered_map<std::string, Job> jobs_;
  std::unordered_map<std::string, Task> tasks_;
  // tag key -> value -> vm uuids
  std::unordered_map<std::string, std::unordered_map<std::string, std::set<std::string>>> tag_index_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t event_seq_ = 0;
  uint32_t block_start_ = 0;  // StartAddressesAtBlock's first host index
  struct Failure {
    int remaining = 0;
    int status = 503;
    int hang_ms = 0;
  };
  std::map<std::string, Failure> failures_;  // by op
  std::map<std::string, int64_t> op_counts_;
  bool stop_ = false;
  std::thread loop_;
};

}  // namespace tritonsim

#endif  // MARIPOSA_DEPLOY_TRITONSIM_DATACENTER_H_
