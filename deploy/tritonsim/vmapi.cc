// VMAPI: /vms, actions, tags.
#include "deploy/tritonsim/datacenter.h"

#include <algorithm>
#include <optional>

#include "absl/strings/numbers.h"
#include "deploy/tritonsim/changefeed.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {

std::string DataCenter::EffectiveStateLocked(const Vm& vm) const {
  if (!servers_down_.empty() && (vm.state == "running" || vm.state == "stopped") &&
      servers_down_.count(vm.server_uuid)) {
    return "unknown";
  }
  return vm.state;
}

namespace {

void AppendQuoted(const std::string& v, std::string* out) {
  out->push_back('"');
  for (unsigned char c : v) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

// Appends `"key":` then the value.
void Key(const char* key, std::string* out, bool first = false) {
  if (!first) out->push_back(',');
  out->push_back('"');
  *out += key;
  *out += "\":";
}

void StrOrNull(const std::string& v, std::string* out) {
  if (v.empty()) *out += "null";
  else AppendQuoted(v, out);
}

}  // namespace

// The one VM serializer: written straight to text (ListVms pages of 1,000
// VMs are the hot path); VmJson parses it back for the rare callers that need
// a tree.
// A VM's NICs as VMAPI writes them.
void DataCenter::WriteNicsJson(const std::vector<Nic>& nics, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < nics.size(); ++i) {
    const Nic& n = nics[i];
    if (i > 0) out->push_back(',');
    out->push_back('{');
    Key("interface", out, true);
    AppendQuoted(n.interface, out);
    Key("mac", out);
    AppendQuoted(n.mac, out);
    Key("vlan_id", out);
    *out += std::to_string(n.vlan_id);
    Key("nic_tag", out);
    AppendQuoted(n.nic_tag, out);
    Key("ip", out);
    AppendQuoted(n.ip, out);
    Key("netmask", out);
    AppendQuoted(n.netmask, out);
    Key("gateway", out);
    AppendQuoted(n.gateway, out);
    Key("primary", out);
    *out += n.primary ? "true" : "false";
    Key("network_uuid", out);
    AppendQuoted(n.network_uuid, out);
    out->push_back('}');
  }
  out->push_back(']');
}

void DataCenter::WriteVmJson(const Vm& vm, std::string* out, size_t* state_at) const {
  bool hvm = vm.brand == "kvm" || vm.brand == "bhyve";
  out->push_back('{');
  Key("uuid", out, true);
  AppendQuoted(vm.uuid, out);
  Key("alias", out);
  StrOrNull(vm.alias, out);
  Key("owner_uuid", out);
  AppendQuoted(vm.owner_uuid, out);
  Key("billing_id", out);
  StrOrNull(vm.billing_id, out);
  Key("brand", out);
  AppendQuoted(vm.brand, out);
  Key("server_uuid", out);
  StrOrNull(vm.server_uuid, out);
  Key("state", out);
  *state_at = out->size();  // the state is spliced in here on every write
  Key("zone_state", out);
  AppendQuoted(vm.zone_state, out);
  if (hvm) {
    Key("disks", out);
    *out += vm.disks.is_null() ? "[]" : vm.disks.dump();
  } else {
    Key("image_uuid", out);
    AppendQuoted(vm.image_uuid, out);
  }
  for (auto [key, value] : {std::pair<const char*, int64_t>{"ram", vm.ram}, {"max_physical_memory", vm.max_physical_memory},
                            {"quota", vm.quota}, {"cpu_cap", vm.cpu_cap}, {"max_swap", vm.max_swap},
                            {"max_lwps", vm.max_lwps}, {"zfs_io_priority", vm.zfs_io_priority},
                            {"cpu_shares", vm.cpu_shares}}) {
    Key(key, out);
    *out += std::to_string(value);
  }
  if (hvm) {
    Key("vcpus", out);
    *out += std::to_string(vm.vcpus);
  }
  Key("create_timestamp", out);
  AppendQuoted(Iso(vm.create_ms), out);
  Key("last_modified", out);
  AppendQuoted(Iso(vm.modified_ms), out);
  Key("tags", out);
  *out += vm.tags.dump();
  Key("customer_metadata", out);
  *out += vm.customer_metadata.dump();
  Key("internal_metadata", out);
  *out += vm.internal_metadata.dump();
  Key("docker", out);
  *out += vm.docker ? "true" : "false";
  if (!vm.volumes.empty()) {
    Key("volumes", out);
    *out += vm.volumes.dump();
  }
  Key("datasets", out);
  *out += json(vm.datasets).dump();
  Key("nics", out);
  WriteNicsJson(vm.nics, out);
  Key("resolvers", out);
  *out += "[\"8.8.8.8\"]";
  Key("snapshots", out);
  *out += "[]";
  Key("autoboot", out);
  *out += vm.autoboot ? "true" : "false";
  Key("firewall_enabled", out);
  *out += vm.firewall_enabled ? "true" : "false";
  if (vm.exit_status >= 0) {
    Key("exit_status", out);
    *out += std::to_string(vm.exit_status);
    Key("exit_timestamp", out);
    AppendQuoted(Iso(vm.exit_ms), out);
  }
  out->push_back('}');
}

void DataCenter::AppendVmJson(const Vm& vm, std::string* out) const {
  if (vm.json_rev != vm.rev) {
    vm.json_cache.clear();
    WriteVmJson(vm, &vm.json_cache, &vm.json_state_at);
    vm.json_rev = vm.rev;
  }
  out->append(vm.json_cache, 0, vm.json_state_at);
  AppendQuoted(EffectiveStateLocked(vm), out);
  out->append(vm.json_cache, vm.json_state_at, std::string::npos);
}

void DataCenter::Touch(Vm* vm) {
  vm->modified_ms = NowMs();
  ++vm->rev;
  FeedLocked(vm);
}

void DataCenter::FeedLocked(Vm* vm) {
  if (feed_ == nullptr || !feed_->Listening()) return;
  std::string now;
  AppendVmJson(*vm, &now);
  feed_->Publish("vm", vm->uuid, ChangedKeys(vm->feed_json, now), now, NowMs());
  vm->feed_json = std::move(now);
}

json DataCenter::VmJson(const Vm& vm) const {
  std::string text;
  AppendVmJson(vm, &text);
  return json::parse(text);
}

void DataCenter::TagIndexAddLocked(const Vm& vm) {
  for (auto it = vm.tags.begin(); it != vm.tags.end(); ++it) {
    std::string v = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    tag_index_[it.key()][v].insert(vm.uuid);
  }
}

void DataCenter::TagIndexRemoveLocked(const Vm& vm) {
  for (auto it = vm.tags.begin(); it != vm.tags.end(); ++it) {
    std::string v = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    auto k = tag_index_.find(it.key());
    if (k == tag_index_.end()) continue;
    auto vs = k->second.find(v);
    if (vs != k->second.end()) {
      vs->second.erase(vm.uuid);
      if (vs->second.empty()) k->second.erase(vs);
    }
  }
}

namespace {

// ListVms's query, checked as VMAPI checks it.
struct ListQuery {
  int64_t limit = 1000, offset = 0;
  json marker;
  std::string sort_field = "create_timestamp";
  bool asc = false;
  json predicate;
  std::set<std::string> uuids;
  std::vector<std::string> fields;
  bool numeric() const { return sort_field == "create_timestamp" || sort_field == "ram"; }
};

// VMAPI's 409 for the first parameter it refuses, or nothing.
std::optional<Reply> ReadListQuery(const Params& q, ListQuery* out) {
  Reply r;
  static const std::set<std::string> kAllowed = {"alias", "billing_id", "brand", "image_uuid", "owner_uuid",
                                                 "server_uuid", "uuid", "uuids", "ram", "state", "predicate",
                                                 "fields", "limit", "offset", "marker", "sort", "create_timestamp"};
  if (!CheckParams(q, kAllowed, true, 409, &r)) return r;
  if (const std::string* v = Get(q, "limit")) {
    if (!ParseInt(*v, &out->limit) || out->limit < 1 || out->limit > 1000) {
      return Validation(409, "limit", "Invalid", "must be 1..1000");
    }
  }
  if (const std::string* v = Get(q, "offset")) {
    if (!ParseInt(*v, &out->offset) || out->offset < 0) return Validation(409, "offset", "Invalid", "must be >= 0");
  }
  if (const std::string* v = Get(q, "marker")) {
    if (Get(q, "offset")) return Validation(409, "marker", "ConflictingParameters", "offset and marker cannot be used together");
    out->marker = json::parse(*v, nullptr, false);
    if (!out->marker.is_object() || !out->marker.contains("uuid")) {
      return Validation(409, "marker", "Invalid", "marker must be a JSON object with uuid and the sort fields");
    }
  }
  if (const std::string* v = Get(q, "sort")) {
    std::string s = *v;
    size_t dot = s.rfind('.');
    if (dot != std::string::npos && (s.substr(dot + 1) == "ASC" || s.substr(dot + 1) == "DESC")) {
      out->asc = s.substr(dot + 1) == "ASC";
      s = s.substr(0, dot);
    }
    static const std::set<std::string> kSortable = {"uuid", "alias", "brand", "create_timestamp", "ram", "state",
                                                    "owner_uuid", "server_uuid", "image_uuid", "billing_id"};
    if (!kSortable.count(s)) return Validation(409, "sort", "Invalid", "cannot sort by " + s);
    out->sort_field = s;
  }
  if (const std::string* v = Get(q, "state")) {
    static const std::set<std::string> kStates = {"running", "stopped", "active", "destroyed", "provisioning",
                                                  "failed", "incomplete", "unknown"};
    if (!kStates.count(*v)) return Validation(409, "state", "Invalid", "unknown state " + *v);
  }
  if (const std::string* v = Get(q, "predicate")) {
    out->predicate = json::parse(*v, nullptr, false);
    if (out->predicate.is_discarded()) return Validation(409, "predicate", "Invalid", "predicate is not valid JSON");
  }
  if (const std::string* v = Get(q, "uuids")) {
    for (const auto& u : Split(*v, ',')) out->uuids.insert(u);
  }
  if (const std::string* v = Get(q, "fields")) out->fields = Split(*v, ',');
  return std::nullopt;
}

// Requested order, then uuid DESC as the tie-breaker.
bool Before(const ListQuery& lq, const DataCenter::VmMatch& a, const DataCenter::VmMatch& b) {
  int c = lq.numeric() ? (a.num < b.num ? -1 : a.num > b.num) : a.str.compare(b.str);
  if (c == 0) return *a.uuid > *b.uuid;
  return lq.asc ? c < 0 : c > 0;
}

// Only the page is ordered: the rows after the marker (or the first offset +
// limit) are selected in linear time, then sorted, so paging through N
// matches costs O(N) per page rather than O(N log N). The page's first row.
size_t Page(const ListQuery& lq, std::vector<DataCenter::VmMatch>* matches) {
  auto before = [&](const DataCenter::VmMatch& a, const DataCenter::VmMatch& b) { return Before(lq, a, b); };
  size_t start = lq.offset;
  if (!lq.marker.is_null()) {
    // Exclusive: the rows after the marker in this order. A marker whose VM
    // no longer matches falls where its sort fields would.
    const json& marker = lq.marker;
    std::string mu = marker["uuid"].is_string() ? marker["uuid"].get<std::string>() : "";
    std::optional<DataCenter::VmMatch> probe;
    for (const DataCenter::VmMatch& m : *matches) {
      if (*m.uuid == mu) {
        probe = m;
        break;
      }
    }
    if (!probe && marker.contains(lq.sort_field)) {
      DataCenter::VmMatch m{nullptr, &mu, 0, ""};
      const json& mv = marker[lq.sort_field];
      if (lq.numeric()) m.num = mv.is_number() ? mv.get<int64_t>() : ParseIsoMs(mv.is_string() ? mv.get<std::string>() : "");
      else m.str = mv.is_string() ? mv.get<std::string>() : mv.dump();
      probe = m;
    }
    if (probe) {
      matches->erase(std::remove_if(matches->begin(), matches->end(),
                                    [&](const DataCenter::VmMatch& m) { return !before(*probe, m); }),
                     matches->end());
    } else {
      matches->clear();
    }
    start = 0;
  }
  size_t want = start + static_cast<size_t>(lq.limit);
  if (matches->size() > want) {
    std::nth_element(matches->begin(), matches->begin() + want, matches->end(), before);
    matches->resize(want);
  }
  std::sort(matches->begin(), matches->end(), before);
  return start;
}

}  // namespace

// The VMs the query's filters let through, with their sort keys: candidates
// from the smallest tag index set, else every VM. Throws runtime_error for
// a predicate that cannot be evaluated.
std::vector<DataCenter::VmMatch> DataCenter::MatchingVmsLocked(const Params& q, const json& predicate,
                                                               const std::set<std::string>& uuids_filter,
                                                               const std::string& sort_field) const {
  std::vector<VmMatch> matches;
  const std::set<std::string>* best = nullptr;
  std::set<std::string> any_value;
  for (const auto& kv : q) {
    if (kv.first.rfind("tag.", 0) != 0) continue;
    auto k = tag_index_.find(kv.first.substr(4));
    if (k == tag_index_.end()) return matches;
    if (kv.second == "*") {
      if (best == nullptr) {
        for (const auto& vs : k->second) any_value.insert(vs.second.begin(), vs.second.end());
        best = &any_value;
      }
      continue;
    }
    auto vs = k->second.find(kv.second);
    if (vs == k->second.end()) return matches;
    if (best == nullptr || vs->second.size() < best->size()) best = &vs->second;
  }
  // Filter and sort on the VM records; JSON is built only for a predicate
  // and for the page that is returned. The filters, looked up once (a
  // listing of N VMs is N checks per page).
  const std::string* f_state = Get(q, "state");
  const std::pair<const char*, std::string Vm::*> kExact[] = {
      {"billing_id", &Vm::billing_id}, {"brand", &Vm::brand},        {"image_uuid", &Vm::image_uuid},
      {"owner_uuid", &Vm::owner_uuid}, {"server_uuid", &Vm::server_uuid}, {"uuid", &Vm::uuid}};
  std::vector<std::pair<const std::string*, std::string Vm::*>> exact;
  for (const auto& [name, field] : kExact) {
    if (const std::string* v = Get(q, name)) exact.emplace_back(v, field);
  }
  const std::string* f_alias = Get(q, "alias");
  const std::string* f_ram = Get(q, "ram");
  std::vector<std::pair<std::string, const std::string*>> f_tags;
  for (const auto& kv : q) {
    if (kv.first.rfind("tag.", 0) == 0) f_tags.emplace_back(kv.first.substr(4), &kv.second);
  }
  auto consider = [&](const Vm& vm) {
    std::string state = EffectiveStateLocked(vm);
    if (f_state != nullptr) {
      if (*f_state == "active") {
        if (state == "destroyed" || state == "failed") return;
      } else if (state != *f_state) {
        return;
      }
    }
    if (f_alias && vm.alias.rfind(*f_alias, 0) != 0) return;
    for (const auto& [want, field] : exact) {
      if (vm.*field != *want) return;
    }
    if (f_ram && std::to_string(vm.ram) != *f_ram) return;
    if (!uuids_filter.empty() && !uuids_filter.count(vm.uuid)) return;
    for (const auto& [key, want] : f_tags) {
      auto t = vm.tags.find(key);
      if (t == vm.tags.end()) return;
      if (*want == "*") continue;
      if (t->is_string() ? t->get_ref<const std::string&>() != *want : t->dump() != *want) return;
    }
    if (!predicate.is_null()) {
      std::string err;
      bool ok = EvalPredicate(predicate, VmJson(vm), &err);
      if (!err.empty()) throw std::runtime_error(err);
      if (!ok) return;
    }
    VmMatch m{&vm, &vm.uuid, 0, ""};
    if (sort_field == "create_timestamp") m.num = vm.create_ms;
    else if (sort_field == "ram") m.num = vm.ram;
    else if (sort_field == "state") m.str = state;
    else if (sort_field == "alias") m.str = vm.alias;
    else {
      for (const auto& [name, field] : kExact) {
        if (sort_field == name) m.str = vm.*field;
      }
    }
    matches.push_back(std::move(m));
  };
  if (best != nullptr) {
    for (const auto& u : *best) {
      auto it = vms_.find(u);
      if (it != vms_.end()) consider(it->second);
    }
  } else {
    for (const auto& kv : vms_) consider(kv.second);
  }
  return matches;
}

Reply DataCenter::ListVms(const Params& q, bool head) {
  ListQuery lq;
  if (std::optional<Reply> refused = ReadListQuery(q, &lq)) return *refused;
  absl::MutexLock l(&mu_);
  std::vector<VmMatch> matches;
  try {
    matches = MatchingVmsLocked(q, lq.predicate, lq.uuids, lq.sort_field);
  } catch (const std::runtime_error& e) {
    return Validation(409, "predicate", "Invalid", e.what());
  }
  Reply r;
  r.headers["x-joyent-resource-count"] = std::to_string(matches.size());
  if (head) {
    r.body = nullptr;
    return r;
  }
  size_t start = Page(lq, &matches);
  if (lq.fields.empty()) {
    // The hot path: the page written as text.
    std::string text = "[";
    for (size_t i = start, n = 0; i < matches.size() && static_cast<int64_t>(n) < lq.limit; ++i, ++n) {
      if (n > 0) text.push_back(',');
      AppendVmJson(*matches[i].vm, &text);
    }
    text.push_back(']');
    r.raw_body = std::move(text);
    r.body = nullptr;
    return r;
  }
  r.body = json::array();
  for (size_t i = start; i < matches.size() && static_cast<int64_t>(r.body.size()) < lq.limit; ++i) {
    json j = VmJson(*matches[i].vm);
    json f = json::object();
    for (const auto& name : lq.fields) {
      if (j.contains(name)) f[name] = j[name];
    }
    r.body.push_back(std::move(f));
  }
  return r;
}

// VMAPI's loading of /vms/UUID: with ?owner_uuid=, a VM of another account
// is not found.
std::unordered_map<std::string, DataCenter::Vm>::iterator DataCenter::FindVmLocked(const std::string& uuid, const Params& q) {
  auto it = vms_.find(uuid);
  if (it == vms_.end()) return it;
  if (const std::string* o = Get(q, "owner_uuid"); o && it->second.owner_uuid != *o) return vms_.end();
  return it;
}

Reply DataCenter::GetVm(const std::string& uuid, const Params& q) {
  Reply r;
  if (!CheckParams(q, {"owner_uuid", "fields", "sync"}, false, 409, &r)) return r;
  absl::MutexLock l(&mu_);
  auto it = FindVmLocked(uuid, q);
  if (it == vms_.end()) return Error(404, "ResourceNotFound", "VM not found");
  r.body = VmJson(it->second);
  return r;
}

std::string DataCenter::PlaceLocked(int64_t ram, const json& locality, std::string* why) {
  std::set<std::string> far, near;
  bool strict = false;
  auto vm_servers = [&](const json& list, std::set<std::string>* out) {
    json l = list.is_string() ? json::array({list}) : list;
    if (!l.is_array()) return;
    for (const auto& u : l) {
      if (!u.is_string()) continue;
      auto it = vms_.find(u.get<std::string>());
      if (it != vms_.end() && !it->second.server_uuid.empty()) out->insert(it->second.server_uuid);
    }
  };
  if (locality.is_object()) {
    strict = locality.value("strict", false);
    if (locality.contains("far")) vm_servers(locality["far"], &far);
    if (locality.contains("near")) vm_servers(locality["near"], &near);
  }
  // Servers from the most unreserved RAM down (spreads load like DAPI's
  // default): the first eligible one with the best locality score wins.
  std::string best;
  int best_score = -1;
  for (auto it = by_free_.rbegin(); it != by_free_.rend() && it->first >= ram; ++it) {
    const Server& s = servers_.at(it->second);
    if (s.status != "running" || !s.setup || s.reserved) continue;
    bool is_far_ok = !far.count(s.uuid);
    bool is_near = near.empty() || near.count(s.uuid);
    if (strict && (!is_far_ok || !is_near)) continue;
    int score = (is_far_ok ? 2 : 0) + (is_near ? 1 : 0);
    if (score > best_score) {
      best = s.uuid;
      best_score = score;
      if (score == 3) break;  // nothing can do better
    }
  }
  if (best.empty()) {
    *why = strict ? "No compute resources available that satisfy the strict locality hints"
                  : "No compute resources available";
  }
  return best;
}

// CreateVm's request as read and checked.
struct DataCenter::CreateCheck {
  std::string owner, brand, image, uuid, server;
  bool hvm = false;
  int64_t ram = 1024;
  const Package* pkg = nullptr;  // billing_id's package
  std::vector<Network*> nets;
  int primary = 0;
};

// VMAPI's checks of a create, each failure added to `errors` (field, code,
// message) as VMAPI lists them.
void DataCenter::CheckCreateLocked(const json& body, CreateCheck* c, json* errors) {
  auto missing = [&](const std::string& f) { errors->push_back({{"field", f}, {"code", "Missing"}, {"message", "is missing"}}); };
  auto invalid = [&](const std::string& f, const std::string& m) {
    errors->push_back({{"field", f}, {"code", "Invalid"}, {"message", m}});
  };
  c->owner = body.value("owner_uuid", "");
  if (c->owner.empty()) missing("owner_uuid");
  else if (!IsUuid(c->owner)) invalid("owner_uuid", "Invalid UUID");
  c->brand = body.value("brand", "");
  static const std::set<std::string> kBrands = {"joyent", "joyent-minimal", "lx", "kvm", "bhyve", "builder"};
  if (c->brand.empty()) missing("brand");
  else if (!kBrands.count(c->brand)) invalid("brand", "Must be one of: joyent, joyent-minimal, lx, kvm, bhyve, builder");
  if (!body.contains("networks") || !body["networks"].is_array() || body["networks"].empty()) missing("networks");
  if (!body.contains("ram") && !body.contains("billing_id")) missing("ram");
  c->hvm = c->brand == "kvm" || c->brand == "bhyve";
  if (c->hvm) {
    if (body.contains("disks") && body["disks"].is_array() && !body["disks"].empty()) {
      c->image = body["disks"][0].value("image_uuid", "");
    }
    if (c->image.empty()) missing("disks.0.image_uuid");
  } else {
    c->image = body.value("image_uuid", "");
    if (c->image.empty()) missing("image_uuid");
  }
  if (body.contains("ram")) {
    if (!body["ram"].is_number_integer() || body["ram"].get<int64_t>() <= 0) invalid("ram", "Must be a positive integer");
    else c->ram = body["ram"].get<int64_t>();
  }
  c->uuid = body.value("uuid", "");
  if (!c->uuid.empty() && !IsUuid(c->uuid)) invalid("uuid", "Invalid UUID");
  if (!c->image.empty()) {
    auto im = images_.find(c->image);
    if (im == images_.end() || im->second.state != "active") {
      invalid(c->hvm ? "disks.0.image_uuid" : "image_uuid", "Image does not exist or is not active");
    }
  }
  if (!c->uuid.empty() && vms_.count(c->uuid)) {
    errors->push_back({{"field", "uuid"}, {"code", "Duplicate"}, {"message", "Already exists"}});
  }
  c->server = body.value("server_uuid", "");
  if (!c->server.empty() && servers_.find(c->server) == servers_.end()) invalid("server_uuid", "Server does not exist");
  // billing_id: a PAPI package, whose values fill in what the body leaves out.
  std::string billing = body.value("billing_id", "");
  if (!billing.empty()) {
    auto p = packages_.find(billing);
    if (!IsUuid(billing)) invalid("billing_id", "Invalid UUID");
    else if (p == packages_.end()) invalid("billing_id", "Package " + billing + " does not exist");
    else if (!p->second.active) invalid("billing_id", "Package " + p->second.name + " is not active");
    else c->pkg = &p->second;
  }
  if (c->pkg != nullptr && !body.contains("ram")) c->ram = c->pkg->max_physical_memory;
  // networks: uuids or names of networks or pools, as strings or
  // {"uuid"|"ipv4_uuid"|"name", "primary"}; each needs a free address.
  if (!body.contains("networks") || !body["networks"].is_array()) return;
  for (const auto& n : body["networks"]) {
    std::string ref = n.is_string() ? n.get<std::string>()
                      : n.is_object() ? n.value("uuid", n.value("ipv4_uuid", n.value("name", "")))
                                      : "";
    std::string why;
    Network* net = ref.empty() ? nullptr : FindNetworkLocked(ref, c->owner, &why);
    if (net == nullptr) {
      invalid("networks", ref.empty() ? "each network needs a uuid or name" : why);
      continue;
    }
    if (net->full()) invalid("networks", "network " + net->name + " has no free addresses");
    if (n.is_object() && n.value("primary", false)) c->primary = static_cast<int>(c->nets.size());
    c->nets.push_back(net);
  }
}

// The VM's size: the body's values, else the package's (quota: MiB there,
// GiB here), else VMAPI's defaults.
void DataCenter::SizeVm(const json& body, const CreateCheck& c, Vm* vm) {
  const Package* pkg = c.pkg;
  vm->ram = c.ram;
  vm->max_physical_memory = c.ram;
  auto from = [&](const char* key, int64_t pkg_value, int64_t dflt) -> int64_t {
    if (body.contains(key) && body[key].is_number_integer()) return body[key].get<int64_t>();
    return pkg != nullptr ? pkg_value : dflt;
  };
  vm->quota = from("quota", pkg ? pkg->quota / 1024 : 0, 10);
  vm->cpu_cap = from("cpu_cap", pkg ? pkg->cpu_cap : 0, 100);
  vm->max_swap = from("max_swap", pkg ? pkg->max_swap : 0, 2 * c.ram);
  vm->max_lwps = from("max_lwps", pkg ? pkg->max_lwps : 0, 2000);
  vm->zfs_io_priority = from("zfs_io_priority", pkg ? pkg->zfs_io_priority : 0, 100);
  vm->cpu_shares = from("cpu_shares", pkg ? pkg->fss : 0, 100);
  vm->vcpus = c.hvm ? from("vcpus", pkg ? pkg->vcpus : 0, 1) : 0;
}

// One NIC per network, each with the next address of its network;
// tritonsim's listeners answer for a.b.c.d on the loopback twin 127.b.c.d.
void DataCenter::AttachNicsLocked(const CreateCheck& c, Vm* vm) {
  for (size_t idx = 0; idx < c.nets.size(); ++idx) {
    Nic nic;
    nic.interface = "net" + std::to_string(idx);
    nic.mac = NewMacLocked();
    AllocateLocked(c.nets[idx], &nic);
    nic.primary = static_cast<int>(idx) == c.primary;
    vm->nics.push_back(nic);
  }
}

Reply DataCenter::CreateVm(const json& body, const Params& q) {
  Reply r;
  if (!CheckParams(q, {"sync", "origin", "creator_uuid", "context"}, false, 409, &r)) return r;
  if (!body.is_object()) return Validation(409, "body", "Invalid", "body must be a JSON object");
  absl::MutexLock l(&mu_);
  CreateCheck c;
  json errors = json::array();
  CheckCreateLocked(body, &c, &errors);
  if (!errors.empty()) {
    Reply e = Error(409, "ValidationFailed", "Invalid VM parameters");
    e.body["errors"] = errors;
    return e;
  }
  Vm vm;
  vm.uuid = c.uuid.empty() ? NewUuidLocked() : c.uuid;
  vm.alias = body.value("alias", "");
  vm.owner_uuid = c.owner;
  vm.billing_id = body.value("billing_id", "");
  vm.brand = c.brand;
  vm.image_uuid = c.hvm ? "" : c.image;
  if (!c.hvm) {
    auto im = images_.find(c.image);
    if (im != images_.end()) vm.root_files = im->second.root_files;  // an image made from a prototype
  }
  if (c.hvm) vm.disks = body["disks"];
  SizeVm(body, c, &vm);
  vm.create_ms = vm.modified_ms = NowMs();
  vm.state = "provisioning";
  vm.zone_state = "installed";
  for (auto [key, field] : {std::pair{"tags", &vm.tags}, {"customer_metadata", &vm.customer_metadata},
                            {"internal_metadata", &vm.internal_metadata}}) {
    if (body.contains(key) && body[key].is_object()) *field = body[key];
  }
  vm.docker = body.contains("docker") && body["docker"].is_boolean() && body["docker"].get<bool>();
  vm.autoboot = body.value("autoboot", true);
  if (body.contains("delegate_dataset") && body["delegate_dataset"].is_boolean() && body["delegate_dataset"].get<bool>()) {
    if (c.hvm) return Validation(409, "delegate_dataset", "Invalid", "a " + c.brand + " VM cannot have a delegate dataset");
    vm.datasets = {"zones/" + vm.uuid + "/data"};
  }
  vm.firewall_enabled = body.value("firewall_enabled", false);
  if (body.contains("volumes")) {
    if (std::string bad = CheckMountsLocked(body["volumes"], vm.owner_uuid); !bad.empty()) {
      return Validation(409, "volumes", "Invalid", bad);
    }
    vm.volumes = body["volumes"];
  }
  AttachNicsLocked(c, &vm);
  std::string why;
  std::string placed = c.server.empty() ? PlaceLocked(c.ram, body.value("locality", json()), &why) : c.server;
  if (!placed.empty()) {
    vm.server_uuid = placed;
    AddUsedRamLocked(&servers_[placed], c.ram);
    servers_[placed].vms.insert(vm.uuid);
  }
  std::string id = vm.uuid;
  TagIndexAddLocked(vm);
  vms_[id] = vm;
  FeedLocked(&vms_[id]);
  return StartJobLocked("provision-8.0.0", "provision", id, body, [this, id, why]() -> std::string {
    Vm& v = vms_[id];
    if (v.state != "provisioning") return "VM was deleted while provisioning";
    if (v.server_uuid.empty()) {
      v.state = "failed";
      Touch(&v);
      return why;
    }
    v.state = v.autoboot ? "running" : "stopped";
    v.zone_state = v.autoboot ? "running" : "installed";
    Touch(&v);
    ScheduleExitLocked(v);
    return "";
  });
}

// The simulator's stand-in for the process a job runs: customer_metadata
// `tritonsim:run-for` (a duration: "2s", "500ms") makes the VM's process
// exit that long after it starts, with `tritonsim:exit-status` (default 0).
void DataCenter::ScheduleExitLocked(const Vm& v) {
  if (v.state != "running" || !v.customer_metadata.contains("tritonsim:run-for")) return;
  const json& run_for = v.customer_metadata["tritonsim:run-for"];
  absl::Duration d;
  if (!run_for.is_string() || !absl::ParseDuration(run_for.get<std::string>(), &d)) return;
  int status = 0;
  if (v.customer_metadata.contains("tritonsim:exit-status")) {
    const json& st = v.customer_metadata["tritonsim:exit-status"];
    if (st.is_string()) (void)absl::SimpleAtoi(st.get<std::string>(), &status);
    else if (st.is_number_integer()) status = st.get<int>();
  }
  std::string id = v.uuid;
  ScheduleLocked(absl::ToInt64Milliseconds(d), [this, id, status] {
    auto it = vms_.find(id);
    if (it != vms_.end() && it->second.state == "running") ExitLocked(&it->second, status);
  });
}

// vmadm update's effect: sizes, alias, billing_id, firewall_enabled; set_*
// merges metadata, remove_* deletes keys.
void DataCenter::UpdateLocked(Vm* vm, const json& changes) {
  Vm& v = *vm;
  if (changes.contains("ram") && changes["ram"].is_number_integer()) {
    int64_t delta = changes["ram"].get<int64_t>() - v.ram;
    v.ram = changes["ram"].get<int64_t>();
    v.max_physical_memory = v.ram;
    auto s = servers_.find(v.server_uuid);
    if (s != servers_.end()) AddUsedRamLocked(&s->second, delta);
  }
  if (changes.contains("alias") && changes["alias"].is_string()) v.alias = changes["alias"];
  if (changes.contains("quota") && changes["quota"].is_number()) v.quota = changes["quota"];
  if (changes.contains("cpu_cap") && changes["cpu_cap"].is_number()) v.cpu_cap = changes["cpu_cap"];
  for (auto [key, field] : {std::pair<const char*, int64_t*>{"max_swap", &v.max_swap},
                            {"max_lwps", &v.max_lwps}, {"zfs_io_priority", &v.zfs_io_priority}}) {
    if (changes.contains(key) && changes[key].is_number_integer()) *field = changes[key].get<int64_t>();
  }
  if (changes.contains("billing_id") && changes["billing_id"].is_string()) v.billing_id = changes["billing_id"];
  if (changes.contains("firewall_enabled") && changes["firewall_enabled"].is_boolean()) {
    v.firewall_enabled = changes["firewall_enabled"];
  }
  for (auto [set, remove, target] : {std::make_tuple("customer_metadata", "remove_customer_metadata", &v.customer_metadata),
                                     std::make_tuple("internal_metadata", "remove_internal_metadata", &v.internal_metadata)}) {
    if (changes.contains(set) && changes[set].is_object()) target->update(changes[set]);
    if (changes.contains(remove) && changes[remove].is_array()) {
      for (const json& k : changes[remove]) {
        if (k.is_string()) target->erase(k.get<std::string>());
      }
    }
  }
  Touch(&v);
}

// reprovision: the zone is halted and its root rewritten from the image
// while the job runs (VMAPI shows it provisioning); uuid, NICs and the
// delegate dataset stay; it boots from the new image.
Reply DataCenter::ReprovisionLocked(Vm* vm, const json& body) {
  std::string image = body.value("image_uuid", "");
  if (image.empty()) return Validation(409, "image_uuid", "Missing", "is missing");
  auto im = images_.find(image);
  if (im == images_.end() || im->second.state != "active") {
    return Validation(409, "image_uuid", "Invalid", "Image does not exist or is not active");
  }
  if (vm->brand == "kvm" || vm->brand == "bhyve") {
    return Error(409, "BrandNotSupported", "Cannot reprovision a " + vm->brand + " VM");
  }
  vm->state = "provisioning";
  vm->zone_state = "installed";
  Touch(vm);
  std::string id = vm->uuid;
  return StartJobLocked("reprovision-7.0.0", "reprovision", id, body, [this, id, image]() -> std::string {
    Vm& v = vms_[id];
    if (v.state == "destroyed") return "VM was deleted while reprovisioning";
    v.image_uuid = image;
    auto im = images_.find(image);
    v.root_files = im != images_.end() ? im->second.root_files : std::map<std::string, std::string>{};
    v.reprovisions++;
    v.state = "running";
    v.zone_state = "running";
    Touch(&v);
    return "";
  });
}

Reply DataCenter::VmAction(const std::string& uuid, const Params& q, const json& body) {
  Reply r;
  // Besides the action, VMAPI takes the caller's context (sdc-clients sends these).
  if (!CheckParams(q, {"action", "idempotent", "sync", "image_uuid", "owner_uuid", "origin", "creator_uuid", "timeout",
                       "context"},
                   false, 409, &r)) {
    return r;
  }
  const std::string* action = Get(q, "action");
  if (!action) return Validation(409, "action", "Missing", "action is required");
  bool idempotent = Get(q, "idempotent") && *Get(q, "idempotent") == "true";
  absl::MutexLock l(&mu_);
  auto it = FindVmLocked(uuid, q);
  if (it == vms_.end()) return Error(404, "ResourceNotFound", "VM not found");
  Vm& vm = it->second;
  std::string state = EffectiveStateLocked(vm);
  if (state == "provisioning") return Error(409, "UnallocatedVM", "Cannot " + *action + " a VM that is still provisioning");
  if (state == "destroyed") return Error(409, "VmNotRunning", "VM is destroyed");
  std::string id = uuid;
  auto set_state = [this, id](const std::string& s) {
    return [this, id, s]() -> std::string {
      Vm& v = vms_[id];
      v.state = s;
      v.zone_state = s == "running" ? "running" : "installed";
      Touch(&v);
      return "";
    };
  };
  if (*action == "start") {
    if (state == "running" && !idempotent) return Error(409, "VmNotStopped", "VM is already running");
    return StartJobLocked("start-7.0.0", "start", uuid, body, set_state("running"));
  }
  if (*action == "stop" || *action == "kill") {
    if (state != "running" && !idempotent) return Error(409, "VmNotRunning", "VM is not running");
    json params = body.is_object() ? body : json::object();
    // stop's `timeout`: seconds the guest gets to shut down (vmadm stop -t).
    if (const std::string* t = Get(q, "timeout"); t && *action == "stop") {
      int64_t seconds = 0;
      if (!absl::SimpleAtoi(*t, &seconds) || seconds < 1) {
        return Validation(409, "timeout", "Invalid", "timeout must be a positive number of seconds");
      }
      params["timeout"] = seconds;
    }
    return StartJobLocked(*action + "-7.0.0", *action, uuid, params, set_state("stopped"));
  }
  if (*action == "reboot") {
    if (state != "running") return Error(409, "VmNotRunning", "VM is not running");
    return StartJobLocked("reboot-7.0.0", "reboot", uuid, body, set_state("running"));
  }
  if (*action == "reprovision") return ReprovisionLocked(&vm, body);
  if (*action == "update") {
    json changes = body;
    return StartJobLocked("update-7.0.0", "update", uuid, body, [this, id, changes]() -> std::string {
      UpdateLocked(&vms_[id], changes);
      return "";
    });
  }
  return Validation(409, "action", "Invalid", "unknown action " + *action);
}

Reply DataCenter::DeleteVm(const std::string& uuid, const Params& q) {
  Reply r;
  if (!CheckParams(q, {"sync", "owner_uuid", "origin", "creator_uuid", "context"}, false, 409, &r)) return r;
  absl::MutexLock l(&mu_);
  auto it = FindVmLocked(uuid, q);
  if (it == vms_.end()) return Error(404, "ResourceNotFound", "VM not found");
  std::string id = uuid;
  return StartJobLocked("destroy-8.0.0", "destroy", uuid, json::object(), [this, id]() -> std::string {
    Vm& v = vms_[id];
    if (v.state == "destroyed") return "";
    auto s = servers_.find(v.server_uuid);
    if (s != servers_.end() && s->second.vms.erase(id)) AddUsedRamLocked(&s->second, -v.ram);
    // Deleting a provisioning VM leaves it failed, as VMAPI does.
    v.state = v.state == "provisioning" ? "failed" : "destroyed";
    v.zone_state = v.state == "destroyed" ? "destroyed" : "installed";
    Touch(&v);
    return "";
  });
}

Reply DataCenter::VmTags(const std::string& method, const std::string& uuid, const std::string& key,
                         const Params& q, const json& body) {
  Reply r;
  if (!CheckParams(q, {"owner_uuid", "sync", "origin", "creator_uuid", "context"}, false, 409, &r)) return r;
  absl::MutexLock l(&mu_);
  auto it = FindVmLocked(uuid, q);
  if (it == vms_.end()) return Error(404, "ResourceNotFound", "VM not found");
  Vm& vm = it->second;
  if (method == "GET") {
    if (key.empty()) {
      r.body = vm.tags;
    } else {
      auto t = vm.tags.find(key);
      if (t == vm.tags.end()) return Error(404, "ResourceNotFound", "Tag " + key + " not found");
      r.body = *t;
    }
    return r;
  }
  if ((method == "POST" || method == "PUT") && !body.is_object()) {
    return Validation(409, "tags", "Invalid", "body must be a JSON object of tags");
  }
  if (method == "DELETE" && !key.empty() && !vm.tags.contains(key)) {
    return Error(404, "ResourceNotFound", "Tag " + key + " not found");
  }
  std::string id = uuid;
  json change = body;
  return StartJobLocked("update-7.0.0", "update", uuid, json::object(), [this, id, method, key, change]() -> std::string {
    Vm& v = vms_[id];
    TagIndexRemoveLocked(v);
    if (method == "POST") v.tags.update(change);
    else if (method == "PUT") v.tags = change;
    else if (key.empty()) v.tags = json::object();
    else v.tags.erase(key);
    TagIndexAddLocked(v);
    Touch(&v);
    return "";
  });
}

Reply DataCenter::Ping() {
  Reply r;
  r.body = {{"pingErrors", json::object()}, {"pid", static_cast<int>(getpid())}, {"status", "OK"},
            {"healthy", true}, {"backend", "tritonsim"}};
  return r;
}

}  // namespace tritonsim
