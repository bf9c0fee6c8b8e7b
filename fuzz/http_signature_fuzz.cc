// What an HTTP Signature caller sends and what mahi answers
// (auth/http_signature.h, auth/mahi.h): the Authorization header, its keyId,
// the signing string built from it, the signed date, an SSH public key line,
// mahi's JSON. Nothing crashes; what is accepted keeps its promises (a
// signed date among the headers, a keyId with an account and a fingerprint,
// a key with its fingerprints); no random input verifies as a signature of
// a fixed key.
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "auth/http_signature.h"
#include "auth/mahi.h"

namespace {

constexpr char kKey[] = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKHe/UQGkEBH4zSP38cZUijvxddHEM5lHQwHlkFk16TP jill";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mariposa::auth;  // NOLINT
  std::string in(reinterpret_cast<const char*>(data), size);
  auto p = ParseSignatureAuthorization(in);
  if (p.ok()) {
    if (p->key_id.empty() || p->algorithm.empty() || p->signature.empty() || p->headers.empty()) __builtin_trap();
    bool dated = false;
    for (const std::string& h : p->headers) dated |= h == "date" || h == "x-date";
    if (!dated) __builtin_trap();
    auto ss = SigningString(*p, "get /v1/projects", [&](absl::string_view h) -> std::optional<std::string> {
      if (h == "date" || h == "x-date") return in.substr(0, 40);
      return std::nullopt;
    });
    if (ss.ok()) {
      (void)CheckSignedDate(SignedDate(*ss), absl::FromUnixSeconds(1795934400));
      auto key = ParseSshPublicKey(kKey);
      if (!key.ok()) __builtin_trap();
      if (VerifySignature(*key, p->algorithm, *ss, p->signature).ok()) __builtin_trap();
    }
  }
  auto id = ParseKeyId(in);
  if (id.ok() && (id->account.empty() || id->fingerprint.empty() || id->account == "my")) __builtin_trap();
  auto key = ParseSshPublicKey(in);
  if (key.ok()) {
    if (key->md5.size() != 47 || !absl::StartsWith(key->sha256, "SHA256:")) __builtin_trap();
    if (!FingerprintMatches(*key, key->md5) || !FingerprintMatches(*key, key->sha256)) __builtin_trap();
  }
  (void)CheckSignedDate(in, absl::FromUnixSeconds(1795934400));
  for (const char* user : {"", "bob"}) {
    auto who = ParseMahiAnswer(in, user);
    if (who.ok()) {
      if (who->account_uuid.empty() || who->account_login.empty()) __builtin_trap();
      auto grants = TritonGrants(*who, {"web", "db"});
      for (const Grant& g : grants) {
        if (g.role == Role::kAdmin || g.role == Role::kHealthAgent || g.project.empty()) __builtin_trap();
      }
    }
  }
  return 0;
}
