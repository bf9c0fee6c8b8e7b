// mariposa project create|list|get|copy|move|delete.
#include "cli/command.h"
#include "cli/plan_text.h"

namespace mariposa::cmd {
namespace {

Result Create(Context& c, const Parsed& p) {
  v1::CreateProjectRequest req;
  req.set_name(p.args()[0]);
  req.set_description(p.Value("--description").value_or(""));
  req.set_owner_uuid(p.Value("--owner").value_or(""));
  v1::CreateProjectResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->CreateProject(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  c.out() << "created project " << resp.project().name() << " (" << resp.project().uuid() << ")";
  if (!resp.project().owner_uuid().empty()) c.out() << " for account " << resp.project().owner_uuid();
  c.out() << "\n";
  return 0;
}

Result ListProjects(Context& c, const Parsed&) {
  v1::ListProjectsResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->ListProjects(c.d().Ctx().get(), {}, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  Rows rows;
  for (const auto& p : resp.projects()) {
    rows.push_back({p.name(), p.current_version_number() ? absl::StrCat(p.current_version_number()) : "-",
                    absl::StrCat(p.service_count()), p.owner_uuid().empty() ? "-" : p.owner_uuid(),
                    Time(p.created_at()), p.description()});
  }
  c.Table({"NAME", "VERSION", "SERVICES", "ACCOUNT", "CREATED", "DESCRIPTION"}, rows);
  return 0;
}

Result Get(Context& c, const Parsed& a) {
  v1::GetProjectRequest req;
  req.set_project(a.args().empty() ? c.project() : a.args()[0]);
  if (req.project().empty()) return Usage("no project: give NAME, pass -j PROJECT or set MARIPOSA_PROJECT");
  v1::GetProjectResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->GetProject(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  const auto& p = resp.project();
  std::ostream& out = c.out();
  out << "project:     " << p.name() << "\nuuid:        " << p.uuid() << "\ndescription: " << p.description()
      << "\naccount:     " << (p.owner_uuid().empty() ? "mariposad's --owner" : p.owner_uuid())
      << "\ncreated:     " << Time(p.created_at()) << "\nversion:     "
      << (p.current_version_number() ? absl::StrCat(p.current_version_number(), " (", p.current_version(), ")") : "none")
      << "\n";
  if (p.deleting()) {
    out << "deleting:    yes (its instances, firewall rules, fabric and volumes are removed or retained, then the "
           "project; `mariposa -j "
        << p.name() << " status` shows what is left)\n";
  }
  if (!p.stopped().empty()) out << "stopped:     " << absl::StrJoin(p.stopped(), ", ") << "\n";
  for (const auto& g : p.deployment_groups()) out << "group:       " << g.name() << ": " << absl::StrJoin(g.services(), ", ") << "\n";
  if (p.services_size() > 0) {
    out << "\n";
    Rows rows;
    for (const auto& s : p.services()) {
      rows.push_back({s.name(), s.compute_type(), s.image(), s.compute_type() == "agent" ? "per server" : absl::StrCat(s.count()),
                      s.package().empty() ? "-" : s.package(), s.groups().empty() ? "-" : s.groups(0)});
    }
    c.Table({"SERVICE", "TYPE", "IMAGE", "COUNT", "PACKAGE", "GROUP"}, rows);
  }
  return 0;
}

Result Delete(Context& c, const Parsed& p) {
  const std::string& name = p.args()[0];
  bool force = p.Has("--force");
  bool volumes = p.Has("--delete-volumes");
  ASSIGN_OR_RETURN(bool go, c.Confirm(absl::StrCat("Delete project ", name, " with all its versions and meta",
                                                   force ? ", removing its instances" : "",
                                                   volumes ? ", deleting every volume of it and their data" : "",
                                                   "?"),
                                      p.Has("--yes")));
  if (!go) {
    c.out() << "not deleted\n";
    return 1;
  }
  v1::DeleteProjectRequest req;
  req.set_project(name);
  req.set_force(force);
  req.set_delete_volumes(volumes);
  v1::DeleteProjectResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->DeleteProject(c.d().Ctx().get(), req, &resp)));
  if (!resp.pending()) {
    c.out() << "deleted project " << name << "\n";
    if (!resp.retains().empty()) c.out() << "kept:\n";
    for (const std::string& r : resp.retains()) c.out() << "  " << r << "\n";
    return 0;
  }
  c.out() << "deleting project " << name << "; mariposad removes first:\n";
  for (const std::string& r : resp.removes()) c.out() << "  " << r << "\n";
  if (!resp.retains().empty()) c.out() << "and keeps:\n";
  for (const std::string& r : resp.retains()) c.out() << "  " << r << "\n";
  c.out() << "the project is deleted once they are gone (`mariposa -j " << name
          << " status` shows what is left; the event project.delete says it is done)\n";
  return 0;
}

// The copy asked for (`project copy` and `project move`).
v1::CopyProjectRequest CopyRequest(const Parsed& p, bool dry_run) {
  v1::CopyProjectRequest req;
  req.set_source(p.args()[0]);
  req.set_target(p.args()[1]);
  for (const std::string& s : p.All("--set")) req.add_set(s);
  for (const std::string& m : p.All("--meta")) req.add_meta(m);
  req.set_no_meta(p.Has("--no-meta"));
  req.set_dry_run(dry_run);
  req.set_datacenter(p.Value("--datacenter").value_or(""));
  return req;
}

// Prints what a copy made (or, on a dry run, would make).
void PrintCopy(Context& c, const v1::CopyProjectRequest& req, const v1::CopyProjectResponse& resp) {
  std::ostream& out = c.out();
  for (const auto& w : resp.warnings()) c.err() << "warning: " << w << "\n";
  PrintDiff(c, resp.diff());
  out << cli::PlanSummary(resp.diff());
  std::string meta = absl::StrCat(resp.meta_copied(), resp.meta_copied() == 1 ? " meta key, " : " meta keys, ",
                                  resp.secrets_copied(), resp.secrets_copied() == 1 ? " secret" : " secrets");
  if (req.dry_run()) {
    out << "would copy project " << req.source() << " version " << resp.source_version() << " to " << req.target()
        << " with " << meta << " (nothing was made: --dry-run). Its manifest:\n\n" << resp.manifest();
    return;
  }
  out << "copied project " << req.source() << " version " << resp.source_version() << " to " << resp.project().name()
      << (req.datacenter().empty() ? "" : " in data center " + req.datacenter()) << " (" << resp.project().uuid()
      << "): version " << resp.version().number() << " (" << resp.version().uuid() << "), " << meta
      << " (secrets re-sealed for it, never shown)\n";
}

// Where a copy in another data center is followed: its mariposad's address.
std::string PeerAddress(Context& c, const std::string& datacenter) {
  v1::DataCentersResponse dcs;
  if (!c.d().admin->DataCenters(c.d().Ctx().get(), {}, &dcs).ok()) return "ADDRESS";
  for (const auto& p : dcs.peers()) {
    if (p.name() == datacenter) return p.address();
  }
  return "ADDRESS";
}

Result Copy(Context& c, const Parsed& p) {
  v1::CopyProjectRequest req = CopyRequest(p, p.Has("--dry-run"));
  v1::CopyProjectResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->CopyProject(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  PrintCopy(c, req, resp);
  if (!req.datacenter().empty() && !req.dry_run()) {
    c.out() << "it is converged by data center " << req.datacenter() << "'s mariposad; follow it there: mariposa --addr "
            << PeerAddress(c, req.datacenter()) << " -j " << req.target() << " status\n";
    return 0;
  }
  if (!req.dry_run() && p.Has("--wait")) return WaitSettled(c, resp.project().uuid(), resp.version().number());
  return 0;
}

// Waits until `project` is converged at version `number` in peer data
// center `dc`, as this mariposad sees it there (State.ProjectAcross).
Result WaitConvergedThere(Context& c, const std::string& project, const std::string& dc, int64_t number) {
  absl::Time start = c.clock->Now();
  absl::Duration timeout = WaitBudget(c, start, absl::Minutes(10));
  std::string last;
  while (true) {
    v1::ProjectAcrossRequest req;
    req.set_project(project);
    v1::ProjectAcrossResponse resp;
    grpc::Status got = c.d().state->ProjectAcross(c.d().Ctx().get(), req, &resp);
    if (!got.ok() && c.d().CommandTimedOut()) return absl::DeadlineExceededError("--timeout passed");
    RETURN_IF_ERROR(c.d().Check(got));
    std::string line = absl::StrCat(dc, ": no answer");
    for (const auto& d : resp.datacenters()) {
      if (d.datacenter() != dc) continue;
      if (!d.answered()) {
        line = absl::StrCat(dc, " unknown: ", d.error());
      } else if (!d.present()) {
        line = absl::StrCat(project, " is not in ", dc);
      } else {
        std::vector<std::string> parts;
        for (const auto& sv : d.state().services()) parts.push_back(absl::StrCat(sv.name(), " ", sv.verdict()));
        line = absl::StrCat(dc, ": version ", d.state().version(), ", ", absl::StrJoin(parts, "; "));
        if (d.state().version() > number) return absl::FailedPreconditionError(absl::StrCat(
            "version ", d.state().version(), " replaced the copy's version ", number, " in ", dc));
        if (d.state().version() == number && d.state().converged()) {
          c.out() << project << " converged in " << dc << "\n";
          return 0;
        }
        for (const auto& sv : d.state().services()) {
          if (sv.verdict() == "failed" || sv.verdict() == "paused") {
            return absl::FailedPreconditionError(absl::StrCat(sv.name(), " is ", sv.verdict(), " in ", dc, ": ",
                                                              sv.reason()));
          }
        }
      }
    }
    absl::Duration waited = c.clock->Now() - start;
    if (line != last) {
      c.out() << "[" << absl::ToInt64Seconds(waited) << "s] " << line << "\n";
      last = line;
    }
    if (waited >= timeout) return absl::DeadlineExceededError(absl::StrCat("not converged in ", dc, " after --timeout"));
    c.clock->SleepFor(std::min(absl::Milliseconds(500), timeout - waited));
  }
}

// A copy, a wait until it converged, then the source's deletion with its
// instances; any step that fails stops the move with the source untouched.
Result Move(Context& c, const Parsed& p) {
  const std::string& src = p.args()[0];
  const std::string& dst = p.args()[1];
  ASSIGN_OR_RETURN(bool go, c.Confirm(absl::StrCat("Move project ", src, " to ", dst, ": copy it, wait until ", dst,
                                                   " converged, then delete ", src, " with its instances?"),
                                      p.Has("--yes")));
  if (!go) {
    c.out() << "not moved\n";
    return 1;
  }
  v1::CopyProjectRequest req = CopyRequest(p, false);
  v1::CopyProjectResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->CopyProject(c.d().Ctx().get(), req, &resp)));
  PrintCopy(c, req, resp);
  c.out() << "waiting until " << dst << " converged" << (req.datacenter().empty() ? "" : " in " + req.datacenter())
          << " before " << src << " is deleted\n";
  Result waited = req.datacenter().empty() ? WaitSettled(c, resp.project().uuid(), resp.version().number())
                                           : WaitConvergedThere(c, dst, req.datacenter(), resp.version().number());
  if (!waited.ok() || *waited != 0) {
    // A timeout, a crash loop, a version replaced: the source stays.
    c.err() << "move stopped: " << dst << " did not converge"
            << (waited.ok() ? " (above)" : absl::StrCat(" (", waited.status().message(), ")")) << "; " << src
            << " is untouched and still serving. Fix " << dst << " and run `mariposa project delete " << src
            << " --force` yourself, or remove the copy with `mariposa project delete " << dst << " --force`\n";
    return waited;
  }
  v1::DeleteProjectRequest del;
  del.set_project(src);
  del.set_force(true);
  v1::DeleteProjectResponse gone;
  grpc::Status st = c.d().projects->DeleteProject(c.d().Ctx().get(), del, &gone);
  if (!st.ok()) {
    c.err() << "move stopped: " << dst << " converged, but deleting " << src << " failed; run `mariposa project delete "
            << src << " --force` once the cause is fixed\n";
    RETURN_IF_ERROR(c.d().Check(st));
  }
  if (!gone.pending()) {
    c.out() << "moved project " << src << " to " << dst << ": " << src << " is deleted\n";
    return 0;
  }
  c.out() << "moved project " << src << " to " << dst << ": " << src
          << " is being deleted (its instances drain and go first; `mariposa -j " << src
          << " status` shows what is left, the event project.delete says it is done)\n";
  return 0;
}

}  // namespace

void AddProject(cli::Registry& r) {
  const std::string g = "Projects";
  r.Add({.path = "project create", .args = "NAME", .summary = "a new, empty project", .group = g,
         .flags = {{{"-d", "--description"}, "TEXT", "what it is"},
                   {{"--owner"}, "ACCOUNT_UUID", "the Triton account its instances belong to (default: mariposad's --owner)"}},
         .min_args = 1, .max_args = 1, .run = Create});
  r.Add({.path = "project list", .summary = "every project: version, services, account", .group = g,
         .run = ListProjects});
  r.Add({.path = "project get", .args = "[NAME]", .summary = "one project: versions, groups, services", .group = g,
         .max_args = 1, .project = ProjectUse::kOptional, .run = Get});
  const std::vector<cli::Flag> copy_flags = {
      {{"--set"}, "PATH=VALUE", "change the copy's manifest (again for more): services.web.count=1, fabric.vlan=45"},
      {{"--meta"}, "KEY=VALUE", "the copy's meta value of KEY, over the source's (again for more)"},
      {{"--no-meta"}, "", "copy no meta and no secrets"},
      {{"--datacenter"}, "NAME", "make the copy in this peer data center (`mariposa datacenters`), not here"}};
  const std::string copy_help =
      "The copy is a new project with SRC's current version, its --set changes applied to the manifest\n"
      "(PATH is keys from the top, separated by dots; a key with dots in brackets: tags[com.example.tier];\n"
      "a list item by its index from 0; VALUE is YAML, null removes the key), SRC's meta with --meta\n"
      "over it, and SRC's secrets, re-sealed for the copy and never shown. It runs in SRC's account.\n"
      "Names that must not clash — a fabric VLAN id, CNS names, volume names given by hand — are changed\n"
      "with --set; default CNS names (<project>-<service>) and volumes follow the new name. Needs deployer\n"
      "on both projects (SRC's secrets go with it).";
  r.Add({.path = "project copy", .args = "SRC DST", .summary = "a new project DST made of SRC, with changes",
         .help = copy_help + "\n--dry-run shows the copy's plan and manifest; nothing is made.",
         .group = g,
         .flags = JoinFlags({copy_flags,
                             {{{"--dry-run"}, "", "show the plan and the copy's manifest only"},
                              {{"--wait"}, "", "follow the copy's instances until every service is converged"}}}),
         .min_args = 2, .max_args = 2, .run = Copy});
  r.Add({.path = "project move", .args = "SRC DST", .summary = "copy SRC to DST, then delete SRC once DST converged",
         .help = copy_help + "\nThe move waits until DST converged (--timeout, default 10 minutes), then deletes SRC\n"
                 "with its instances (they drain first when they carry CNS names). If DST does not converge,\n"
                 "the move stops there: SRC is untouched and still serving. With --datacenter the copy is made\n"
                 "in that peer data center and followed there through this mariposad (status --datacenters).",
         .group = g,
         .flags = JoinFlags({copy_flags, {{{"-y", "--yes"}, "", "do not ask"}}}),
         .min_args = 2, .max_args = 2, .run = Move});
  r.Add({.path = "project delete", .args = "NAME", .summary = "delete a project with its versions and meta",
         .help = "With mariposad converging a data center, a project that still has instances is refused;\n"
                 "--force removes its instances first. Its firewall rules and fabric networks are removed\n"
                 "as well, and its volumes of deletion_policy delete; the others are retained with their\n"
                 "data unless --delete-volumes. The project is deleted once all of that is gone.",
         .group = g,
         .flags = {{{"-y", "--yes"}, "", "do not ask"},
                   {{"--force"}, "", "remove its instances first"},
                   {{"--delete-volumes"},
                    "",
                    "delete every volume of the project too, whatever its deletion_policy: their data is lost"}},
         .min_args = 1, .max_args = 1, .run = Delete});
  r.Alias("projects", "project");
}

}  // namespace mariposa::cmd
