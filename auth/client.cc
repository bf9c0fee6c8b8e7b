#include "auth/client.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "absl/strings/str_cat.h"

namespace mariposa::auth {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", what, " ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream s;
  s << in.rdbuf();
  if (s.str().size() > (1 << 20)) return absl::InvalidArgumentError(absl::StrCat(what, " ", path, " is over 1 MiB"));
  return s.str();
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> Dial(const std::string& addr, const ClientCredentials& creds,
                                                    const grpc::ChannelArguments& base) {
  grpc::ChannelArguments args = base;
  std::shared_ptr<grpc::ChannelCredentials> channel_creds;
  if (creds.ca_file.empty()) {
    if (!creds.cert_file.empty()) {
      return absl::InvalidArgumentError("a client certificate needs TLS: give the server's CA too (--ca FILE)");
    }
    channel_creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions o;
    auto ca = ReadSmallFile(creds.ca_file, "CA certificate");
    if (!ca.ok()) return ca.status();
    o.pem_root_certs = *ca;
    if (creds.cert_file.empty() != creds.key_file.empty()) {
      return absl::InvalidArgumentError("a client certificate needs its key and a key its certificate (--cert and --key)");
    }
    if (!creds.cert_file.empty()) {
      auto cert = ReadSmallFile(creds.cert_file, "client certificate");
      if (!cert.ok()) return cert.status();
      auto key = ReadSmallFile(creds.key_file, "client key");
      if (!key.ok()) return key.status();
      o.pem_cert_chain = *cert;
      o.pem_private_key = *key;
    }
    if (!creds.server_name.empty()) args.SetSslTargetNameOverride(creds.server_name);
    channel_creds = grpc::SslCredentials(o);
  }
  return grpc::CreateCustomChannel(addr, channel_creds, args);
}

void AddCallCredentials(const ClientCredentials& creds, grpc::ClientContext* ctx) {
  if (!creds.token.empty()) ctx->AddMetadata("authorization", absl::StrCat("Bearer ", creds.token));
}

}  // namespace mariposa::auth
