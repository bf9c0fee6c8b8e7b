// mariposa status: goal versus actual, per service.
#include <algorithm>

#include "cli/command.h"

namespace mariposa::cmd {
namespace {

// Scheduled and event services' runs.
void RunsTable(Context& c, const v1::GetStateResponse& resp) {
  std::ostream& out = c.out();
  Rows runs;
  for (const auto& s : resp.services()) {
    if (!s.has_runs()) continue;
    const auto& r = s.runs();
    runs.push_back({s.name(), r.schedule().empty() ? r.service_type() : r.schedule(),
                    r.active().empty() ? "-" : absl::StrJoin(r.active(), "; "), r.last().empty() ? "-" : r.last(),
                    r.has_next() ? Time(r.next()) : (r.service_type() == "event" ? "on `mariposa run`" : "-"),
                    r.held().empty() ? "-" : r.held()});
  }
  if (!runs.empty()) {
    out << "\n";
    c.Table({"RUNS OF", "SCHEDULE", "ACTIVE", "LAST", "NEXT", "HELD"}, runs);
  }
}

// What the project owns outside VMAPI: fabric networks, volumes, firewall
// rules.
void OwnedTables(Context& c, const v1::GetStateResponse& resp) {
  std::ostream& out = c.out();
  if (resp.fabric_networks_size() > 0) {
    Rows fab;
    for (const auto& f : resp.fabric_networks()) {
      fab.push_back({f.name(), f.state(), f.subnet(), f.napi_name(), f.uuid().empty() ? "-" : f.uuid(),
                     f.error().empty() ? "-" : f.error()});
    }
    out << "\n";
    c.Table({"FABRIC NETWORK", "STATE", "SUBNET", "NAPI NAME", "UUID", "LAST ERROR"}, fab);
  }
  if (resp.volumes_size() > 0) {
    Rows vols;
    for (const auto& v : resp.volumes()) {
      vols.push_back({v.name(), v.state(), v.size_mib() > 0 ? absl::StrCat(v.size_mib() / 1024, "G") : "default",
                      v.network().empty() ? "-" : v.network(), v.volapi_name(), v.uuid().empty() ? "-" : v.uuid(),
                      absl::StrCat(v.mounted_by_size()), v.error().empty() ? "-" : v.error()});
    }
    out << "\n";
    c.Table({"VOLUME", "STATE", "SIZE", "NETWORK", "VOLAPI NAME", "UUID", "MOUNTS", "LAST ERROR"}, vols);
  }
  if (resp.firewall_rules_size() > 0) {
    Rows fw;
    for (const auto& f : resp.firewall_rules()) {
      fw.push_back({f.name(), f.state(), f.rule().empty() ? "-" : f.rule(), f.error().empty() ? "-" : f.error()});
    }
    out << "\n";
    c.Table({"FIREWALL RULE", "STATE", "RULE", "LAST ERROR"}, fw);
  }
}

// --verbose: every instance, and every server of an agent service.
void VerboseTables(Context& c, const v1::GetStateResponse& resp) {
  std::ostream& out = c.out();
  Rows inst;
  for (const auto& s : resp.services()) {
    for (const auto& i : s.instances()) {
      std::string health = i.liveness().empty() ? i.health()
                           : absl::StrCat("ready ", i.health(), ", live ", i.liveness());
      inst.push_back({s.name(), i.alias(), i.uuid(), i.state(), health,
                      i.current_spec() ? "current" : i.stale_meta() ? "stale meta" : "old", absl::StrCat(i.version()),
                      Time(i.created_at()), i.discovery().empty() ? "-" : i.discovery()});
    }
  }
  Rows servers;
  for (const auto& s : resp.services()) {
    for (const auto& sv : s.servers()) {
      servers.push_back({s.name(), sv.hostname(), sv.server(), sv.version().empty() ? "-" : sv.version(),
                         sv.image_uuid().empty() ? "-" : sv.image_uuid().substr(0, 8), sv.state(), sv.error()});
    }
  }
  if (!inst.empty() || servers.empty()) {
    out << "\n";
    c.Table({"SERVICE", "ALIAS", "UUID", "STATE", "HEALTH", "SPEC", "VERSION", "CREATED", "DISCOVERY"}, inst);
  }
  if (!servers.empty()) {
    out << "\n";
    c.Table({"SERVICE", "HOSTNAME", "SERVER", "AGENT VERSION", "IMAGE", "STATE", "LAST ERROR"}, servers);
  }
}

// The project in every data center (issue 52, point 5): each asked now by
// the mariposad addressed; exit 0 converged everywhere, 4 when one did not
// answer, 3 otherwise.
Result StatusAcross(Context& c) {
  v1::ProjectAcrossRequest req;
  req.set_project(c.project());
  v1::ProjectAcrossResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().state->ProjectAcross(c.d().Ctx().get(), req, &resp)));
  bool unknown = false;
  for (const auto& d : resp.datacenters()) unknown |= !d.answered();
  const int code = resp.converged() ? 0 : unknown ? 4 : 3;
  if (c.PrintIfStructured(resp)) return code;
  c.out() << "project " << resp.project() << " across data centers: " << resp.summary() << "\n\n";
  Rows rows;
  for (const auto& d : resp.datacenters()) {
    std::string name = d.datacenter() + (d.local() ? " (this one)" : "");
    if (!d.answered()) {
      rows.push_back({name, "-", "unknown", d.error()});
      continue;
    }
    if (!d.present()) {
      rows.push_back({name, "-", "not there", ""});
      continue;
    }
    const v1::GetStateResponse& st = d.state();
    std::vector<std::string> services;
    for (const auto& s : st.services()) {
      services.push_back(absl::StrCat(s.name(), " ", s.verdict(), " ", s.ready(), "/", s.desired()));
    }
    rows.push_back({name, absl::StrCat(st.version(), " (", st.version_uuid().substr(0, 8), ")"),
                    st.converged() ? "converged" : !st.actual_known() ? "unknown (not read)" : "not converged",
                    absl::StrJoin(services, ", ")});
  }
  c.Table({"DATACENTER", "VERSION", "STATE", "SERVICES"}, rows);
  return code;
}

Result Status(Context& c, const Parsed& p) {
  if (p.Has("--datacenters")) return StatusAcross(c);
  v1::GetStateRequest req;
  req.set_project(c.project());
  v1::GetStateResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().state->GetState(c.d().Ctx().get(), req, &resp)));
  bool stale = false;
  for (const auto& pr : resp.problems()) stale |= pr.kind() == "observation-stale";
  // The answer in the exit code, for scripts (as `kubectl rollout status`):
  // 0 converged, 3 not converged (or being deleted), 4 unknown; 1 and 2
  // stay errors and usage errors.
  const int code = resp.deleting()                  ? 3
                   : resp.converged()               ? 0
                   : !resp.actual_known() || stale  ? 4
                                                    : 3;
  if (c.PrintIfStructured(resp)) return code;
  std::ostream& out = c.out();
  out << "project " << resp.project() << " at version " << resp.version() << ": "
      << (resp.deleting() ? "being deleted (what is listed below is removed or retained first)"
          : resp.converged() ? "converged"
          : !resp.actual_known() ? "unknown (actual state cannot be read)"
          : stale ? "unknown (the actual state read is too old; see the problems)"
                  : "not converged")
      << "\n";
  // The age of what is shown: it is the last sync's observation, and the
  // data center may have changed since.
  if (resp.has_observed_at()) {
    absl::Time read = absl::FromUnixSeconds(resp.observed_at().seconds()) + absl::Nanoseconds(resp.observed_at().nanos());
    absl::Duration age = std::max(absl::ZeroDuration(), c.clock->Now() - read);
    // FormatDuration writes a zero as "0": under 100 ms it reads "0s".
    absl::Duration shown = absl::Trunc(age, absl::Milliseconds(100));
    out << "actual state as read " << (shown == absl::ZeroDuration() ? "0s" : absl::FormatDuration(shown))
        << (resp.read_now() ? " ago (read from VMAPI for this answer: another node runs the project, "
                              "`mariposa nodes`; health as that node last saw it)\n"
                            : " ago (the last sync's; status does not wait on Triton)\n");
  }
  if (!resp.watch().empty()) out << resp.watch() << "\n";
  out << "\n";
  Rows rows;
  // Counts of what runs are shown only when VMAPI could be read ("-": unknown).
  auto seen = [&](int64_t n) { return resp.actual_known() ? absl::StrCat(n) : std::string("-"); };
  for (const auto& s : resp.services()) {
    rows.push_back({s.name(), s.verdict(), absl::StrCat(s.desired()), seen(s.ready()), seen(s.running()),
                    seen(s.provisioning()), seen(s.broken()), seen(s.stopped_instances()), seen(s.updating()),
                    s.frozen() ? "yes" : "no", s.reason()});
  }
  c.Table({"SERVICE", "VERDICT", "DESIRED", "READY", "RUNNING", "PROVISIONING", "BROKEN", "STOPPED", "OLD SPEC",
           "FROZEN", "REASON"},
          rows);
  // CNS: <name>.svc.<account uuid>.<data center>.<CNS suffix> resolves to
  // the running instances of the service.
  std::vector<std::string> cns;
  for (const auto& s : resp.services()) {
    if (s.cns_names_size() > 0) cns.push_back(absl::StrCat(s.name(), " ", absl::StrJoin(s.cns_names(), ",")));
  }
  if (!cns.empty()) out << "\nCNS service names: " << absl::StrJoin(cns, "; ") << "\n";
  RunsTable(c, resp);
  OwnedTables(c, resp);
  if (resp.leftover() > 0) {
    out << "\n"
        << resp.leftover()
        << (resp.deleting() ? " instances of the project are being removed (project delete)\n"
                            : " instances of services no longer in the manifest are being removed\n");
  }
  for (const auto& pr : resp.problems()) PrintProblem(pr, out);
  if (!p.Has("--verbose")) return code;
  VerboseTables(c, resp);
  return code;
}

}  // namespace

void AddStatus(cli::Registry& r) {
  r.Add({.path = "status",
         .summary = "per service: verdict, desired, running, healthy, updating, frozen; problems",
         .help = "Goal versus actual (needs mariposad --triton): per service its verdict and desired, ready,\n"
                 "running, provisioning, broken, stopped and old-spec counts, frozen; then every problem as\n"
                 "Error / Reason / Fix / Impact. -v lists every instance (and agent servers).\n"
                 "Exit code: 0 converged, 3 not converged (or being deleted), 4 unknown (the actual state\n"
                 "cannot be read, or what was read is too old); 1 an error.\n"
                 "--datacenters: the project in every data center (this mariposad's --peers), each asked now:\n"
                 "its version there, converged or not, its services; one that does not answer is unknown.\n"
                 "Exit 0 when every one that has the project is converged at one version.",
         .group = "State",
         .flags = {{{"-v", "--verbose"}, "", "every instance too"},
                   {{"--datacenters"}, "", "the project in every data center, and as a whole"}},
         .project = ProjectUse::kRequired,
         .run = Status});
}

}  // namespace mariposa::cmd
