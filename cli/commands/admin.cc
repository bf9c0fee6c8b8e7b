// mariposa admin status|state|backup|restore|rotate-key: the controller.
#include "cli/command.h"
#include <sys/stat.h>

#include <optional>

#include "auth/sealer.h"
#include "projects/restore.h"
#include "projects/sql_store.h"

namespace mariposa::cmd {
namespace {

const std::string kGroup = "Log and controller";

Result Status(Context& c, const Parsed&) {
  v1::StatusResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().admin->Status(c.d().Ctx().get(), {}, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  std::ostream& out = c.out();
  out << "mode:     " << resp.mode() << "\nversion:  " << resp.version() << "\npid:      " << resp.pid() << "\n";
  if (!resp.datacenter().empty()) out << "datacenter: " << resp.datacenter() << "\n";
  if (resp.mode() == "active" || resp.mode() == "readonly") {  // the others have no store open
    out << "store:    " << resp.store_path() << " (schema " << resp.schema_version() << ")\nprojects: "
        << resp.project_count() << "\nevents:   " << resp.last_event_index() << "\n";
  } else {
    out << "data dir: " << resp.data_dir() << " (no store open)\n";
  }
  out << "started:  " << Time(resp.started_at()) << "\n";
  if (resp.mode() == "readonly") {
    out << "readonly: " << resp.state_reason() << " (since " << Time(resp.state_since()) << ", by " << resp.state_by()
        << ")\n";
  }
  if (resp.mode() == "standby") {
    out << "active:   pid " << resp.active_pid() << " holds the data dir"
        << (resp.active_listeners().empty() ? "" : absl::StrCat(", at ", absl::StrJoin(resp.active_listeners(), ", ")))
        << "\n";
  }
  for (const auto& l : resp.listeners()) out << "listen:   " << l << "\n";
  if (!resp.secrets_key().empty()) out << "secrets:  " << resp.secrets_key() << "\n";
  if (!resp.backup_dir().empty()) out << "backups:  " << resp.backup_dir() << "\n";
  if (resp.has_backups()) {
    const v1::BackupSchedule& b = resp.backups();
    if (b.interval_seconds() == 0) {
      out << "schedule: none (--backup-interval 0)\n";
    } else {
      out << "schedule: every " << absl::FormatDuration(absl::Seconds(b.interval_seconds())) << ", keep " << b.keep()
          << "; last " << (b.has_last_success() ? absl::StrCat(Time(b.last_success()), " ", b.last_path()) : "none yet")
          << (b.has_next() ? absl::StrCat("; next ", Time(b.next())) : "") << "\n";
    }
  }
  if (resp.problems().empty()) {
    out << "problems: none\n";
    return 0;
  }
  out << "problems: " << resp.problems_size() << "\n";
  for (const auto& p : resp.problems()) {
    out << "\n" << (p.project().empty() ? "Controller" : absl::StrCat("Project ", p.project()))
        << (p.service().empty() ? "" : absl::StrCat(", service ", p.service())) << ":";
    PrintProblem(p, out);
  }
  return 0;
}

Result State(Context& c, const Parsed&) {
  v1::StatusResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().admin->Status(c.d().Ctx().get(), {}, &resp)));
  if (c.Structured()) {
    c.PrintRecords({{{"mode", resp.mode()},
                     {"reason", resp.state_reason()},
                     {"by", resp.state_by()},
                     {"since", resp.has_state_since() ? Time(resp.state_since()) : ""}}});
    return 0;
  }
  c.out() << resp.mode();
  if (resp.mode() == "readonly") {
    c.out() << " since " << Time(resp.state_since()) << " by " << resp.state_by() << ": " << resp.state_reason();
  }
  if (resp.mode() == "standby") c.out() << " (the active one is pid " << resp.active_pid() << ")";
  c.out() << "\n";
  return 0;
}

Result SetState(Context& c, const Parsed& p) {
  v1::SetStateRequest req;
  req.set_mode(p.args()[0]);
  req.set_reason(p.Value("--reason").value_or(""));
  v1::SetStateResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().admin->SetState(c.d().Ctx().get(), req, &resp)));
  c.out() << "mariposad is " << resp.mode() << " (was " << resp.previous() << ")\n";
  if (resp.mode() == "readonly") {
    c.out() << "reads work; changes are refused and syncs pause until `mariposa admin state set active`\n";
  }
  return 0;
}

Result Backup(Context& c, const Parsed& p) {
  // mariposad writes it, into its --backup-dir only.
  v1::BackupRequest req;
  req.set_path(p.args()[0]);
  v1::BackupResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().admin->Backup(c.d().Ctx().get(), req, &resp)));
  c.out() << "backed up " << resp.bytes() << " bytes to " << resp.path() << "\n";
  return 0;
}

// Local: the store is a file of a stopped mariposad, not an RPC.
Result Restore(Context& c, const Parsed& p) {
  const std::string& backup = p.args()[0];
  const std::string data_dir = p.Value("--data-dir").value_or("/var/lib/mariposa");
  // The key mariposad will open the secrets with; never created here.
  RestoreSecrets secrets{nullptr, p.Value("--secrets-key").value_or(data_dir + "/secrets.key")};
  std::unique_ptr<auth::Sealer> sealer;
  if (struct stat st; stat(secrets.key_path.c_str(), &st) == 0) {
    auto opened = auth::Sealer::Open(secrets.key_path);
    if (!opened.ok()) {
      return Err(absl::StrCat("restore refused (nothing was changed): cannot load the secrets key ", secrets.key_path,
                              ": ", opened.status().message()));
    }
    sealer = *std::move(opened);
    secrets.codec = sealer.get();
  }
  std::optional<std::string> into = p.Value("--store");
  auto r = into ? RestoreStoreInto(backup, *into, secrets, c.clock) : RestoreStore(backup, data_dir, secrets, c.clock);
  if (!r.ok()) return Err(absl::StrCat("restore refused (nothing was changed): ", r.status().message()));
  if (c.Structured()) {
    c.PrintRecords({{{"store", r->store},
                     {"moved_aside", r->moved_aside},
                     {"schema", absl::StrCat(r->schema)},
                     {"projects", absl::StrCat(r->projects)},
                     {"last_event", absl::StrCat(r->last_event)},
                     {"secrets", absl::StrCat(r->secrets)}}});
    return 0;
  }
  c.out() << "restored " << backup << " to " << r->store << ": schema " << r->schema << ", " << r->projects
          << " projects, events up to " << r->last_event << ", " << r->secrets << " secrets (they open with "
          << secrets.key_path << ")\n";
  if (!r->moved_aside.empty()) c.out() << "the store it replaced is kept as " << r->moved_aside << "\n";
  c.out() << (into ? "point every node's --store at it and start them; they converge the data center to the "
                     "restored goal state.\n"
                   : "start mariposad now; it converges the data center to the restored goal state.\n");
  return 0;
}

Result Nodes(Context& c, const Parsed&) {
  v1::NodesResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().admin->Nodes(c.d().Ctx().get(), {}, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  std::ostream& out = c.out();
  out << "store: " << resp.store() << "\n";
  if (!resp.shared()) {
    out << "one node: this mariposad runs every project (a SQLite store is one node's; several nodes share a "
           "PostgreSQL store, docs/operations.md)\n";
    return 0;
  }
  out << "lease TTL " << resp.lease_ttl_seconds() << "s; as read by " << resp.self() << " at "
      << (resp.has_as_of() ? Time(resp.as_of()) : "never (no lease round has succeeded yet)") << "\n";
  if (!resp.error().empty()) {
    out << "Error: this node's last lease round failed: " << resp.error()
        << "\nImpact: it stops acting on its projects before their leases run out; the other nodes take them "
           "over\n";
  }
  out << "\n";
  Rows nodes;
  for (const auto& n : resp.nodes()) {
    nodes.push_back({n.name() + (n.self() ? " (this one)" : ""), n.address().empty() ? "-" : n.address(),
                     n.live() ? "live" : "gone", Time(n.seen_at()), absl::StrCat(n.projects())});
  }
  c.Table({"NODE", "ADDRESS", "STATE", "LAST HEARTBEAT", "PROJECTS"}, nodes);
  out << "\n";
  Rows projects;
  for (const auto& p : resp.projects()) {
    projects.push_back({p.project(), p.holder().empty() ? "-" : p.holder(), p.state(),
                        p.epoch() == 0 ? "-" : absl::StrCat(p.epoch()),
                        p.has_expires_at() && p.state() != "free" ? Time(p.expires_at()) : "-"});
  }
  c.Table({"PROJECT", "RUN BY", "LEASE", "EPOCH", "EXPIRES"}, projects);
  return 0;
}

// The data centers: this one and each peer as its mariposad last saw it.
// Exit 1 when a peer does not answer.
Result DataCenters(Context& c, const Parsed&) {
  v1::DataCentersResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().admin->DataCenters(c.d().Ctx().get(), {}, &resp)));
  if (c.PrintIfStructured(resp)) {
    for (const auto& p : resp.peers()) {
      if (!p.reachable()) return 1;
    }
    return 0;
  }
  std::ostream& out = c.out();
  if (resp.self().empty()) {
    out << "one data center: this mariposad has no --datacenter (docs/operations.md, \"Several data centers\")\n";
    return 0;
  }
  out << "this data center: " << resp.self() << "; each peer asked every " << resp.interval_seconds()
      << "s, as of " << Time(resp.as_of()) << "\n\n";
  Rows rows;
  rows.push_back({resp.self() + " (this one)", c.d().addr(), "-", "-", "-", "-"});
  int down = 0;
  for (const auto& p : resp.peers()) {
    std::string state = p.reachable() ? "reachable" : p.asked() ? "unreachable" : "not asked yet";
    down += !p.reachable();
    rows.push_back({p.name(), p.address(), state, p.has_last_ok() ? Time(p.last_ok()) : "never",
                    p.reachable() ? absl::StrCat(p.rtt_micros() / 1000.0, " ms") : "-",
                    p.version().empty() ? "-" : p.version()});
  }
  c.Table({"DATACENTER", "ADDRESS", "STATE", "LAST ANSWER", "RTT", "VERSION"}, rows);
  for (const auto& p : resp.peers()) {
    if (p.reachable()) continue;
    out << "\nError:  data center " << p.name() << " does not answer" << (p.failures() > 1 ? absl::StrCat(" (", p.failures(), " questions in a row)") : "")
        << "\nReason: " << p.error()
        << "\nImpact: " << (p.has_last_ok() ? "what is known of it is as of its last answer above"
                                              : "nothing is known of it since this mariposad started")
        << "; this data center goes on converging its own projects\n";
  }
  return down > 0 ? 1 : 0;
}

// Local: both stores are opened here, not through mariposad.
Result StoreCopy(Context& c, const Parsed& p) {
  std::string from = p.Value("--from").value_or(""), to = p.Value("--to").value_or("");
  if (from.empty() || to.empty()) return Err("store-copy needs --from STORE and --to STORE");
  auto source = SqlProjectStore::OpenSpec(from, c.clock);
  if (!source.ok()) return Err(absl::StrCat("cannot open the source store: ", source.status().message()));
  auto target = SqlProjectStore::OpenSpec(to, c.clock);
  if (!target.ok()) return Err(absl::StrCat("cannot open the target store: ", target.status().message()));
  auto counts = SqlProjectStore::CopyStore(source->get(), target->get());
  if (!counts.ok()) return Err(absl::StrCat("store-copy refused: ", counts.status().message()));
  if (c.Structured()) {
    std::vector<Record> rows;
    for (const auto& [table, n] : *counts) rows.push_back({{"table", table}, {"rows", absl::StrCat(n)}});
    c.PrintRecords(rows);
    return 0;
  }
  c.out() << "copied " << (*source)->where() << " to " << (*target)->where() << ":\n";
  for (const auto& [table, n] : *counts) c.out() << "  " << table << ": " << n << "\n";
  c.out() << "secrets stay sealed: the nodes using the copy need the same --secrets-key file\n";
  return 0;
}

Result RotateKey(Context& c, const Parsed&) {
  v1::RotateKeyResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().auth->RotateKey(c.d().Ctx().get(), {}, &resp)));
  c.out() << "secrets key rotated: " << resp.old_key_id() << " -> " << resp.key_id() << "; " << resp.secrets()
          << " secrets sealed again. The old key is kept as a .retired file beside the key file for\n"
             "backups taken before now; delete it once those backups are gone.\n";
  return 0;
}

}  // namespace

void AddAdmin(cli::Registry& r) {
  r.Add({.path = "admin status",
         .summary = "the controller: mode, store, listeners, backups, every problem",
         .help = "Every problem the controller knows is printed as Error / Reason / Fix / Impact. A --standby\n"
                 "mariposad answers as standby (naming the active one), one that failed to start with\n"
                 "--on-init-failure serve as initfail.",
         .group = kGroup,
         .run = Status});
  r.Add({.path = "admin state", .summary = "active, readonly (why, by whom, since when), standby or initfail",
         .group = kGroup, .run = State});
  r.Add({.path = "admin state set",
         .args = "active|readonly",
         .summary = "readonly: reads work, every change is refused, syncs pause",
         .help = "readonly: every change is refused (UNAVAILABLE, with the reason), syncs and replacements pause;\n"
                 "reads, diff and backups work. Kept across restarts. `admin state set active` ends it.",
         .group = kGroup,
         .flags = {{{"--reason"}, "TEXT", "why (required for readonly): shown to everyone refused"}},
         .min_args = 1,
         .max_args = 1,
         .run = SetState});
  r.Add({.path = "admin backup",
         .args = "NAME",
         .summary = "a consistent copy of the store, written by mariposad into its --backup-dir (0600)",
         .help = "Secrets in it stay sealed (the key file is not in it). Scheduled backups: mariposad\n"
                 "--backup-interval and --backup-keep (docs/operations.md).",
         .group = kGroup,
         .min_args = 1,
         .max_args = 1,
         .run = Backup});
  r.Add({.path = "admin restore",
         .args = "BACKUP",
         .summary = "put a backup in place of a stopped mariposad's store",
         .help = "Run where mariposad's data dir is, with mariposad stopped (refused while it runs). The backup is\n"
                 "copied, opened and verified; only then is the current store moved aside as\n"
                 "mariposa.db.before-restore-STAMP and the copy put in its place. Every secret meta value of the\n"
                 "backup must open with the secrets key mariposad will use (a key rotated out since is kept as\n"
                 "KEYFILE.KEYID.retired and still opens them); without a key file a backup with secrets is refused.\n"
                 "With --store postgresql://… the backup (of either kind of store) is verified the same way and\n"
                 "copied into that database, which must be new and empty; then point the nodes at it.",
         .group = kGroup,
         .flags = {{{"--data-dir"}, "DIR", "mariposad's --data-dir (/var/lib/mariposa)"},
                   {{"--store"}, "URI", "restore into this new, empty PostgreSQL database instead (every node's --store)"},
                   {{"--secrets-key"}, "FILE", "mariposad's --secrets-key (DIR/secrets.key): every secret must open with it"}},
         .min_args = 1,
         .max_args = 1,
         .daemon = false,
         .run = Restore});
  r.Add({.path = "nodes",
         .summary = "the mariposad nodes sharing the store, and which node runs each project",
         .help = "With a PostgreSQL store several nodes share the projects: each project is run by the node\n"
                 "holding its lease (docs/operations.md, \"Several nodes\"). Any node answers.",
         .group = kGroup,
         .run = Nodes});
  r.Add({.path = "datacenters",
         .summary = "this data center and its peers: address, reachability, last answer",
         .help = "mariposad --datacenter NAME --peers NAME=HOST:PORT,… asks each peer data center's mariposad\n"
                 "for its status every --peer-interval; this shows what it saw (docs/operations.md, \"Several\n"
                 "data centers\"). Exit 1 when a peer does not answer.",
         .group = kGroup,
         .run = DataCenters});
  r.Add({.path = "admin store-copy",
         .summary = "copy a whole store into a new, empty one: SQLite to PostgreSQL and back",
         .help = "STORE is sqlite:PATH or postgresql://USER@HOST:PORT/DB. Every version, meta key, secret (still\n"
                 "sealed), event (with its index), token, grant, task and job is copied in one transaction; a\n"
                 "target that holds anything is refused and nothing is written. Run it with mariposad stopped\n"
                 "(or on a backup file: `admin backup` writes SQLite files for both kinds of store).",
         .group = kGroup,
         .flags = {{{"--from"}, "STORE", "the store to copy"}, {{"--to"}, "STORE", "a new, empty store"}},
         .daemon = false,
         .run = StoreCopy});
  r.Add({.path = "admin rotate-key",
         .summary = "seal every secret again with a new key",
         .help = "The old key is kept as a .retired file beside the key file.",
         .group = "Access (docs/security.md)",
         .run = RotateKey});
}

}  // namespace mariposa::cmd
