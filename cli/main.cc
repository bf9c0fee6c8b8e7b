// mariposa: the command-line client, a thin gRPC client of mariposad.
// Exit codes: 0 ok, 1 error, 2 usage.
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <yaml-cpp/yaml.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "mariposa/v1/events.grpc.pb.h"
#include "mariposa/v1/health.grpc.pb.h"
#include "mariposa/v1/images.grpc.pb.h"
#include "mariposa/v1/admin.grpc.pb.h"
#include "mariposa/v1/auth.grpc.pb.h"
#include "mariposa/v1/projects.grpc.pb.h"
#include "mariposa/v1/queue.grpc.pb.h"
#include "mariposa/v1/state.grpc.pb.h"
#include "auth/client.h"
#include "cli/config.h"
#include "cli/history.h"
#include "cli/plan_text.h"
#include "projects/restore.h"
#include "cli/suggest.h"
#include "projects/limits.h"

namespace mariposa {
namespace {

using v1::Admin;
using v1::Projects;

constexpr char kUsage[] = R"(usage: mariposa [-j PROJECT] [--addr ADDR] [-o table|json|yaml] COMMAND ...

Projects
  project create NAME [--description TEXT] [--owner ACCOUNT_UUID]
  project list
  project get [NAME]
  project delete NAME [--yes]
Manifests and versions
  apply -f FILE [--yes] [--force] [--previous VERSION] [-m MESSAGE] [--wait] [--thaw]
  diff -f FILE
  versions
  history [--limit N]          versions and tasks in one timeline: when, who, what, result
  version get [VERSION] [--manifest]
  version tag VERSION TAG
  rollback VERSION [--yes] [--force] [--wait] [--thaw]
  scale SERVICE=N|+N|-N ... [--dry-run] [--wait] [--thaw]
Metadata
  meta list
  meta get KEY
  meta set KEY VALUE [--cas ID]
  meta set KEY [-] --secret [--cas ID]  (prompts, or reads stdin with -; never from argv)
  meta rm KEY [--cas ID]
  meta incr KEY [N] [--cas ID]
  meta decr KEY [N] [--cas ID]
  meta import FILE [--secret]        (YAML/JSON map, or KEY=VALUE lines)
State
  status [-v]                          per service: desired, running, healthy, updating, frozen
  health [--agent ADDR]                every check of every instance, its state and agent; the agents
Tasks and freezes
  reprovision [--service s1,s2 | --group G] [filters] [--canary N] [--rolling N] [--wait] [--thaw]
                                          (rolls instances onto the current version)
  start [--service s1,s2 | --group G] [--thaw]   (starts stopped instances)
  stop [--service s1,s2 | --group G] [--thaw]    (stops instances until start)
  queue list [--finished N]
  queue get TASK
  queue terminate TASK [--reason TEXT]   (ends it and freezes its scope)
  pause TASK [--reason TEXT]             (holds a rollout between steps; it stays open)
  resume TASK                            (continues a paused rollout)
  freeze [--service s1,s2 | --group G] [--reason TEXT] [--only kind,kind]
  thaw [--service s1,s2 | --group G]
Images (IMGAPI and the image source)
  image list [NAME] [--source]           images in IMGAPI, or in the source's channel
  image get IMAGE                        one image (uuid or name@version)
  image avail [SERVICE ...] [--all]      newer versions of the services' images in the source
  image changes NAME FROM TO             the change log from one version to another
  image import IMAGE                     import from the source into IMGAPI (waits)
  image create --from INSTANCE --name N --version V [--prepare FILE]
                                         an image of a prototype instance (waits)
Triton core (agents)
  core check                             CNAPI's server.agents against the goal; exit 1 on drift
Log and controller
  events [-n N] [--after INDEX] [--all] [-A] [-f]   newest N (100) of the project (-A: every project);
                                         --all every one; -f follows, reconnecting across restarts
  admin status
  admin state | admin state set readonly --reason R | admin state set active
  admin backup NAME                    written by mariposad into its --backup-dir, 0600
  admin restore BACKUP [--data-dir DIR]   into a stopped mariposad's data dir
Access (docs/security.md)
  auth whoami                          who mariposad says you are, and your roles
  auth can-i ACTION [-j PROJECT]       whether you may (apply, freeze, …); exit 0 yes, 1 no
  auth permissions                     the least role every RPC needs
  admin token create --name N --role R (-j PROJECT | --all-projects) [--expires 30d]
  admin token list | admin token revoke ID|NAME
  admin grant SUBJECT ROLE [-j PROJECT]   SUBJECT: user:NAME (local user) or cert:CN
  admin grants | admin ungrant SUBJECT [-j PROJECT]
  admin rotate-key                     seals every secret again with a new key
  config get-contexts | current-context | use-context NAME | delete-context NAME
  config set-context NAME [--addr A] [-j P] [--ca F] [--cert F --key F] [--token-file F]

Global options
  -j, --project NAME   the project (default: $MARIPOSA_PROJECT, or the manifest's project:)
  --addr ADDR          mariposad address (default: $MARIPOSA_ADDR, the context's, or 127.0.0.1:7740;
                       unix:PATH for its Unix socket)
  --context NAME       settings from this context of the config file ($MARIPOSA_CONFIG,
                       ~/.config/mariposa/config.yaml); default its current-context
  --ca FILE            TLS: verify mariposad against this CA ($MARIPOSA_CA)
  --cert FILE --key FILE  TLS client certificate ($MARIPOSA_CERT, $MARIPOSA_KEY)
  --token-file FILE    bearer token ($MARIPOSA_TOKEN_FILE, or the token in $MARIPOSA_TOKEN)
  -o, --output FORMAT  table (default), json or yaml
  -h, --help           help; `mariposa COMMAND --help` for one command

VERSION is a version number, a tag, 4+ characters of a version uuid, or "current".
Exit codes: 0 ok, 1 error, 2 usage.
)";

const std::map<std::string, std::set<std::string>>& Commands() {
  static const auto* tree = new std::map<std::string, std::set<std::string>>(cli::CommandTree(kUsage));
  return *tree;
}

const std::map<std::string, std::string>& CommandHelp() {
  static const auto* h = new std::map<std::string, std::string>{
      {"project",
       "usage: mariposa project create NAME [--description TEXT] [--owner ACCOUNT_UUID] | list | get [NAME] | delete NAME [--yes] [--force]\n\n"
       "delete: with mariposad converging a data center, a project that still has instances is refused;\n"
       "--force removes its instances first and deletes the project once they are gone.\n"},
      {"start",
       "usage: mariposa -j PROJECT start [--service s1,s2 | --group G] [--thaw]\n\n"
       "Queues a start task: stopped instances of the scope are started (not replaced) and the services run\n"
       "again as the manifest says.\n"},
      {"stop",
       "usage: mariposa -j PROJECT stop [--service s1,s2 | --group G] [--thaw]\n\n"
       "Queues a stop task: running instances of the scope are stopped and stay stopped (none is created or\n"
       "replaced) until `mariposa start`.\n"},
      {"apply",
       "usage: mariposa [-j PROJECT] apply -f FILE [--yes] [--force] [--previous VERSION] [-m MESSAGE]\n"
       "                                [--wait [--timeout DURATION]] [--thaw]\n\n"
       "Validates FILE (YAML or JSON; - for stdin), shows what changes against the version in force,\n"
       "asks for confirmation (or --yes) and stores a new version. The version the diff was computed\n"
       "against is sent as --previous, so a concurrent change is refused instead of overwritten.\n"
       "--force skips that check. Applying an unchanged manifest is a no-op. Services whose instance spec\n"
       "changes (image, resources, environment, command, …) are rolled out by a reprovision task, update.rolling\n"
       "at a time, unless the service says update.on_change: manual.\n"
       "--wait follows the instances (needs mariposad --triton) until every service is converged, printing\n"
       "each service's verdict; exits 1 with the reason and fix when one is paused or failed, or --timeout (10m)\n"
       "passes. A change to a service a freeze covers is refused unless --thaw, which ends that freeze.\n"},
      {"diff", "usage: mariposa [-j PROJECT] diff -f FILE\n\nShows what applying FILE would change; stores nothing.\n"
               "Exits 0 when nothing would change, 1 when something would, 2 on an error (as diff(1)).\n"},
      {"versions", "usage: mariposa -j PROJECT versions\n\nLists every version: number, uuid, time, author, tags.\n"},
      {"version",
       "usage: mariposa -j PROJECT version get [VERSION] [--manifest] | version tag VERSION TAG\n\n"
       "--manifest prints the manifest exactly as it was sent.\n"},
      {"rollback",
       "usage: mariposa -j PROJECT rollback VERSION [--yes] [--force] [--wait [--timeout DURATION]] [--thaw]\n\n"
       "Creates a new version whose content equals VERSION's. Refused when a freeze covers a changed service,\n"
       "unless --thaw (which ends those freezes). Services whose instance spec changes are rolled out by a\n"
       "reprovision task (update.on_change: rollout, the default); --wait follows it as apply --wait does.\n"},
      {"meta",
       "usage: mariposa -j PROJECT meta list | get KEY | set KEY VALUE [--cas ID] | set KEY [-] --secret [--cas ID]\n"
       "                              | rm KEY [--cas ID]\n"
       "                              | incr KEY [N] [--cas ID] | decr KEY [N] [--cas ID] | import FILE [--secret]\n\n"
       "--cas ID writes only if the key is still at cas id ID (0: only if it does not exist).\n"
       "Secret values are never printed; they are shown as <secret>. A secret is never read from the command line:\n"
       "set KEY --secret prompts for it (no echo), set KEY - --secret reads it from stdin. mariposad seals it\n"
       "(AES-256-GCM) before it reaches the store; it leaves mariposad only inside VMAPI create requests.\n"},
      {"events", "usage: mariposa [-j PROJECT] events [-n N] [--after INDEX] [--all] [-A] [-f]\n\n"
                 "Lists the newest N (--limit, default 100) events of the project, oldest first, and says how many\n"
                 "earlier ones there are. --after INDEX lists from that index on (a page of N); --all lists every\n"
                 "one. Without -j (or with -A, --all-projects) every project's. -f follows: prints new events as\n"
                 "they happen (from INDEX with --after, else from now on) until interrupted, reconnecting when\n"
                 "mariposad restarts and resuming after the last event printed.\n"},
      {"queue",
       "usage: mariposa -j PROJECT queue list [--finished N] | queue get TASK | queue terminate TASK [--reason TEXT]\n\n"
       "Terminating a task freezes its scope (services) until `mariposa thaw`.\n"},
      {"image",
       "usage: mariposa image list [NAME] [--source] | get IMAGE | avail [SERVICE ...] [--all] |\n"
       "                      changes NAME FROM TO | import IMAGE |\n"
       "                      create --from INSTANCE --name NAME --version VERSION [--prepare FILE]\n\n"
       "IMAGE is a uuid or name@version. The image source is mariposad's --image-source (an IMGAPI such as\n"
       "updates.tritondatacenter.com) and its --image-channel. avail: for each service (of -j PROJECT, or of\n"
       "every project) the newest version in the source, or every newer one with --all, like `sdcadm avail`.\n"
       "A manifest may name an image that is only in the source: the task that needs it imports it first.\n"
       "create: IMGAPI create-from-vm of the prototype INSTANCE (its uuid): it is stopped and snapshotted,\n"
       "booted with the prepare-image script (and --prepare FILE, the operator's own) running before any of\n"
       "its services, imaged, rolled back, and started again if it was running. Prints the job's steps.\n"},
      {"core",
       "usage: mariposa -j PROJECT core check\n\n"
       "Compares every server's agents as CNAPI reports them with the project's agent services\n"
       "(compute_type: agent) and prints each drift: missing (not installed), wrong version (another\n"
       "version, failed or skipped installs, a server that is down), installed by hand (on a server that\n"
       "servers.select does not cover). Servers in servers.exclude are left alone. Exit 0 when there is no\n"
       "drift, 1 when there is.\n"},
      {"pause",
       "usage: mariposa pause TASK [--reason TEXT]\n\n"
       "Holds a rollout (a reprovision task, as `queue list` shows it) between steps without ending it: no\n"
       "further instance is replaced or reprovisioned for it; jobs in flight finish. Its progress_deadline does\n"
       "not run while it is paused. `mariposa resume TASK` continues it; `queue terminate` ends it.\n"},
      {"resume", "usage: mariposa resume TASK\n\nContinues a rollout `mariposa pause` held.\n"},
      {"freeze",
       "usage: mariposa -j PROJECT freeze [--service s1,s2 | --group G] [--reason TEXT] [--only kind,kind]\n\n"
       "Terminates the tasks in scope and blocks automatic work there until `mariposa thaw`; user commands are\n"
       "refused unless given --thaw. --only replace-unhealthy,scale,reprovision,agent-rollout suspends just those\n"
       "kinds of automatic work.\n"},
      {"scale",
       "usage: mariposa -j PROJECT scale SERVICE=N|SERVICE=+N|SERVICE=-N ... [--dry-run] [--wait [--timeout D]] [--thaw]\n\n"
       "Stores a new version with the changed counts (its text is the canonical form of the manifest);\n"
       "with mariposad --triton the instances follow, as a scale task per service (`queue list`).\n"
       "--wait follows them as `apply --wait` does. Refused in a frozen scope unless --thaw (which ends the freeze).\n"},
      {"health",
       "usage: mariposa -j PROJECT health\n"
       "       mariposa health --agent ADDR\n\n"
       "Every health check of the project's instances: instance, check, type, address checked, state\n"
       "(unknown, starting, healthy, unhealthy), since when, the last failure and the agent that checks it\n"
       "(\"-\": no live agent can); then the live agents with their share and counters.\n"
       "--agent ADDR asks one mariposa-health agent (its --listen address) for the checks it runs, with\n"
       "last run and run count.\n"},
      {"status",
       "usage: mariposa -j PROJECT status [-v]\n\n"
       "Goal versus actual (needs mariposad --triton): per service desired, running, provisioning, broken,\n"
       "healthy, updating (live at an older spec) and frozen; -v lists every instance.\n"},
      {"reprovision",
       "usage: mariposa -j PROJECT reprovision [--service s1,s2 | --group G] [--version V,..] [--image I,..]\n"
       "                                     [--server UUID,..] [--instance I,..] [--canary N] [--rolling N]\n"
       "                                     [--wait [--timeout DURATION]] [--thaw]\n\n"
       "Queues a reprovision task: instances at another spec are replaced by the current version's, `rolling`\n"
       "at a time, never more than `max_surge` above count; an old instance goes once its replacement is ready.\n"
       "Order: oldest project version first, then oldest instance. Filters limit the instances replaced (each\n"
       "given filter must match): --version (number or uuid of the version an instance was created for),\n"
       "--image (uuid or name[@version]), --server (server uuid), --instance (uuid or alias).\n"
       "--canary N stops after N replacements and completes the task (default: the manifest's update.canary;\n"
       "0 = all); run reprovision again to continue. --rolling N replaces N at a time instead of update.rolling.\n"
       "--wait follows the instances until every service is converged (as apply --wait).\n"},
      {"thaw", "usage: mariposa -j PROJECT thaw [--service s1,s2 | --group G]\n\nEnds the freezes that overlap the scope.\n"},
      {"admin",
       "usage: mariposa admin status | state [set active|readonly [--reason R]] | backup NAME |\n"
       "                     restore BACKUP [--data-dir DIR] | token create|list|revoke | grant SUBJECT ROLE [-j P] |\n"
       "                     grants | ungrant SUBJECT [-j P] | rotate-key\n\n"
       "state: active or readonly (reads work; every change is refused, UNAVAILABLE with the reason; syncs and\n"
       "  replacements pause); kept across restarts. A --standby mariposad answers status as standby, one that\n"
       "  failed to start with --on-init-failure serve as initfail.\n"
       "restore BACKUP: run where mariposad's data dir is, with mariposad stopped (refused while it runs).\n"
       "  The backup is verified, then the current store is moved aside as mariposa.db.before-restore-STAMP.\n"
       "backup NAME: mariposad writes a consistent copy of the store into its --backup-dir (0700), the file 0600;\n"
       "secrets in it stay sealed (the key file is not in it).\n"
       "token create --name N --role viewer|deployer|operator|admin|health-agent (-j PROJECT | --all-projects)\n"
       "  [--expires 30d]: prints the token once (stdout); mariposad keeps only its sha256.\n"
       "grant: a role for a local user (user:NAME, on the Unix socket or loopback) or a TLS client\n"
       "  certificate (cert:CN), on -j PROJECT or on every project.\n"
       "rotate-key: a new secrets key; every secret is sealed again; the old key is kept as a .retired file.\n"},
      {"auth",
       "usage: mariposa auth whoami | auth can-i ACTION [-j PROJECT] | auth permissions\n\n"
       "ACTION is a verb (apply, scale, freeze, thaw, start, stop, delete, backup, token, …) or an RPC\n"
       "(Projects/Apply). can-i exits 0 when allowed, 1 when not, with the reason.\n"},
      {"config",
       "usage: mariposa config get-contexts | current-context | use-context NAME | delete-context NAME\n"
       "       mariposa config set-context NAME [--addr A] [-j P] [--ca F] [--cert F --key F] [--token-file F]\n\n"
       "Contexts are named connection settings in $MARIPOSA_CONFIG (default ~/.config/mariposa/config.yaml,\n"
       "0600). Each setting: flag, then environment, then the context, then the default.\n"},
  };
  return *h;
}

struct UsageError {
  std::string msg;
};

// Every command the usage text lists, with their subcommands.
const std::map<std::string, std::set<std::string>>& Commands();

// "unknown command "stauts"; did you mean "status"?"
std::string UnknownCommand(const std::string& cmd) {
  std::set<std::string> names = {"help", "completion"};
  for (const auto& kv : Commands()) names.insert(kv.first);
  std::string near = cli::DidYouMean(cmd, names);
  return absl::StrCat("unknown command \"", cmd, "\"", near.empty() ? "" : absl::StrCat("; did you mean \"", near, "\"?"));
}

// "-jjupiter" for "-j jupiter": a one-letter option with its value attached.
bool AttachedShort(absl::string_view name, absl::string_view arg) {
  return name.size() == 2 && name[0] == '-' && name[1] != '-' && arg.size() > 2 && absl::StartsWith(arg, name) &&
         arg[2] != '=';
}

// Command-line arguments after the global options, with flag helpers.
class Args {
 public:
  explicit Args(std::vector<std::string> a) : a_(std::move(a)) {}

  // Removes and returns a flag's value ("--flag V" or "--flag=V").
  std::optional<std::string> Value(std::initializer_list<const char*> names) {
    for (size_t i = 0; i < a_.size(); ++i) {
      for (const char* n : names) {
        if (a_[i] == n) {
          if (i + 1 >= a_.size()) throw UsageError{absl::StrCat(n, " needs a value")};
          std::string v = a_[i + 1];
          a_.erase(a_.begin() + i, a_.begin() + i + 2);
          return v;
        }
        std::string prefix = absl::StrCat(n, "=");
        if (absl::StartsWith(a_[i], prefix) || AttachedShort(n, a_[i])) {
          std::string v = a_[i].substr(AttachedShort(n, a_[i]) ? 2 : prefix.size());
          a_.erase(a_.begin() + i);
          return v;
        }
      }
    }
    return std::nullopt;
  }
  bool Flag(std::initializer_list<const char*> names) {
    for (size_t i = 0; i < a_.size(); ++i) {
      for (const char* n : names) {
        if (a_[i] == n) {
          a_.erase(a_.begin() + i);
          return true;
        }
      }
    }
    return false;
  }
  // Positional arguments; unknown flags are usage errors.
  // The first positional argument, "" if none.
  std::string Peek() const {
    for (const auto& s : a_) {
      if (s.empty() || s[0] != '-') return s;
    }
    return "";
  }
  std::vector<std::string> Positional(size_t min, size_t max, const std::string& what) {
    for (const auto& s : a_) {
      if (s.size() > 1 && s[0] == '-' && !absl::SimpleAtoi(s, &dummy_)) throw UsageError{absl::StrCat("unknown option ", s)};
    }
    if (a_.size() < min || a_.size() > max) throw UsageError{absl::StrCat("expected ", what)};
    return a_;
  }

 private:
  std::vector<std::string> a_;
  int64_t dummy_ = 0;
};

struct Error {
  std::string msg;
};

std::string Env(const char* name, const std::string& def) {
  const char* v = std::getenv(name);
  return v && *v ? v : def;
}

// A value from stdin: asked for without echo on a terminal, else all of
// stdin with one trailing newline dropped.
std::string ReadValue(const std::string& prompt) {
  std::string v;
  if (isatty(STDIN_FILENO)) {
    std::cerr << prompt << std::flush;
    termios old{};
    bool restore = tcgetattr(STDIN_FILENO, &old) == 0;
    if (restore) {
      termios quiet = old;
      quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
      tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
    }
    std::getline(std::cin, v);
    if (restore) tcsetattr(STDIN_FILENO, TCSANOW, &old);
    std::cerr << "\n";
    return v;
  }
  std::stringstream s;
  s << std::cin.rdbuf();
  v = s.str();
  if (!v.empty() && v.back() == '\n') v.pop_back();
  return v;
}

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (const char* name : {"HOME", "MARIPOSA_ADDR", "MARIPOSA_PROJECT", "MARIPOSA_CA", "MARIPOSA_CERT", "MARIPOSA_KEY",
                           "MARIPOSA_TOKEN", "MARIPOSA_TOKEN_FILE", "MARIPOSA_CONTEXT", "MARIPOSA_CONFIG"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v) env[name] = v;
  }
  return env;
}

void Table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

// `mariposa config …`: contexts in the config file; no daemon involved.
int ConfigCmd(const std::vector<std::string>& args, const cli::Settings& flags) {
  auto env = Environment();
  std::string path = cli::ConfigPath(env);
  auto cfg = cli::LoadConfig(path);
  if (!cfg.ok()) throw Error{std::string(cfg.status().message())};
  std::string sub = args.empty() ? "" : args[0];
  if (sub == "get-contexts" && args.size() == 1) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [name, s] : cfg->contexts) {
      rows.push_back({name == cfg->current ? "*" : "", name, s.addr, s.project,
                      !s.cert.empty() ? "certificate" : (!s.token.empty() || !s.token_file.empty()) ? "token" : "local",
                      s.ca.empty() ? "no" : "yes"});
    }
    Table({"CURRENT", "NAME", "ADDR", "PROJECT", "AUTH", "TLS"}, rows);
    return 0;
  }
  if (sub == "current-context" && args.size() == 1) {
    if (cfg->current.empty()) throw Error{absl::StrCat("no current context in ", path)};
    std::cout << cfg->current << "\n";
    return 0;
  }
  if (sub == "use-context" && args.size() == 2) {
    if (!cfg->contexts.count(args[1])) {
      throw Error{absl::StrCat("no context \"", args[1], "\" in ", path, "; `mariposa config set-context ", args[1],
                               " --addr …` makes one")};
    }
    cfg->current = args[1];
    if (auto st = cli::SaveConfig(path, *cfg); !st.ok()) throw Error{std::string(st.message())};
    std::cout << "now using context " << args[1] << "\n";
    return 0;
  }
  if (sub == "set-context" && args.size() == 2) {
    if (!flags.token.empty()) {
      throw UsageError{"a token is not taken from the command line; use --token-file FILE"};
    }
    cli::Settings& s = cfg->contexts[args[1]];
    for (auto [from, to] : {std::pair{&flags.addr, &s.addr}, {&flags.project, &s.project}, {&flags.ca, &s.ca},
                            {&flags.cert, &s.cert}, {&flags.key, &s.key}, {&flags.token_file, &s.token_file}}) {
      if (!from->empty()) *to = *from;
    }
    if (cfg->current.empty()) cfg->current = args[1];
    if (auto st = cli::SaveConfig(path, *cfg); !st.ok()) throw Error{std::string(st.message())};
    std::cout << "context " << args[1] << " saved in " << path << (cfg->current == args[1] ? " (current)" : "") << "\n";
    return 0;
  }
  if (sub == "delete-context" && args.size() == 2) {
    if (cfg->contexts.erase(args[1]) == 0) throw Error{absl::StrCat("no context \"", args[1], "\" in ", path)};
    if (cfg->current == args[1]) cfg->current.clear();
    if (auto st = cli::SaveConfig(path, *cfg); !st.ok()) throw Error{std::string(st.message())};
    std::cout << "context " << args[1] << " deleted\n";
    return 0;
  }
  throw UsageError{"expected config get-contexts | current-context | use-context NAME | "
                   "set-context NAME [--addr A] [-j P] [--ca F] [--cert F --key F] [--token-file F] | delete-context NAME"};
}

class Cli {
 public:
  Cli(std::string addr, std::string project, std::string output, const Clock* clock,
      auth::ClientCredentials creds = {})
      : project_(std::move(project)), output_(std::move(output)), clock_(clock), creds_(std::move(creds)) {
    addr_ = addr;
    Connect();
  }

  // A new channel and stubs: a channel whose server went away keeps failing
  // for its reconnect backoff, so `events -f` starts afresh after a restart.
  void Connect() {
    // Message limits set on purpose: requests up to what the server takes,
    // replies up to the largest it sends (projects/limits.h).
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(mariposa::Limits::kMaxRequestBytes);
    args.SetMaxReceiveMessageSize(mariposa::Limits::kMaxGrpcMessageBytes);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // not shared with an earlier channel
    auto channel = auth::Dial(addr_, creds_, args);
    if (!channel.ok()) throw UsageError{std::string(channel.status().message())};
    channel_ = *channel;
    auth_ = v1::Auth::NewStub(channel_);
    projects_ = Projects::NewStub(channel_);
    admin_ = Admin::NewStub(channel_);
    queue_ = v1::Queue::NewStub(channel_);
    state_ = v1::State::NewStub(channel_);
    events_ = v1::Events::NewStub(channel_);
    images_ = v1::Images::NewStub(channel_);
  }

  int Run(const std::string& cmd, Args args);

 private:
  std::unique_ptr<grpc::ClientContext> Ctx(bool deadline = true) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    // The server stops any request after 30 s of work; a little more here so
    // that its own answer, which says what happened, arrives first.
    if (deadline) ctx->set_deadline(absl::ToChronoTime(clock_->Now() + absl::Seconds(35)));
    // Who we are is what mariposad authenticates (peer uid, certificate or
    // token), never a name we send.
    auth::AddCallCredentials(creds_, ctx.get());
    return ctx;
  }
  void Check(const grpc::Status& s) {
    if (s.ok()) return;
    // mariposad's own refusals in a state that takes no such call (readonly,
    // standby, initfail) say so themselves; any other UNAVAILABLE is gRPC's.
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE && !absl::StartsWith(s.error_message(), "mariposad ") &&
        !absl::StartsWith(s.error_message(), "this mariposad ")) {
      throw Error{absl::StrCat("cannot reach mariposad at ", addr_, " (", s.error_message(),
                               "); is it running? set --addr or MARIPOSA_ADDR",
                               creds_.ca_file.empty() ? "" : " (and is it serving TLS with a certificate --ca signed?)")};
    }
    throw Error{s.error_message()};
  }
  const std::string& NeedProject() {
    if (project_.empty()) throw UsageError{"no project: pass -j PROJECT or set MARIPOSA_PROJECT"};
    return project_;
  }
  bool Structured() const { return output_ == "json" || output_ == "yaml"; }
  void Print(const google::protobuf::Message& m);
  void PrintJson(const std::string& json);  // as -o asks: JSON text, or YAML
  // Rows of named text fields, printed as a JSON or YAML list (-o json|yaml).
  using Record = std::vector<std::pair<std::string, std::string>>;
  void PrintRecords(const std::vector<Record>& records);
  bool Confirm(const std::string& question, bool yes);
  void PrintDiff(const v1::Diff& d, const std::string& project);

  int Project(Args& a);
  int Apply(Args& a, bool dry_run);
  int Versions(Args& a);
  int HistoryCmd(Args& a);
  int Version(Args& a);
  int Rollback(Args& a);
  int Meta(Args& a);
  int Events(Args& a);
  int FollowEvents(const std::string& project, int64_t after, bool tail);
  int AdminCmd(Args& a);
  int TokenCmd(Args& a);
  int AuthCmd(Args& a);
  int QueueCmd(Args& a);
  int FreezeCmd(Args& a, bool thaw);
  int PauseCmd(bool pause, Args& a);
  int ImageCmd(Args& a);
  int CoreCmd(Args& a);
  int TaskCmd(const std::string& kind, Args& a);
  int HealthCmd(Args& a);
  int WaitSettled(const std::string& project, absl::Duration timeout);
  int StatusCmd(Args& a);
  void PrintStaleMeta(const std::string& project);
  int ScaleCmd(Args& a);
  void PrintTask(const v1::Task& t);

  std::string addr_;
  std::string project_;
  std::string output_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Projects::Stub> projects_;
  std::unique_ptr<Admin::Stub> admin_;
  std::unique_ptr<v1::Queue::Stub> queue_;
  std::unique_ptr<v1::State::Stub> state_;
  const Clock* clock_;
  std::unique_ptr<v1::Events::Stub> events_;
  std::unique_ptr<v1::Images::Stub> images_;
  auth::ClientCredentials creds_;
  std::unique_ptr<v1::Auth::Stub> auth_;
};

std::string Time(const google::protobuf::Timestamp& t) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixSeconds(t.seconds()), absl::LocalTimeZone());
}

// Aligned columns.
void Table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(header.size());
  for (size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (size_t i = 0; i < r.size(); ++i) {
      out += r[i];
      if (i + 1 < r.size()) out += std::string(w[i] - r[i].size() + 2, ' ');
    }
    std::cout << out << "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
}

void EmitYaml(const YAML::Node& n, YAML::Emitter* e) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      *e << YAML::BeginMap;
      for (const auto& kv : n) {
        *e << YAML::Key << kv.first.Scalar() << YAML::Value;
        EmitYaml(kv.second, e);
      }
      *e << YAML::EndMap;
      break;
    case YAML::NodeType::Sequence:
      *e << YAML::BeginSeq;
      for (const auto& i : n) EmitYaml(i, e);
      *e << YAML::EndSeq;
      break;
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (s.find('\n') != std::string::npos) *e << YAML::Literal << s;
      else *e << s;
      break;
    }
    default:
      *e << YAML::Null;
  }
}

void Cli::Print(const google::protobuf::Message& m) {
  std::string json;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &json, o);
  PrintJson(json);
}

void Cli::PrintRecords(const std::vector<Record>& records) {
  google::protobuf::ListValue list;
  for (const Record& r : records) {
    auto& fields = *list.add_values()->mutable_struct_value()->mutable_fields();
    for (const auto& kv : r) fields[kv.first].set_string_value(kv.second);
  }
  // Struct values print as plain JSON (Print's always-print option would
  // add each Value's empty fields).
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(list, &json, o);
  PrintJson(json);
}

void Cli::PrintJson(const std::string& json) {
  if (output_ == "json") {
    std::cout << json;
    return;
  }
  YAML::Node n = YAML::Load(json);
  YAML::Emitter e;
  EmitYaml(n, &e);
  std::cout << e.c_str() << "\n";
}

bool Cli::Confirm(const std::string& question, bool yes) {
  if (yes) return true;
  if (!isatty(STDIN_FILENO)) {
    throw Error{"not applying without confirmation: standard input is not a terminal; pass --yes"};
  }
  std::cout << question << " [y/N] " << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "y" || answer == "Y" || answer == "yes";
}

using cli::Plural;

void Cli::PrintDiff(const v1::Diff& d, const std::string& project) {
  (void)project;
  for (const auto& c : d.services()) {
    switch (c.action()) {
      case v1::ServiceChange::CREATE:
        if (c.has_image_plan()) {
          std::cout << cli::ImagePlanText(c);
          break;
        }
        std::cout << "create service \"" << c.service() << "\": " << Plural(c.to_count(), "instance") << " of "
                  << c.to_image() << "\n";
        break;
      case v1::ServiceChange::DELETE:
        std::cout << "delete service \"" << c.service() << "\" (" << Plural(c.from_count(), "instance") << ")\n";
        break;
      case v1::ServiceChange::UPDATE: {
        bool only_count = c.fields_size() == 1 && c.fields(0).path() == "count";
        if (c.from_count() != c.to_count()) {
          int64_t delta = c.to_count() - c.from_count();
          std::cout << "scale \"" << c.service() << "\" " << c.from_count() << " -> " << c.to_count() << " ("
                    << (delta > 0 ? "+" : "") << delta << ")\n";
        }
        if (only_count) break;
        // With an image plan its header names the service; agents have no
        // count and are updated by their rollout.
        bool agent = c.has_image_plan() && c.image_plan().agent();
        if (c.has_image_plan()) std::cout << cli::ImagePlanText(c);
        else std::cout << "update \"" << c.service() << "\" (" << Plural(c.to_count(), "instance") << "):\n";
        for (const auto& f : c.fields()) {
          if (f.path() == "count") continue;
          if (f.from().empty()) std::cout << "    + " << f.path() << ": " << f.to() << "\n";
          else if (f.to().empty()) std::cout << "    - " << f.path() << ": " << f.from() << "\n";
          else std::cout << "    ~ " << f.path() << ": " << f.from() << " -> " << f.to() << "\n";
        }
        if (c.spec_changed() && !agent) {
          std::cout << "    " << Plural(c.instances_replaced(), "instance")
                    << (c.in_place() ? " will be reprovisioned in place (same uuid, NICs and delegate dataset)"
                                     : " will be replaced")
                    << (c.from_image() != c.to_image() && !c.has_image_plan()
                            ? absl::StrCat(" from image ", c.from_image())
                            : "")
                    << (c.rolls_out() ? " by a rollout when applied (update.on_change: rollout)"
                                      : " on the next `mariposa reprovision`")
                    << "\n";
        }
        break;
      }
      default:
        break;
    }
  }
  std::cout << cli::DownloadsText(d);
  for (const auto& f : d.project_fields()) {
    if (f.from().empty()) std::cout << "+ " << f.path() << ": " << f.to() << "\n";
    else if (f.to().empty()) std::cout << "- " << f.path() << ": " << f.from() << "\n";
    else std::cout << "~ " << f.path() << ": " << f.from() << " -> " << f.to() << "\n";
  }
}

// Reads a manifest, at most one byte past the limit: a larger file is
// refused here with the limit named, before anything is sent.
std::string ReadInput(const std::string& path) {
  std::string text;
  std::istream* in = &std::cin;
  std::ifstream f;
  if (path != "-") {
    f.open(path, std::ios::binary);
    if (!f) throw Error{absl::StrCat("cannot read ", path, ": ", std::strerror(errno))};
    in = &f;
  }
  constexpr size_t kLimit = mariposa::Limits::kMaxManifestBytes;
  text.resize(kLimit + 1);
  in->read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in->gcount()));
  if (text.size() > kLimit) {
    throw Error{absl::StrCat(path == "-" ? "standard input" : path, " is larger than ", kLimit,
                             " bytes, the limit for one manifest; split the project (docs/manifest.md, \"Limits\")")};
  }
  return text;
}

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

// Follows the project's verdicts until every service is converged; stops
// with an error as soon as one is paused or failed (waiting cannot fix
// that), printing what changes.
// A problem as RFD 40's `imgapiadm status` states it.
void PrintProblem(const v1::Problem& p, std::ostream& out) {
  out << "\nError:  " << p.error() << "\nReason: " << p.reason() << "\nFix:    " << p.fix()
      << "\nImpact: " << p.impact() << "\n";
}

int Cli::WaitSettled(const std::string& project, absl::Duration timeout) {
  absl::Time start = clock_->Now();
  std::string last;
  while (true) {
    v1::GetStateRequest req;
    req.set_project(project);
    v1::GetStateResponse st;
    Check(state_->GetState(Ctx().get(), req, &st));
    std::vector<std::string> parts;
    std::vector<std::string> stuck;
    std::set<std::string> left_behind;  // services with instances on an older spec and no rollout
    for (const auto& p : st.problems()) {
      if (p.kind() == "older-spec") left_behind.insert(p.service());
    }
    for (const auto& s : st.services()) {
      parts.push_back(absl::StrCat(s.name(), " ", s.verdict(), s.reason().empty() ? "" : ": " + s.reason()));
      if (s.verdict() == "failed" || s.verdict() == "paused" || left_behind.count(s.name())) {
        stuck.push_back(absl::StrCat(s.name(), " is ", s.verdict(), ": ", s.reason(),
                                     s.fix().empty() ? "" : absl::StrCat("\n  fix: ", s.fix())));
      }
    }
    std::string line = absl::StrJoin(parts, "; ");
    int secs = static_cast<int>(absl::ToInt64Seconds(clock_->Now() - start));
    if (line != last) {
      std::cout << "[" << secs << "s] " << line << "\n";
      std::cout.flush();
      last = line;
    }
    if (st.converged()) {
      std::cout << "converged after " << secs << "s\n";
      return 0;
    }
    if (!stuck.empty()) {
      for (const auto& m : stuck) std::cerr << "mariposa: " << m << "\n";
      for (const auto& p : st.problems()) PrintProblem(p, std::cerr);
      return 1;
    }
    if (clock_->Now() - start > timeout) {
      std::cerr << "mariposa: not converged after " << absl::FormatDuration(timeout)
                << "; `mariposa status -v` and `mariposa queue list` show where it stands\n";
      return 1;
    }
    clock_->SleepFor(absl::Milliseconds(300));
  }
}

// The rollout an apply or rollback queued (update.on_change: rollout).
void PrintRollout(const std::string& task, const google::protobuf::RepeatedPtrField<std::string>& services) {
  if (task.empty()) return;
  std::cout << "rolling out " << absl::StrJoin(services, ", ") << ": queued reprovision task " << task
            << " (update.on_change: rollout)\n";
}

absl::Duration WaitTimeout(const std::optional<std::string>& flag) {
  absl::Duration d = absl::Minutes(10);
  if (flag && (!absl::ParseDuration(*flag, &d) || d <= absl::ZeroDuration())) {
    throw UsageError{absl::StrCat("--timeout \"", *flag, "\" is not a duration (e.g. 5m)")};
  }
  return d;
}

int Cli::Apply(Args& a, bool dry_run) {
  auto file = a.Value({"-f", "--file"});
  bool wait = a.Flag({"--wait"});
  absl::Duration timeout = WaitTimeout(a.Value({"--timeout"}));
  bool yes = a.Flag({"--yes", "-y"});
  bool force = a.Flag({"--force"});
  bool thaw = !dry_run && a.Flag({"--thaw"});
  auto previous = a.Value({"--previous"});
  auto message = a.Value({"-m", "--message"});
  a.Positional(1, 1, dry_run ? "diff -f FILE" : "apply -f FILE");
  if (!file) throw UsageError{dry_run ? "diff needs -f FILE" : "apply needs -f FILE"};
  std::string text = ReadInput(*file);
  v1::ApplyRequest req;
  req.set_project(project_);
  req.set_manifest(text);
  req.set_filename(*file == "-" ? "<stdin>" : *file);
  req.set_thaw(thaw);
  req.set_allow_downgrade(force);
  req.set_dry_run(true);
  v1::ApplyResponse plan;
  Check(projects_->Apply(Ctx().get(), req, &plan));
  std::string name = project_;
  if (name.empty() && plan.has_version()) name = "";
  for (const auto& w : plan.warnings()) std::cerr << "warning: " << w << "\n";
  if (dry_run && Structured()) {
    Print(plan);
    return plan.changed() ? 1 : 0;  // diff: 0 no changes, 1 changes, 2 trouble
  }
  if (!Structured()) std::cout << cli::PlanHeader(plan.project(), addr_);
  // What runs besides the manifest: instances whose meta values changed.
  const std::string& existing = plan.version().project_uuid();
  if (plan.diff().empty()) {
    std::cout << "no changes: the manifest matches version " << plan.base_version_number() << " ("
              << plan.base_version() << ")\n";
    if (dry_run && !existing.empty()) PrintStaleMeta(existing);
    if (!force || plan.base_version().empty()) return 0;
    // sdcadm's forced same-image update: every instance reprovisioned or
    // replaced, every agent reinstalled, at the image it runs.
    std::cout << "--force: every service's current image will be installed again (instances replaced or "
                 "reprovisioned, agents reinstalled on every selected server), at each service's update.rolling\n";
    if (dry_run) return 1;
    if (!Confirm("Reinstall every service?", yes)) {
      std::cout << "not applied\n";
      return 1;
    }
    v1::AddTaskRequest task;
    task.set_project(plan.version().project_uuid().empty() ? project_ : plan.version().project_uuid());
    if (task.project().empty()) task.set_project(NeedProject());
    task.set_kind("reprovision");
    task.set_thaw(thaw);
    v1::AddTaskResponse added;
    Check(queue_->AddTask(Ctx().get(), task, &added));
    if (Structured()) Print(added.task());
    else std::cout << "queued reprovision task " << added.task().uuid() << " (forced reinstall)\n";
    if (wait) return WaitSettled(task.project(), timeout);
    return 0;
  }
  PrintDiff(plan.diff(), name);
  std::cout << cli::PlanSummary(plan.diff());
  if (dry_run) {
    if (!existing.empty()) PrintStaleMeta(existing);
    return 1;  // changes (0 when none, 2 on trouble)
  }
  if (!Confirm("Apply these changes?", yes)) {
    std::cout << "not applied\n";
    return 1;
  }
  req.set_dry_run(false);
  req.set_previous_version(previous ? *previous : plan.base_version());
  req.set_force(force);
  req.set_message(message.value_or(""));
  v1::ApplyResponse resp;
  Check(projects_->Apply(Ctx().get(), req, &resp));
  if (Structured()) {
    Print(resp);
    return 0;
  }
  if (!resp.changed()) {
    std::cout << "no changes: version " << resp.version().number() << " is current\n";
  } else {
    std::cout << (resp.project_created() ? "created project and " : "") << "applied version "
              << resp.version().number() << " (" << resp.version().uuid() << ")\n";
  }
  PrintRollout(resp.rollout_task(), resp.rollout_services());
  if (wait) return WaitSettled(resp.version().project_uuid(), timeout);
  return 0;
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

// Flattens a YAML map to dotted keys.
void Flatten(const YAML::Node& n, const std::string& prefix, std::map<std::string, std::string>* out) {
  for (const auto& kv : n) {
    std::string key = prefix.empty() ? kv.first.Scalar() : absl::StrCat(prefix, ".", kv.first.Scalar());
    if (kv.second.IsMap()) Flatten(kv.second, key, out);
    else if (kv.second.IsScalar() || kv.second.IsNull()) (*out)[key] = kv.second.IsNull() ? "" : kv.second.Scalar();
    else throw Error{absl::StrCat("meta import: ", key, " is a list; values must be strings or maps")};
  }
}

int Cli::Meta(Args& a) {
  bool secret = a.Flag({"--secret"});
  auto cas_text = a.Value({"--cas"});
  std::optional<int64_t> cas;
  if (cas_text) {
    int64_t v;
    if (!absl::SimpleAtoi(*cas_text, &v) || v < 0) throw UsageError{absl::StrCat("--cas needs a cas id, not \"", *cas_text, "\"")};
    cas = v;
  }
  auto rest = a.Positional(1, 3, "meta list|get|set|rm|incr|decr|import");
  const std::string& sub = rest[0];
  auto entry_line = [&](const v1::MetaEntry& e) {
    if (Structured()) {
      Print(e);
    } else {
      std::cout << e.key() << "=" << e.value() << "  (cas " << e.cas_id() << (e.secret() ? ", secret" : "") << ")\n";
    }
  };
  if (sub == "list") {
    v1::ListMetaRequest req;
    req.set_project(NeedProject());
    v1::ListMetaResponse resp;
    Check(projects_->ListMeta(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& e : resp.entries()) {
      rows.push_back({e.key(), e.value(), e.source(), e.cas_id() ? absl::StrCat(e.cas_id()) : "-", e.secret() ? "yes" : "no"});
    }
    Table({"KEY", "VALUE", "SOURCE", "CAS", "SECRET"}, rows);
    return 0;
  }
  if (sub == "get") {
    if (rest.size() != 2) throw UsageError{"expected meta get KEY"};
    v1::GetMetaRequest req;
    req.set_project(NeedProject());
    req.set_key(rest[1]);
    v1::GetMetaResponse resp;
    Check(projects_->GetMeta(Ctx().get(), req, &resp));
    if (Structured()) Print(resp.entry());
    else std::cout << resp.entry().value() << "\n";
    return 0;
  }
  if (sub == "set") {
    // A secret never goes on the command line, where `ps` and shell history
    // show it: it comes from a prompt or from stdin ("-").
    if (secret && rest.size() == 3 && rest[2] != "-") {
      throw UsageError{"a secret value is not taken from the command line (ps and shell history show it): "
                       "`mariposa meta set KEY --secret` prompts for it; `… meta set KEY - --secret` reads stdin"};
    }
    if (rest.size() != 3 && !(secret && rest.size() == 2)) throw UsageError{"expected meta set KEY VALUE"};
    std::string value = rest.size() == 3 ? rest[2] : "-";
    if (value == "-") value = ReadValue(absl::StrCat("value of ", rest[1], " (not shown): "));
    v1::SetMetaRequest req;
    req.set_project(NeedProject());
    req.set_key(rest[1]);
    req.set_value(value);
    req.set_secret(secret);
    if (cas) req.set_cas_id(*cas);
    v1::SetMetaResponse resp;
    Check(projects_->SetMeta(Ctx().get(), req, &resp));
    entry_line(resp.entry());
    PrintStaleMeta(req.project());
    return 0;
  }
  if (sub == "rm") {
    if (rest.size() != 2) throw UsageError{"expected meta rm KEY"};
    v1::DeleteMetaRequest req;
    req.set_project(NeedProject());
    req.set_key(rest[1]);
    if (cas) req.set_cas_id(*cas);
    v1::DeleteMetaResponse resp;
    Check(projects_->DeleteMeta(Ctx().get(), req, &resp));
    std::cout << "removed " << rest[1] << "\n";
    PrintStaleMeta(req.project());
    return 0;
  }
  if (sub == "incr" || sub == "decr") {
    if (rest.size() < 2) throw UsageError{absl::StrCat("expected meta ", sub, " KEY [N]")};
    int64_t n = 1;
    if (rest.size() == 3 && !absl::SimpleAtoi(rest[2], &n)) throw UsageError{absl::StrCat("\"", rest[2], "\" is not a whole number")};
    v1::IncrMetaRequest req;
    req.set_project(NeedProject());
    req.set_key(rest[1]);
    req.set_delta(sub == "incr" ? n : -n);
    if (cas) req.set_cas_id(*cas);
    v1::IncrMetaResponse resp;
    Check(projects_->IncrMeta(Ctx().get(), req, &resp));
    entry_line(resp.entry());
    PrintStaleMeta(req.project());
    return 0;
  }
  if (sub == "import") {
    if (rest.size() != 2) throw UsageError{"expected meta import FILE"};
    std::string text = ReadInput(rest[1]);
    std::map<std::string, std::string> entries;
    YAML::Node n;
    try {
      n = YAML::Load(text);
    } catch (const YAML::Exception&) {
    }
    if (n.IsMap()) {
      Flatten(n, "", &entries);
    } else {
      int line_no = 0;
      for (absl::string_view line : absl::StrSplit(text, '\n')) {
        ++line_no;
        line = absl::StripAsciiWhitespace(line);
        if (line.empty() || line[0] == '#') continue;
        size_t eq = line.find('=');
        if (eq == absl::string_view::npos || eq == 0) {
          throw Error{absl::StrCat(rest[1], ":", line_no, ": \"", line, "\" is not KEY=VALUE (or give a YAML/JSON map)")};
        }
        entries[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
      }
    }
    v1::ImportMetaRequest req;
    req.set_project(NeedProject());
    req.mutable_entries()->insert(entries.begin(), entries.end());
    req.set_secret(secret);
    v1::ImportMetaResponse resp;
    Check(projects_->ImportMeta(Ctx().get(), req, &resp));
    std::cout << "imported " << resp.imported() << " keys\n";
    PrintStaleMeta(req.project());
    return 0;
  }
  throw UsageError{"expected meta list|get|set|rm|incr|decr|import"};
}

int Cli::Events(Args& a) {
  auto after = a.Value({"--after"});
  auto limit = a.Value({"--limit", "-n"});
  bool all = a.Flag({"--all"});
  bool all_projects = a.Flag({"--all-projects", "-A"});
  bool follow = a.Flag({"-f", "--follow"});
  a.Positional(1, 1, "events");
  const std::string project = all_projects ? "" : project_;
  int64_t n = 0;
  if (after && !absl::SimpleAtoi(*after, &n)) throw UsageError{"--after needs an event index"};
  auto line = [](const v1::Event& e) {
    return std::vector<std::string>{absl::StrCat(e.index()), Time(e.time()), e.project(), e.kind(), e.actor(), e.detail()};
  };
  if (follow) return FollowEvents(project, n, !after.has_value());
  int lim = 100;
  if (limit && (!absl::SimpleAtoi(*limit, &lim) || lim < 1)) throw UsageError{"--limit needs a positive number"};
  // Default: the newest --limit; --after: from that index on (oldest first);
  // --all: everything, read a page at a time.
  v1::ListEventsRequest req;
  req.set_project(project);
  req.set_after_index(n);
  req.set_limit(all ? 1000 : lim);
  req.set_newest(!all && !after);
  std::vector<v1::Event> events;
  v1::ListEventsResponse resp;
  while (true) {
    resp.Clear();
    Check(projects_->ListEvents(Ctx().get(), req, &resp));
    for (const auto& e : resp.events()) events.push_back(e);
    if (!all || resp.events().empty() || resp.later() == 0) break;
    req.set_after_index(resp.events().rbegin()->index());
  }
  if (Structured()) {
    v1::ListEventsResponse out;
    for (auto& e : events) *out.add_events() = std::move(e);
    out.set_earlier(all ? 0 : resp.earlier());
    out.set_later(resp.later());
    Print(out);
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : events) rows.push_back(line(e));
  Table({"INDEX", "TIME", "PROJECT", "KIND", "ACTOR", "DETAIL"}, rows);
  if (!all && resp.earlier() > 0) {
    std::cerr << "(" << resp.earlier() << " earlier event" << (resp.earlier() == 1 ? "" : "s")
              << " not shown: --all shows every one, --after INDEX pages from an index)\n";
  }
  if (!all && resp.later() > 0 && !events.empty()) {
    std::cerr << "(" << resp.later() << " later event" << (resp.later() == 1 ? "" : "s") << ": --after "
              << events.back().index() << " for the next page)\n";
  }
  return 0;
}

// events -f: prints events as they are written; when mariposad goes away
// (a restart) it reconnects and resumes after the last index it printed.
int Cli::FollowEvents(const std::string& project, int64_t after, bool tail) {
  if (tail) {
    // From now on: the newest event's index, so that a reconnect resumes
    // there and not from the beginning.
    v1::ListEventsRequest last;
    last.set_project(project);
    last.set_limit(1);
    last.set_newest(true);
    v1::ListEventsResponse got;
    Check(projects_->ListEvents(Ctx().get(), last, &got));
    if (!got.events().empty()) after = got.events(0).index();
    tail = false;
  }
  absl::Duration backoff = absl::Milliseconds(200);
  while (true) {
    v1::WatchEventsRequest req;
    req.set_project(project);
    req.set_after_index(after);
    req.set_tail(tail);
    auto ctx = Ctx(/*deadline=*/false);
    auto reader = events_->Watch(ctx.get(), req);
    v1::Event e;
    while (reader->Read(&e)) {
      if (Structured()) {
        Print(e);
      } else {
        std::cout << e.index() << "  " << Time(e.time()) << "  " << e.project() << "  " << e.kind() << "  " << e.actor()
                  << "  " << e.detail() << "\n";
      }
      std::cout.flush();
      after = e.index();
      tail = false;
      backoff = absl::Milliseconds(200);
    }
    grpc::Status st = reader->Finish();
    if (st.ok()) return 0;
    if (st.error_code() != grpc::StatusCode::UNAVAILABLE) Check(st);
    std::cerr << "mariposa: lost mariposad at " << addr_ << " (" << st.error_message() << "); reconnecting, resuming after event "
              << after << "\n";
    clock_->SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(5));
    Connect();
  }
}

// "30d", "12h", "90m", "1h30m" as seconds; UsageError otherwise.
int64_t ParseExpiry(const std::string& text) {
  absl::Duration d;
  int64_t days = 0;
  if (!text.empty() && text.back() == 'd' && absl::SimpleAtoi(text.substr(0, text.size() - 1), &days) && days > 0) {
    return days * 86400;
  }
  if (!absl::ParseDuration(text, &d) || d < absl::Minutes(1)) {
    throw UsageError{absl::StrCat("--expires \"", text, "\" is not a duration of at least a minute (30d, 12h, 90m)")};
  }
  return absl::ToInt64Seconds(d);
}

std::string Scope(const std::string& project) { return project.empty() ? "every project" : "project " + project; }

int Cli::TokenCmd(Args& a) {
  auto name = a.Value({"--name"});
  auto role = a.Value({"--role"});
  auto expires = a.Value({"--expires"});
  bool all = a.Flag({"--all-projects"});
  auto rest = a.Positional(2, 3, "admin token create|list|revoke");
  const std::string& sub = rest[1];
  if (sub == "create") {
    if (!name || !role) throw UsageError{"admin token create needs --name NAME and --role ROLE"};
    if (all == !project_.empty()) {
      throw UsageError{"say which projects the token covers: -j PROJECT, or --all-projects"};
    }
    v1::CreateTokenRequest req;
    req.set_name(*name);
    req.set_role(*role);
    req.set_project(all ? "" : project_);
    if (expires) req.set_expires_in_seconds(ParseExpiry(*expires));
    v1::CreateTokenResponse resp;
    Check(auth_->CreateToken(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::cerr << "token " << resp.token().name() << " (" << resp.token().id() << "): " << resp.token().role() << " on "
              << Scope(resp.token().project()) << ", "
              << (resp.token().has_expires_at() ? "expires " + Time(resp.token().expires_at()) : "never expires")
              << "\nIt is shown this once; mariposad keeps only its hash. Give it to the client as\n"
                 "MARIPOSA_TOKEN, a --token-file, or a context's token-file (`mariposa config set-context`).\n";
    std::cout << resp.secret() << "\n";
    return 0;
  }
  if (sub == "list") {
    v1::ListTokensResponse resp;
    Check(auth_->ListTokens(Ctx().get(), {}, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& t : resp.tokens()) {
      rows.push_back({t.id(), t.name(), t.role(), t.project().empty() ? "*" : t.project(), Time(t.created_at()),
                      t.has_expires_at() ? Time(t.expires_at()) : "never", t.revoked() ? "revoked" : "live",
                      t.created_by()});
    }
    Table({"ID", "NAME", "ROLE", "PROJECT", "CREATED", "EXPIRES", "STATE", "CREATED BY"}, rows);
    return 0;
  }
  if (sub == "revoke" && rest.size() == 3) {
    v1::RevokeTokenRequest req;
    req.set_token(rest[2]);
    v1::RevokeTokenResponse resp;
    Check(auth_->RevokeToken(Ctx().get(), req, &resp));
    std::cout << "revoked token " << resp.token().name() << " (" << resp.token().id() << "); calls with it are refused from now on\n";
    return 0;
  }
  throw UsageError{"expected admin token create --name N --role R (-j PROJECT | --all-projects) [--expires 30d] | "
                   "admin token list | admin token revoke ID|NAME"};
}

int Cli::AuthCmd(Args& a) {
  auto rest = a.Positional(1, 2, "auth whoami | auth can-i ACTION | auth permissions");
  if (rest[0] == "whoami") {
    v1::WhoAmIResponse resp;
    Check(auth_->WhoAmI(Ctx().get(), {}, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::cout << "name:      " << resp.name() << "\nmethod:    " << resp.method() << "\ntransport: " << resp.transport()
              << "\npeer:      " << resp.peer() << "\nroles:     ";
    if (resp.grants().empty()) std::cout << "none";
    for (int i = 0; i < resp.grants_size(); ++i) {
      std::cout << (i ? ", " : "") << resp.grants(i).role() << " on " << Scope(resp.grants(i).project());
    }
    std::cout << "\n";
    return 0;
  }
  if (rest[0] == "can-i" && rest.size() == 2) {
    v1::CanIRequest req;
    req.set_action(rest[1]);
    req.set_project(project_);
    v1::CanIResponse resp;
    Check(auth_->CanI(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
    } else {
      std::cout << (resp.allowed() ? "yes" : "no") << " (" << resp.method() << " needs " << resp.permission()
                << (project_.empty() ? "" : " on project " + project_) << ")";
      if (!resp.allowed()) std::cout << ": " << resp.reason();
      std::cout << "\n";
    }
    return resp.allowed() ? 0 : 1;
  }
  if (rest[0] == "permissions") {
    v1::PermissionsResponse resp;
    Check(auth_->Permissions(Ctx().get(), {}, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : resp.rules()) rows.push_back({r.method(), r.permission(), r.global() ? "every project" : "per project"});
    Table({"RPC", "LEAST ROLE", "GRANT NEEDED ON"}, rows);
    return 0;
  }
  throw UsageError{"expected auth whoami | auth can-i ACTION [-j PROJECT] | auth permissions"};
}

int Cli::AdminCmd(Args& a) {
  if (a.Peek() == "token") return TokenCmd(a);
  std::optional<std::string> reason = a.Value({"--reason"});
  std::optional<std::string> data_dir = a.Value({"--data-dir"});
  auto rest = a.Positional(1, 3, "admin status | state | backup NAME | restore BACKUP | token … | grant | grants | "
                                 "ungrant | rotate-key");
  if (rest[0] == "restore" && rest.size() == 2) {
    // Local: the store is a file of a stopped mariposad, not an RPC.
    std::string dir = data_dir.value_or("/var/lib/mariposa");
    auto r = RestoreStore(rest[1], dir, clock_);
    if (!r.ok()) throw Error{absl::StrCat("restore refused (nothing was changed): ", r.status().message())};
    if (Structured()) {
      std::cout << "{\"store\":\"" << r->store << "\",\"moved_aside\":\"" << r->moved_aside
                << "\",\"schema\":" << r->schema << ",\"projects\":" << r->projects
                << ",\"last_event\":" << r->last_event << "}\n";
      return 0;
    }
    std::cout << "restored " << rest[1] << " to " << r->store << ": schema " << r->schema << ", " << r->projects
              << " projects, events up to " << r->last_event << "\n";
    if (!r->moved_aside.empty()) std::cout << "the store it replaced is kept as " << r->moved_aside << "\n";
    std::cout << "start mariposad now; it converges the data center to the restored goal state.\n";
    return 0;
  }
  if (rest[0] == "state" && rest.size() == 1) {
    v1::StatusResponse resp;
    Check(admin_->Status(Ctx().get(), {}, &resp));
    std::cout << resp.mode();
    if (resp.mode() == "readonly") {
      std::cout << " since " << Time(resp.state_since()) << " by " << resp.state_by() << ": " << resp.state_reason();
    }
    if (resp.mode() == "standby") std::cout << " (the active one is pid " << resp.active_pid() << ")";
    std::cout << "\n";
    return 0;
  }
  if (rest[0] == "state" && rest.size() == 3 && rest[1] == "set") {
    v1::SetStateRequest req;
    req.set_mode(rest[2]);
    req.set_reason(reason.value_or(""));
    v1::SetStateResponse resp;
    Check(admin_->SetState(Ctx().get(), req, &resp));
    std::cout << "mariposad is " << resp.mode() << " (was " << resp.previous() << ")\n";
    if (resp.mode() == "readonly") {
      std::cout << "reads work; changes are refused and syncs pause until `mariposa admin state set active`\n";
    }
    return 0;
  }
  if (rest[0] == "grant" && rest.size() == 3) {
    v1::SetGrantRequest req;
    req.mutable_grant()->set_subject(rest[1]);
    req.mutable_grant()->set_role(rest[2]);
    req.mutable_grant()->set_project(project_);
    v1::SetGrantResponse resp;
    Check(auth_->SetGrant(Ctx().get(), req, &resp));
    std::cout << resp.grant().subject() << " is " << resp.grant().role() << " on " << Scope(resp.grant().project()) << "\n";
    return 0;
  }
  if (rest[0] == "ungrant" && rest.size() == 2) {
    v1::DeleteGrantRequest req;
    req.set_subject(rest[1]);
    req.set_project(project_);
    v1::DeleteGrantResponse resp;
    Check(auth_->DeleteGrant(Ctx().get(), req, &resp));
    std::cout << rest[1] << " no longer has a grant on " << Scope(project_) << "\n";
    return 0;
  }
  if (rest[0] == "grants") {
    v1::ListGrantsResponse resp;
    Check(auth_->ListGrants(Ctx().get(), {}, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& g : resp.grants()) {
      rows.push_back({g.subject(), g.role(), g.project().empty() ? "*" : g.project(), Time(g.created_at()), g.created_by()});
    }
    Table({"SUBJECT", "ROLE", "PROJECT", "CREATED", "CREATED BY"}, rows);
    return 0;
  }
  if (rest[0] == "rotate-key") {
    v1::RotateKeyResponse resp;
    Check(auth_->RotateKey(Ctx().get(), {}, &resp));
    std::cout << "secrets key rotated: " << resp.old_key_id() << " -> " << resp.key_id() << "; " << resp.secrets()
              << " secrets sealed again. The old key is kept as a .retired file beside the key file for\n"
                 "backups taken before now; delete it once those backups are gone.\n";
    return 0;
  }
  if (rest[0] == "status") {
    v1::StatusResponse resp;
    Check(admin_->Status(Ctx().get(), {}, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::cout << "mode:     " << resp.mode() << "\nversion:  " << resp.version() << "\npid:      " << resp.pid() << "\n";
    if (resp.mode() == "active" || resp.mode() == "readonly") {  // the others have no store open
      std::cout << "store:    " << resp.store_path() << " (schema " << resp.schema_version() << ")\nprojects: "
                << resp.project_count() << "\nevents:   " << resp.last_event_index() << "\n";
    } else {
      std::cout << "data dir: " << resp.data_dir() << " (no store open)\n";
    }
    std::cout << "started:  " << Time(resp.started_at()) << "\n";
    if (resp.mode() == "readonly") {
      std::cout << "readonly: " << resp.state_reason() << " (since " << Time(resp.state_since()) << ", by "
                << resp.state_by() << ")\n";
    }
    if (resp.mode() == "standby") {
      std::cout << "active:   pid " << resp.active_pid() << " holds the data dir"
                << (resp.active_listeners().empty() ? "" : absl::StrCat(", at ", absl::StrJoin(resp.active_listeners(), ", ")))
                << "\n";
    }
    for (const auto& l : resp.listeners()) std::cout << "listen:   " << l << "\n";
    if (!resp.secrets_key().empty()) std::cout << "secrets:  " << resp.secrets_key() << "\n";
    if (!resp.backup_dir().empty()) std::cout << "backups:  " << resp.backup_dir() << "\n";
    if (resp.has_backups()) {
      const v1::BackupSchedule& b = resp.backups();
      if (b.interval_seconds() == 0) {
        std::cout << "schedule: none (--backup-interval 0)\n";
      } else {
        std::cout << "schedule: every " << absl::FormatDuration(absl::Seconds(b.interval_seconds())) << ", keep "
                  << b.keep() << "; last "
                  << (b.has_last_success() ? absl::StrCat(Time(b.last_success()), " ", b.last_path()) : "none yet")
                  << (b.has_next() ? absl::StrCat("; next ", Time(b.next())) : "") << "\n";
      }
    }
    if (resp.problems().empty()) {
      std::cout << "problems: none\n";
      return 0;
    }
    std::cout << "problems: " << resp.problems_size() << "\n";
    for (const auto& p : resp.problems()) {
      std::cout << "\n" << (p.project().empty() ? "Controller" : absl::StrCat("Project ", p.project()))
                << (p.service().empty() ? "" : absl::StrCat(", service ", p.service())) << ":";
      PrintProblem(p, std::cout);
    }
    return 0;
  }
  if (rest[0] == "backup" && rest.size() == 2) {
    // mariposad writes it, into its --backup-dir only.
    v1::BackupRequest req;
    req.set_path(rest[1]);
    v1::BackupResponse resp;
    Check(admin_->Backup(Ctx().get(), req, &resp));
    std::cout << "backed up " << resp.bytes() << " bytes to " << resp.path() << "\n";
    return 0;
  }
  throw UsageError{"expected admin status | admin state [set active|readonly --reason R] | admin backup NAME | "
                   "admin restore BACKUP [--data-dir DIR] | admin token create|list|revoke | "
                   "admin grant SUBJECT ROLE [-j P] | admin grants | admin ungrant SUBJECT [-j P] | admin rotate-key"};
}

void Cli::PrintTask(const v1::Task& t) {
  std::cout << "task:     " << t.uuid() << "\nkind:     " << t.kind() << "\nscope:    "
            << (t.services().empty() ? "whole project" : absl::StrJoin(t.services(), ",")) << "\nstate:    " << t.state()
            << "\norigin:   " << t.origin() << (t.trigger().empty() ? "" : " (" + t.trigger() + ")")
            << "\ncreated:  " << Time(t.created_at()) << "\n";
  if (!t.actor().empty()) std::cout << "by:       " << t.actor() << "\n";
  if (!t.reason().empty()) std::cout << "reason:   " << t.reason() << "\n";
  if (!t.only().empty()) std::cout << "only:     " << absl::StrJoin(t.only(), ",") << "\n";
  if (!t.wait_for().empty()) std::cout << "waits for: " << absl::StrJoin(t.wait_for(), ",") << "\n";
  auto filter = [](const char* name, const google::protobuf::RepeatedPtrField<std::string>& v) {
    if (!v.empty()) std::cout << name << absl::StrJoin(v, ",") << "\n";
  };
  filter("versions: ", t.filter_versions());
  filter("images:   ", t.filter_images());
  filter("servers:  ", t.filter_servers());
  filter("instances: ", t.filter_instances());
  if (t.canary() > 0) std::cout << "canary:   " << t.canary() << "\n";
  if (t.rolling() > 0) std::cout << "rolling:  " << t.rolling() << "\n";
  if (t.steps_planned() > 0 || t.steps_done() > 0) {
    std::cout << "progress: step " << t.steps_done() << "/" << std::max(t.steps_done(), t.steps_planned())
              << "; created " << t.created() << ", deleted " << t.deleted() << ", replaced " << t.replaced()
              << ", failed " << t.failed() << "\n";
  }
  if (!t.error().empty()) std::cout << "error:    " << t.error() << "\n";
}

int Cli::QueueCmd(Args& a) {
  auto finished = a.Value({"--finished"});
  auto reason = a.Value({"--reason"});
  auto rest = a.Positional(1, 2, "queue list|get|terminate");
  if (rest[0] == "list") {
    v1::ListTasksRequest req;
    req.set_project(NeedProject());
    int n = 20;
    if (finished && !absl::SimpleAtoi(*finished, &n)) throw UsageError{"--finished needs a number"};
    req.set_finished_limit(n);
    v1::ListTasksResponse resp;
    Check(queue_->ListTasks(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& t : resp.tasks()) {
      std::string progress = t.kind() == "freeze" ? "-" : absl::StrCat("+", t.created(), " -", t.deleted());
      if (t.replaced() > 0) absl::StrAppend(&progress, " ", t.replaced(), " replaced");
      if (t.failed() > 0) absl::StrAppend(&progress, " ", t.failed(), " failed");
      std::string why = !t.error().empty() ? t.error() : t.reason();
      rows.push_back({t.uuid(), t.kind(), t.services().empty() ? "*" : absl::StrJoin(t.services(), ","), t.state(),
                      t.origin() + (t.trigger().empty() ? "" : "/" + t.trigger()), Time(t.created_at()), progress, why});
    }
    Table({"TASK", "KIND", "SCOPE", "STATE", "ORIGIN", "CREATED", "PROGRESS", "REASON"}, rows);
    return 0;
  }
  if (rest.size() != 2) throw UsageError{"expected queue get TASK | queue terminate TASK"};
  if (rest[0] == "get") {
    v1::GetTaskRequest req;
    req.set_task(rest[1]);
    v1::GetTaskResponse resp;
    Check(queue_->GetTask(Ctx().get(), req, &resp));
    if (Structured()) Print(resp.task());
    else PrintTask(resp.task());
    return 0;
  }
  if (rest[0] == "terminate") {
    v1::TerminateTaskRequest req;
    req.set_task(rest[1]);
    req.set_reason(reason.value_or(""));
    v1::TerminateTaskResponse resp;
    Check(queue_->TerminateTask(Ctx().get(), req, &resp));
    std::cout << "task " << rest[1] << " is " << resp.task().state() << "; its scope is frozen until `mariposa thaw`\n";
    return 0;
  }
  throw UsageError{"expected queue list|get|terminate"};
}

namespace {

std::string ImageLabel(const v1::Image& i) { return absl::StrCat(i.name(), "@", i.version()); }


}  // namespace

int Cli::ImageCmd(Args& a) {
  bool source = a.Flag({"--source"});
  bool all = a.Flag({"--all"});
  auto from = a.Value({"--from"});
  auto name = a.Value({"--name"});
  auto version = a.Value({"--version"});
  auto prepare = a.Value({"--prepare"});
  std::vector<std::string> rest = a.Positional(1, 1000, "image list|get|avail|changes|import|create");
  const std::string& sub = rest[0];
  auto count = [&](size_t min, size_t max, const char* what) {
    if (rest.size() < min || rest.size() > max) throw UsageError{absl::StrCat("expected ", what)};
  };
  auto table = [](const google::protobuf::RepeatedPtrField<v1::Image>& images) {
    std::vector<std::vector<std::string>> rows;
    for (const v1::Image& i : images) {
      rows.push_back({i.uuid(), i.name(), i.version(), i.type(), i.state(), cli::HumanBytes(i.size()), i.published_at(),
                      absl::StrJoin(i.channels(), ",")});
    }
    Table({"UUID", "NAME", "VERSION", "TYPE", "STATE", "SIZE", "PUBLISHED", "CHANNELS"}, rows);
  };
  if (sub == "list") {
    count(1, 2, "image list [NAME] [--source]");
    v1::ListImagesRequest req;
    if (rest.size() > 1) req.set_name(rest[1]);
    req.set_source(source);
    v1::ListImagesResponse resp;
    Check(images_->List(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    if (source) std::cout << "image source " << resp.source() << " (channel " << resp.channel() << ")\n";
    table(resp.images());
    return 0;
  }
  if (sub == "get") {
    count(2, 2, "image get IMAGE");
    v1::GetImageRequest req;
    req.set_image(rest[1]);
    v1::GetImageResponse resp;
    Check(images_->Get(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp.image());
      return 0;
    }
    const v1::Image& i = resp.image();
    std::cout << ImageLabel(i) << " " << i.uuid() << "\n  where:     "
              << (i.where() == "source" ? "only in the image source (imported when a service needs it)" : "IMGAPI")
              << "\n  type:      " << i.type() << " (os " << i.os() << ")\n  size:      " << cli::HumanBytes(i.size())
              << "\n  published: " << i.published_at() << "\n";
    if (!i.origin().empty()) std::cout << "  origin:    " << i.origin() << "\n";
    if (i.channels_size() > 0) std::cout << "  channels:  " << absl::StrJoin(i.channels(), ", ") << "\n";
    if (!i.changes().empty()) std::cout << "  changes:\n    " << absl::StrReplaceAll(i.changes(), {{"\n", "\n    "}}) << "\n";
    return 0;
  }
  if (sub == "avail") {

    v1::AvailRequest req;
    req.set_project(project_);
    for (size_t k = 1; k < rest.size(); ++k) req.add_services(rest[k]);
    req.set_all(all);
    v1::AvailResponse resp;
    Check(images_->Avail(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::vector<std::vector<std::string>> rows;
    int errors = 0;
    for (const v1::AvailService& s : resp.services()) {
      std::string current = s.error().empty() ? ImageLabel(s.current()) : s.current().name() + " (?)";
      if (!s.error().empty()) {
        ++errors;
        std::cerr << "mariposa: " << s.project() << "/" << s.service() << ": " << s.error() << "\n";
      }
      if (s.newer_size() == 0) {
        rows.push_back({s.project(), s.service(), current, s.error().empty() ? "up to date" : "unknown", "", ""});
      }
      for (const v1::Image& n : s.newer()) {
        rows.push_back({s.project(), s.service(), current, n.version(), n.uuid(), cli::HumanBytes(n.size())});
      }
    }
    std::cout << "image source " << resp.source() << " (channel " << resp.channel() << ")\n";
    Table({"PROJECT", "SERVICE", "CURRENT", "AVAILABLE", "UUID", "SIZE"}, rows);
    return errors > 0 ? 1 : 0;
  }
  if (sub == "changes") {
    count(3, 4, "image changes NAME FROM TO (or NAME@FROM NAME@TO)");
    v1::ChangesRequest req;
    if (rest.size() == 4) {
      req.set_name(rest[1]);
      req.set_from(rest[2]);
      req.set_to(rest[3]);
    } else {
      size_t at1 = rest[1].rfind('@'), at2 = rest[2].rfind('@');
      if (at1 == std::string::npos) throw UsageError{"expected image changes NAME FROM TO (or NAME@FROM NAME@TO)"};
      req.set_name(rest[1].substr(0, at1));
      req.set_from(rest[1].substr(at1 + 1));
      req.set_to(at2 == std::string::npos ? rest[2] : rest[2].substr(at2 + 1));
    }
    v1::ChangesResponse resp;
    Check(images_->Changes(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::cout << req.name() << " " << req.from() << " -> " << req.to() << ": " << resp.images_size()
              << (resp.images_size() == 1 ? " version\n" : " versions\n");
    for (const v1::Image& i : resp.images()) {
      std::cout << "\n" << i.version() << " (" << i.uuid() << ", published " << i.published_at() << ")\n";
      std::cout << (i.changes().empty() ? "  (no change log)" : "  " + absl::StrReplaceAll(i.changes(), {{"\n", "\n  "}}))
                << "\n";
    }
    return 0;
  }
  if (sub == "import") {
    count(2, 2, "image import IMAGE");
    v1::ImportImageRequest req;
    req.set_image(rest[1]);
    v1::ImportImageResponse resp;
    Check(images_->Import(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    if (resp.already()) std::cout << ImageLabel(resp.image()) << " (" << resp.image().uuid() << ") is in IMGAPI already\n";
    else std::cout << "imported " << ImageLabel(resp.image()) << " (" << resp.image().uuid() << ", "
                   << cli::HumanBytes(resp.image().size()) << ") into IMGAPI; job " << resp.job_uuid() << "\n";
    return 0;
  }
  if (sub == "create") {
    count(1, 1, "image create --from INSTANCE --name NAME --version VERSION [--prepare FILE]");
    if (!from || !name || !version) throw UsageError{"image create needs --from INSTANCE, --name and --version"};
    v1::CreateImageRequest req;
    req.set_instance(*from);
    req.set_name(*name);
    req.set_version(*version);
    if (prepare) {
      std::ifstream f(*prepare, std::ios::binary);
      if (!f) throw Error{absl::StrCat("cannot read the prepare script ", *prepare)};
      std::stringstream text;
      text << f.rdbuf();
      req.set_prepare_script(text.str());
    }
    v1::CreateImageResponse resp;
    Check(images_->Create(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::cout << "created " << ImageLabel(resp.image()) << " (" << resp.image().uuid() << ") from " << *from
              << "; job " << resp.job_uuid() << ":\n";
    for (const std::string& step : resp.steps()) std::cout << "  " << step << "\n";
    std::cout << "use it in a manifest as image: " << ImageLabel(resp.image()) << "\n";
    return 0;
  }
  throw UsageError{absl::StrCat("unknown image subcommand \"", sub, "\": list, get, avail, changes, import or create")};
}

int Cli::PauseCmd(bool pause, Args& a) {
  auto reason = pause ? a.Value({"--reason"}) : std::nullopt;
  auto rest = a.Positional(2, 2, pause ? "pause TASK" : "resume TASK");
  v1::Task task;
  if (pause) {
    v1::PauseTaskRequest req;
    req.set_task(rest[1]);
    req.set_reason(reason.value_or(""));
    v1::PauseTaskResponse resp;
    Check(queue_->PauseTask(Ctx().get(), req, &resp));
    task = resp.task();
  } else {
    v1::ResumeTaskRequest req;
    req.set_task(rest[1]);
    v1::ResumeTaskResponse resp;
    Check(queue_->ResumeTask(Ctx().get(), req, &resp));
    task = resp.task();
  }
  if (Structured()) {
    Print(task);
    return 0;
  }
  if (pause) {
    std::cout << "rollout " << task.uuid() << " is paused (" << task.paused()
              << "): no further step starts; jobs in flight finish. `mariposa resume " << task.uuid()
              << "` continues it\n";
  } else {
    std::cout << "rollout " << task.uuid() << " continues\n";
  }
  return 0;
}

int Cli::FreezeCmd(Args& a, bool thaw) {
  auto services = a.Value({"--service", "--services"});
  auto group = a.Value({"--group"});
  auto reason = thaw ? std::nullopt : a.Value({"--reason"});
  auto only = thaw ? std::nullopt : a.Value({"--only"});
  a.Positional(1, 1, thaw ? "thaw" : "freeze");
  std::vector<std::string> svc;
  if (services) svc = absl::StrSplit(*services, ',', absl::SkipEmpty());
  if (thaw) {
    v1::ThawRequest req;
    req.set_project(NeedProject());
    for (const auto& s : svc) req.add_services(s);
    req.set_group(group.value_or(""));
    v1::ThawResponse resp;
    Check(queue_->Thaw(Ctx().get(), req, &resp));
    std::cout << "thawed " << resp.thawed_size() << (resp.thawed_size() == 1 ? " freeze" : " freezes") << "\n";
    return 0;
  }
  v1::FreezeRequest req;
  req.set_project(NeedProject());
  for (const auto& s : svc) req.add_services(s);
  req.set_group(group.value_or(""));
  req.set_reason(reason.value_or(""));
  if (only) {
    for (absl::string_view o : absl::StrSplit(*only, ',', absl::SkipEmpty())) req.add_only(std::string(o));
  }
  v1::FreezeResponse resp;
  Check(queue_->Freeze(Ctx().get(), req, &resp));
  if (Structured()) Print(resp.task());
  else std::cout << "frozen (task " << resp.task().uuid() << ")\n";
  return 0;
}

int Cli::ScaleCmd(Args& a) {
  bool dry_run = a.Flag({"--dry-run"});
  bool wait = a.Flag({"--wait"});
  bool thaw = a.Flag({"--thaw"});
  absl::Duration timeout = WaitTimeout(a.Value({"--timeout"}));
  auto rest = a.Positional(2, 1000, "scale SERVICE=N ...");
  v1::ScaleRequest req;
  req.set_thaw(thaw);
  req.set_project(NeedProject());
  for (size_t i = 1; i < rest.size(); ++i) req.add_changes(rest[i]);
  req.set_dry_run(dry_run);
  v1::ScaleResponse resp;
  Check(projects_->Scale(Ctx().get(), req, &resp));
  if (Structured()) {
    Print(resp);
    return 0;
  }
  if (resp.diff().empty()) {
    std::cout << "no changes\n";
    return 0;
  }
  PrintDiff(resp.diff(), project_);
  if (!dry_run) std::cout << "applied version " << resp.version().number() << " (" << resp.version().uuid() << ")\n";
  if (wait && !dry_run) return WaitSettled(project_, timeout);
  return 0;
}

int Cli::HealthCmd(Args& a) {
  auto agent = a.Value({"--agent"});
  a.Positional(1, 1, "health");
  if (agent) {
    auto stub = v1::HealthAgent::NewStub(grpc::CreateChannel(*agent, grpc::InsecureChannelCredentials()));
    v1::ListChecksRequest req;
    v1::ListChecksResponse resp;
    Check(stub->ListChecks(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::cout << "agent " << resp.agent_id() << ": " << resp.checks_size() << " checks\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : resp.checks()) {
      rows.push_back({c.key().instance(), c.key().check(), c.type(), c.target(), c.state(),
                      c.last_run().seconds() > 0 ? Time(c.last_run()) : "-", absl::StrCat(c.runs()),
                      c.last_failure().empty() ? "-" : c.last_failure()});
    }
    Table({"INSTANCE", "CHECK", "TYPE", "TARGET", "STATE", "LAST RUN", "RUNS", "LAST FAILURE"}, rows);
    return 0;
  }
  v1::GetHealthRequest req;
  req.set_project(NeedProject());
  v1::GetHealthResponse resp;
  Check(state_->GetHealth(Ctx().get(), req, &resp));
  if (Structured()) {
    Print(resp);
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : resp.checks()) {
    rows.push_back({c.alias().empty() ? c.instance() : c.alias(), c.check(), c.type(), c.target(), c.state(),
                    c.since().seconds() > 0 ? Time(c.since()) : "-",
                    c.last_failure().empty() ? "-" : c.last_failure(), c.agent().empty() ? "-" : c.agent()});
  }
  Table({"INSTANCE", "CHECK", "TYPE", "TARGET", "STATE", "SINCE", "LAST FAILURE", "AGENT"}, rows);
  std::cout << "\n";
  if (resp.agents().empty()) {
    std::cout << "no health agent is connected: checks are not being run (start mariposa-health or mariposad "
                 "--embedded-health)\n";
    return 0;
  }
  rows.clear();
  for (const auto& g : resp.agents()) {
    rows.push_back({g.id(), g.networks().empty() ? "all" : absl::StrJoin(g.networks(), ","), absl::StrCat(g.checks()),
                    absl::StrCat(g.checks_run()), absl::StrCat(g.checks_failed()),
                    absl::StrFormat("%.1f", g.lateness_p99_ms()), Time(g.last_seen())});
  }
  Table({"AGENT", "NETWORKS", "CHECKS", "RUN", "FAILED", "LATE P99 MS", "LAST SEEN"}, rows);
  return 0;
}

// Instances whose meta values changed since they were created (meta
// drift), by service; nothing when there are none or the state cannot be
// read (a daemon without --triton).
void Cli::PrintStaleMeta(const std::string& project) {
  v1::GetStateRequest req;
  req.set_project(project);
  v1::GetStateResponse resp;
  if (!state_->GetState(Ctx().get(), req, &resp).ok()) return;
  for (const auto& s : resp.services()) {
    std::vector<std::string> stale;
    for (const auto& i : s.instances()) {
      if (i.stale_meta()) stale.push_back(i.alias());
    }
    if (stale.empty()) continue;
    std::cout << stale.size() << (stale.size() == 1 ? " instance" : " instances") << " of " << s.name()
              << " use older meta values: " << absl::StrJoin(stale, ", ") << "\n  `mariposa -j " << resp.project()
              << " reprovision --service " << s.name()
              << "` rolls them (update.on_meta_change: rollout does it on every change)\n";
  }
}

int Cli::StatusCmd(Args& a) {
  bool verbose = a.Flag({"-v", "--verbose"});
  a.Positional(1, 1, "status");
  v1::GetStateRequest req;
  req.set_project(NeedProject());
  v1::GetStateResponse resp;
  Check(state_->GetState(Ctx().get(), req, &resp));
  if (Structured()) {
    Print(resp);
    return 0;
  }
  std::cout << "project " << resp.project() << " at version " << resp.version() << ": "
            << (resp.converged() ? "converged" : !resp.actual_known() ? "unknown (actual state cannot be read)"
                                                                      : "not converged")
            << "\n\n";
  std::vector<std::vector<std::string>> rows;
  // Counts of what runs are shown only when VMAPI could be read ("-": unknown).
  auto seen = [&](int64_t n) { return resp.actual_known() ? absl::StrCat(n) : std::string("-"); };
  for (const auto& s : resp.services()) {
    rows.push_back({s.name(), s.verdict(), absl::StrCat(s.desired()), seen(s.ready()), seen(s.running()),
                    seen(s.provisioning()), seen(s.broken()), seen(s.stopped_instances()), seen(s.updating()),
                    s.frozen() ? "yes" : "no", s.reason()});
  }
  Table({"SERVICE", "VERDICT", "DESIRED", "READY", "RUNNING", "PROVISIONING", "BROKEN", "STOPPED", "OLD SPEC",
         "FROZEN", "REASON"},
        rows);
  if (resp.leftover() > 0) {
    std::cout << "\n" << resp.leftover() << " instances of services no longer in the manifest are being removed\n";
  }
  for (const auto& p : resp.problems()) PrintProblem(p, std::cout);
  if (verbose) {
    std::vector<std::vector<std::string>> inst;
    for (const auto& s : resp.services()) {
      for (const auto& i : s.instances()) {
        inst.push_back({s.name(), i.alias(), i.uuid(), i.state(), i.health(), i.current_spec() ? "current" : i.stale_meta() ? "stale meta" : "old",
                        absl::StrCat(i.version()), Time(i.created_at())});
      }
    }
    bool any_instances = !inst.empty();
    std::vector<std::vector<std::string>> servers;
    for (const auto& s : resp.services()) {
      for (const auto& sv : s.servers()) {
        servers.push_back({s.name(), sv.hostname(), sv.server(), sv.version().empty() ? "-" : sv.version(),
                           sv.image_uuid().empty() ? "-" : sv.image_uuid().substr(0, 8), sv.state(), sv.error()});
      }
    }
    if (any_instances || servers.empty()) {
      std::cout << "\n";
      Table({"SERVICE", "ALIAS", "UUID", "STATE", "HEALTH", "SPEC", "VERSION", "CREATED"}, inst);
    }
    if (!servers.empty()) {
      std::cout << "\n";
      Table({"SERVICE", "HOSTNAME", "SERVER", "AGENT VERSION", "IMAGE", "STATE", "LAST ERROR"}, servers);
    }
  }
  return 0;
}

// `core check`: CNAPI's server.agents against the goal of the project's
// agent services; every drift on a line; exit 1 when there is one.
int Cli::CoreCmd(Args& a) {
  auto rest = a.Positional(1, 1, "core check");
  if (rest[0] != "check") throw UsageError{absl::StrCat("unknown core subcommand \"", rest[0], "\": check")};
  v1::GetStateRequest req;
  req.set_project(NeedProject());
  v1::GetStateResponse resp;
  Check(state_->GetState(Ctx().get(), req, &resp));
  struct Drift {
    std::string service, hostname, server, kind, detail;
  };
  std::vector<Drift> drifts;
  int agents = 0, servers = 0;
  for (const auto& s : resp.services()) {
    if (!s.agent()) continue;
    ++agents;
    std::string want = s.reason();
    for (const auto& sv : s.servers()) {
      ++servers;
      const std::string& st = sv.state();
      if (st == "excluded") {
        continue;  // left alone on purpose
      } else if (st == "not-selected") {
        if (!sv.version().empty()) {
          drifts.push_back({s.name(), sv.hostname(), sv.server(), "installed by hand",
                            absl::StrCat(sv.version(), " runs on a server servers.select does not cover")});
        }
      } else if (st != "current" && st != "installing") {
        drifts.push_back({s.name(), sv.hostname(), sv.server(), sv.version().empty() ? "missing" : "wrong version",
                          absl::StrCat(sv.version().empty() ? "not installed" : sv.version(), " (", st,
                                       sv.error().empty() ? "" : ": " + sv.error(), ")")});
      }
    }
  }
  if (Structured()) {
    std::vector<Record> records;
    for (const Drift& d : drifts) {
      records.push_back({{"service", d.service},
                         {"hostname", d.hostname},
                         {"server", d.server},
                         {"drift", d.kind},
                         {"detail", d.detail}});
    }
    PrintRecords(records);
    return drifts.empty() ? 0 : 1;
  }
  if (agents == 0) {
    std::cout << "project " << resp.project() << " has no agent services (compute_type: agent)\n";
    return 0;
  }
  if (drifts.empty()) {
    std::cout << "no drift: " << agents << " agent services on " << servers << " server entries match the goal\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const Drift& d : drifts) rows.push_back({d.service, d.hostname, d.server, d.kind, d.detail});
  Table({"SERVICE", "HOSTNAME", "SERVER", "DRIFT", "DETAIL"}, rows);
  std::cout << "\n" << drifts.size() << " drifts; `mariposa reprovision --service SERVICE` installs the goal's "
            << "version again; an agent installed by hand is removed with CNAPI's uninstall-agents\n";
  return 1;
}

// reprovision, start and stop: a task on a scope; reprovision also takes
// filters and a canary.
int Cli::TaskCmd(const std::string& kind, Args& a) {
  auto services = a.Value({"--service", "--services"});
  auto group = a.Value({"--group"});
  bool thaw = a.Flag({"--thaw"});
  bool wait = a.Flag({"--wait"});
  absl::Duration timeout = WaitTimeout(a.Value({"--timeout"}));
  v1::AddTaskRequest req;
  if (kind == "reprovision") {
    auto list = [&](const char* flag, google::protobuf::RepeatedPtrField<std::string>* out) {
      if (auto v = a.Value({flag})) {
        for (absl::string_view s : absl::StrSplit(*v, ',', absl::SkipEmpty())) out->Add(std::string(s));
      }
    };
    list("--version", req.mutable_versions());
    list("--image", req.mutable_images());
    list("--server", req.mutable_servers());
    list("--instance", req.mutable_instances());
    if (auto canary = a.Value({"--canary"})) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(*canary, &n) || n < 0) {
        throw UsageError{absl::StrCat("--canary \"", *canary, "\" is not a count")};
      }
      req.set_canary(n);
    }
    if (auto rolling = a.Value({"--rolling"})) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(*rolling, &n) || n < 1) {
        throw UsageError{absl::StrCat("--rolling \"", *rolling, "\" must be a count of at least 1")};
      }
      req.set_rolling(n);
    }
  }
  a.Positional(1, 1, kind);
  req.set_project(NeedProject());
  req.set_kind(kind);
  if (services) {
    for (absl::string_view s : absl::StrSplit(*services, ',', absl::SkipEmpty())) req.add_services(std::string(s));
  }
  req.set_group(group.value_or(""));
  req.set_thaw(thaw);
  v1::AddTaskResponse resp;
  Check(queue_->AddTask(Ctx().get(), req, &resp));
  if (Structured()) Print(resp.task());
  else std::cout << "queued " << kind << " task " << resp.task().uuid() << "\n";
  if (wait) return WaitSettled(req.project(), timeout);
  return 0;
}

int Cli::Run(const std::string& cmd, Args args) {
  if (cmd == "project" || cmd == "projects") return Project(args);
  if (cmd == "apply") return Apply(args, false);
  if (cmd == "diff") return Apply(args, true);
  if (cmd == "versions") return Versions(args);
  if (cmd == "history") return HistoryCmd(args);
  if (cmd == "version") return Version(args);
  if (cmd == "rollback") return Rollback(args);
  if (cmd == "meta") return Meta(args);
  if (cmd == "events") return Events(args);
  if (cmd == "admin") return AdminCmd(args);
  if (cmd == "auth") return AuthCmd(args);
  if (cmd == "queue") return QueueCmd(args);
  if (cmd == "freeze") return FreezeCmd(args, false);
  if (cmd == "pause" || cmd == "resume") return PauseCmd(cmd == "pause", args);
  if (cmd == "image" || cmd == "images") return ImageCmd(args);
  if (cmd == "core") return CoreCmd(args);
  if (cmd == "thaw") return FreezeCmd(args, true);
  if (cmd == "reprovision" || cmd == "start" || cmd == "stop") return TaskCmd(cmd, args);
  if (cmd == "health") return HealthCmd(args);
  if (cmd == "status") return StatusCmd(args);
  if (cmd == "scale") return ScaleCmd(args);
  throw UsageError{UnknownCommand(cmd)};
}

int Main(int argc, char** argv, const Clock* clock) {
  cli::Settings flags;
  std::string context;
  std::string output = "table";
  std::vector<std::string> rest;
  bool help = false;
  std::string cmd;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto take = [&](std::initializer_list<const char*> names, std::string* out) {
        for (const char* n : names) {
          if (a == n) {
            if (i + 1 >= argc) throw UsageError{absl::StrCat(n, " needs a value")};
            *out = argv[++i];
            return true;
          }
          std::string prefix = absl::StrCat(n, "=");
          if (absl::StartsWith(a, prefix)) {
            *out = a.substr(prefix.size());
            return true;
          }
          if (AttachedShort(n, a)) {
            *out = a.substr(2);
            return true;
          }
        }
        return false;
      };
      if (take({"-j", "--project"}, &flags.project) || take({"--addr"}, &flags.addr) ||
          take({"-o", "--output"}, &output) || take({"--context"}, &context) || take({"--ca"}, &flags.ca) ||
          take({"--cert"}, &flags.cert) || take({"--key"}, &flags.key) || take({"--token-file"}, &flags.token_file)) {
        continue;
      }
      if (a == "--token" || absl::StartsWith(a, "--token=")) {
        throw UsageError{"a token is not taken from the command line (ps and shell history show it): use "
                         "--token-file FILE, $MARIPOSA_TOKEN, or a context's token-file"};
      }
      if (a == "-h" || a == "--help") {
        help = true;
        continue;
      }
      if (cmd.empty() && !a.empty() && a[0] != '-') {
        cmd = a;
        continue;
      }
      rest.push_back(a);
    }
    if (help) {
      auto it = CommandHelp().find(cmd);
      std::cout << (it != CommandHelp().end() ? it->second : kUsage);
      return 0;
    }
    if (cmd.empty()) throw UsageError{"no command given"};
    if (output != "table" && output != "json" && output != "yaml") {
      throw UsageError{absl::StrCat("-o must be table, json or yaml, not \"", output, "\"")};
    }
    if (cmd == "help") {
      std::cout << kUsage;
      return 0;
    }
    if (cmd == "completion") {
      std::string shell = rest.size() == 1 ? rest[0] : "";
      std::string script = cli::CompletionScript(shell, Commands());
      if (script.empty()) throw UsageError{"expected completion bash|zsh"};
      std::cout << script;
      return 0;
    }
    if (!cmd.empty() && !Commands().count(cmd) && cmd != "projects" && cmd != "images") {
      throw UsageError{UnknownCommand(cmd)};  // before any connection
    }
    if (cmd == "config") return ConfigCmd(rest, flags);
    auto env = Environment();
    auto cfg = cli::LoadConfig(cli::ConfigPath(env));
    if (!cfg.ok()) throw Error{std::string(cfg.status().message())};
    auto settings = cli::Resolve(flags, context, env, *cfg);
    if (!settings.ok()) throw Error{std::string(settings.status().message())};
    auth::ClientCredentials creds{settings->ca, settings->cert, settings->key, settings->token, ""};
    if (!settings->token_file.empty()) {
      auto t = auth::ReadSmallFile(settings->token_file, "token file");
      if (!t.ok()) throw Error{std::string(t.status().message())};
      creds.token = std::string(absl::StripAsciiWhitespace(*t));
    }
    rest.insert(rest.begin(), cmd);
    // The first positional after the command is its subcommand for project,
    // version, meta and admin; Args sees it as rest[0].
    std::vector<std::string> sub(rest.begin() + 1, rest.end());
    bool has_sub = cmd == "project" || cmd == "projects" || cmd == "version" || cmd == "meta" || cmd == "admin" ||
                   cmd == "queue" || cmd == "image" || cmd == "images" || cmd == "core" || cmd == "auth";
    if (has_sub) {
      // The subcommand is the first word that is not an option.
      auto word = std::find_if(sub.begin(), sub.end(), [](const std::string& w) { return !w.empty() && w[0] != '-'; });
      const std::string base = cmd == "projects" ? "project" : cmd == "images" ? "image" : cmd;
      const std::set<std::string>& subs = Commands().at(base);
      if (word != sub.end() && !subs.count(*word)) {
        std::string near = cli::DidYouMean(*word, subs);
        throw UsageError{absl::StrCat("unknown subcommand \"", *word, "\" of ", base,
                                      near.empty() ? absl::StrCat(" (", absl::StrJoin(subs, ", "), ")")
                                                   : absl::StrCat("; did you mean \"", near, "\"?"))};
      }
    }
    Cli cli(settings->addr, settings->project, output, clock, creds);
    if (has_sub) return cli.Run(cmd, Args(sub));
    return cli.Run(cmd, Args(rest));
  } catch (const UsageError& e) {
    std::cerr << "mariposa: " << e.msg << "\n";
    auto it = CommandHelp().find(cmd);
    std::cerr << (it != CommandHelp().end() ? it->second : "run `mariposa --help` for usage\n");
    return 2;
  } catch (const Error& e) {
    std::cerr << "mariposa: " << e.msg << "\n";
    return cmd == "diff" ? 2 : 1;  // diff's 1 means "changes" (docs/cli.md)
  }
}

}  // namespace
}  // namespace mariposa

int main(int argc, char** argv) { return mariposa::Main(argc, argv, mariposa::RealClock::Get()); }
