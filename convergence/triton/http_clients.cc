#include "convergence/triton/http_clients.h"

#include <nlohmann/json.hpp>

#include <thread>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "convergence/triton/triton_json.h"
#include "convergence/triton/vm_json.h"

namespace mariposa::triton {
namespace {

using json = nlohmann::json;

std::string FilterQuery(const VmFilter& f) {
  std::vector<std::string> q;
  for (const auto& kv : f.tags) q.push_back(absl::StrCat("tag.", UrlEncode(kv.first), "=", UrlEncode(kv.second)));
  if (!f.state.empty()) q.push_back("state=" + UrlEncode(f.state));
  if (!f.owner_uuid.empty()) q.push_back("owner_uuid=" + UrlEncode(f.owner_uuid));
  if (!f.server_uuid.empty()) q.push_back("server_uuid=" + UrlEncode(f.server_uuid));
  if (!f.alias.empty()) q.push_back("alias=" + UrlEncode(f.alias));
  if (!f.image_uuid.empty()) q.push_back("image_uuid=" + UrlEncode(f.image_uuid));
  if (!f.uuids.empty()) q.push_back("uuids=" + UrlEncode(absl::StrJoin(f.uuids, ",")));
  if (!f.predicate.empty()) q.push_back("predicate=" + UrlEncode(f.predicate));
  if (!f.fields.empty()) q.push_back("fields=" + UrlEncode(absl::StrJoin(f.fields, ",")));
  return absl::StrJoin(q, "&");
}

// Polls `get` with growing pauses (5 ms .. 200 ms) until `done` or the deadline.
template <typename T, typename Get>
absl::StatusOr<T> Poll(const Clock* clock, absl::Duration timeout, absl::string_view what, Get get) {
  absl::Time deadline = clock->Now() + timeout;
  absl::Duration pause = absl::Milliseconds(5);
  while (true) {
    ASSIGN_OR_RETURN(T t, get());
    if (t.done()) return t;
    if (clock->Now() + pause > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(what, " did not finish within ", absl::FormatDuration(timeout)));
    }
    clock->SleepFor(pause);
    pause = std::min(pause * 2, absl::Milliseconds(200));
  }
}

}  // namespace

// ---------------------------------------------------------------- VMAPI

absl::StatusOr<std::vector<Vm>> HttpVmapiClient::ListVms(const VmFilter& f) {
  if (f.page_size < 1 || f.page_size > 1000) return absl::InvalidArgumentError("page_size must be 1..1000");
  std::string base = FilterQuery(f);
  std::vector<Vm> out;
  std::string marker;
  while (true) {
    std::string q = absl::StrCat("/vms?", base, base.empty() ? "" : "&", "limit=", f.page_size);
    if (f.page_by_marker) {
      // Markers name the last VM of the previous page in a uuid order.
      absl::StrAppend(&q, "&sort=uuid.ASC");
      if (!marker.empty()) absl::StrAppend(&q, "&marker=", UrlEncode(json({{"uuid", marker}}).dump()));
    } else {
      absl::StrAppend(&q, "&offset=", out.size());
    }
    ASSIGN_OR_RETURN(HttpResponse r, http_.Call("ListVms", "GET", q));
    auto n = ParseVmPage(r.body, &out);
    if (!n.ok()) return absl::DataLossError(absl::StrCat("ListVms: ", n.status().message()));
    if (static_cast<int>(*n) < f.page_size) break;
    marker = out.back().uuid;
  }
  return out;
}

absl::StatusOr<int64_t> HttpVmapiClient::CountVms(const VmFilter& f) {
  std::string base = FilterQuery(f);
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("HeadVms", "HEAD", absl::StrCat("/vms", base.empty() ? "" : "?", base)));
  auto it = r.headers.find("x-joyent-resource-count");
  int64_t n = 0;
  if (it == r.headers.end() || !absl::SimpleAtoi(it->second, &n)) {
    return absl::DataLossError("HeadVms: no x-joyent-resource-count header");
  }
  return n;
}

namespace {

// /vms/UUID[SUFFIX]?QUERY&owner_uuid=…: VMAPI answers 404 for a VM of
// another account than the one named.
std::string VmPath(const VmRef& vm, const std::string& query = "", const std::string& suffix = "") {
  std::string path = absl::StrCat("/vms/", UrlEncode(vm.uuid), suffix);
  std::vector<std::string> q;
  if (!query.empty()) q.push_back(query);
  if (!vm.owner_uuid.empty()) q.push_back("owner_uuid=" + UrlEncode(vm.owner_uuid));
  if (!q.empty()) absl::StrAppend(&path, "?", absl::StrJoin(q, "&"));
  return path;
}

}  // namespace

absl::StatusOr<Vm> HttpVmapiClient::GetVm(const VmRef& vm) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("GetVm", "GET", VmPath(vm)));
  auto parsed = ParseVm(r.body);
  if (!parsed.ok()) return absl::DataLossError(absl::StrCat("GetVm: ", parsed.status().message()));
  return parsed;
}

namespace {
// The size's keys that are set; vcpus only on a create.
void PutDimensions(const Dimensions& d, bool with_vcpus, json* body) {
  if (!d.billing_id.empty()) (*body)["billing_id"] = d.billing_id;
  for (auto [key, value] : {std::make_pair("ram", d.ram), std::make_pair("quota", d.quota),
                            std::make_pair("cpu_cap", d.cpu_cap), std::make_pair("max_swap", d.max_swap),
                            std::make_pair("max_lwps", d.max_lwps), std::make_pair("zfs_io_priority", d.zfs_io_priority),
                            std::make_pair("vcpus", with_vcpus ? d.vcpus : 0)}) {
    if (value > 0) (*body)[key] = value;
  }
}
}  // namespace

absl::StatusOr<JobRef> HttpVmapiClient::CreateVm(const CreateVmRequest& req) {
  // One NIC per network, the first primary (VMAPI's network objects).
  json networks = json::array();
  for (size_t i = 0; i < req.networks.size(); ++i) {
    json n = {{"uuid", req.networks[i]}};
    if (i == 0) n["primary"] = true;
    networks.push_back(n);
  }
  json body = {{"owner_uuid", req.owner_uuid}, {"brand", req.brand}, {"networks", networks}};
  if (!req.uuid.empty()) body["uuid"] = req.uuid;
  if (!req.alias.empty()) body["alias"] = req.alias;
  PutDimensions(req.dim, /*with_vcpus=*/true, &body);
  if (req.brand == "kvm" || req.brand == "bhyve") {
    body["disks"] = json::array({{{"image_uuid", req.image_uuid}}});
  } else {
    body["image_uuid"] = req.image_uuid;
  }
  if (!req.server_uuid.empty()) body["server_uuid"] = req.server_uuid;
  if (!req.tags.empty()) body["tags"] = req.tags;
  if (!req.customer_metadata.empty()) body["customer_metadata"] = req.customer_metadata;
  if (!req.internal_metadata.empty()) body["internal_metadata"] = req.internal_metadata;
  if (req.docker) body["docker"] = true;
  if (req.delegate_dataset) body["delegate_dataset"] = true;
  if (req.firewall_enabled) body["firewall_enabled"] = true;
  if (!req.volumes.empty()) {
    json mounts = json::array();
    for (const auto& m : req.volumes) {
      mounts.push_back({{"name", m.name}, {"type", "tritonnfs"}, {"mode", m.mode}, {"mountpoint", m.mountpoint}});
    }
    body["volumes"] = mounts;
  }
  if (req.locality) {
    body["locality"] = {{"strict", req.locality->strict}, {"near", req.locality->near}, {"far", req.locality->far}};
  }
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("CreateVm", "POST", "/vms", body.dump()));
  return ParseJobRef(r.body, r.headers, "CreateVm");
}

absl::StatusOr<JobRef> HttpVmapiClient::Act(const VmRef& vm, VmAction action, absl::Duration timeout) {
  static const char* kNames[] = {"start", "stop", "reboot", "kill"};
  std::string name = kNames[static_cast<int>(action)];
  std::string path = VmPath(vm, absl::StrCat("action=", name));
  if (action == VmAction::kStart || action == VmAction::kStop) path += "&idempotent=true";
  if (action == VmAction::kStop && timeout > absl::ZeroDuration()) {
    absl::StrAppend(&path, "&timeout=", std::max<int64_t>(1, absl::ToInt64Seconds(absl::Ceil(timeout, absl::Seconds(1)))));
  }
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("VmAction", "POST", path));
  return ParseJobRef(r.body, r.headers, "VmAction");
}

absl::StatusOr<JobRef> HttpVmapiClient::Reprovision(const VmRef& vm, const std::string& image_uuid) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("VmAction", "POST", VmPath(vm, "action=reprovision"),
                                              json({{"image_uuid", image_uuid}}).dump()));
  return ParseJobRef(r.body, r.headers, "Reprovision");
}

absl::StatusOr<JobRef> HttpVmapiClient::Update(const VmRef& vm, const UpdateVmRequest& req) {
  json body = json::object();
  if (!req.customer_metadata.empty()) body["customer_metadata"] = req.customer_metadata;
  if (!req.internal_metadata.empty()) body["internal_metadata"] = req.internal_metadata;
  if (!req.remove_customer_metadata.empty()) body["remove_customer_metadata"] = req.remove_customer_metadata;
  if (!req.remove_internal_metadata.empty()) body["remove_internal_metadata"] = req.remove_internal_metadata;
  PutDimensions(req.dim, /*with_vcpus=*/false, &body);
  if (req.firewall_enabled) body["firewall_enabled"] = *req.firewall_enabled;
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("VmAction", "POST", VmPath(vm, "action=update"),
                                              body.dump()));
  return ParseJobRef(r.body, r.headers, "Update");
}

absl::StatusOr<JobRef> HttpVmapiClient::DeleteVm(const VmRef& vm) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("DeleteVm", "DELETE", VmPath(vm)));
  return ParseJobRef(r.body, r.headers, "DeleteVm");
}

absl::StatusOr<JobRef> HttpVmapiClient::SetTags(const VmRef& vm, const std::map<std::string, std::string>& tags,
                                                bool replace) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("VmTags", replace ? "PUT" : "POST", VmPath(vm, "", "/tags"),
                                              json(tags).dump()));
  return ParseJobRef(r.body, r.headers, "SetTags");
}

absl::StatusOr<JobRef> HttpVmapiClient::DeleteTag(const VmRef& vm, const std::string& key) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("VmTags", "DELETE", VmPath(vm, "", "/tags/" + UrlEncode(key))));
  return ParseJobRef(r.body, r.headers, "DeleteTag");
}

absl::StatusOr<Job> HttpVmapiClient::GetJob(const std::string& uuid) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("GetJob", "GET", "/jobs/" + UrlEncode(uuid)));
  return ParseJob(r.body, "GetJob");
}

absl::StatusOr<Job> HttpVmapiClient::WaitJob(const std::string& uuid, absl::Duration timeout) {
  return Poll<Job>(clock_, timeout, absl::StrCat("job ", uuid), [&] { return GetJob(uuid); });
}

absl::Status HttpVmapiClient::Ping() { return http_.Call("Ping", "GET", "/ping").status(); }

// ---------------------------------------------------------------- CNAPI

absl::StatusOr<std::vector<Server>> HttpCnapiClient::ListServers() {
  std::vector<Server> out;
  const int kPage = 1000;
  while (true) {
    ASSIGN_OR_RETURN(HttpResponse r, http_.Call("ListServers", "GET",
                                                absl::StrCat("/servers?extras=agents,capacity&limit=", kPage,
                                                             "&offset=", out.size())));
    ASSIGN_OR_RETURN(std::vector<Server> page, ParseServers(r.body, "ListServers"));
    out.insert(out.end(), page.begin(), page.end());
    if (static_cast<int>(page.size()) < kPage) break;
  }
  return out;
}

absl::StatusOr<Server> HttpCnapiClient::GetServer(const std::string& uuid) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("GetServer", "GET", "/servers/" + UrlEncode(uuid)));
  return ParseServer(r.body, "GetServer");
}

absl::StatusOr<std::string> HttpCnapiClient::InstallAgent(const std::string& server_uuid,
                                                          const std::string& image_uuid) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("InstallAgent", "POST", "/servers/" + UrlEncode(server_uuid) + "/install-agent",
                                              json({{"image_uuid", image_uuid}}).dump()));
  return ParseTaskId(r.body, "InstallAgent");
}

absl::StatusOr<std::string> HttpCnapiClient::UninstallAgents(const std::string& server_uuid,
                                                             const std::vector<std::string>& names) {
  ASSIGN_OR_RETURN(HttpResponse r,
                   http_.Call("UninstallAgents", "POST", "/servers/" + UrlEncode(server_uuid) + "/uninstall-agents",
                              json({{"agents", names}}).dump()));
  return ParseTaskId(r.body, "UninstallAgents");
}

absl::StatusOr<Task> HttpCnapiClient::GetTask(const std::string& id) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("GetTask", "GET", "/tasks/" + UrlEncode(id)));
  return ParseTask(r.body, "GetTask");
}

absl::StatusOr<Task> HttpCnapiClient::WaitTask(const std::string& id, absl::Duration timeout) {
  return Poll<Task>(clock_, timeout, absl::StrCat("task ", id), [&] { return GetTask(id); });
}

// ---------------------------------------------------------------- IMGAPI

absl::StatusOr<std::vector<Image>> HttpImgapiClient::ListImages(const ImageFilter& f) {
  std::vector<std::string> q;
  if (!f.name.empty()) q.push_back("name=" + UrlEncode(f.name));
  if (!f.version.empty()) q.push_back("version=" + UrlEncode(f.version));
  if (!f.state.empty()) q.push_back("state=" + UrlEncode(f.state));
  if (!f.os.empty()) q.push_back("os=" + UrlEncode(f.os));
  if (!f.type.empty()) q.push_back("type=" + UrlEncode(f.type));
  if (!f.channel.empty()) q.push_back("channel=" + UrlEncode(f.channel));
  if (f.page_size < 1 || f.page_size > 1000) return absl::InvalidArgumentError("page_size must be 1..1000");
  std::string base = absl::StrJoin(q, "&");
  std::vector<Image> out;
  std::string marker;
  while (true) {
    // IMGAPI's marker is inclusive: a page after the first repeats the marker
    // image, so ask for one more to make progress.
    int limit = marker.empty() ? f.page_size : std::min(1000, f.page_size + 1);
    std::string path = absl::StrCat("/images?", base, base.empty() ? "" : "&", "limit=", limit);
    if (!marker.empty()) absl::StrAppend(&path, "&marker=", UrlEncode(marker));
    ASSIGN_OR_RETURN(HttpResponse r, http_.Call("ListImages", "GET", path));
    ASSIGN_OR_RETURN(std::vector<Image> page, ParseImages(r.body, "ListImages"));
    for (Image& i : page) {
      if (!marker.empty() && i.uuid == marker) continue;
      out.push_back(std::move(i));
    }
    if (static_cast<int>(page.size()) < limit || out.empty() || out.back().uuid == marker) break;
    marker = out.back().uuid;
  }
  return out;
}

absl::StatusOr<Image> HttpImgapiClient::GetImage(const std::string& uuid) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("GetImage", "GET", "/images/" + UrlEncode(uuid)));
  return ParseImage(r.body, "GetImage");
}

absl::StatusOr<Image> HttpImgapiClient::FindImage(const std::string& name, const std::string& version) {
  ImageFilter f;
  f.name = name;
  f.version = version;
  ASSIGN_OR_RETURN(std::vector<Image> all, ListImages(f));
  if (all.empty()) {
    return absl::NotFoundError(absl::StrCat("no active image ", name, version.empty() ? "" : "@" + version,
                                            " in IMGAPI; import it first"));
  }
  return all.back();  // published_at ascending: the newest is last
}

absl::StatusOr<JobRef> HttpImgapiClient::ImportRemote(const std::string& uuid, const std::string& source) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("ImageAction", "POST",
                                              absl::StrCat("/images/", UrlEncode(uuid),
                                                           "?action=import-remote&source=", UrlEncode(source))));
  return ParseJobRef(r.body, r.headers, "ImportRemote");
}

absl::StatusOr<JobRef> HttpImgapiClient::CreateFromVm(const std::string& vm_uuid, const std::string& name,
                                                      const std::string& version, const std::string& prepare_script) {
  json body = {{"name", name}, {"version", version}};
  if (!prepare_script.empty()) body["prepare_script"] = prepare_script;
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("CreateImage", "POST",
                                              "/images?action=create-from-vm&vm_uuid=" + UrlEncode(vm_uuid),
                                              body.dump()));
  return ParseJobRef(r.body, r.headers, "CreateFromVm");
}

absl::StatusOr<Job> HttpImgapiClient::WaitJob(const JobRef& ref, absl::Duration timeout) {
  std::string base = !ref.workflow_api.empty() ? ref.workflow_api
                     : !workflow_url_.empty()    ? workflow_url_
                                                 : http_.base_url();
  return Poll<Job>(clock_, timeout, absl::StrCat("job ", ref.job_uuid), [&]() -> absl::StatusOr<Job> {
    ASSIGN_OR_RETURN(HttpResponse r, http_.CallAt(base, "GetJob", "GET", "/jobs/" + UrlEncode(ref.job_uuid)));
    return ParseJob(r.body, "GetJob");
  });
}

absl::StatusOr<std::vector<Package>> HttpPapiClient::ListPackages() {
  std::vector<Package> out;
  constexpr int kPage = 1000;
  for (int offset = 0;; offset += kPage) {
    ASSIGN_OR_RETURN(HttpResponse r, http_.Call("ListPackages", "GET", absl::StrCat("/packages?limit=", kPage,
                                                                                     "&offset=", offset)));
    ASSIGN_OR_RETURN(std::vector<Package> page, ParsePackages(r.body, "ListPackages"));
    out.insert(out.end(), page.begin(), page.end());
    if (static_cast<int>(page.size()) < kPage) break;
  }
  return out;
}

absl::StatusOr<std::vector<Network>> HttpNapiClient::ListNetworks() {
  std::vector<Network> out;
  for (const char* what : {"ListNetworks", "ListNetworkPools"}) {
    bool pools = std::string(what) == "ListNetworkPools";
    ASSIGN_OR_RETURN(HttpResponse r, http_.Call(what, "GET", pools ? "/network_pools" : "/networks"));
    ASSIGN_OR_RETURN(std::vector<Network> list, ParseNetworks(r.body, pools, what));
    out.insert(out.end(), list.begin(), list.end());
  }
  return out;
}

namespace {

std::string Vlans(const std::string& owner) { return absl::StrCat("/fabrics/", UrlEncode(owner), "/vlans"); }

json MutableBody(const FabricNetwork& n) {
  return json{{"name", n.name}, {"resolvers", n.resolvers}, {"routes", n.routes}, {"description", n.description}};
}

}  // namespace

absl::StatusOr<std::vector<FabricVlan>> HttpNapiClient::ListFabricVlans(const std::string& owner) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("ListFabricVLANs", "GET", Vlans(owner)));
  return ParseFabricVlans(r.body, "ListFabricVLANs");
}

absl::Status HttpNapiClient::CreateFabricVlan(const std::string& owner, const FabricVlan& v) {
  json body = {{"vlan_id", v.vlan_id}, {"name", v.name}, {"description", v.description}};
  return http_.Call("CreateFabricVLAN", "POST", Vlans(owner), body.dump()).status();
}

absl::Status HttpNapiClient::DeleteFabricVlan(const std::string& owner, int vlan_id) {
  return http_.Call("DeleteFabricVLAN", "DELETE", absl::StrCat(Vlans(owner), "/", vlan_id)).status();
}

absl::StatusOr<std::vector<FabricNetwork>> HttpNapiClient::ListFabricNetworks(const std::string& owner) {
  // One call for every VLAN: ListNetworks filtered to the account's fabric.
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("ListNetworks", "GET",
                                              "/networks?fabric=true&provisionable_by=" + UrlEncode(owner)));
  return ParseFabricNetworks(r.body, "ListNetworks");
}

absl::StatusOr<FabricNetwork> HttpNapiClient::CreateFabricNetwork(const std::string& owner, const FabricNetwork& n) {
  json body = MutableBody(n);
  body["name"] = n.name;
  body["subnet"] = n.subnet;
  body["provision_start_ip"] = n.provision_start_ip;
  body["provision_end_ip"] = n.provision_end_ip;
  if (!n.gateway.empty()) body["gateway"] = n.gateway;
  body["internet_nat"] = n.internet_nat;
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("CreateFabricNetwork", "POST",
                                              absl::StrCat(Vlans(owner), "/", n.vlan_id, "/networks"), body.dump()));
  return ParseFabricNetwork(r.body, "CreateFabricNetwork");
}

absl::Status HttpNapiClient::UpdateNetwork(const FabricNetwork& n) {
  return http_.Call("UpdateNetwork", "PUT", "/networks/" + UrlEncode(n.uuid), MutableBody(n).dump()).status();
}

absl::Status HttpNapiClient::DeleteFabricNetwork(const std::string& owner, int vlan_id, const std::string& uuid) {
  return http_
      .Call("DeleteFabricNetwork", "DELETE", absl::StrCat(Vlans(owner), "/", vlan_id, "/networks/", UrlEncode(uuid)))
      .status();
}

absl::StatusOr<std::vector<FwRule>> HttpFwapiClient::ListRules(const std::string& owner_uuid) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("ListRules", "GET", "/rules?owner_uuid=" + UrlEncode(owner_uuid)));
  return ParseFwRules(r.body, "ListRules");
}

namespace {

json RuleBody(const FwRule& r) {
  return json{{"owner_uuid", r.owner_uuid}, {"rule", r.rule},
              {"enabled", r.enabled}, {"description", r.description}, {"log", r.log}};
}

}  // namespace

absl::Status HttpFwapiClient::CreateRule(const FwRule& r) {
  json body = RuleBody(r);
  body["uuid"] = r.uuid;
  auto made = http_.Call("CreateRule", "POST", "/rules", body.dump());
  // FWAPI answers a uuid in use with 422 RuleExistsError.
  if (!made.ok() && TritonCode(made.status()) == "RuleExistsError") {
    return absl::AlreadyExistsError(made.status().message());
  }
  return made.status();
}

absl::Status HttpFwapiClient::UpdateRule(const FwRule& r) {
  return http_.Call("UpdateRule", "PUT", "/rules/" + UrlEncode(r.uuid), RuleBody(r).dump()).status();
}

absl::Status HttpFwapiClient::DeleteRule(const std::string& uuid, const std::string& owner_uuid) {
  return http_
      .Call("DeleteRule", "DELETE", absl::StrCat("/rules/", UrlEncode(uuid), "?owner_uuid=", UrlEncode(owner_uuid)))
      .status();
}

absl::StatusOr<std::vector<Volume>> HttpVolapiClient::ListVolumes(const std::string& owner_uuid) {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("ListVolumes", "GET", "/volumes?owner_uuid=" + UrlEncode(owner_uuid)));
  return ParseVolumes(r.body, "ListVolumes");
}

absl::Status HttpVolapiClient::CreateVolume(const Volume& v) {
  json body = {{"owner_uuid", v.owner_uuid}, {"name", v.name}, {"type", "tritonnfs"}, {"networks", v.networks}};
  if (v.size > 0) body["size"] = v.size;
  auto made = http_.Call("CreateVolume", "POST", "/volumes", body.dump());
  if (!made.ok() && TritonCode(made.status()) == "VolumeAlreadyExists") {
    return absl::AlreadyExistsError(made.status().message());
  }
  return made.status();
}

absl::Status HttpVolapiClient::DeleteVolume(const std::string& uuid, const std::string& owner_uuid) {
  auto gone = http_.Call("DeleteVolume", "DELETE",
                         absl::StrCat("/volumes/", UrlEncode(uuid), "?owner_uuid=", UrlEncode(owner_uuid)));
  if (!gone.ok() && TritonCode(gone.status()) == "VolumeInUse") {
    return absl::FailedPreconditionError(gone.status().message());
  }
  return gone.status();
}

absl::StatusOr<std::vector<int64_t>> HttpVolapiClient::ListVolumeSizes() {
  ASSIGN_OR_RETURN(HttpResponse r, http_.Call("ListVolumeSizes", "GET", "/volumesizes?type=tritonnfs"));
  return ParseVolumeSizes(r.body, "ListVolumeSizes");
}

}  // namespace mariposa::triton
