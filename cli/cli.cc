// mariposa: usage text, the command table, shared helpers and Main.
#include "cli/cli.h"

namespace mariposa::cmd {

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
  --request-timeout D  give up on each call to mariposad after D (default 35s; mariposad
                       stops any request after 30s of work). `--timeout` is --wait's
  --no-color           no color (also when $NO_COLOR is set, or stdout is not a terminal)
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
      out += &r == &header ? r[i] : cli::Paint(r[i], cli::ToneOf(r[i]));
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
  std::ostringstream out;
  for (const auto& c : d.services()) {
    switch (c.action()) {
      case v1::ServiceChange::CREATE:
        if (c.has_image_plan()) {
          out << cli::ImagePlanText(c);
          break;
        }
        out << "create service \"" << c.service() << "\": " << Plural(c.to_count(), "instance") << " of "
                  << c.to_image() << "\n";
        break;
      case v1::ServiceChange::DELETE:
        out << "delete service \"" << c.service() << "\" (" << Plural(c.from_count(), "instance") << ")\n";
        break;
      case v1::ServiceChange::UPDATE: {
        bool only_count = c.fields_size() == 1 && c.fields(0).path() == "count";
        if (c.from_count() != c.to_count()) {
          int64_t delta = c.to_count() - c.from_count();
          out << "scale \"" << c.service() << "\" " << c.from_count() << " -> " << c.to_count() << " ("
                    << (delta > 0 ? "+" : "") << delta << ")\n";
        }
        if (only_count) break;
        // With an image plan its header names the service; agents have no
        // count and are updated by their rollout.
        bool agent = c.has_image_plan() && c.image_plan().agent();
        if (c.has_image_plan()) out << cli::ImagePlanText(c);
        else out << "update \"" << c.service() << "\" (" << Plural(c.to_count(), "instance") << "):\n";
        for (const auto& f : c.fields()) {
          if (f.path() == "count") continue;
          if (f.from().empty()) out << "    + " << f.path() << ": " << f.to() << "\n";
          else if (f.to().empty()) out << "    - " << f.path() << ": " << f.from() << "\n";
          else out << "    ~ " << f.path() << ": " << f.from() << " -> " << f.to() << "\n";
        }
        if (c.spec_changed() && !agent) {
          out << "    " << Plural(c.instances_replaced(), "instance")
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
  out << cli::DownloadsText(d);
  for (const auto& f : d.project_fields()) {
    if (f.from().empty()) out << "+ " << f.path() << ": " << f.to() << "\n";
    else if (f.to().empty()) out << "- " << f.path() << ": " << f.from() << "\n";
    else out << "~ " << f.path() << ": " << f.from() << " -> " << f.to() << "\n";
  }
  // Painted line by line on a terminal: + green, - red, ~ yellow.
  std::string text = out.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.empty()) return;
  for (absl::string_view l : absl::StrSplit(text, '\n')) std::cout << cli::PaintPlanLine(std::string(l)) << "\n";
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

// Follows the project's verdicts until every service is converged; stops
// with an error as soon as one is paused or failed (waiting cannot fix
// that), printing what changes.
// A problem as RFD 40's `imgapiadm status` states it.
void PrintProblem(const v1::Problem& p, std::ostream& out) {
  out << "\nError:  " << p.error() << "\nReason: " << p.reason() << "\nFix:    " << p.fix()
      << "\nImpact: " << p.impact() << "\n";
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

// Flattens a YAML map to dotted keys.
void Flatten(const YAML::Node& n, const std::string& prefix, std::map<std::string, std::string>* out) {
  for (const auto& kv : n) {
    std::string key = prefix.empty() ? kv.first.Scalar() : absl::StrCat(prefix, ".", kv.first.Scalar());
    if (kv.second.IsMap()) Flatten(kv.second, key, out);
    else if (kv.second.IsScalar() || kv.second.IsNull()) (*out)[key] = kv.second.IsNull() ? "" : kv.second.Scalar();
    else throw Error{absl::StrCat("meta import: ", key, " is a list; values must be strings or maps")};
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
  std::string request_timeout;
  bool no_color = false;
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
          take({"--cert"}, &flags.cert) || take({"--key"}, &flags.key) || take({"--token-file"}, &flags.token_file) ||
          take({"--request-timeout"}, &request_timeout)) {
        continue;
      }
      if (a == "--no-color") {
        no_color = true;
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
    cli::SetColor(cli::ColorWanted(no_color, std::getenv("NO_COLOR"), isatty(STDOUT_FILENO)));
    absl::Duration timeout = absl::Seconds(35);
    if (!request_timeout.empty() &&
        (!absl::ParseDuration(request_timeout, &timeout) || timeout <= absl::ZeroDuration())) {
      throw UsageError{absl::StrCat("--request-timeout \"", request_timeout, "\" is not a positive duration (e.g. 10s)")};
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
    cli.set_request_timeout(timeout);
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

}  // namespace mariposa::cmd
