// The project's fabric in NAPI (projects/fabric.h): its VLAN and networks,
// created, updated and deleted; a network goes only once no instance of the
// project is on it.
#include <algorithm>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convergence/decide/decide.h"
#include "projects/fabric.h"
#include "projects/firewall.h"

namespace mariposa::convergence {
namespace {

const FabricSpec* Wanted(const Snapshot& s) {
  return s.goal && !s.project.deleting && s.goal->fabric ? &*s.goal->fabric : nullptr;
}

// What NAPI gets for `name`.
triton::FabricNetwork NetworkFor(const Snapshot& s, const FabricSpec& f, const std::string& name,
                                 const FabricNetworkSpec& n) {
  triton::FabricNetwork out;
  out.name = FabricNetworkName(s.project.name, name);
  out.vlan_id = f.vlan;
  out.subnet = n.subnet;
  out.gateway = n.gateway;
  std::tie(out.provision_start_ip, out.provision_end_ip) = ProvisionRange(n);
  out.resolvers = n.resolvers;
  out.routes = n.routes;
  out.internet_nat = n.internet_nat;
  out.description = FabricNetworkDescription(s.project.uuid, name, n);
  return out;
}

// The part NAPI cannot change, of a network as NAPI holds it.
std::string FixedOf(const triton::FabricNetwork& n) {
  FabricNetworkSpec spec;
  spec.subnet = n.subnet;
  spec.gateway = n.gateway;
  spec.provision_start = n.provision_start_ip;
  spec.provision_end = n.provision_end_ip;
  spec.internet_nat = n.internet_nat;
  return FabricFixed(spec);
}

// What differs in what NAPI can change between the network NAPI holds and
// the one Mariposa wrote, when its marker says it is current: changed by
// hand. "" when nothing.
std::string NetworkDrift(const triton::FabricNetwork& have, const triton::FabricNetwork& want) {
  std::vector<std::string> what;
  if (have.resolvers != want.resolvers) {
    what.push_back(absl::StrCat("resolvers ", absl::StrJoin(have.resolvers, ","), " instead of ",
                                absl::StrJoin(want.resolvers, ",")));
  }
  if (have.routes != want.routes) what.push_back("routes");
  if (have.name != want.name) what.push_back(absl::StrCat("name ", have.name, " instead of ", want.name));
  if (have.description != want.description) what.push_back(absl::StrCat("description \"", have.description, "\""));
  return absl::StrJoin(what, ", ");
}

void Problem_(Decision* d, const std::string& error, const std::string& reason, const std::string& fix) {
  d->problems.push_back({"fabric", "", error, reason, fix,
                         "instances on the project's fabric networks are not created until they are in place"});
}

}  // namespace

std::string FabricNetworkUuid(const Snapshot& s, const std::string& name) {
  if (!s.fabric) return "";
  for (const triton::FabricNetwork& n : s.fabric->networks) {
    auto m = ParseOwnedMarker(s.project.uuid, "network", n.description);
    if (m && m->name == name) return n.uuid;
  }
  return "";
}

namespace {

// A network the manifest names: in place, to create, to update (its marker
// old, or changed by hand), or what NAPI cannot change. `have`: the
// project's network of that name (nullptr: none).
FabricNetworkView WantedNetwork(const Snapshot& s, const FabricSpec& wanted, const std::string& name,
                                const FabricNetworkSpec& spec, const triton::FabricNetwork* have,
                                const std::string& failure, Decision* d) {
  triton::FabricNetwork want = NetworkFor(s, wanted, name, spec);
  FabricNetworkView v{name, want.name, spec.subnet, "", "in place", failure};
  if (have == nullptr) {
    v.state = "to create";
    d->fabric_changes.push_back({FabricChange::Kind::kCreateNetwork, name, {}, want});
  } else if (have->vlan_id != wanted.vlan || FixedOf(*have) != FabricFixed(spec)) {
    v.uuid = have->uuid;
    v.state = "cannot change in place";
    Problem_(d, absl::StrCat("fabric network ", name, " differs from the manifest in what NAPI cannot change"),
             absl::StrCat("NAPI has ", have->subnet, " on VLAN ", have->vlan_id, " (", FixedOf(*have),
                          "); the manifest asks ", spec.subnet, " on VLAN ", wanted.vlan, " (", FabricFixed(spec), ")"),
             "give the network a new name (its instances move by a rollout), then remove the old one");
  } else {
    v.uuid = want.uuid = have->uuid;
    if (ParseOwnedMarker(s.project.uuid, "network", have->description)->hash != FabricMutableHash(spec)) {
      v.state = "to update";
      d->fabric_changes.push_back({FabricChange::Kind::kUpdateNetwork, name, {}, want});
    } else if (std::string drift = NetworkDrift(*have, want); !drift.empty()) {
      // Its marker says current, NAPI holds something else: changed by hand.
      v.state = "to update";
      FabricChange c{FabricChange::Kind::kUpdateNetwork, name, {}, want};
      c.drift = drift;
      d->fabric_changes.push_back(c);
      d->problems.push_back(DriftProblem("fabric-drift", absl::StrCat("fabric network ", name, " (", want.uuid, ")"),
                                         "NAPI", drift, absl::StrCat("fabric.networks.", name),
                                         "until it is put back, instances on it get what NAPI holds"));
    }
  }
  if (v.state == "in place") v.error.clear();
  return v;
}

// A network of the project's the manifest no longer names: deleted once no
// instance is on it and no volume is served on it ("to delete"), else kept.
FabricNetworkView UnwantedNetwork(const Snapshot& s, const std::string& name, const triton::FabricNetwork& n,
                                  const std::string& failure, Decision* d) {
  int users = 0;
  for (const InstanceState& i : s.instances) {
    users += std::count(i.networks.begin(), i.networks.end(), n.uuid) > 0;
  }
  // A volume served on it (its NFS server has a NIC there) keeps it: a
  // retained volume keeps its network, and one being deleted holds it
  // until it is gone.
  std::vector<std::string> served, going;
  for (const triton::Volume& vol : s.volumes ? *s.volumes : std::vector<triton::Volume>{}) {
    if (std::count(vol.networks.begin(), vol.networks.end(), n.uuid) == 0) continue;
    (VolumeToBeDeleted(s, vol.name) ? going : served).push_back(vol.name);
  }
  FabricNetworkView v{name, n.name, n.subnet, n.uuid, "to delete", failure};
  if (!served.empty()) {
    v.state = absl::StrCat("retained: volume ", absl::StrJoin(served, ", "), " is served on it");
    v.error.clear();
  } else if (!going.empty()) {
    v.state = absl::StrCat("waiting: volume ", absl::StrJoin(going, ", "), " is served on it until it is deleted");
  } else if (users > 0) {
    v.state = absl::StrCat("waiting: ", users, " instances still on it");
  } else {
    d->fabric_changes.push_back({FabricChange::Kind::kDeleteNetwork, name, {}, n});
  }
  return v;
}

}  // namespace

void DecideFabric(const Snapshot& s, Decision* d) {
  const FabricSpec* wanted = Wanted(s);
  if (!s.fabric) {
    if (wanted == nullptr) return;  // nothing wanted, nothing known to be owned: not read
    for (const auto& [name, n] : wanted->networks) {
      d->fabric_networks.push_back({name, FabricNetworkName(s.project.name, name), n.subnet, "", "unknown", ""});
    }
    Problem_(d, "the project's fabric could not be read from NAPI", s.fabric_error,
             "check NAPI (mariposad's log, `mariposa admin status`); it is read again at the next sync");
    return;
  }
  auto failed = [&](const std::string& name) {
    auto f = s.fabric_failures.find(name);
    return f == s.fabric_failures.end() ? std::string() : f->second;
  };
  std::map<std::string, const triton::FabricNetwork*> owned;
  for (const triton::FabricNetwork& n : s.fabric->networks) {
    if (auto m = ParseOwnedMarker(s.project.uuid, "network", n.description)) owned.emplace(m->name, &n);
  }
  std::set<int> vlans, own_vlans;
  for (const triton::FabricVlan& v : s.fabric->vlans) {
    vlans.insert(v.vlan_id);
    if (ParseOwnedMarker(s.project.uuid, "vlan", v.description)) own_vlans.insert(v.vlan_id);
  }
  if (wanted != nullptr && !vlans.count(wanted->vlan)) {
    FabricChange c;
    c.kind = FabricChange::Kind::kCreateVlan;
    c.vlan = {wanted->vlan, s.project.name, FabricVlanDescription(s.project.uuid, wanted->vlan)};
    d->fabric_changes.push_back(c);
  }
  if (wanted != nullptr) {
    for (const auto& [name, spec] : wanted->networks) {
      auto o = owned.find(name);
      d->fabric_networks.push_back(
          WantedNetwork(s, *wanted, name, spec, o == owned.end() ? nullptr : o->second, failed(name), d));
    }
  }
  std::map<int, int> left;  // owned networks left on each VLAN after this sync's deletes
  for (const auto& [name, n] : owned) {
    ++left[n->vlan_id];
    if (wanted != nullptr && wanted->networks.count(name)) continue;
    FabricNetworkView v = UnwantedNetwork(s, name, *n, failed(name), d);
    if (v.state == "to delete") --left[n->vlan_id];
    d->fabric_networks.push_back(std::move(v));
  }
  for (int vlan : own_vlans) {
    if (wanted != nullptr && wanted->vlan == vlan) continue;
    if (left[vlan] > 0) continue;
    FabricChange c;
    c.kind = FabricChange::Kind::kDeleteVlan;
    c.vlan.vlan_id = vlan;
    d->fabric_changes.push_back(c);
  }
  std::sort(d->fabric_networks.begin(), d->fabric_networks.end(),
            [](const FabricNetworkView& a, const FabricNetworkView& b) { return a.name < b.name; });
  for (const FabricNetworkView& v : d->fabric_networks) {
    if (!v.error.empty()) {
      Problem_(d, absl::StrCat("fabric network ", v.name, " ", NotDone(v.state)), v.error,
               "fix what NAPI refused (the manifest's fabric.networks." + v.name + ", or NAPI itself); it is tried "
               "again after a backoff (5 s, doubling, at most 5 minutes)");
    }
  }
  if (!failed("vlan").empty()) {
    Problem_(d, "the project's fabric VLAN could not be made or removed", failed("vlan"),
             "fix what NAPI refused (the manifest's fabric.vlan, or NAPI itself); it is tried again after a backoff (5 s, doubling, at most 5 minutes)");
  }
}

}  // namespace mariposa::convergence
