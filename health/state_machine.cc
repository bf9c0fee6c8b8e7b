#include "health/state_machine.h"

namespace mariposa::health {

const char* HealthName(Health h) {
  switch (h) {
    case Health::kUnknown: return "unknown";
    case Health::kStarting: return "starting";
    case Health::kHealthy: return "healthy";
    case Health::kUnhealthy: return "unhealthy";
  }
  return "unknown";
}

Health Worst(const std::vector<Health>& states) {
  auto rank = [](Health h) {
    switch (h) {
      case Health::kUnhealthy: return 3;
      case Health::kStarting: return 2;
      case Health::kUnknown: return 1;
      case Health::kHealthy: return 0;
    }
    return 1;
  };
  Health worst = Health::kHealthy;
  if (states.empty()) return Health::kUnknown;
  for (Health h : states) {
    if (rank(h) > rank(worst)) worst = h;
  }
  return worst;
}

Transition CheckState::Move(Health to, absl::Time now) {
  Transition t;
  t.from = state_;
  t.to = to;
  if (to == state_) return t;
  t.changed = true;
  bool flip = (state_ == Health::kHealthy && to == Health::kUnhealthy) ||
              (state_ == Health::kUnhealthy && to == Health::kHealthy);
  state_ = to;
  if (flip) {
    flips_.push_back(now);
    while (!flips_.empty() && now - flips_.front() > policy_.flap_window) flips_.pop_front();
    if (static_cast<int>(flips_.size()) > policy_.flap_limit && now - flap_reported_ >= policy_.flap_window) {
      t.flapping = true;
      flap_reported_ = now;
    }
  }
  return t;
}

Transition CheckState::Record(bool pass, absl::Time now) {
  if (pass) {
    ever_passed_ = true;
    fails_ = 0;
    ++passes_;
    if (passes_ >= policy_.successes) return Move(Health::kHealthy, now);
    // Not enough passes yet: still starting while never healthy.
    return Move(state_ == Health::kUnknown ? Health::kStarting : state_, now);
  }
  passes_ = 0;
  if (!ever_passed_ && InWindow(now)) return Move(Health::kStarting, now);  // grace: not counted
  if (!ever_passed_) return Move(Health::kUnhealthy, now);  // the window ended without a pass
  ++fails_;
  if (fails_ >= policy_.retries) return Move(Health::kUnhealthy, now);
  return Move(state_, now);
}

Transition CheckState::Tick(absl::Time now) {
  if (!ever_passed_ && !InWindow(now) && state_ != Health::kUnhealthy) return Move(Health::kUnhealthy, now);
  return Move(state_, now);
}

absl::Time CheckState::NextDue(absl::Time last) const {
  return last + (state_ == Health::kHealthy ? policy_.interval : policy_.unhealthy_interval);
}

}  // namespace mariposa::health
