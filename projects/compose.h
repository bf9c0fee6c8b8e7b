// A Mariposa manifest from a docker-compose.yml (`mariposa import compose`,
// issue 53, point 3). What Compose says that a manifest can say is
// translated; everything else is listed with its line and why, never
// dropped silently. Pure: the env_file contents are read by the caller and
// passed in. Fuzzed by fuzz/compose_fuzz.cc.
//
//   services.S.image               -> services.S.image (a docker reference)
//   command (string or list)       -> command
//   environment, env_file          -> environment (env_file first, environment over it)
//   ports ("8080:80", "80/tcp", {target}) -> ports: the container's port
//                                     (each instance has its own address on Triton)
//   labels                         -> tags
//   deploy.replicas / scale        -> count
//   deploy.resources.limits        -> resources.memory, resources.cpu
//   restart, deploy.restart_policy -> restart
//   healthcheck that curls or wgets http://localhost:PORT/PATH -> an http check
//   named volumes (NAME:/path[:ro]) -> volumes, and the project's volumes
//   networks with an ipam subnet   -> fabric networks (with --vlan)
#ifndef MARIPOSA_PROJECTS_COMPOSE_H_
#define MARIPOSA_PROJECTS_COMPOSE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace mariposa {

struct ComposeOptions {
  std::string project;  // the manifest's project name (required)
  int vlan = 0;         // the fabric VLAN id for Compose's networks; 0: networks are not translated
  // env_file name (as written in the file) -> its contents.
  std::map<std::string, std::string> env_files;
};

struct ComposeNote {
  int line = 0;  // 1-based, in the Compose file
  std::string path;  // "services.web.build"
  std::string why;   // what was not translated, and what to do
};

struct ComposeImport {
  std::string manifest;            // YAML
  std::vector<ComposeNote> notes;  // every key not translated, in file order
  int services = 0;                // services written
};

// INVALID_ARGUMENT (located) when the text is not YAML, has no `services`
// map, or the project name is not one. A service that cannot be run (no
// image) is left out and noted.
absl::StatusOr<ComposeImport> ImportCompose(absl::string_view text, const ComposeOptions& options);

// The env_file names the Compose file refers to, for the caller to read.
std::vector<std::string> ComposeEnvFiles(absl::string_view text);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_COMPOSE_H_
