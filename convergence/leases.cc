#include "convergence/leases.h"

#include <algorithm>

#include "common/rendezvous.h"

namespace mariposa::convergence {

std::vector<std::string> LiveNodes(const std::vector<NodeBeat>& nodes, absl::Time now, const LeasePolicy& policy) {
  std::vector<std::string> live;
  for (const NodeBeat& n : nodes) {
    if (now - n.seen < policy.node_ttl) live.push_back(n.node);
  }
  std::sort(live.begin(), live.end());
  live.erase(std::unique(live.begin(), live.end()), live.end());
  return live;
}

std::string OwnerOf(const std::string& project, const std::vector<std::string>& live) {
  std::string best;
  uint64_t best_w = 0;
  for (const std::string& n : live) {
    uint64_t w = RendezvousScore(n, project);
    if (best.empty() || w > best_w || (w == best_w && n < best)) {
      best = n;
      best_w = w;
    }
  }
  return best;
}

std::vector<LeaseAction> PlanLeases(const std::string& self, const std::vector<NodeBeat>& nodes,
                                    const std::vector<std::string>& projects, const std::map<std::string, Lease>& leases,
                                    absl::Time now, const LeasePolicy& policy) {
  std::vector<std::string> live = LiveNodes(nodes, now, policy);
  // A node that cannot see its own heartbeat acts on nothing new: it may be
  // the one cut off.
  bool self_live = std::binary_search(live.begin(), live.end(), self);
  std::vector<LeaseAction> out;
  for (const std::string& project : projects) {
    Lease stored;
    stored.project = project;
    if (auto it = leases.find(project); it != leases.end()) stored = it->second;
    std::string owner = OwnerOf(project, live);
    bool held = !stored.holder.empty() && now < stored.expires;
    if (held && stored.holder == self) {
      if (!self_live || owner != self) {
        out.push_back({LeaseAction::kRelease, project, stored.epoch, stored.epoch, now});
      } else if (stored.expires - now < policy.renew_before) {
        out.push_back({LeaseAction::kRenew, project, stored.epoch, stored.epoch, now + policy.ttl});
      }
      continue;
    }
    if (held || !self_live || owner != self) continue;
    out.push_back({LeaseAction::kAcquire, project, stored.epoch, stored.epoch + 1, now + policy.ttl});
  }
  return out;
}

bool MayAct(const Lease& stored, const std::string& self, int64_t epoch, absl::Time now, const LeasePolicy& policy) {
  return stored.holder == self && stored.epoch == epoch && now < stored.expires - policy.safety;
}

}  // namespace mariposa::convergence
