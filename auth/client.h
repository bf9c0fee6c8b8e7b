// The client side of authentication, shared by the CLI and mariposa-health:
// a channel (TLS when a CA is given, with a client certificate when one is)
// and the bearer token on each call.
#ifndef MARIPOSA_AUTH_CLIENT_H_
#define MARIPOSA_AUTH_CLIENT_H_

#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/channel_arguments.h>

#include "absl/status/statusor.h"
#include "common/clock.h"

namespace mariposa::auth {

struct ClientCredentials {
  std::string ca_file;    // PEM; set: TLS, the server's certificate is verified against it
  std::string cert_file;  // PEM client certificate (with key_file)
  std::string key_file;
  std::string token;      // "mpt_…"
  std::string server_name;  // TLS name to verify (default: the address's host)
  // Signs each call as a Triton user (auth/ssh_signer.h) instead of a
  // token: HTTP Signature over "date (request-target) x-mariposa-nonce",
  // the target being "post /mariposa.v1.SERVICE/METHOD".
  std::shared_ptr<class SshSigner> signer;
};

// INVALID_ARGUMENT naming the file that cannot be read, or a certificate
// without its key.
absl::StatusOr<std::shared_ptr<grpc::Channel>> Dial(const std::string& addr, const ClientCredentials& creds,
                                                    const grpc::ChannelArguments& args = grpc::ChannelArguments());
// The token, or (with a signer) a signature made when the call is sent, its
// Date from `clock`.
void AddCallCredentials(const ClientCredentials& creds, grpc::ClientContext* ctx, const Clock* clock = nullptr);

// A bearer token must be one word of printable ASCII (it travels in an
// HTTP/2 header; anything else used to abort the process inside gRPC).
// INVALID_ARGUMENT saying what is wrong where (`source`: "token file F",
// "$MARIPOSA_TOKEN") and how to fix it.
absl::Status CheckToken(const std::string& token, const std::string& source);
// A token file: the token, surrounding whitespace (a final newline) ignored,
// checked by CheckToken; INVALID_ARGUMENT naming the file otherwise.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// The whole of a small file; INVALID_ARGUMENT naming it when unreadable.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, const std::string& what);

}  // namespace mariposa::auth

#endif  // MARIPOSA_AUTH_CLIENT_H_
