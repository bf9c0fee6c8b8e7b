#include "projects/rollout_plan.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mariposa {
namespace {

std::string Age(absl::Time then, absl::Time now) {
  if (then == absl::InfinitePast()) return "never";
  return absl::StrCat(absl::FormatDuration(absl::Seconds(absl::ToInt64Seconds(now - then))), " ago");
}

RolloutStep* Find(RolloutRecord* r, const std::string& dc) {
  for (RolloutStep& s : r->steps) {
    if (s.datacenter == dc) return &s;
  }
  return nullptr;
}

void Enter(RolloutStep* s, const std::string& state, std::string detail, absl::Time now,
           std::vector<std::string>* events) {
  s->state = state;
  s->since = now;
  s->detail = std::move(detail);
  events->push_back(absl::StrCat(s->datacenter, ": ", state, s->detail.empty() ? "" : " (" + s->detail + ")"));
}

// Reads one answer into a sent step.
void Read(RolloutStep* s, const DataCenterAnswer& a, absl::Time now, std::vector<std::string>* events) {
  if (!a.answered) {
    s->detail = absl::StrCat("no answer (last ", Age(s->last_answer, now), "): ", a.error);
    return;
  }
  s->last_answer = now;
  if (a.version > s->number) {
    Enter(s, "failed",
          absl::StrCat("superseded: version ", a.version, " was applied there after this rollout's version ",
                       s->number),
          now, events);
  } else if (a.version == s->number && !a.failed.empty()) {
    Enter(s, "failed", a.failed, now, events);
  } else if (a.version == s->number && a.converged) {
    Enter(s, "converged", absl::StrCat("version ", s->number, " converged"), now, events);
  } else {
    s->detail = a.progress.empty() ? "converging" : a.progress;
  }
}

}  // namespace

RolloutDecision DecideRollout(const RolloutRecord& r, const std::map<std::string, DataCenterAnswer>& answers,
                              absl::Time now) {
  RolloutDecision d;
  d.next = r;
  if (r.state != "active") return d;
  std::vector<RolloutStep>& steps = d.next.steps;
  for (RolloutStep& s : steps) {
    auto a = answers.find(s.datacenter);
    if (s.state == "sent" && a != answers.end()) Read(&s, a->second, now, &d.events);
  }

  const RolloutStep* failed = nullptr;
  for (const RolloutStep& s : steps) {
    if (s.state == "failed" && failed == nullptr) failed = &s;
  }
  if (failed != nullptr) {
    const std::string who = failed->datacenter, why = failed->detail;
    std::vector<std::string> kept, rolled;
    for (RolloutStep& s : steps) {
      if (s.state == "pending") {
        Enter(&s, "not started", absl::StrCat(who, " failed; its version there is unchanged"), now, &d.events);
      } else if ((s.state == "converged" || s.state == "sent") && r.on_failure == "rollback") {
        if (s.previous_version.empty()) {
          s.detail += "; kept: the project was new there, there is no version to go back to";
          kept.push_back(s.datacenter);
        } else {
          d.actions.push_back({RolloutAction::kRollback, s.datacenter, s.previous_version});
          Enter(&s, "rolled-back", absl::StrCat("back to ", s.previous_version, " because ", who, " failed"), now,
                &d.events);
          rolled.push_back(s.datacenter);
        }
      } else if (s.state == "converged" || s.state == "sent") {
        kept.push_back(s.datacenter);
      }
    }
    d.next.state = "failed";
    d.next.message = absl::StrCat(
        who, " failed: ", why, rolled.empty() ? "" : absl::StrCat("; rolled back in ", absl::StrJoin(rolled, ", ")),
        kept.empty() ? "" : absl::StrCat("; ", absl::StrJoin(kept, ", "), " keep", kept.size() == 1 ? "s" : "",
                                         " the new version"),
        "; the data centers not started keep theirs. Fix: see `mariposa --addr <", who,
        "'s mariposad> status`, then apply again");
    d.events.push_back(absl::StrCat("rollout failed: ", d.next.message));
    return d;
  }

  bool all = true;
  for (const RolloutStep& s : steps) all = all && s.state == "converged";
  if (all) {
    std::vector<std::string> names;
    for (const RolloutStep& s : steps) names.push_back(s.datacenter);
    d.next.state = "completed";
    d.next.message = absl::StrCat("converged in every data center: ", absl::StrJoin(names, ", "));
    d.events.push_back(absl::StrCat("rollout completed: ", d.next.message));
    return d;
  }

  int in_flight = 0;
  for (const RolloutStep& s : steps) in_flight += s.state == "sent";
  // The canary goes alone: nothing else starts until it converged.
  const bool canary_open = !steps.empty() && steps[0].canary && steps[0].state != "converged";
  std::vector<std::string> waiting;
  for (size_t i = 0; i < steps.size(); ++i) {
    const RolloutStep& s = steps[i];
    if (s.state == "sent") waiting.push_back(absl::StrCat(s.datacenter, " (", s.detail, ")"));
    if (s.state != "pending") continue;
    if ((canary_open && i > 0) || in_flight >= r.max_parallel) continue;
    d.actions.push_back({RolloutAction::kSend, s.datacenter, ""});
    ++in_flight;
  }
  d.next.message = waiting.empty() ? "sending" : absl::StrCat("waiting for ", absl::StrJoin(waiting, ", "));
  return d;
}

std::string AfterSend(RolloutRecord* r, const std::string& datacenter, const SendResult& result, absl::Time now) {
  RolloutStep* s = Find(r, datacenter);
  if (s == nullptr || s->state != "pending") return "";
  std::vector<std::string> events;
  if (result.stored) {
    s->number = result.number;
    s->previous_version = result.previous;
    s->last_answer = now;
    Enter(s, "sent", absl::StrCat("stored as version ", result.number, "; converging"), now, &events);
  } else if (!result.refused.empty()) {
    Enter(s, "failed", absl::StrCat("refused the version: ", result.refused), now, &events);
  } else {
    s->detail = absl::StrCat("not reached (tried again at the next look): ", result.unreachable);
    return "";
  }
  return events.front();
}

std::string StepLine(const RolloutStep& s, absl::Time now) {
  std::string state = s.state;
  // Sent, and silent for a while: what it does is not known.
  if (s.state == "sent" && s.last_answer != absl::InfinitePast() && now - s.last_answer > absl::Seconds(15)) {
    state = absl::StrCat("unknown (last answer ", Age(s.last_answer, now), ")");
  }
  return absl::StrCat(s.datacenter, s.canary ? " (canary)" : "", ": ", state,
                      s.number > 0 ? absl::StrCat(", version ", s.number) : "",
                      s.detail.empty() ? "" : absl::StrCat(": ", s.detail));
}

}  // namespace mariposa
