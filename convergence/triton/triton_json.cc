#include "convergence/triton/triton_json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "common/status_macros.h"
#include "convergence/triton/vm_json.h"

namespace mariposa::triton {
namespace {

using json = nlohmann::json;

// The deepest nesting read (nlohmann's parser does not recurse, but its
// destructor and dump() did in older versions; Triton's answers are flat).
constexpr int kMaxDepth = 64;

absl::StatusOr<json> Parse(absl::string_view body, absl::string_view what) {
  if (JsonTooDeepAt(body, kMaxDepth) != absl::string_view::npos) return absl::DataLossError(absl::StrCat(what, ": answer nests deeper than ", kMaxDepth));
  json j = json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded()) {
    return absl::DataLossError(absl::StrCat(what, ": answer is not JSON: ", body.substr(0, 120)));
  }
  return j;
}

absl::StatusOr<json> ParseObject(absl::string_view body, absl::string_view what) {
  ASSIGN_OR_RETURN(json j, Parse(body, what));
  if (!j.is_object()) return absl::DataLossError(absl::StrCat(what, ": answer is not an object"));
  return j;
}

// A listing's answer: a JSON array (of objects; others are skipped).
absl::StatusOr<json> ParseList(absl::string_view body, absl::string_view what) {
  ASSIGN_OR_RETURN(json j, Parse(body, what));
  if (!j.is_array()) return absl::DataLossError(absl::StrCat(what, ": answer is not an array"));
  return j;
}

const json* Field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string Str(const json& j, const char* key) {
  const json* v = Field(j, key);
  if (v == nullptr) return "";
  return v->is_string() ? v->get<std::string>() : v->dump(-1, ' ', false, json::error_handler_t::replace);
}

bool Bool(const json& j, const char* key, bool otherwise) {
  const json* v = Field(j, key);
  return v != nullptr && v->is_boolean() ? v->get<bool>() : otherwise;
}

int64_t Int(const json& j, const char* key) {
  const json* v = Field(j, key);
  if (v == nullptr) return 0;
  if (v->is_number_unsigned()) return SaturatingInt64(v->get<uint64_t>());
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) return SaturatingInt64(v->get<double>());
  return 0;
}

int SmallInt(const json& j, const char* key) {
  int64_t v = Int(j, key);
  if (v > std::numeric_limits<int>::max() || v < std::numeric_limits<int>::min()) return -1;
  return static_cast<int>(v);
}

std::vector<std::string> Strings(const json& j, const char* key) {
  std::vector<std::string> out;
  const json* v = Field(j, key);
  if (v == nullptr || !v->is_array()) return out;
  for (const auto& s : *v) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

const json& Empty() {
  static const json* e = new json(json::object());
  return *e;
}

const json& Obj(const json& j, const char* key) {
  const json* v = Field(j, key);
  return v != nullptr && v->is_object() ? *v : Empty();
}

Job ToJob(const json& j) {
  Job out;
  out.uuid = Str(j, "uuid");
  out.name = Str(j, "name");
  out.execution = Str(j, "execution");
  const json& params = Obj(j, "params");
  out.task = Str(params, "task");
  out.vm_uuid = Str(params, "vm_uuid");
  const json* chain = Field(j, "chain_results");
  if (chain != nullptr && chain->is_array()) {
    for (const auto& r : *chain) {
      const json* result = Field(r, "result");
      std::string text = result != nullptr && result->is_string() ? result->get<std::string>() : "";
      out.steps.push_back(absl::StrCat(Str(r, "name"), text.empty() ? "" : ": ", text));
      const json* error = Field(r, "error");
      if (error != nullptr && error->is_object()) {
        out.error = Str(*error, "message");
      } else if (error != nullptr && error->is_string() && !error->get<std::string>().empty()) {
        out.error = error->get<std::string>();
      }
    }
  }
  return out;
}

Server ToServer(const json& j) {
  Server s;
  s.uuid = Str(j, "uuid");
  s.hostname = Str(j, "hostname");
  s.status = Str(j, "status");
  s.headnode = Bool(j, "headnode", false);
  s.reserved = Bool(j, "reserved", false);
  s.setup = Bool(j, "setup", true);
  s.ram = Int(j, "ram");
  s.unreserved_ram = Int(j, "unreserved_ram");
  s.traits_json = Obj(j, "traits").dump(-1, ' ', false, json::error_handler_t::replace);
  const json* agents = Field(j, "agents");
  if (agents != nullptr && agents->is_array()) {
    for (const auto& a : *agents) {
      s.agents.push_back(Agent{Str(a, "name"), Str(a, "version"), Str(a, "image_uuid"), Str(a, "uuid")});
    }
  }
  return s;
}

Task ToTask(const json& j) {
  Task t;
  t.id = Str(j, "id");
  t.task = Str(j, "task");
  t.server_uuid = Str(j, "server_uuid");
  t.status = Str(j, "status");
  const json* h = Field(j, "history");
  if (t.status == "failure" && h != nullptr && h->is_array() && !h->empty()) {
    const json& error = Obj(Obj((*h)[0], "event"), "error");
    t.error = Str(error, "message");
  }
  return t;
}

Image ToImage(const json& j) {
  Image i{Str(j, "uuid"), Str(j, "name"),  Str(j, "version"), Str(j, "state"),      Str(j, "os"),
          Str(j, "type"), Str(j, "owner"), Str(j, "origin"),  Str(j, "published_at")};
  i.requirements_brand = Str(Obj(j, "requirements"), "brand");
  const json* files = Field(j, "files");
  if (files != nullptr && files->is_array() && !files->empty()) i.size = Int((*files)[0], "size");
  i.channels = Strings(j, "channels");
  i.changes = Str(j, "changes");
  return i;
}

FabricNetwork ToFabricNetwork(const json& j) {
  FabricNetwork n;
  n.uuid = Str(j, "uuid");
  n.name = Str(j, "name");
  n.subnet = Str(j, "subnet");
  n.gateway = Str(j, "gateway");
  n.provision_start_ip = Str(j, "provision_start_ip");
  n.provision_end_ip = Str(j, "provision_end_ip");
  n.description = Str(j, "description");
  n.vlan_id = SmallInt(j, "vlan_id");
  n.resolvers = Strings(j, "resolvers");
  for (const auto& [d, g] : Obj(j, "routes").items()) {
    if (g.is_string()) n.routes[d] = g.get<std::string>();
  }
  n.internet_nat = Bool(j, "internet_nat", true);
  return n;
}

template <typename T, typename F>
absl::StatusOr<std::vector<T>> Each(absl::string_view body, absl::string_view what, F f) {
  ASSIGN_OR_RETURN(json list, ParseList(body, what));
  std::vector<T> out;
  out.reserve(list.size());
  for (const auto& item : list) {
    if (item.is_object()) f(item, &out);
  }
  return out;
}

}  // namespace

absl::StatusOr<Job> ParseJob(absl::string_view body, absl::string_view what) {
  ASSIGN_OR_RETURN(json j, ParseObject(body, what));
  return ToJob(j);
}

absl::StatusOr<JobRef> ParseJobRef(absl::string_view body, const std::map<std::string, std::string>& headers,
                                   absl::string_view what) {
  ASSIGN_OR_RETURN(json j, ParseObject(body, what));
  JobRef ref;
  ref.vm_uuid = Str(j, "vm_uuid");
  ref.job_uuid = Str(j, "job_uuid");
  ref.image_uuid = Str(j, "image_uuid");
  auto wf = headers.find("workflow-api");
  if (wf != headers.end()) ref.workflow_api = wf->second;
  if (ref.job_uuid.empty()) return absl::DataLossError(absl::StrCat(what, ": answer has no job_uuid"));
  return ref;
}

absl::StatusOr<std::vector<Server>> ParseServers(absl::string_view body, absl::string_view what) {
  return Each<Server>(body, what, [](const json& j, std::vector<Server>* out) { out->push_back(ToServer(j)); });
}

absl::StatusOr<Server> ParseServer(absl::string_view body, absl::string_view what) {
  ASSIGN_OR_RETURN(json j, ParseObject(body, what));
  return ToServer(j);
}

absl::StatusOr<Task> ParseTask(absl::string_view body, absl::string_view what) {
  ASSIGN_OR_RETURN(json j, ParseObject(body, what));
  return ToTask(j);
}

absl::StatusOr<std::string> ParseTaskId(absl::string_view body, absl::string_view what) {
  ASSIGN_OR_RETURN(json j, ParseObject(body, what));
  std::string id = Str(j, "id");
  if (id.empty()) return absl::DataLossError(absl::StrCat(what, ": answer has no task id"));
  return id;
}

absl::StatusOr<std::vector<Image>> ParseImages(absl::string_view body, absl::string_view what) {
  return Each<Image>(body, what, [](const json& j, std::vector<Image>* out) { out->push_back(ToImage(j)); });
}

absl::StatusOr<Image> ParseImage(absl::string_view body, absl::string_view what) {
  ASSIGN_OR_RETURN(json j, ParseObject(body, what));
  return ToImage(j);
}

absl::StatusOr<std::vector<Package>> ParsePackages(absl::string_view body, absl::string_view what) {
  return Each<Package>(body, what, [](const json& p, std::vector<Package>* out) {
    Package k;
    k.uuid = Str(p, "uuid");
    k.name = Str(p, "name");
    k.version = Str(p, "version");
    k.active = Bool(p, "active", true);
    k.max_physical_memory = Int(p, "max_physical_memory");
    k.quota = Int(p, "quota");
    k.max_swap = Int(p, "max_swap");
    k.max_lwps = Int(p, "max_lwps");
    k.cpu_cap = Int(p, "cpu_cap");
    k.vcpus = Int(p, "vcpus");
    k.zfs_io_priority = Int(p, "zfs_io_priority");
    k.owner_uuids = Strings(p, "owner_uuids");
    out->push_back(std::move(k));
  });
}

absl::StatusOr<std::vector<Network>> ParseNetworks(absl::string_view body, bool pools, absl::string_view what) {
  return Each<Network>(body, what, [pools](const json& n, std::vector<Network>* out) {
    Network k;
    k.uuid = Str(n, "uuid");
    k.name = Str(n, "name");
    k.subnet = Str(n, "subnet");
    k.fabric = Bool(n, "fabric", false);
    k.pool = pools;
    k.owner_uuids = Strings(n, "owner_uuids");
    out->push_back(std::move(k));
  });
}

absl::StatusOr<std::vector<FabricVlan>> ParseFabricVlans(absl::string_view body, absl::string_view what) {
  return Each<FabricVlan>(body, what, [](const json& j, std::vector<FabricVlan>* out) {
    out->push_back({SmallInt(j, "vlan_id"), Str(j, "name"), Str(j, "description")});
  });
}

absl::StatusOr<std::vector<FabricNetwork>> ParseFabricNetworks(absl::string_view body, absl::string_view what) {
  return Each<FabricNetwork>(
      body, what, [](const json& j, std::vector<FabricNetwork>* out) { out->push_back(ToFabricNetwork(j)); });
}

absl::StatusOr<FabricNetwork> ParseFabricNetwork(absl::string_view body, absl::string_view what) {
  ASSIGN_OR_RETURN(json j, ParseObject(body, what));
  return ToFabricNetwork(j);
}

absl::StatusOr<std::vector<FwRule>> ParseFwRules(absl::string_view body, absl::string_view what) {
  return Each<FwRule>(body, what, [](const json& j, std::vector<FwRule>* out) {
    FwRule f;
    f.uuid = Str(j, "uuid");
    f.owner_uuid = Str(j, "owner_uuid");
    f.rule = Str(j, "rule");
    f.description = Str(j, "description");
    f.enabled = Bool(j, "enabled", false);
    f.global = Bool(j, "global", false);
    f.log = Bool(j, "log", false);
    out->push_back(std::move(f));
  });
}

absl::StatusOr<std::vector<Volume>> ParseVolumes(absl::string_view body, absl::string_view what) {
  return Each<Volume>(body, what, [](const json& j, std::vector<Volume>* out) {
    Volume v;
    v.uuid = Str(j, "uuid");
    v.owner_uuid = Str(j, "owner_uuid");
    v.name = Str(j, "name");
    v.size = Int(j, "size");
    v.state = Str(j, "state");
    v.networks = Strings(j, "networks");
    v.refs = Strings(j, "refs");
    v.create_timestamp = Str(j, "create_timestamp");
    if (v.state != "deleted") out->push_back(std::move(v));
  });
}

absl::StatusOr<std::vector<int64_t>> ParseVolumeSizes(absl::string_view body, absl::string_view what) {
  return Each<int64_t>(body, what, [](const json& j, std::vector<int64_t>* out) {
    std::string type = Str(j, "type");
    int64_t size = Int(j, "size");
    if ((type.empty() || type == "tritonnfs") && size > 0) out->push_back(size);
  });
}

}  // namespace mariposa::triton
