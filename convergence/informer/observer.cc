#include "convergence/informer/observer.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "projects/meta_drift.h"
#include "projects/manifest.h"

namespace mariposa::convergence {

absl::Time ParseTimestamp(const std::string& iso) {
  absl::Time t;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, iso, &t, &err)) return t;
  return absl::InfinitePast();
}

namespace {

// FNV-1a, 64 bits: stable across processes and builds (unlike absl::Hash).
struct Fnv {
  uint64_t h = 1469598103934665603ULL;
  void Add(absl::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ULL;
    }
    h ^= 0xff;  // a separator no UTF-8 text holds
    h *= 1099511628211ULL;
  }
  std::string Hex() const { return absl::StrFormat("%012x", h & 0xffffffffffffULL); }
};

}  // namespace

std::string MadeFingerprint(const std::string& billing_id, int64_t ram, const std::map<std::string, std::string>& tags,
                            const std::map<std::string, std::string>& customer_metadata, bool with_billing_id) {
  Fnv package, tag_hash, meta_hash;
  if (with_billing_id) package.Add(billing_id);
  package.Add(absl::StrCat(ram));
  for (const auto& [k, v] : tags) {
    if (absl::StartsWith(k, "mariposa.") || k == kCnsServicesTag) continue;
    tag_hash.Add(k);
    tag_hash.Add(v);
  }
  for (const auto& [k, v] : customer_metadata) {
    if (k == kCnsStatusKey) continue;
    meta_hash.Add(k);
    meta_hash.Add(v);
  }
  return absl::StrCat(with_billing_id ? "P" : "R", package.Hex(), ".", tag_hash.Hex(), ".", meta_hash.Hex());
}

std::vector<std::string> DigestSuspects(const std::vector<InstanceState>& kept, const std::vector<triton::Vm>& digest,
                                        absl::Time read_at) {
  absl::flat_hash_map<std::string, const InstanceState*> by_uuid;
  for (const InstanceState& i : kept) by_uuid[i.uuid] = &i;
  std::set<std::string> out, seen;
  for (const triton::Vm& vm : digest) {
    if (vm.state == "destroyed") continue;
    seen.insert(vm.uuid);
    auto it = by_uuid.find(vm.uuid);
    if (it == by_uuid.end()) {
      out.insert(vm.uuid);  // created (or made the project's) without an item
    } else if (absl::Time m = ParseTimestamp(vm.last_modified); m > it->second->modified) {
      out.insert(vm.uuid);  // changed since the kept state
    } else if (vm.state != it->second->state && it->second->state != "preserved" && m == absl::InfinitePast()) {
      out.insert(vm.uuid);  // no time to compare by: the state decides
    }
  }
  for (const InstanceState& i : kept) {
    // Gone (a failed VM is not in a listing of active ones).
    if (!seen.count(i.uuid) && i.state != "failed" && i.created < read_at && i.modified < read_at) out.insert(i.uuid);
  }
  return {out.begin(), out.end()};
}

std::string MadeDifference(const std::string& made, const std::string& now) {
  std::vector<absl::string_view> a = absl::StrSplit(made, '.'), b = absl::StrSplit(now, '.');
  if (a.size() != 3 || b.size() != 3 || a[0].empty() || (a[0][0] != 'P' && a[0][0] != 'R')) return "";
  std::vector<std::string> what;
  static const char* kParts[] = {"package", "tags", "metadata"};
  for (int n = 0; n < 3; ++n) {
    if (a[n] != b[n]) what.push_back(kParts[n]);
  }
  return absl::StrJoin(what, "+");
}

std::optional<InstanceState> Observer::FromVm(const triton::Vm& vm, const std::string& project_uuid,
                                              const std::map<std::string, int64_t>& version_numbers) {
  if (vm.state == "destroyed") return std::nullopt;
  auto tag = [&](const char* k) {
    auto it = vm.tags.find(k);
    return it == vm.tags.end() ? std::string() : it->second;
  };
  // A VM that claims the project but lacks the other ownership tags was
  // not made by us (or was edited by hand): leave it alone.
  if (tag(kTagProject) != project_uuid || tag(kTagService).empty()) return std::nullopt;
  InstanceState i;
  i.uuid = vm.uuid;
  i.service = tag(kTagService);
  i.alias = vm.alias;
  i.owner_uuid = vm.owner_uuid;
  if (std::string preserved = tag(kTagPreserved); !preserved.empty()) {
    i.state = "preserved";
    i.preserved_at = ParseTimestamp(preserved.substr(0, preserved.find(' ')));
  } else {
    i.state = vm.state;
  }
  i.health = "unknown";
  i.spec_hash = tag(kTagSpec);
  i.meta_hash = tag(kTagMeta);
  i.cns = tag(kCnsServicesTag);
  i.firewall = tag(kTagFirewall);
  i.firewall_enabled = vm.firewall_enabled;
  if (auto down = vm.customer_metadata.find(kCnsStatusKey); down != vm.customer_metadata.end()) {
    i.cns_down = down->second == "down";
  }
  if (auto hold = vm.internal_metadata.find(kDiscoveryKey); hold != vm.internal_metadata.end()) {
    i.discovery = hold->second;
  }
  if (std::string made = tag(kTagMade); !made.empty()) {
    i.hand_changed = MadeDifference(
        made, MadeFingerprint(vm.billing_id, vm.ram, vm.tags, vm.customer_metadata, made[0] == 'P'));
  }
  i.run = tag(kTagRun);
  i.exit_status = vm.exit_status;
  for (const triton::Nic& n : vm.nics) i.networks.push_back(n.network_uuid);
  auto v = version_numbers.find(tag(kTagVersion));
  i.version = v == version_numbers.end() ? 0 : v->second;
  i.created = ParseTimestamp(vm.create_timestamp);
  i.modified = ParseTimestamp(vm.last_modified);
  i.version_uuid = tag(kTagVersion);
  i.image_uuid = vm.image_uuid;
  i.delegate_dataset = !vm.datasets.empty();
  i.server_uuid = vm.server_uuid;
  for (const triton::Nic& n : vm.nics) {
    if (i.ip.empty() || n.primary) {
      i.ip = n.ip;
      i.nic = n.interface;
    }
    if (vm.nics.size() > 1) i.nics.push_back({n.network_uuid, n.interface, n.ip});
  }
  return i;
}

std::map<std::string, std::string> AdoptionTags(const triton::Vm& vm, const std::string& project_uuid,
                                                const std::string& service, const std::string& version_uuid,
                                                const std::string& spec_hash, const std::string& goal_image_uuid) {
  if (vm.state == "destroyed" || vm.tags.count(kTagProject)) return {};
  auto role = vm.tags.find(kTagCoreRole);
  if (role == vm.tags.end() || role->second != service) return {};
  bool current = !goal_image_uuid.empty() && vm.image_uuid == goal_image_uuid;
  return {{kTagProject, project_uuid},
          {kTagService, service},
          {kTagVersion, version_uuid},
          {kTagSpec, current ? spec_hash : "adopted"}};
}

absl::StatusOr<std::vector<InstanceState>> Observer::List(const triton::VmFilter& filter,
                                                          const std::string& project_uuid,
                                                          const std::map<std::string, int64_t>& version_numbers,
                                                          int64_t* listed) {
  auto vms = vmapi_->ListVms(filter);
  if (!vms.ok()) return Annotate(vms.status(), "observing project " + project_uuid);
  *listed = static_cast<int64_t>(vms->size());
  std::vector<InstanceState> out;
  out.reserve(vms->size());
  for (const triton::Vm& vm : *vms) {
    if (auto i = FromVm(vm, project_uuid, version_numbers)) out.push_back(std::move(*i));
  }
  return out;
}

std::vector<triton::VmFilter> Observer::Scoped(const triton::VmFilter& filter) const {
  std::vector<triton::VmFilter> out;
  for (const std::string& owner : owners_) {
    out.push_back(filter);
    out.back().owner_uuid = owner;
  }
  if (out.empty()) out.push_back(filter);
  return out;
}

absl::StatusOr<std::vector<InstanceState>> Observer::ObserveProject(
    const std::string& project_uuid, const std::map<std::string, int64_t>& version_numbers) {
  triton::VmFilter filter;
  filter.tags = {{kTagProject, project_uuid}};
  std::vector<InstanceState> out;
  for (const triton::VmFilter& f : Scoped(filter)) {
    int64_t listed = 0;
    ASSIGN_OR_RETURN(std::vector<InstanceState> part, List(f, project_uuid, version_numbers, &listed));
    if (out.empty()) out = std::move(part);
    else out.insert(out.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return out;
}

absl::StatusOr<std::vector<InstanceState>> Observer::ObserveProject(
    const std::string& project_uuid, const std::map<std::string, int64_t>& version_numbers,
    const std::vector<std::string>& services, int parallel) {
  if (services.size() < 2 || parallel <= 1) return ObserveProject(project_uuid, version_numbers);
  // One listing per service and owner.
  std::vector<triton::VmFilter> filters;
  for (const std::string& service : services) {
    triton::VmFilter f;
    f.tags = {{kTagProject, project_uuid}, {kTagService, service}};
    for (triton::VmFilter& scoped : Scoped(f)) filters.push_back(std::move(scoped));
  }
  std::vector<absl::StatusOr<std::vector<InstanceState>>> parts(filters.size(), std::vector<InstanceState>());
  std::vector<int64_t> listed(filters.size(), 0);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k; (k = next++) < filters.size();) parts[k] = List(filters[k], project_uuid, version_numbers, &listed[k]);
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::min<int>(parallel, filters.size()); ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  // Every VM of the project, in any state, must have been seen.
  triton::VmFilter all;
  all.tags = {{kTagProject, project_uuid}};
  int64_t total = 0;
  for (const triton::VmFilter& f : Scoped(all)) {
    auto n = vmapi_->CountVms(f);
    if (!n.ok()) return Annotate(n.status(), "observing project " + project_uuid);
    total += *n;
  }
  int64_t seen = 0;
  for (int64_t n : listed) seen += n;
  if (seen != total) return ObserveProject(project_uuid, version_numbers);
  std::vector<InstanceState> out;
  out.reserve(seen);
  for (auto& part : parts) {
    if (!part.ok()) return part.status();
    for (auto& i : *part) out.push_back(std::move(i));
    *part = std::vector<InstanceState>();  // freed as it is moved, not at the end
  }
  return out;
}

void ApplyVmChanges(const std::vector<triton::Vm>& changed, const std::string& project_uuid,
                    const std::map<std::string, int64_t>& version_numbers, const std::vector<std::string>& owners,
                    std::vector<InstanceState>* instances) {
  if (changed.empty()) return;
  absl::flat_hash_map<std::string, size_t> at;
  for (size_t k = 0; k < instances->size(); ++k) at[(*instances)[k].uuid] = k;
  std::vector<bool> gone(instances->size(), false);
  for (const triton::Vm& vm : changed) {
    bool owned = owners.empty() || std::find(owners.begin(), owners.end(), vm.owner_uuid) != owners.end();
    std::optional<InstanceState> now = owned ? Observer::FromVm(vm, project_uuid, version_numbers) : std::nullopt;
    auto it = at.find(vm.uuid);
    if (it != at.end()) {
      InstanceState& known = (*instances)[it->second];
      // Older than what is known (read by a listing after the change was
      // published): the item that follows it brings the newer state.
      if (ParseTimestamp(vm.last_modified) < known.modified) continue;
      if (now) {
        known = std::move(*now);
        gone[it->second] = false;
      } else {
        gone[it->second] = true;
        known.modified = ParseTimestamp(vm.last_modified);  // an older item must not bring it back
      }
    } else if (now) {
      at[vm.uuid] = instances->size();
      instances->push_back(std::move(*now));
      gone.push_back(false);
    }
  }
  size_t keep = 0;
  for (size_t k = 0; k < instances->size(); ++k) {
    if (gone[k]) continue;
    if (keep != k) (*instances)[keep] = std::move((*instances)[k]);
    ++keep;
  }
  instances->resize(keep);
}

}  // namespace mariposa::convergence
