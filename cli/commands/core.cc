// mariposa core check: CNAPI's server.agents against the goal of the
// project's agent services; every drift on a line; exit 1 when there is one.
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

Result Check(Context& c, const Parsed&) {
  v1::GetStateRequest req;
  req.set_project(c.project());
  v1::GetStateResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().state->GetState(c.d().Ctx().get(), req, &resp)));
  struct Drift {
    std::string service, hostname, server, kind, detail;
  };
  std::vector<Drift> drifts;
  int agents = 0, servers = 0;
  for (const auto& s : resp.services()) {
    if (!s.agent()) continue;
    ++agents;
    for (const auto& sv : s.servers()) {
      ++servers;
      const std::string& st = sv.state();
      if (st == "excluded") {
        continue;  // left alone on purpose
      } else if (st == "not-selected") {
        if (!sv.version().empty()) {
          drifts.push_back({s.name(), sv.hostname(), sv.server(), "installed by hand",
                            absl::StrCat(sv.version(), " runs on a server servers.select does not cover")});
        }
      } else if (st != "current" && st != "installing") {
        drifts.push_back({s.name(), sv.hostname(), sv.server(), sv.version().empty() ? "missing" : "wrong version",
                          absl::StrCat(sv.version().empty() ? "not installed" : sv.version(), " (", st,
                                       sv.error().empty() ? "" : ": " + sv.error(), ")")});
      }
    }
  }
  if (c.Structured()) {
    std::vector<Record> records;
    for (const Drift& d : drifts) {
      records.push_back(
          {{"service", d.service}, {"hostname", d.hostname}, {"server", d.server}, {"drift", d.kind}, {"detail", d.detail}});
    }
    c.PrintRecords(records);
    return drifts.empty() ? 0 : 1;
  }
  if (agents == 0) {
    c.out() << "project " << resp.project() << " has no agent services (compute_type: agent)\n";
    return 0;
  }
  if (drifts.empty()) {
    c.out() << "no drift: " << agents << " agent services on " << servers << " server entries match the goal\n";
    return 0;
  }
  Rows rows;
  for (const Drift& d : drifts) rows.push_back({d.service, d.hostname, d.server, d.kind, d.detail});
  c.Table({"SERVICE", "HOSTNAME", "SERVER", "DRIFT", "DETAIL"}, rows);
  c.out() << "\n" << drifts.size() << " drifts; `mariposa reprovision --service SERVICE` installs the goal's "
          << "version again; an agent installed by hand is removed with CNAPI's uninstall-agents\n";
  return 1;
}

}  // namespace

void AddCore(cli::Registry& r) {
  r.Add({.path = "core check",
         .summary = "CNAPI's server.agents against the goal; exit 1 on drift",
         .help = "Compares every server's agents as CNAPI reports them with the project's agent services\n"
                 "(compute_type: agent) and prints each drift: missing (not installed), wrong version (another\n"
                 "version, failed or skipped installs, a server that is down), installed by hand (on a server that\n"
                 "servers.select does not cover). Servers in servers.exclude are left alone. Exit 0 when there is\n"
                 "no drift, 1 when there is.",
         .group = "Triton core (agents)",
         .project = ProjectUse::kRequired,
         .run = Check});
}

}  // namespace mariposa::cmd
