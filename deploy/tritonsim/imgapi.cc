// IMGAPI: /images, import, create from a VM.
#include "deploy/tritonsim/datacenter.h"

#include <algorithm>
#include <optional>

#include "absl/strings/numbers.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {

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

}  // namespace tritonsim
