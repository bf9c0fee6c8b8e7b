// mariposa version get|tag.
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

Result Get(Context& c, const Parsed& p) {
  bool manifest = p.Has("--manifest");
  v1::GetVersionRequest req;
  req.set_project(c.project());
  req.set_version(p.args().empty() ? "current" : p.args()[0]);
  req.set_include_manifest(manifest || c.Structured());
  v1::GetVersionResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->GetVersion(c.d().Ctx().get(), req, &resp)));
  if (manifest) {
    c.out() << resp.version().manifest();  // byte for byte
    return 0;
  }
  if (c.PrintIfStructured(resp)) return 0;
  const auto& v = resp.version();
  std::ostream& out = c.out();
  out << "version: " << v.number() << "\nuuid:    " << v.uuid() << "\ncreated: " << Time(v.created_at())
      << "\nauthor:  " << v.author() << "\norigin:  " << v.origin()
      << (v.origin() == "rollback" ? absl::StrCat(" (content of version ", v.rolled_back_to(), ")") : "")
      << "\nhash:    " << v.hash() << "\ntags:    " << absl::StrJoin(v.tags(), ", ") << "\n";
  if (!v.message().empty()) out << "message: " << v.message() << "\n";
  for (const auto& w : v.warnings()) out << "warning: " << w << "\n";
  out << "\n";
  Rows rows;
  for (const auto& s : resp.services()) {
    rows.push_back({s.name(), s.compute_type(), s.image(), absl::StrCat(s.count()), s.spec_hash().substr(0, 12)});
  }
  c.Table({"SERVICE", "TYPE", "IMAGE", "COUNT", "SPEC"}, rows);
  return 0;
}

Result Tag(Context& c, const Parsed& p) {
  v1::TagVersionRequest req;
  req.set_project(c.project());
  req.set_version(p.args()[0]);
  req.set_tag(p.args()[1]);
  v1::TagVersionResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->TagVersion(c.d().Ctx().get(), req, &resp)));
  c.out() << "tagged version " << resp.version().number() << " as " << req.tag() << "\n";
  return 0;
}

}  // namespace

void AddVersion(cli::Registry& r) {
  const std::string g = "Manifests and versions";
  r.Add({.path = "version get", .args = "[VERSION]", .summary = "one version (default current) and its services",
         .group = g, .flags = {{{"--manifest"}, "", "print the manifest exactly as it was sent"}}, .max_args = 1,
         .project = ProjectUse::kRequired, .run = Get});
  r.Add({.path = "version tag", .args = "VERSION TAG", .summary = "name a version (rollback TAG)", .group = g,
         .min_args = 2, .max_args = 2, .project = ProjectUse::kRequired, .run = Tag});
}

}  // namespace mariposa::cmd
