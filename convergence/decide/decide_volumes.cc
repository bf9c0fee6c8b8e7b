// The project's volumes in VOLAPI (projects/volumes.h): created before the
// instances that mount them, deleted only when the manifest says so and no
// VM mounts them, retained otherwise.
#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ids.h"
#include "convergence/decide/catalog.h"
#include "convergence/decide/decide.h"
#include "projects/volumes.h"

namespace mariposa::convergence {
namespace {

constexpr char kImpact[] = "instances that mount the project's volumes are not created until the volumes are ready";

void Problem_(Decision* d, const std::string& error, const std::string& reason, const std::string& fix) {
  d->problems.push_back({"volumes", "", error, reason, fix, kImpact});
}

}  // namespace

bool VolumeSettled(const VolumeView& v) {
  return v.state == "ready" || v.state == "deleted" || absl::StartsWith(v.state, "retained");
}

const triton::Volume* FindVolume(const Snapshot& s, const std::string& name) {
  if (!s.volumes) return nullptr;
  std::string volapi_name = VolapiVolumeName(s.project.name, name);
  for (const triton::Volume& v : *s.volumes) {
    if (v.name == volapi_name) return &v;
  }
  return nullptr;
}

namespace {

// The rule VolumeToBeDeleted and DecideVolumes share; `spec` is the
// manifest's entry (nullptr: not in it).
bool ToBeDeleted(const Snapshot& s, const VolumeSpec* spec) {
  return (spec && spec->remove) ||
         (s.project.deleting && (s.project.delete_volumes || (spec && spec->deletion_policy == "delete")));
}

const std::map<std::string, VolumeSpec>& GoalVolumes(const Snapshot& s) {
  return s.goal ? s.goal->volumes : s.volumes_at_deletion;
}

triton::Volume VolumeFor(const std::string& volapi_name, const VolumeSpec& spec, const std::string& network) {
  triton::Volume want;
  want.name = volapi_name;
  want.size = spec.size_mib;
  want.networks = {network};
  return want;
}

// The uuid of the network a volume is made on: its fabric network's once
// made, the uuid it names, or the account's default fabric network when it
// names none. "" while not known, with *why saying what it waits for.
std::string VolumeNetworkUuid(const Snapshot& s, const VolumeSpec& spec, std::string* why) {
  if (spec.network.empty()) {
    if (s.default_fabric.uuid.empty()) {
      *why = absl::StrCat("the account's default fabric network is not known: ", s.default_fabric_error);
    }
    return s.default_fabric.uuid;
  }
  if (IsUuid(spec.network)) return spec.network;
  std::string uuid = FabricNetworkUuid(s, spec.network);
  if (uuid.empty()) *why = absl::StrCat("fabric network ", spec.network, " is not made yet");
  return uuid;
}

// The network column of `status`: as the manifest names it, or the
// account's default.
std::string VolumeNetworkShown(const Snapshot& s, const VolumeSpec& spec) {
  if (!spec.network.empty()) return spec.network;
  return absl::StrCat(s.default_fabric.name.empty() ? kDefaultFabricNetwork : s.default_fabric.name,
                      " (the account's default)");
}

}  // namespace

std::vector<std::string> MountingServices(const Snapshot& s, const std::string& name) {
  std::vector<std::string> out;
  if (!s.goal) return out;
  for (const auto& [svc, g] : s.goal->services) {
    for (const VolumeMount& m : g.spec.volumes) {
      if (m.volume == name) {
        out.push_back(svc);
        break;
      }
    }
  }
  return out;
}

std::vector<std::string> MountsOfEarlierCopy(const Snapshot& s, const std::string& name, const triton::Volume* have) {
  std::vector<std::string> out;
  std::vector<std::string> services = MountingServices(s, name);
  if (services.empty()) return out;
  absl::Time made = absl::InfiniteFuture();
  std::string unparsed;
  if (have && !absl::ParseTime(absl::RFC3339_full, have->create_timestamp, &made, &unparsed)) {
    return out;  // not known: nothing to compare with
  }
  for (const InstanceState& i : s.instances) {
    if (std::find(services.begin(), services.end(), i.service) == services.end()) continue;
    // Made at the current spec, which mounts it (one of an older spec may
    // not have: the mount may be new).
    if (i.spec_hash != s.goal->services.at(i.service).record.spec_hash) continue;
    if (i.state == "failed" || i.state == "provisioning" || i.created == absl::InfinitePast()) continue;
    if (i.created < made) out.push_back(i.alias);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// The volumes wanted when VOLAPI is not there or could not be read.
void NotRead(const Snapshot& s, const std::map<std::string, VolumeSpec>& goal, Decision* d) {
  if (goal.empty()) return;  // nothing wanted, nothing known to be owned: not read
  for (const auto& [name, spec] : goal) {
    VolumeView v{name, VolapiVolumeName(s.project.name, name), VolumeNetworkShown(s, spec), "",
                 s.volapi ? "unknown" : "not applied",
                 ""};
    v.size_mib = spec.size_mib;
    d->volumes.push_back(std::move(v));
  }
  if (!s.volapi) {
    Problem_(d, "the project's volumes are not made: mariposad has no VOLAPI address",
             "VOLAPI is optional; mariposad was started without --volapi, VOLAPI_SERVICE or --triton",
             "restart mariposad with --volapi URL (or VOLAPI_SERVICE in --sapi-metadata)");
  } else {
    Problem_(d, "the project's volumes could not be read from VOLAPI", s.volumes_error,
             "check VOLAPI (mariposad's log, `mariposa admin status`); it is read again at the next sync");
  }
}

// Deleted outside Mariposa while instances mounted it: its data went with
// it. Made again (empty) so the service can be healed; the instances that
// mounted the earlier copy (`older`) are replaced only when the operator
// says so (a backup may have to be restored first).
void Lost(const Snapshot& s, const VolumeSpec& spec, const triton::Volume* have, const std::vector<std::string>& older,
          VolumeView* v, Decision* d) {
  const std::string& name = v->name;
  std::string who = absl::StrJoin(older, ", ");
  std::string since = have ? absl::StrCat("; VOLAPI's ", have->uuid, " was made at ", have->create_timestamp,
                                          ", after them, so they mount the earlier copy")
                           : "; VOLAPI no longer has it";
  v->state = absl::StrCat("lost: ", older.size(), older.size() == 1 ? " instance mounts" : " instances mount",
                          " a copy deleted outside Mariposa");
  d->problems.push_back(
      {"volume-lost", "", absl::StrCat("volume ", name, " was deleted outside Mariposa while ", who, " mounted it"),
       absl::StrCat("its data was deleted with it", since),
       absl::StrCat(have ? "" : "Mariposa makes it again, empty, at this sync; ",
                    "restore its data from a backup if there is one, then `mariposa -j ", s.project.name,
                    " reprovision --service ", absl::StrJoin(MountingServices(s, name), ","),
                    "` replaces the instances so they mount the new one"),
       absl::StrCat("the data of ", v->volapi_name, " is lost; ", who, older.size() == 1 ? " uses" : " use",
                    " a volume that is gone")});
  if (have != nullptr) return;
  std::string why;
  std::string net = VolumeNetworkUuid(s, spec, &why);
  if (net.empty()) return;
  VolumeChange c{VolumeChange::Kind::kCreate, name, VolumeFor(v->volapi_name, spec, net)};
  c.lost = who;
  d->volume_changes.push_back(c);
}

// A wanted volume VOLAPI does not have: made, once its network is known.
void ToCreate(const Snapshot& s, const VolumeSpec& spec, VolumeView* v, Decision* d) {
  const std::string& name = v->name;
  std::string why;
  std::string net = VolumeNetworkUuid(s, spec, &why);
  if (!net.empty()) {
    v->state = "to create";
    d->volume_changes.push_back({VolumeChange::Kind::kCreate, name, VolumeFor(v->volapi_name, spec, net)});
    return;
  }
  v->state = absl::StrCat("waiting: ", why);
  if (spec.network.empty()) {
    Problem_(d, absl::StrCat("volume ", name, " names no network and the account's default fabric network is not known"),
             s.default_fabric_error,
             absl::StrCat("name the fabric network it is served on in the manifest (volumes.", name,
                          ".network: one of fabric.networks, or a fabric network's uuid) and apply"));
  }
}

}  // namespace

bool VolumeToBeDeleted(const Snapshot& s, const std::string& volapi_name) {
  auto name = ProjectVolumeName(s.project.name, volapi_name);
  if (!name) return false;
  auto g = GoalVolumes(s).find(*name);
  return ToBeDeleted(s, g == GoalVolumes(s).end() ? nullptr : &g->second);
}

void DecideVolumes(const Snapshot& s, Decision* d) {
  const std::map<std::string, VolumeSpec>& goal = GoalVolumes(s);
  const bool deleting = s.project.deleting;
  if (!s.volapi || !s.volumes) {
    NotRead(s, goal, d);
    return;
  }
  std::map<std::string, const triton::Volume*> owned;
  for (const triton::Volume& v : *s.volumes) {
    if (auto name = ProjectVolumeName(s.project.name, v.name)) owned[*name] = &v;
  }
  std::set<std::string> names;
  for (const auto& kv : goal) names.insert(kv.first);
  for (const auto& kv : owned) names.insert(kv.first);
  for (const std::string& name : names) {
    auto g = goal.find(name);
    const VolumeSpec* spec = g == goal.end() ? nullptr : &g->second;
    auto o = owned.find(name);
    const triton::Volume* have = o == owned.end() ? nullptr : o->second;
    auto f = s.volume_failures.find(name);
    VolumeView v{name, VolapiVolumeName(s.project.name, name), spec ? VolumeNetworkShown(s, *spec) : "",
                 have ? have->uuid : "", "",
                 f == s.volume_failures.end() ? "" : f->second};
    v.size_mib = have ? have->size : spec ? spec->size_mib : 0;
    if (have) v.mounted_by = have->refs;
    // Deleted when the manifest says so, or with the project by its
    // deletion_policy or --delete-volumes (which takes the volumes left out
    // of the manifest too).
    const bool remove = ToBeDeleted(s, spec);
    if (remove) {
      if (have == nullptr && spec == nullptr) continue;
      if (have == nullptr) {
        v.state = "deleted";
      } else if (have->state == "deleting") {
        v.state = "deleting";
      } else if (!have->refs.empty()) {
        v.state = absl::StrCat("waiting: ", have->refs.size(), " instances mount it");
      } else {
        v.state = "to delete";
        d->volume_changes.push_back({VolumeChange::Kind::kDelete, name, *have});
      }
    } else if (spec == nullptr || deleting) {
      if (have == nullptr) continue;
      v.state = spec == nullptr ? "retained (not in the manifest)" : "retained (deletion_policy: retain)";
    } else if (std::vector<std::string> older = MountsOfEarlierCopy(s, name, have); !older.empty()) {
      Lost(s, *spec, have, older, &v, d);
    } else if (have == nullptr) {
      ToCreate(s, *spec, &v, d);
    } else {
      v.state = have->state;  // ready, creating, failed
      if (have->state == "failed") {
        Problem_(d, absl::StrCat("volume ", name, " failed in VOLAPI"),
                 absl::StrCat("VOLAPI could not make ", v.volapi_name, " (", have->uuid, ")"),
                 absl::StrCat("delete it (sdc-volapi DeleteVolume ", have->uuid,
                              "); Mariposa makes it again at the next sync"));
      }
    }
    if (VolumeSettled(v)) v.error.clear();
    d->volumes.push_back(std::move(v));
  }
  for (const VolumeView& v : d->volumes) {
    if (v.error.empty()) continue;
    Problem_(d, absl::StrCat("volume ", v.name, " ", NotDone(v.state)), v.error,
             absl::StrCat("fix what VOLAPI refused (the manifest's volumes.", v.name,
                          ", e.g. a size VOLAPI offers: GET /volumesizes); it is tried again after a backoff (5 s, doubling, at most 5 minutes)"));
  }
}

}  // namespace mariposa::convergence
