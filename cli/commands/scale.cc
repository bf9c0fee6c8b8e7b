// mariposa scale SERVICE=N|+N|-N ...
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

Result Scale(Context& c, const Parsed& p) {
  bool dry_run = p.Has("--dry-run");
  v1::ScaleRequest req;
  req.set_thaw(p.Has("--thaw"));
  req.set_project(c.project());
  for (const std::string& change : p.args()) req.add_changes(change);
  req.set_dry_run(dry_run);
  v1::ScaleResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->Scale(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  std::vector<std::string> scaled;  // "web=+1" -> web: only what it names is waited for
  for (const std::string& change : p.args()) scaled.push_back(change.substr(0, change.find('=')));
  if (resp.diff().empty()) {
    c.out() << "no changes\n";
    // Already at that count: --wait still answers whether it is there (a
    // frozen or failing service is not).
    return p.Has("--wait") && !dry_run ? WaitSettled(c, c.project(), 0, scaled) : 0;
  }
  PrintDiff(c, resp.diff());
  if (!dry_run) c.out() << "applied version " << resp.version().number() << " (" << resp.version().uuid() << ")\n";
  if (p.Has("--wait") && !dry_run) return WaitSettled(c, c.project(), resp.version().number(), scaled);
  return 0;
}

}  // namespace

void AddScale(cli::Registry& r) {
  std::vector<Flag> flags = JoinFlags({{{{"--dry-run"}, "", "show the change; store nothing"}}, WaitFlags()});
  r.Add({.path = "scale",
         .args = "SERVICE=N|SERVICE=+N|SERVICE=-N ...",
         .summary = "change instance counts (a new version)",
         .help = "Stores a new version with the changed counts (its text is the canonical form of the manifest);\n"
                 "with mariposad --triton the instances follow, as a scale task per service (`queue list`).\n"
                 "Refused in a frozen scope unless --thaw (which ends the freeze).",
         .group = "Manifests and versions",
         .flags = flags,
         .min_args = 1,
         .max_args = -1,
         .project = ProjectUse::kRequired,
         .run = Scale});
}

}  // namespace mariposa::cmd
