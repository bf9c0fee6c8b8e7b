#include "convergence/decide/catalog.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace mariposa::convergence {
namespace {

size_t Distance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

bool Usable(const std::vector<std::string>& owners, const std::string& owner) {
  return owners.empty() || std::find(owners.begin(), owners.end(), owner) != owners.end();
}

// "1.10.0" > "1.9.2": numeric parts compare as numbers.
bool OlderVersion(const std::string& a, const std::string& b) {
  std::vector<std::string> x = absl::StrSplit(a, '.'), y = absl::StrSplit(b, '.');
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    int64_t p, q;
    if (absl::SimpleAtoi(x[i], &p) && absl::SimpleAtoi(y[i], &q)) {
      if (p != q) return p < q;
    } else if (x[i] != y[i]) {
      return x[i] < y[i];
    }
  }
  return x.size() < y.size();
}

std::string Mib(int64_t mib) {
  return mib % 1024 == 0 ? absl::StrCat(mib / 1024, " GiB") : absl::StrCat(mib, " MiB");
}

std::string Suggest(const std::string& want, const std::vector<std::string>& names, const char* what) {
  std::vector<std::string> close = CloseMatches(want, names);
  if (!close.empty()) return absl::StrCat("; close matches: ", absl::StrJoin(close, ", "));
  std::vector<std::string> some(names.begin(), names.begin() + std::min<size_t>(names.size(), 8));
  if (some.empty()) return absl::StrCat("; there are no ", what);
  return absl::StrCat("; ", what, " include: ", absl::StrJoin(some, ", "), names.size() > some.size() ? ", …" : "");
}

}  // namespace

std::vector<std::string> CloseMatches(absl::string_view want, const std::vector<std::string>& candidates, size_t max) {
  std::vector<std::pair<size_t, std::string>> scored;
  size_t limit = std::max<size_t>(2, want.size() / 3);
  std::string w = absl::AsciiStrToLower(want);
  for (const std::string& c : candidates) {
    if (c == want) continue;
    std::string lc = absl::AsciiStrToLower(c);
    size_t d = Distance(w, lc);
    bool contains = w.size() >= 3 && (absl::StrContains(lc, w) || absl::StrContains(w, lc));
    if (d <= limit || contains) scored.push_back({d, c});
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (const auto& s : scored) {
    if (out.size() == max) break;
    if (std::find(out.begin(), out.end(), s.second) == out.end()) out.push_back(s.second);
  }
  return out;
}

absl::StatusOr<triton::Package> ChoosePackage(const ServiceSpec& spec, const std::vector<triton::Package>& all,
                                              const std::string& owner) {
  std::vector<std::string> names;
  for (const triton::Package& p : all) {
    if (p.active && Usable(p.owner_uuids, owner) && std::find(names.begin(), names.end(), p.name) == names.end()) {
      names.push_back(p.name);
    }
  }
  if (!spec.package.empty()) {
    const triton::Package* best = nullptr;
    const triton::Package* inactive = nullptr;
    const triton::Package* foreign = nullptr;
    for (const triton::Package& p : all) {
      if (p.uuid != spec.package && p.name != spec.package) continue;
      if (!Usable(p.owner_uuids, owner)) {
        foreign = &p;
      } else if (!p.active) {
        inactive = &p;
      } else if (best == nullptr || OlderVersion(best->version, p.version)) {
        best = &p;
      }
    }
    if (best != nullptr) return *best;
    if (inactive != nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("package \"", spec.package, "\" is retired (active: false)",
                                                        Suggest(inactive->name, names, "active packages")));
    }
    if (foreign != nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("package \"", spec.package,
                                                        "\" is not available to this project's account ", owner,
                                                        Suggest(spec.package, names, "its packages")));
    }
    return absl::NotFoundError(absl::StrCat("no package \"", spec.package, "\" in PAPI",
                                            Suggest(spec.package, names, "packages")));
  }
  int64_t memory = spec.memory_bytes ? (*spec.memory_bytes + (1 << 20) - 1) >> 20 : 1024;
  int64_t disk = spec.disk_bytes ? (*spec.disk_bytes + (1 << 20) - 1) >> 20 : 0;
  int64_t cpu = spec.cpu ? static_cast<int64_t>(std::ceil(*spec.cpu * 100 - 1e-9)) : 0;
  const triton::Package* best = nullptr;
  auto key = [](const triton::Package& p) { return std::tie(p.max_physical_memory, p.quota, p.cpu_cap, p.name); };
  for (const triton::Package& p : all) {
    if (!p.active || !Usable(p.owner_uuids, owner)) continue;
    if (p.max_physical_memory < memory || p.quota < disk || (cpu > 0 && p.cpu_cap > 0 && p.cpu_cap < cpu)) continue;
    if (best == nullptr || key(p) < key(*best)) best = &p;
  }
  if (best != nullptr) return *best;
  std::string want = absl::StrCat("memory >= ", Mib(memory));
  if (disk > 0) absl::StrAppend(&want, ", disk >= ", Mib(disk));
  if (cpu > 0) absl::StrAppend(&want, ", cpu >= ", cpu / 100.0);
  const triton::Package* largest = nullptr;
  for (const triton::Package& p : all) {
    if (p.active && Usable(p.owner_uuids, owner) && (largest == nullptr || key(*largest) < key(p))) largest = &p;
  }
  return absl::NotFoundError(absl::StrCat(
      "no active package has ", want,
      largest == nullptr ? std::string("; PAPI has no active package for this account")
                         : absl::StrCat("; the largest is ", largest->name, " (", Mib(largest->max_physical_memory),
                                        " memory, ", Mib(largest->quota), " disk, cpu ", largest->cpu_cap / 100.0,
                                        ")")));
}

void ApplyResources(const ServiceSpec& spec, triton::Dimensions* d) {
  if (spec.memory_bytes) d->ram = std::max<int64_t>(1, *spec.memory_bytes >> 20);
  if (spec.disk_bytes) d->quota = std::max<int64_t>(1, (*spec.disk_bytes + (int64_t{1} << 30) - 1) >> 30);
  if (spec.cpu) d->cpu_cap = std::max<int64_t>(1, std::llround(*spec.cpu * 100));
}

Sized DimensionsOf(const ServiceSpec& spec, const triton::Package& p) {
  Sized out;
  out.package_name = p.name;
  triton::Dimensions& d = out.dim;
  d.billing_id = p.uuid;
  d.ram = p.max_physical_memory;
  d.quota = p.quota / 1024;
  d.cpu_cap = p.cpu_cap;
  d.max_swap = p.max_swap;
  d.max_lwps = p.max_lwps;
  d.zfs_io_priority = p.zfs_io_priority;
  if (spec.compute_type == "kvm") d.vcpus = std::max<int64_t>(1, p.vcpus);
  if (!spec.package.empty()) {  // resources beside a named package take precedence
    ApplyResources(spec, &d);
    d.max_swap = std::max(d.max_swap, d.ram);
  }
  return out;
}

std::vector<std::string> NapiNetworks(const ServiceSpec& spec, const std::optional<FabricSpec>& fabric) {
  std::vector<std::string> out;
  for (const std::string& n : spec.networks) {
    if (!fabric || !fabric->networks.count(n)) out.push_back(n);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ChooseNetworks(const std::vector<std::string>& wanted,
                                                        const std::vector<triton::Network>& all,
                                                        const std::string& owner) {
  std::vector<std::string> out, names;
  for (const triton::Network& n : all) {
    if (Usable(n.owner_uuids, owner)) names.push_back(n.name);
  }
  for (const std::string& w : wanted) {
    const triton::Network* found = nullptr;
    int matches = 0;
    for (const triton::Network& n : all) {
      if (n.uuid == w) {
        found = &n;
        matches = 1;
        break;
      }
      if (n.name == w) {
        found = &n;
        ++matches;
      }
    }
    if (found == nullptr) {
      return absl::NotFoundError(absl::StrCat("no network or network pool \"", w, "\" in NAPI",
                                              Suggest(w, names, "networks")));
    }
    if (matches > 1) {
      return absl::FailedPreconditionError(
          absl::StrCat("\"", w, "\" names ", matches, " networks or pools in NAPI; give its uuid"));
    }
    if (!Usable(found->owner_uuids, owner)) {
      return absl::FailedPreconditionError(absl::StrCat(found->pool ? "network pool \"" : "network \"", w,
                                                        "\" is not provisionable by this project's account ", owner));
    }
    if (std::find(out.begin(), out.end(), found->uuid) != out.end()) {
      return absl::InvalidArgumentError(absl::StrCat("network \"", w, "\" is listed twice (one NIC per network)"));
    }
    out.push_back(found->uuid);
  }
  return out;
}

absl::StatusOr<std::string> ChooseBrand(const ServiceSpec& spec, const triton::Image& image) {
  if (spec.compute_type == "agent") return std::string();
  const std::string ref = absl::StrCat(image.name, image.version.empty() ? "" : "@" + image.version);
  auto wrong = [&](const std::string& use) {
    return absl::InvalidArgumentError(absl::StrCat("compute_type ", spec.compute_type, " cannot run image ", ref,
                                                   " (type ", image.type, "): ", use));
  };
  std::string brand;
  const std::string& t = image.type;
  if (spec.compute_type == "docker") {
    if (!t.empty() && t != "docker") {
      return wrong(t == "zvol" ? "it is a hardware VM image; use compute_type: kvm"
                               : "it is not a Docker image; use compute_type: infrastructure (or lx)");
    }
    brand = "lx";
  } else if (spec.compute_type == "kvm") {
    if (!t.empty() && t != "zvol") {
      return wrong(t == "docker" ? "it is a Docker image; use compute_type: docker"
                                 : "hardware VMs boot zvol images; use compute_type: infrastructure (or lx)");
    }
    brand = spec.brand.empty() ? "bhyve" : spec.brand;
  } else {
    if (t == "docker") return wrong("it is a Docker image; use compute_type: docker");
    if (t == "zvol") return wrong("it is a hardware VM image; use compute_type: kvm (or bhyve)");
    if (!t.empty() && t != "zone-dataset" && t != "lx-dataset") {
      return wrong("only zone-dataset and lx-dataset images run as infrastructure containers");
    }
    brand = t == "lx-dataset" ? "lx" : t == "zone-dataset" ? "joyent" : spec.brand.empty() ? "joyent" : spec.brand;
    if (!spec.brand.empty() && spec.brand != brand) {
      return absl::InvalidArgumentError(absl::StrCat("compute_type ", spec.brand == "lx" ? "lx" : "smartmachine",
                                                     " asks for brand ", spec.brand, " but image ", ref, " is ", t,
                                                     " (brand ", brand, "); use compute_type: infrastructure"));
    }
  }
  const std::string& req = image.requirements_brand;
  if (!req.empty() && req != brand) {
    bool joyents = (req == "joyent" || req == "joyent-minimal") && brand == "joyent";
    bool hvm = (req == "kvm" || req == "bhyve") && spec.compute_type == "kvm" && spec.brand.empty();
    if (!joyents && !hvm) {
      return absl::InvalidArgumentError(absl::StrCat("image ", ref, " requires brand ", req, " but compute_type ",
                                                     spec.compute_type, " runs it as ", brand,
                                                     "; choose the compute type of that brand"));
    }
  }
  if (!req.empty()) brand = req;
  return brand;
}

namespace {

// A health check's `network` must name a NIC the instances get: an
// interface net0 … net<N-1>, or one of the service's networks (by the name
// or uuid written there, or — with NAPI's list — another spelling of it).
std::string CheckNetworkProblem(const ServiceSpec& s, const std::string& want,
                                const std::vector<triton::Network>* all) {
  if (want.empty()) return "";
  size_t nics = std::max<size_t>(1, s.networks.size());
  int index = 0;
  if (want.rfind("net", 0) == 0 && absl::SimpleAtoi(want.substr(3), &index) && index >= 0) {
    if (static_cast<size_t>(index) < nics) return "";
    return absl::StrCat("the instances have ", nics, nics == 1 ? " NIC (net0)" : " NICs (net0 … net", nics - 1,
                        nics == 1 ? "" : ")", "; there is no ", want);
  }
  if (s.networks.empty()) {
    return absl::StrCat("the service names no networks (its instances get the daemon's --network, net0); give "
                        "`networks:` or use network: net0, not \"", want, "\"");
  }
  auto uuid_of = [&](const std::string& name) -> std::string {
    if (all == nullptr) return name;
    for (const triton::Network& n : *all) {
      if (n.uuid == name || n.name == name) return n.uuid;
    }
    return name;
  };
  for (const std::string& n : s.networks) {
    if (n == want || uuid_of(n) == uuid_of(want)) return "";
  }
  return absl::StrCat("\"", want, "\" is not one of the service's networks (", absl::StrJoin(s.networks, ", "),
                      "); name one of them, or an interface net0 … net", nics - 1);
}

}  // namespace

const char kDefaultFabricNetwork[] = "My-Fabric-Network";

absl::StatusOr<triton::Network> DefaultFabricNetwork(const std::vector<triton::Network>& all,
                                                     const std::string& owner) {
  std::vector<std::string> fabrics;
  for (const triton::Network& n : all) {
    if (!n.fabric || n.pool || std::find(n.owner_uuids.begin(), n.owner_uuids.end(), owner) == n.owner_uuids.end()) {
      continue;
    }
    if (absl::EqualsIgnoreCase(n.name, kDefaultFabricNetwork)) return n;
    fabrics.push_back(n.name);
  }
  return absl::NotFoundError(absl::StrCat(
      "account ", owner, " has no default fabric network (", kDefaultFabricNetwork,
      ", which Triton makes for each account when fabrics are set up) in NAPI; name the fabric network the volume is "
      "served on: one of the manifest's fabric.networks, or the uuid of a fabric network of the account",
      fabrics.empty() ? std::string(" (it has none)") : absl::StrCat(" (it has ", absl::StrJoin(fabrics, ", "), ")")));
}

const char kNoAdminOwner[] =
    "core zones belong to Triton's admin account, which mariposad was not given; start it with --admin-owner "
    "UUID (the headnode's ufds_admin_uuid: `sdc-sapi /applications?name=sdc | json -Ha metadata.ufds_admin_uuid`)";

const std::string& OwnerFor(const ServiceSpec& s, const std::string& owner, const std::string& admin_owner) {
  return s.compute_type == "core" && !admin_owner.empty() ? admin_owner : owner;
}

std::vector<ManifestDiagnostic> CheckCatalog(const Manifest& m, const Catalog& catalog, const std::string& tenant,
                                             const std::string& admin_owner, const std::string& filename) {
  std::vector<ManifestDiagnostic> out;
  auto error = [&](const std::string& path, const absl::Status& st) {
    out.push_back({filename, 0, 0, path, std::string(st.message())});
  };
  for (const auto& kv : m.services) {
    const ServiceSpec& s = kv.second;
    const std::string& owner = OwnerFor(s, tenant, admin_owner);
    std::string path = absl::StrCat("services.", kv.first);
    if (s.compute_type == "core" && admin_owner.empty()) {
      error(absl::StrCat(path, ".compute_type"), absl::FailedPreconditionError(kNoAdminOwner));
    }
    if (s.compute_type == "agent") {
      if (!catalog.images) continue;
      auto image = catalog.images(s.image);
      if (!image.ok() && absl::IsNotFound(image.status())) error(absl::StrCat(path, ".image"), image.status());
      continue;
    }
    if (catalog.packages) {
      auto pkg = ChoosePackage(s, *catalog.packages, owner);
      if (!pkg.ok()) error(absl::StrCat(path, s.package.empty() ? ".resources" : ".package"), pkg.status());
    }
    if (std::vector<std::string> napi = NapiNetworks(s, m.fabric); catalog.networks && !napi.empty()) {
      auto nets = ChooseNetworks(napi, *catalog.networks, owner);
      if (!nets.ok()) error(absl::StrCat(path, ".networks"), nets.status());
    }
    for (const auto& check : s.healthchecks) {
      std::string why = CheckNetworkProblem(s, check.second.network, catalog.networks ? &*catalog.networks : nullptr);
      if (!why.empty()) out.push_back({filename, 0, 0, absl::StrCat(path, ".healthchecks.", check.first, ".network"), why});
    }
    if (catalog.images) {
      // A missing image is refused, naming the versions that exist; IMGAPI
      // or the source unreadable: not checked (the sync reports it).
      auto image = catalog.images(s.image);
      if (image.ok()) {
        auto brand = ChooseBrand(s, *image);
        if (!brand.ok()) error(absl::StrCat(path, ".compute_type"), brand.status());
      } else if (absl::IsNotFound(image.status())) {
        error(absl::StrCat(path, ".image"), image.status());
      }
    }
  }
  // A volume with no network is made on the account's default fabric
  // network: refused here when the account has none.
  if (catalog.networks) {
    for (const auto& [name, v] : m.volumes) {
      if (!v.network.empty() || v.remove) continue;
      auto def = DefaultFabricNetwork(*catalog.networks, tenant);
      if (!def.ok()) error(absl::StrCat("volumes.", name, ".network"), def.status());
    }
  }
  // A volume size VOLAPI does not make fails at every sync: refused here.
  if (catalog.volume_sizes && !catalog.volume_sizes->empty()) {
    for (const auto& [name, v] : m.volumes) {
      if (v.size_mib <= 0 || absl::c_linear_search(*catalog.volume_sizes, v.size_mib)) continue;
      std::vector<std::string> offered;
      for (int64_t s : *catalog.volume_sizes) offered.push_back(FormatManifestSize(s << 20));
      out.push_back({filename, 0, 0, absl::StrCat("volumes.", name, ".size"),
                     absl::StrCat("size ", FormatManifestSize(v.size_mib << 20), " is not one VOLAPI makes volumes of; "
                                  "give one of ", absl::StrJoin(offered, ", "), " (GET /volumesizes), or leave size "
                                  "out for VOLAPI's default")});
    }
  }
  return out;
}

}  // namespace mariposa::convergence
