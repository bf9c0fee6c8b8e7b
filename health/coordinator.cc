#include "health/coordinator.h"

#include <algorithm>
#include <chrono>

namespace mariposa::health {

Coordinator::Coordinator(const Clock* clock, absl::Duration lease, OnChanges on_changes)
    : clock_(clock), lease_(lease), on_changes_(std::move(on_changes)) {}

bool Coordinator::Reaches(const Agent& a, const Target& t) const {
  if (a.hello.networks.empty()) return true;
  return std::find(a.hello.networks.begin(), a.hello.networks.end(), t.network) != a.hello.networks.end();
}

std::string Coordinator::OwnerOf(const Target& t) const {
  std::string best;
  uint64_t best_score = 0;
  for (const auto& kv : agents_) {
    if (!Reaches(kv.second, t)) continue;
    uint64_t s = RendezvousScore(kv.first, t.instance);
    if (best.empty() || s > best_score) {
      best = kv.first;
      best_score = s;
    }
  }
  return best;
}

void Coordinator::SetOwner(const std::string& key, Check& c, const std::string& owner) {
  if (c.owner == owner) return;
  if (auto old = agents_.find(c.owner); old != agents_.end()) {
    old->second.to_add.erase(key);
    old->second.to_remove.insert(key);
    old->second.removed_group[key] = c.group;
  }
  if (auto now = agents_.find(owner); now != agents_.end()) {
    now->second.to_remove.erase(key);
    now->second.to_add.insert(key);
  }
  c.owner = owner;
}

void Coordinator::Reshard() {
  for (auto& kv : checks_) SetOwner(kv.first, kv.second, OwnerOf(kv.second.target));
}

void Coordinator::DropLocked(const std::string& agent) {
  agents_.erase(agent);
  for (auto& kv : checks_) {
    if (kv.second.owner == agent) kv.second.owner.clear();
  }
}

void Coordinator::Assign(const std::string& group, std::vector<Target> targets) {
  absl::MutexLock l(&mu_);
  std::set<std::string> keep;
  std::set<std::string>& mine = by_group_[group];
  for (Target& t : targets) {
    std::string key = TargetKey(t);
    keep.insert(key);
    auto it = checks_.find(key);
    if (it != checks_.end() && it->second.group == group && SameTarget(it->second.target, t)) {
      it->second.target.readiness = t.readiness;  // what a failure means is mariposad's alone
      it->second.target.liveness = t.liveness;
      continue;
    }
    if (it != checks_.end() && it->second.group != group) by_group_[it->second.group].erase(key);
    bool existed = it != checks_.end();
    Check& c = checks_[key];
    c.group = group;
    c.target = std::move(t);
    if (existed) {
      // A changed check starts over on its agent, so here too.
      c.state = Health::kUnknown;
      c.detail.clear();
      c.since = clock_->Now();
    }
    mine.insert(key);
    std::string owner = OwnerOf(c.target);
    if (owner == c.owner) {
      if (auto a = agents_.find(owner); a != agents_.end()) a->second.to_add.insert(key);
    } else {
      SetOwner(key, c, owner);
    }
  }
  for (auto it = mine.begin(); it != mine.end();) {
    if (keep.count(*it)) {
      ++it;
      continue;
    }
    auto c = checks_.find(*it);
    if (c != checks_.end()) {
      if (auto a = agents_.find(c->second.owner); a != agents_.end()) {
        a->second.to_add.erase(*it);
        a->second.to_remove.insert(*it);
        a->second.removed_group[*it] = group;
      }
      checks_.erase(c);
    }
    it = mine.erase(it);
  }
  if (mine.empty()) by_group_.erase(group);
}

std::optional<Health> Coordinator::InstanceHealth(const std::string& instance) const {
  absl::MutexLock l(&mu_);
  std::vector<Health> states;
  std::string prefix = instance + "/";
  for (auto it = checks_.lower_bound(prefix); it != checks_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
       ++it) {
    states.push_back(it->second.state);
  }
  if (states.empty()) return std::nullopt;
  return Worst(states);
}

std::optional<Health> Coordinator::InstanceHealth(const std::string& instance, Purpose purpose) const {
  absl::MutexLock l(&mu_);
  std::vector<Health> states;
  std::string prefix = instance + "/";
  for (auto it = checks_.lower_bound(prefix); it != checks_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
       ++it) {
    const Target& t = it->second.target;
    if (purpose == Purpose::kReadiness ? t.readiness : t.liveness) states.push_back(it->second.state);
  }
  if (states.empty()) return std::nullopt;
  return Worst(states);
}

std::vector<Coordinator::CheckStatus> Coordinator::Checks(const std::string& group) const {
  absl::MutexLock l(&mu_);
  std::vector<CheckStatus> out;
  auto g = by_group_.find(group);
  if (g == by_group_.end()) return out;
  for (const std::string& key : g->second) {
    auto it = checks_.find(key);
    if (it == checks_.end()) continue;
    const Check& c = it->second;
    out.push_back({c.target.instance, c.target.check, c.target.spec.type, c.target.spec.address, c.target.spec.port,
                   c.state, c.detail, c.since, c.owner});
  }
  return out;
}

uint64_t Coordinator::Connect(const AgentHello& hello) {
  absl::MutexLock l(&mu_);
  DropLocked(hello.id);  // a reconnect replaces the old session
  Agent& a = agents_[hello.id];
  a.hello = hello;
  a.session = next_session_++;
  a.connected = a.last_seen = clock_->Now();
  Reshard();
  // The first assignment is the whole share, whatever Reshard queued.
  a.reset = true;
  a.to_add.clear();
  a.to_remove.clear();
  a.removed_group.clear();
  return a.session;
}

void Coordinator::Disconnect(const std::string& agent, uint64_t session) {
  absl::MutexLock l(&mu_);
  auto it = agents_.find(agent);
  if (it == agents_.end() || it->second.session != session) return;
  DropLocked(agent);
  Reshard();
}

bool Coordinator::Touch(const std::string& agent, uint64_t session, const AgentCounters* counters) {
  absl::MutexLock l(&mu_);
  auto it = agents_.find(agent);
  if (it == agents_.end() || it->second.session != session) return false;
  it->second.last_seen = clock_->Now();
  if (counters != nullptr) it->second.counters = *counters;
  return true;
}

void Coordinator::Report(const std::string& agent, uint64_t session, const std::vector<HealthChange>& changes) {
  std::vector<HealthChange> emit;
  {
    absl::MutexLock l(&mu_);
    auto a = agents_.find(agent);
    if (a == agents_.end() || a->second.session != session) {
      ignored_ += static_cast<int64_t>(changes.size());
      return;
    }
    absl::Time now = clock_->Now();
    a->second.last_seen = now;
    for (const HealthChange& ch : changes) {
      auto it = checks_.find(TargetKey(ch.instance, ch.check));
      if (it == checks_.end() || it->second.owner != agent) {
        ignored_++;
        continue;
      }
      Check& c = it->second;
      Health before = c.state;
      if (ch.to == Health::kHealthy) {
        c.detail.clear();
      } else if (!ch.detail.empty()) {
        c.detail = ch.detail;
      }
      if (before != ch.to) {
        c.state = ch.to;
        c.since = now;
        emit.push_back({c.group, ch.instance, ch.check, before, ch.to, false, ch.detail, c.target.alias});
      }
      if (ch.flapping) emit.push_back({c.group, ch.instance, ch.check, ch.to, ch.to, true, ch.detail, c.target.alias});
    }
  }
  if (on_changes_ && !emit.empty()) on_changes_(emit);
}

std::optional<Assignment> Coordinator::TakeAssignment(const std::string& agent, uint64_t session,
                                                      absl::Duration wait) {
  absl::MutexLock l(&mu_);
  absl::Time deadline = clock_->Now() + wait;
  // Something for this session: work, or the session ended.
  auto news = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = agents_.find(agent);
    if (it == agents_.end() || it->second.session != session) return true;
    return it->second.reset || !it->second.to_add.empty() || !it->second.to_remove.empty();
  };
  while (true) {
    auto it = agents_.find(agent);
    if (it == agents_.end() || it->second.session != session) return std::nullopt;
    Agent& a = it->second;
    if (a.reset || !a.to_add.empty() || !a.to_remove.empty()) {
      Assignment out;
      out.reset = a.reset;
      if (a.reset) {
        for (const auto& kv : checks_) {
          if (kv.second.owner == agent) out.add.push_back({kv.second.group, kv.second.target});
        }
      } else {
        for (const std::string& key : a.to_add) {
          auto c = checks_.find(key);
          if (c != checks_.end() && c->second.owner == agent) out.add.push_back({c->second.group, c->second.target});
        }
        for (const std::string& key : a.to_remove) {
          auto c = checks_.find(key);
          if (c != checks_.end() && c->second.owner == agent) continue;  // moved back meanwhile
          auto g = a.removed_group.find(key);
          out.remove.push_back({g != a.removed_group.end() ? g->second : "", key});
        }
      }
      a.reset = false;
      a.to_add.clear();
      a.to_remove.clear();
      a.removed_group.clear();
      return out;
    }
    if (!clock_->AwaitUntil(&mu_, absl::Condition(&news), deadline)) return Assignment{};
  }
}

std::vector<std::string> Coordinator::ExpireAgents() {
  absl::MutexLock l(&mu_);
  absl::Time now = clock_->Now();
  std::vector<std::string> gone;
  for (const auto& kv : agents_) {
    if (now - kv.second.last_seen > lease_) gone.push_back(kv.first);
  }
  for (const std::string& id : gone) DropLocked(id);
  if (!gone.empty()) {
    Reshard();
  }
  return gone;
}

std::vector<Coordinator::AgentStatus> Coordinator::Agents() const {
  absl::MutexLock l(&mu_);
  std::map<std::string, int64_t> owned;
  for (const auto& kv : checks_) owned[kv.second.owner]++;
  std::vector<AgentStatus> out;
  for (const auto& kv : agents_) {
    out.push_back({kv.second.hello, kv.second.connected, kv.second.last_seen, kv.second.counters, owned[kv.first]});
  }
  return out;
}

int64_t Coordinator::unowned() const {
  absl::MutexLock l(&mu_);
  int64_t n = 0;
  for (const auto& kv : checks_) n += kv.second.owner.empty() ? 1 : 0;
  return n;
}

int64_t Coordinator::ignored_reports() const {
  absl::MutexLock l(&mu_);
  return ignored_;
}

}  // namespace mariposa::health
