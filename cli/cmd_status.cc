// mariposa status and health.
#include "cli/cli.h"

namespace mariposa::cmd {

int Cli::HealthCmd(Args& a) {
  auto agent = a.Value({"--agent"});
  a.Positional(1, 1, "health");
  if (agent) {
    auto stub = v1::HealthAgent::NewStub(grpc::CreateChannel(*agent, grpc::InsecureChannelCredentials()));
    v1::ListChecksRequest req;
    v1::ListChecksResponse resp;
    Check(stub->ListChecks(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::cout << "agent " << resp.agent_id() << ": " << resp.checks_size() << " checks\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : resp.checks()) {
      rows.push_back({c.key().instance(), c.key().check(), c.type(), c.target(), c.state(),
                      c.last_run().seconds() > 0 ? Time(c.last_run()) : "-", absl::StrCat(c.runs()),
                      c.last_failure().empty() ? "-" : c.last_failure()});
    }
    Table({"INSTANCE", "CHECK", "TYPE", "TARGET", "STATE", "LAST RUN", "RUNS", "LAST FAILURE"}, rows);
    return 0;
  }
  v1::GetHealthRequest req;
  req.set_project(NeedProject());
  v1::GetHealthResponse resp;
  Check(state_->GetHealth(Ctx().get(), req, &resp));
  if (Structured()) {
    Print(resp);
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : resp.checks()) {
    rows.push_back({c.alias().empty() ? c.instance() : c.alias(), c.check(), c.type(), c.target(), c.state(),
                    c.since().seconds() > 0 ? Time(c.since()) : "-",
                    c.last_failure().empty() ? "-" : c.last_failure(), c.agent().empty() ? "-" : c.agent()});
  }
  Table({"INSTANCE", "CHECK", "TYPE", "TARGET", "STATE", "SINCE", "LAST FAILURE", "AGENT"}, rows);
  std::cout << "\n";
  if (resp.agents().empty()) {
    std::cout << "no health agent is connected: checks are not being run (start mariposa-health or mariposad "
                 "--embedded-health)\n";
    return 0;
  }
  rows.clear();
  for (const auto& g : resp.agents()) {
    rows.push_back({g.id(), g.networks().empty() ? "all" : absl::StrJoin(g.networks(), ","), absl::StrCat(g.checks()),
                    absl::StrCat(g.checks_run()), absl::StrCat(g.checks_failed()),
                    absl::StrFormat("%.1f", g.lateness_p99_ms()), Time(g.last_seen())});
  }
  Table({"AGENT", "NETWORKS", "CHECKS", "RUN", "FAILED", "LATE P99 MS", "LAST SEEN"}, rows);
  return 0;
}

// Instances whose meta values changed since they were created (meta
// drift), by service; nothing when there are none or the state cannot be
// read (a daemon without --triton).
void Cli::PrintStaleMeta(const std::string& project) {
  v1::GetStateRequest req;
  req.set_project(project);
  v1::GetStateResponse resp;
  if (!state_->GetState(Ctx().get(), req, &resp).ok()) return;
  for (const auto& s : resp.services()) {
    std::vector<std::string> stale;
    for (const auto& i : s.instances()) {
      if (i.stale_meta()) stale.push_back(i.alias());
    }
    if (stale.empty()) continue;
    std::cout << stale.size() << (stale.size() == 1 ? " instance" : " instances") << " of " << s.name()
              << " use older meta values: " << absl::StrJoin(stale, ", ") << "\n  `mariposa -j " << resp.project()
              << " reprovision --service " << s.name()
              << "` rolls them (update.on_meta_change: rollout does it on every change)\n";
  }
}

int Cli::StatusCmd(Args& a) {
  bool verbose = a.Flag({"-v", "--verbose"});
  a.Positional(1, 1, "status");
  v1::GetStateRequest req;
  req.set_project(NeedProject());
  v1::GetStateResponse resp;
  Check(state_->GetState(Ctx().get(), req, &resp));
  if (Structured()) {
    Print(resp);
    return 0;
  }
  std::cout << "project " << resp.project() << " at version " << resp.version() << ": "
            << (resp.converged() ? "converged" : !resp.actual_known() ? "unknown (actual state cannot be read)"
                                                                      : "not converged")
            << "\n\n";
  std::vector<std::vector<std::string>> rows;
  // Counts of what runs are shown only when VMAPI could be read ("-": unknown).
  auto seen = [&](int64_t n) { return resp.actual_known() ? absl::StrCat(n) : std::string("-"); };
  for (const auto& s : resp.services()) {
    rows.push_back({s.name(), s.verdict(), absl::StrCat(s.desired()), seen(s.ready()), seen(s.running()),
                    seen(s.provisioning()), seen(s.broken()), seen(s.stopped_instances()), seen(s.updating()),
                    s.frozen() ? "yes" : "no", s.reason()});
  }
  Table({"SERVICE", "VERDICT", "DESIRED", "READY", "RUNNING", "PROVISIONING", "BROKEN", "STOPPED", "OLD SPEC",
         "FROZEN", "REASON"},
        rows);
  if (resp.leftover() > 0) {
    std::cout << "\n" << resp.leftover() << " instances of services no longer in the manifest are being removed\n";
  }
  for (const auto& p : resp.problems()) PrintProblem(p, std::cout);
  if (verbose) {
    std::vector<std::vector<std::string>> inst;
    for (const auto& s : resp.services()) {
      for (const auto& i : s.instances()) {
        inst.push_back({s.name(), i.alias(), i.uuid(), i.state(), i.health(), i.current_spec() ? "current" : i.stale_meta() ? "stale meta" : "old",
                        absl::StrCat(i.version()), Time(i.created_at())});
      }
    }
    bool any_instances = !inst.empty();
    std::vector<std::vector<std::string>> servers;
    for (const auto& s : resp.services()) {
      for (const auto& sv : s.servers()) {
        servers.push_back({s.name(), sv.hostname(), sv.server(), sv.version().empty() ? "-" : sv.version(),
                           sv.image_uuid().empty() ? "-" : sv.image_uuid().substr(0, 8), sv.state(), sv.error()});
      }
    }
    if (any_instances || servers.empty()) {
      std::cout << "\n";
      Table({"SERVICE", "ALIAS", "UUID", "STATE", "HEALTH", "SPEC", "VERSION", "CREATED"}, inst);
    }
    if (!servers.empty()) {
      std::cout << "\n";
      Table({"SERVICE", "HOSTNAME", "SERVER", "AGENT VERSION", "IMAGE", "STATE", "LAST ERROR"}, servers);
    }
  }
  return 0;
}

}  // namespace mariposa::cmd
