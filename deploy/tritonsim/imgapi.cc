// IMGAPI: /images, import, create from a VM.
#include "deploy/tritonsim/datacenter.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/numbers.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {

json DataCenter::ImageJson(const Image& i, bool source) const {
  json out = {{"v", 2},
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
                                                    {"size", i.size},
                                                    {"compression", "gzip"}}})
                                    : i.files},
          {"requirements", i.requirements},
          {"tags", i.tags}};
  if (source) {
    // The source's view: every image in it is active there.
    out["state"] = "active";
    out["channels"] = i.channels;
    if (!i.changes.empty()) out["changes"] = i.changes;
  }
  return out;
}

Reply DataCenter::ListChannels() {
  absl::MutexLock l(&mu_);
  std::set<std::string> names;
  for (const auto& kv : images_) {
    if (kv.second.in_source) names.insert(kv.second.channels.begin(), kv.second.channels.end());
  }
  Reply r;
  r.body = json::array();
  for (const std::string& n : names) r.body.push_back({{"name", n}, {"default", n == "release"}});
  return r;
}

Reply DataCenter::ListImages(const Params& q, bool source) {
  Reply r;
  if (!CheckParams(q, {"name", "version", "state", "type", "os", "owner", "public", "limit", "marker", "account", "channel"},
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
    if (source) {
      if (!i.in_source) continue;
      const std::string* ch = Get(q, "channel");
      if (ch && std::find(i.channels.begin(), i.channels.end(), *ch) == i.channels.end()) continue;
    } else {
      if (i.state == "remote") continue;
      if (state != "all" && i.state != state) continue;
    }
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
    r.body.push_back(ImageJson(*out[i], source));
  }
  return r;
}

Reply DataCenter::GetImage(const std::string& uuid, bool source) {
  absl::MutexLock l(&mu_);
  auto it = images_.find(uuid);
  bool here = it != images_.end() && (source ? it->second.in_source : it->second.state != "remote");
  if (!here) return Error(404, "ResourceNotFound", "image " + uuid + " was not found");
  Reply r;
  r.body = ImageJson(it->second, source);
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

// IMGAPI create-from-vm as `imgadm create` runs it, with RFD 109's
// operator script early in boot. The job's steps record, in order: the
// prototype stopped and snapshotted, booted with the prepare-image script
// (and the operator's own) running before any of its services, the image
// made from its root, the snapshot rolled back and the prototype started
// again if it was running. The prototype keeps its state in VMAPI meanwhile.
Reply DataCenter::CreateImageFromVm(const Params& q, const json& body) {
  Reply r;
  if (!CheckParams(q, {"action", "vm_uuid", "incremental", "account", "max_origin_depth"}, false, 422, &r)) return r;
  const std::string* vm_uuid = Get(q, "vm_uuid");
  if (!vm_uuid) return Validation(422, "vm_uuid", "Missing", "vm_uuid is required");
  if (!body.is_object() || !body.contains("name") || !body.contains("version") || !body["name"].is_string() ||
      !body["version"].is_string()) {
    return Validation(422, "name", "Missing", "name and version are required");
  }
  std::string operator_script = body.value("prepare_script", "");
  absl::MutexLock l(&mu_);
  auto vm = vms_.find(*vm_uuid);
  if (vm == vms_.end()) return Error(404, "ResourceNotFound", "VM " + *vm_uuid + " not found");
  std::string state = EffectiveStateLocked(vm->second);
  if (state != "stopped" && state != "running") {
    return Error(409, "VmNotReady", "VM " + *vm_uuid + " is " + state + "; an image is made from a running or stopped VM");
  }
  if (vm->second.image_uuid.empty()) {
    return Error(422, "NotImageable", "VM " + *vm_uuid + " is a hardware VM; images are made from zones here");
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
  bool was_running = state == "running";
  std::string vm_id = *vm_uuid;
  auto job_id = std::make_shared<std::string>();
  Reply out = StartJobLocked(
      "create-from-vm-1.0.0", "create-from-vm", vm_id, {{"image_uuid", id}, {"prepare_image_script", script}},
      [this, id, vm_id, script, operator_script, was_running, job_id]() -> std::string {
        auto& steps = jobs_[*job_id].steps;
        auto v = vms_.find(vm_id);
        if (v == vms_.end() || v->second.state == "destroyed") {
          images_.erase(id);
          return "the prototype VM " + vm_id + " was deleted";
        }
        std::string snap = "zones/" + vm_id + "@imgadm-create-pre-prepare";
        steps.emplace_back("stop", was_running ? "prototype stopped" : "prototype was stopped");
        steps.emplace_back("snapshot", snap);
        steps.emplace_back("boot", "booted with sdc:operator-script set");
        steps.emplace_back("operator-script",
                           "ran " + script +
                               (operator_script.empty() ? std::string()
                                                        : " and the operator's script (" +
                                                              std::to_string(operator_script.size()) + " bytes)") +
                               " before the instance's services, then shut it down");
        steps.emplace_back("services", "none of the instance's services started");
        // The image is the prepared root: host keys and logs removed.
        std::map<std::string, std::string> files;
        for (const auto& f : v->second.root_files) {
          if (f.first.rfind("/etc/ssh/ssh_host_", 0) == 0 || f.first.rfind("/var/log/", 0) == 0) continue;
          files.insert(f);
        }
        Image& img = images_[id];
        img.root_files = files;
        img.state = "active";
        steps.emplace_back("create-image", "image " + id + " from the root (" + std::to_string(files.size()) + " files)");
        steps.emplace_back("rollback", snap);
        steps.emplace_back(was_running ? "start" : "leave-stopped",
                           was_running ? "prototype running again, as before" : "prototype left stopped, as before");
        return "";
      });
  *job_id = out.body["job_uuid"].get<std::string>();
  out.body["image_uuid"] = id;
  return out;
}

}  // namespace tritonsim
