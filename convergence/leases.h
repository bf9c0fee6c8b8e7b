// Which node runs which project's convergence (issue 33): the decisions of
// the project leases, as pure functions of what the database says and
// `now`. The database part is the store's (ProjectStore::Heartbeat,
// WriteLeases, CheckFence); the node's loop is lease_keeper.h.
//
// - A node is live while its heartbeat is younger than node_ttl.
// - Each project belongs to one live node, chosen by rendezvous hashing
//   (highest random weight): every node computes the same owner from the
//   same list, and a node that joins or leaves moves only the projects it
//   gains or had.
// - A lease (holder, epoch, expiry) is taken only when it is free or
//   expired, and always with a higher epoch; the holder renews it while it
//   is the owner, and hands it back (releases) when a live node ranks above
//   it. Every action on a project is written under the holder's epoch and
//   refused when the epoch has moved (fencing: MayAct).
#ifndef MARIPOSA_CONVERGENCE_LEASES_H_
#define MARIPOSA_CONVERGENCE_LEASES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "projects/store.h"

namespace mariposa::convergence {

struct LeasePolicy {
  absl::Duration ttl = absl::Seconds(10);       // a lease's life from its last renewal
  absl::Duration renew_before = absl::Seconds(5);  // renew once less than this is left
  absl::Duration node_ttl = absl::Seconds(10);  // a node without a heartbeat this long is gone
  // A holder stops acting this long before its lease expires, so that a
  // clock skewed by less than this between nodes cannot let two act.
  absl::Duration safety = absl::Seconds(2);
};

// A node's heartbeat and a project's lease, as the store keeps them.
using ::mariposa::Lease;
using ::mariposa::NodeBeat;

struct LeaseAction {
  enum Kind { kAcquire, kRenew, kRelease };
  Kind kind;
  std::string project;
  int64_t expected_epoch;  // the write succeeds only if the stored epoch is still this
  int64_t epoch;           // the epoch written (acquire: expected + 1)
  absl::Time expires;      // acquire/renew: the new expiry
};

// Nodes whose heartbeat is younger than policy.node_ttl, sorted.
std::vector<std::string> LiveNodes(const std::vector<NodeBeat>& nodes, absl::Time now, const LeasePolicy& policy);

// The node that should run `project` among `live` ("" when none): the
// highest RendezvousScore (common/rendezvous.h), as the health agents are
// chosen per instance.
std::string OwnerOf(const std::string& project, const std::vector<std::string>& live);

// What `self` should write for `projects`, given the stored leases (keyed
// by project; a project without one is free) and the nodes' heartbeats.
std::vector<LeaseAction> PlanLeases(const std::string& self, const std::vector<NodeBeat>& nodes,
                                    const std::vector<std::string>& projects, const std::map<std::string, Lease>& leases,
                                    absl::Time now, const LeasePolicy& policy);

// Fencing: `self`, holding `epoch`, may act on the project whose stored
// lease is `stored` only while it still holds that epoch and the lease has
// more than policy.safety left.
bool MayAct(const Lease& stored, const std::string& self, int64_t epoch, absl::Time now, const LeasePolicy& policy);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_LEASES_H_
