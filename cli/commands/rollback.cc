// mariposa rollback VERSION.
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

Result Rollback(Context& c, const Parsed& p) {
  const std::string& version = p.args()[0];
  v1::RollbackRequest req;
  req.set_project(c.project());
  req.set_thaw(p.Has("--thaw"));
  req.set_version(version);
  req.set_dry_run(true);
  v1::RollbackResponse plan;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->Rollback(c.d().Ctx().get(), req, &plan)));
  if (plan.diff().empty()) {
    c.out() << "no changes: version " << plan.base_version_number() << " already has that content\n";
    return 0;
  }
  PrintDiff(c, plan.diff());
  ASSIGN_OR_RETURN(bool go, c.Confirm(absl::StrCat("Roll back to the content of version ", version, "?"), p.Has("--yes")));
  if (!go) {
    c.out() << "not rolled back\n";
    return 1;
  }
  req.set_dry_run(false);
  req.set_previous_version(plan.base_version());
  req.set_force(p.Has("--force"));
  v1::RollbackResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->Rollback(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  c.out() << "rolled back: version " << resp.version().number() << " (" << resp.version().uuid()
          << ") has the content of version " << resp.version().rolled_back_to() << "\n";
  for (const auto& w : resp.warnings()) c.err() << "warning: " << w << "\n";
  PrintRollout(c, resp.rollout_task(), resp.rollout_services());
  if (p.Has("--wait")) return WaitSettled(c, resp.version().project_uuid(), resp.version().number());
  return 0;
}

}  // namespace

void AddRollback(cli::Registry& r) {
  std::vector<Flag> flags = JoinFlags(
      {{{{"-y", "--yes"}, "", "do not ask"},
        {{"--force"}, "", "skip the check that the current version is still the one planned against"}},
       WaitFlags()});
  r.Add({.path = "rollback",
         .args = "VERSION",
         .summary = "a new version with the content of VERSION",
         .help = "Refused when a freeze covers a changed service, unless --thaw (which ends those freezes).\n"
                 "Services whose instance spec changes are rolled out by a reprovision task (update.on_change:\n"
                 "rollout, the default); --wait follows it as apply --wait does.",
         .group = "Manifests and versions",
         .flags = flags,
         .min_args = 1,
         .max_args = 1,
         .project = ProjectUse::kRequired,
         .run = Rollback});
}

}  // namespace mariposa::cmd
