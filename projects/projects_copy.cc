// The Projects service's copy (issue 52, point 6): a new project made of
// another's current version, its meta and its secrets. `project move` is
// the CLI's: a copy, a wait until it converged, then the source's deletion.
#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "projects/copy.h"
#include "projects/limits.h"
#include "projects/projects_service.h"
#include "projects/projects_service_parts.h"
#include "projects/request_guard.h"

namespace mariposa {
namespace {
using projects_parts::AdmitManifest;
using projects_parts::ToProto;

// The copy's meta: the source's (unless none is copied) with the caller's
// KEY=VALUE over it; secrets apart. INVALID_ARGUMENT for a bad --meta.
absl::Status CopiedMeta(const std::vector<MetaRecord>& source, const v1::CopyProjectRequest& req,
                        std::map<std::string, std::string>* plain, std::map<std::string, std::string>* secrets) {
  if (!req.no_meta()) {
    for (const MetaRecord& m : source) (m.secret ? *secrets : *plain)[m.key] = m.value;
  }
  for (const std::string& kv : req.meta()) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--meta \"", absl::CHexEscape(kv),
                                                     "\": give KEY=VALUE (the copy's value of KEY)"));
    }
    std::string key = kv.substr(0, eq);
    if (secrets->erase(key) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--meta ", key, ": a secret of the source; a copy's secret is set with `mariposa -j ", req.target(),
          " meta set --secret ", key, " VALUE` after the copy (or copy with --no-meta)"));
    }
    (*plain)[key] = kv.substr(eq + 1);
  }
  return absl::OkStatus();
}

}  // namespace

grpc::Status ProjectsService::CopyProject(grpc::ServerContext* ctx, const v1::CopyProjectRequest* req,
                                          v1::CopyProjectResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  if (req->source().empty() || req->target().empty()) {
    return ToGrpc(absl::InvalidArgumentError("give the project to copy (SRC) and the copy's name (DST)"));
  }
  // Its secrets go with it: the source needs as much as the copy.
  if (grpc::Status st = Authorize(ctx, req->source(), req->dry_run() ? "dry-run" : "source"); !st.ok()) return st;
  auto src = store_->GetProjectWithCurrent(req->source());
  if (!src.ok()) return ToGrpc(src.status());
  const ProjectRecord& from = src->first;
  if (!src->second) {
    return ToGrpc(absl::FailedPreconditionError(
        absl::StrCat("project ", from.name, " has no version to copy; apply a manifest to it first")));
  }
  const bool elsewhere = !req->datacenter().empty();
  if (elsewhere && !peer_copier_) {
    return ToGrpc(absl::FailedPreconditionError(absl::StrCat(
        "--datacenter ", req->datacenter(), ": this mariposad knows no other data center (mariposad --datacenter "
        "NAME --peers …; `mariposa datacenters`); nothing was changed")));
  }
  auto version = store_->GetVersion(from.uuid, src->second->uuid, /*include_text=*/true);
  if (!version.ok()) return ToGrpc(version.status());
  auto text = CopiedManifest(version->manifest, req->target(),
                             std::vector<std::string>(req->set().begin(), req->set().end()));
  if (!text.ok()) return ToGrpc(Annotate(text.status(), "nothing was changed"));
  auto source_meta = store_->ListMeta(from.uuid);
  if (!source_meta.ok()) return ToGrpc(source_meta.status());
  Copy c;
  c.target = req->target();
  c.text = *text;
  c.origin = absl::StrCat(from.name, " version ", version->number);
  c.owner = from.owner;
  c.overrides = req->set_size();
  c.dry_run = req->dry_run();
  if (absl::Status st = CopiedMeta(*source_meta, *req, &c.plain, &c.secrets); !st.ok()) return ToGrpc(st);
  if (elsewhere) {
    // Made there, by that data center's rules and catalog, under the token
    // this one holds for it; the caller here is named in its origin.
    v1::ReceiveCopyRequest send;
    send.set_target(c.target);
    send.set_manifest(c.text);
    for (const auto& [k, v] : c.plain) (*send.mutable_meta())[k] = v;
    for (const auto& [k, v] : c.secrets) (*send.mutable_secrets())[k] = v;
    send.set_dry_run(c.dry_run);
    send.set_origin(absl::StrCat(c.origin, " in ", peer_self_, ", by ", AuthorOf(ctx)));
    auto there = peer_copier_(req->datacenter(), send);
    if (!there.ok()) return ToGrpc(there.status());
    *resp = *std::move(there);
    resp->set_source_version(version->number);
    return grpc::Status::OK;
  }
  resp->set_source_version(version->number);
  return ToGrpc(MakeCopy(ctx, &guard, c, resp));
}

grpc::Status ProjectsService::ReceiveCopy(grpc::ServerContext* ctx, const v1::ReceiveCopyRequest* req,
                                          v1::CopyProjectResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  if (req->target().empty()) return ToGrpc(absl::InvalidArgumentError("the copy's name (target) is required"));
  Copy c;
  c.target = req->target();
  // Named by its target, written as a copy's manifest is (a fixed point:
  // what the sending data center wrote comes out the same).
  auto text = CopiedManifest(req->manifest(), c.target, {});
  if (!text.ok()) return ToGrpc(Annotate(text.status(), "nothing was changed"));
  c.text = *std::move(text);
  c.origin = req->origin().empty() ? "another data center" : req->origin();
  c.owner = default_owner_;
  c.dry_run = req->dry_run();
  for (const auto& [k, v] : req->meta()) c.plain[k] = v;
  for (const auto& [k, v] : req->secrets()) c.secrets[k] = v;
  for (const auto& [k, v] : c.plain) {
    if (absl::Status st = CheckMetaKey(k); !st.ok()) return ToGrpc(st);
  }
  for (const auto& [k, v] : c.secrets) {
    if (absl::Status st = CheckMetaKey(k); !st.ok()) return ToGrpc(st);
  }
  return ToGrpc(MakeCopy(ctx, &guard, c, resp));
}

// A copy made here: planned in full first (a refusal makes nothing), then
// the project, its meta (a template reads it at apply), its first version;
// a failure on the way removes what was made.
absl::Status ProjectsService::MakeCopy(grpc::ServerContext* ctx, const Cancellation* cancel, const Copy& c,
                                       v1::CopyProjectResponse* resp) {
  if (auto there = store_->GetProject(c.target); there.ok()) {
    return absl::AlreadyExistsError(absl::StrCat(
        "project ", c.target, " exists; a copy makes a new project: give another name, or delete ", c.target,
        " first (`mariposa project delete ", c.target, "`); nothing was changed"));
  } else if (!absl::IsNotFound(there.status())) {
    return there.status();
  }
  std::map<std::string, std::string> all = c.plain;
  all.insert(c.secrets.begin(), c.secrets.end());
  ApplyRequest a;
  a.project = c.target;
  a.text = c.text;
  a.filename = absl::StrCat("copy of ", c.origin);
  a.force = true;  // a new project: there is no version to have started from
  a.origin = "apply";
  a.message = absl::StrCat("copy of ", c.origin);
  a.author = AuthorOf(ctx);
  a.cancel = cancel;
  a.new_meta = &all;
  const bool dry_run = c.dry_run;
  a.admit = [ctx, dry_run](const Manifest& m) { return AdmitManifest(ctx, m, dry_run); };
  resp->set_manifest(c.text);
  resp->set_meta_copied(static_cast<int32_t>(c.plain.size()));
  resp->set_secrets_copied(static_cast<int32_t>(c.secrets.size()));
  a.dry_run = true;
  auto plan = ApplyText(a);
  if (!plan.ok()) return plan.status();
  if (c.dry_run) {
    *resp->mutable_diff() = plan->diff;
    for (const auto& w : plan->warnings) resp->add_warnings(w);
    return absl::OkStatus();
  }
  a.dry_run = false;
  std::string author = AuthorOf(ctx);
  // Its description is the manifest's, as for any project (--set description=…).
  auto made = store_->CreateProject(c.target, absl::StrCat("copy of ", c.origin), author, c.owner);
  if (!made.ok()) return made.status();
  auto undo = [&](absl::Status why) {
    absl::Status gone = store_->DeleteProject(made->uuid, author);
    std::string left = gone.ok() ? "the half-made copy was removed"
                                 : absl::StrCat("the half-made copy could not be removed (", gone.message(),
                                                "): delete it with `mariposa project delete ", c.target, "`");
    return absl::Status(why.code(), absl::StrCat(why.message(), "; ", left));
  };
  if (!c.plain.empty()) {
    if (auto n = store_->ImportMeta(made->uuid, c.plain, /*secret=*/false, author); !n.ok()) return undo(n.status());
  }
  if (!c.secrets.empty()) {
    if (auto n = store_->ImportMeta(made->uuid, c.secrets, /*secret=*/true, author); !n.ok()) return undo(n.status());
  }
  auto out = ApplyText(a);
  if (!out.ok()) return undo(out.status());
  auto copy = store_->GetProject(made->uuid);
  if (!copy.ok()) return copy.status();
  ToProto(*copy, resp->mutable_project());
  ToProto(out->commit.version, resp->mutable_version());
  *resp->mutable_diff() = out->diff;
  for (const auto& w : out->warnings) resp->add_warnings(w);
  auto said = store_->AppendEvent(author, copy->name, "project.copy", copy->uuid,
                                  absl::StrCat("copied from ", c.origin, " (", c.overrides, " overrides, ",
                                               c.plain.size(), " meta keys, ", c.secrets.size(),
                                               " secrets re-sealed)"));
  if (!said.ok()) resp->add_warnings(absl::StrCat("the event project.copy was not recorded: ", said.status().message()));
  if (on_change_) on_change_(copy->uuid);
  return absl::OkStatus();
}

}  // namespace mariposa
