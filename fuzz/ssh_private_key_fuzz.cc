// A private key file the CLI reads to sign as a Triton user
// (auth/ssh_signer.h): OpenSSH's format or PEM, any bytes. Nothing crashes;
// a key taken signs, and its signature verifies with the public half given
// only when that half is its own.
#include <cstdint>
#include <string>

#include "absl/strings/escaping.h"
#include "auth/http_signature.h"
#include "auth/ssh_signer.h"

namespace {
constexpr char kPub[] = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKHe/UQGkEBH4zSP38cZUijvxddHEM5lHQwHlkFk16TP jill";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mariposa::auth;  // NOLINT
  std::string in(reinterpret_cast<const char*>(data), size);
  // The input as it is, and wrapped as OpenSSH's armour (its body base64).
  std::string armoured = "-----BEGIN OPENSSH PRIVATE KEY-----\n" +
                         absl::Base64Escape(std::string("openssh-key-v1", 15) + in) +
                         "\n-----END OPENSSH PRIVATE KEY-----\n";
  TritonProfile profile{"fuzz", "jill", "", "", ""};
  for (const std::string& text : {in, armoured}) {
    auto signer = SshSigner::FromPrivateKey(text, kPub, profile, "fuzz-key");
    if (!signer.ok()) continue;
    auto sig = (*signer)->Sign("date: x");
    if (!sig.ok()) continue;
    auto pub = ParseSshPublicKey(kPub);
    if (!pub.ok()) __builtin_trap();
    // jill's real private key is not in any input: a verifying signature
    // would be a forgery.
    if (VerifySignature(*pub, sig->first, "date: x", sig->second).ok()) __builtin_trap();
  }
  return 0;
}
