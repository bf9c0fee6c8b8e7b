// The data center model: construction, the seed, ids, and fault injection.
// Each wire API lives in its own file (vmapi.cc, cnapi.cc, imgapi.cc, jobs.cc).
#include "deploy/tritonsim/datacenter.h"

#include "deploy/tritonsim/cns.h"

#include "common/ids.h"
#include "deploy/tritonsim/fwapi.h"
#include "deploy/tritonsim/mahi.h"

#include <algorithm>
#include <optional>

#include "absl/strings/numbers.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {

Reply DataCenter::Error(int status, const std::string& code, const std::string& message) {
  Reply r;
  r.status = status;
  r.body = {{"code", code}, {"message", message}};
  return r;
}

DataCenter::DataCenter(Options opts) : opts_(std::move(opts)), rng_(opts_.seed) {
  firewall_ = std::make_unique<Firewall>([this] { return NowMs(); }, [] { return mariposa::NewUuid(); });
  mahi_ = std::make_unique<Mahi>([] { return mariposa::NewUuid(); });
  for (int i = 0; i < opts_.servers; ++i) {
    Server s;
    s.uuid = NewUuidLocked();
    s.hostname = i == 0 ? "headnode" : "cn" + std::to_string(i);
    s.headnode = i == 0;
    s.ram = opts_.server_ram_mb;
    s.boot_ms = NowMs();
    // The agents of /opt/smartdc/agents, and gz-tools and dockerlogger,
    // which live outside it (RFD 82 point 5) and are reported alike here.
    s.agents = {{"cn-agent", "2.13.0", "", NewUuidLocked()},
                {"vm-agent", "1.8.0", "", NewUuidLocked()},
                {"gz-tools", "3.0.0", "", NewUuidLocked()},
                {"dockerlogger", "1.0.0", "", NewUuidLocked()}};
    servers_[s.uuid] = s;
  }
  IndexServersLocked();
  DefaultPackagesAndNetworksLocked();
  loop_ = std::thread([this] { Loop(); });
}

DataCenter::~DataCenter() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  loop_.join();
}

int64_t DataCenter::FreeRam(const Server& s) {
  return static_cast<int64_t>(s.ram * (1 - s.reservation_ratio)) - s.used_ram;
}

void DataCenter::AddUsedRamLocked(Server* s, int64_t delta) {
  by_free_.erase({FreeRam(*s), s->uuid});
  s->used_ram += delta;
  by_free_.insert({FreeRam(*s), s->uuid});
}

void DataCenter::IndexServersLocked() {
  by_free_.clear();
  servers_down_.clear();
  for (const auto& kv : servers_) {
    by_free_.insert({FreeRam(kv.second), kv.first});
    if (kv.second.status != "running") servers_down_.insert(kv.first);
  }
}

int64_t DataCenter::NowMs() const { return absl::ToUnixMillis(opts_.clock->Now()); }

std::string DataCenter::NewUuidLocked() {
  uint64_t a = rng_(), b = rng_();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  char buf[37];
  snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
           static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
           static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

std::string DataCenter::NewMacLocked() {
  uint64_t r = rng_();
  char buf[18];
  snprintf(buf, sizeof(buf), "90:b8:d0:%02x:%02x:%02x", static_cast<unsigned>(r & 0xff),
           static_cast<unsigned>((r >> 8) & 0xff), static_cast<unsigned>((r >> 16) & 0xff));
  return buf;
}

std::string DataCenter::LoadSeed(const json& seed) {
  absl::MutexLock l(&mu_);
  if (!seed.is_object()) return "seed must be a JSON object with servers, images, packages and/or networks";
  if (seed.contains("accounts")) {
    if (std::string err = mahi_->Load(seed["accounts"]); !err.empty()) return "accounts: " + err;
  }
  if (seed.contains("servers")) {
    servers_.clear();
    for (const auto& s : seed["servers"]) {
      Server sv;
      sv.uuid = s.value("uuid", NewUuidLocked());
      sv.hostname = s.value("hostname", "cn-" + sv.uuid.substr(0, 8));
      sv.ram = s.value("ram", opts_.server_ram_mb);
      sv.headnode = s.value("headnode", false);
      sv.reserved = s.value("reserved", false);
      sv.setup = s.value("setup", true);
      sv.status = s.value("status", std::string("running"));
      sv.traits = s.value("traits", json::object());
      sv.boot_ms = NowMs();
      for (const auto& a : s.value("agents", json::array())) {
        sv.agents.push_back({a.value("name", ""), a.value("version", ""), a.value("image_uuid", ""),
                             a.value("uuid", NewUuidLocked())});
      }
      if (!IsUuid(sv.uuid)) return "server uuid " + sv.uuid + " is not a uuid";
      servers_[sv.uuid] = sv;
    }
  }
  IndexServersLocked();
  if (seed.contains("packages")) {
    std::string err = LoadPackagesLocked(seed["packages"]);
    if (!err.empty()) return err;
  }
  if (std::string err = LoadNetworksLocked(seed); !err.empty()) return err;
  for (const char* key : {"images", "remote_images"}) {
    if (!seed.contains(key)) continue;
    for (const auto& i : seed[key]) {
      Image im;
      im.uuid = i.value("uuid", NewUuidLocked());
      im.name = i.value("name", "");
      im.version = i.value("version", "");
      im.os = i.value("os", "smartos");
      im.type = i.value("type", "zone-dataset");
      im.owner = i.value("owner", "00000000-0000-0000-0000-000000000000");
      im.tags = i.value("tags", json::object());
      // Seed order is publication order (ListImages sorts by it).
      im.published_ms = NowMs() + static_cast<int64_t>(images_.size());
      if (im.name.empty() || !IsUuid(im.uuid)) return "every image needs a uuid and a name";
      // Remote images are what import-remote can fetch: they are in the
      // "updates" source, not local yet. A local image with "source": true
      // is in the source too.
      bool remote = std::string(key) == "remote_images";
      if (remote) im.state = "remote";
      im.in_source = remote || i.value("source", false);
      if (i.contains("channels") && i["channels"].is_array()) {
        for (const auto& c : i["channels"]) {
          if (c.is_string()) im.channels.push_back(c.get<std::string>());
        }
      } else {
        im.channels = {"release"};
      }
      im.changes = i.value("changes", "");
      if (i.contains("size") && i["size"].is_number_integer()) im.size = i["size"].get<int64_t>();
      images_[im.uuid] = im;
    }
  }
  if (seed.contains("vms")) return LoadVmsLocked(seed["vms"]);
  return "";
}

// VMs that exist before anyone calls VMAPI: the headnode's core zones
// (imgapi0, vmapi0 …, owned by the admin account, tagged smartdc_role and
// smartdc_type) as a freshly set-up Triton has them. Running at once.
std::string DataCenter::LoadVmsLocked(const json& list) {
  if (!list.is_array()) return "vms must be a list";
  for (const auto& v : list) {
    if (!v.is_object()) return "every vm must be an object";
    Vm vm;
    vm.uuid = v.value("uuid", NewUuidLocked());
    vm.alias = v.value("alias", "");
    vm.owner_uuid = v.value("owner_uuid", "");
    vm.brand = v.value("brand", std::string("joyent-minimal"));
    vm.image_uuid = v.value("image_uuid", "");
    if (!IsUuid(vm.uuid) || !IsUuid(vm.owner_uuid)) return "vm " + vm.alias + ": uuid and owner_uuid must be uuids";
    auto im = images_.find(vm.image_uuid);
    if (im == images_.end() || im->second.state != "active") {
      return "vm " + vm.alias + ": image_uuid " + vm.image_uuid + " is not an active image of the seed";
    }
    vm.root_files = im->second.root_files;
    auto server = FindServerLocked(v.value("server", std::string("headnode")));
    if (server == servers_.end()) return "vm " + vm.alias + ": no server " + v.value("server", std::string("headnode"));
    vm.server_uuid = server->first;
    vm.ram = vm.max_physical_memory = v.value("ram", int64_t{1024});
    vm.quota = v.value("quota", int64_t{25});
    vm.cpu_cap = 100;
    vm.max_swap = 2 * vm.ram;
    vm.max_lwps = 2000;
    vm.zfs_io_priority = vm.cpu_shares = 100;
    if (v.contains("tags") && v["tags"].is_object()) vm.tags = v["tags"];
    if (v.value("delegate_dataset", false)) vm.datasets = {"zones/" + vm.uuid + "/data"};
    for (const auto& n : v.value("networks", json::array())) {
      std::string want = n.is_string() ? n.get<std::string>() : "";
      auto net = networks_.find(want);
      for (auto it = networks_.begin(); net == networks_.end() && it != networks_.end(); ++it) {
        if (it->second.name == want) net = it;
      }
      if (net == networks_.end()) return "vm " + vm.alias + ": no network " + want;
      Nic nic;
      nic.interface = "net" + std::to_string(vm.nics.size());
      nic.mac = NewMacLocked();
      AllocateLocked(&net->second, &nic);
      nic.primary = vm.nics.empty();
      vm.nics.push_back(nic);
    }
    // Set up with the data center: a day old (past every start window).
    vm.create_ms = vm.modified_ms = NowMs() - v.value("age_s", int64_t{86400}) * 1000;
    vm.state = "running";
    vm.zone_state = "running";
    AddUsedRamLocked(&server->second, vm.ram);
    server->second.vms.insert(vm.uuid);
    TagIndexAddLocked(vm);
    vms_[vm.uuid] = vm;
  }
  return "";
}

// ---------------------------------------------------------------- control

std::map<std::string, DataCenter::Server>::iterator DataCenter::FindServerLocked(const std::string& id) {
  auto it = servers_.find(id);
  if (it != servers_.end()) return it;
  for (auto s = servers_.begin(); s != servers_.end(); ++s) {
    if (s->second.hostname == id) return s;
  }
  return servers_.end();
}

Reply DataCenter::SetServerStatus(const std::string& uuid, const std::string& status) {
  absl::MutexLock l(&mu_);
  auto it = FindServerLocked(uuid);
  if (it == servers_.end()) return Error(404, "ResourceNotFound", "Server " + uuid + " not found");
  it->second.status = status;
  if (status == "running") servers_down_.erase(it->first);
  else servers_down_.insert(it->first);
  if (status == "running") it->second.boot_ms = NowMs();
  // Its VMs' state shows the server's (unknown while it is not running).
  for (const std::string& vm : it->second.vms) {
    if (auto v = vms_.find(vm); v != vms_.end()) FeedLocked(&v->second);
  }
  Reply r;
  r.body = {{"uuid", it->second.uuid}, {"status", status}};
  return r;
}

Reply DataCenter::DeleteServer(const std::string& id) {
  absl::MutexLock l(&mu_);
  auto it = FindServerLocked(id);
  if (it == servers_.end()) return Error(404, "ResourceNotFound", "Server " + id + " not found");
  for (const std::string& vm : it->second.vms) {
    auto v = vms_.find(vm);
    if (v != vms_.end()) {
      v->second.state = "destroyed";
      Touch(&v->second);
    }
  }
  std::string uuid = it->second.uuid;
  servers_.erase(it);
  IndexServersLocked();
  Reply r;
  r.body = {{"uuid", uuid}, {"deleted", true}};
  return r;
}

Reply DataCenter::KillVm(const std::string& uuid, const std::string& to_state) {
  absl::MutexLock l(&mu_);
  auto it = vms_.find(uuid);
  if (it == vms_.end()) return Error(404, "ResourceNotFound", "VM not found");
  Vm& v = it->second;
  if (to_state == "destroyed") {
    auto s = servers_.find(v.server_uuid);
    if (s != servers_.end() && s->second.vms.erase(uuid)) AddUsedRamLocked(&s->second, -v.ram);
  }
  v.state = to_state;
  v.zone_state = to_state == "destroyed" ? "destroyed" : "installed";
  Touch(&v);
  Reply r;
  r.body = {{"uuid", uuid}, {"state", to_state}};
  return r;
}

void DataCenter::ExitLocked(Vm* v, int status) {
  v->state = "stopped";
  v->zone_state = "installed";
  v->exit_status = status;
  v->exit_ms = NowMs();
  Touch(v);
}

Reply DataCenter::ExitVm(const std::string& uuid, int status) {
  absl::MutexLock l(&mu_);
  auto it = vms_.find(uuid);
  if (it == vms_.end() || it->second.state == "destroyed") return Error(404, "ResourceNotFound", "VM not found");
  if (it->second.state != "running") return Error(409, "VmNotRunning", "VM is not running");
  ExitLocked(&it->second, status);
  Reply r;
  r.body = {{"uuid", uuid}, {"state", "stopped"}, {"exit_status", status}};
  return r;
}

Reply DataCenter::WriteFile(const std::string& uuid, const std::string& path, const std::string& content) {
  absl::MutexLock l(&mu_);
  auto it = vms_.find(uuid);
  if (it == vms_.end() || it->second.state == "destroyed") return Error(404, "ResourceNotFound", "VM not found");
  Vm& v = it->second;
  std::string data = "/zones/" + uuid + "/data/";
  bool on_dataset = !v.datasets.empty() && path.rfind(data, 0) == 0;
  (on_dataset ? v.dataset_files : v.root_files)[path] = content;
  Reply r;
  r.body = {{"uuid", uuid}, {"path", path}, {"on", on_dataset ? v.datasets[0] : "zone root"}};
  return r;
}

Reply DataCenter::Files(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  auto it = vms_.find(uuid);
  if (it == vms_.end()) return Error(404, "ResourceNotFound", "VM not found");
  json files = json::object();
  for (const auto* m : {&it->second.root_files, &it->second.dataset_files}) {
    for (const auto& kv : *m) files[kv.first] = kv.second;
  }
  Reply r;
  r.body = {{"uuid", uuid}, {"files", files}, {"reprovisions", it->second.reprovisions}};
  return r;
}

Reply DataCenter::SetVmHealth(const std::string& uuid, VmHealth h) {
  absl::MutexLock l(&mu_);
  auto it = vms_.find(uuid);
  if (it == vms_.end()) return Error(404, "ResourceNotFound", "VM not found");
  it->second.health = h;
  Reply r;
  r.body = {{"uuid", uuid}};
  return r;
}

VmHealth DataCenter::HealthOf(const std::string& vm_uuid) {
  absl::MutexLock l(&mu_);
  auto it = vms_.find(vm_uuid);
  return it == vms_.end() ? VmHealth::kRefuse : it->second.health;
}

Reply DataCenter::SetJobKnobs(const json& body) {
  absl::MutexLock l(&mu_);
  if (body.contains("job_latency_ms")) opts_.job_latency_ms = body["job_latency_ms"].get<double>();
  if (body.contains("job_jitter")) opts_.job_jitter = body["job_jitter"].get<double>();
  if (body.contains("job_failure_rate")) opts_.job_failure_rate = body["job_failure_rate"].get<double>();
  Reply r;
  r.body = {{"job_latency_ms", opts_.job_latency_ms}, {"job_jitter", opts_.job_jitter},
            {"job_failure_rate", opts_.job_failure_rate}};
  return r;
}

Reply DataCenter::Stats() {
  absl::MutexLock l(&mu_);
  std::map<std::string, int64_t> states;
  for (const auto& kv : vms_) states[EffectiveStateLocked(kv.second)]++;
  Reply r;
  r.body = {{"servers", servers_.size()}, {"vms", vms_.size()}, {"vm_states", states},
            {"images", images_.size()}, {"jobs", jobs_.size()}, {"tasks", tasks_.size()}, {"calls", op_counts_}};
  return r;
}

void DataCenter::FailNext(const std::string& op, int n, int status, int hang_ms) {
  absl::MutexLock l(&mu_);
  failures_[op] = {std::max(n, 0), status, hang_ms};
}

bool DataCenter::TakeFailure(const std::string& op, Reply* reply, int* hang_ms) {
  absl::MutexLock l(&mu_);
  op_counts_[op]++;
  auto it = failures_.find(op);
  if (it == failures_.end() || it->second.remaining == 0) return false;
  const Failure& f = it->second;
  --it->second.remaining;
  *hang_ms = f.hang_ms;
  *reply = Error(f.status ? f.status : 503, f.status == 500 ? "InternalError" : "ServiceUnavailable",
                 "injected failure of " + op);
  return true;
}

std::vector<CnsVm> DataCenter::CnsVms() {
  absl::MutexLock l(&mu_);
  std::vector<CnsVm> out;
  out.reserve(vms_.size());
  auto text = [](const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); };
  for (const auto& [uuid, v] : vms_) {
    CnsVm c;
    c.uuid = v.uuid;
    c.alias = v.alias;
    c.owner = v.owner_uuid;
    c.state = EffectiveStateLocked(v);
    c.server_down = servers_down_.count(v.server_uuid) > 0;
    if (v.tags.contains("triton.cns.services")) c.services_tag = text(v.tags["triton.cns.services"]);
    c.disabled = v.tags.contains("triton.cns.disable") && v.tags["triton.cns.disable"] != false;
    if (v.customer_metadata.contains("triton.cns.status")) c.status = text(v.customer_metadata["triton.cns.status"]);
    for (const Nic& n : v.nics) {
      if (!n.ip.empty()) c.ips.push_back(n.ip);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::set<std::string> DataCenter::CnsDisabledAccounts() {
  absl::MutexLock l(&mu_);
  return cns_disabled_;
}

void DataCenter::SetCnsEnabled(const std::string& account, bool on) {
  absl::MutexLock l(&mu_);
  if (on) cns_disabled_.erase(account);
  else cns_disabled_.insert(account);
}

std::vector<DataCenter::Endpoint> DataCenter::RunningEndpoints() {
  absl::MutexLock l(&mu_);
  std::vector<Endpoint> out;
  for (const auto& kv : vms_) {
    const Vm& v = kv.second;
    if (EffectiveStateLocked(v) != "running" || v.nics.empty()) continue;
    Endpoint e{v.uuid, "", {}, v.health};
    auto add_ports = [&](const json& j) {
      if (j.is_number_integer()) e.ports.push_back(j.get<int>());
      if (j.is_string()) {
        for (const auto& p : Split(j.get<std::string>(), ',')) e.ports.push_back(atoi(p.c_str()));
      }
      if (j.is_array()) {
        for (const auto& p : j) {
          if (p.is_number_integer()) e.ports.push_back(p.get<int>());
        }
      }
    };
    if (v.tags.contains("ports")) add_ports(v.tags["ports"]);
    if (v.customer_metadata.contains("ports")) add_ports(v.customer_metadata["ports"]);
    for (const Nic& n : v.nics) {  // the same ports answer on every NIC
      e.ip = n.ip;
      out.push_back(e);
    }
  }
  return out;
}

}  // namespace tritonsim
