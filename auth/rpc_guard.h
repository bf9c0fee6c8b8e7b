// The one check in front of every RPC mariposad serves. Each RPC carries its
// access rule in its .proto (option (access), proto/mariposa/v1/access.proto):
// the least role, whether it is about every project, which request field names
// its project or task, and the variants its fields select ("dry-run").
// GuardEveryMethod puts a handler in front of each method of a service that,
// before the service's own handler runs, checks the request's text
// (projects/request_guard.h) and asks the installed Access
// (projects/access.h) whether the caller may make the call; a refused call
// is answered with the refusal and never reaches the handler, so a handler
// cannot forget its check. Handlers ask again only for what the request's body
// decides (a manifest with core services: "Projects/Apply#core").
#ifndef MARIPOSA_AUTH_RPC_GUARD_H_
#define MARIPOSA_AUTH_RPC_GUARD_H_

#include "absl/status/status.h"

namespace grpc {
class Service;
}

namespace mariposa::auth {

// Call before ServerBuilder::RegisterService. FAILED_PRECONDITION naming the
// first method without a usable rule (none, a role nobody has, a field the
// request does not have) and changing nothing: mariposad refuses to start.
absl::Status GuardEveryMethod(grpc::Service* service);

}  // namespace mariposa::auth

#endif  // MARIPOSA_AUTH_RPC_GUARD_H_
