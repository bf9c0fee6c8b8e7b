#include "auth/authorizer.h"

#include <pwd.h>

#include <algorithm>
#include <optional>

#include <grpcpp/security/auth_context.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "auth/sealer.h"
#include "common/ids.h"
#include "common/log.h"

namespace mariposa::auth {
namespace {

std::string UserName(int64_t uid) {
  struct passwd pw, *found = nullptr;
  char buf[4096];
  if (getpwuid_r(static_cast<uid_t>(uid), &pw, buf, sizeof(buf), &found) == 0 && found != nullptr) {
    return found->pw_name;
  }
  return absl::StrCat("uid", uid);
}

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

class Interceptor : public grpc::experimental::Interceptor {
 public:
  Interceptor(Authorizer* a, grpc::experimental::ServerRpcInfo* info) : a_(a), ctx_(info->server_context()) {
    a_->BeginCall(ctx_, info->method());
  }
  ~Interceptor() override { a_->EndCall(ctx_); }
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override { methods->Proceed(); }

 private:
  Authorizer* a_;
  const grpc::ServerContextBase* ctx_;
};

class Factory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit Factory(Authorizer* a) : a_(a) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new Interceptor(a_, info);
  }

 private:
  Authorizer* a_;
};

}  // namespace

std::string Identity::Author() const { return peer.empty() ? name : absl::StrCat(name, " (", peer, ")"); }

std::string NewTokenSecret() { return absl::StrCat("mpt_", RandomHex(20)); }

Authorizer::Authorizer(Options o) : o_(std::move(o)) {}

void Authorizer::AddConnection(int fd, LocalPeer peer) {
  absl::MutexLock l(&mu_);
  connections_[fd] = std::move(peer);
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> Authorizer::NewInterceptorFactory() {
  return std::make_unique<Factory>(this);
}

void Authorizer::BeginCall(const grpc::ServerContextBase* ctx, const char* method) {
  absl::MutexLock l(&mu_);
  calls_[ctx] = Call{ShortMethod(method ? method : ""), false, {}};
}

void Authorizer::EndCall(const grpc::ServerContextBase* ctx) {
  absl::MutexLock l(&mu_);
  calls_.erase(ctx);
}

std::vector<Grant> Authorizer::GrantsOf(const std::string& subject) {
  std::vector<Grant> out;
  auto grants = o_.store->ListGrants();
  if (!grants.ok()) {
    LogError("cannot read grants; the caller gets none", {{"subject", subject}, {"error", grants.status().ToString()}});
    return out;
  }
  for (const GrantRecord& g : *grants) {
    if (g.subject != subject) continue;
    if (auto r = ParseRole(g.role)) out.push_back(Grant{*r, g.project});
  }
  return out;
}

namespace {

std::string Md(const std::multimap<grpc::string_ref, grpc::string_ref>& md, const char* key) {
  auto it = md.find(key);
  return it == md.end() ? "" : std::string(it->second.data(), it->second.size());
}

}  // namespace

Authorizer::Presented Authorizer::FromGateway(const std::multimap<grpc::string_ref, grpc::string_ref>& md,
                                              Identity* who) {
  Presented in;
  if (o_.gateway_token.empty() || !ConstantTimeEqual(Md(md, kGatewayToken), o_.gateway_token)) {
    in.refused = "the call carries the HTTP gateway's headers without its secret";
    return in;
  }
  in.gateway = true;
  std::string peer = Md(md, kGatewayPeer);
  who->transport = Md(md, kGatewayTransport);
  who->peer = peer;
  in.tls = who->transport == "https";
  in.cert_cn = Md(md, kGatewayCert);
  int64_t uid = -1;
  if (absl::SimpleAtoi(Md(md, kGatewayUid), &uid) && uid >= 0) {
    in.local = LocalPeer{uid, -1, who->transport, peer};
    who->peer = absl::StrCat(peer, " uid ", uid, " (http)");
  } else {
    who->peer = absl::StrCat(peer, " (", who->transport, ")");
  }
  if (md.count("authorization")) in.authorization = Md(md, "authorization");
  in.signing_string = Md(md, kGatewaySigning);
  in.signing_error = Md(md, kGatewaySigningError);
  in.request_digest = Md(md, kGatewayRequestDigest);
  return in;
}

void Authorizer::FromSignature(const grpc::ServerContext* ctx, const std::string& authorization, const Presented& in,
                               Identity* who) {
  who->method = "signature";
  auto params = ParseSignatureAuthorization(authorization);
  if (!params.ok()) {
    who->refused = std::string(params.status().message());
    return;
  }
  auto key_id = ParseKeyId(params->key_id);
  if (!key_id.ok()) {
    who->refused = std::string(key_id.status().message());
    return;
  }
  who->name = key_id->user.empty() ? absl::StrCat("triton:", key_id->account)
                                   : absl::StrCat("triton:", key_id->account, "/", key_id->user);
  std::string method;
  {
    absl::MutexLock l(&mu_);
    auto it = calls_.find(ctx);
    if (it != calls_.end()) method = it->second.method;
  }
  // Through the gateway: the string it built from its HTTP request. A gRPC
  // caller's signs its metadata, its target "post /mariposa.v1.SERVICE/METHOD".
  std::string signing = in.signing_string;
  if (!in.gateway) {
    const auto& md = ctx->client_metadata();
    auto ss = SigningString(*params, absl::StrCat("post /mariposa.v1.", method),
                            [&](absl::string_view h) -> std::optional<std::string> {
                              auto it = md.find(grpc::string_ref(h.data(), h.size()));
                              if (it == md.end()) return std::nullopt;
                              return std::string(it->second.data(), it->second.size());
                            });
    if (!ss.ok()) {
      who->refused = std::string(ss.status().message());
      return;
    }
    signing = *ss;
  } else if (!in.signing_error.empty() || signing.empty()) {
    who->refused = in.signing_error.empty() ? "the signed request could not be read" : in.signing_error;
    return;
  }
  absl::Time now = o_.clock->Now();
  if (absl::Status st = CheckSignedDate(SignedDate(signing), now); !st.ok()) {
    who->refused = std::string(st.message());
    return;
  }
  if (o_.mahi == nullptr) {
    who->refused = "this mariposad takes no HTTP Signature: it knows no Triton auth cache (start it with --mahi URL, "
                   "or --triton for a simulator)";
    return;
  }
  auto principal = o_.mahi->Lookup(key_id->account, key_id->user);
  if (!principal.ok()) {
    if (principal.status().code() == absl::StatusCode::kUnavailable) {
      who->unavailable = std::string(principal.status().message());
    } else {
      who->refused = absl::StrCat(principal.status().message(), " (keyId ", params->key_id, ")");
    }
    return;
  }
  if (principal->disabled) {
    who->refused = absl::StrCat(who->name, " is disabled in Triton");
    return;
  }
  std::optional<SshPublicKey> key;
  for (const auto& [fp, text] : principal->keys) {
    auto k = ParseSshPublicKey(text);
    if (k.ok() && FingerprintMatches(*k, key_id->fingerprint)) {
      key = *std::move(k);
      break;
    }
  }
  if (!key) {
    who->refused = absl::StrCat(who->name, " has no key ", key_id->fingerprint,
                                " in Triton (`triton key list` shows its keys; `triton key add` adds one)");
    return;
  }
  if (absl::Status st = VerifySignature(*key, params->algorithm, signing, params->signature); !st.ok()) {
    who->refused = std::string(st.message());
    return;
  }
  {
    // A write taken once with this signature is not taken again (a replay).
    // Reads may repeat: a client polling twice in one second with a
    // date-only signature sends the same signature twice.
    const MethodRule* rule = RuleFor(method);
    absl::MutexLock l(&mu_);
    if ((rule == nullptr || rule->writes) &&
        !replays_.FirstUse(absl::StrCat(params->signature, " ", method, " ", in.request_digest), now)) {
      who->refused = "this signed request was received before (a replay): sign each request anew, with a fresh date";
      return;
    }
  }
  who->account = principal->account_uuid;
  std::vector<std::string> owned;
  auto projects = o_.store->ListProjects();
  if (!projects.ok()) {
    LogError("cannot read projects; the Triton caller gets no grants", {{"caller", who->name}});
  } else {
    for (const ProjectRecord& p : *projects) {
      if (p.owner == principal->account_uuid) owned.push_back(p.name);
    }
  }
  who->grants = TritonGrants(*principal, owned);
  for (Grant& g : GrantsOf(who->name)) who->grants.push_back(std::move(g));
}

bool Authorizer::CreatesInOwnAccount(const Identity& who, const MethodRule& rule, const std::string& project) {
  if (who.account.empty() || rule.global || project.empty() || IsUuid(project)) return false;
  // Only the calls that create a project: any other call about a name the
  // caller does not own is refused alike, whether the project exists or not.
  if (rule.method != "Projects/CreateProject" && !absl::StartsWith(rule.method, "Projects/Apply")) return false;
  if (!RoleAllows(Role::kDeployer, rule.permission)) return false;
  // The account itself; its sub-users deploy to what it made.
  if (who.name.find('/') != std::string::npos) return false;
  auto existing = o_.store->GetProject(project);
  return !existing.ok() && existing.status().code() == absl::StatusCode::kNotFound;
}

Identity Authorizer::Resolve(const grpc::ServerContext* ctx) {
  Identity who;
  who.name = "anonymous";
  who.method = "none";
  std::string peer = ctx->peer();
  who.peer = peer;
  who.transport = "insecure tcp";
  const auto& md = ctx->client_metadata();
  Presented in;
  if (md.count(kGatewayToken) || md.count(kGatewayPeer) || md.count(kGatewayUid) || md.count(kGatewayCert) ||
      md.count(kGatewaySigning) || md.count(kGatewaySigningError)) {
    in = FromGateway(md, &who);
    if (!in.refused.empty()) {
      who.refused = in.refused;
      return who;
    }
  } else {
    // The connection: a local listener's (fd:N) or gRPC's own (TLS, or TCP
    // with --insecure-listen).
    if (absl::StartsWith(peer, "fd:")) {
      int fd = -1;
      if (absl::SimpleAtoi(peer.substr(3), &fd)) {
        absl::MutexLock l(&mu_);
        auto it = connections_.find(fd);
        if (it != connections_.end()) in.local = it->second;
      }
    }
    std::shared_ptr<const grpc::AuthContext> auth = ctx->auth_context();
    if (auth != nullptr) {
      auto type = auth->FindPropertyValues("transport_security_type");
      in.tls = !type.empty() && type.front() == "ssl";
      if (in.tls && auth->IsPeerAuthenticated()) {
        auto cn = auth->FindPropertyValues("x509_common_name");
        if (!cn.empty()) in.cert_cn = std::string(cn.front().data(), cn.front().size());
      }
    }
    if (in.local) {
      const LocalPeer& l = *in.local;
      who.transport = l.transport;
      who.peer = l.pid >= 0 ? absl::StrCat(l.transport, " pid ", l.pid, " uid ", l.uid)
                            : absl::StrCat(l.address, " uid ", l.uid);
    } else if (in.tls) {
      who.transport = "tls";
    }
    if (md.count("authorization")) in.authorization = Md(md, "authorization");
  }
  // 1. A bearer token wins: it is what the caller chose to present.
  if (in.authorization) {
    const std::string& value = *in.authorization;
    if (IsSignatureScheme(value)) {
      FromSignature(ctx, value, in, &who);
      return who;
    }
    if (!absl::StartsWithIgnoreCase(value, "bearer ")) {
      who.refused = "the authorization header is not \"Bearer TOKEN\" or \"Signature keyId=…\"";
      return who;
    }
    std::string secret = value.substr(7);
    if (!o_.internal_token.empty() && ConstantTimeEqual(secret, o_.internal_token)) {
      who.name = "mariposad";
      who.method = "token";
      who.grants = {Grant{Role::kHealthAgent, ""}};
      return who;
    }
    auto t = o_.store->FindTokenByHash(Sha256Hex(secret));
    if (!t.ok()) {
      who.refused = "the token is not known (never issued, or mistyped)";
      return who;
    }
    who.name = absl::StrCat("token:", t->name);
    who.method = "token";
    if (t->revoked()) {
      who.refused = absl::StrCat("token ", t->name, " was revoked at ", absl::FormatTime(t->revoked_at));
      return who;
    }
    if (t->expires_at <= o_.clock->Now()) {
      who.refused = absl::StrCat("token ", t->name, " expired at ", absl::FormatTime(t->expires_at));
      return who;
    }
    if (auto r = ParseRole(t->role)) who.grants = {Grant{*r, t->project}};
    return who;
  }
  // 2. A verified client certificate.
  if (!in.cert_cn.empty()) {
    who.name = absl::StrCat("cert:", in.cert_cn);
    who.method = "certificate";
    who.grants = GrantsOf(who.name);
    return who;
  }
  // 3. A local user.
  if (in.local && in.local->uid >= 0) {
    who.method = in.local->transport == "unix socket" ? "unix" : "loopback";
    if (in.local->uid == 0 || in.local->uid == o_.daemon_uid) {
      who.name = UserName(in.local->uid);
      who.grants = {Grant{Role::kAdmin, ""}};
    } else {
      who.name = absl::StrCat("user:", UserName(in.local->uid));
      who.grants = GrantsOf(who.name);
    }
  }
  return who;
}

Identity Authorizer::Identify(const grpc::ServerContext* ctx) {
  {
    absl::MutexLock l(&mu_);
    auto it = calls_.find(ctx);
    if (it != calls_.end() && it->second.identified) return it->second.who;
  }
  Identity who = Resolve(ctx);
  absl::MutexLock l(&mu_);
  auto it = calls_.find(ctx);
  if (it != calls_.end()) {
    it->second.who = who;
    it->second.identified = true;
  }
  return who;
}

std::string Authorizer::ProjectName(const std::string& ref) {
  if (ref.empty() || !IsUuid(ref)) return ref;
  auto p = o_.store->GetProject(ref);
  return p.ok() ? p->name : ref;
}

std::string Authorizer::ProjectOfTask(const std::string& task) {
  auto t = o_.store->GetTask(task);
  return t.ok() ? t->project_uuid : "";
}

bool Authorizer::Allows(const Identity& who, const std::string& method, const std::string& project, std::string* why) {
  const MethodRule* rule = RuleFor(method);
  if (rule == nullptr) {
    *why = absl::StrCat(method, " is not in the permission table; nobody may call it");
    return false;
  }
  if (Allowed(who.grants, *rule, project) || CreatesInOwnAccount(who, *rule, project)) return true;
  // A Triton caller lists (filtered) before it owns a project; and applies a
  // manifest naming its project (the handler checks that project again:
  // projects_parts::AdmitManifest) before owning one.
  if (!who.account.empty() && project.empty() && !rule->global &&
      (rule->permission == Permission::kRead || absl::StartsWith(method, "Projects/Apply"))) {
    return true;
  }
  std::string scope = rule->global ? "every project" : project.empty() ? "some project" : absl::StrCat("project ", project);
  if (rule->permission == Permission::kHealthAgent) {
    *why = absl::StrCat(who.name, " may not connect as a health agent: that needs a token or certificate with the "
                                  "health-agent role (`mariposa admin token create --name AGENT_ID --role health-agent`)");
    return false;
  }
  std::string role(PermissionName(rule->permission));
  std::string on = rule->global || project.empty() ? "--all-projects" : absl::StrCat("-j ", project);
  *why = absl::StrCat(who.name, " may not call ", method, ": it needs the ", role, " role on ", scope,
                      who.grants.empty() ? " and has no role" : "",
                      who.method == "token"
                          ? absl::StrCat("; a token's role is fixed: ask an admin for another (`mariposa admin token "
                                         "create --name NAME --role ", role, " ", on, "`)")
                      : who.method == "signature" && !who.account.empty()
                          ? absl::StrCat("; a Triton account has the operator role on the projects it owns, and its "
                                         "sub-users what their default Triton roles mariposa-", role,
                                         rule->global || project.empty() ? "" : absl::StrCat(" or mariposa-", role, ".", project),
                                         " give (docs/security.md, \"Triton accounts\")")
                          : absl::StrCat("; an admin grants it with `mariposa admin grant ", who.name, " ", role,
                                         rule->global || project.empty() ? "" : absl::StrCat(" -j ", project), "`"));
  return false;
}

grpc::Status Authorizer::Authorize(grpc::ServerContext* ctx, const std::string& project_ref,
                                   const std::string& variant) {
  std::string method;
  {
    absl::MutexLock l(&mu_);
    auto it = calls_.find(ctx);
    if (it != calls_.end()) method = it->second.method;
  }
  if (method.empty()) return grpc::Status(grpc::StatusCode::INTERNAL, "call not registered with the authorizer");
  if (!variant.empty()) method = absl::StrCat(method, "#", variant);
  Identity who = Identify(ctx);
  // A call whose client is gone is not acted on: its connection's fd may
  // already serve someone else.
  if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
  std::string project = ProjectName(project_ref);
  if (!who.unavailable.empty()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("the caller cannot be checked now: ", who.unavailable, "; try again"));
  }
  if (!who.refused.empty()) {
    RecordDenied(who, method, project, who.refused);
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        who.method == "signature"
                            ? absl::StrCat(who.name == "anonymous" ? "" : absl::StrCat(who.name, ": "), who.refused)
                            : absl::StrCat(who.refused, "; ask an admin for a token (`mariposa admin token create`)"));
  }
  std::string why;
  if (Allows(who, method, project, &why)) {
    const MethodRule* rule = o_.gate ? RuleFor(method) : nullptr;
    return rule != nullptr ? o_.gate(*rule) : grpc::Status::OK;
  }
  RecordDenied(who, method, project, why);
  if (who.grants.empty() && who.method == "none") {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        absl::StrCat("no credential: this ", who.transport,
                                     " connection is anonymous; present a token (--token or MARIPOSA_TOKEN) or a "
                                     "client certificate, or use mariposad's Unix socket"));
  }
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, why);
}

void Authorizer::RecordDenied(const Identity& who, const std::string& method, const std::string& project,
                              const std::string& why) {
  std::string key = absl::StrCat(who.name, "|", who.peer, "|", method);
  int suppressed = 0;
  {
    absl::MutexLock l(&mu_);
    absl::Time now = o_.clock->Now();
    auto& [last, count] = denied_[key];
    if (now - last < absl::Minutes(1)) {
      ++count;
      return;
    }
    suppressed = count;
    last = now;
    count = 0;
    if (denied_.size() > 10000) denied_.clear();
  }
  std::string detail = why;
  if (suppressed > 0) absl::StrAppend(&detail, " (and ", suppressed, " more refusals of this call in the last minute)");
  LogInfo("call refused", {{"who", who.name}, {"peer", who.peer}, {"method", method}, {"reason", why}});
  auto st = o_.store->AppendEvent(who.Author(), project, "auth.denied", method, detail);
  if (!st.ok()) LogError("cannot record a refused call", {{"error", st.status().ToString()}});
}

std::string Authorizer::Author(const grpc::ServerContext* ctx) { return Identify(ctx).Author(); }

bool Authorizer::CanSee(const grpc::ServerContext* ctx, const std::string& project_name) {
  return auth::CanSee(Identify(ctx).grants, project_name);
}

}  // namespace mariposa::auth
