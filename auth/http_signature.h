// HTTP Signature authentication as Triton's CloudAPI takes it
// (draft-cavage-http-signatures, as Joyent's node http-signature and
// smartdc-auth write it): the Authorization header, the keyId naming a
// Triton account's (or sub-user's) SSH key, the signing string, the
// signature's check against an OpenSSH public key, CloudAPI's clock-skew
// rule on the signed Date, and a guard against replays. Pure: the caller
// gives `now` and the keys (auth/mahi.h fetches them). docs/security.md,
// "Triton accounts (HTTP Signature)".
#ifndef MARIPOSA_AUTH_HTTP_SIGNATURE_H_
#define MARIPOSA_AUTH_HTTP_SIGNATURE_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace mariposa::auth {

// CloudAPI's (and http-signature's) default: a signed Date may be this far
// from the server's clock either way.
inline constexpr absl::Duration kSignatureClockSkew = absl::Seconds(300);

// `Authorization: Signature keyId="…",algorithm="…",headers="…",signature="…"`.
struct SignatureParams {
  std::string key_id;
  std::string algorithm;             // lower case: "rsa-sha256", "ecdsa-sha256", "ed25519-sha512", …
  std::vector<std::string> headers;  // lower case, in order; {"date"} when the header names none
  std::string signature;             // base64, as sent
};
// Whether `authorization` uses the Signature scheme (case-insensitive).
bool IsSignatureScheme(absl::string_view authorization);
// INVALID_ARGUMENT saying what is wrong (a missing or repeated parameter,
// an unquoted value, an unsupported algorithm, no date or x-date among the
// signed headers).
absl::StatusOr<SignatureParams> ParseSignatureAuthorization(absl::string_view authorization);

// keyId "/ACCOUNT/keys/FINGERPRINT" or "/ACCOUNT/users/USER/keys/FINGERPRINT".
struct KeyId {
  std::string account;
  std::string user;  // "" for the account itself
  std::string fingerprint;
};
absl::StatusOr<KeyId> ParseKeyId(absl::string_view key_id);

// The string the client signed: each of `headers` in order, one per line,
// "name: value"; "(request-target)" is "METHOD-lower-case PATH?QUERY";
// "(keyid)" and "(algorithm)" the parameters'. `header(name)` gives a
// request header's value (nullopt when absent). INVALID_ARGUMENT naming a
// signed header the request does not carry.
absl::StatusOr<std::string> SigningString(const SignatureParams& params, absl::string_view request_target,
                                          const std::function<std::optional<std::string>(absl::string_view)>& header);

// The signed date: the value of the "date" (or "x-date") line of a signing
// string; "" when it signs neither.
std::string SignedDate(absl::string_view signing_string);
// OK when `date` (RFC 1123, as HTTP writes it) is within `skew` of `now`;
// UNAUTHENTICATED saying by how much and which way otherwise.
absl::Status CheckSignedDate(absl::string_view date, absl::Time now, absl::Duration skew = kSignatureClockSkew);

// An OpenSSH public key line ("ssh-rsa AAAA… comment"), as Triton stores an
// account's keys: RSA, ECDSA (nistp256/384/521) and Ed25519.
struct SshPublicKey {
  std::string type;     // "ssh-rsa", "ecdsa-sha2-nistp256", "ssh-ed25519"
  std::string blob;     // the key's wire form
  std::string md5;      // "aa:bb:…" (the fingerprint Triton names keys by)
  std::string sha256;   // "SHA256:base64-without-padding"
  std::string comment;
};
absl::StatusOr<SshPublicKey> ParseSshPublicKey(absl::string_view line);
// Whether `fingerprint` names `key`: MD5 as "aa:bb:…", "aabb…" or
// "MD5:aa:bb:…", or "SHA256:…" (what `ssh-keygen -l` prints).
bool FingerprintMatches(const SshPublicKey& key, absl::string_view fingerprint);

// OK when `signature_b64` is `key`'s signature of `signing_string` with
// `algorithm`; UNAUTHENTICATED otherwise (a key of another kind than the
// algorithm, a bad signature). ECDSA signatures are DER, as sshpk writes them.
absl::Status VerifySignature(const SshPublicKey& key, absl::string_view algorithm, absl::string_view signing_string,
                             absl::string_view signature_b64);

// Remembers the signatures accepted within the clock-skew window, so that a
// request sent again (replayed) is refused: a signed Date is accepted for
// 2 × skew at most, so a signature older than that can be forgotten.
// Bounded: at most `capacity` signatures are remembered; when full, the
// oldest are forgotten and `overflowed()` counts them (a replay of one of
// those would then pass; the count is on /metrics). Not thread-safe.
class ReplayGuard {
 public:
  explicit ReplayGuard(size_t capacity = 200000, absl::Duration window = 2 * kSignatureClockSkew)
      : capacity_(capacity), window_(window) {}
  // false when `signature` was accepted before within the window; otherwise
  // it is remembered and true.
  bool FirstUse(const std::string& signature, absl::Time now);
  size_t size() const { return by_signature_.size(); }
  size_t overflowed() const { return overflowed_; }

 private:
  void Forget(absl::Time now);
  size_t capacity_;
  absl::Duration window_;
  std::deque<std::pair<absl::Time, std::string>> order_;
  std::unordered_map<std::string, absl::Time> by_signature_;
  size_t overflowed_ = 0;
};

}  // namespace mariposa::auth

#endif  // MARIPOSA_AUTH_HTTP_SIGNATURE_H_
