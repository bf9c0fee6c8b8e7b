// CNAPI: /servers, agents, tasks.
#include "deploy/tritonsim/datacenter.h"

#include <algorithm>
#include <optional>

#include "absl/strings/numbers.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {

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

}  // namespace tritonsim
