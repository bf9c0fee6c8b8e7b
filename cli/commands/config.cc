// mariposa config …: named connection settings in the config file; no
// daemon involved.
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

struct File {
  std::string path;
  cli::ConfigFile cfg;
};

absl::StatusOr<File> Load(const Context& c) {
  File f{cli::ConfigPath(c.env), {}};
  ASSIGN_OR_RETURN(f.cfg, cli::LoadConfig(f.path));
  return f;
}

Result GetContexts(Context& c, const Parsed&) {
  ASSIGN_OR_RETURN(File f, Load(c));
  Rows rows;
  for (const auto& [name, s] : f.cfg.contexts) {
    rows.push_back({name == f.cfg.current ? "*" : "", name, s.addr, s.project,
                    !s.cert.empty() ? "certificate" : (!s.token.empty() || !s.token_file.empty()) ? "token" : "local",
                    s.ca.empty() ? "no" : "yes"});
  }
  c.Table({"CURRENT", "NAME", "ADDR", "PROJECT", "AUTH", "TLS"}, rows);
  return 0;
}

Result CurrentContext(Context& c, const Parsed&) {
  ASSIGN_OR_RETURN(File f, Load(c));
  if (f.cfg.current.empty()) return Err(absl::StrCat("no current context in ", f.path));
  c.out() << f.cfg.current << "\n";
  return 0;
}

Result UseContext(Context& c, const Parsed& p) {
  const std::string& name = p.args()[0];
  ASSIGN_OR_RETURN(File f, Load(c));
  if (!f.cfg.contexts.count(name)) {
    return Err(absl::StrCat("no context \"", name, "\" in ", f.path, "; `mariposa config set-context ", name,
                            " --addr …` makes one"));
  }
  f.cfg.current = name;
  RETURN_IF_ERROR(cli::SaveConfig(f.path, f.cfg));
  c.out() << "now using context " << name << "\n";
  return 0;
}

Result SetContext(Context& c, const Parsed& p) {
  const std::string& name = p.args()[0];
  ASSIGN_OR_RETURN(File f, Load(c));
  cli::Settings& s = f.cfg.contexts[name];
  const cli::Settings& flags = c.flags;
  for (auto [from, to] : {std::pair{&flags.addr, &s.addr}, {&flags.project, &s.project}, {&flags.ca, &s.ca},
                          {&flags.cert, &s.cert}, {&flags.key, &s.key}, {&flags.token_file, &s.token_file}}) {
    if (!from->empty()) *to = *from;
  }
  if (f.cfg.current.empty()) f.cfg.current = name;
  RETURN_IF_ERROR(cli::SaveConfig(f.path, f.cfg));
  c.out() << "context " << name << " saved in " << f.path << (f.cfg.current == name ? " (current)" : "") << "\n";
  return 0;
}

Result DeleteContext(Context& c, const Parsed& p) {
  const std::string& name = p.args()[0];
  ASSIGN_OR_RETURN(File f, Load(c));
  if (f.cfg.contexts.erase(name) == 0) return Err(absl::StrCat("no context \"", name, "\" in ", f.path));
  if (f.cfg.current == name) f.cfg.current.clear();
  RETURN_IF_ERROR(cli::SaveConfig(f.path, f.cfg));
  c.out() << "context " << name << " deleted\n";
  return 0;
}

}  // namespace

void AddConfig(cli::Registry& r) {
  const std::string g = "Access (docs/security.md)";
  const std::string help =
      "Contexts are named connection settings in $MARIPOSA_CONFIG (default ~/.config/mariposa/config.yaml,\n"
      "0600). Each setting: flag, then environment, then the context, then the default.";
  r.Add({.path = "config get-contexts", .summary = "every context; * marks the current one", .help = help, .group = g,
         .daemon = false, .run = GetContexts});
  r.Add({.path = "config current-context", .summary = "the current context's name", .help = help, .group = g,
         .daemon = false, .run = CurrentContext});
  r.Add({.path = "config use-context", .args = "NAME", .summary = "make NAME the current context", .help = help,
         .group = g, .min_args = 1, .max_args = 1, .daemon = false, .run = UseContext});
  r.Add({.path = "config set-context",
         .args = "NAME",
         .summary = "save the global options given (--addr, -j, --ca, --cert, --key, --token-file) as NAME",
         .help = help,
         .group = g,
         .min_args = 1,
         .max_args = 1,
         .daemon = false,
         .run = SetContext});
  r.Add({.path = "config delete-context", .args = "NAME", .summary = "forget a context", .help = help, .group = g,
         .min_args = 1, .max_args = 1, .daemon = false, .run = DeleteContext});
}

}  // namespace mariposa::cmd
