// What an instance is made of, chosen from the data center's catalog: the
// PAPI package (named, or the smallest that fits `resources`), the NAPI
// networks (names or uuids of networks and pools) and the brand (from the
// compute type and the image). Pure functions of their inputs, used by the
// sync (to create instances) and by apply (to refuse a manifest naming
// what the data center does not have).
#ifndef MARIPOSA_CONVERGENCE_CATALOG_H_
#define MARIPOSA_CONVERGENCE_CATALOG_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "convergence/triton/clients.h"
#include "projects/manifest.h"

namespace mariposa::convergence {

// Up to `max` of `candidates` close to `want` (edit distance within a third
// of its length, or one containing the other), nearest first.
std::vector<std::string> CloseMatches(absl::string_view want, const std::vector<std::string>& candidates,
                                      size_t max = 3);

// The package of a service, for `owner`:
// - `package:` names one by uuid or name (the newest version of that name
//   the owner may use); it must be active;
// - else the smallest active package (memory, then disk, then cpu) with at
//   least resources.memory (default 1 GiB), resources.disk and
//   resources.cpu, as sdc-docker picks one for `docker run -m`.
// NOT_FOUND / FAILED_PRECONDITION say what is wrong and what exists.
absl::StatusOr<triton::Package> ChoosePackage(const ServiceSpec& spec, const std::vector<triton::Package>& all,
                                              const std::string& owner);

// The instance dimensions VMAPI gets: the package's, with resources given
// beside a named package taking precedence (billing_id stays the package).
struct Sized {
  std::string package_name;
  triton::Dimensions dim;
};
Sized DimensionsOf(const ServiceSpec& spec, const triton::Package& package);
// The service's own resources (memory, disk, cpu) over `d`'s.
void ApplyResources(const ServiceSpec& spec, triton::Dimensions* d);

// Each of `wanted` (network or pool, by uuid or name) as a uuid, in order.
// The networks of `spec` NAPI must have already: those the manifest's own
// fabric does not make (a fabric network's name wins over NAPI's).
std::vector<std::string> NapiNetworks(const ServiceSpec& spec, const std::optional<FabricSpec>& fabric);

absl::StatusOr<std::vector<std::string>> ChooseNetworks(const std::vector<std::string>& wanted,
                                                        const std::vector<triton::Network>& all,
                                                        const std::string& owner);

// The account's default fabric network, where a volume whose manifest
// names no network is made (as CloudAPI's CreateVolume does with no
// networks). CloudAPI reads it from UFDS (dclocalconfig defaultnetwork),
// which mariposad does not reach; Triton makes it for each account when
// fabrics are set up as the fabric network "My-Fabric-Network" (VLAN 2),
// and that is the one taken: the account's fabric network of that name,
// compared without case. NOT_FOUND says how to name one instead.
extern const char kDefaultFabricNetwork[];
absl::StatusOr<triton::Network> DefaultFabricNetwork(const std::vector<triton::Network>& all,
                                                     const std::string& owner);

// The brand an instance of `spec` runs as with `image`:
// docker -> lx (a Docker image); infrastructure -> joyent (zone-dataset) or
// lx (lx-dataset); kvm -> bhyve, or kvm when asked (zvol). The image's
// requirements.brand and a brand the manifest names must agree.
// INVALID_ARGUMENT says what does not match and how to fix it. An image of
// unknown type takes the compute type's default.
absl::StatusOr<std::string> ChooseBrand(const ServiceSpec& spec, const triton::Image& image);

// Located apply errors for a manifest's packages, networks and brands. A
// list absent (no PAPI, no NAPI) is not checked; `images` resolves an image
// reference (a failure skips the brand check: the sync reports missing
// images).
struct Catalog {
  std::optional<std::vector<triton::Package>> packages;
  std::optional<std::vector<triton::Network>> networks;
  std::optional<std::vector<int64_t>> volume_sizes;  // MiB, VOLAPI's (GET /volumesizes)
  std::function<absl::StatusOr<triton::Image>(const std::string&)> images;
};
// The account a service's instances belong to: core zones (compute_type:
// core) are the admin account's, everything else the project's owner's.
const std::string& OwnerFor(const ServiceSpec& s, const std::string& owner, const std::string& admin_owner);

// Why a core service cannot run without mariposad --admin-owner.
extern const char kNoAdminOwner[];

// `admin_owner`: the account core services are checked for (OwnerFor).
std::vector<ManifestDiagnostic> CheckCatalog(const Manifest& m, const Catalog& catalog, const std::string& owner,
                                             const std::string& admin_owner, const std::string& filename);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_CATALOG_H_
