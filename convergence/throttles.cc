#include "convergence/throttles.h"

#include <algorithm>
#include <cmath>

namespace mariposa::convergence {

bool ServiceHistory::Failure(const RestartPolicy& p, absl::Time now, double jitter) {
  failures_.push_back(now);
  last_failure_ = now;
  while (!failures_.empty() && now - failures_.front() > p.window) failures_.pop_front();
  ++consecutive_;
  ++backoff_steps_;
  absl::Duration backoff = p.backoff_base * std::pow(2.0, std::min(backoff_steps_ - 1, 30));
  backoff = std::min(backoff, p.backoff_cap) * (0.5 + 0.5 * std::clamp(jitter, 0.0, 1.0));
  next_attempt_ = now + backoff;
  if (!crashlooping_ && p.max_attempts > 0 &&
      (static_cast<int>(failures_.size()) >= p.max_attempts || consecutive_ >= p.max_attempts)) {
    crashlooping_ = true;
    return true;
  }
  return false;
}

void ServiceHistory::Success() {
  backoff_steps_ = 0;
  next_attempt_ = absl::InfinitePast();
}

void ServiceHistory::Reset() {
  failures_.clear();
  consecutive_ = 0;
  backoff_steps_ = 0;
  crashlooping_ = false;
  last_failure_ = absl::InfinitePast();
  next_attempt_ = absl::InfinitePast();
}

bool ServiceHistory::Paused(const RestartPolicy& p, absl::Time now) const {
  return crashlooping_ && !failures_.empty() && now - failures_.back() < p.window;
}

bool ServiceHistory::EndPauseIfOver(const RestartPolicy& p, absl::Time now) {
  if (!crashlooping_ || Paused(p, now)) return false;
  crashlooping_ = false;
  failures_.clear();
  return true;
}

int64_t ServiceHistory::ReplaceBudget(int64_t count, absl::Duration interval, absl::Time now) {
  while (!replaced_.empty() && now - replaced_.front() >= interval) replaced_.pop_front();
  int64_t budget = std::max<int64_t>(1, count / 10);
  return std::max<int64_t>(0, budget - static_cast<int64_t>(replaced_.size()));
}

bool JobSlots::TryAcquire() {
  absl::MutexLock l(&mu_);
  if (free_ <= 0) return false;
  --free_;
  return true;
}

void JobSlots::Acquire() {
  absl::MutexLock l(&mu_);
  auto available = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return free_ > 0; };
  mu_.Await(absl::Condition(&available));
  --free_;
}

void JobSlots::Release() {
  absl::MutexLock l(&mu_);
  ++free_;
}

}  // namespace mariposa::convergence
