// mariposa auth whoami|can-i|permissions.
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

Result WhoAmI(Context& c, const Parsed&) {
  v1::WhoAmIResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().auth->WhoAmI(c.d().Ctx().get(), {}, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  std::ostream& out = c.out();
  out << "name:      " << resp.name() << "\nmethod:    " << resp.method() << "\ntransport: " << resp.transport()
      << "\npeer:      " << resp.peer() << "\nroles:     ";
  if (resp.grants().empty()) out << "none";
  for (int i = 0; i < resp.grants_size(); ++i) {
    out << (i ? ", " : "") << resp.grants(i).role() << " on " << Scope(resp.grants(i).project());
  }
  out << "\n";
  return 0;
}

Result CanI(Context& c, const Parsed& p) {
  v1::CanIRequest req;
  req.set_action(p.args()[0]);
  req.set_project(c.project());
  v1::CanIResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().auth->CanI(c.d().Ctx().get(), req, &resp)));
  if (c.Structured()) {
    c.Print(resp);
  } else {
    c.out() << (resp.allowed() ? "yes" : "no") << " (" << resp.method() << " needs " << resp.permission()
            << (c.project().empty() ? "" : " on project " + c.project()) << ")";
    if (!resp.allowed()) c.out() << ": " << resp.reason();
    c.out() << "\n";
  }
  return resp.allowed() ? 0 : 1;
}

Result Permissions(Context& c, const Parsed&) {
  v1::PermissionsResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().auth->Permissions(c.d().Ctx().get(), {}, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  Rows rows;
  for (const auto& r : resp.rules()) rows.push_back({r.method(), r.permission(), r.global() ? "every project" : "per project"});
  c.Table({"RPC", "LEAST ROLE", "GRANT NEEDED ON"}, rows);
  return 0;
}

}  // namespace

void AddAuth(cli::Registry& r) {
  const std::string g = "Access (docs/security.md)";
  r.Add({.path = "auth whoami", .summary = "who mariposad says you are, and your roles", .group = g, .run = WhoAmI});
  r.Add({.path = "auth can-i",
         .args = "ACTION",
         .summary = "whether you may (apply, freeze, …); exit 0 yes, 1 no",
         .help = "ACTION is a verb (apply, scale, freeze, thaw, start, stop, delete, backup, token, …) or an RPC\n"
                 "(Projects/Apply).",
         .group = g,
         .min_args = 1,
         .max_args = 1,
         .project = ProjectUse::kOptional,
         .run = CanI});
  r.Add({.path = "auth permissions", .summary = "the least role every RPC needs", .group = g, .run = Permissions});
}

}  // namespace mariposa::cmd
