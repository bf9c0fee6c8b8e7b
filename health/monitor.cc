#include "health/monitor.h"

#include <algorithm>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"

namespace mariposa::health {
HealthMonitor::HealthMonitor(Hooks hooks, const Clock* clock)
    : hooks_(std::move(hooks)), clock_(clock), engine_(clock) {
  thread_ = std::thread([this] { Loop(); });
}

HealthMonitor::~HealthMonitor() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void HealthMonitor::Assign(const std::string& group, std::vector<Target> targets) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  absl::MutexLock l(&mu_);
  std::set<std::string> keep;
  absl::Time now = clock_->Now();
  for (Target& t : targets) {
    std::string key = TargetKey(t);
    keep.insert(key);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.group == group && SameTarget(it->second.target, t)) continue;
    // The start window runs from the instance's creation, or from now when
    // the check begins later: an instance checked again after it was not
    // running (a restart, a zone reprovisioned in place: its service is not
    // listening the moment VMAPI says it runs) gets its window again, as a
    // created one does.
    Entry e{group, t, CheckState(t.policy, std::max(t.created, now)), next_generation_++, false, "",
            absl::InfinitePast(), 0};
    // Spread first runs over the interval so that a new batch is no burst.
    absl::Duration first = t.policy.unhealthy_interval * std::uniform_real_distribution<double>(0, 1)(rng);
    due_.push({now + first, e.generation});
    if (it != entries_.end()) live_.erase(it->second.generation);
    Entry& stored = entries_.insert_or_assign(key, std::move(e)).first->second;
    live_[stored.generation] = &stored;
  }
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.group == group && !keep.count(it->first)) {
      live_.erase(it->second.generation);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  woken_ = true;
}

std::optional<Health> HealthMonitor::InstanceHealth(const std::string& instance) const {
  absl::MutexLock l(&mu_);
  std::vector<Health> states;
  for (auto it = entries_.lower_bound(instance + "/"); it != entries_.end(); ++it) {
    if (it->first.compare(0, instance.size() + 1, instance + "/") != 0) break;
    states.push_back(it->second.state.state());
  }
  if (states.empty()) return std::nullopt;
  return Worst(states);
}

std::vector<HealthMonitor::CheckStatus> HealthMonitor::Checks(const std::string& group) const {
  absl::MutexLock l(&mu_);
  std::vector<CheckStatus> out;
  for (const auto& kv : entries_) {
    const Entry& e = kv.second;
    if (!group.empty() && e.group != group) continue;
    out.push_back({e.group, e.target.instance, e.target.check, e.target.spec.type, e.target.spec.address, e.target.spec.port,
                   e.state.state(), e.last_detail, e.last_run, e.runs});
  }
  return out;
}

size_t HealthMonitor::targets() const {
  absl::MutexLock l(&mu_);
  return entries_.size();
}

void HealthMonitor::Loop() {
  absl::MutexLock l(&mu_);
  while (!stop_) {
    ++loop_passes_;
    absl::Time now = clock_->Now();
    std::vector<std::pair<uint64_t, std::string>> no_address;  // fail without running
    while (!due_.empty() && due_.top().first <= now + kBatch) {
      absl::Time due = due_.top().first;
      uint64_t generation = due_.top().second;
      due_.pop();
      auto it = live_.find(generation);
      if (it == live_.end() || it->second->running) continue;
      Entry& e = *it->second;
      e.running = true;
      if (hooks_.on_start) hooks_.on_start(std::max(now - due, absl::ZeroDuration()));
      if (e.target.spec.address.empty()) {
        no_address.push_back({generation, "the instance has no NIC on network " + e.target.network});
        continue;
      }
      engine_.Submit(e.target.spec, [this, generation](const CheckResult& r) { OnResult(generation, r); });
    }
    if (!no_address.empty()) {
      mu_.Unlock();
      for (auto& [generation, why] : no_address) OnResult(generation, CheckResult{false, std::move(why), absl::ZeroDuration()});
      mu_.Lock();
      continue;
    }
    // Until the next check is due, or the schedule changes.
    absl::Time next = due_.empty() ? absl::InfiniteFuture() : due_.top().first;
    woken_ = false;
    sleeping_until_ = next;
    auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || woken_; };
    clock_->AwaitUntil(&mu_, absl::Condition(&wake), next);
  }
}

void HealthMonitor::OnResult(uint64_t generation, const CheckResult& r) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::optional<HealthChange> change;
  std::string type;
  {
    absl::MutexLock l(&mu_);
    auto it = live_.find(generation);
    if (it == live_.end()) return;  // unassigned meanwhile
    Entry& e = *it->second;
    e.running = false;
    e.last_detail = r.pass ? "" : r.detail;
    absl::Time now = clock_->Now();
    e.last_run = now;
    e.runs++;
    type = e.target.spec.type;
    Transition t = e.state.Record(r.pass, now);
    if (t.changed || t.flapping) {
      change = HealthChange{e.group, e.target.instance, e.target.check, t.from, t.to, t.flapping, r.detail};
    }
    // Next run: the state's interval, jittered by up to 10 % either way.
    absl::Time next = e.state.NextDue(now);
    absl::Duration jitter = (next - now) * std::uniform_real_distribution<double>(-0.1, 0.1)(rng);
    due_.push({next + jitter, generation});
    if (next + jitter < sleeping_until_) woken_ = true;
  }
  if (hooks_.on_result) hooks_.on_result(type, r.pass, r.took);
  if (change && hooks_.on_change) hooks_.on_change(*change);
}

}  // namespace mariposa::health
