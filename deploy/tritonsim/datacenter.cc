#include "deploy/tritonsim/datacenter.h"

#include <algorithm>
#include <optional>
#include <chrono>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/numbers.h"

namespace tritonsim {
namespace {


std::string Iso(int64_t ms) {
  time_t secs = ms / 1000;
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[40];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

const std::string* Get(const Params& q, const std::string& key) {
  auto it = q.find(key);
  return it == q.end() ? nullptr : &it->second;
}

bool IsUuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < 36; ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  long long v = strtoll(s.c_str(), &end, 10);
  if (*end != '\0') return false;
  *out = v;
  return true;
}

// "2026-11-22T12:00:00.123Z" -> ms since the epoch; 0 when unreadable.
int64_t ParseIsoMs(const std::string& s) {
  struct tm tm {};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return 0;
  int64_t ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  if (*rest == '.') ms += atoi(rest + 1);
  return ms;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t p = s.find(sep, start);
    if (p == std::string::npos) p = s.size();
    if (p > start) out.push_back(s.substr(start, p - start));
    start = p + 1;
  }
  return out;
}

Reply Validation(int status, const std::string& field, const std::string& code, const std::string& message) {
  Reply r = DataCenter::Error(status, status == 422 ? "InvalidParameter" : "ValidationFailed",
                              "Invalid Parameters");
  r.body["errors"] = json::array({{{"field", field}, {"code", code}, {"message", message}}});
  return r;
}

// Unknown query parameters are rejected (VMAPI and CNAPI: 409; IMGAPI: 422).
bool CheckParams(const Params& q, const std::set<std::string>& allowed, bool tags, int status, Reply* r) {
  for (const auto& kv : q) {
    if (allowed.count(kv.first)) continue;
    if (tags && kv.first.rfind("tag.", 0) == 0 && kv.first.size() > 4) continue;
    *r = Validation(status, kv.first, "Invalid", "unsupported parameter");
    return false;
  }
  return true;
}

// Scalar view of a VM field for filters, predicates, sorting and markers.
json Field(const json& vm, const std::string& name) {
  if (name.rfind("tags.", 0) == 0) {
    auto it = vm["tags"].find(name.substr(5));
    return it == vm["tags"].end() ? json() : *it;
  }
  auto it = vm.find(name);
  return it == vm.end() ? json() : *it;
}

bool Compare(const json& a, const json& b, int* out) {
  if (a.is_number() && b.is_number()) {
    double x = a.get<double>(), y = b.get<double>();
    *out = x < y ? -1 : x > y ? 1 : 0;
    return true;
  }
  std::string x = a.is_string() ? a.get<std::string>() : a.dump();
  std::string y = b.is_string() ? b.get<std::string>() : b.dump();
  *out = x.compare(y) < 0 ? -1 : x.compare(y) > 0 ? 1 : 0;
  return true;
}

// VMAPI predicates: {"eq": [field, value]}, ne, le, ge, and, or.
bool EvalPredicate(const json& p, const json& vm, std::string* err) {
  if (!p.is_object() || p.size() != 1) {
    *err = "predicate must be an object with one operator";
    return false;
  }
  const std::string& op = p.begin().key();
  const json& arg = p.begin().value();
  if (op == "and" || op == "or") {
    if (!arg.is_array()) {
      *err = op + " takes an array";
      return false;
    }
    bool acc = op == "and";
    for (const auto& sub : arg) {
      bool v = EvalPredicate(sub, vm, err);
      if (!err->empty()) return false;
      acc = op == "and" ? acc && v : acc || v;
    }
    return acc;
  }
  if (op != "eq" && op != "ne" && op != "le" && op != "ge") {
    *err = "unknown predicate operator " + op;
    return false;
  }
  if (!arg.is_array() || arg.size() != 2 || !arg[0].is_string()) {
    *err = op + " takes [field, value]";
    return false;
  }
  json have = Field(vm, arg[0].get<std::string>());
  if (have.is_null()) return op == "ne";
  auto match_one = [&](const json& want) {
    int c = 0;
    if (want.is_string() && have.is_string()) {
      std::string w = want.get<std::string>();
      if (op == "eq" && w.find('*') != std::string::npos) {
        std::string prefix = w.substr(0, w.find('*'));
        return have.get<std::string>().rfind(prefix, 0) == 0;
      }
    }
    Compare(have, want, &c);
    if (op == "eq") return c == 0;
    if (op == "ne") return c != 0;
    if (op == "le") return c <= 0;
    return c >= 0;
  };
  if (have.is_array()) {  // e.g. nics: match any element
    for (const auto& e : have) {
      json saved = have;
      have = e;
      if (match_one(arg[1])) return true;
      have = saved;
    }
    return false;
  }
  return match_one(arg[1]);
}

}  // namespace

Reply DataCenter::Error(int status, const std::string& code, const std::string& message) {
  Reply r;
  r.status = status;
  r.body = {{"code", code}, {"message", message}};
  return r;
}

DataCenter::DataCenter(Options opts) : opts_(std::move(opts)), rng_(opts_.seed) {
  for (int i = 0; i < opts_.servers; ++i) {
    Server s;
    s.uuid = NewUuidLocked();
    s.hostname = i == 0 ? "headnode" : "cn" + std::to_string(i);
    s.headnode = i == 0;
    s.ram = opts_.server_ram_mb;
    s.boot_ms = NowMs();
    s.agents = {{"cn-agent", "2.13.0", "", NewUuidLocked()}, {"vm-agent", "1.8.0", "", NewUuidLocked()}};
    servers_[s.uuid] = s;
  }
  IndexServersLocked();
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
  for (const auto& kv : servers_) by_free_.insert({FreeRam(kv.second), kv.first});
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
  if (!seed.is_object()) return "seed must be a JSON object with servers and/or images";
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
      im.published_ms = NowMs();
      if (im.name.empty() || !IsUuid(im.uuid)) return "every image needs a uuid and a name";
      // Remote images are what import-remote can fetch; they are not local yet.
      if (std::string(key) == "remote_images") {
        im.state = "remote";
      }
      images_[im.uuid] = im;
    }
  }
  return "";
}

// ---------------------------------------------------------------- jobs

int64_t DataCenter::LatencyLocked() {
  double base = opts_.job_latency_ms;
  if (base <= 0) return 0;
  std::uniform_real_distribution<double> d(-opts_.job_jitter, opts_.job_jitter);
  return static_cast<int64_t>(std::max(0.0, base * (1 + d(rng_))));
}

void DataCenter::ScheduleLocked(int64_t delay_ms, std::function<void()> fire) {
  events_.push(Event{NowMs() + delay_ms, event_seq_++, std::move(fire)});
}

void DataCenter::Loop() {
  absl::MutexLock l(&mu_);
  while (!stop_) {
    // Until the first event is due, or one is added, or stop.
    size_t queued = events_.size();
    int64_t first = events_.empty() ? -1 : events_.top().due_ms;
    auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop_ || events_.size() != queued || (!events_.empty() && events_.top().due_ms != first);
    };
    if (events_.empty()) {
      opts_.clock->AwaitUntil(&mu_, absl::Condition(&changed), absl::InfiniteFuture());
      continue;
    }
    if (events_.top().due_ms > NowMs()) {
      opts_.clock->AwaitUntil(&mu_, absl::Condition(&changed), absl::FromUnixMillis(events_.top().due_ms));
      continue;
    }
    Event e = events_.top();
    events_.pop();
    e.fire();
  }
}

Reply DataCenter::StartJobLocked(const std::string& name, const std::string& task, const std::string& vm_uuid,
                                 const json& params, std::function<std::string()> effect, int status) {
  Job j;
  j.uuid = NewUuidLocked();
  j.name = name;
  j.task = task;
  j.vm_uuid = vm_uuid;
  // Keep only the scalar parameters: a copy of every create body would make
  // 100,000 jobs cost more memory than their VMs.
  if (params.is_object()) {
    for (auto it = params.begin(); it != params.end(); ++it) {
      if (it.value().is_primitive()) j.params[it.key()] = it.value();
    }
  }
  j.params["task"] = task;
  if (!vm_uuid.empty()) j.params["vm_uuid"] = vm_uuid;
  j.created_ms = NowMs();
  std::string id = j.uuid;
  jobs_[id] = j;
  int64_t latency = LatencyLocked();
  bool fail = std::uniform_real_distribution<double>(0, 1)(rng_) < opts_.job_failure_rate;
  ScheduleLocked(latency / 2, [this, id] {
    Job& job = jobs_[id];
    if (job.execution == "queued") {
      job.execution = "running";
      job.started_ms = NowMs();
    }
  });
  ScheduleLocked(latency, [this, id, fail, effect] {
    Job& job = jobs_[id];
    if (job.started_ms == 0) job.started_ms = NowMs();
    std::string err = fail ? "simulated job failure" : effect();
    if (fail && job.task == "provision") {
      // A failed provision leaves a failed VM and frees its server's RAM.
      auto it = vms_.find(job.vm_uuid);
      if (it != vms_.end() && it->second.state == "provisioning") {
        it->second.state = "failed";
        Touch(&it->second);
        it->second.zone_state = "installed";
        auto sv = servers_.find(it->second.server_uuid);
        if (sv != servers_.end()) {
          AddUsedRamLocked(&sv->second, -it->second.ram);
          sv->second.vms.erase(job.vm_uuid);
        }
      }
    }
    job.finished_ms = NowMs();
    job.execution = err.empty() ? "succeeded" : "failed";
    job.error = err;
  });
  Reply r;
  r.status = status;
  r.body = {{"job_uuid", id}};
  if (!vm_uuid.empty()) r.body["vm_uuid"] = vm_uuid;
  r.headers["workflow-api"] = opts_.base_url;
  return r;
}

json DataCenter::ChainResults(const Job& j) const {
  json out = json::array();
  for (const auto& step : j.steps) {
    out.push_back({{"name", step.first}, {"result", step.second}, {"error", ""},
                   {"started_at", Iso(j.started_ms)}, {"finished_at", Iso(j.started_ms)}});
  }
  if (j.finished_ms != 0) {
    json result = {{"name", j.name + ".final"}, {"result", j.error.empty() ? "OK" : ""},
                   {"started_at", Iso(j.started_ms)}, {"finished_at", Iso(j.finished_ms)}};
    result["error"] = j.error.empty() ? json("") : json({{"message", j.error}});
    out.push_back(result);
  }
  return out;
}

json DataCenter::JobJson(const Job& j) const {
  return {{"name", j.name},
          {"uuid", j.uuid},
          {"execution", j.execution},
          {"params", j.params},
          {"created_at", Iso(j.created_ms)},
          {"started", j.started_ms ? json(j.started_ms) : json()},
          {"elapsed", j.finished_ms ? json((j.finished_ms - j.started_ms) / 1000.0) : json()},
          {"timeout", 3600},
          {"chain_results", ChainResults(j)}};
}

Reply DataCenter::GetJob(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  auto it = jobs_.find(uuid);
  if (it == jobs_.end()) return Error(404, "ResourceNotFound", "Job not found");
  Reply r;
  r.body = JobJson(it->second);
  return r;
}

Reply DataCenter::WaitJob(const std::string& uuid, const Params& q) {
  int64_t timeout_s = 60;
  if (const std::string* t = Get(q, "timeout")) ParseInt(*t, &timeout_s);
  absl::MutexLock l(&mu_);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = jobs_.find(uuid);
    return it == jobs_.end() || it->second.execution == "succeeded" || it->second.execution == "failed" ||
           it->second.execution == "canceled";
  };
  opts_.clock->AwaitUntil(&mu_, absl::Condition(&done), opts_.clock->Now() + absl::Seconds(timeout_s));
  auto it = jobs_.find(uuid);
  if (it == jobs_.end()) return Error(404, "ResourceNotFound", "Job not found");
  Reply r;
  r.body = JobJson(it->second);
  return r;
}

Reply DataCenter::ListJobs(const Params& q) {
  Reply r;
  if (!CheckParams(q, {"vm_uuid", "execution", "task", "limit", "offset"}, false, 409, &r)) return r;
  absl::MutexLock l(&mu_);
  std::vector<const Job*> out;
  for (const auto& kv : jobs_) {
    const Job& j = kv.second;
    if (const std::string* v = Get(q, "vm_uuid"); v && j.vm_uuid != *v) continue;
    if (const std::string* v = Get(q, "execution"); v && j.execution != *v) continue;
    if (const std::string* v = Get(q, "task"); v && j.task != *v) continue;
    out.push_back(&j);
  }
  std::sort(out.begin(), out.end(), [](const Job* a, const Job* b) {
    return a->created_ms != b->created_ms ? a->created_ms > b->created_ms : a->uuid > b->uuid;
  });
  int64_t limit = 1000, offset = 0;
  if (const std::string* v = Get(q, "limit")) ParseInt(*v, &limit);
  if (const std::string* v = Get(q, "offset")) ParseInt(*v, &offset);
  r.body = json::array();
  for (size_t i = offset; i < out.size() && static_cast<int64_t>(r.body.size()) < limit; ++i) {
    r.body.push_back(JobJson(*out[i]));
  }
  return r;
}

// ---------------------------------------------------------------- VMAPI

std::string DataCenter::EffectiveStateLocked(const Vm& vm) const {
  if (vm.state == "running" || vm.state == "stopped") {
    auto s = servers_.find(vm.server_uuid);
    if (s != servers_.end() && s->second.status != "running") return "unknown";
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
  Key("ram", out);
  *out += std::to_string(vm.ram);
  Key("max_physical_memory", out);
  *out += std::to_string(vm.max_physical_memory);
  Key("quota", out);
  *out += std::to_string(vm.quota);
  Key("cpu_cap", out);
  *out += std::to_string(vm.cpu_cap);
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
  Key("nics", out);
  out->push_back('[');
  for (size_t i = 0; i < vm.nics.size(); ++i) {
    const Nic& n = vm.nics[i];
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
  Key("resolvers", out);
  *out += "[\"8.8.8.8\"]";
  Key("snapshots", out);
  *out += "[]";
  Key("autoboot", out);
  *out += vm.autoboot ? "true" : "false";
  Key("firewall_enabled", out);
  *out += vm.firewall_enabled ? "true" : "false";
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

Reply DataCenter::ListVms(const Params& q, bool head) {
  Reply r;
  static const std::set<std::string> kAllowed = {"alias", "billing_id", "brand", "image_uuid", "owner_uuid",
                                                 "server_uuid", "uuid", "uuids", "ram", "state", "predicate",
                                                 "fields", "limit", "offset", "marker", "sort", "create_timestamp"};
  if (!CheckParams(q, kAllowed, true, 409, &r)) return r;
  int64_t limit = 1000, offset = 0;
  if (const std::string* v = Get(q, "limit")) {
    if (!ParseInt(*v, &limit) || limit < 1 || limit > 1000) return Validation(409, "limit", "Invalid", "must be 1..1000");
  }
  if (const std::string* v = Get(q, "offset")) {
    if (!ParseInt(*v, &offset) || offset < 0) return Validation(409, "offset", "Invalid", "must be >= 0");
  }
  json marker;
  if (const std::string* v = Get(q, "marker")) {
    if (Get(q, "offset")) return Validation(409, "marker", "ConflictingParameters", "offset and marker cannot be used together");
    marker = json::parse(*v, nullptr, false);
    if (!marker.is_object() || !marker.contains("uuid")) {
      return Validation(409, "marker", "Invalid", "marker must be a JSON object with uuid and the sort fields");
    }
  }
  std::string sort_field = "create_timestamp";
  bool asc = false;
  if (const std::string* v = Get(q, "sort")) {
    std::string s = *v;
    size_t dot = s.rfind('.');
    if (dot != std::string::npos && (s.substr(dot + 1) == "ASC" || s.substr(dot + 1) == "DESC")) {
      asc = s.substr(dot + 1) == "ASC";
      s = s.substr(0, dot);
    }
    static const std::set<std::string> kSortable = {"uuid", "alias", "brand", "create_timestamp", "ram", "state",
                                                    "owner_uuid", "server_uuid", "image_uuid", "billing_id"};
    if (!kSortable.count(s)) return Validation(409, "sort", "Invalid", "cannot sort by " + s);
    sort_field = s;
  }
  if (const std::string* v = Get(q, "state")) {
    static const std::set<std::string> kStates = {"running", "stopped", "active", "destroyed", "provisioning",
                                                  "failed", "incomplete", "unknown"};
    if (!kStates.count(*v)) return Validation(409, "state", "Invalid", "unknown state " + *v);
  }
  json predicate;
  if (const std::string* v = Get(q, "predicate")) {
    predicate = json::parse(*v, nullptr, false);
    if (predicate.is_discarded()) return Validation(409, "predicate", "Invalid", "predicate is not valid JSON");
  }
  std::set<std::string> uuids_filter;
  if (const std::string* v = Get(q, "uuids")) {
    for (const auto& u : Split(*v, ',')) uuids_filter.insert(u);
  }
  std::vector<std::string> fields;
  if (const std::string* v = Get(q, "fields")) fields = Split(*v, ',');

  absl::MutexLock l(&mu_);
  // Candidates: the smallest tag index set, else every VM.
  const std::set<std::string>* best = nullptr;
  std::set<std::string> any_value;
  bool tag_empty = false;
  for (const auto& kv : q) {
    if (kv.first.rfind("tag.", 0) != 0) continue;
    auto k = tag_index_.find(kv.first.substr(4));
    if (k == tag_index_.end()) {
      tag_empty = true;
      break;
    }
    if (kv.second == "*") {
      if (best == nullptr) {
        for (const auto& vs : k->second) any_value.insert(vs.second.begin(), vs.second.end());
        best = &any_value;
      }
      continue;
    }
    auto vs = k->second.find(kv.second);
    if (vs == k->second.end()) {
      tag_empty = true;
      break;
    }
    if (best == nullptr || vs->second.size() < best->size()) best = &vs->second;
  }
  // Filter and sort on the VM records; JSON is built only for a predicate
  // and for the page that is returned.
  struct Match {
    const Vm* vm;
    int64_t num;       // numeric sort key (create_timestamp, ram)
    std::string str;   // string sort key (everything else)
  };
  bool numeric = sort_field == "create_timestamp" || sort_field == "ram";
  std::vector<Match> matches;
  auto consider = [&](const Vm& vm) {
    std::string state = EffectiveStateLocked(vm);
    if (const std::string* v = Get(q, "state")) {
      if (*v == "active") {
        if (state == "destroyed" || state == "failed") return;
      } else if (state != *v) {
        return;
      }
    }
    if (const std::string* v = Get(q, "alias"); v && vm.alias.rfind(*v, 0) != 0) return;
    if (const std::string* v = Get(q, "billing_id"); v && vm.billing_id != *v) return;
    if (const std::string* v = Get(q, "brand"); v && vm.brand != *v) return;
    if (const std::string* v = Get(q, "image_uuid"); v && vm.image_uuid != *v) return;
    if (const std::string* v = Get(q, "owner_uuid"); v && vm.owner_uuid != *v) return;
    if (const std::string* v = Get(q, "server_uuid"); v && vm.server_uuid != *v) return;
    if (const std::string* v = Get(q, "uuid"); v && vm.uuid != *v) return;
    if (const std::string* v = Get(q, "ram"); v && std::to_string(vm.ram) != *v) return;
    if (!uuids_filter.empty() && !uuids_filter.count(vm.uuid)) return;
    for (const auto& kv : q) {
      if (kv.first.rfind("tag.", 0) != 0) continue;
      auto t = vm.tags.find(kv.first.substr(4));
      if (t == vm.tags.end()) return;
      std::string tv = t->is_string() ? t->get<std::string>() : t->dump();
      if (kv.second != "*" && tv != kv.second) return;
    }
    if (!predicate.is_null()) {
      std::string err;
      bool ok = EvalPredicate(predicate, VmJson(vm), &err);
      if (!err.empty()) throw std::runtime_error(err);
      if (!ok) return;
    }
    Match m{&vm, 0, ""};
    if (sort_field == "create_timestamp") m.num = vm.create_ms;
    else if (sort_field == "ram") m.num = vm.ram;
    else if (sort_field == "uuid") m.str = vm.uuid;
    else if (sort_field == "alias") m.str = vm.alias;
    else if (sort_field == "brand") m.str = vm.brand;
    else if (sort_field == "state") m.str = state;
    else if (sort_field == "owner_uuid") m.str = vm.owner_uuid;
    else if (sort_field == "server_uuid") m.str = vm.server_uuid;
    else if (sort_field == "image_uuid") m.str = vm.image_uuid;
    else if (sort_field == "billing_id") m.str = vm.billing_id;
    matches.push_back(std::move(m));
  };
  try {
    if (!tag_empty) {
      if (best != nullptr) {
        for (const auto& u : *best) {
          auto it = vms_.find(u);
          if (it != vms_.end()) consider(it->second);
        }
      } else {
        for (const auto& kv : vms_) consider(kv.second);
      }
    }
  } catch (const std::runtime_error& e) {
    return Validation(409, "predicate", "Invalid", e.what());
  }
  // Requested order, then uuid DESC as the tie-breaker.
  auto before = [&](const Match& a, const Match& b) {
    int c = numeric ? (a.num < b.num ? -1 : a.num > b.num) : a.str.compare(b.str);
    if (c == 0) return a.vm->uuid > b.vm->uuid;
    return asc ? c < 0 : c > 0;
  };
  r.headers["x-joyent-resource-count"] = std::to_string(matches.size());
  if (head) {
    r.body = nullptr;
    return r;
  }
  // Only the page is ordered: the rows after the marker (or the first
  // offset + limit) are selected in linear time, then sorted, so paging
  // through N matches costs O(N) per page rather than O(N log N).
  size_t start = offset;
  if (!marker.is_null()) {
    // Exclusive: the rows after the marker in this order. A marker whose VM
    // no longer matches falls where its sort fields would.
    std::string mu = marker["uuid"].is_string() ? marker["uuid"].get<std::string>() : "";
    Vm probe_vm;
    probe_vm.uuid = mu;
    std::optional<Match> probe;
    for (const Match& m : matches) {
      if (m.vm->uuid == mu) {
        probe = m;
        break;
      }
    }
    if (!probe && marker.contains(sort_field)) {
      Match m{&probe_vm, 0, ""};
      const json& mv = marker[sort_field];
      if (numeric) m.num = mv.is_number() ? mv.get<int64_t>() : ParseIsoMs(mv.is_string() ? mv.get<std::string>() : "");
      else m.str = mv.is_string() ? mv.get<std::string>() : mv.dump();
      probe = m;
    }
    if (probe) {
      matches.erase(std::remove_if(matches.begin(), matches.end(), [&](const Match& m) { return !before(*probe, m); }),
                    matches.end());
    } else {
      matches.clear();
    }
    start = 0;
  }
  size_t want = start + static_cast<size_t>(limit);
  if (matches.size() > want) {
    std::nth_element(matches.begin(), matches.begin() + want, matches.end(), before);
    matches.resize(want);
  }
  std::sort(matches.begin(), matches.end(), before);
  if (fields.empty()) {
    // The hot path: the page written as text.
    std::string text = "[";
    for (size_t i = start, n = 0; i < matches.size() && static_cast<int64_t>(n) < limit; ++i, ++n) {
      if (n > 0) text.push_back(',');
      AppendVmJson(*matches[i].vm, &text);
    }
    text.push_back(']');
    r.raw_body = std::move(text);
    r.body = nullptr;
    return r;
  }
  r.body = json::array();
  for (size_t i = start; i < matches.size() && static_cast<int64_t>(r.body.size()) < limit; ++i) {
    json j = VmJson(*matches[i].vm);
    json f = json::object();
    for (const auto& name : fields) {
      if (j.contains(name)) f[name] = j[name];
    }
    r.body.push_back(std::move(f));
  }
  return r;
}

Reply DataCenter::GetVm(const std::string& uuid, const Params& q) {
  Reply r;
  if (!CheckParams(q, {"owner_uuid", "fields", "sync"}, false, 409, &r)) return r;
  absl::MutexLock l(&mu_);
  auto it = vms_.find(uuid);
  if (it == vms_.end()) return Error(404, "ResourceNotFound", "VM not found");
  if (const std::string* o = Get(q, "owner_uuid"); o && it->second.owner_uuid != *o) {
    return Error(404, "ResourceNotFound", "VM not found");
  }
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

Reply DataCenter::CreateVm(const json& body, const Params& q) {
  Reply r;
  if (!CheckParams(q, {"sync", "origin", "creator_uuid", "context"}, false, 409, &r)) return r;
  if (!body.is_object()) return Validation(409, "body", "Invalid", "body must be a JSON object");
  json errors = json::array();
  auto missing = [&](const std::string& f) { errors.push_back({{"field", f}, {"code", "Missing"}, {"message", "is missing"}}); };
  auto invalid = [&](const std::string& f, const std::string& m) {
    errors.push_back({{"field", f}, {"code", "Invalid"}, {"message", m}});
  };
  std::string owner = body.value("owner_uuid", "");
  if (owner.empty()) missing("owner_uuid");
  else if (!IsUuid(owner)) invalid("owner_uuid", "Invalid UUID");
  std::string brand = body.value("brand", "");
  static const std::set<std::string> kBrands = {"joyent", "joyent-minimal", "lx", "kvm", "bhyve", "builder"};
  if (brand.empty()) missing("brand");
  else if (!kBrands.count(brand)) invalid("brand", "Must be one of: joyent, joyent-minimal, lx, kvm, bhyve, builder");
  if (!body.contains("networks") || !body["networks"].is_array() || body["networks"].empty()) missing("networks");
  if (!body.contains("ram") && !body.contains("billing_id")) missing("ram");
  bool hvm = brand == "kvm" || brand == "bhyve";
  std::string image;
  if (hvm) {
    if (body.contains("disks") && body["disks"].is_array() && !body["disks"].empty()) {
      image = body["disks"][0].value("image_uuid", "");
    }
    if (image.empty()) missing("disks.0.image_uuid");
  } else {
    image = body.value("image_uuid", "");
    if (image.empty()) missing("image_uuid");
  }
  int64_t ram = 1024;
  if (body.contains("ram")) {
    if (!body["ram"].is_number_integer() || body["ram"].get<int64_t>() <= 0) invalid("ram", "Must be a positive integer");
    else ram = body["ram"].get<int64_t>();
  }
  std::string uuid = body.value("uuid", "");
  if (!uuid.empty() && !IsUuid(uuid)) invalid("uuid", "Invalid UUID");
  absl::MutexLock l(&mu_);
  if (!image.empty()) {
    auto im = images_.find(image);
    if (im == images_.end() || im->second.state != "active") {
      invalid(hvm ? "disks.0.image_uuid" : "image_uuid", "Image does not exist or is not active");
    }
  }
  if (!uuid.empty() && vms_.count(uuid)) {
    errors.push_back({{"field", "uuid"}, {"code", "Duplicate"}, {"message", "Already exists"}});
  }
  std::string server = body.value("server_uuid", "");
  if (!server.empty()) {
    auto sv = servers_.find(server);
    if (sv == servers_.end()) invalid("server_uuid", "Server does not exist");
  }
  if (!errors.empty()) {
    Reply e = Error(409, "ValidationFailed", "Invalid VM parameters");
    e.body["errors"] = errors;
    return e;
  }
  Vm vm;
  vm.uuid = uuid.empty() ? NewUuidLocked() : uuid;
  vm.alias = body.value("alias", "");
  vm.owner_uuid = owner;
  vm.billing_id = body.value("billing_id", "");
  vm.brand = brand;
  vm.image_uuid = hvm ? "" : image;
  if (hvm) vm.disks = body["disks"];
  vm.ram = ram;
  vm.max_physical_memory = ram;
  vm.quota = body.value("quota", 10);
  vm.cpu_cap = body.value("cpu_cap", 100);
  vm.create_ms = vm.modified_ms = NowMs();
  vm.state = "provisioning";
  vm.zone_state = "installed";
  if (body.contains("tags") && body["tags"].is_object()) vm.tags = body["tags"];
  if (body.contains("customer_metadata") && body["customer_metadata"].is_object()) {
    vm.customer_metadata = body["customer_metadata"];
  }
  if (body.contains("internal_metadata") && body["internal_metadata"].is_object()) {
    vm.internal_metadata = body["internal_metadata"];
  }
  vm.docker = body.contains("docker") && body["docker"].is_boolean() && body["docker"].get<bool>();
  vm.autoboot = body.value("autoboot", true);
  vm.firewall_enabled = body.value("firewall_enabled", false);
  int idx = 0;
  for (const auto& n : body["networks"]) {
    Nic nic;
    nic.interface = "net" + std::to_string(idx);
    nic.mac = NewMacLocked();
    nic.nic_tag = "external";
    // 10.a.b.c: a private address per VM; tritonsim's listeners answer on
    // the matching loopback address 127.a.b.c.
    uint32_t ip = ++next_ip_;
    char buf[32];
    snprintf(buf, sizeof(buf), "10.%u.%u.%u", (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
    nic.ip = buf;
    nic.netmask = "255.0.0.0";
    nic.gateway = "10.0.0.1";
    nic.primary = idx == 0;
    nic.network_uuid = n.is_string() ? n.get<std::string>() : n.value("uuid", n.value("ipv4_uuid", ""));
    vm.nics.push_back(nic);
    ++idx;
  }
  std::string why;
  std::string placed = server.empty() ? PlaceLocked(ram, body.value("locality", json()), &why) : server;
  if (!placed.empty()) {
    vm.server_uuid = placed;
    AddUsedRamLocked(&servers_[placed], ram);
    servers_[placed].vms.insert(vm.uuid);
  }
  std::string id = vm.uuid;
  TagIndexAddLocked(vm);
  vms_[id] = vm;
  Reply out = StartJobLocked("provision-8.0.0", "provision", id, body, [this, id, why]() -> std::string {
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
    return "";
  });
  return out;
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
  auto it = vms_.find(uuid);
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
  if (*action == "reprovision") {
    std::string image = body.value("image_uuid", "");
    if (image.empty()) return Validation(409, "image_uuid", "Missing", "is missing");
    auto im = images_.find(image);
    if (im == images_.end() || im->second.state != "active") {
      return Validation(409, "image_uuid", "Invalid", "Image does not exist or is not active");
    }
    if (vm.brand == "kvm" || vm.brand == "bhyve") return Error(409, "BrandNotSupported", "Cannot reprovision a " + vm.brand + " VM");
    return StartJobLocked("reprovision-7.0.0", "reprovision", uuid, body, [this, id, image]() -> std::string {
      Vm& v = vms_[id];
      v.image_uuid = image;
      v.state = "running";
      v.zone_state = "running";
      Touch(&v);
      return "";
    });
  }
  if (*action == "update") {
    json changes = body;
    return StartJobLocked("update-7.0.0", "update", uuid, body, [this, id, changes]() -> std::string {
      Vm& v = vms_[id];
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
      if (changes.contains("customer_metadata") && changes["customer_metadata"].is_object()) {
        v.customer_metadata.update(changes["customer_metadata"]);
      }
      Touch(&v);
      return "";
    });
  }
  return Validation(409, "action", "Invalid", "unknown action " + *action);
}

Reply DataCenter::DeleteVm(const std::string& uuid, const Params& q) {
  Reply r;
  if (!CheckParams(q, {"sync", "owner_uuid", "origin", "creator_uuid", "context"}, false, 409, &r)) return r;
  absl::MutexLock l(&mu_);
  auto it = vms_.find(uuid);
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
                         const json& body) {
  absl::MutexLock l(&mu_);
  auto it = vms_.find(uuid);
  if (it == vms_.end()) return Error(404, "ResourceNotFound", "VM not found");
  Vm& vm = it->second;
  if (method == "GET") {
    Reply r;
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

// ---------------------------------------------------------------- CNAPI

json DataCenter::ServerJson(const Server& s, const std::set<std::string>& extras) const {
  bool all = extras.count("all") > 0;
  json j = {{"uuid", s.uuid},
            {"hostname", s.hostname},
            {"datacenter", opts_.datacenter},
            {"ram", s.ram},
            {"setup", s.setup},
            {"reserved", s.reserved},
            {"reservation_ratio", s.reservation_ratio},
            {"headnode", s.headnode},
            {"current_platform", s.current_platform},
            {"boot_platform", s.current_platform},
            {"traits", s.traits},
            {"status", s.status},
            {"transitional_status", ""},
            {"last_heartbeat", Iso(s.status == "running" ? NowMs() : s.boot_ms)},
            {"last_boot", Iso(s.boot_ms)},
            {"created", Iso(s.boot_ms)},
            {"reservoir", false},
            {"rack_identifier", ""}};
  if (all || extras.count("agents")) {
    json agents = json::array();
    for (const Agent& a : s.agents) {
      agents.push_back({{"name", a.name}, {"version", a.version}, {"image_uuid", a.image_uuid}, {"uuid", a.uuid}});
    }
    j["agents"] = agents;
  }
  if (all || extras.count("vms")) {
    json vms = json::object();
    for (const auto& u : s.vms) {
      auto it = vms_.find(u);
      if (it == vms_.end()) continue;
      vms[u] = {{"uuid", u}, {"owner_uuid", it->second.owner_uuid}, {"state", it->second.state},
                {"brand", it->second.brand}, {"max_physical_memory", it->second.max_physical_memory}};
    }
    j["vms"] = vms;
  }
  int64_t unreserved = FreeRam(s);
  if (all || extras.count("memory")) {
    j["memory_available_bytes"] = (s.ram - s.used_ram) * 1048576;
    j["memory_total_bytes"] = s.ram * 1048576;
    j["memory_provisionable_bytes"] = unreserved * 1048576;
  }
  if (all || extras.count("capacity")) {
    j["unreserved_ram"] = unreserved;
    j["unreserved_cpu"] = 3200;
    j["unreserved_disk"] = 4000000;
  }
  if (all || extras.count("disk")) {
    j["disk_pool_size_bytes"] = int64_t{4000000} * 1048576;
  }
  if (all || extras.count("sysinfo")) {
    j["sysinfo"] = {{"UUID", s.uuid}, {"Hostname", s.hostname}, {"Live Image", s.current_platform},
                    {"MiB of Memory", std::to_string(s.ram)}, {"Boot Time", std::to_string(s.boot_ms / 1000)}};
  }
  return j;
}

Reply DataCenter::ListServers(const Params& q) {
  Reply r;
  if (!CheckParams(q, {"uuids", "setup", "headnode", "reserved", "reservoir", "hostname", "extras", "fields",
                       "limit", "offset"},
                   false, 409, &r)) {
    return r;
  }
  std::set<std::string> extras;
  if (const std::string* v = Get(q, "extras")) {
    for (const auto& e : Split(*v, ',')) {
      static const std::set<std::string> kExtras = {"agents", "vms", "memory", "disk", "sysinfo", "capacity", "all"};
      if (!kExtras.count(e)) return Validation(409, "extras", "Invalid", "unknown extra " + e);
      extras.insert(e);
    }
  }
  std::set<std::string> uuids;
  if (const std::string* v = Get(q, "uuids")) {
    for (const auto& u : Split(*v, ',')) uuids.insert(u);
  }
  int64_t limit = 1000, offset = 0;
  if (const std::string* v = Get(q, "limit")) {
    if (!ParseInt(*v, &limit) || limit < 1 || limit > 1000) return Validation(409, "limit", "Invalid", "must be 1..1000");
  }
  if (const std::string* v = Get(q, "offset")) {
    if (!ParseInt(*v, &offset) || offset < 0) return Validation(409, "offset", "Invalid", "must be >= 0");
  }
  auto boolean = [&](const char* k, bool have) {
    const std::string* v = Get(q, k);
    return v == nullptr || (*v == "true") == have;
  };
  std::vector<std::string> fields;
  if (const std::string* v = Get(q, "fields")) fields = Split(*v, ',');
  absl::MutexLock l(&mu_);
  r.body = json::array();
  int64_t skipped = 0;
  for (const auto& kv : servers_) {
    const Server& s = kv.second;
    if (!uuids.empty() && !uuids.count(s.uuid)) continue;
    if (!boolean("setup", s.setup) || !boolean("headnode", s.headnode) || !boolean("reserved", s.reserved) ||
        !boolean("reservoir", false)) {
      continue;
    }
    if (const std::string* h = Get(q, "hostname"); h && s.hostname != *h) continue;
    if (skipped++ < offset) continue;
    if (static_cast<int64_t>(r.body.size()) >= limit) break;
    json j = ServerJson(s, extras);
    if (!fields.empty()) {
      json f = json::object();
      for (const auto& name : fields) {
        if (j.contains(name)) f[name] = j[name];
      }
      j = f;
    }
    r.body.push_back(std::move(j));
  }
  return r;
}

Reply DataCenter::GetServer(const std::string& uuid, const Params& q) {
  Reply r;
  if (!CheckParams(q, {"extras"}, false, 409, &r)) return r;
  absl::MutexLock l(&mu_);
  auto it = servers_.find(uuid);
  if (it == servers_.end()) return Error(404, "ResourceNotFound", "Server " + uuid + " not found");
  r.body = ServerJson(it->second, {"all"});
  return r;
}

Reply DataCenter::UpdateServer(const std::string& uuid, const json& body) {
  absl::MutexLock l(&mu_);
  auto it = servers_.find(uuid);
  if (it == servers_.end()) return Error(404, "ResourceNotFound", "Server " + uuid + " not found");
  if (!body.is_object()) return Validation(409, "body", "Invalid", "body must be a JSON object");
  Server& s = it->second;
  static const std::set<std::string> kKeys = {"agents", "reserved", "traits", "reservation_ratio", "setup",
                                              "rack_identifier", "comments", "next_reboot", "overprovision_ratios"};
  for (auto f = body.begin(); f != body.end(); ++f) {
    if (!kKeys.count(f.key())) return Validation(409, f.key(), "Invalid", "cannot be updated");
  }
  if (body.contains("reserved")) s.reserved = body["reserved"].get<bool>();
  if (body.contains("traits")) s.traits = body["traits"];
  if (body.contains("setup")) s.setup = body["setup"].get<bool>();
  if (body.contains("reservation_ratio")) {
    by_free_.erase({FreeRam(s), s.uuid});
    s.reservation_ratio = body["reservation_ratio"].get<double>();
    by_free_.insert({FreeRam(s), s.uuid});
  }
  if (body.contains("agents") && body["agents"].is_array()) {
    s.agents.clear();
    for (const auto& a : body["agents"]) {
      s.agents.push_back({a.value("name", ""), a.value("version", ""), a.value("image_uuid", ""), a.value("uuid", "")});
    }
  }
  Reply r;
  r.status = 204;
  r.body = nullptr;
  return r;
}

json DataCenter::TaskJson(const Task& t) const {
  return {{"id", t.id}, {"req_id", t.id}, {"task", t.task}, {"server_uuid", t.server_uuid},
          {"status", t.status}, {"history", t.history}, {"timestamp", Iso(t.created_ms)}};
}

Reply DataCenter::InstallAgent(const std::string& uuid, const json& body) {
  absl::MutexLock l(&mu_);
  auto it = servers_.find(uuid);
  if (it == servers_.end()) return Error(404, "ResourceNotFound", "Server " + uuid + " not found");
  if (it->second.status != "running") {
    return Error(409, "ServerNotRunning", "Server " + uuid + " is not running (status " + it->second.status + ")");
  }
  std::string image = body.is_object() ? body.value("image_uuid", "") : "";
  if (image.empty()) return Validation(409, "image_uuid", "Missing", "is missing");
  auto im = images_.find(image);
  Task t;
  t.id = NewUuidLocked();
  t.task = "agent_install";
  t.server_uuid = uuid;
  t.created_ms = NowMs();
  std::string id = t.id;
  tasks_[id] = t;
  bool image_ok = im != images_.end() && im->second.state == "active";
  Image img = image_ok ? im->second : Image{};
  std::string package = body.value("package_name", img.name);
  int64_t latency = LatencyLocked();
  bool fail = std::uniform_real_distribution<double>(0, 1)(rng_) < opts_.job_failure_rate;
  ScheduleLocked(latency, [this, id, uuid, image, image_ok, img, package, fail] {
    Task& task = tasks_[id];
    Server& s = servers_[uuid];
    std::string err;
    if (!image_ok) err = "image " + image + " not found in IMGAPI";
    else if (s.status != "running") err = "server went down during the install";
    else if (fail) err = "simulated agent install failure";
    if (err.empty()) {
      bool replaced = false;
      for (Agent& a : s.agents) {
        if (a.name == package) {
          a.version = img.version;
          a.image_uuid = image;
          replaced = true;
        }
      }
      if (!replaced) s.agents.push_back({package, img.version, image, NewUuidLocked()});
      task.status = "complete";
      task.history.push_back({{"name", "finish"}, {"timestamp", Iso(NowMs())}, {"event", json::object()}});
    } else {
      task.status = "failure";
      json entry = {{"name", "error"}, {"timestamp", Iso(NowMs())}, {"event", {{"error", {{"message", err}}}}}};
      task.history.insert(task.history.begin(), entry);
    }
  });
  Reply r;
  r.body = {{"id", id}};
  return r;
}

Reply DataCenter::UninstallAgents(const std::string& uuid, const json& body) {
  absl::MutexLock l(&mu_);
  auto it = servers_.find(uuid);
  if (it == servers_.end()) return Error(404, "ResourceNotFound", "Server " + uuid + " not found");
  if (it->second.status != "running") {
    return Error(409, "ServerNotRunning", "Server " + uuid + " is not running");
  }
  if (!body.is_object() || !body.contains("agents") || !body["agents"].is_array()) {
    return Validation(409, "agents", "Missing", "agents must be an array of names");
  }
  Task t;
  t.id = NewUuidLocked();
  t.task = "agents_uninstall";
  t.server_uuid = uuid;
  t.created_ms = NowMs();
  std::string id = t.id;
  tasks_[id] = t;
  std::set<std::string> names;
  for (const auto& a : body["agents"]) names.insert(a.get<std::string>());
  ScheduleLocked(LatencyLocked(), [this, id, uuid, names] {
    Server& s = servers_[uuid];
    s.agents.erase(std::remove_if(s.agents.begin(), s.agents.end(), [&](const Agent& a) { return names.count(a.name) > 0; }),
                   s.agents.end());
    tasks_[id].status = "complete";
    tasks_[id].history.push_back({{"name", "finish"}, {"timestamp", Iso(NowMs())}, {"event", json::object()}});
  });
  Reply r;
  r.body = {{"id", id}};
  return r;
}

Reply DataCenter::GetTask(const std::string& id) {
  absl::MutexLock l(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return Error(404, "ResourceNotFound", "Task " + id + " not found");
  Reply r;
  r.body = TaskJson(it->second);
  return r;
}

Reply DataCenter::WaitTask(const std::string& id, const Params& q) {
  int64_t timeout_s = 60;
  if (const std::string* t = Get(q, "timeout")) ParseInt(*t, &timeout_s);
  absl::MutexLock l(&mu_);
  auto ended = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = tasks_.find(id);
    return it == tasks_.end() || it->second.status != "active";
  };
  opts_.clock->AwaitUntil(&mu_, absl::Condition(&ended), opts_.clock->Now() + absl::Seconds(timeout_s));
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return Error(404, "ResourceNotFound", "Task " + id + " not found");
  Reply r;
  r.body = TaskJson(it->second);
  return r;
}

// ---------------------------------------------------------------- IMGAPI

json DataCenter::ImageJson(const Image& i) const {
  return {{"v", 2},
          {"uuid", i.uuid},
          {"owner", i.owner},
          {"name", i.name},
          {"version", i.version},
          {"state", i.state},
          {"disabled", i.disabled},
          {"public", i.is_public},
          {"published_at", Iso(i.published_ms)},
          {"type", i.type},
          {"os", i.os},
          {"origin", i.origin.empty() ? json() : json(i.origin)},
          {"files", i.files.empty() ? json::array({{{"sha1", "0000000000000000000000000000000000000000"},
                                                    {"size", 104857600},
                                                    {"compression", "gzip"}}})
                                    : i.files},
          {"requirements", i.requirements},
          {"tags", i.tags}};
}

Reply DataCenter::ListImages(const Params& q) {
  Reply r;
  if (!CheckParams(q, {"name", "version", "state", "type", "os", "owner", "public", "limit", "marker", "account"},
                   true, 422, &r)) {
    return r;
  }
  int64_t limit = 1000;
  if (const std::string* v = Get(q, "limit")) {
    if (!ParseInt(*v, &limit) || limit < 1 || limit > 1000) return Validation(422, "limit", "Invalid", "must be 1..1000");
  }
  std::string state = Get(q, "state") ? *Get(q, "state") : "active";
  auto match = [](const std::string* want, const std::string& have) {
    if (!want) return true;
    if (!want->empty() && (*want)[0] == '~') return have.find(want->substr(1)) != std::string::npos;
    return *want == have;
  };
  absl::MutexLock l(&mu_);
  std::vector<const Image*> out;
  for (const auto& kv : images_) {
    const Image& i = kv.second;
    if (i.state == "remote") continue;
    if (state != "all" && i.state != state) continue;
    if (!match(Get(q, "name"), i.name) || !match(Get(q, "version"), i.version) || !match(Get(q, "type"), i.type) ||
        !match(Get(q, "os"), i.os) || !match(Get(q, "owner"), i.owner)) {
      continue;
    }
    bool tags_ok = true;
    for (const auto& p : q) {
      if (p.first.rfind("tag.", 0) != 0) continue;
      auto t = i.tags.find(p.first.substr(4));
      if (t == i.tags.end() || (t->is_string() ? t->get<std::string>() : t->dump()) != p.second) tags_ok = false;
    }
    if (tags_ok) out.push_back(&i);
  }
  std::sort(out.begin(), out.end(), [](const Image* a, const Image* b) {
    return a->published_ms != b->published_ms ? a->published_ms < b->published_ms : a->uuid < b->uuid;
  });
  size_t start = 0;
  if (const std::string* m = Get(q, "marker")) {
    // Inclusive: start at the marker image (or the first published at or after a date).
    start = out.size();
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i]->uuid == *m || Iso(out[i]->published_ms) >= *m) {
        start = i;
        break;
      }
    }
  }
  r.body = json::array();
  for (size_t i = start; i < out.size() && static_cast<int64_t>(r.body.size()) < limit; ++i) {
    r.body.push_back(ImageJson(*out[i]));
  }
  return r;
}

Reply DataCenter::GetImage(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  auto it = images_.find(uuid);
  if (it == images_.end() || it->second.state == "remote") return Error(404, "ResourceNotFound", "image " + uuid + " was not found");
  Reply r;
  r.body = ImageJson(it->second);
  return r;
}

Reply DataCenter::ImageAction(const std::string& uuid, const Params& q, const json& body) {
  (void)body;
  Reply r;
  if (!CheckParams(q, {"action", "source", "account", "skip_owner_check"}, false, 422, &r)) return r;
  const std::string* action = Get(q, "action");
  if (!action || *action != "import-remote") return Validation(422, "action", "Invalid", "unsupported action");
  const std::string* source = Get(q, "source");
  if (!source || source->empty()) return Validation(422, "source", "Missing", "source is required");
  absl::MutexLock l(&mu_);
  auto it = images_.find(uuid);
  if (it != images_.end() && it->second.state != "remote") {
    return Error(409, "ImageUuidAlreadyExists", "image " + uuid + " already exists");
  }
  bool known = it != images_.end();
  if (!known) {
    Image im;
    im.uuid = uuid;
    im.state = "remote";
    images_[uuid] = im;
  }
  images_[uuid].state = "unactivated";
  Reply out = StartJobLocked("import-remote-image-1.0.0", "import-remote-image", "", {{"image_uuid", uuid}, {"source", *source}},
                             [this, uuid, known]() -> std::string {
                               Image& im = images_[uuid];
                               if (!known) {
                                 images_.erase(uuid);
                                 return "image " + uuid + " was not found at the source";
                               }
                               im.state = "active";
                               im.published_ms = NowMs();
                               return "";
                             });
  out.body["image_uuid"] = uuid;
  return out;
}

Reply DataCenter::CreateImageFromVm(const Params& q, const json& body) {
  Reply r;
  if (!CheckParams(q, {"action", "vm_uuid", "incremental", "account", "max_origin_depth"}, false, 422, &r)) return r;
  const std::string* vm_uuid = Get(q, "vm_uuid");
  if (!vm_uuid) return Validation(422, "vm_uuid", "Missing", "vm_uuid is required");
  if (!body.is_object() || !body.contains("name") || !body.contains("version")) {
    return Validation(422, "name", "Missing", "name and version are required");
  }
  absl::MutexLock l(&mu_);
  auto vm = vms_.find(*vm_uuid);
  if (vm == vms_.end()) return Error(404, "ResourceNotFound", "VM " + *vm_uuid + " not found");
  if (EffectiveStateLocked(vm->second) != "stopped") {
    return Error(409, "VmNotStopped", "VM " + *vm_uuid + " must be stopped to create an image from it");
  }
  Image im;
  im.uuid = NewUuidLocked();
  im.name = body["name"];
  im.version = body["version"];
  im.state = "creating";
  im.origin = vm->second.image_uuid;
  auto origin = images_.find(im.origin);
  im.os = origin != images_.end() ? origin->second.os : "other";
  im.type = origin != images_.end() ? origin->second.type : "zone-dataset";
  im.owner = vm->second.owner_uuid;
  im.is_public = false;
  im.published_ms = NowMs();
  std::string id = im.uuid;
  images_[id] = im;
  // The prepare-image script is chosen by the origin image's os.
  std::string script = "prepare-image/" + im.os + "-prepare-image";
  Reply out = StartJobLocked("create-from-vm-1.0.0", "create-from-vm", *vm_uuid,
                             {{"image_uuid", id}, {"prepare_image_script", script}}, [this, id, script]() -> std::string {
                               images_[id].state = "active";
                               return "";
                             });
  // Record the prepare-image step first in the job's chain.
  jobs_[out.body["job_uuid"].get<std::string>()].steps.emplace_back("prepare-image", "ran " + script);
  out.body["image_uuid"] = id;
  return out;
}

// ---------------------------------------------------------------- control

Reply DataCenter::SetServerStatus(const std::string& uuid, const std::string& status) {
  absl::MutexLock l(&mu_);
  auto it = servers_.find(uuid);
  if (it == servers_.end()) {
    for (auto& kv : servers_) {
      if (kv.second.hostname == uuid) it = servers_.find(kv.first);
    }
  }
  if (it == servers_.end()) return Error(404, "ResourceNotFound", "Server " + uuid + " not found");
  it->second.status = status;
  if (status == "running") it->second.boot_ms = NowMs();
  Reply r;
  r.body = {{"uuid", it->second.uuid}, {"status", status}};
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
  for (int i = 0; i < n; ++i) failures_[op].emplace_back(status, hang_ms);
}

bool DataCenter::TakeFailure(const std::string& op, Reply* reply, int* hang_ms) {
  absl::MutexLock l(&mu_);
  op_counts_[op]++;
  auto it = failures_.find(op);
  if (it == failures_.end() || it->second.empty()) return false;
  auto f = it->second.front();
  it->second.erase(it->second.begin());
  *hang_ms = f.second;
  *reply = Error(f.first ? f.first : 503, f.first == 500 ? "InternalError" : "ServiceUnavailable",
                 "injected failure of " + op);
  return true;
}

std::vector<DataCenter::Endpoint> DataCenter::RunningEndpoints() {
  absl::MutexLock l(&mu_);
  std::vector<Endpoint> out;
  for (const auto& kv : vms_) {
    const Vm& v = kv.second;
    if (EffectiveStateLocked(v) != "running" || v.nics.empty()) continue;
    Endpoint e{v.uuid, v.nics[0].ip, {}, v.health};
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
    out.push_back(e);
  }
  return out;
}

void DataCenter::StartAddressesAtBlock(uint32_t block) {
  absl::MutexLock l(&mu_);
  next_ip_ = (block & 0xffff) << 8;
}

}  // namespace tritonsim
