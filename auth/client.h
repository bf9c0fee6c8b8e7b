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

namespace mariposa::auth {

struct ClientCredentials {
  std::string ca_file;    // PEM; set: TLS, the server's certificate is verified against it
  std::string cert_file;  // PEM client certificate (with key_file)
  std::string key_file;
  std::string token;      // "mpt_…"
  std::string server_name;  // TLS name to verify (default: the address's host)
};

// INVALID_ARGUMENT naming the file that cannot be read, or a certificate
// without its key.
absl::StatusOr<std::shared_ptr<grpc::Channel>> Dial(const std::string& addr, const ClientCredentials& creds,
                                                    const grpc::ChannelArguments& args = grpc::ChannelArguments());
void AddCallCredentials(const ClientCredentials& creds, grpc::ClientContext* ctx);

// The whole of a small file; INVALID_ARGUMENT naming it when unreadable.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, const std::string& what);

}  // namespace mariposa::auth

#endif  // MARIPOSA_AUTH_CLIENT_H_
