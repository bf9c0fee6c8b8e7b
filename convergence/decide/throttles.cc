#include "convergence/decide/throttles.h"

#include <algorithm>
#include <cmath>

namespace mariposa::convergence {

bool ServiceHistory::Failure(const RestartPolicy& p, absl::Time now, double jitter) {
  s_.failures.push_back(now);
  s_.last_failure = now;
  while (!s_.failures.empty() && now - s_.failures.front() > p.window) s_.failures.pop_front();
  ++s_.consecutive;
  ++s_.backoff_steps;
  absl::Duration backoff = p.backoff_base * std::pow(2.0, std::min(s_.backoff_steps - 1, 30));
  backoff = std::min(backoff, p.backoff_cap) * (0.5 + 0.5 * std::clamp(jitter, 0.0, 1.0));
  s_.next_attempt = now + backoff;
  if (!s_.crashlooping && p.max_attempts > 0 &&
      (static_cast<int>(s_.failures.size()) >= p.max_attempts || s_.consecutive >= p.max_attempts)) {
    s_.crashlooping = true;
    return true;
  }
  return false;
}

void ServiceHistory::Success() {
  s_.backoff_steps = 0;
  s_.next_attempt = absl::InfinitePast();
}

void ServiceHistory::Reset() {
  s_.failures.clear();
  s_.consecutive = 0;
  s_.backoff_steps = 0;
  s_.crashlooping = false;
  s_.last_failure = absl::InfinitePast();
  s_.next_attempt = absl::InfinitePast();
}

bool ServiceHistory::Paused(const RestartPolicy& p, absl::Time now) const {
  return s_.crashlooping && !s_.failures.empty() && now - s_.failures.back() < p.window;
}

bool ServiceHistory::EndPauseIfOver(const RestartPolicy& p, absl::Time now) {
  if (!s_.crashlooping || Paused(p, now)) return false;
  s_.crashlooping = false;
  s_.failures.clear();
  return true;
}

int64_t ServiceHistory::ReplaceBudget(int64_t count, absl::Duration interval, absl::Time now) {
  while (!s_.replaced.empty() && now - s_.replaced.front() >= interval) s_.replaced.pop_front();
  int64_t budget = std::max<int64_t>(1, count / 10);
  return std::max<int64_t>(0, budget - static_cast<int64_t>(s_.replaced.size()));
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
