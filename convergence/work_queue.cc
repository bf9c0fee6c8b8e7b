#include "convergence/work_queue.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace mariposa::convergence {

WorkQueue::WorkQueue(const Clock* clock, absl::Duration base_delay, absl::Duration max_delay)
    : clock_(clock), base_(base_delay), max_(max_delay) {}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutdown_ || !dirty_.insert(key).second) return;
  delayed_.erase(key);
  if (!processing_.count(key)) queue_.push_back(key);
}

void WorkQueue::Add(const std::string& key) {
  absl::MutexLock l(&mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, absl::Duration delay) {
  absl::MutexLock l(&mu_);
  if (shutdown_) return;
  if (delay <= absl::ZeroDuration()) return AddLocked(key);
  if (dirty_.count(key)) return;  // waits already, sooner
  absl::Time when = clock_->Now() + delay;
  auto it = delayed_.find(key);
  if (it == delayed_.end() || when < it->second) {
    delayed_[key] = when;
    ++generation_;  // a waiting Get recomputes its deadline
  }
}

void WorkQueue::AddRateLimited(const std::string& key) {
  absl::Duration delay;
  {
    absl::MutexLock l(&mu_);
    int n = failures_[key]++;
    delay = std::min(max_, base_ * std::pow(2.0, std::min(n, 30)));
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  absl::MutexLock l(&mu_);
  failures_.erase(key);
}

int WorkQueue::Failures(const std::string& key) const {
  absl::MutexLock l(&mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDueLocked() {
  if (delayed_.empty()) return;
  absl::Time now = clock_->Now();
  std::vector<std::string> due;
  for (const auto& kv : delayed_) {
    if (kv.second <= now) due.push_back(kv.first);
  }
  for (const std::string& k : due) {
    delayed_.erase(k);
    AddLocked(k);
  }
}

bool WorkQueue::Get(std::string* key) {
  absl::MutexLock l(&mu_);
  while (true) {
    PromoteDueLocked();
    if (shutdown_) return false;
    if (!queue_.empty()) break;
    absl::Time next = absl::InfiniteFuture();
    for (const auto& kv : delayed_) next = std::min(next, kv.second);
    uint64_t seen = generation_;
    auto ready = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return shutdown_ || !queue_.empty() || generation_ != seen;
    };
    clock_->AwaitUntil(&mu_, absl::Condition(&ready), next);
  }
  *key = queue_.front();
  queue_.pop_front();
  dirty_.erase(*key);
  processing_.insert(*key);
  return true;
}

void WorkQueue::Done(const std::string& key) {
  absl::MutexLock l(&mu_);
  processing_.erase(key);
  if (dirty_.count(key)) queue_.push_back(key);
}

void WorkQueue::ShutDown() {
  absl::MutexLock l(&mu_);
  shutdown_ = true;
}

int WorkQueue::Len() const {
  absl::MutexLock l(&mu_);
  return static_cast<int>(queue_.size());
}

}  // namespace mariposa::convergence
