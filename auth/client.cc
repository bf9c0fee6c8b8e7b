#include "auth/client.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "auth/ssh_signer.h"
#include "common/ids.h"

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

absl::Status CheckToken(const std::string& token, const std::string& source) {
  constexpr char kFix[] = "; a token is one line of the form mpt_… as `mariposa admin token create` printed it";
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(source, " is empty", kFix));
  if (token.size() > 4096) {
    return absl::InvalidArgumentError(absl::StrCat(source, " holds ", token.size(), " bytes, not a token", kFix));
  }
  for (size_t i = 0; i < token.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(token[i]);
    if (c > 0x20 && c < 0x7f) continue;
    if (c == '\n' || c == '\r') {
      return absl::InvalidArgumentError(absl::StrCat(source, " holds more than one line (a line break at byte ", i,
                                                     ")", kFix));
    }
    std::string what = c == ' ' || c == '\t' ? "a space" : absl::StrFormat("byte 0x%02x", c);
    return absl::InvalidArgumentError(
        absl::StrCat(source, " holds ", what, " at byte ", i, ", which a token never has", kFix));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  auto text = ReadSmallFile(path, "token file");
  if (!text.ok()) return text.status();
  std::string token(absl::StripAsciiWhitespace(*text));
  if (absl::Status s = CheckToken(token, absl::StrCat("token file ", path)); !s.ok()) return s;
  return token;
}

namespace {

// Signs each call when gRPC sends it, when the method is known.
class SignaturePlugin : public grpc::MetadataCredentialsPlugin {
 public:
  SignaturePlugin(std::shared_ptr<SshSigner> signer, const Clock* clock) : signer_(std::move(signer)), clock_(clock) {}
  bool IsBlocking() const override { return true; }  // ssh-agent is asked
  grpc::Status GetMetadata(grpc::string_ref service_url, grpc::string_ref method_name, const grpc::AuthContext&,
                           std::multimap<grpc::string, grpc::string>* metadata) override {
    std::string url(service_url.data(), service_url.size());
    size_t slash = url.rfind('/');
    std::string target = absl::StrCat("post ", slash == std::string::npos ? "/" : url.substr(slash), "/",
                                      std::string(method_name.data(), method_name.size()));
    std::string date = absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", clock_->Now(), absl::UTCTimeZone());
    std::string nonce = NewUuid();
    auto authz = signer_->Authorization(
        absl::StrCat("date: ", date, "\n(request-target): ", target, "\nx-mariposa-nonce: ", nonce),
        "date (request-target) x-mariposa-nonce");
    if (!authz.ok()) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(authz.status().message()));
    metadata->insert({"date", date});
    metadata->insert({"x-mariposa-nonce", nonce});
    metadata->insert({"authorization", *authz});
    return grpc::Status::OK;
  }

 private:
  std::shared_ptr<SshSigner> signer_;
  const Clock* clock_;
};

}  // namespace

void AddCallCredentials(const ClientCredentials& creds, grpc::ClientContext* ctx, const Clock* clock) {
  if (!creds.token.empty()) {
    ctx->AddMetadata("authorization", absl::StrCat("Bearer ", creds.token));
  } else if (creds.signer != nullptr && clock != nullptr) {
    ctx->set_credentials(grpc::experimental::MetadataCredentialsFromPlugin(
        std::make_unique<SignaturePlugin>(creds.signer, clock), GRPC_SECURITY_NONE));
  }
}

}  // namespace mariposa::auth
