// Discovery follows readiness (CNS, triton-cns's rules): an instance of a
// service with CNS names that is not ready is out of CNS's records — its
// triton.cns.status "down", with Mariposa's hold beside it (kDiscoveryKey)
// — and back in once ready; before a rollout, a scale-down, a stop or a
// replacement removes a running one, it is taken out and kept running for
// stop.drain, so the clients that resolved it before have resolved the
// service again when it goes. A removal that no longer goes ahead (a
// freeze, a cancelled task, a changed plan) puts it back when ready.
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "convergence/decide/decider.h"

namespace mariposa::convergence {

std::optional<DiscoveryHold> ParseDiscoveryHold(const std::string& value) {
  if (value.empty()) return std::nullopt;
  size_t space = value.find(' ');
  DiscoveryHold h;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, value.substr(0, space), &h.since, &err)) {
    h.since = absl::InfinitePast();  // unreadable: held since long ago
  }
  h.why = space == std::string::npos ? "" : value.substr(space + 1);
  return h;
}

DiscoveryChange ParseDiscoveryReason(const std::string& reason) {
  DiscoveryChange c;
  c.down = absl::StartsWith(reason, "down");
  size_t colon = reason.find(':');
  c.why = colon == std::string::npos ? "" : std::string(absl::StripLeadingAsciiWhitespace(reason.substr(colon + 1)));
  return c;
}

void ApplyDiscoveryChange(const std::string& reason, absl::Time at, InstanceState* i) {
  DiscoveryChange c = ParseDiscoveryReason(reason);
  i->cns_down = c.down;
  i->discovery = c.down ? DiscoveryHoldValue(at, c.why) : "";
}

namespace {
// Services whose instances serve through discovery at all (not agents,
// core zones, or runs to completion).
bool Serves(const ServiceSpec& spec) {
  return spec.compute_type != "agent" && spec.compute_type != "core" && !RunsToCompletion(spec);
}
}  // namespace

bool DiscoveredThroughCns(const Snapshot& s, const std::string& service) {
  if (!s.goal || s.project.deleting) return false;
  auto g = s.goal->services.find(service);
  if (g == s.goal->services.end()) return false;
  const ServiceSpec& spec = g->second.spec;
  return Serves(spec) && !CnsTagValue(s.project.name, service, spec).empty();
}

bool MadeOutOfDiscovery(const Snapshot& s, const std::string& service, bool checks_run) {
  if (!DiscoveredThroughCns(s, service)) return false;
  const ServiceSpec& spec = s.goal->services.at(service).spec;
  if (spec.start_window > absl::ZeroDuration()) return true;  // not ready before it has run start.window
  if (!checks_run) return false;
  for (const auto& [name, check] : spec.healthchecks) {
    if (check.readiness) return true;
  }
  return false;
}

std::string DiscoveryHoldValue(absl::Time since, const std::string& why) {
  return absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", since, absl::UTCTimeZone()), " ", why);
}

namespace decide_internal {
namespace {

// A step that stops a running instance serving: it goes, stops, is
// preserved, or is reprovisioned in place.
bool EndsServing(ActionKind k) {
  return k == ActionKind::kDelete || k == ActionKind::kPreserve || k == ActionKind::kStop ||
         k == ActionKind::kReprovision;
}

const char* What(ActionKind k) {
  switch (k) {
    case ActionKind::kStop: return "its stop";
    case ActionKind::kReprovision: return "its reprovision";
    default: return "its removal";
  }
}

class DiscoveryDecision {
 public:
  DiscoveryDecision(const ProjectFacts& f, std::vector<Step> steps) : f_(f) { steps_in_ = std::move(steps); }
  DiscoveryOutcome Run() && {
    Drains();
    Readiness();
    return std::move(out_);
  }

 private:
  // How long `i` drains before a step ends its serving: its service's
  // stop.drain when the service is discovered through CNS (it has CNS
  // names). An instance of a project being deleted, or of a service the
  // manifest no longer has, drains when it carries CNS names: its
  // service's stop.drain if the goal still says one, else the default.
  // nullopt: not discovered through CNS.
  std::optional<absl::Duration> DrainOf(const InstanceState& i) const {
    const ServiceGoalSpec* g = f_.GoalOf(i.service);
    if (DiscoveredThroughCns(f_.s, i.service)) return g->spec.stop_drain.value_or(f_.s.policy.default_drain);
    if (i.cns.empty() || (g != nullptr && (!f_.s.project.deleting || !Serves(g->spec)))) return std::nullopt;
    return g != nullptr ? g->spec.stop_drain.value_or(f_.s.policy.default_drain) : f_.s.policy.default_drain;
  }
  void Take(const InstanceState& i, const std::string& task, const std::string& why) {
    out_.steps.push_back({Action{ActionKind::kDiscovery, i.service, i.uuid, absl::StrCat("down: ", why)}, task, i.alias});
  }
  void Drains();
  void Readiness();

  const ProjectFacts& f_;
  std::vector<Step> steps_in_;
  std::set<std::string> acted_;  // instances with a step now, or draining
  DiscoveryOutcome out_;
};

// Each step that ends a running instance's serving waits until it has been
// out of discovery for stop.drain; the first sync takes it out.
void DiscoveryDecision::Drains() {
  for (Step& st : steps_in_) {
    acted_.insert(st.action.instance);
    auto it = st.action.instance.empty() ? f_.by_uuid.end() : f_.by_uuid.find(st.action.instance);
    std::optional<absl::Duration> drain = it == f_.by_uuid.end() ? std::nullopt : DrainOf(*it->second);
    if (it == f_.by_uuid.end() || !EndsServing(st.action.kind) || !drain || *drain <= absl::ZeroDuration() ||
        it->second->state != "running") {
      out_.steps.push_back(std::move(st));
      continue;
    }
    const InstanceState& i = *it->second;
    std::optional<DiscoveryHold> hold = i.cns_down ? ParseDiscoveryHold(i.discovery) : std::nullopt;
    if (hold && hold->since + *drain > f_.now) out_.next_change = std::min(out_.next_change, hold->since + *drain);
    if (hold && f_.now - hold->since >= *drain) {
      out_.steps.push_back(std::move(st));  // drained
      continue;
    }
    std::string why;
    if (hold) {
      why = absl::StrCat("draining: ", i.alias, " is out of discovery since ", Stamp(hold->since), ", ", What(st.action.kind),
                         " goes ahead at ", Stamp(hold->since + *drain), " (stop.drain ", FormatManifestDuration(*drain), ")");
    } else {
      why = absl::StrCat("draining: ", i.alias, " is taken out of discovery first; ", What(st.action.kind),
                         " goes ahead ", FormatManifestDuration(*drain), " later (stop.drain)");
      if (!f_.job_on.count(i.uuid)) Take(i, st.task, absl::StrCat("draining before ", What(st.action.kind)));
    }
    out_.held.push_back({st.action, why});
    out_.hold_reasons.emplace_back(st.action.service, why);
  }
}

// Every other running instance of a discovered service: out while it fails
// its readiness checks (new ones are made out), back once it is ready (only
// what Mariposa took out: an instance that set triton.cns.status itself is
// left as it is).
void DiscoveryDecision::Readiness() {
  if (!f_.s.goal) return;
  for (const auto& [svc, g] : f_.s.goal->services) {
    if (!DiscoveredThroughCns(f_.s, svc)) continue;
    for (const InstanceState* i : f_.Of(svc)) {
      if (i->state != "running" || acted_.count(i->uuid) || f_.job_on.count(i->uuid)) continue;
      bool ready = InstanceReady(*i, f_.now, g.spec.start_window);
      bool ours = i->cns_down && !i->discovery.empty();
      if (!ready && ours) {
        absl::Time at = ReadySince(*i, g.spec.start_window);  // ready by the clock (start.window)
        if (at > f_.now && at != absl::InfiniteFuture()) out_.next_change = std::min(out_.next_change, at);
      }
      // Only a failing readiness check takes a serving instance out: one
      // whose health is not known yet (a mariposad that just started, an
      // agent that moved) keeps serving as it did.
      if (i->health == "unhealthy" && !i->cns_down) {
        Take(*i, "", "not ready: failing its readiness checks");
      } else if (ready && !i->discovery.empty()) {
        // Ours to put back (or a hold left without the status by a put-back
        // that failed halfway: cleared).
        out_.steps.push_back({Action{ActionKind::kDiscovery, svc, i->uuid, std::string(kPutBackReady)}, "", i->alias});
      }
    }
  }
}

}  // namespace

DiscoveryOutcome DecideDiscovery(const ProjectFacts& f, std::vector<Step> steps) {
  return DiscoveryDecision(f, std::move(steps)).Run();
}

void Decider::Discovery() {
  DiscoveryOutcome o = DecideDiscovery(f_, std::move(steps_));
  steps_ = std::move(o.steps);
  d_.next_change = std::min(d_.next_change, o.next_change);
  Append(std::move(o.held), &d_.held);
  for (auto& [svc, why] : o.hold_reasons) hold_reason_.emplace(svc, std::move(why));
}

}  // namespace decide_internal
}  // namespace mariposa::convergence
