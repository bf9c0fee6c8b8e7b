// mariposa project create|list|get|delete.
#include "cli/command.h"

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
