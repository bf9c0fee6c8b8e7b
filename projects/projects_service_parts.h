// Shared by the Projects service's files (projects_service.cc,
// projects_copy.cc): the records as protos, and who may change a manifest's
// project. Not for other libraries.
#ifndef MARIPOSA_PROJECTS_PROJECTS_SERVICE_PARTS_H_
#define MARIPOSA_PROJECTS_PROJECTS_SERVICE_PARTS_H_

#include <grpcpp/server_context.h>

#include "absl/status/status.h"
#include "mariposa/v1/projects.pb.h"
#include "projects/manifest.h"
#include "projects/projects_service.h"
#include "projects/store_records.h"

namespace mariposa {

// What one ApplyText did (or, on a dry run, would do).
struct ProjectsService::Outcome {
  CommitResult commit;
  v1::Diff diff;
  std::string base_version;
  int64_t base_number = 0;
  std::vector<std::string> warnings;
  // Services whose instance spec the new version changed, that roll out on
  // change (update.on_change: rollout) and had instances to roll.
  std::vector<std::string> rollout;
  int64_t canary = 0;  // update.canary of the rollout (the largest of its services)
  std::string project_uuid;
  std::string project;  // the name the manifest targets
  // The manifest lists other data centers: nothing was stored; Apply starts
  // a rollout across them (projects_datacenters.cc) with `compiled`.
  bool needs_rollout = false;
  std::shared_ptr<const CompiledManifest> compiled;
};

}  // namespace mariposa

namespace mariposa::projects_parts {

void ToProto(const ProjectRecord& p, v1::Project* out);
void ToProto(const VersionRecord& v, v1::Version* out);
// The caller may change this manifest's project (or, for a dry run, read
// its plan); changing Triton core services (compute_type core or agent)
// needs the admin role ("#core" rules).
absl::Status AdmitManifest(grpc::ServerContext* ctx, const Manifest& m, bool dry_run);

}  // namespace mariposa::projects_parts

#endif  // MARIPOSA_PROJECTS_PROJECTS_SERVICE_PARTS_H_
