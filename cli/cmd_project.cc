// mariposa project, history, versions, version, rollback.
#include "cli/cli.h"

namespace mariposa::cmd {

int Cli::Project(Args& a) {
  auto desc = a.Value({"--description", "-d"});
  auto owner = a.Value({"--owner"});
  bool yes = a.Flag({"--yes", "-y"});
  bool force = a.Flag({"--force"});
  auto rest = a.Positional(1, 3, "project create|list|get|delete");
  std::string sub = rest.empty() ? "" : rest[0];
  if (sub == "create") {
    rest = a.Positional(2, 2, "project create NAME");
    v1::CreateProjectRequest req;
    req.set_name(rest[1]);
    req.set_description(desc.value_or(""));
    req.set_owner_uuid(owner.value_or(""));
    v1::CreateProjectResponse resp;
    Check(projects_->CreateProject(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
    } else {
      std::cout << "created project " << resp.project().name() << " (" << resp.project().uuid() << ")";
      if (!resp.project().owner_uuid().empty()) std::cout << " for account " << resp.project().owner_uuid();
      std::cout << "\n";
    }
    return 0;
  }
  if (sub == "list") {
    a.Positional(1, 1, "project list");
    v1::ListProjectsResponse resp;
    Check(projects_->ListProjects(Ctx().get(), {}, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : resp.projects()) {
      rows.push_back({p.name(), p.current_version_number() ? absl::StrCat(p.current_version_number()) : "-",
                      absl::StrCat(p.service_count()), p.owner_uuid().empty() ? "-" : p.owner_uuid(),
                      Time(p.created_at()), p.description()});
    }
    Table({"NAME", "VERSION", "SERVICES", "ACCOUNT", "CREATED", "DESCRIPTION"}, rows);
    return 0;
  }
  if (sub == "get") {
    rest = a.Positional(1, 2, "project get [NAME]");
    v1::GetProjectRequest req;
    req.set_project(rest.size() == 2 ? rest[1] : NeedProject());
    v1::GetProjectResponse resp;
    Check(projects_->GetProject(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    const auto& p = resp.project();
    std::cout << "project:     " << p.name() << "\nuuid:        " << p.uuid() << "\ndescription: " << p.description()
              << "\naccount:     " << (p.owner_uuid().empty() ? "mariposad's --owner" : p.owner_uuid())
              << "\ncreated:     " << Time(p.created_at()) << "\nversion:     "
              << (p.current_version_number() ? absl::StrCat(p.current_version_number(), " (", p.current_version(), ")") : "none")
              << "\n";
    if (p.deleting()) std::cout << "deleting:    yes (instances are being removed, then the project)\n";
    if (!p.stopped().empty()) std::cout << "stopped:     " << absl::StrJoin(p.stopped(), ", ") << "\n";
    for (const auto& g : p.deployment_groups()) std::cout << "group:       " << g.name() << ": " << absl::StrJoin(g.services(), ", ") << "\n";
    if (p.services_size() > 0) {
      std::cout << "\n";
      std::vector<std::vector<std::string>> rows;
      for (const auto& s : p.services()) {
        rows.push_back({s.name(), s.compute_type(), s.image(), s.compute_type() == "agent" ? "per server" : absl::StrCat(s.count()),
                        s.package().empty() ? "-" : s.package(), s.groups().empty() ? "-" : s.groups(0)});
      }
      Table({"SERVICE", "TYPE", "IMAGE", "COUNT", "PACKAGE", "GROUP"}, rows);
    }
    return 0;
  }
  if (sub == "delete") {
    rest = a.Positional(2, 2, "project delete NAME");
    if (!Confirm(absl::StrCat("Delete project ", rest[1], " with all its versions and meta",
                              force ? ", removing its instances?" : "?"),
                 yes)) {
      std::cout << "not deleted\n";
      return 1;
    }
    v1::DeleteProjectRequest req;
    req.set_project(rest[1]);
    req.set_force(force);
    v1::DeleteProjectResponse resp;
    Check(projects_->DeleteProject(Ctx().get(), req, &resp));
    if (resp.instances_to_remove() > 0) {
      std::cout << "removing " << resp.instances_to_remove() << " instances of " << rest[1]
                << "; the project is deleted once they are gone\n";
    } else {
      std::cout << "deleted project " << rest[1] << "\n";
    }
    return 0;
  }
  throw UsageError{"expected project create|list|get|delete"};
}

int Cli::HistoryCmd(Args& a) {
  auto limit = a.Value({"--limit", "-n"});
  a.Positional(1, 1, "history");
  int64_t n = 50;
  if (limit && (!absl::SimpleAtoi(*limit, &n) || n < 1)) throw UsageError{"--limit needs a number of at least 1"};
  v1::ListVersionsRequest vreq;
  vreq.set_project(NeedProject());
  v1::ListVersionsResponse versions;
  Check(projects_->ListVersions(Ctx().get(), vreq, &versions));
  v1::ListTasksRequest treq;
  treq.set_project(vreq.project());
  treq.set_finished_limit(100000);
  v1::ListTasksResponse tasks;
  Check(queue_->ListTasks(Ctx().get(), treq, &tasks));
  std::vector<mariposa::cli::HistoryRow> rows =
      mariposa::cli::History({versions.versions().begin(), versions.versions().end()}, {tasks.tasks().begin(), tasks.tasks().end()},
              &Time);
  size_t earlier = rows.size() > static_cast<size_t>(n) ? rows.size() - n : 0;
  rows.erase(rows.begin(), rows.begin() + earlier);  // the newest n
  if (Structured()) {
    std::vector<Record> records;
    for (const mariposa::cli::HistoryRow& r : rows) records.push_back({{"when", r.when}, {"who", r.who}, {"what", r.what}, {"result", r.result}});
    PrintRecords(records);
    return 0;
  }
  if (earlier > 0) std::cout << "(" << earlier << " earlier entries; --limit " << rows.size() + earlier << " shows all)\n";
  std::vector<std::vector<std::string>> table;
  for (const mariposa::cli::HistoryRow& r : rows) table.push_back({r.when, r.who, r.what, r.result});
  Table({"WHEN", "WHO", "WHAT", "RESULT"}, table);
  return 0;
}

int Cli::Versions(Args& a) {
  a.Positional(1, 1, "versions");
  v1::ListVersionsRequest req;
  req.set_project(NeedProject());
  v1::ListVersionsResponse resp;
  Check(projects_->ListVersions(Ctx().get(), req, &resp));
  if (Structured()) {
    Print(resp);
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& v : resp.versions()) {
    std::string origin = v.origin() == "rollback" ? absl::StrCat("rollback to ", v.rolled_back_to()) : v.origin();
    rows.push_back({absl::StrCat(v.number()), v.uuid(), Time(v.created_at()), v.author(), origin,
                    absl::StrCat(v.service_count()), absl::StrJoin(v.tags(), ","), v.hash().substr(0, 12)});
  }
  Table({"VERSION", "UUID", "CREATED", "AUTHOR", "ORIGIN", "SERVICES", "TAGS", "HASH"}, rows);
  return 0;
}

int Cli::Version(Args& a) {
  bool manifest = a.Flag({"--manifest"});
  auto rest = a.Positional(1, 3, "version get [VERSION] | version tag VERSION TAG");
  if (rest[0] == "get") {
    if (rest.size() > 2) throw UsageError{"expected version get [VERSION]"};
    v1::GetVersionRequest req;
    req.set_project(NeedProject());
    req.set_version(rest.size() == 2 ? rest[1] : "current");
    req.set_include_manifest(manifest || Structured());
    v1::GetVersionResponse resp;
    Check(projects_->GetVersion(Ctx().get(), req, &resp));
    if (manifest) {
      std::cout << resp.version().manifest();  // byte for byte
      return 0;
    }
    if (Structured()) {
      Print(resp);
      return 0;
    }
    const auto& v = resp.version();
    std::cout << "version: " << v.number() << "\nuuid:    " << v.uuid() << "\ncreated: " << Time(v.created_at())
              << "\nauthor:  " << v.author() << "\norigin:  " << v.origin()
              << (v.origin() == "rollback" ? absl::StrCat(" (content of version ", v.rolled_back_to(), ")") : "")
              << "\nhash:    " << v.hash() << "\ntags:    " << absl::StrJoin(v.tags(), ", ") << "\n";
    if (!v.message().empty()) std::cout << "message: " << v.message() << "\n";
    for (const auto& w : v.warnings()) std::cout << "warning: " << w << "\n";
    std::cout << "\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : resp.services()) {
      rows.push_back({s.name(), s.compute_type(), s.image(), absl::StrCat(s.count()), s.spec_hash().substr(0, 12)});
    }
    Table({"SERVICE", "TYPE", "IMAGE", "COUNT", "SPEC"}, rows);
    return 0;
  }
  if (rest[0] == "tag") {
    if (rest.size() != 3) throw UsageError{"expected version tag VERSION TAG"};
    v1::TagVersionRequest req;
    req.set_project(NeedProject());
    req.set_version(rest[1]);
    req.set_tag(rest[2]);
    v1::TagVersionResponse resp;
    Check(projects_->TagVersion(Ctx().get(), req, &resp));
    std::cout << "tagged version " << resp.version().number() << " as " << rest[2] << "\n";
    return 0;
  }
  throw UsageError{"expected version get|tag"};
}

int Cli::Rollback(Args& a) {
  bool wait = a.Flag({"--wait"});
  absl::Duration timeout = WaitTimeout(a.Value({"--timeout"}));
  bool yes = a.Flag({"--yes", "-y"});
  bool force = a.Flag({"--force"});
  bool thaw = a.Flag({"--thaw"});
  auto rest = a.Positional(2, 2, "rollback VERSION");
  v1::RollbackRequest req;
  req.set_project(NeedProject());
  req.set_thaw(thaw);
  req.set_version(rest[1]);
  req.set_dry_run(true);
  v1::RollbackResponse plan;
  Check(projects_->Rollback(Ctx().get(), req, &plan));
  if (plan.diff().empty()) {
    std::cout << "no changes: version " << plan.base_version_number() << " already has that content\n";
    return 0;
  }
  PrintDiff(plan.diff(), project_);
  if (!Confirm(absl::StrCat("Roll back to the content of version ", rest[1], "?"), yes)) {
    std::cout << "not rolled back\n";
    return 1;
  }
  req.set_dry_run(false);
  req.set_previous_version(plan.base_version());
  req.set_force(force);
  v1::RollbackResponse resp;
  Check(projects_->Rollback(Ctx().get(), req, &resp));
  if (Structured()) {
    Print(resp);
    return 0;
  }
  std::cout << "rolled back: version " << resp.version().number() << " (" << resp.version().uuid()
            << ") has the content of version " << resp.version().rolled_back_to() << "\n";
  for (const auto& w : resp.warnings()) std::cerr << "warning: " << w << "\n";
  PrintRollout(resp.rollout_task(), resp.rollout_services());
  if (wait) return WaitSettled(resp.version().project_uuid(), timeout);
  return 0;
}

}  // namespace mariposa::cmd
