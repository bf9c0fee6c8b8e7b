// Where each Triton API is (issue 34): in a data center each of VMAPI,
// CNAPI, IMGAPI, PAPI, NAPI and the workflow API (WFAPI, where IMGAPI's
// jobs are followed) is its own service at its own address, as SAPI's
// metadata names them (VMAPI_SERVICE, …). `--triton URL` stays the shortcut
// for a simulator that serves them all at one address. Resolution and its
// checks are pure: the daemon gathers the flags and the metadata file.
#ifndef MARIPOSA_CONVERGENCE_TRITON_ENDPOINTS_H_
#define MARIPOSA_CONVERGENCE_TRITON_ENDPOINTS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace mariposa::triton {

// The APIs, in the order flags and messages name them.
inline const std::vector<std::string>& ApiNames() {
  static const std::vector<std::string> kNames = {"vmapi", "cnapi", "imgapi", "papi", "napi", "wfapi"};
  return kNames;
}

// APIs mariposad uses when it has their address and does without otherwise:
// FWAPI (a manifest's firewall rules) and VOLAPI (its volumes); without
// them those are not applied and status says so. mahi, Triton's auth cache:
// without it HTTP Signature callers (Triton accounts) are refused.
inline const std::vector<std::string>& OptionalApiNames() {
  static const std::vector<std::string> kNames = {"fwapi", "volapi", "mahi"};
  return kNames;
}

struct ApiEndpoint {
  std::string url;  // http(s)://host[:port], no trailing slash
  absl::Duration timeout = absl::Seconds(10);  // one request, whole
  int connections = 64;                        // requests in flight at once
};

// What the operator gave: each value as written ("" = not given).
struct EndpointFlags {
  std::string triton;                         // --triton URL: every API at one address
  std::map<std::string, std::string> url;     // --vmapi URL, … by API name
  std::string timeout, connections;           // --api-timeout, --api-connections: every API
  std::map<std::string, std::string> api_timeout, api_connections;  // --vmapi-timeout, --vmapi-connections, …
  std::string sapi_metadata_file;             // --sapi-metadata FILE (named in errors)
};

// Every API's endpoint, by name ("" urls only when nothing was given at
// all: goal state only; an optional API's url is "" when nothing names it). SAPI metadata (`VMAPI_SERVICE: vmapi.dc.example.com`,
// …, `WORKFLOW_SERVICE` for wfapi) gives http://HOST for an API no flag
// names; a flag wins over metadata, and --triton fills what is left.
// wfapi defaults to IMGAPI's address (a simulator follows jobs there).
// INVALID_ARGUMENT naming the flag (or metadata key) for a bad URL, a
// duration that is not positive, a connection limit outside 1..4096, or some
// APIs given while others are missing (with the ones missing and the fix).
absl::StatusOr<std::map<std::string, ApiEndpoint>> ResolveEndpoints(const EndpointFlags& flags,
                                                                    const std::map<std::string, std::string>& sapi);

// The SAPI metadata keys of a JSON object (`{"VMAPI_SERVICE": "…", …}`, the
// shape of a core zone's /opt/smartdc/etc metadata); INVALID_ARGUMENT naming
// `path` when the text is not a JSON object of strings.
absl::StatusOr<std::map<std::string, std::string>> ParseSapiMetadata(const std::string& text, const std::string& path);

}  // namespace mariposa::triton

#endif  // MARIPOSA_CONVERGENCE_TRITON_ENDPOINTS_H_
