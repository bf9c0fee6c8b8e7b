// Authentication and authorization at the API edge (docs/security.md).
//
// Who is calling, in this order:
//   1. a bearer token ("authorization: Bearer mpt_…" metadata): the token's
//      name, role and project; an unknown, revoked or expired token is
//      refused (UNAUTHENTICATED), never downgraded to another identity;
//   2. a verified TLS client certificate: "cert:CN", with the grants of
//      that subject;
//   2b. an HTTP Signature ("authorization: Signature keyId=…", Triton's
//      CloudAPI scheme): the Triton account or sub-user whose SSH key signed
//      it, looked up in Triton's auth cache (mahi); its grants are on the
//      projects its account owns (auth/mahi.h, TritonGrants);
//   3. a local connection (Unix socket: SO_PEERCRED; loopback TCP: the uid
//      owning the client's socket): root and mariposad's own user are admin
//      on every project, other users "user:NAME" have their grants;
//   4. otherwise anonymous, with no grants.
// A call the HTTP gateway (gateway/gateway.h) forwards carries the gateway's
// secret and what the gateway learned of its HTTP caller (the Bearer token,
// the verified client certificate's CN, the loopback uid, the address); it
// is identified by the same steps as a gRPC caller. Without the secret
// those headers are refused, never believed.
// What they may do: auth/rbac.h's table, by the method gRPC routed the call
// to (recorded by this class's interceptor). Every refusal is an event
// (auth.denied) naming the identity, the peer and the method.
#ifndef MARIPOSA_AUTH_AUTHORIZER_H_
#define MARIPOSA_AUTH_AUTHORIZER_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <functional>
#include <string>
#include <vector>

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_interceptor.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "auth/http_signature.h"
#include "auth/mahi.h"
#include "auth/rbac.h"
#include "common/clock.h"
#include "projects/access.h"
#include "projects/store.h"

namespace mariposa::auth {

struct Identity {
  std::string name;       // "root", "user:alice", "token:ci", "cert:agent-1", "anonymous"
  std::string method;     // unix | loopback | token | certificate | none
  std::string peer;       // where the call came from
  std::string transport;  // unix socket | loopback tcp | tls | insecure tcp
  std::vector<Grant> grants;
  std::string refused;    // why the credential presented was refused ("" = none was, or it is good)
  std::string unavailable;  // why the credential could not be checked now (Triton's auth cache down)
  std::string account;    // a Triton caller's account uuid (projects it creates are that account's)
  // How events name the caller: "token:ci (127.0.0.1:41234)".
  std::string Author() const;
};

// The other end of a connection a local listener accepted.
struct LocalPeer {
  int64_t uid = -1;  // -1: unknown
  int64_t pid = -1;
  std::string transport;  // "unix socket" | "loopback tcp"
  std::string address;    // the client's address
};

// Metadata the HTTP gateway sets on the calls it forwards.
inline constexpr char kGatewayToken[] = "x-mariposa-gateway";
inline constexpr char kGatewayPeer[] = "x-mariposa-http-peer";            // "ADDRESS:PORT"
inline constexpr char kGatewayTransport[] = "x-mariposa-http-transport";  // "loopback http" | "https" | "http"
inline constexpr char kGatewayUid[] = "x-mariposa-http-uid";              // the loopback caller's uid
inline constexpr char kGatewayCert[] = "x-mariposa-http-cert";            // the verified client certificate's CN
// An HTTP Signature's signing string the gateway built from its request
// (auth/http_signature.h), or why it could not.
inline constexpr char kGatewaySigning[] = "x-mariposa-http-signing-string-bin";
inline constexpr char kGatewaySigningError[] = "x-mariposa-http-signing-error-bin";
// SHA-256 of the request's method, target and body: a write sent again with
// the same signature (a replay) is told from another request signed in the
// same second.
inline constexpr char kGatewayRequestDigest[] = "x-mariposa-http-request-digest";

// Tokens: "mpt_" + 40 hex digits. Only Sha256Hex(token) is stored.
std::string NewTokenSecret();

class Authorizer : public Access {
 public:
  struct Options {
    ProjectStore* store = nullptr;
    const Clock* clock = nullptr;
    int64_t daemon_uid = 0;
    // A token that only this process knows (the embedded health agent's):
    // identity "mariposad", role health-agent. Empty: none.
    std::string internal_token;
    // The HTTP gateway's secret (kGateway* metadata). Empty: none.
    std::string gateway_token;
    // Asked after the caller is allowed: OK, or why the controller takes no
    // call of this kind now (UNAVAILABLE while readonly, for writes).
    std::function<grpc::Status(const MethodRule&)> gate;
    // Triton's auth cache, for HTTP Signature callers; nullptr: such
    // callers are refused (mariposad has no --mahi).
    TritonDirectory* mahi = nullptr;
  };
  explicit Authorizer(Options o);

  // Called by a listener for each connection before gRPC reads from it.
  void AddConnection(int fd, LocalPeer peer);
  // For ServerBuilder::experimental().SetInterceptorCreators.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewInterceptorFactory();

  // The caller of the call `ctx` is serving (computed once per call).
  Identity Identify(const grpc::ServerContext* ctx);
  // OK, or UNAUTHENTICATED (a bad credential) / PERMISSION_DENIED (the
  // identity lacks the role) with a message that says what would allow it;
  // refusals are written to the event log. `project` is a project name or
  // uuid, "" for a call about no single project. `variant` selects a rule
  // like "Queue/AddTask#start".
  grpc::Status Authorize(grpc::ServerContext* ctx, const std::string& project, const std::string& variant) override;
  // As Authorize, for an explicit method (CanI): no event, no call needed.
  bool Allows(const Identity& who, const std::string& method, const std::string& project, std::string* why);
  // The author recorded for the call's changes.
  std::string Author(const grpc::ServerContext* ctx) override;
  std::string CallerName(const grpc::ServerContext* ctx) override { return Identify(ctx).name; }
  std::string CallerAccount(const grpc::ServerContext* ctx) override { return Identify(ctx).account; }
  std::string ProjectOfTask(const std::string& task) override;
  // Whether the caller may see `project_name` (list filters).
  bool CanSee(const grpc::ServerContext* ctx, const std::string& project_name) override;

  // Used by the interceptor.
  void BeginCall(const grpc::ServerContextBase* ctx, const char* method);
  void EndCall(const grpc::ServerContextBase* ctx);

 private:
  struct Call {
    std::string method;  // "Projects/Apply"
    bool identified = false;
    Identity who;
  };
  // What a caller presents, from its gRPC connection or the gateway.
  struct Presented {
    std::optional<LocalPeer> local;
    bool tls = false;
    std::string cert_cn;  // a verified client certificate's
    std::optional<std::string> authorization;
    std::string refused;  // the gateway's headers without its secret
    // From the gateway: an HTTP Signature's signing string, or why it could
    // not be built.
    bool gateway = false;
    std::string signing_string, signing_error;
    std::string request_digest;  // kGatewayRequestDigest
  };
  Identity Resolve(const grpc::ServerContext* ctx);
  Presented FromGateway(const std::multimap<grpc::string_ref, grpc::string_ref>& md, Identity* who);
  std::vector<Grant> GrantsOf(const std::string& subject);
  // Who signed an HTTP Signature request (refused/unavailable set when not).
  void FromSignature(const grpc::ServerContext* ctx, const std::string& authorization, const Presented& in,
                     Identity* who);
  // Whether a Triton caller may create project `project` (not there yet)
  // in its own account: what a deployer may, on a name nobody holds.
  bool CreatesInOwnAccount(const Identity& who, const MethodRule& rule, const std::string& project);
  std::string ProjectName(const std::string& ref);
  void RecordDenied(const Identity& who, const std::string& method, const std::string& project,
                    const std::string& why);

  Options o_;
  absl::Mutex mu_;
  std::map<int, LocalPeer> connections_ ABSL_GUARDED_BY(mu_);
  std::map<const grpc::ServerContextBase*, Call> calls_ ABSL_GUARDED_BY(mu_);
  // One auth.denied event per identity and method per minute; the rest are
  // counted into the next one.
  std::map<std::string, std::pair<absl::Time, int>> denied_ ABSL_GUARDED_BY(mu_);
  // Signatures accepted within the clock-skew window (replays are refused).
  ReplayGuard replays_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mariposa::auth

#endif  // MARIPOSA_AUTH_AUTHORIZER_H_
