#include "auth/auth_service.h"

#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "projects/limits.h"
#include "projects/access.h"
#include "projects/api_edge.h"
#include "projects/request_guard.h"

namespace mariposa::auth {
namespace {

void ToProto(const TokenRecord& t, v1::Token* out) {
  out->set_id(t.id);
  out->set_name(t.name);
  out->set_role(t.role);
  out->set_project(t.project);
  SetTimestamp(t.created_at, out->mutable_created_at());
  if (t.expires_at != absl::InfiniteFuture()) SetTimestamp(t.expires_at, out->mutable_expires_at());
  out->set_created_by(t.created_by);
  out->set_revoked(t.revoked());
}

void ToProto(const GrantRecord& g, v1::Grant* out) {
  out->set_subject(g.subject);
  out->set_role(g.role);
  out->set_project(g.project);
  SetTimestamp(g.created_at, out->mutable_created_at());
  out->set_created_by(g.created_by);
}

// A grant may name a project before it exists (its first deployer creates it).
absl::Status CheckRoleAndProject(const std::string& role, const std::string& project) {
  if (!ParseRole(role)) {
    return absl::InvalidArgumentError(absl::StrCat("role \"", role,
                                                   "\" is not one of viewer, deployer, operator, admin, health-agent"));
  }
  if (!project.empty() && !IsDnsLabel(project)) {
    return absl::InvalidArgumentError(absl::StrCat("project \"", project, "\" is not a project name"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AgreeOnSecretsKey(ProjectStore* store, const Sealer& sealer) {
  constexpr char kKey[] = "secrets_key_id";
  auto recorded = store->GetSetting(kKey);
  if (!recorded.ok()) return recorded.status();
  std::string mine = sealer.current_key_id();
  if (*recorded == mine) return absl::OkStatus();
  if (!recorded->empty() && !sealer.HasKey(*recorded)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the store's secrets are sealed with key ", *recorded, " but this node's key file ", sealer.path(),
        " holds key ", mine, " and not that one. Copy the key file of a node that runs (its --secrets-key, "
        "mode 0600, with any .retired files beside it) to ", sealer.path(), " and start again"));
  }
  return store->SetSetting(kKey, mine, "mariposad", "auth.secrets-key",
                           recorded->empty() ? absl::StrCat("secrets are sealed with key ", mine)
                                             : absl::StrCat("secrets are sealed with key ", mine, " (was ", *recorded,
                                                            ")"));
}

absl::StatusOr<int> ResealAndFinish(ProjectStore* store, Sealer* sealer) {
  auto n = store->ResealSecrets();
  if (!n.ok()) return n.status();
  if (auto st = sealer->FinishRotation(); !st.ok()) return st;
  return *n;
}

grpc::Status AuthService::WhoAmI(grpc::ServerContext* ctx, const v1::WhoAmIRequest*, v1::WhoAmIResponse* resp) {
  Identity who = authorizer_->Identify(ctx);
  resp->set_name(who.name);
  resp->set_method(who.method);
  resp->set_peer(who.peer);
  resp->set_transport(who.transport);
  for (const Grant& g : who.grants) {
    v1::RoleGrant* out = resp->add_grants();
    out->set_role(std::string(RoleName(g.role)));
    out->set_project(g.project);
  }
  return grpc::Status::OK;
}

grpc::Status AuthService::CanI(grpc::ServerContext* ctx, const v1::CanIRequest* req, v1::CanIResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  auto method = MethodForVerb(req->action());
  if (!method) {
    return ToGrpc(absl::InvalidArgumentError(absl::StrCat(
        "\"", req->action(), "\" is neither a verb (apply, scale, freeze, …) nor an RPC (Projects/Apply); "
        "`mariposa auth permissions` lists them")));
  }
  const MethodRule* rule = RuleFor(*method);
  resp->set_method(*method);
  resp->set_permission(rule ? std::string(PermissionName(rule->permission)) : "nobody");
  std::string why;
  resp->set_allowed(authorizer_->Allows(authorizer_->Identify(ctx), *method, req->project(), &why));
  resp->set_reason(why);
  return grpc::Status::OK;
}

grpc::Status AuthService::Permissions(grpc::ServerContext* /*ctx*/, const v1::PermissionsRequest*,
                                      v1::PermissionsResponse* resp) {
  for (const MethodRule& r : MethodRules()) {
    v1::PermissionRule* out = resp->add_rules();
    out->set_method(r.method);
    out->set_permission(std::string(PermissionName(r.permission)));
    out->set_global(r.global);
  }
  return grpc::Status::OK;
}

grpc::Status AuthService::CreateToken(grpc::ServerContext* ctx, const v1::CreateTokenRequest* req,
                                      v1::CreateTokenResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (!IsDnsLabel(req->name())) {
    return ToGrpc(absl::InvalidArgumentError(absl::StrCat(
        "token name \"", req->name(), "\" must be a DNS label (a-z, 0-9, -); a health agent's is its --id")));
  }
  if (auto st = CheckRoleAndProject(req->role(), req->project()); !st.ok()) return ToGrpc(st);
  if (absl::Status s = CheckRange("--expires (seconds)", req->expires_in_seconds(), 0, Limits::kMaxTokenSeconds,
                                   "give a duration up to 10 years (3650d), or none for a token that never expires");
      !s.ok()) {
    return ToGrpc(s);
  }
  TokenRecord t;
  t.id = RandomHex(6);
  t.name = req->name();
  t.role = req->role();
  t.project = req->project();
  if (req->expires_in_seconds() > 0) t.expires_at = clock_->Now() + absl::Seconds(req->expires_in_seconds());
  t.created_by = AuthorOf(ctx);
  std::string secret = NewTokenSecret();
  t.hash = Sha256Hex(secret);
  auto made = store_->CreateToken(t);
  if (!made.ok()) return ToGrpc(made.status());
  ToProto(*made, resp->mutable_token());
  resp->set_secret(secret);
  return grpc::Status::OK;
}

grpc::Status AuthService::ListTokens(grpc::ServerContext* /*ctx*/, const v1::ListTokensRequest*,
                                     v1::ListTokensResponse* resp) {
  auto list = store_->ListTokens();
  if (!list.ok()) return ToGrpc(list.status());
  for (const TokenRecord& t : *list) ToProto(t, resp->add_tokens());
  return grpc::Status::OK;
}

grpc::Status AuthService::RevokeToken(grpc::ServerContext* ctx, const v1::RevokeTokenRequest* req,
                                      v1::RevokeTokenResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  auto t = store_->RevokeToken(req->token(), AuthorOf(ctx));
  if (!t.ok()) return ToGrpc(t.status());
  ToProto(*t, resp->mutable_token());
  return grpc::Status::OK;
}

grpc::Status AuthService::SetGrant(grpc::ServerContext* ctx, const v1::SetGrantRequest* req,
                                   v1::SetGrantResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  const v1::Grant& g = req->grant();
  if (!absl::StartsWith(g.subject(), "user:") && !absl::StartsWith(g.subject(), "cert:")) {
    return ToGrpc(absl::InvalidArgumentError(absl::StrCat(
        "subject \"", g.subject(), "\" must be user:NAME (a local Unix user) or cert:CN (a TLS client certificate); "
        "tokens carry their own role")));
  }
  if (g.subject().size() < 6) return ToGrpc(absl::InvalidArgumentError("the subject's name is empty"));
  if (auto st = CheckRoleAndProject(g.role(), g.project()); !st.ok()) return ToGrpc(st);
  GrantRecord r{g.subject(), g.role(), g.project(), absl::InfinitePast(), AuthorOf(ctx)};
  auto made = store_->SetGrant(r);
  if (!made.ok()) return ToGrpc(made.status());
  ToProto(*made, resp->mutable_grant());
  return grpc::Status::OK;
}

grpc::Status AuthService::ListGrants(grpc::ServerContext* /*ctx*/, const v1::ListGrantsRequest*,
                                     v1::ListGrantsResponse* resp) {
  auto list = store_->ListGrants();
  if (!list.ok()) return ToGrpc(list.status());
  for (const GrantRecord& g : *list) ToProto(g, resp->add_grants());
  return grpc::Status::OK;
}

grpc::Status AuthService::DeleteGrant(grpc::ServerContext* ctx, const v1::DeleteGrantRequest* req,
                                      v1::DeleteGrantResponse*) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  return ToGrpc(store_->DeleteGrant(req->subject(), req->project(), AuthorOf(ctx)));
}

grpc::Status AuthService::RotateKey(grpc::ServerContext* ctx, const v1::RotateKeyRequest*,
                                    v1::RotateKeyResponse* resp) {
  absl::MutexLock l(&rotate_mu_);
  std::string old_id = sealer_->current_key_id();
  if (auto st = sealer_->BeginRotation(); !st.ok()) return ToGrpc(st);
  auto n = ResealAndFinish(store_, sealer_);
  if (!n.ok()) {
    return ToGrpc(absl::Status(n.status().code(),
                               absl::StrCat(n.status().message(), "; the new key stays in ", sealer_->path(),
                                            ".next and the next start (or rotate-key) finishes the rotation")));
  }
  if (absl::Status agreed = AgreeOnSecretsKey(store_, *sealer_); !agreed.ok()) return ToGrpc(agreed);
  resp->set_key_id(sealer_->current_key_id());
  resp->set_old_key_id(old_id);
  resp->set_secrets(*n);
  auto ev = store_->AppendEvent(AuthorOf(ctx), "", "auth.rotate-key", sealer_->current_key_id(),
                                absl::StrCat(*n, " secrets sealed again; key ", old_id, " retired as ",
                                             sealer_->path(), ".", old_id, ".retired"));
  if (!ev.ok()) return ToGrpc(ev.status());
  return grpc::Status::OK;
}

}  // namespace mariposa::auth
