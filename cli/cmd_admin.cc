// mariposa admin (status, state, backup, restore, tokens, grants, keys) and auth.
#include "cli/cli.h"

namespace mariposa::cmd {

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
      PrintRecords({{{"store", r->store},
                     {"moved_aside", r->moved_aside},
                     {"schema", absl::StrCat(r->schema)},
                     {"projects", absl::StrCat(r->projects)},
                     {"last_event", absl::StrCat(r->last_event)}}});
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

}  // namespace mariposa::cmd
