// mariposa: global options, the registry of commands, and Run.
#include "cli/cli.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "absl/strings/ascii.h"
#include "auth/client.h"
#include "auth/ssh_signer.h"
#include "cli/command.h"
#include "cli/style.h"

namespace mariposa::cmd {
namespace {

constexpr char kIntro[] = "usage: mariposa [-j PROJECT] [--addr ADDR] [-o table|json|yaml] COMMAND ...\n\n";

constexpr char kFooter[] =
    "VERSION is a version number, a tag, 4+ characters of a version uuid, or \"current\".\n"
    "TASK is a task uuid or a unique prefix of one (8 characters usually are).\n"
    "Exit codes: 0 ok, 1 error (diff: 1 = changes, 2 = error), 2 usage.\n"
    "`mariposa COMMAND --help` for one command.\n";

std::vector<Flag> GlobalFlags() {
  return {
      {{"-j", "--project"}, "NAME", "the project (default: $MARIPOSA_PROJECT, the context's, or the manifest's)"},
      {{"--addr"}, "ADDR", "mariposad: host:port or unix:PATH (default: $MARIPOSA_ADDR, the context's, 127.0.0.1:7740)"},
      {{"--context"}, "NAME", "settings from this context of the config file (default: its current-context)"},
      {{"--ca"}, "FILE", "TLS: verify mariposad against this CA ($MARIPOSA_CA)"},
      {{"--cert"}, "FILE", "TLS client certificate ($MARIPOSA_CERT), with --key"},
      {{"--key"}, "FILE", "its private key ($MARIPOSA_KEY)"},
      {{"--token-file"}, "FILE", "bearer token ($MARIPOSA_TOKEN_FILE, or the token itself in $MARIPOSA_TOKEN)"},
      {{"--triton-profile"}, "NAME", "sign each call as this `triton` CLI profile's user, its key in ssh-agent or ~/.ssh (\"current\", \"env\" or a name; $MARIPOSA_TRITON_PROFILE; without a token, $TRITON_PROFILE or $SDC_ACCOUNT with $SDC_KEY_ID choose it; \"none\": never)"},
      {{"-o", "--output"}, "FORMAT", "table (default), json or yaml"},
      {{"--timeout"}, "D", "give up on the whole command after D: every call, and --wait (default 10m)"},
      {{"--request-timeout"}, "D", "give up on each call after D (default 35s; mariposad stops work after 30s)"},
      {{"--no-color"}, "", "no color (nor with $NO_COLOR set, or when stdout is not a terminal)"},
      {{"-h", "--help"}, "", "help; `mariposa COMMAND --help` for one command"},
  };
}

cli::Registry Build() {
  cli::Registry r(GlobalFlags());
  AddProject(r);
  AddImport(r);
  AddApply(r);
  AddDiff(r);
  AddVersions(r);
  AddRollouts(r);
  AddHistory(r);
  AddVersion(r);
  AddRollback(r);
  AddScale(r);
  AddMeta(r);
  AddStatus(r);
  AddHealth(r);
  AddTasks(r);
  AddQueue(r);
  AddPause(r);
  AddFreeze(r);
  AddImage(r);
  AddCore(r);
  AddEvents(r);
  AddAdmin(r);
  AddToken(r);
  AddGrant(r);
  AddAuth(r);
  AddConfig(r);
  AddCompletion(r);
  return r;
}

std::string Overview() { return Commands().Overview(kIntro, kFooter); }

// "admin token" for the words "admin token crate": the deepest group of
// commands the words name; "" when the first word is none.
std::string DeepestNode(const std::vector<std::string>& words) {
  std::string node;
  for (const std::string& w : words) {
    std::string next = node.empty() ? w : absl::StrCat(node, " ", w);
    if (!Commands().IsNode(next)) break;
    node = next;
  }
  return node;
}

// The help the words ask for: a command's, a node's ("meta"), or the
// overview.
absl::StatusOr<std::string> HelpFor(const std::vector<std::string>& words) {
  const cli::Registry& r = Commands();
  size_t used = 0;
  if (words.empty()) return Overview();
  auto cmd = r.Find(words, &used);
  if (cmd.ok()) {
    std::string help = r.Help(**cmd);
    if (r.IsNode((*cmd)->path)) help += "\n" + r.NodeHelp((*cmd)->path);
    return help;
  }
  std::string node = DeepestNode(words);
  if (node.empty()) return cmd.status();
  return r.NodeHelp(node);
}

bool IsOption(const std::string& s) { return s.size() > 1 && s[0] == '-'; }

// The command's own arguments: what is left once its path's `used` words go.
std::vector<std::string> CommandArgs(const std::vector<std::string>& rest, size_t used) {
  std::vector<std::string> argv;
  size_t dropped = 0;
  for (const std::string& t : rest) {
    if (dropped < used && !IsOption(t)) {
      ++dropped;
      continue;
    }
    argv.push_back(t);
  }
  return argv;
}

// Why `args` are too few or too many for `cmd`; "" when they fit.
std::string ArgCountError(const cli::Command& cmd, const std::vector<std::string>& args) {
  int n = static_cast<int>(args.size());
  if (n >= cmd.min_args && (cmd.max_args < 0 || n <= cmd.max_args)) return "";
  if (n > cmd.max_args && cmd.max_args >= 0) {
    return absl::StrCat("too many arguments for ", cmd.path, ": \"", args[cmd.max_args], "\"",
                        cmd.args.empty() ? " (it takes none)" : absl::StrCat(" (it takes ", cmd.args, ")"));
  }
  return absl::StrCat("expected ", cmd.path, " ", cmd.args);
}

// A connection to mariposad with the settings' credentials: a token file,
// or a token checked before it is sent.
absl::StatusOr<std::unique_ptr<cli::Client>> Dial(const cli::Settings& settings, const Io& io,
                                                  const cli::Deadlines& deadlines) {
  auth::ClientCredentials creds{settings.ca, settings.cert, settings.key, settings.token, ""};
  if (!settings.token_file.empty()) {
    ASSIGN_OR_RETURN(creds.token, auth::ReadTokenFile(settings.token_file));
  } else if (!creds.token.empty()) {
    RETURN_IF_ERROR(auth::CheckToken(creds.token, "the token ($MARIPOSA_TOKEN or the context's token)"));
  } else if (!settings.triton_profile.empty()) {
    auto env = [&](const char* k) {
      auto it = io.env.find(k);
      return it == io.env.end() ? std::string() : it->second;
    };
    ASSIGN_OR_RETURN(auth::TritonProfile profile,
                     auth::LoadTritonProfile(settings.triton_profile, io.env, env("HOME")));
    ASSIGN_OR_RETURN(creds.signer, auth::SshSigner::Open(profile, env("SSH_AUTH_SOCK"), env("HOME") + "/.ssh"));
  }
  auto client = std::make_unique<cli::Client>(settings.addr, creds, io.dial, io.clock, deadlines);
  RETURN_IF_ERROR(client->Connect());
  return client;
}

}  // namespace

const cli::Registry& Commands() {
  static const cli::Registry* r = [] {
    auto* reg = new cli::Registry(Build());
    reg->Add({.path = "help",
              .args = "[COMMAND ...]",
              .summary = "this overview, or one command's help",
              .group = "Shell",
              .max_args = -1,
              .daemon = false,
              .run = [](Context& c, const Parsed& p) -> Result {
                ASSIGN_OR_RETURN(std::string help, HelpFor(p.args()));
                c.out() << help;
                return 0;
              }});
    return reg;
  }();
  return *r;
}

int Run(const std::vector<std::string>& args, const Io& io) {
  std::ostream& err = *io.err;
  const cli::Registry& reg = Commands();
  auto usage_error = [&](const std::string& msg, const cli::Command* cmd, const std::string& node = "") {
    err << "mariposa: " << msg << "\n";
    if (cmd != nullptr) err << reg.Usage(*cmd) << "`mariposa " << cmd->path << " --help` for more\n";
    else if (!node.empty()) err << "`mariposa " << node << " --help` lists its commands\n";
    else err << "`mariposa --help` for usage\n";
    return 2;
  };
  for (const std::string& a : args) {
    if (a == "--token" || absl::StartsWith(a, "--token=")) {
      return usage_error("a token is not taken from the command line (ps and shell history show it): use "
                         "--token-file FILE, $MARIPOSA_TOKEN, or a context's token-file",
                         nullptr);
    }
  }
  std::vector<std::string> rest;
  auto globals = cli::ParseFlags(reg.globals(), args, true, &rest, "mariposa");
  if (!globals.ok()) return usage_error(std::string(globals.status().message()), nullptr);
  std::vector<std::string> words;
  for (const std::string& t : rest) {
    if (!IsOption(t)) words.push_back(t);
  }
  if (globals->Has("--help")) {
    auto help = HelpFor(words);
    if (!help.ok()) return usage_error(std::string(help.status().message()), nullptr);
    *io.out << *help;
    return 0;
  }
  if (words.empty()) return usage_error("no command given", nullptr);
  size_t used = 0;
  auto found = reg.Find(words, &used);
  if (!found.ok()) return usage_error(std::string(found.status().message()), nullptr, DeepestNode(words));
  const cli::Command& cmd = **found;
  // The command's own arguments: what is left once its path's words go.
  auto parsed = cli::ParseFlags(cmd.flags, CommandArgs(rest, used), true, nullptr, absl::StrCat("mariposa ", cmd.path));
  if (!parsed.ok()) return usage_error(std::string(parsed.status().message()), &cmd);
  if (std::string wrong = ArgCountError(cmd, parsed->args()); !wrong.empty()) return usage_error(wrong, &cmd);
  std::string output = globals->Value("--output").value_or("table");
  if (output != "table" && output != "json" && output != "yaml") {
    return usage_error(absl::StrCat("-o must be table, json or yaml, not \"", output, "\""), &cmd);
  }
  cli::Deadlines deadlines;
  deadlines.start = io.clock->Now();
  for (auto [flag, out] : {std::pair<const char*, absl::Duration*>{"--request-timeout", &deadlines.request},
                           {"--timeout", &deadlines.command}}) {
    auto d = globals->Duration(flag, *out);
    if (!d.ok()) return usage_error(std::string(d.status().message()), &cmd);
    *out = *d;
  }
  auto env_no_color = io.env.find("NO_COLOR");
  cli::SetColor(cli::ColorWanted(globals->Has("--no-color"),
                                 env_no_color == io.env.end() ? nullptr : env_no_color->second.c_str(), io.out_tty));
  cli::Settings flags;
  for (auto [name, field] : {std::pair{"--project", &flags.project}, {"--addr", &flags.addr}, {"--ca", &flags.ca},
                             {"--cert", &flags.cert}, {"--key", &flags.key}, {"--token-file", &flags.token_file},
                             {"--triton-profile", &flags.triton_profile}}) {
    *field = globals->Value(name).value_or("");
  }
  // Connection settings: flag, environment, context, default.
  cli::Settings settings = flags;
  if (cmd.daemon || cmd.project != ProjectUse::kNone) {
    auto cfg = cli::LoadConfig(cli::ConfigPath(io.env));
    if (!cfg.ok()) return usage_error(std::string(cfg.status().message()), nullptr);
    auto resolved = cli::Resolve(flags, globals->Value("--context").value_or(""), io.env, *cfg);
    if (!resolved.ok()) {
      err << "mariposa: " << resolved.status().message() << "\n";
      return 1;
    }
    settings = *resolved;
  }
  if (cmd.project == ProjectUse::kRequired && settings.project.empty()) {
    return usage_error("no project: pass -j PROJECT or set MARIPOSA_PROJECT", &cmd);
  }
  std::unique_ptr<cli::Client> client;
  if (cmd.daemon) {
    auto dialed = Dial(settings, io, deadlines);
    if (!dialed.ok()) {
      err << "mariposa: " << dialed.status().message() << "\n";
      return 1;
    }
    client = *std::move(dialed);
  }
  cli::Output output_stream(*io.out, output);
  Context ctx({io.clock, &reg, flags, io.env, settings.project, io.in_tty}, output_stream, err, *io.in, client.get());
  Result r = cmd.run(ctx, *parsed);
  io.out->flush();
  if (r.ok()) return *r;
  if (absl::IsInvalidArgument(r.status())) return usage_error(std::string(r.status().message()), &cmd);
  err << "mariposa: " << r.status().message() << "\n";
  return cmd.error_exit;
}

int Main(int argc, char** argv, const Clock* clock) {
  Io io{&std::cout, &std::cerr, &std::cin, isatty(STDIN_FILENO) != 0, isatty(STDOUT_FILENO) != 0, clock, {}, {}};
  for (const char* name : {"HOME", "MARIPOSA_ADDR", "MARIPOSA_PROJECT", "MARIPOSA_CA", "MARIPOSA_CERT", "MARIPOSA_KEY",
                           "MARIPOSA_TOKEN", "MARIPOSA_TOKEN_FILE", "MARIPOSA_CONTEXT", "MARIPOSA_CONFIG", "NO_COLOR",
                           "MARIPOSA_TRITON_PROFILE", "TRITON_PROFILE", "TRITON_ACCOUNT", "SDC_ACCOUNT", "TRITON_USER",
                           "SDC_USER", "TRITON_KEY_ID", "SDC_KEY_ID", "TRITON_URL", "SDC_URL", "SSH_AUTH_SOCK"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v) io.env[name] = v;
  }
  io.dial = cli::DefaultDialer();
  return Run(std::vector<std::string>(argv + 1, argv + argc), io);
}

}  // namespace mariposa::cmd
