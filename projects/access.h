// Who may call what. mariposad installs its auth::Authorizer once, before
// serving (docs/security.md); auth/rpc_guard.h asks it before every handler,
// by the rule each RPC carries in its .proto, and handlers ask again only
// for what they learn from the request's body (a manifest's core services).
// Without one — services driven in-process by unit tests — every call is
// allowed and authored by its peer address.
#ifndef MARIPOSA_PROJECTS_ACCESS_H_
#define MARIPOSA_PROJECTS_ACCESS_H_

#include <string>

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

namespace mariposa {

class Access {
 public:
  virtual ~Access() = default;
  // OK, or UNAUTHENTICATED / PERMISSION_DENIED for the method gRPC routed
  // `ctx` to (and `variant`, e.g. "start" for Queue/AddTask#start) on
  // `project` (name or uuid; "" for a call about no single project).
  virtual grpc::Status Authorize(grpc::ServerContext* ctx, const std::string& project,
                                 const std::string& variant) = 0;
  // The authenticated caller and peer, as events record them.
  virtual std::string Author(const grpc::ServerContext* ctx) = 0;
  // Whether the caller may see `project_name` (what list calls return).
  virtual bool CanSee(const grpc::ServerContext* ctx, const std::string& project_name) = 0;
  // The authenticated caller alone: "root", "token:ci", "cert:agent-1".
  virtual std::string CallerName(const grpc::ServerContext* ctx) = 0;
  // A Triton caller's account uuid (HTTP Signature): a project it creates is
  // that account's. "" for every other caller.
  virtual std::string CallerAccount(const grpc::ServerContext*) { return ""; }
  // The uuid of the project of task `task` (a uuid or a unique prefix); ""
  // when there is no such task (a call about it then needs a grant on every
  // project, and NOT_FOUND follows).
  virtual std::string ProjectOfTask(const std::string& task) = 0;
};

// Installs `a` for the life of the process (nullptr: none).
void SetAccess(Access* a);

grpc::Status Authorize(grpc::ServerContext* ctx, const std::string& project, const std::string& variant = "");
// The request's author: the authenticated identity and its peer.
std::string AuthorOf(const grpc::ServerContext* ctx);
bool CanSee(const grpc::ServerContext* ctx, const std::string& project_name);
// "" without an installed Access.
std::string CallerName(const grpc::ServerContext* ctx);
// "" without an installed Access.
std::string CallerAccount(const grpc::ServerContext* ctx);
// "" without an installed Access.
std::string ProjectOfTask(const std::string& task);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_ACCESS_H_
