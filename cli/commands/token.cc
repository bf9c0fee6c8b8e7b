// mariposa admin token create|list|revoke: bearer tokens.
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

// "30d", "12h", "90m", "1h30m" as seconds.
absl::StatusOr<int64_t> ParseExpiry(const std::string& text) {
  absl::Duration d;
  int64_t days = 0;
  if (!text.empty() && text.back() == 'd' && absl::SimpleAtoi(text.substr(0, text.size() - 1), &days) && days > 0) {
    return days * 86400;
  }
  if (!absl::ParseDuration(text, &d) || d < absl::Minutes(1)) {
    return Usage(absl::StrCat("--expires \"", text, "\" is not a duration of at least a minute (30d, 12h, 90m)"));
  }
  return absl::ToInt64Seconds(d);
}

Result Create(Context& c, const Parsed& p) {
  auto name = p.Value("--name");
  auto role = p.Value("--role");
  bool all = p.Has("--all-projects");
  if (!name || !role) return Usage("admin token create needs --name NAME and --role ROLE");
  if (all == !c.project().empty()) return Usage("say which projects the token covers: -j PROJECT, or --all-projects");
  v1::CreateTokenRequest req;
  req.set_name(*name);
  req.set_role(*role);
  req.set_project(all ? "" : c.project());
  if (auto expires = p.Value("--expires")) {
    ASSIGN_OR_RETURN(int64_t seconds, ParseExpiry(*expires));
    req.set_expires_in_seconds(seconds);
  }
  v1::CreateTokenResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().auth->CreateToken(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  c.err() << "token " << resp.token().name() << " (" << resp.token().id() << "): " << resp.token().role() << " on "
          << Scope(resp.token().project()) << ", "
          << (resp.token().has_expires_at() ? "expires " + Time(resp.token().expires_at()) : "never expires")
          << "\nIt is shown this once; mariposad keeps only its hash. Give it to the client as\n"
             "MARIPOSA_TOKEN, a --token-file, or a context's token-file (`mariposa config set-context`).\n";
  c.out() << resp.secret() << "\n";
  return 0;
}

Result ListTokens(Context& c, const Parsed&) {
  v1::ListTokensResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().auth->ListTokens(c.d().Ctx().get(), {}, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  Rows rows;
  for (const auto& t : resp.tokens()) {
    rows.push_back({t.id(), t.name(), t.role(), t.project().empty() ? "*" : t.project(), Time(t.created_at()),
                    t.has_expires_at() ? Time(t.expires_at()) : "never", t.revoked() ? "revoked" : "live",
                    t.created_by()});
  }
  c.Table({"ID", "NAME", "ROLE", "PROJECT", "CREATED", "EXPIRES", "STATE", "CREATED BY"}, rows);
  return 0;
}

Result Revoke(Context& c, const Parsed& p) {
  v1::RevokeTokenRequest req;
  req.set_token(p.args()[0]);
  v1::RevokeTokenResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().auth->RevokeToken(c.d().Ctx().get(), req, &resp)));
  c.out() << "revoked token " << resp.token().name() << " (" << resp.token().id()
          << "); calls with it are refused from now on\n";
  return 0;
}

}  // namespace

void AddToken(cli::Registry& r) {
  const std::string g = "Access (docs/security.md)";
  r.Add({.path = "admin token create",
         .summary = "a bearer token for a role, printed once (mariposad keeps its sha256)",
         .group = g,
         .flags = {{{"--name"}, "N", "what it is for"},
                   {{"--role"}, "R", "viewer, deployer, operator, admin or health-agent"},
                   {{"--all-projects"}, "", "every project (else -j PROJECT)"},
                   {{"--expires"}, "D", "30d, 12h, 90m (default: never)"}},
         .project = ProjectUse::kOptional,
         .run = Create});
  r.Add({.path = "admin token list", .summary = "every token: role, project, expiry, state", .group = g,
         .run = ListTokens});
  r.Add({.path = "admin token revoke", .args = "ID|NAME", .summary = "refuse a token from now on", .group = g,
         .min_args = 1, .max_args = 1, .run = Revoke});
}

}  // namespace mariposa::cmd
