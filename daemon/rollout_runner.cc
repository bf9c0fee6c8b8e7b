#include "daemon/rollout_runner.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"

namespace mariposa {

DataCenterAnswer AnswerOf(const absl::StatusOr<v1::GetStateResponse>& state) {
  DataCenterAnswer a;
  if (!state.ok()) {
    a.error = std::string(state.status().message());
    if (absl::IsNotFound(state.status())) {
      // No such project there: it runs nothing of it, as a data center
      // the manifest no longer lists should.
      a.answered = true;
      a.converged = true;
      a.progress = "the project is not there";
    }
    return a;
  }
  a.answered = true;
  a.version = state->version();
  a.converged = state->converged() && state->actual_known();
  std::vector<std::string> parts;
  for (const auto& s : state->services()) {
    // Failed, or paused (a crash loop, a failed canary): it does not
    // converge without someone there.
    if ((s.verdict() == "failed" || s.verdict() == "paused") && a.failed.empty()) {
      a.failed = absl::StrCat(s.name(), " ", s.verdict(), ": ", s.reason(), s.fix().empty() ? "" : absl::StrCat(" (fix: ", s.fix(), ")"));
    }
    parts.push_back(absl::StrCat(s.name(), " ", s.verdict(), s.reason().empty() ? "" : ": " + s.reason()));
  }
  a.progress = absl::StrJoin(parts, "; ");
  return a;
}

RolloutRunner::RolloutRunner(RolloutStore* store, DataCenterLink link, const Clock* clock, absl::Duration interval,
                             std::function<bool()> held)
    : store_(store), link_(std::move(link)), clock_(clock), interval_(interval), held_(std::move(held)) {}

RolloutRunner::~RolloutRunner() { Stop(); }

void RolloutRunner::Start() { thread_ = std::thread([this] { Run(); }); }

void RolloutRunner::Stop() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void RolloutRunner::Poke() {
  absl::MutexLock l(&mu_);
  poked_ = true;
}

void RolloutRunner::Run() {
  absl::MutexLock l(&mu_);
  while (!stop_) {
    poked_ = false;
    mu_.Unlock();
    RunOnce();
    mu_.Lock();
    auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || poked_; };
    clock_->AwaitUntil(&mu_, absl::Condition(&wake), clock_->Now() + interval_);
  }
}

void RolloutRunner::RunOnce() {
  if (held_ && held_()) return;
  auto active = store_->ListRollouts("", /*all=*/false);
  if (!active.ok()) {
    LogError("cannot read the rollouts across data centers", {{"error", active.status().ToString()}});
    return;
  }
  for (const RolloutRecord& r : *active) Drive(r);
}

void RolloutRunner::Drive(const RolloutRecord& r) {
  std::map<std::string, DataCenterAnswer> answers;
  for (const RolloutStep& s : r.steps) {
    if (s.state == "sent") answers[s.datacenter] = AnswerOf(link_.state(s.datacenter, r.project));
  }
  RolloutDecision d = DecideRollout(r, answers, clock_->Now());
  RolloutRecord next = d.next;
  std::vector<std::string> events = d.events;
  for (const RolloutAction& a : d.actions) {
    if (a.kind == RolloutAction::kRollback) {
      absl::Status st = link_.rollback(a.datacenter, r.project, a.to_version,
                                       absl::StrCat("rollout ", r.uuid, " failed"));
      if (!st.ok()) {
        events.push_back(absl::StrCat(a.datacenter, ": the rollback to ", a.to_version,
                                      " was not made: ", st.message(), "; roll back there by hand (`mariposa --addr <",
                                      a.datacenter, "'s mariposad> -j ", r.project, " rollback ", a.to_version, "`)"));
      }
      continue;
    }
    v1::ReceiveVersionRequest req;
    req.set_project(r.project);
    req.set_manifest(r.manifest);
    req.set_version_uuid(r.version_uuid);
    req.set_origin(absl::StrCat(r.author, " through ", r.origin, " (rollout ", r.uuid.substr(0, 8), ")"));
    req.set_message(absl::StrCat("rollout ", r.uuid, " across data centers"));
    auto sent = link_.send(a.datacenter, req);
    SendResult res;
    if (sent.ok()) {
      res.stored = true;
      res.number = sent->version().number();
      // Already there (sent again, or the same document): nothing of ours to undo.
      res.previous = sent->changed() ? sent->base_version() : "";
    } else if (absl::IsUnavailable(sent.status()) || absl::IsDeadlineExceeded(sent.status()) ||
               (absl::IsFailedPrecondition(sent.status()) && absl::StrContains(sent.status().message(), "not a peer"))) {
      res.unreachable = std::string(sent.status().message());
    } else {
      res.refused = std::string(sent.status().message());
    }
    std::string e = AfterSend(&next, a.datacenter, res, clock_->Now());
    if (!e.empty()) events.push_back(e);
  }
  // Written when anything changed, the time of a data center's last
  // answer included (what `rollouts` shows as the age of what it knows).
  bool changed = next.state != r.state || next.message != r.message || !events.empty();
  for (size_t i = 0; !changed && i < next.steps.size(); ++i) {
    changed = next.steps[i].state != r.steps[i].state || next.steps[i].detail != r.steps[i].detail ||
              next.steps[i].last_answer != r.steps[i].last_answer;
  }
  if (!changed) return;
  auto kind = next.state == "active" ? "datacenter.rollout.step" : "datacenter.rollout." + next.state;
  auto written = store_->UpdateRollout(next, "mariposad", kind, absl::StrJoin(events, "; "));
  if (!written.ok() && !absl::IsFailedPrecondition(written.status())) {
    LogError("cannot record a rollout's progress", {{"rollout", r.uuid}, {"error", written.status().ToString()}});
  }
}

}  // namespace mariposa
