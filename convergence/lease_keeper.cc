#include "convergence/lease_keeper.h"

#include <algorithm>

#include "common/log.h"

namespace mariposa::convergence {

LeaseKeeper::LeaseKeeper(ControllerStore* store, const Clock* clock, LeaseKeeperOptions options,
                         std::function<void(const std::string&)> gained)
    : store_(store), clock_(clock), options_(std::move(options)), gained_(std::move(gained)), started_(clock->Now()),
      address_(options_.address) {}

LeaseKeeper::~LeaseKeeper() { Stop(); }

// One round: heartbeat (reading nodes, projects and leases), plan
// (PlanLeases, pure), write, and keep what the writes made.
absl::Status LeaseKeeper::RunOnce() {
  // Everything this round writes counts from before it asked: the database
  // computes expiries from its own (later) time.
  absl::Time began = clock_->Now();
  absl::Time act_until = began + options_.policy.ttl - options_.policy.safety;
  std::string address = DropExpired(began);
  auto state = store_->Heartbeat(options_.node, address, started_);
  if (!state.ok()) {
    absl::MutexLock l(&mu_);
    last_error_ = std::string(state.status().message());
    return state.status();
  }
  std::vector<LeaseWrite> writes = WritesFor(*state);
  auto made = store_->WriteLeases(writes);
  std::vector<std::string> gained;
  {
    absl::MutexLock l(&mu_);
    if (!made.ok()) {
      last_error_ = std::string(made.status().message());
      return made.status();
    }
    gained = KeepMade(writes, *made, act_until);
    last_ = *std::move(state);
    last_error_.clear();
  }
  for (const std::string& p : gained) {
    LogInfo("project lease taken", {{"project", p}, {"node", options_.node}});
    if (gained_) gained_(p);
  }
  return absl::OkStatus();
}

// Leases whose time to act has passed (renewals failed) are dropped whatever
// the database says now. Returns where this node serves.
std::string LeaseKeeper::DropExpired(absl::Time now) {
  absl::MutexLock l(&mu_);
  for (auto it = held_.begin(); it != held_.end();) {
    it = now >= it->second.act_until ? held_.erase(it) : std::next(it);
  }
  return address_;
}

// The writes of this round's plan. A lease the database gives to another
// holder or epoch is lost; one released stops being acted on before it is
// handed back.
std::vector<LeaseWrite> LeaseKeeper::WritesFor(const LeaseState& state) {
  std::vector<LeaseAction> plan =
      PlanLeases(options_.node, state.nodes, state.projects, state.leases, state.now, options_.policy);
  std::vector<LeaseWrite> writes;
  absl::MutexLock l(&mu_);
  for (auto it = held_.begin(); it != held_.end();) {
    auto stored = state.leases.find(it->first);
    bool still = stored != state.leases.end() && stored->second.holder == options_.node &&
                 stored->second.epoch == it->second.epoch;
    it = still ? std::next(it) : held_.erase(it);
  }
  for (const LeaseAction& a : plan) {
    LeaseWrite w;
    w.kind = a.kind == LeaseAction::kAcquire ? LeaseWrite::kAcquire
             : a.kind == LeaseAction::kRenew ? LeaseWrite::kRenew
                                             : LeaseWrite::kRelease;
    w.project = a.project;
    w.node = options_.node;
    w.expected_epoch = a.expected_epoch;
    w.epoch = a.epoch;
    w.expires = a.expires;
    if (w.kind == LeaseWrite::kRelease) held_.erase(a.project);
    // A lease this node's name holds from before (not in held_: a previous
    // run) is released rather than renewed: this run starts from the store,
    // under a new epoch.
    if (w.kind == LeaseWrite::kRenew && !held_.count(a.project)) w.kind = LeaseWrite::kRelease;
    writes.push_back(std::move(w));
  }
  return writes;
}

// What the writes made: leases taken (returned) and renewed until
// `act_until`; a renewal refused loses the lease.
std::vector<std::string> LeaseKeeper::KeepMade(const std::vector<LeaseWrite>& writes, const std::vector<bool>& made,
                                               absl::Time act_until) {
  std::vector<std::string> gained;
  for (size_t i = 0; i < writes.size(); ++i) {
    const LeaseWrite& w = writes[i];
    if (w.kind == LeaseWrite::kAcquire && made[i]) {
      held_[w.project] = Held{w.project, w.epoch, act_until};
      gained.push_back(w.project);
    } else if (w.kind == LeaseWrite::kRenew) {
      if (made[i]) {
        held_[w.project].act_until = act_until;
      } else {
        held_.erase(w.project);
      }
    }
  }
  return gained;
}

void LeaseKeeper::Start() {
  if (absl::Status s = store_->LeaveNode(options_.node); !s.ok()) {
    LogWarn("cannot release the leases of this node's previous run; they expire instead",
            {{"node", options_.node}, {"error", s.ToString()}});
  }
  loop_ = std::thread([this] {
    absl::MutexLock l(&mu_);
    while (!stop_) {
      mu_.Unlock();
      absl::Status s = RunOnce();
      if (!s.ok()) LogWarn("lease round failed", {{"node", options_.node}, {"error", s.ToString()}});
      if (options_.after_round) options_.after_round();
      mu_.Lock();
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      clock_->AwaitUntil(&mu_, absl::Condition(&stopping), clock_->Now() + options_.tick);
    }
  });
}

void LeaseKeeper::Stop(bool leave) {
  {
    absl::MutexLock l(&mu_);
    if (stop_ || !loop_.joinable()) return;
    stop_ = true;
    held_.clear();
  }
  loop_.join();
  if (!leave) return;
  if (absl::Status s = store_->LeaveNode(options_.node); !s.ok()) {
    LogWarn("cannot hand the project leases back; the other nodes take them when they expire",
            {{"node", options_.node}, {"error", s.ToString()}});
  }
}

std::optional<Fence> LeaseKeeper::Holds(const std::string& project) const {
  absl::MutexLock l(&mu_);
  auto it = held_.find(project);
  if (it == held_.end() || clock_->Now() >= it->second.act_until) return std::nullopt;
  return Fence{project, options_.node, it->second.epoch, options_.policy.safety};
}

std::vector<LeaseKeeper::Held> LeaseKeeper::HeldNow() const {
  absl::MutexLock l(&mu_);
  std::vector<Held> out;
  absl::Time now = clock_->Now();
  for (const auto& kv : held_) {
    if (now < kv.second.act_until) out.push_back(kv.second);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> LeaseKeeper::LiveAddresses() const {
  absl::MutexLock l(&mu_);
  std::vector<std::string> live = LiveNodes(last_.nodes, last_.now, options_.policy);
  std::vector<std::pair<std::string, std::string>> out;
  for (const NodeBeat& n : last_.nodes) {
    if (!n.address.empty() && std::binary_search(live.begin(), live.end(), n.node)) out.push_back({n.node, n.address});
  }
  std::sort(out.begin(), out.end());  // one row per node (its name is the key)
  return out;
}

LeaseState LeaseKeeper::LastState() const {
  absl::MutexLock l(&mu_);
  return last_;
}

std::string LeaseKeeper::LastError() const {
  absl::MutexLock l(&mu_);
  return last_error_;
}

}  // namespace mariposa::convergence
