// mariposa diff: apply's plan, nothing stored.
#include "cli/command.h"

namespace mariposa::cmd {

void AddDiff(cli::Registry& r) {
  r.Add({.path = "diff",
         .summary = "what applying a manifest would change; stores nothing",
         .help = "Exits 0 when nothing would change, 1 when something would, 2 on an error (as diff(1) and\n"
                 "terraform plan -detailed-exitcode). -o json prints the plan with \"changed\".",
         .group = "Manifests and versions",
         .flags = {{{"-f", "--file"}, "FILE", "the manifest, YAML or JSON (- for stdin)"},
                   {{"--force"}, "", "plan as apply --force would (downgrades allowed; unchanged: reinstall)"}},
         .project = ProjectUse::kOptional,
         .error_exit = 2,
         .run = [](Context& c, const Parsed& p) { return RunApply(c, p, true); }});
}

}  // namespace mariposa::cmd
