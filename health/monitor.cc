#include "health/monitor.h"

#include <random>
#include <set>

#include "absl/strings/str_cat.h"

namespace mariposa::health {
HealthMonitor::HealthMonitor(Hooks hooks) : hooks_(std::move(hooks)) {
  thread_ = std::thread([this] { Loop(); });
}

HealthMonitor::~HealthMonitor() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HealthMonitor::Assign(const std::string& group, std::vector<Target> targets) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard<std::mutex> l(mu_);
  std::set<std::string> keep;
  absl::Time now = absl::Now();
  for (Target& t : targets) {
    std::string key = TargetKey(t);
    keep.insert(key);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.group == group && SameTarget(it->second.target, t)) continue;
    Entry e{group, t, CheckState(t.policy, t.created), next_generation_++, false, "", absl::InfinitePast(), 0};
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
  cv_.notify_all();
}

std::optional<Health> HealthMonitor::InstanceHealth(const std::string& instance) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Health> states;
  for (auto it = entries_.lower_bound(instance + "/"); it != entries_.end(); ++it) {
    if (it->first.compare(0, instance.size() + 1, instance + "/") != 0) break;
    states.push_back(it->second.state.state());
  }
  if (states.empty()) return std::nullopt;
  return Worst(states);
}

std::vector<HealthMonitor::CheckStatus> HealthMonitor::Checks(const std::string& group) const {
  std::lock_guard<std::mutex> l(mu_);
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
  std::lock_guard<std::mutex> l(mu_);
  return entries_.size();
}

void HealthMonitor::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    absl::Time now = absl::Now();
    std::vector<std::pair<uint64_t, std::string>> no_address;  // fail without running
    while (!due_.empty() && due_.top().first <= now) {
      absl::Time due = due_.top().first;
      uint64_t generation = due_.top().second;
      due_.pop();
      auto it = live_.find(generation);
      if (it == live_.end() || it->second->running) continue;
      Entry& e = *it->second;
      e.running = true;
      if (hooks_.on_start) hooks_.on_start(now - due);
      if (e.target.spec.address.empty()) {
        no_address.push_back({generation, "the instance has no NIC on network " + e.target.network});
        continue;
      }
      engine_.Submit(e.target.spec, [this, generation](const CheckResult& r) { OnResult(generation, r); });
    }
    if (!no_address.empty()) {
      l.unlock();
      for (auto& [generation, why] : no_address) OnResult(generation, CheckResult{false, std::move(why), absl::ZeroDuration()});
      l.lock();
      continue;
    }
    if (due_.empty()) {
      cv_.wait_for(l, std::chrono::milliseconds(200));
    } else {
      absl::Duration wait = std::min(due_.top().first - absl::Now(), absl::Milliseconds(200));
      cv_.wait_for(l, absl::ToChronoMilliseconds(std::max(wait, absl::Milliseconds(1))));
    }
  }
}

void HealthMonitor::OnResult(uint64_t generation, const CheckResult& r) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::optional<HealthChange> change;
  std::string type;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = live_.find(generation);
    if (it == live_.end()) return;  // unassigned meanwhile
    Entry& e = *it->second;
    e.running = false;
    e.last_detail = r.pass ? "" : r.detail;
    e.last_run = absl::Now();
    e.runs++;
    type = e.target.spec.type;
    absl::Time now = absl::Now();
    Transition t = e.state.Record(r.pass, now);
    if (t.changed || t.flapping) {
      change = HealthChange{e.group, e.target.instance, e.target.check, t.from, t.to, t.flapping, r.detail};
    }
    // Next run: the state's interval, jittered by up to 10 % either way.
    absl::Time next = e.state.NextDue(now);
    absl::Duration jitter = (next - now) * std::uniform_real_distribution<double>(-0.1, 0.1)(rng);
    due_.push({next + jitter, generation});
  }
  cv_.notify_all();
  if (hooks_.on_result) hooks_.on_result(type, r.pass, r.took);
  if (change && hooks_.on_change) hooks_.on_change(*change);
}

}  // namespace mariposa::health
