// What the data center offers that a manifest names: images (IMGAPI, then
// the image source such as updates.tritondatacenter.com), and packages,
// networks and volume sizes (PAPI, NAPI, VOLAPI). Answers are kept briefly
// (an image 30 s, 5 s after a failure; the catalog likewise), so syncs,
// `status` and apply's checks share them. Every call's outcome is reported
// to `note` (the reconciler's record of failing APIs). Thread-safe.
#ifndef MARIPOSA_CONVERGENCE_TRITON_CATALOG_H_
#define MARIPOSA_CONVERGENCE_TRITON_CATALOG_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "convergence/decide/catalog.h"
#include "convergence/triton/clients.h"

namespace mariposa::convergence {

struct TritonCatalogOptions {
  triton::ImgapiClient* imgapi = nullptr;        // required
  triton::ImgapiClient* image_source = nullptr;  // optional: where missing images are imported from
  std::string image_source_url;                  // what IMGAPI's import-remote is given
  std::string image_channel;                     // the source's channel ("" = every channel)
  // Optional: without PAPI no package is checked, without NAPI only
  // network uuids can be named, without VOLAPI volume sizes are not checked.
  triton::PapiClient* papi = nullptr;
  triton::NapiClient* napi = nullptr;
  triton::VolapiClient* volapi = nullptr;
};

class TritonCatalog {
 public:
  using NoteFn = std::function<void(const std::string& api, const absl::Status& st)>;
  TritonCatalog(const Clock* clock, TritonCatalogOptions options, NoteFn note)
      : clock_(clock), o_(std::move(options)), note_(std::move(note)) {}

  // An image reference (uuid or name@version), uncached: IMGAPI, then the
  // image source (the result's `source` set); NOT_FOUND names the nearest
  // versions that exist in either.
  absl::StatusOr<triton::Image> LookUp(const std::string& ref);
  // The same, kept briefly. `cached_only`: the last answer, however old;
  // UNAVAILABLE when none.
  absl::StatusOr<triton::Image> Resolve(const std::string& ref, bool cached_only = false);
  // Drops the kept images (an import ended: the next look finds it).
  void Forget();
  // PAPI's packages, NAPI's networks and VOLAPI's sizes, read at most every
  // 30 s (5 s after a failure). `cached_only`: what was read last, however
  // old, never asking.
  absl::StatusOr<std::shared_ptr<const Catalog>> Now(bool cached_only = false);

 private:
  void Note(const std::string& api, const absl::Status& st) const {
    if (note_) note_(api, st);
  }

  const Clock* clock_;
  const TritonCatalogOptions o_;
  const NoteFn note_;
  absl::Mutex mu_;
  std::map<std::string, std::pair<absl::Time, absl::StatusOr<triton::Image>>> images_ ABSL_GUARDED_BY(mu_);
  absl::Time catalog_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::StatusOr<std::shared_ptr<const Catalog>> catalog_ ABSL_GUARDED_BY(mu_) = absl::UnavailableError("not read");
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_TRITON_CATALOG_H_
