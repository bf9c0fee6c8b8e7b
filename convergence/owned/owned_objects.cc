#include "convergence/owned/owned_objects.h"

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "convergence/decide/throttles.h"
#include "convergence/reconciler.h"
#include "convergence/sync_helpers.h"
#include "projects/fabric.h"
#include "projects/volumes.h"

namespace mariposa::convergence {

template <typename T>
bool OwnedObjects::Recall(const Snapshot& s, OwnedReading<T> Readings::*member, bool wanted, bool last_seen,
                        std::optional<T>* seen, std::string* error, std::map<std::string, std::string>* failures,
                        std::map<std::string, absl::Time>* retry_at) {
  absl::MutexLock l(&mu_);
  const OwnedReading<T>& o = projects_[s.project.uuid].*member;
  *failures = o.failures;
  *retry_at = o.retry_at;
  if (last_seen) {
    *seen = o.seen;
    *error = o.error;
    return false;
  }
  return wanted || o.may_own || s.project.deleting;
}

template <typename T>
void OwnedObjects::Keep(const Snapshot& s, OwnedReading<T> Readings::*member, absl::StatusOr<T> read, bool owns,
                      std::optional<T>* seen, std::string* error) {
  absl::MutexLock l(&mu_);
  OwnedReading<T>& o = projects_[s.project.uuid].*member;
  if (!read.ok()) {
    *error = o.error = std::string(read.status().message());
    o.seen.reset();
    return;
  }
  o.may_own = owns;
  o.error.clear();
  o.seen = *read;
  *seen = std::move(*read);
}

// The rules the project owns in FWAPI (their description's marker), read
// while the goal has rules or the project may own some (always while it is
// being deleted); `last_seen`: the last sync's reading.
void OwnedObjects::GatherFirewall(Snapshot* snapshot, bool last_seen) {
  Snapshot& s = *snapshot;
  s.fwapi = options_.fwapi != nullptr;
  if (!s.fwapi) return;
  s.firewall_owner = TenantOf(s.project, options_);
  bool wanted = s.goal && !s.goal->firewall.empty();
  if (!Recall(s, &Readings::firewall, wanted, last_seen, &s.firewall, &s.firewall_error, &s.firewall_failures,
              &s.firewall_retry_at)) {
    return;
  }
  auto rules = options_.fwapi->ListRules(s.firewall_owner);
  NoteApi("FWAPI", rules.status());
  absl::StatusOr<std::vector<OwnedRule>> owned =
      rules.ok() ? absl::StatusOr<std::vector<OwnedRule>>(OwnedRules(s.project.uuid, *rules)) : rules.status();
  bool owns = owned.ok() && !owned->empty();
  Keep(s, &Readings::firewall, std::move(owned), owns, &s.firewall, &s.firewall_error);
}

// The account's fabric VLANs and the networks the project owns (their
// description's marker), read while the goal has a fabric or the project
// may own some (always while it is being deleted); `last_seen`: the last
// sync's reading.
void OwnedObjects::GatherFabric(Snapshot* snapshot, bool last_seen) {
  Snapshot& s = *snapshot;
  if (options_.napi == nullptr) return;
  bool wanted = s.goal && s.goal->fabric;
  if (!Recall(s, &Readings::fabric, wanted, last_seen, &s.fabric, &s.fabric_error, &s.fabric_failures,
              &s.fabric_retry_at)) {
    return;
  }
  const std::string& owner = TenantOf(s.project, options_);
  auto vlans = options_.napi->ListFabricVlans(owner);
  absl::StatusOr<std::vector<triton::FabricNetwork>> networks =
      vlans.ok() ? options_.napi->ListFabricNetworks(owner) : vlans.status();
  NoteApi("NAPI", networks.status());
  absl::StatusOr<Snapshot::FabricSeen> seen =
      networks.ok() ? absl::StatusOr<Snapshot::FabricSeen>(Snapshot::FabricSeen{std::move(*vlans), {}})
                    : networks.status();
  bool owns = false;
  if (networks.ok()) {
    for (const triton::FabricVlan& v : seen->vlans) owns |= ParseOwnedMarker(s.project.uuid, "vlan", v.description).has_value();
    seen->networks = OwnedNetworks(s.project.uuid, std::move(*networks));
    owns = owns || !seen->networks.empty();
  }
  Keep(s, &Readings::fabric, std::move(seen), owns, &s.fabric, &s.fabric_error);
}

// The account's volumes named as the project's (projects/volumes.h), read
// while the goal has volumes or the project may own some (always while it
// is being deleted); `last_seen`: the last sync's reading.
void OwnedObjects::GatherVolumes(Snapshot* snapshot, bool last_seen) {
  Snapshot& s = *snapshot;
  s.volapi = options_.volapi != nullptr;
  if (!s.volapi) return;
  bool wanted = (s.goal && !s.goal->volumes.empty()) || !s.volumes_at_deletion.empty();
  if (!Recall(s, &Readings::volumes, wanted, last_seen, &s.volumes, &s.volumes_error, &s.volume_failures,
              &s.volume_retry_at)) {
    return;
  }
  auto all = options_.volapi->ListVolumes(TenantOf(s.project, options_));
  NoteApi("VOLAPI", all.status());
  absl::StatusOr<std::vector<triton::Volume>> owned =
      all.ok() ? absl::StatusOr<std::vector<triton::Volume>>(OwnedVolumes(s.project.name, std::move(*all)))
               : all.status();
  bool owns = owned.ok() && !owned->empty();
  Keep(s, &Readings::volumes, std::move(owned), owns, &s.volumes, &s.volumes_error);
}

void OwnedObjects::ChangeFirewall(const Snapshot& s, const Decision& d, std::vector<EventRecord>* events) {
  if (options_.fwapi == nullptr || d.firewall_changes.empty()) return;
  const ProjectRecord& p = s.project;
  if (hooks_.holds_project && !hooks_.holds_project()) return;  // another node holds the project: it decides again
  static const char* kDone[] = {"created", "updated", "deleted"};
  for (const FirewallChange& c : d.firewall_changes) {
    if (c.held) continue;  // failed before: waits for its backoff
    using K = FirewallChange::Kind;
    const char* done = kDone[static_cast<int>(c.kind)];
    std::string what = c.kind == K::kDelete ? c.rule.uuid : c.rule.rule;
    if (!c.drift.empty()) absl::StrAppend(&what, " (put back: changed in FWAPI by hand: ", c.drift, ")");
    ChangeOutcome o{c.name, c.kind != K::kDelete, "rule",
                    Event(p, absl::StrCat("firewall.rule-", done), absl::StrCat(c.name, ": ", what)),
                    Event(p, "firewall.rule-failed", absl::StrCat(c.name, " not ", done))};
    absl::Status st = hooks_.intend(p, "firewall", o);
    if (st.ok()) {
      switch (c.kind) {
        case K::kCreate:
          st = options_.fwapi->CreateRule(c.rule);
          // Made by an earlier attempt that died before it knew: the next
          // sync reads it and compares.
          if (absl::IsAlreadyExists(st)) st = absl::OkStatus();
          break;
        case K::kUpdate: st = options_.fwapi->UpdateRule(c.rule); break;
        case K::kDelete:
          st = options_.fwapi->DeleteRule(c.rule.uuid, c.rule.owner_uuid);
          if (absl::IsNotFound(st)) st = absl::OkStatus();  // gone already
          break;
      }
      NoteApi("FWAPI", st);
    }
    Record(p, &Readings::firewall, st, std::move(o), events);
  }
}

void OwnedObjects::ChangeFabric(const Snapshot& s, const Decision& d, std::vector<EventRecord>* events) {
  if (options_.napi == nullptr || d.fabric_changes.empty()) return;
  const ProjectRecord& p = s.project;
  if (hooks_.holds_project && !hooks_.holds_project()) return;  // another node holds the project: it decides again
  const std::string& owner = TenantOf(p, options_);
  static const char* kDone[] = {"vlan-created", "network-created", "network-updated", "network-deleted",
                                "vlan-deleted"};
  bool vlan_failed = false;
  for (const FabricChange& c : d.fabric_changes) {
    if (c.held) continue;  // failed before: waits for its backoff
    using K = FabricChange::Kind;
    if (c.kind == K::kCreateNetwork && vlan_failed) continue;  // after the VLAN, at the next sync
    std::string detail = c.name.empty() ? absl::StrCat("VLAN ", c.vlan.vlan_id)
                                        : absl::StrCat(c.name, " (", c.network.name, ", ", c.network.subnet, ")");
    if (!c.drift.empty()) absl::StrAppend(&detail, " (put back: changed in NAPI by hand: ", c.drift, ")");
    ChangeOutcome o{c.name.empty() ? "vlan" : c.name, c.kind == K::kCreateVlan || c.kind == K::kCreateNetwork, "what",
                    Event(p, absl::StrCat("fabric.", kDone[static_cast<int>(c.kind)]), detail),
                    Event(p, "fabric.change-failed", detail)};
    absl::Status st = hooks_.intend(p, "fabric", o);
    if (st.ok()) {
      switch (c.kind) {
        case K::kCreateVlan: st = options_.napi->CreateFabricVlan(owner, c.vlan); break;
        case K::kCreateNetwork: st = options_.napi->CreateFabricNetwork(owner, c.network).status(); break;
        case K::kUpdateNetwork: st = options_.napi->UpdateNetwork(c.network); break;
        case K::kDeleteNetwork:
          st = options_.napi->DeleteFabricNetwork(owner, c.network.vlan_id, c.network.uuid);
          if (absl::IsNotFound(st)) st = absl::OkStatus();  // gone already
          break;
        case K::kDeleteVlan:
          st = options_.napi->DeleteFabricVlan(owner, c.vlan.vlan_id);
          if (absl::IsNotFound(st)) st = absl::OkStatus();
          break;
      }
      NoteApi("NAPI", st);
    }
    if (c.kind == K::kCreateVlan) vlan_failed = !st.ok();
    Record(p, &Readings::fabric, st, std::move(o), events);
  }
}

void OwnedObjects::ChangeVolumes(const Snapshot& s, const Decision& d, std::vector<EventRecord>* events) {
  if (options_.volapi == nullptr || d.volume_changes.empty()) return;
  const ProjectRecord& p = s.project;
  if (hooks_.holds_project && !hooks_.holds_project()) return;  // another node holds the project: it decides again
  const std::string& owner = TenantOf(p, options_);
  for (const VolumeChange& c : d.volume_changes) {
    if (c.held) continue;  // failed before: waits for its backoff
    const bool create = c.kind == VolumeChange::Kind::kCreate;
    const char* done = create ? "created" : "deleted";
    std::string detail = absl::StrCat(c.name, " (", c.volume.name, c.volume.uuid.empty() ? "" : " ", c.volume.uuid, ")");
    std::string made = detail;
    if (!c.lost.empty()) {
      absl::StrAppend(&made, ": made again, empty; the earlier one was deleted outside Mariposa while ", c.lost,
                      " mounted it, and its data with it");
    }
    ChangeOutcome o{c.name, create, "volume", Event(p, absl::StrCat("volume.", done), made),
                    Event(p, "volume.change-failed", absl::StrCat(detail, " not ", done))};
    absl::Status st = hooks_.intend(p, "volumes", o);
    if (st.ok()) {
      if (create) {
        triton::Volume v = c.volume;
        v.owner_uuid = owner;
        st = options_.volapi->CreateVolume(v);
        // Made by an earlier attempt that died before it knew: the next sync
        // reads it (the name is the owner's own).
        if (absl::IsAlreadyExists(st)) st = absl::OkStatus();
      } else {
        st = options_.volapi->DeleteVolume(c.volume.uuid, owner);
        if (absl::IsNotFound(st)) st = absl::OkStatus();  // gone already
      }
      NoteApi("VOLAPI", st);
    }
    Record(p, &Readings::volumes, st, std::move(o), events);
  }
}

template <typename T>
void OwnedObjects::Record(const ProjectRecord& p, OwnedReading<T> Readings::*member, const absl::Status& st,
                        ChangeOutcome o, std::vector<EventRecord>* events) {
  absl::MutexLock l(&mu_);
  OwnedReading<T>& owned = projects_[p.uuid].*member;
  if (st.ok()) {
    owned.failures.erase(o.key);
    owned.attempts.erase(o.key);
    owned.retry_at.erase(o.key);
    if (o.made) owned.may_own = true;
    events->push_back(std::move(o.done));
    return;
  }
  owned.failures[o.key] = std::string(st.message());
  // Tried again after a backoff, not at every sync (each attempt an event).
  int attempts = ++owned.attempts[o.key];
  absl::Duration wait = ChangeBackoff(attempts);
  owned.retry_at[o.key] = clock_->Now() + wait;
  absl::StrAppend(&o.failed.detail, ": ", st.message(), " (attempt ", attempts, "; tried again in ",
                  absl::FormatDuration(wait), ")");
  LogWarn(absl::StrCat(o.failed.kind, " (", o.failed.detail, ")"),
          {{"project", p.name}, {o.label, o.key}, {"error", st.ToString()}});
  events->push_back(std::move(o.failed));
}

void OwnedObjects::Change(const Snapshot& s, const Decision& d, std::vector<EventRecord>* events) {
  ChangeFirewall(s, d, events);
  ChangeFabric(s, d, events);
  ChangeVolumes(s, d, events);
}

// Owned as the syncs tell (GatherFirewall, GatherFabric, GatherVolumes); what
// Owned* keeps has its marker or name, read again for the name.
void OwnedObjects::AddHoldings(const ProjectRecord& p, ProjectHoldings* h) {
  const std::string& owner = TenantOf(p, options_);
  if (options_.fwapi != nullptr) {
    auto rules = options_.fwapi->ListRules(owner);
    if (!rules.ok()) h->unread.push_back(absl::StrCat("FWAPI: ", rules.status().message()));
    for (const OwnedRule& r : rules.ok() ? OwnedRules(p.uuid, *rules) : std::vector<OwnedRule>{}) {
      h->firewall_rules.push_back(r.name);
    }
  }
  if (options_.napi != nullptr) {
    auto vlans = options_.napi->ListFabricVlans(owner);
    absl::StatusOr<std::vector<triton::FabricNetwork>> networks =
        vlans.ok() ? options_.napi->ListFabricNetworks(owner) : vlans.status();
    if (!networks.ok()) h->unread.push_back(absl::StrCat("NAPI: ", networks.status().message()));
    for (const triton::FabricNetwork& n :
         networks.ok() ? OwnedNetworks(p.uuid, std::move(*networks)) : std::vector<triton::FabricNetwork>{}) {
      h->networks.push_back({ParseOwnedMarker(p.uuid, "network", n.description)->name, n.uuid, n.vlan_id});
    }
    for (const triton::FabricVlan& v : networks.ok() ? *vlans : std::vector<triton::FabricVlan>{}) {
      if (ParseOwnedMarker(p.uuid, "vlan", v.description)) h->vlans.push_back(v.vlan_id);
    }
  }
  if (options_.volapi != nullptr) {
    auto all = options_.volapi->ListVolumes(owner);
    if (!all.ok()) h->unread.push_back(absl::StrCat("VOLAPI: ", all.status().message()));
    for (const triton::Volume& v : all.ok() ? OwnedVolumes(p.name, std::move(*all)) : std::vector<triton::Volume>{}) {
      h->volumes.push_back({*ProjectVolumeName(p.name, v.name), v.networks});
    }
  }
}

void OwnedObjects::Forget(const std::string& project_uuid) {
  absl::MutexLock l(&mu_);
  projects_.erase(project_uuid);
}

}  // namespace mariposa::convergence
