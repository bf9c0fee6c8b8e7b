// mariposa rollouts: the versions on their way across data centers (issue
// 52, point 3), and what apply prints when it starts one.
#include "cli/command.h"
#include "projects/rollout_plan.h"

namespace mariposa::cmd {
namespace {

absl::Time TimeOf(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

// One line per data center, as the rollout's record says it
// (projects/rollout_plan.h StepLine).
std::string StepText(const v1::DataCenterStep& p, absl::Time now) {
  RolloutStep s;
  s.datacenter = p.datacenter();
  s.state = p.state();
  s.number = p.number();
  s.detail = p.detail();
  s.canary = p.canary();
  if (p.has_last_answer()) s.last_answer = TimeOf(p.last_answer());
  return "  " + StepLine(s, now);
}

std::string RolloutText(const v1::DataCenterRollout& r, absl::Time now) {
  std::string out = absl::StrCat("rollout ", r.uuid(), " of project ", r.project(), " version ", r.version_uuid(),
                                 " (hash ", r.hash().substr(0, 12), "), from ", r.origin(), " by ", r.author(), ": ",
                                 r.state(), r.message().empty() ? "" : absl::StrCat(" — ", r.message()), "\n");
  for (const auto& s : r.steps()) absl::StrAppend(&out, StepText(s, now), "\n");
  return out;
}

Result List(Context& c, const Parsed& p) {
  v1::ListRolloutsRequest req;
  req.set_project(c.project());
  req.set_all(p.Has("--all"));
  v1::ListRolloutsResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->ListRollouts(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  if (resp.rollouts().empty()) {
    c.out() << (p.Has("--all") ? "no rollouts across data centers\n"
                               : "no rollout across data centers under way (--all: the ended ones too)\n");
    return 0;
  }
  for (const auto& r : resp.rollouts()) c.out() << RolloutText(r, c.clock->Now());
  return 0;
}

Result Cancel(Context& c, const Parsed& p) {
  v1::CancelRolloutRequest req;
  req.set_project(c.project());
  req.set_rollout(p.args()[0]);
  v1::CancelRolloutResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->CancelRollout(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  c.out() << RolloutText(resp.rollout(), c.clock->Now());
  return 0;
}

}  // namespace

Result FollowRollout(Context& c, const v1::DataCenterRollout& started, bool wait) {
  c.out() << "started " << RolloutText(started, c.clock->Now());
  c.out() << "the version goes to each data center in that order once the one before converged; follow it with "
             "`mariposa -j "
          << started.project() << " rollouts`" << (wait ? "" : " (or apply --wait)") << "\n";
  if (!wait) return 0;
  absl::Time start = c.clock->Now();
  absl::Duration timeout = WaitBudget(c, start, absl::Minutes(30));
  auto still = [&] {
    c.err() << "mariposa: the rollout is still under way after " << absl::FormatDuration(timeout)
            << " (--timeout); it goes on: `mariposa -j " << started.project() << " rollouts` shows it\n";
    return 1;
  };
  std::string last;
  while (true) {
    v1::ListRolloutsRequest req;
    req.set_project(started.project());
    req.set_all(true);
    v1::ListRolloutsResponse resp;
    grpc::Status got = c.d().projects->ListRollouts(c.d().Ctx().get(), req, &resp);
    if (!got.ok() && c.d().CommandTimedOut()) return still();
    RETURN_IF_ERROR(c.d().Check(got));
    const v1::DataCenterRollout* r = nullptr;
    for (const auto& x : resp.rollouts()) {
      if (x.uuid() == started.uuid()) r = &x;
    }
    if (r == nullptr) return absl::NotFoundError(absl::StrCat("rollout ", started.uuid(), " is gone"));
    std::string now;
    for (const auto& s : r->steps()) absl::StrAppend(&now, StepText(s, c.clock->Now()), "\n");
    absl::Duration waited = c.clock->Now() - start;
    if (now != last) {
      c.out() << "[" << absl::ToInt64Seconds(waited) << "s]\n" << now;
      c.out().flush();
      last = now;
    }
    if (r->state() == "completed") {
      c.out() << "rollout completed: " << r->message() << "\n";
      return 0;
    }
    if (r->state() != "active") {
      c.err() << "mariposa: rollout " << r->state() << ": " << r->message() << "\n";
      return 1;
    }
    if (waited >= timeout) return still();
    c.clock->SleepFor(std::min(absl::Milliseconds(500), timeout - waited));
  }
}

void AddRollouts(cli::Registry& r) {
  r.Add({.path = "rollouts",
         .summary = "versions on their way across data centers, and where each stands",
         .help = "A manifest that lists several data centers (datacenters:) is applied through any one of\n"
                 "their mariposads; that one sends the version to each in datacenter_rollout's order, the next\n"
                 "only once the one before converged. This lists the rollouts under way (--all: the ended ones\n"
                 "too) of the project (-j) or of every project: each data center's state, its version number\n"
                 "there and what it last said; \"unknown\" with the age of its last answer when it is silent.",
         .group = "Manifests and versions",
         .flags = {{{"--all"}, "", "also the rollouts that ended"}},
         .project = ProjectUse::kOptional,
         .run = List});
  r.Add({.path = "rollouts cancel",
         .args = "ROLLOUT",
         .summary = "stop a rollout across data centers where it is",
         .help = "The data centers it reached keep the version; the others keep theirs.",
         .group = "Manifests and versions",
         .min_args = 1,
         .max_args = 1,
         .project = ProjectUse::kOptional,
         .run = Cancel});
}

}  // namespace mariposa::cmd
