// Triton's auth cache (mahi): who a Triton account or sub-user is, its SSH
// keys and its RBAC roles, as CloudAPI asks for them (`GET
// /accounts?login=…`, `GET /users?account=…&login=…&fallback=false`; mahi's
// docs/index.md). The answer's parse and the mapping of Triton roles to
// Mariposa's are pure; daemon/mahi_client.h does the HTTP and keeps answers
// a few seconds. docs/security.md, "Triton accounts (HTTP Signature)".
#ifndef MARIPOSA_AUTH_MAHI_H_
#define MARIPOSA_AUTH_MAHI_H_

#include <map>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "auth/rbac.h"

namespace mariposa::auth {

struct TritonPrincipal {
  std::string account_uuid, account_login;
  std::string user_uuid, user_login;  // "" for the account itself
  // The caller's keys (the sub-user's own when a sub-user): fingerprint as
  // mahi names it -> OpenSSH public key.
  std::map<std::string, std::string> keys;
  // A sub-user's active roles (mahi's defaultRoles), by name.
  std::vector<std::string> roles;
  bool disabled = false;  // the account or the sub-user is disabled
};

// mahi's answer to GetAccount (`user` "") or GetUser. INVALID_ARGUMENT when
// it is not mahi's shape (no account uuid and login; a sub-user asked for
// and none answered).
absl::StatusOr<TritonPrincipal> ParseMahiAnswer(absl::string_view json, absl::string_view user);

// What a Triton caller may do in Mariposa, on the projects of its account
// (`account_projects`: names). The account itself: operator on each. A
// sub-user: by its active Triton roles, named for Mariposa's —
// "mariposa-viewer", "mariposa-deployer", "mariposa-operator" on every
// project of the account, "mariposa-ROLE.PROJECT" on that one project if
// the account owns it. Other roles give nothing; admin and health-agent are
// never given to a Triton caller.
std::vector<Grant> TritonGrants(const TritonPrincipal& who, const std::vector<std::string>& account_projects);

// Where the Authorizer looks Triton callers up: mahi over HTTP in
// mariposad (daemon/mahi_client.h), a table in tests.
class TritonDirectory {
 public:
  virtual ~TritonDirectory() = default;
  // NOT_FOUND: no such account or sub-user; UNAVAILABLE: the directory did
  // not answer (the caller can be neither accepted nor refused).
  virtual absl::StatusOr<TritonPrincipal> Lookup(const std::string& account, const std::string& user) = 0;
};

}  // namespace mariposa::auth

#endif  // MARIPOSA_AUTH_MAHI_H_
