// mariposa versions.
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

Result Versions(Context& c, const Parsed&) {
  v1::ListVersionsRequest req;
  req.set_project(c.project());
  v1::ListVersionsResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->ListVersions(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  Rows rows;
  for (const auto& v : resp.versions()) {
    std::string origin = v.origin() == "rollback" ? absl::StrCat("rollback to ", v.rolled_back_to()) : v.origin();
    rows.push_back({absl::StrCat(v.number()), v.uuid(), Time(v.created_at()), v.author(), origin,
                    absl::StrCat(v.service_count()), absl::StrJoin(v.tags(), ","), v.hash().substr(0, 12)});
  }
  c.Table({"VERSION", "UUID", "CREATED", "AUTHOR", "ORIGIN", "SERVICES", "TAGS", "HASH"}, rows);
  return 0;
}

}  // namespace

void AddVersions(cli::Registry& r) {
  r.Add({.path = "versions", .summary = "every version: number, uuid, time, author, origin, tags",
         .group = "Manifests and versions", .project = ProjectUse::kRequired, .run = Versions});
}

}  // namespace mariposa::cmd
