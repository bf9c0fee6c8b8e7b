// The Projects service's copy (issue 52, point 6): a new project made of
// another's current version, its meta and its secrets. `project move` is
// the CLI's: a copy, a wait until it converged, then the source's deletion.
#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "projects/copy.h"
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
  if (auto there = store_->GetProject(req->target()); there.ok()) {
    return ToGrpc(absl::AlreadyExistsError(absl::StrCat(
        "project ", req->target(), " exists; a copy makes a new project: give another name, or delete ",
        req->target(), " first (`mariposa project delete ", req->target(), "`); nothing was changed")));
  } else if (!absl::IsNotFound(there.status())) {
    return ToGrpc(there.status());
  }
  auto version = store_->GetVersion(from.uuid, src->second->uuid, /*include_text=*/true);
  if (!version.ok()) return ToGrpc(version.status());
  auto text = CopiedManifest(version->manifest, req->target(),
                             std::vector<std::string>(req->set().begin(), req->set().end()));
  if (!text.ok()) return ToGrpc(Annotate(text.status(), "nothing was changed"));
  auto source_meta = store_->ListMeta(from.uuid);
  if (!source_meta.ok()) return ToGrpc(source_meta.status());
  std::map<std::string, std::string> plain, secrets;
  if (absl::Status st = CopiedMeta(*source_meta, *req, &plain, &secrets); !st.ok()) return ToGrpc(st);
  std::map<std::string, std::string> all = plain;
  all.insert(secrets.begin(), secrets.end());

  ApplyRequest a;
  a.project = req->target();
  a.text = *text;
  a.filename = absl::StrCat("copy of ", from.name, " version ", version->number);
  a.force = true;  // a new project: there is no version to have started from
  a.origin = "apply";
  a.message = absl::StrCat("copy of ", from.name, " version ", version->number);
  a.author = AuthorOf(ctx);
  a.cancel = &guard;
  a.new_meta = &all;
  a.admit = [ctx, req](const Manifest& m) { return AdmitManifest(ctx, m, req->dry_run()); };
  resp->set_manifest(*text);
  resp->set_source_version(version->number);
  resp->set_meta_copied(static_cast<int32_t>(plain.size()));
  resp->set_secrets_copied(static_cast<int32_t>(secrets.size()));
  // Checked in full before anything is made: a copy that would be refused
  // leaves no project behind, not even for a moment.
  a.dry_run = true;
  auto plan = ApplyText(a);
  if (!plan.ok()) return ToGrpc(plan.status());
  if (req->dry_run()) {
    *resp->mutable_diff() = plan->diff;
    for (const auto& w : plan->warnings) resp->add_warnings(w);
    return grpc::Status::OK;
  }
  a.dry_run = false;
  // The project, then its meta (a template reads it at apply), then its
  // first version; a failure on the way removes what was made.
  std::string author = AuthorOf(ctx);
  // Its description is the manifest's, as for any project (--set description=…).
  auto made = store_->CreateProject(req->target(), absl::StrCat("copy of ", from.name), author, from.owner);
  if (!made.ok()) return ToGrpc(made.status());
  auto undo = [&](absl::Status why) {
    absl::Status gone = store_->DeleteProject(made->uuid, author);
    std::string left = gone.ok() ? "the half-made copy was removed"
                                 : absl::StrCat("the half-made copy could not be removed (", gone.message(),
                                                "): delete it with `mariposa project delete ", req->target(), "`");
    return ToGrpc(absl::Status(why.code(), absl::StrCat(why.message(), "; ", left)));
  };
  if (!plain.empty()) {
    if (auto n = store_->ImportMeta(made->uuid, plain, /*secret=*/false, author); !n.ok()) return undo(n.status());
  }
  if (!secrets.empty()) {
    if (auto n = store_->ImportMeta(made->uuid, secrets, /*secret=*/true, author); !n.ok()) return undo(n.status());
  }
  auto out = ApplyText(a);
  if (!out.ok()) return undo(out.status());
  auto copy = store_->GetProject(made->uuid);
  if (!copy.ok()) return ToGrpc(copy.status());
  ToProto(*copy, resp->mutable_project());
  ToProto(out->commit.version, resp->mutable_version());
  *resp->mutable_diff() = out->diff;
  for (const auto& w : out->warnings) resp->add_warnings(w);
  auto said = store_->AppendEvent(author, copy->name, "project.copy", copy->uuid,
                                  absl::StrCat("copied from ", from.name, " version ", version->number, " (",
                                               req->set_size(), " overrides, ", plain.size(), " meta keys, ",
                                               secrets.size(), " secrets re-sealed)"));
  if (!said.ok()) resp->add_warnings(absl::StrCat("the event project.copy was not recorded: ", said.status().message()));
  if (on_change_) on_change_(copy->uuid);
  return grpc::Status::OK;
}

}  // namespace mariposa
