// mariposa health: every check of the project's instances, and the agents.
#include "cli/command.h"
#include "mariposa/v1/health.grpc.pb.h"

namespace mariposa::cmd {
namespace {

// --agent ADDR: one mariposa-health agent's own view.
Result Agent(Context& c, const std::string& addr) {
  auto stub = v1::HealthAgent::NewStub(grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()));
  v1::ListChecksRequest req;
  v1::ListChecksResponse resp;
  grpc::Status st = stub->ListChecks(c.d().Ctx().get(), req, &resp);
  if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return Err(absl::StrCat("cannot reach the health agent at ", addr, " (", st.error_message(),
                            "); is mariposa-health running there? --agent takes its --listen address"));
  }
  RETURN_IF_ERROR(c.d().Check(st));
  if (c.PrintIfStructured(resp)) return 0;
  c.out() << "agent " << resp.agent_id() << ": " << resp.checks_size() << " checks\n";
  Rows rows;
  for (const auto& k : resp.checks()) {
    rows.push_back({k.key().instance(), k.key().check(), k.type(), k.target(), k.state(),
                    k.last_run().seconds() > 0 ? Time(k.last_run()) : "-", absl::StrCat(k.runs()),
                    k.last_failure().empty() ? "-" : k.last_failure()});
  }
  c.Table({"INSTANCE", "CHECK", "TYPE", "TARGET", "STATE", "LAST RUN", "RUNS", "LAST FAILURE"}, rows);
  return 0;
}

Result Health(Context& c, const Parsed& p) {
  if (auto agent = p.Value("--agent")) return Agent(c, *agent);
  if (c.project().empty()) return Usage("no project: pass -j PROJECT or set MARIPOSA_PROJECT (or --agent ADDR)");
  v1::GetHealthRequest req;
  req.set_project(c.project());
  v1::GetHealthResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().state->GetHealth(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  Rows rows;
  for (const auto& k : resp.checks()) {
    rows.push_back({k.alias().empty() ? k.instance() : k.alias(), k.check(), k.type(), k.target(), k.state(),
                    k.since().seconds() > 0 ? Time(k.since()) : "-", k.last_failure().empty() ? "-" : k.last_failure(),
                    k.agent().empty() ? "-" : k.agent()});
  }
  c.Table({"INSTANCE", "CHECK", "TYPE", "TARGET", "STATE", "SINCE", "LAST FAILURE", "AGENT"}, rows);
  c.out() << "\n";
  if (resp.agents().empty()) {
    c.out() << "no health agent is connected: checks are not being run (start mariposa-health or mariposad "
               "--embedded-health)\n";
    return 0;
  }
  rows.clear();
  for (const auto& g : resp.agents()) {
    rows.push_back({g.id(), g.networks().empty() ? "all" : absl::StrJoin(g.networks(), ","), absl::StrCat(g.checks()),
                    absl::StrCat(g.checks_run()), absl::StrCat(g.checks_failed()),
                    absl::StrFormat("%.1f", g.lateness_p99_ms()), Time(g.last_seen())});
  }
  c.Table({"AGENT", "NETWORKS", "CHECKS", "RUN", "FAILED", "LATE P99 MS", "LAST SEEN"}, rows);
  return 0;
}

}  // namespace

void AddHealth(cli::Registry& r) {
  r.Add({.path = "health",
         .summary = "every check of every instance, its state and agent; the agents",
         .help = "Every health check of the project's instances: instance, check, type, address checked, state\n"
                 "(unknown, starting, healthy, unhealthy), since when, the last failure and the agent that checks it\n"
                 "(\"-\": no live agent can); then the live agents with their share and counters.\n"
                 "--agent ADDR asks one mariposa-health agent (its --listen address) for the checks it runs, with\n"
                 "last run and run count.",
         .group = "State",
         .flags = {{{"--agent"}, "ADDR", "ask this mariposa-health agent instead"}},
         .project = ProjectUse::kOptional,
         .run = Health});
}

}  // namespace mariposa::cmd
