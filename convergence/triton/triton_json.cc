#include "convergence/triton/triton_json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <variant>

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

// One type's reading, as a table: each plain field by its key, and what
// is not a plain field (nested objects and lists) read by `more`.
template <typename T>
struct Mapping {
  struct Field {
    const char* key;
    std::variant<std::string T::*, int64_t T::*, int T::*, bool T::*, std::vector<std::string> T::*> member;
    bool otherwise = false;  // a bool's value when absent or not a bool
  };
  std::vector<Field> fields;
  void (*more)(const json& j, T* out) = nullptr;

  T Read(const json& j) const {
    T out;
    for (const Field& f : fields) {
      if (auto* s = std::get_if<std::string T::*>(&f.member)) out.*(*s) = Str(j, f.key);
      else if (auto* i = std::get_if<int64_t T::*>(&f.member)) out.*(*i) = Int(j, f.key);
      else if (auto* n = std::get_if<int T::*>(&f.member)) out.*(*n) = SmallInt(j, f.key);
      else if (auto* b = std::get_if<bool T::*>(&f.member)) out.*(*b) = Bool(j, f.key, f.otherwise);
      else if (auto* l = std::get_if<std::vector<std::string> T::*>(&f.member)) out.*(*l) = Strings(j, f.key);
    }
    if (more != nullptr) more(j, &out);
    return out;
  }
};

// An answer that is one object of type T.
template <typename T>
absl::StatusOr<T> One(absl::string_view body, absl::string_view what, const Mapping<T>& m) {
  ASSIGN_OR_RETURN(json j, ParseObject(body, what));
  return m.Read(j);
}

// A listing's answer: each object entry read (others are skipped), those
// `keep` refuses left out.
template <typename T>
absl::StatusOr<std::vector<T>> All(absl::string_view body, absl::string_view what, const Mapping<T>& m,
                                   bool (*keep)(const T&) = nullptr) {
  ASSIGN_OR_RETURN(json list, ParseList(body, what));
  std::vector<T> out;
  out.reserve(list.size());
  for (const auto& item : list) {
    if (!item.is_object()) continue;
    T t = m.Read(item);
    if (keep == nullptr || keep(t)) out.push_back(std::move(t));
  }
  return out;
}

const Mapping<Job> kJob{
    {{"uuid", &Job::uuid}, {"name", &Job::name}, {"execution", &Job::execution}},
    [](const json& j, Job* out) {
      const json& params = Obj(j, "params");
      out->task = Str(params, "task");
      out->vm_uuid = Str(params, "vm_uuid");
      const json* chain = Field(j, "chain_results");
      if (chain == nullptr || !chain->is_array()) return;
      for (const auto& r : *chain) {
        const json* result = Field(r, "result");
        std::string text = result != nullptr && result->is_string() ? result->get<std::string>() : "";
        out->steps.push_back(absl::StrCat(Str(r, "name"), text.empty() ? "" : ": ", text));
        const json* error = Field(r, "error");
        if (error != nullptr && error->is_object()) {
          out->error = Str(*error, "message");
        } else if (error != nullptr && error->is_string() && !error->get<std::string>().empty()) {
          out->error = error->get<std::string>();
        }
      }
    }};

const Mapping<JobRef> kJobRef{{{"vm_uuid", &JobRef::vm_uuid}, {"job_uuid", &JobRef::job_uuid},
                               {"image_uuid", &JobRef::image_uuid}}};

const Mapping<Agent> kAgent{
    {{"name", &Agent::name}, {"version", &Agent::version}, {"image_uuid", &Agent::image_uuid}, {"uuid", &Agent::uuid}}};

const Mapping<Server> kServer{
    {{"uuid", &Server::uuid},
     {"hostname", &Server::hostname},
     {"status", &Server::status},
     {"headnode", &Server::headnode, false},
     {"reserved", &Server::reserved, false},
     {"setup", &Server::setup, true},
     {"ram", &Server::ram},
     {"unreserved_ram", &Server::unreserved_ram}},
    [](const json& j, Server* s) {
      s->traits_json = Obj(j, "traits").dump(-1, ' ', false, json::error_handler_t::replace);
      const json* agents = Field(j, "agents");
      if (agents == nullptr || !agents->is_array()) return;
      for (const auto& a : *agents) s->agents.push_back(kAgent.Read(a));
    }};

const Mapping<Task> kTask{
    {{"id", &Task::id}, {"task", &Task::task}, {"server_uuid", &Task::server_uuid}, {"status", &Task::status}},
    [](const json& j, Task* t) {
      const json* h = Field(j, "history");
      if (t->status == "failure" && h != nullptr && h->is_array() && !h->empty()) {
        t->error = Str(Obj(Obj((*h)[0], "event"), "error"), "message");
      }
    }};

const Mapping<Image> kImage{
    {{"uuid", &Image::uuid},
     {"name", &Image::name},
     {"version", &Image::version},
     {"state", &Image::state},
     {"os", &Image::os},
     {"type", &Image::type},
     {"owner", &Image::owner},
     {"origin", &Image::origin},
     {"published_at", &Image::published_at},
     {"channels", &Image::channels},
     {"changes", &Image::changes}},
    [](const json& j, Image* i) {
      i->requirements_brand = Str(Obj(j, "requirements"), "brand");
      const json* files = Field(j, "files");
      if (files != nullptr && files->is_array() && !files->empty()) i->size = Int((*files)[0], "size");
    }};

const Mapping<Package> kPackage{{{"uuid", &Package::uuid},
                                 {"name", &Package::name},
                                 {"version", &Package::version},
                                 {"active", &Package::active, true},
                                 {"max_physical_memory", &Package::max_physical_memory},
                                 {"quota", &Package::quota},
                                 {"max_swap", &Package::max_swap},
                                 {"max_lwps", &Package::max_lwps},
                                 {"cpu_cap", &Package::cpu_cap},
                                 {"vcpus", &Package::vcpus},
                                 {"zfs_io_priority", &Package::zfs_io_priority},
                                 {"owner_uuids", &Package::owner_uuids}}};

const Mapping<Network> kNetwork{{{"uuid", &Network::uuid},
                                 {"name", &Network::name},
                                 {"subnet", &Network::subnet},
                                 {"fabric", &Network::fabric, false},
                                 {"owner_uuids", &Network::owner_uuids}}};

const Mapping<FabricVlan> kFabricVlan{
    {{"vlan_id", &FabricVlan::vlan_id}, {"name", &FabricVlan::name}, {"description", &FabricVlan::description}}};

const Mapping<FabricNetwork> kFabricNetwork{
    {{"uuid", &FabricNetwork::uuid},
     {"name", &FabricNetwork::name},
     {"subnet", &FabricNetwork::subnet},
     {"gateway", &FabricNetwork::gateway},
     {"provision_start_ip", &FabricNetwork::provision_start_ip},
     {"provision_end_ip", &FabricNetwork::provision_end_ip},
     {"description", &FabricNetwork::description},
     {"vlan_id", &FabricNetwork::vlan_id},
     {"resolvers", &FabricNetwork::resolvers},
     {"internet_nat", &FabricNetwork::internet_nat, true}},
    [](const json& j, FabricNetwork* n) {
      for (const auto& [d, g] : Obj(j, "routes").items()) {
        if (g.is_string()) n->routes[d] = g.get<std::string>();
      }
    }};

const Mapping<FwRule> kFwRule{{{"uuid", &FwRule::uuid},
                               {"owner_uuid", &FwRule::owner_uuid},
                               {"rule", &FwRule::rule},
                               {"description", &FwRule::description},
                               {"enabled", &FwRule::enabled, false},
                               {"global", &FwRule::global, false},
                               {"log", &FwRule::log, false}}};

const Mapping<Volume> kVolume{{{"uuid", &Volume::uuid},
                               {"owner_uuid", &Volume::owner_uuid},
                               {"name", &Volume::name},
                               {"size", &Volume::size},
                               {"state", &Volume::state},
                               {"networks", &Volume::networks},
                               {"refs", &Volume::refs},
                               {"create_timestamp", &Volume::create_timestamp}}};

// An entry of GET /volumesizes.
struct VolumeSize {
  std::string type;
  int64_t size = 0;
};
const Mapping<VolumeSize> kVolumeSize{{{"type", &VolumeSize::type}, {"size", &VolumeSize::size}}};

}  // namespace

absl::StatusOr<Job> ParseJob(absl::string_view body, absl::string_view what) { return One(body, what, kJob); }

absl::StatusOr<JobRef> ParseJobRef(absl::string_view body, const std::map<std::string, std::string>& headers,
                                   absl::string_view what) {
  ASSIGN_OR_RETURN(JobRef ref, One(body, what, kJobRef));
  auto wf = headers.find("workflow-api");
  if (wf != headers.end()) ref.workflow_api = wf->second;
  if (ref.job_uuid.empty()) return absl::DataLossError(absl::StrCat(what, ": answer has no job_uuid"));
  return ref;
}

absl::StatusOr<std::vector<Server>> ParseServers(absl::string_view body, absl::string_view what) {
  return All(body, what, kServer);
}

absl::StatusOr<Server> ParseServer(absl::string_view body, absl::string_view what) { return One(body, what, kServer); }

absl::StatusOr<Task> ParseTask(absl::string_view body, absl::string_view what) { return One(body, what, kTask); }

absl::StatusOr<std::string> ParseTaskId(absl::string_view body, absl::string_view what) {
  ASSIGN_OR_RETURN(Task t, One(body, what, kTask));
  if (t.id.empty()) return absl::DataLossError(absl::StrCat(what, ": answer has no task id"));
  return t.id;
}

absl::StatusOr<std::vector<Image>> ParseImages(absl::string_view body, absl::string_view what) {
  return All(body, what, kImage);
}

absl::StatusOr<Image> ParseImage(absl::string_view body, absl::string_view what) { return One(body, what, kImage); }

absl::StatusOr<std::vector<Package>> ParsePackages(absl::string_view body, absl::string_view what) {
  return All(body, what, kPackage);
}

absl::StatusOr<std::vector<Network>> ParseNetworks(absl::string_view body, bool pools, absl::string_view what) {
  ASSIGN_OR_RETURN(std::vector<Network> out, All(body, what, kNetwork));
  for (Network& n : out) n.pool = pools;
  return out;
}

absl::StatusOr<std::vector<FabricVlan>> ParseFabricVlans(absl::string_view body, absl::string_view what) {
  return All(body, what, kFabricVlan);
}

absl::StatusOr<std::vector<FabricNetwork>> ParseFabricNetworks(absl::string_view body, absl::string_view what) {
  return All(body, what, kFabricNetwork);
}

absl::StatusOr<FabricNetwork> ParseFabricNetwork(absl::string_view body, absl::string_view what) {
  return One(body, what, kFabricNetwork);
}

absl::StatusOr<std::vector<FwRule>> ParseFwRules(absl::string_view body, absl::string_view what) {
  return All(body, what, kFwRule);
}

absl::StatusOr<std::vector<Volume>> ParseVolumes(absl::string_view body, absl::string_view what) {
  return All(body, what, kVolume, +[](const Volume& v) { return v.state != "deleted"; });
}

absl::StatusOr<std::vector<int64_t>> ParseVolumeSizes(absl::string_view body, absl::string_view what) {
  ASSIGN_OR_RETURN(std::vector<VolumeSize> entries, All(body, what, kVolumeSize));
  std::vector<int64_t> out;
  for (const VolumeSize& e : entries) {
    if ((e.type.empty() || e.type == "tritonnfs") && e.size > 0) out.push_back(e.size);
  }
  return out;
}

}  // namespace mariposa::triton
