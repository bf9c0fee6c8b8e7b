#include "convergence/api/images_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "convergence/decide/images.h"
#include "projects/access.h"
#include "projects/api_edge.h"
#include "projects/request_guard.h"

namespace mariposa::convergence {
namespace {

// Imports and creates are waited for this long before the call answers.
constexpr absl::Duration kJobWait = absl::Minutes(10);

void ToProto(const triton::Image& i, const std::string& where, v1::Image* out) {
  out->set_uuid(i.uuid);
  out->set_name(i.name);
  out->set_version(i.version);
  out->set_state(i.state);
  out->set_type(i.type);
  out->set_os(i.os);
  out->set_size(i.size);
  out->set_published_at(i.published_at);
  for (const std::string& c : i.channels) out->add_channels(c);
  out->set_changes(i.changes);
  out->set_origin(i.origin);
  out->set_where(where);
  out->set_owner(i.owner);
}

std::string NameOf(const std::string& ref) { return ref.substr(0, ref.rfind('@')); }

}  // namespace

absl::Status ImagesService::Ready(bool need_source) const {
  if (o_.imgapi == nullptr) {
    return absl::FailedPreconditionError("mariposad runs without --triton: there is no IMGAPI to ask");
  }
  if (need_source && o_.source == nullptr) {
    return absl::FailedPreconditionError(
        "no image source is configured; start mariposad with --image-source URL (and --image-channel NAME)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<triton::Image>> ImagesService::SourceImages(const std::string& name) const {
  if (o_.source == nullptr) return std::vector<triton::Image>{};
  triton::ImageFilter f;
  f.name = name;
  f.channel = o_.channel;
  auto got = o_.source->ListImages(f);
  if (!got.ok()) {
    return absl::UnavailableError(absl::StrCat("the image source ", o_.source_url, " could not be read: ",
                                               got.status().message()));
  }
  return got;
}

grpc::Status ImagesService::List(grpc::ServerContext* /*ctx*/, const v1::ListImagesRequest* req,
                                 v1::ListImagesResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (absl::Status ready = Ready(req->source()); !ready.ok()) return ToGrpc(ready);
  resp->set_source(o_.source_url);
  resp->set_channel(o_.channel);
  absl::StatusOr<std::vector<triton::Image>> images;
  if (req->source()) {
    images = SourceImages(req->name());
  } else {
    triton::ImageFilter f;
    f.name = req->name();
    images = o_.imgapi->ListImages(f);
  }
  if (!images.ok()) return ToGrpc(images.status());
  for (const triton::Image& i : *images) ToProto(i, req->source() ? "source" : "imgapi", resp->add_images());
  return grpc::Status::OK;
}

grpc::Status ImagesService::Get(grpc::ServerContext* /*ctx*/, const v1::GetImageRequest* req, v1::GetImageResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (absl::Status ready = Ready(false); !ready.ok()) return ToGrpc(ready);
  if (req->image().empty()) return ToGrpc(absl::InvalidArgumentError("name an image: a uuid or name@version"));
  auto image = o_.resolve(req->image());
  if (!image.ok()) return ToGrpc(image.status());
  ToProto(*image, image->source.empty() ? "imgapi" : "source", resp->mutable_image());
  return grpc::Status::OK;
}

grpc::Status ImagesService::Avail(grpc::ServerContext* ctx, const v1::AvailRequest* req, v1::AvailResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (absl::Status ready = Ready(true); !ready.ok()) return ToGrpc(ready);
  resp->set_source(o_.source_url);
  resp->set_channel(o_.channel);
  std::vector<ProjectRecord> projects;
  if (req->project().empty()) {
    auto all = store_->ListProjects();
    if (!all.ok()) return ToGrpc(all.status());
    for (ProjectRecord& p : *all) {
      if (CanSee(ctx, p.name)) projects.push_back(std::move(p));
    }
  } else {
    auto p = store_->GetProject(req->project());
    if (!p.ok()) return ToGrpc(p.status());
    projects.push_back(*p);
  }
  std::vector<std::string> wanted(req->services().begin(), req->services().end());
  std::vector<std::string> found;
  for (const ProjectRecord& p : projects) {
    if (p.current_version.empty()) continue;
    auto services = store_->ListServices(p.current_version);
    if (!services.ok()) return ToGrpc(services.status());
    for (const ServiceRecord& s : *services) {
      if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), s.name) == wanted.end()) continue;
      found.push_back(s.name);
      v1::AvailService* out = resp->add_services();
      out->set_project(p.name);
      out->set_service(s.name);
      out->set_compute_type(s.compute_type);
      auto current = o_.resolve(s.image);
      if (!current.ok()) {
        out->set_error(std::string(current.status().message()));
        out->mutable_current()->set_name(NameOf(s.image));
        continue;
      }
      ToProto(*current, current->source.empty() ? "imgapi" : "source", out->mutable_current());
      auto candidates = SourceImages(current->name);
      if (!candidates.ok()) return ToGrpc(candidates.status());
      for (const triton::Image& i : NewerImages(current->version, *candidates, req->all())) {
        ToProto(i, "source", out->add_newer());
      }
    }
  }
  for (const std::string& w : wanted) {
    if (std::find(found.begin(), found.end(), w) == found.end()) {
      return ToGrpc(absl::NotFoundError(absl::StrCat("no service \"", w, "\"",
                                                     req->project().empty() ? " in any project"
                                                                            : " in project " + req->project())));
    }
  }
  return grpc::Status::OK;
}

grpc::Status ImagesService::Changes(grpc::ServerContext* /*ctx*/, const v1::ChangesRequest* req, v1::ChangesResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (absl::Status ready = Ready(true); !ready.ok()) return ToGrpc(ready);
  if (req->name().empty() || req->from().empty() || req->to().empty()) {
    return ToGrpc(absl::InvalidArgumentError("give an image name and two versions: changes NAME FROM TO"));
  }
  if (CompareVersions(req->from(), req->to()) >= 0) {
    return ToGrpc(absl::InvalidArgumentError(absl::StrCat("FROM (", req->from(), ") must be older than TO (",
                                                          req->to(), "); swap them to read a downgrade's changes")));
  }
  auto all = SourceImages(req->name());
  if (!all.ok()) return ToGrpc(all.status());
  // The local IMGAPI's versions count too (an image may have left the source's channel).
  triton::ImageFilter f;
  f.name = req->name();
  auto local = o_.imgapi->ListImages(f);
  std::vector<triton::Image> candidates = *all;
  if (local.ok()) {
    for (const triton::Image& i : *local) {
      bool dup = false;
      for (const triton::Image& c : candidates) dup |= c.uuid == i.uuid;
      if (!dup) candidates.push_back(i);
    }
  }
  bool to_exists = false;
  for (const triton::Image& i : candidates) to_exists |= CompareVersions(i.version, req->to()) == 0;
  if (!to_exists) {
    std::vector<std::string> versions;
    for (const triton::Image& i : candidates) versions.push_back(i.version);
    std::vector<std::string> near = NearestVersions(req->to(), versions);
    return ToGrpc(absl::NotFoundError(absl::StrCat("no version ", req->to(), " of ", req->name(),
                                                   " in IMGAPI or the image source",
                                                   near.empty() ? "" : "; nearest: " + absl::StrJoin(near, ", "))));
  }
  for (const triton::Image& i : ImagesBetween(req->from(), req->to(), candidates)) {
    ToProto(i, "source", resp->add_images());
  }
  return grpc::Status::OK;
}

grpc::Status ImagesService::Import(grpc::ServerContext* /*ctx*/, const v1::ImportImageRequest* req,
                                   v1::ImportImageResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (absl::Status ready = Ready(true); !ready.ok()) return ToGrpc(ready);
  auto image = o_.resolve(req->image());
  if (!image.ok()) return ToGrpc(image.status());
  if (image->source.empty()) {
    resp->set_already(true);
    ToProto(*image, "imgapi", resp->mutable_image());
    return grpc::Status::OK;
  }
  auto job = o_.imgapi->ImportRemote(image->uuid, image->source);
  if (!job.ok() && absl::IsAlreadyExists(job.status())) {
    auto there = o_.imgapi->GetImage(image->uuid);
    if (!there.ok() || there->state != "active") {
      return ToGrpc(absl::FailedPreconditionError(absl::StrCat(
          "IMGAPI holds ", image->name, "@", image->version, " (", image->uuid, ") in state ",
          there.ok() ? there->state : std::string(there.status().message()), "; delete it there, then import again")));
    }
    resp->set_already(true);
  } else if (!job.ok()) {
    return ToGrpc(job.status());
  } else {
    resp->set_job_uuid(job->job_uuid);
    auto done = o_.imgapi->WaitJob(*job, kJobWait);
    if (!done.ok()) return ToGrpc(done.status());
    if (done->execution != "succeeded") {
      return ToGrpc(absl::AbortedError(absl::StrCat("importing ", image->name, "@", image->version, " (job ",
                                                    job->job_uuid, ") ", done->execution, ": ", done->error)));
    }
  }
  if (o_.on_change) o_.on_change();
  auto now = o_.imgapi->GetImage(image->uuid);
  ToProto(now.ok() ? *now : *image, "imgapi", resp->mutable_image());
  return grpc::Status::OK;
}

grpc::Status ImagesService::Create(grpc::ServerContext* /*ctx*/, const v1::CreateImageRequest* req,
                                   v1::CreateImageResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (absl::Status ready = Ready(false); !ready.ok()) return ToGrpc(ready);
  if (!IsUuid(req->instance())) {
    return ToGrpc(absl::InvalidArgumentError(absl::StrCat(
        "--from must be the prototype instance's uuid (`mariposa status -v` lists them), not \"", req->instance(),
        "\"")));
  }
  if (req->name().empty() || req->version().empty()) {
    return ToGrpc(absl::InvalidArgumentError("give the new image's --name and --version"));
  }
  auto exists = o_.resolve(absl::StrCat(req->name(), "@", req->version()));
  if (exists.ok()) {
    return ToGrpc(absl::AlreadyExistsError(absl::StrCat("image ", req->name(), "@", req->version(), " exists already (",
                                                        exists->uuid, "); give a new --version")));
  }
  auto job = o_.imgapi->CreateFromVm(req->instance(), req->name(), req->version(), req->prepare_script());
  if (!job.ok()) return ToGrpc(job.status());
  resp->set_job_uuid(job->job_uuid);
  auto done = o_.imgapi->WaitJob(*job, kJobWait);
  if (!done.ok()) return ToGrpc(done.status());
  for (const std::string& s : done->steps) resp->add_steps(s);
  if (done->execution != "succeeded") {
    return ToGrpc(absl::AbortedError(absl::StrCat("creating ", req->name(), "@", req->version(), " from ",
                                                  req->instance(), " (job ", job->job_uuid, ") ", done->execution,
                                                  ": ", done->error)));
  }
  if (o_.on_change) o_.on_change();
  auto image = o_.imgapi->GetImage(job->image_uuid);
  if (!image.ok()) return ToGrpc(image.status());
  ToProto(*image, "imgapi", resp->mutable_image());
  return grpc::Status::OK;
}

}  // namespace mariposa::convergence
