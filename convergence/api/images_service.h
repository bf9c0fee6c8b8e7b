// The gRPC Images service: IMGAPI's and the image source's images, what
// newer versions the services could run (sdcadm avail), change logs,
// imports and images created from an instance (RFD 109). Thread-safe.
#ifndef MARIPOSA_CONVERGENCE_IMAGES_SERVICE_H_
#define MARIPOSA_CONVERGENCE_IMAGES_SERVICE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "convergence/triton/clients.h"
#include "mariposa/v1/images.grpc.pb.h"
#include "projects/store.h"

namespace mariposa::convergence {

struct ImagesServiceOptions {
  triton::ImgapiClient* imgapi = nullptr;  // null: every call answers FAILED_PRECONDITION (no --triton)
  triton::ImgapiClient* source = nullptr;  // optional
  std::string source_url;
  std::string channel;
  // name@version or uuid -> the image, IMGAPI first, then the source
  // (Image::source set); NOT_FOUND names the nearest versions.
  std::function<absl::StatusOr<triton::Image>(const std::string&)> resolve;
  // Called after an import or a create (the controller's images are stale).
  std::function<void()> on_change;
};

class ImagesService final : public v1::Images::Service {
 public:
  // `store` and the clients must outlive the service.
  ImagesService(ProjectStore* store, ImagesServiceOptions options) : store_(store), o_(std::move(options)) {}

  grpc::Status List(grpc::ServerContext*, const v1::ListImagesRequest*, v1::ListImagesResponse*) override;
  grpc::Status Get(grpc::ServerContext*, const v1::GetImageRequest*, v1::GetImageResponse*) override;
  grpc::Status Avail(grpc::ServerContext*, const v1::AvailRequest*, v1::AvailResponse*) override;
  grpc::Status Changes(grpc::ServerContext*, const v1::ChangesRequest*, v1::ChangesResponse*) override;
  grpc::Status Import(grpc::ServerContext*, const v1::ImportImageRequest*, v1::ImportImageResponse*) override;
  grpc::Status Create(grpc::ServerContext*, const v1::CreateImageRequest*, v1::CreateImageResponse*) override;

 private:
  absl::Status Ready(bool need_source) const;
  // Every image named `name` in the source (its channel), or none without one.
  absl::StatusOr<std::vector<triton::Image>> SourceImages(const std::string& name) const;

  ProjectStore* store_;
  ImagesServiceOptions o_;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_IMAGES_SERVICE_H_
