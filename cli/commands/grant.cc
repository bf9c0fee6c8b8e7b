// mariposa admin grant|grants|ungrant: roles for users and certificates.
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

Result Grant(Context& c, const Parsed& p) {
  v1::SetGrantRequest req;
  req.mutable_grant()->set_subject(p.args()[0]);
  req.mutable_grant()->set_role(p.args()[1]);
  req.mutable_grant()->set_project(c.project());
  v1::SetGrantResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().auth->SetGrant(c.d().Ctx().get(), req, &resp)));
  c.out() << resp.grant().subject() << " is " << resp.grant().role() << " on " << Scope(resp.grant().project()) << "\n";
  return 0;
}

Result Ungrant(Context& c, const Parsed& p) {
  v1::DeleteGrantRequest req;
  req.set_subject(p.args()[0]);
  req.set_project(c.project());
  v1::DeleteGrantResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().auth->DeleteGrant(c.d().Ctx().get(), req, &resp)));
  c.out() << req.subject() << " no longer has a grant on " << Scope(c.project()) << "\n";
  return 0;
}

Result Grants(Context& c, const Parsed&) {
  v1::ListGrantsResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().auth->ListGrants(c.d().Ctx().get(), {}, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  Rows rows;
  for (const auto& g : resp.grants()) {
    rows.push_back({g.subject(), g.role(), g.project().empty() ? "*" : g.project(), Time(g.created_at()), g.created_by()});
  }
  c.Table({"SUBJECT", "ROLE", "PROJECT", "CREATED", "CREATED BY"}, rows);
  return 0;
}

}  // namespace

void AddGrant(cli::Registry& r) {
  const std::string g = "Access (docs/security.md)";
  r.Add({.path = "admin grant",
         .args = "SUBJECT ROLE",
         .summary = "a role on -j PROJECT, or on every project",
         .help = "SUBJECT: user:NAME (a local user, on the Unix socket or loopback) or cert:CN (a TLS client\n"
                 "certificate).",
         .group = g,
         .min_args = 2,
         .max_args = 2,
         .project = ProjectUse::kOptional,
         .run = Grant});
  r.Add({.path = "admin grants", .summary = "every grant", .group = g, .run = Grants});
  r.Add({.path = "admin ungrant", .args = "SUBJECT", .summary = "remove a grant (on -j PROJECT, or every project's)",
         .group = g, .min_args = 1, .max_args = 1, .project = ProjectUse::kOptional, .run = Ungrant});
}

}  // namespace mariposa::cmd
