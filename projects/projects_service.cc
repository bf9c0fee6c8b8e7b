#include "projects/projects_service.h"

#include <algorithm>
#include <future>
#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/ids.h"
#include "common/log.h"
#include "projects/meta_drift.h"
#include "projects/task_queue.h"
#include "projects/deletion.h"
#include "projects/diff.h"
#include "projects/limits.h"
#include "projects/manifest.h"
#include "projects/projects_service_parts.h"
#include "projects/request_guard.h"

namespace mariposa {
namespace projects_parts {

void ToProto(const ProjectRecord& p, v1::Project* out) {
  out->set_uuid(p.uuid);
  out->set_name(p.name);
  out->set_description(p.description);
  SetTimestamp(p.created_at, out->mutable_created_at());
  out->set_current_version(p.current_version);
  out->set_current_version_number(p.current_number);
  out->set_service_count(p.service_count);
  out->set_deleting(p.deleting);
  for (const std::string& svc : p.stopped) out->add_stopped(svc);
  out->set_owner_uuid(p.owner);
}

void ToProto(const VersionRecord& v, v1::Version* out) {
  out->set_uuid(v.uuid);
  out->set_project_uuid(v.project_uuid);
  out->set_number(v.number);
  out->set_hash(v.hash);
  out->set_author(v.author);
  SetTimestamp(v.created_at, out->mutable_created_at());
  for (const auto& t : v.tags) out->add_tags(t);
  out->set_origin(v.origin);
  out->set_rolled_back_to(v.rolled_back_to);
  out->set_message(v.message);
  for (const auto& w : v.warnings) out->add_warnings(w);
  out->set_manifest(v.manifest);
  out->set_canonical(v.canonical);
  out->set_service_count(v.service_count);
}

}  // namespace projects_parts

namespace {
using projects_parts::AdmitManifest;
using projects_parts::ToProto;

void ToProto(const ServiceRecord& s, v1::Service* out) {
  out->set_name(s.name);
  out->set_service_type(s.service_type);
  out->set_compute_type(s.compute_type);
  out->set_brand(s.brand);
  out->set_image(s.image);
  out->set_package(s.package);
  out->set_count(s.count);
  out->set_spec_hash(s.spec_hash);
  out->set_spec_json(s.spec_json);
  if (!s.group.empty()) out->add_groups(s.group);
}

absl::Status Required(const std::string& value, absl::string_view what) {
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is required"));
  return absl::OkStatus();
}

}  // namespace

namespace projects_parts {
absl::Status AdmitManifest(grpc::ServerContext* ctx, const Manifest& m, bool dry_run) {
  bool core = false;
  for (const auto& kv : m.services) core = core || kv.second.compute_type == "core" || kv.second.compute_type == "agent";
  grpc::Status st = Authorize(ctx, m.project, dry_run ? "dry-run" : core ? "core" : "");
  if (st.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(st.error_code()), st.error_message());
}
}  // namespace projects_parts


struct ProjectsService::Base {
  std::optional<ProjectRecord> existing;          // none: a new project
  std::optional<VersionRecord> current;           // its current version
  std::shared_ptr<const CompiledManifest> before;  // that version's manifest
};

struct ProjectsService::Checked {
  std::vector<std::string> warnings;  // what could not be checked
  std::optional<absl::StatusOr<std::map<std::string, ImagePlan>>> plans;
};

namespace {

// The services whose goal a new manifest changes: added, removed, or with
// another instance spec or count.
std::set<std::string> ChangedServices(const CompiledManifest* before, const CompiledManifest& after) {
  std::set<std::string> out;
  for (const auto& kv : after.manifest.services) {
    if (before == nullptr) break;  // a new project: nothing can be frozen
    auto old = before->manifest.services.find(kv.first);
    if (old == before->manifest.services.end() || old->second.count != kv.second.count ||
        before->instance_hash.at(kv.first) != after.instance_hash.at(kv.first)) {
      out.insert(kv.first);
    }
  }
  if (before != nullptr) {
    for (const auto& kv : before->manifest.services) {
      if (!after.manifest.services.count(kv.first)) out.insert(kv.first);
    }
  }
  return out;
}

}  // namespace

std::set<std::string> ImagesToPlan(const v1::Diff& diff) {
  std::set<std::string> wanted;
  for (const v1::ServiceChange& c : diff.services()) {
    if (c.action() == v1::ServiceChange::CREATE ||
        (c.action() == v1::ServiceChange::UPDATE && c.from_image() != c.to_image())) {
      wanted.insert(c.service());
    }
  }
  return wanted;
}

absl::Status ProjectsService::PlanImages(const absl::StatusOr<std::map<std::string, ImagePlan>>& plans,
                                         bool allow_downgrade, bool dry_run, Outcome* out) {
  if (!plans.ok()) {
    out->warnings.push_back(absl::StrCat("the image plan could not be made (", plans.status().message(),
                                         "); downgrades were not checked"));
    return absl::OkStatus();
  }
  std::vector<std::string> downgrades;
  for (v1::ServiceChange& c : *out->diff.mutable_services()) {
    auto it = plans->find(c.service());
    if (it == plans->end()) continue;
    const ImagePlan& p = it->second;
    v1::ImagePlan* pp = c.mutable_image_plan();
    pp->set_image_uuid(p.image_uuid);
    pp->set_label(p.label);
    pp->set_agent(p.agent);
    pp->set_instances(p.instances);
    pp->set_already(p.already);
    pp->set_download_bytes(p.download_bytes);
    pp->set_source(p.source);
    int64_t down = 0;
    std::string newest;
    for (const ImagePlanStep& st : p.from) {
      v1::ImagePlanStep* sp = pp->add_from();
      sp->set_image_uuid(st.image_uuid);
      sp->set_label(st.label);
      sp->set_count(st.count);
      sp->set_downgrade(st.downgrade);
      if (st.downgrade) {
        down += st.count;
        newest = st.label;
      }
    }
    if (down == 0) continue;
    pp->set_forced(allow_downgrade);
    downgrades.push_back(absl::StrCat("\"", c.service(), "\": ", down, p.agent ? (down == 1 ? " server" : " servers")
                                                                             : (down == 1 ? " instance" : " instances"),
                                      " run a newer version (", newest, ") than ", p.label));
  }
  if (downgrades.empty() || allow_downgrade) return absl::OkStatus();
  std::string why = absl::StrCat("this is a downgrade: ", absl::StrJoin(downgrades, "; "));
  if (dry_run) {
    out->warnings.push_back(absl::StrCat(why, " (apply refuses it without --force)"));
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      why, "; nothing was changed. Name a newer image (`mariposa image avail`), or pass --force to downgrade"));
}

std::vector<std::string> DroppedCoreServices(const Manifest& before, const Manifest& after) {
  std::vector<std::string> out;
  for (const auto& kv : before.services) {
    if (kv.second.compute_type != "core") continue;
    auto now = after.services.find(kv.first);
    if (now == after.services.end() || now->second.compute_type != "core") out.push_back(kv.first);
  }
  return out;
}

absl::StatusOr<ProjectRecord> ProjectsService::Project(const std::string& name) {
  RETURN_IF_ERROR(Required(name, "project (-j NAME)"));
  return store_->GetProject(name);
}

namespace {

// Warnings and refusals that compare the manifest with the one it replaces:
// volumes deleted or retained, fabric and volume fields that cannot change,
// core services that would leave. OK or why nothing may change.
absl::Status CompareWithBefore(const Manifest* before, const Manifest& m, bool dry_run, bool allow_downgrade,
                               std::vector<std::string>* warnings) {
  for (const auto& [name, v] : m.volumes) {  // data loss is said before it is asked for
    auto was = before ? before->volumes.find(name) : m.volumes.end();
    if (v.remove && (!before || was == before->volumes.end() || !was->second.remove)) {
      warnings->push_back(absl::StrCat("volume ", name, " (", VolapiVolumeName(m.project, name),
                                       ") will be deleted from VOLAPI once no instance mounts it: its data is lost"));
    }
  }
  if (before == nullptr) return absl::OkStatus();
  for (const auto& [name, v] : before->volumes) {
    if (m.volumes.count(name) || v.remove) continue;
    warnings->push_back(absl::StrCat(
        "volume ", name, " leaves the manifest: it is retained in VOLAPI with its data (", VolapiVolumeName(m.project, name),
        "); to delete it, keep it in the manifest with remove: true"));
  }
  for (const std::string& fixed : {FixedFabricChange(before->fabric, m.fabric),
                                    FixedVolumeChange(before->volumes, m.volumes)}) {
    if (!fixed.empty()) return absl::InvalidArgumentError(fixed);
  }
  std::vector<std::string> dropped = DroppedCoreServices(*before, m);
  if (dropped.empty() || allow_downgrade) return absl::OkStatus();
  std::string why = absl::StrCat("core service", dropped.size() == 1 ? " " : "s ", absl::StrJoin(dropped, ", "),
                                 " would leave the project and ", dropped.size() == 1 ? "its" : "their",
                                 " zones be destroyed");
  if (dry_run) {
    warnings->push_back(absl::StrCat(why, " (apply refuses it without --force)"));
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(why, "; nothing was changed. Keep ",
                                                    dropped.size() == 1 ? "it" : "them",
                                                    " in the manifest (with compute_type: core), or pass --force to "
                                                    "destroy the zones"));
}

// The version to commit: the texts, hashes, groups and services' rows.
NewVersion VersionToCommit(const CompiledManifest& compiled, const std::string& text, const std::string& owner,
                           const std::string& expected, bool force, const std::vector<std::string>& warnings) {
  const Manifest& m = compiled.manifest;
  NewVersion nv;
  nv.project_name = m.project;
  nv.create_project = true;
  nv.owner = owner;
  nv.expected_current = expected;
  nv.force = force;
  nv.hash = compiled.hash;
  nv.manifest = text;
  nv.canonical = compiled.canonical;
  nv.warnings = warnings;
  nv.description = m.description;
  std::map<std::string, std::string> group_of;
  for (const auto& g : m.deployment_groups) {
    nv.groups.push_back(GroupRecord{g.first, g.second});
    for (const auto& s : g.second) group_of[s] = g.first;
  }
  for (const auto& kv : m.services) {
    const ServiceSpec& s = kv.second;
    nv.services.push_back(ServiceRecord{s.name, s.service_type, s.compute_type, s.brand, s.image, s.package, s.count,
                                        compiled.instance_hash.at(s.name), compiled.spec_json.at(s.name),
                                        group_of[s.name]});
  }
  return nv;
}

}  // namespace

// The manifest parsed, admitted and compiled, within the canonical limit.
absl::StatusOr<std::shared_ptr<const CompiledManifest>> ProjectsService::Compiled(const ApplyRequest& a,
                                                                                const ParseOptions& opts,
                                                                                Value* tree) {
  ParseResult parsed = ParseManifest(a.text, opts);
  RETURN_IF_ERROR(parsed.interrupted);
  if (!parsed.manifest) return DiagnosticsToStatus(parsed.errors, parsed.total_errors);
  RETURN_IF_ERROR(a.cancel->Check());
  if (!parsed.manifest->datacenters.empty() && datacenter_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        opts.filename, ": datacenters: lists ", DataCenterList(parsed.manifest->datacenters),
        ", but this mariposad has no data center name; start it with --datacenter NAME (docs/operations.md, "
        "\"Several data centers\"), or remove datacenters:; nothing was changed"));
  }
  auto compiled = std::make_shared<const CompiledManifest>(Compile(std::move(*parsed.manifest), datacenter_, tree));
  if (a.admit) RETURN_IF_ERROR(a.admit(compiled->manifest));
  if (compiled->canonical.size() > Limits::kMaxCanonicalBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the manifest's canonical form (defaults written out) is ", compiled->canonical.size(),
        " bytes, over the limit of ", Limits::kMaxCanonicalBytes, " bytes; split the project; nothing was changed"));
  }
  RETURN_IF_ERROR(a.cancel->Check());
  return compiled;
}

// The project as stored: its record, current version and that version's
// manifest, and the stored meta a template references (checked here).
absl::StatusOr<ProjectsService::Base> ProjectsService::ReadBase(const Manifest& m, const std::string& filename,
                                                                const std::map<std::string, std::string>* new_meta) {
  Base b;
  if (auto read = store_->GetProjectWithCurrent(m.project); read.ok()) {
    b.existing = std::move(read->first);
    b.current = std::move(read->second);
  } else if (!absl::IsNotFound(read.status())) {
    return read.status();
  }
  std::map<std::string, std::string> store_meta;
  if (b.existing) {
    if (b.existing->deleting) {
      return absl::FailedPreconditionError(absl::StrCat(
          "project ", b.existing->name, " is being deleted (its instances are being removed); apply again once "
          "`mariposa project get ", b.existing->name, "` says it does not exist"));
    }
    // Stored meta matters only to a manifest that references it (a template).
    if (!m.templates.empty()) {
      ASSIGN_OR_RETURN(auto meta, store_->ListMeta(b.existing->uuid));
      for (const auto& e : meta) store_meta[e.key] = e.value;
    }
    if (b.current) {
      ASSIGN_OR_RETURN(b.before, StoredManifest(*b.existing, b.current->uuid));
    }
  }
  if (!b.existing && new_meta != nullptr) store_meta = *new_meta;
  std::vector<ManifestDiagnostic> meta_errors = CheckMetaReferences(m, store_meta, filename);
  if (!meta_errors.empty()) return DiagnosticsToStatus(meta_errors);
  return b;
}

// What the data center must have. Only applies are checked: a rollback or
// scale re-uses a text checked when it was applied (an auto_rollback must not
// be refused), and the sync reports what has gone since. The two checks
// (the catalog; the image plan) are asked at the same time: each is bounded
// (5 s in mariposad), and so are both together.
absl::StatusOr<ProjectsService::Checked> ProjectsService::CheckDataCenter(const ApplyRequest& a, const Base& b,
                                                                          const Manifest& m,
                                                                          const std::string& filename,
                                                                          const v1::Diff& diff) {
  Checked out;
  if (data_center_ == nullptr || a.origin != "apply") return out;
  const std::set<std::string> to_plan = ImagesToPlan(diff);
  const std::string owner = b.existing ? b.existing->owner : a.owner.empty() ? default_owner_ : a.owner;
  auto catalog = std::async(std::launch::async, [&] { return data_center_->CheckCatalog(m, filename, owner); });
  if (!to_plan.empty()) out.plans = data_center_->PlanImages(b.existing ? b.existing->uuid : "", m, to_plan);
  auto catalog_errors = catalog.get();
  if (!catalog_errors.ok()) {
    out.warnings.push_back(absl::StrCat(
        "packages, networks, brands and images were not checked (", catalog_errors.status().message(),
        "); the sync holds instances whose package or network does not exist"));
  } else if (!catalog_errors->empty()) {
    return DiagnosticsToStatus(*catalog_errors);
  }
  return out;
}

// QUEUE.md: a user's change to services in a frozen scope is refused unless
// --thaw (`thaw` has a value for user commands only; the daemon's own
// auto_rollback acts for a rollout the freeze already ended). The freezes
// --thaw ends.
absl::StatusOr<std::vector<std::string>> ProjectsService::FreezesToThaw(const ApplyRequest& a, const Base& b,
                                                                        const CompiledManifest& compiled,
                                                                        Outcome* out) {
  if (!a.thaw.has_value() || !b.existing) return std::vector<std::string>{};
  // No service changed: no freeze can be in the way (nor are the tasks read).
  std::set<std::string> changed_services = ChangedServices(b.before.get(), compiled);
  if (changed_services.empty()) return std::vector<std::string>{};
  ASSIGN_OR_RETURN(std::vector<TaskRecord> tasks, store_->ListTasks(b.existing->uuid, 0));
  auto in_way = FreezesInTheWay(tasks, changed_services, *a.thaw);
  if (in_way.ok()) return in_way;
  if (!a.dry_run) return absl::FailedPreconditionError(absl::StrCat(in_way.status().message(), "; nothing was changed"));
  out->warnings.push_back(absl::StrCat(in_way.status().message(), " (apply is refused until then)"));
  return std::vector<std::string>{};
}

absl::StatusOr<ProjectsService::Outcome> ProjectsService::ApplyText(const ApplyRequest& a) {
  ParseOptions opts;
  opts.filename = a.filename.empty() ? "manifest" : a.filename;
  opts.project_override = a.project;
  opts.stored = a.stored_text;
  opts.cancel = a.cancel;
  Value tree;
  ASSIGN_OR_RETURN(std::shared_ptr<const CompiledManifest> compiled, Compiled(a, opts, &tree));
  const Manifest& m = compiled->manifest;
  ASSIGN_OR_RETURN(Base b, ReadBase(m, opts.filename, a.new_meta));
  Outcome out;
  out.project = m.project;
  if (b.current) {
    out.base_version = b.current->uuid;
    out.base_number = b.current->number;
  }
  if (compiled->document && !RunsInDataCenter(*compiled->document, datacenter_)) {
    const std::string names = DataCenterList(compiled->document->datacenters);
    if (!b.current && a.received) return out;  // nothing of it here, nor to be: nothing to store
    if (!b.current && (!a.may_roll_out || !send_version_)) {
      return absl::FailedPreconditionError(absl::StrCat(
          opts.filename, ": this is data center ", datacenter_, "; datacenters: lists ", names,
          ", and this mariposad has no peers to send it to (mariposad --peers; docs/operations.md, \"Several data "
          "centers\"): apply it through the mariposad of one of them; nothing was changed"));
    }
    if (b.current) {
      out.warnings.push_back(absl::StrCat("data center ", datacenter_, " is not in datacenters: (", names,
                                          "): the project's instances here are removed"));
    }
  }
  if (!a.version_uuid.empty() && b.existing) {
    if (auto had = store_->GetVersion(b.existing->uuid, a.version_uuid, false); had.ok()) {
      if (b.current && b.current->uuid == had->uuid) {
        out.commit.version = *had;  // sent again: stored already
        return out;
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "version ", a.version_uuid, " was stored here as version ", had->number, " and is no longer in force (",
          b.current ? absl::StrCat("version ", b.current->number, " is") : std::string("none is"),
          "); a rollout does not bring back what was replaced here: apply it again"));
    }
  }
  // A manifest for other data centers than this one alone goes to them
  // through a rollout (StartRollout), nothing stored here now.
  // (A data center the version in force listed, and this one drops, hears
  // of it that way too.)
  auto elsewhere = [this](const CompiledManifest* c) {
    if (c == nullptr || !c->document) return false;
    for (const auto& dc : c->document->datacenters) {
      if (dc.name != datacenter_) return true;
    }
    return false;
  };
  out.needs_rollout = compiled->document && a.may_roll_out && !a.received &&
                      (elsewhere(compiled.get()) || elsewhere(b.before.get()));
  out.compiled = compiled;
  // The sending data center reads only this one's own plan.
  out.diff = DiffManifests(b.before.get(), *compiled, /*per_datacenter=*/!a.received, &tree);
  ASSIGN_OR_RETURN(Checked checked, CheckDataCenter(a, b, m, opts.filename, out.diff));
  RETURN_IF_ERROR(a.cancel->Check());
  RETURN_IF_ERROR(CompareWithBefore(b.before ? &b.before->manifest : nullptr, m, a.dry_run, a.allow_downgrade,
                                    &out.warnings));
  if (checked.plans) RETURN_IF_ERROR(PlanImages(*checked.plans, a.allow_downgrade, a.dry_run, &out));
  for (const auto& w : m.warnings) out.warnings.push_back(w.ToString());
  for (auto& w : checked.warnings) out.warnings.push_back(std::move(w));

  // Resolve a --previous given as a number, tag or prefix to its uuid.
  std::string expected = a.previous;
  if (!a.previous.empty() && b.existing) {
    auto v = store_->GetVersion(b.existing->uuid, a.previous, false);
    if (!v.ok()) return Annotate(v.status(), "--previous");
    expected = v->uuid;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> thaw_freezes, FreezesToThaw(a, b, *compiled, &out));
  // A dry run, or an unchanged manifest from a writer who is up to date,
  // writes nothing: answer from what was read.
  bool noop = out.diff.empty() && (a.force || expected == out.base_version);
  if (a.dry_run || noop || out.needs_rollout) {
    if (b.current) out.commit.version = *b.current;
    return out;
  }

  NewVersion nv = VersionToCommit(*compiled, a.text, a.owner.empty() ? default_owner_ : a.owner, expected, a.force,
                                  out.warnings);
  nv.author = a.author;
  nv.origin = a.origin;
  nv.uuid = a.version_uuid;
  nv.rolled_back_to = a.rolled_back_to;
  nv.message = a.message;
  // The last point at which a caller who gave up leaves nothing behind.
  RETURN_IF_ERROR(a.cancel->Check());
  ASSIGN_OR_RETURN(out.commit, store_->CommitVersion(nv));
  if (!out.commit.changed) return out;
  for (const std::string& f : thaw_freezes) {
    auto ended = store_->SetTaskState(f, "terminated", absl::StrCat("thawed by ", a.author, " (", a.origin, " --thaw)"));
    if (!ended.ok() && !absl::IsFailedPrecondition(ended.status())) return ended.status();
  }
  Remember(out.commit.version.uuid, compiled);
  out.project_uuid = out.commit.version.project_uuid;
  for (const auto& c : out.diff.services()) {
    if (c.rolls_out()) out.rollout.push_back(c.service());
  }
  out.canary = ManifestCanary(m, out.rollout);
  if (on_change_) on_change_(out.project_uuid);
  return out;
}

absl::StatusOr<std::shared_ptr<const CompiledManifest>> ProjectsService::StoredManifest(const ProjectRecord& p,
                                                                                const std::string& version) {
  {
    absl::MutexLock l(&cache_mu_);
    auto it = parsed_.find(version);
    if (it != parsed_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(VersionRecord v, store_->GetVersion(p.uuid, version, true));
  ParseOptions opts{"(stored)", p.name};
  opts.stored = true;
  ParseResult parsed = ParseManifest(v.canonical, opts);
  if (!parsed.manifest) {
    return absl::DataLossError(absl::StrCat("stored version ", v.number, " no longer parses: ",
                                            DiagnosticsToStatus(parsed.errors, parsed.total_errors).message(),
                                            "; the store is damaged: restore a backup (docs/operations.md, \"Backup and restore\")"));
  }
  auto m = std::make_shared<const CompiledManifest>(Compile(std::move(*parsed.manifest), datacenter_));
  Remember(version, m);
  return m;
}

void ProjectsService::Remember(const std::string& version, std::shared_ptr<const CompiledManifest> m) {
  absl::MutexLock l(&cache_mu_);
  if (m->canonical.size() > kCacheBytes / 4 || parsed_.count(version)) return;
  while (!parsed_.empty() && (parsed_.size() >= 64 || parsed_bytes_ + m->canonical.size() > kCacheBytes)) {
    parsed_bytes_ -= parsed_.begin()->second->canonical.size();
    parsed_.erase(parsed_.begin());
  }
  parsed_bytes_ += m->canonical.size();
  parsed_[version] = std::move(m);
}

std::string ProjectsService::QueueRollout(const Outcome& out, const std::string& trigger, const std::string& author,
                                          std::vector<std::string>* warnings) {
  return QueueReprovision(out.project_uuid, out.rollout, out.canary, out.commit.version.uuid, trigger, author,
                          warnings);
}

std::string ProjectsService::QueueReprovision(const std::string& project_uuid, const std::vector<std::string>& services,
                                              int64_t canary, const std::string& version_uuid, const std::string& trigger,
                                              const std::string& author, std::vector<std::string>* warnings) {
  if (services.empty()) return "";
  auto not_queued = [&](const absl::Status& why) {
    warnings->push_back(absl::StrCat("the rollout of ", absl::StrJoin(services, ", "), " was not queued (",
                                     why.message(), "); run `mariposa reprovision --service …` for them"));
    return std::string();
  };
  TaskRecord t;
  t.project_uuid = project_uuid;
  t.kind = "reprovision";
  t.services = services;
  t.origin = "auto";
  t.trigger = trigger;
  t.auto_kind = "reprovision";
  t.actor = author;
  t.version_uuid = version_uuid;
  t.canary = canary;  // update.canary, as `mariposa reprovision` takes it
  auto added = TaskQueue(store_).Add(t);
  if (!added.ok()) return not_queued(added.status());
  if (on_change_) on_change_(t.project_uuid);
  return added->uuid;
}

grpc::Status ProjectsService::Apply(grpc::ServerContext* ctx, const v1::ApplyRequest* req, v1::ApplyResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  ApplyRequest a;
  a.project = req->project();
  a.text = req->manifest();
  a.filename = req->filename();
  a.previous = req->previous_version();
  a.force = req->force();
  a.dry_run = req->dry_run();
  a.origin = "apply";
  a.message = req->message();
  a.author = AuthorOf(ctx);
  a.owner = CallerAccount(ctx);
  a.cancel = &guard;
  a.thaw = req->thaw();
  a.allow_downgrade = req->allow_downgrade();
  a.admit = [ctx, req](const Manifest& m) { return AdmitManifest(ctx, m, req->dry_run()); };
  a.may_roll_out = true;
  auto out = ApplyText(a);
  if (!out.ok()) return ToGrpc(out.status());
  if (out->needs_rollout) return ToGrpc(StartRollout(a, *out, req->dry_run(), resp));
  Answer(*out, req->dry_run(), a.author, resp);
  return grpc::Status::OK;
}

void ProjectsService::Answer(Outcome& out, bool dry_run, const std::string& author, v1::ApplyResponse* resp) {
  resp->set_changed(dry_run ? !out.diff.empty() : out.commit.changed);  // a plan: would it change
  if (!out.commit.version.uuid.empty()) ToProto(out.commit.version, resp->mutable_version());
  resp->mutable_diff()->Swap(&out.diff);  // the answer's last use of it
  resp->set_base_version(out.base_version);
  resp->set_base_version_number(out.base_number);
  if (!dry_run) resp->set_rollout_task(QueueRollout(out, "apply", author, &out.warnings));
  if (!resp->rollout_task().empty()) {
    for (const auto& s : out.rollout) resp->add_rollout_services(s);
  }
  for (const auto& w : out.warnings) resp->add_warnings(w);
  resp->set_project_created(out.commit.project_created);
  resp->set_project(out.project);
}

grpc::Status ProjectsService::Rollback(grpc::ServerContext* ctx, const v1::RollbackRequest* req,
                                       v1::RollbackResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto p = Project(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  if (req->version().empty()) return ToGrpc(absl::InvalidArgumentError("the version to roll back to is required"));
  auto target = store_->GetVersion(p->uuid, req->version(), true);
  if (!target.ok()) return ToGrpc(target.status());
  ApplyRequest a;
  a.project = p->name;
  a.text = target->manifest;
  a.filename = absl::StrCat("version ", target->number);
  a.previous = req->previous_version();
  a.force = req->force();
  a.dry_run = req->dry_run();
  a.origin = "rollback";
  a.rolled_back_to = target->number;
  a.message = absl::StrCat("rollback to version ", target->number);
  a.author = AuthorOf(ctx);
  a.cancel = &guard;
  a.thaw = req->thaw();
  a.admit = [ctx, req](const Manifest& m) { return AdmitManifest(ctx, m, req->dry_run()); };
  auto out = ApplyText(a);
  if (!out.ok()) return ToGrpc(Annotate(out.status(), absl::StrCat("rolling back to version ", target->number)));
  resp->set_changed(req->dry_run() ? !out->diff.empty() : out->commit.changed);  // a plan: would it change
  if (!out->commit.version.uuid.empty()) ToProto(out->commit.version, resp->mutable_version());
  *resp->mutable_diff() = out->diff;
  resp->set_base_version(out->base_version);
  resp->set_base_version_number(out->base_number);
  std::vector<std::string> warnings;
  resp->set_rollout_task(QueueRollout(*out, "rollback", AuthorOf(ctx), &warnings));
  if (!resp->rollout_task().empty()) {
    for (const auto& s : out->rollout) resp->add_rollout_services(s);
  }
  for (const auto& w : warnings) resp->add_warnings(w);
  return grpc::Status::OK;
}

absl::StatusOr<int64_t> ProjectsService::RollbackTo(const std::string& project, const std::string& to_version,
                                                    const std::string& expected_current, const std::string& author,
                                                    const std::string& message) {
  ASSIGN_OR_RETURN(ProjectRecord p, Project(project));
  ASSIGN_OR_RETURN(VersionRecord target, store_->GetVersion(p.uuid, to_version, true));
  ApplyRequest a;
  a.project = p.name;
  a.text = target.manifest;
  a.filename = absl::StrCat("version ", target.number);
  a.previous = expected_current;
  a.origin = "rollback";
  a.rolled_back_to = target.number;
  a.message = message;
  a.author = author;
  a.cancel = NotCancelled::Get();
  ASSIGN_OR_RETURN(Outcome out, ApplyText(a));
  if (on_change_) on_change_(p.uuid);
  return out.commit.version.number;
}

absl::StatusOr<ScaleChange> ParseScaleChange(absl::string_view change) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("\"", absl::CHexEscape(change),
                                                   "\" is not SERVICE=N, SERVICE=+N or SERVICE=-N (N: 0..",
                                                   Limits::kMaxCount, ", digits only, no spaces)"));
  };
  size_t eq = change.find('=');
  if (eq == absl::string_view::npos || eq == 0) return bad();
  for (char ch : change.substr(0, eq)) {
    if (absl::ascii_isspace(static_cast<unsigned char>(ch)) || absl::ascii_iscntrl(static_cast<unsigned char>(ch))) {
      return bad();
    }
  }
  ScaleChange c;
  c.service = std::string(change.substr(0, eq));
  absl::string_view amount = change.substr(eq + 1);
  if (!amount.empty() && (amount[0] == '+' || amount[0] == '-')) {
    c.op = amount[0];
    amount.remove_prefix(1);
  }
  if (amount.empty() || amount.size() > 6 || !std::all_of(amount.begin(), amount.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(amount, &c.n) || c.n > Limits::kMaxCount) {
    return bad();
  }
  return c;
}

absl::StatusOr<int64_t> ScaledCount(const ScaleChange& c, int64_t count) {
  int64_t to = c.op == '=' ? c.n : c.op == '+' ? count + c.n : count - c.n;
  if (to >= 0 && to <= Limits::kMaxCount) return to;
  if (c.op == '=') {
    return absl::InvalidArgumentError(absl::StrCat("scaling \"", c.service, "\" to ", c.n, " is outside 0..",
                                                   Limits::kMaxCount));
  }
  return absl::InvalidArgumentError(absl::StrCat("scaling \"", c.service, "\" from ", count, " by ", std::string(1, c.op),
                                                 c.n, " gives ", to, ", outside 0..", Limits::kMaxCount));
}

grpc::Status ProjectsService::Scale(grpc::ServerContext* ctx, const v1::ScaleRequest* req, v1::ScaleResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  if (req->changes().empty()) return ToGrpc(absl::InvalidArgumentError("give at least one SERVICE=N, SERVICE=+N or SERVICE=-N"));
  std::vector<ScaleChange> changes;
  for (const std::string& change : req->changes()) {
    auto c = ParseScaleChange(change);
    if (!c.ok()) return ToGrpc(c.status());
    changes.push_back(*std::move(c));
  }
  auto p = Project(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  if (p->current_version.empty()) {
    return ToGrpc(absl::FailedPreconditionError(absl::StrCat("project ", p->name, " has no version to scale")));
  }
  auto current = StoredManifest(*p, p->current_version);
  if (!current.ok()) return ToGrpc(current.status());
  Manifest m = (*current)->manifest;
  for (const ScaleChange& c : changes) {
    auto svc = m.services.find(c.service);
    if (svc == m.services.end()) {
      return ToGrpc(absl::NotFoundError(absl::StrCat("no service \"", c.service, "\" in project ", p->name)));
    }
    if (svc->second.compute_type == "agent") {
      return ToGrpc(absl::InvalidArgumentError(
          absl::StrCat("service \"", c.service, "\" is an agent: it runs one instance per selected server")));
    }
    auto to = ScaledCount(c, svc->second.count);
    if (!to.ok()) return ToGrpc(to.status());
    svc->second.count = *to;
  }
  ApplyRequest a;
  a.project = p->name;
  a.text = CanonicalYaml(m);
  a.filename = "scale";
  a.previous = req->previous_version().empty() ? p->current_version : req->previous_version();
  a.dry_run = req->dry_run();
  a.origin = "scale";
  a.message = absl::StrCat("scale ", absl::StrJoin(req->changes(), " "));
  a.author = AuthorOf(ctx);
  a.cancel = &guard;
  a.stored_text = true;
  a.thaw = req->thaw();
  a.admit = [ctx, req](const Manifest& m) { return AdmitManifest(ctx, m, req->dry_run()); };
  auto out = ApplyText(a);
  if (!out.ok()) return ToGrpc(Annotate(out.status(), "scaling"));
  resp->set_changed(req->dry_run() ? !out->diff.empty() : out->commit.changed);  // a plan: would it change
  if (!out->commit.version.uuid.empty()) ToProto(out->commit.version, resp->mutable_version());
  *resp->mutable_diff() = out->diff;
  return grpc::Status::OK;
}

grpc::Status ProjectsService::CreateProject(grpc::ServerContext* ctx, const v1::CreateProjectRequest* req,
                                            v1::CreateProjectResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  std::string owner = req->owner_uuid();
  if (owner.empty()) {
    // A Triton caller's projects are its account's.
    owner = CallerAccount(ctx);
    if (owner.empty()) owner = default_owner_;
  } else {
    // Another account's instances: only an admin may say whose (the guard
    // asked for CreateProject#owner).
    if (!IsUuid(owner)) {
      return ToGrpc(absl::InvalidArgumentError(absl::StrCat(
          "owner \"", absl::CHexEscape(owner), "\" is not a uuid; give the Triton account's uuid "
          "(`sdc-useradm get LOGIN` shows it); nothing was created")));
    }
  }
  auto p = store_->CreateProject(req->name(), req->description(), AuthorOf(ctx), owner);
  if (!p.ok()) return ToGrpc(p.status());
  ToProto(*p, resp->mutable_project());
  return grpc::Status::OK;
}

grpc::Status ProjectsService::ListProjects(grpc::ServerContext* ctx, const v1::ListProjectsRequest*,
                                           v1::ListProjectsResponse* resp) {
  auto list = store_->ListProjects();
  if (!list.ok()) return ToGrpc(list.status());
  for (const auto& p : *list) {
    if (CanSee(ctx, p.name)) ToProto(p, resp->add_projects());
  }
  return grpc::Status::OK;
}

grpc::Status ProjectsService::GetProject(grpc::ServerContext* ctx, const v1::GetProjectRequest* req,
                                         v1::GetProjectResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto p = Project(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  ToProto(*p, resp->mutable_project());
  if (!p->current_version.empty()) {
    auto svcs = store_->ListServices(p->current_version);
    if (!svcs.ok()) return ToGrpc(svcs.status());
    for (const auto& s : *svcs) ToProto(s, resp->mutable_project()->add_services());
    auto groups = store_->ListGroups(p->current_version);
    if (!groups.ok()) return ToGrpc(groups.status());
    for (const auto& g : *groups) {
      auto* pg = resp->mutable_project()->add_deployment_groups();
      pg->set_name(g.name);
      for (const auto& s : g.services) pg->add_services(s);
    }
  }
  return grpc::Status::OK;
}

grpc::Status ProjectsService::DeleteProject(grpc::ServerContext* ctx, const v1::DeleteProjectRequest* req,
                                            v1::DeleteProjectResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto s = Required(req->project(), "project");
  if (!s.ok()) return ToGrpc(s);
  auto p = store_->GetProject(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  if (data_center_ != nullptr) {
    // With a data center attached, what the project has there goes first:
    // deleting only the goal state would orphan its instances, firewall
    // rules, fabric and volumes. Its agents are uninstalled as well.
    auto held = data_center_->Holdings(p->uuid);
    if (!held.ok()) return ToGrpc(Annotate(held.status(), "reading what the project has in the data center"));
    const int64_t n = held->instances;
    std::vector<std::string> agents, core;
    std::map<std::string, VolumeSpec> volumes;  // the current version's
    if (!p->current_version.empty()) {
      auto stored = StoredManifest(*p, p->current_version);
      if (!stored.ok()) return ToGrpc(stored.status());
      for (const auto& kv : (*stored)->manifest.services) {
        if (kv.second.compute_type == "agent") agents.push_back(kv.first);
        if (kv.second.compute_type == "core") core.push_back(kv.first);
      }
      volumes = (*stored)->manifest.volumes;
    }
    if (n > 0 || !agents.empty() || held->OwnsMore()) {
      if (!core.empty()) {  // core zones are never destroyed by a project's deletion
        return ToGrpc(absl::FailedPreconditionError(absl::StrCat(
            "project ", p->name, " manages Triton core zones (", absl::StrJoin(core, ", "),
            "); deleting it would destroy them, so it is refused. To really destroy them, apply a manifest "
            "without them (`mariposa apply --force`) first, then delete the project")));
      }
      if (!req->force() && (n > 0 || !agents.empty())) {
        std::string what = n > 0 ? absl::StrCat(n, " instances") : "";
        if (!agents.empty()) {
          absl::StrAppend(&what, what.empty() ? "" : " and ", "agent services (", absl::StrJoin(agents, ", "),
                          ") installed on its servers");
        }
        return ToGrpc(absl::FailedPreconditionError(absl::StrCat(
            "project ", p->name, " has ", what, "; `mariposa project delete ", p->name,
            " --force` removes them (agents are uninstalled) and then the project")));
      }
      DeletionPlan plan = PlanDeletion(*held, agents, volumes, req->delete_volumes());
      for (const std::string& r : plan.retains) resp->add_retains(r);
      if (plan.removes.empty()) {
        // Only what it keeps is left (a volume retained earlier): nothing to
        // wait for. What is kept is said where the deletion is read.
        for (const std::string& r : plan.retains) {
          auto said = store_->AppendEvent(AuthorOf(ctx), p->name, "project.retained", p->uuid,
                                          absl::StrCat(r, " (kept when the project was deleted)"));
          if (!said.ok()) return ToGrpc(said.status());
        }
        return ToGrpc(store_->DeleteProject(p->uuid, AuthorOf(ctx)));
      }
      std::string detail = absl::StrCat("removed first: ", absl::StrJoin(plan.removes, "; "), "; then the project");
      if (!plan.retains.empty()) absl::StrAppend(&detail, "; kept: ", absl::StrJoin(plan.retains, "; "));
      for (std::string& r : plan.removes) resp->add_removes(std::move(r));
      auto marked = store_->MarkProjectDeleting(p->uuid, AuthorOf(ctx), req->delete_volumes(), detail);
      if (!marked.ok()) return ToGrpc(marked);
      resp->set_instances_to_remove(n);
      resp->set_pending(true);
      if (on_change_) on_change_(p->uuid);
      return grpc::Status::OK;
    }
  }
  return ToGrpc(store_->DeleteProject(p->uuid, AuthorOf(ctx)));
}

grpc::Status ProjectsService::ListVersions(grpc::ServerContext* ctx, const v1::ListVersionsRequest* req,
                                           v1::ListVersionsResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto p = Project(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  auto list = store_->ListVersions(p->uuid);
  if (!list.ok()) return ToGrpc(list.status());
  for (const auto& v : *list) ToProto(v, resp->add_versions());
  return grpc::Status::OK;
}

grpc::Status ProjectsService::GetVersion(grpc::ServerContext* ctx, const v1::GetVersionRequest* req,
                                         v1::GetVersionResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto p = Project(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  auto v = store_->GetVersion(p->uuid, req->version().empty() ? "current" : req->version(), req->include_manifest());
  if (!v.ok()) return ToGrpc(v.status());
  ToProto(*v, resp->mutable_version());
  auto svcs = store_->ListServices(v->uuid);
  if (!svcs.ok()) return ToGrpc(svcs.status());
  for (const auto& s : *svcs) ToProto(s, resp->add_services());
  auto groups = store_->ListGroups(v->uuid);
  if (!groups.ok()) return ToGrpc(groups.status());
  for (const auto& g : *groups) {
    auto* pg = resp->add_deployment_groups();
    pg->set_name(g.name);
    for (const auto& s : g.services) pg->add_services(s);
  }
  if (!req->diff_from().empty()) {
    // Both compiled from their stored canonical text (cached by uuid).
    auto from = store_->GetVersion(p->uuid, req->diff_from(), false);
    if (!from.ok()) return ToGrpc(from.status());
    auto before = StoredManifest(*p, from->uuid);
    if (!before.ok()) return ToGrpc(before.status());
    auto after = StoredManifest(*p, v->uuid);
    if (!after.ok()) return ToGrpc(after.status());
    *resp->mutable_diff() = DiffManifests(before->get(), **after);
  }
  return grpc::Status::OK;
}

grpc::Status ProjectsService::TagVersion(grpc::ServerContext* ctx, const v1::TagVersionRequest* req,
                                         v1::TagVersionResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto p = Project(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  auto v = store_->TagVersion(p->uuid, req->version(), req->tag(), AuthorOf(ctx));
  if (!v.ok()) return ToGrpc(v.status());
  ToProto(*v, resp->mutable_version());
  return grpc::Status::OK;
}

grpc::Status ProjectsService::ListEvents(grpc::ServerContext* ctx, const v1::ListEventsRequest* req,
                                         v1::ListEventsResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  if (absl::Status s = CheckRange("limit", req->limit(), 0, std::numeric_limits<int32_t>::max(),
                                  "0 = the default 100; more than 1000 gives 1000");
      !s.ok()) {
    return ToGrpc(s);
  }
  if (absl::Status s = CheckRange("after_index", req->after_index(), 0, std::numeric_limits<int64_t>::max(),
                                  "0 = from the first event");
      !s.ok()) {
    return ToGrpc(s);
  }
  int limit = req->limit() == 0 ? 100 : static_cast<int>(std::min<int64_t>(req->limit(), Limits::kMaxListLimit));
  const std::vector<std::string> kinds(req->kinds().begin(), req->kinds().end());
  if (kinds.size() > 32) {
    return ToGrpc(absl::InvalidArgumentError(
        absl::StrCat("kinds: ", kinds.size(), " given, at most 32; name a prefix (\"volume.\") for many kinds")));
  }
  for (const std::string& k : kinds) {
    if (k.empty() || k == ".") {
      return ToGrpc(absl::InvalidArgumentError(
          "kinds: an empty kind; give a kind (\"volume.deleted\") or a prefix ending in \".\" (\"volume.\")"));
    }
  }
  auto list = req->newest() ? store_->ListNewestEvents(req->project(), req->after_index(), limit, kinds)
                            : store_->ListEvents(req->project(), req->after_index(), limit, kinds);
  if (!list.ok()) return ToGrpc(list.status());
  for (const auto& e : *list) {
    if (CanSee(ctx, e.project)) EventToProto(e, resp->add_events());
  }
  // What else there is, so that a reader knows it saw a window.
  if (!list->empty()) {
    auto earlier = store_->CountEvents(req->project(), req->after_index(), list->front().index, kinds);
    auto later = store_->CountEvents(req->project(), list->back().index, std::numeric_limits<int64_t>::max(), kinds);
    if (!earlier.ok()) return ToGrpc(earlier.status());
    if (!later.ok()) return ToGrpc(later.status());
    resp->set_earlier(*earlier);
    resp->set_later(*later);
  }
  return grpc::Status::OK;
}

// Events are read back from a store that may be damaged; protobuf refuses
// invalid UTF-8 in strings, so broken bytes become U+FFFD.
}  // namespace mariposa
