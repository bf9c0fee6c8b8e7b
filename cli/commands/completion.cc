// mariposa completion bash|zsh, and mariposa help: both generated from the
// registry.
#include "cli/command.h"

namespace mariposa::cmd {

void AddCompletion(cli::Registry& r) {
  r.Add({.path = "completion",
         .args = "bash|zsh",
         .summary = "the shell completion script: source <(mariposa completion bash)",
         .help = "Completes commands, subcommands, each command's options, the global options, and project\n"
                 "names after -j (asked of mariposad).",
         .group = "Shell",
         .min_args = 1,
         .max_args = 1,
         .daemon = false,
         .run = [](Context& c, const Parsed& p) -> Result {
           std::string script = c.registry.Completion(p.args()[0]);
           if (script.empty()) return Usage(absl::StrCat("no completion for \"", p.args()[0], "\": bash or zsh"));
           c.out() << script;
           return 0;
         }});
}

}  // namespace mariposa::cmd
