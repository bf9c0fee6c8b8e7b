#include "convergence/informer/triton_catalog.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ids.h"
#include "convergence/decide/images.h"

namespace mariposa::convergence {

absl::StatusOr<triton::Image> TritonCatalog::LookUp(const std::string& ref) {
  bool by_uuid = IsUuid(ref);
  size_t at = ref.rfind('@');
  std::string name = by_uuid ? "" : ref.substr(0, at);
  std::string version = by_uuid || at == std::string::npos ? "" : ref.substr(at + 1);
  absl::StatusOr<triton::Image> found = by_uuid ? o_.imgapi->GetImage(ref) : o_.imgapi->FindImage(name, version);
  Note("IMGAPI", found.status());
  if (found.ok() || !absl::IsNotFound(found.status())) return found;
  triton::ImgapiClient* source = o_.image_source;
  const std::string where =
      source == nullptr
          ? " (no image source is configured: mariposad --image-source URL)"
          : absl::StrCat(" or in the image source ", o_.image_source_url,
                         o_.image_channel.empty() ? "" : absl::StrCat(" (channel ", o_.image_channel, ")"));
  if (source != nullptr) {
    absl::StatusOr<triton::Image> remote;
    if (by_uuid) {
      remote = source->GetImage(ref);
    } else {
      triton::ImageFilter f;
      f.name = name;
      f.version = version;
      f.channel = o_.image_channel;
      auto list = source->ListImages(f);
      if (!list.ok()) {
        remote = list.status();
      } else if (list->empty()) {
        remote = absl::NotFoundError("not in the source");
      } else {
        remote = *std::max_element(list->begin(), list->end(), OlderImage);
      }
    }
    if (remote.ok()) {
      remote->source = o_.image_source_url;
      return remote;
    }
    if (!absl::IsNotFound(remote.status())) {
      return absl::UnavailableError(absl::StrCat("image ", ref, " is not in IMGAPI, and the image source ",
                                                 o_.image_source_url, " could not be read: ",
                                                 remote.status().message()));
    }
  }
  if (by_uuid) return absl::NotFoundError(absl::StrCat("image ", ref, " is not in IMGAPI", where));
  // Name the versions that exist, nearest first.
  std::vector<std::string> versions;
  triton::ImageFilter f;
  f.name = name;
  auto local = o_.imgapi->ListImages(f);
  if (local.ok()) {
    for (const triton::Image& i : *local) versions.push_back(i.version);
  }
  if (source != nullptr) {
    f.channel = o_.image_channel;
    auto remote = source->ListImages(f);
    if (remote.ok()) {
      for (const triton::Image& i : *remote) versions.push_back(i.version);
    }
  }
  std::vector<std::string> near = NearestVersions(version, versions);
  return absl::NotFoundError(absl::StrCat(
      "image ", ref, " is not in IMGAPI", where,
      near.empty() ? absl::StrCat("; no image is named ", name)
                   : absl::StrCat("; nearest versions: ", absl::StrJoin(near, ", "), " (write e.g. ", name, "@",
                                  near[0], ")")));
}

void TritonCatalog::Forget() {
  absl::MutexLock l(&mu_);
  images_.clear();
}

absl::StatusOr<triton::Image> TritonCatalog::Resolve(const std::string& ref, bool cached_only) {
  absl::Time now = clock_->Now();
  {
    absl::MutexLock l(&mu_);
    auto it = images_.find(ref);
    if (it != images_.end() &&
        (cached_only || now - it->second.first < (it->second.second.ok() ? absl::Seconds(30) : absl::Seconds(5)))) {
      return it->second.second;
    }
    if (cached_only) return absl::UnavailableError(absl::StrCat("image ", ref, " not looked up yet"));
  }
  absl::StatusOr<triton::Image> found = LookUp(ref);
  absl::MutexLock l(&mu_);
  if (images_.size() > 4096) images_.clear();
  images_[ref] = {now, found};
  return found;
}

absl::StatusOr<std::shared_ptr<const Catalog>> TritonCatalog::Now(bool cached_only) {
  absl::Time now = clock_->Now();
  {
    absl::MutexLock l(&mu_);
    if (cached_only || now - catalog_at_ < (catalog_.ok() ? absl::Seconds(30) : absl::Seconds(5))) return catalog_;
  }
  auto read = [&]() -> absl::StatusOr<std::shared_ptr<const Catalog>> {
    auto c = std::make_shared<Catalog>();
    if (o_.papi != nullptr) {
      auto packages = o_.papi->ListPackages();
      Note("PAPI", packages.status());
      if (!packages.ok()) return packages.status();
      c->packages = std::move(*packages);  // absent without PAPI: not checked
    }
    if (o_.napi != nullptr) {
      auto networks = o_.napi->ListNetworks();
      Note("NAPI", networks.status());
      if (!networks.ok()) return networks.status();
      c->networks = std::move(*networks);
    }
    if (o_.volapi != nullptr) {
      // Sizes unread: not checked at apply (the sync says what VOLAPI refused).
      auto sizes = o_.volapi->ListVolumeSizes();
      Note("VOLAPI", sizes.status());
      if (sizes.ok()) c->volume_sizes = std::move(*sizes);
    }
    return std::shared_ptr<const Catalog>(std::move(c));
  };
  auto got = read();
  absl::MutexLock l(&mu_);
  catalog_at_ = now;
  catalog_ = got;
  return got;
}

}  // namespace mariposa::convergence
