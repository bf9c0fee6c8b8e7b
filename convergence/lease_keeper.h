// One node's part in sharing the projects of one database (issue 33,
// docs/operations.md "Several nodes"). Every `tick` the keeper records the
// node's heartbeat, reads every lease (ControllerStore::Heartbeat), decides
// with PlanLeases (leases.h, pure) and writes its acquires, renewals and
// releases (conditional writes). The reconciler asks it, before each sync,
// whether this node may act on a project (Holds): a lease counts as held,
// by this node's clock, only until the moment its last successful write
// began plus the TTL minus the safety margin. So a node that is cut off
// from the database, or paused, stops acting before its lease can expire,
// and the writes it still tries are refused by their fence.
#ifndef MARIPOSA_CONVERGENCE_LEASE_KEEPER_H_
#define MARIPOSA_CONVERGENCE_LEASE_KEEPER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "convergence/leases.h"
#include "projects/store.h"

namespace mariposa::convergence {

struct LeaseKeeperOptions {
  std::string node;     // unique among the nodes of one database
  std::string address;  // where it serves gRPC, shown to operators
  LeasePolicy policy;
  absl::Duration tick = absl::Seconds(1);
  // Run after every round (on the keeper's thread): what each node reads
  // again every tick whatever the wake-ups said (its readonly state).
  std::function<void()> after_round;
};

class LeaseKeeper {
 public:
  // `gained` is called (outside the keeper's lock) with each project whose
  // lease this node has just taken: the reconciler starts on it afresh.
  LeaseKeeper(ControllerStore* store, const Clock* clock, LeaseKeeperOptions options,
              std::function<void(const std::string& project)> gained);
  ~LeaseKeeper();

  // One round (the loop's body; tests call it with a SimulatedClock).
  absl::Status RunOnce();
  // Releases whatever this node's name still holds from a run before (a
  // crash), then runs rounds every tick until Stop, which releases every
  // lease and removes the heartbeat (others take over at once).
  void Start();
  // `leave` false stops the rounds and hands nothing back: what a crash
  // looks like to the other nodes (tests).
  void Stop(bool leave = true);

  // The fence to act on `project` under, while this node holds its lease
  // with time to act; nullopt otherwise.
  std::optional<Fence> Holds(const std::string& project) const;

  struct Held {
    std::string project;
    int64_t epoch = 0;
    absl::Time act_until;  // by this node's clock
  };
  std::vector<Held> HeldNow() const;
  // What the last successful round read (nodes, leases), and its error
  // when the last round failed ("" when it did not).
  LeaseState LastState() const;
  // The live nodes of the last successful round that said where they serve:
  // (name, address), by name.
  std::vector<std::pair<std::string, std::string>> LiveAddresses() const;
  std::string LastError() const;
  const std::string& node() const { return options_.node; }
  // Where this node serves (known once it listens), shown to operators.
  void SetAddress(const std::string& address) {
    absl::MutexLock l(&mu_);
    address_ = address;
  }
  const LeasePolicy& policy() const { return options_.policy; }

 private:
  // RunOnce's steps.
  std::string DropExpired(absl::Time now);
  std::vector<LeaseWrite> WritesFor(const LeaseState& state);
  std::vector<std::string> KeepMade(const std::vector<LeaseWrite>& writes, const std::vector<bool>& made,
                                    absl::Time act_until) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ControllerStore* store_;
  const Clock* clock_;
  LeaseKeeperOptions options_;
  std::function<void(const std::string&)> gained_;
  absl::Time started_;
  mutable absl::Mutex mu_;
  std::map<std::string, Held> held_ ABSL_GUARDED_BY(mu_);
  LeaseState last_ ABSL_GUARDED_BY(mu_);
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  std::string address_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread loop_;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_LEASE_KEEPER_H_
