// The Auth gRPC service: whoami, can-i, the permission table, tokens,
// grants and the secrets key's rotation.
#ifndef MARIPOSA_AUTH_AUTH_SERVICE_H_
#define MARIPOSA_AUTH_AUTH_SERVICE_H_

#include "absl/synchronization/mutex.h"
#include "auth/authorizer.h"
#include "auth/sealer.h"
#include "common/clock.h"
#include "mariposa/v1/auth.grpc.pb.h"
#include "projects/store.h"

namespace mariposa::auth {

class AuthService final : public v1::Auth::Service {
 public:
  // All must outlive the service.
  AuthService(ProjectStore* store, Authorizer* authorizer, Sealer* sealer, const Clock* clock)
      : store_(store), authorizer_(authorizer), sealer_(sealer), clock_(clock) {}

  grpc::Status WhoAmI(grpc::ServerContext* ctx, const v1::WhoAmIRequest* req, v1::WhoAmIResponse* resp) override;
  grpc::Status CanI(grpc::ServerContext* ctx, const v1::CanIRequest* req, v1::CanIResponse* resp) override;
  grpc::Status Permissions(grpc::ServerContext* ctx, const v1::PermissionsRequest* req,
                           v1::PermissionsResponse* resp) override;
  grpc::Status CreateToken(grpc::ServerContext* ctx, const v1::CreateTokenRequest* req,
                           v1::CreateTokenResponse* resp) override;
  grpc::Status ListTokens(grpc::ServerContext* ctx, const v1::ListTokensRequest* req,
                          v1::ListTokensResponse* resp) override;
  grpc::Status RevokeToken(grpc::ServerContext* ctx, const v1::RevokeTokenRequest* req,
                           v1::RevokeTokenResponse* resp) override;
  grpc::Status SetGrant(grpc::ServerContext* ctx, const v1::SetGrantRequest* req, v1::SetGrantResponse* resp) override;
  grpc::Status ListGrants(grpc::ServerContext* ctx, const v1::ListGrantsRequest* req,
                          v1::ListGrantsResponse* resp) override;
  grpc::Status DeleteGrant(grpc::ServerContext* ctx, const v1::DeleteGrantRequest* req,
                           v1::DeleteGrantResponse* resp) override;
  grpc::Status RotateKey(grpc::ServerContext* ctx, const v1::RotateKeyRequest* req,
                         v1::RotateKeyResponse* resp) override;

 private:
  ProjectStore* store_;
  Authorizer* authorizer_;
  Sealer* sealer_;
  const Clock* clock_;
  absl::Mutex rotate_mu_;
};

// Seals every secret with the sealer's current key and finishes a pending
// rotation (start-up and RotateKey); how many secrets were sealed again.
absl::StatusOr<int> ResealAndFinish(ProjectStore* store, Sealer* sealer);

// Several nodes on one store share one secrets key. The store records the
// id of the key its secrets are sealed with (setting "secrets_key_id"): a
// node records its key's id when none is recorded, or when it holds the
// recorded key among its older ones (it rotated); a node whose key file
// does not hold the recorded key is refused (FAILED_PRECONDITION naming
// both ids and how to fix it), before it seals anything.
absl::Status AgreeOnSecretsKey(ProjectStore* store, const Sealer& sealer);

}  // namespace mariposa::auth

#endif  // MARIPOSA_AUTH_AUTH_SERVICE_H_
