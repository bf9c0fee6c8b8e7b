#include "auth/http_signature.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <cctype>
#include <memory>
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "auth/ssh_wire.h"

namespace mariposa::auth {
namespace {

constexpr size_t kMaxAuthorization = 16384;

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("the Signature authorization header ", what));
}

// Algorithms taken, by key type (CloudAPI takes RSA-SHA1 too; SHA-1 is not
// taken here: sign with rsa-sha256, which every current signer defaults to).
const std::set<std::string, std::less<>>& Algorithms() {
  static const std::set<std::string, std::less<>> k = {"rsa-sha256",   "rsa-sha512",   "ecdsa-sha256",
                                                       "ecdsa-sha384", "ecdsa-sha512", "ed25519-sha512"};
  return k;
}

struct EvpKeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using EvpKey = std::unique_ptr<EVP_PKEY, EvpKeyFree>;

std::string Digest(const EVP_MD* md, absl::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), out, &n, md, nullptr) != 1) return "";
  return std::string(reinterpret_cast<char*>(out), n);
}

// The EVP key of a parsed SSH key; null when OpenSSL will not take it.
EvpKey ToEvp(const SshPublicKey& key) {
  absl::string_view in = key.blob, type;
  if (!ssh_wire::TakeString(&in, &type)) return nullptr;
  if (type == "ssh-ed25519") {
    absl::string_view pk;
    if (!ssh_wire::TakeString(&in, &pk) || pk.size() != 32) return nullptr;
    return EvpKey(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                              reinterpret_cast<const unsigned char*>(pk.data()), pk.size()));
  }
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  if (bld == nullptr) return nullptr;
  BIGNUM *e = nullptr, *n = nullptr;
  const char* kind = nullptr;
  bool ok = false;
  if (type == "ssh-rsa") {
    absl::string_view es, ns;
    if (ssh_wire::TakeString(&in, &es) && ssh_wire::TakeString(&in, &ns) && !ns.empty()) {
      e = BN_bin2bn(reinterpret_cast<const unsigned char*>(es.data()), es.size(), nullptr);
      n = BN_bin2bn(reinterpret_cast<const unsigned char*>(ns.data()), ns.size(), nullptr);
      // 1,024 to 16,384 bits (OpenSSH's bounds) and a small exponent: a
      // larger key would make each check take seconds.
      ok = e != nullptr && n != nullptr && BN_num_bits(n) >= 1024 && BN_num_bits(n) <= 16384 && BN_num_bits(e) <= 64 &&
           OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) == 1 &&
           OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) == 1;
      kind = "RSA";
    }
  } else if (absl::StartsWith(type, "ecdsa-sha2-")) {
    absl::string_view curve, q;
    const char* group = nullptr;
    if (ssh_wire::TakeString(&in, &curve) && ssh_wire::TakeString(&in, &q)) group = ssh_wire::EcGroup(curve);
    ok = group != nullptr && type.substr(11) == curve &&
         OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) == 1 &&
         OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, q.data(), q.size()) == 1;
    kind = "EC";
  }
  EVP_PKEY* out = ok ? ssh_wire::KeyFromParams(kind, bld, EVP_PKEY_PUBLIC_KEY) : nullptr;
  OSSL_PARAM_BLD_free(bld);
  BN_free(e);
  BN_free(n);
  return EvpKey(out);
}

std::string HexColons(absl::string_view bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i > 0) out.push_back(':');
    absl::StrAppend(&out, absl::BytesToHexString(bytes.substr(i, 1)));
  }
  return out;
}

}  // namespace

bool IsSignatureScheme(absl::string_view authorization) {
  authorization = absl::StripLeadingAsciiWhitespace(authorization);
  return authorization.size() > 9 && absl::StartsWithIgnoreCase(authorization, "signature") &&
         authorization[9] == ' ';
}

absl::StatusOr<SignatureParams> ParseSignatureAuthorization(absl::string_view value) {
  if (value.size() > kMaxAuthorization) return Bad(absl::StrCat("is longer than ", kMaxAuthorization, " bytes"));
  if (!IsSignatureScheme(value)) return Bad("does not start with \"Signature \"");
  absl::string_view rest = absl::StripAsciiWhitespace(absl::StripLeadingAsciiWhitespace(value).substr(10));
  std::map<std::string, std::string> params;
  while (!rest.empty()) {
    size_t eq = rest.find('=');
    if (eq == absl::string_view::npos) return Bad(absl::StrCat("has a parameter without a value near \"", rest.substr(0, 32), "\""));
    std::string key(absl::StripAsciiWhitespace(rest.substr(0, eq)));
    if (key.empty() || !std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum(uint8_t(c)) != 0; })) {
      return Bad(absl::StrCat("has a bad parameter name \"", absl::CHexEscape(key.substr(0, 32)), "\""));
    }
    rest.remove_prefix(eq + 1);
    rest = absl::StripLeadingAsciiWhitespace(rest);
    std::string val;
    if (!rest.empty() && rest[0] == '"') {
      size_t close = rest.find('"', 1);
      if (close == absl::string_view::npos) return Bad(absl::StrCat("leaves the value of ", key, " unquoted at its end"));
      val = std::string(rest.substr(1, close - 1));
      rest.remove_prefix(close + 1);
    } else {
      // Numbers (created, expires) come unquoted.
      size_t end = rest.find(',');
      val = std::string(absl::StripAsciiWhitespace(rest.substr(0, end)));
      if (val.empty() || !std::all_of(val.begin(), val.end(), [](char c) { return std::isdigit(uint8_t(c)) != 0; })) {
        return Bad(absl::StrCat("has the value of ", key, " unquoted: write ", key, "=\"…\""));
      }
      rest.remove_prefix(end == absl::string_view::npos ? rest.size() : end);
    }
    if (!params.emplace(key, val).second) return Bad(absl::StrCat("names ", key, " twice"));
    rest = absl::StripLeadingAsciiWhitespace(rest);
    if (!rest.empty()) {
      if (rest[0] != ',') return Bad(absl::StrCat("has no comma after ", key));
      rest = absl::StripLeadingAsciiWhitespace(rest.substr(1));
    }
  }
  SignatureParams out;
  for (const char* need : {"keyId", "algorithm", "signature"}) {
    if (!params.count(need)) return Bad(absl::StrCat("has no ", need));
  }
  out.key_id = params["keyId"];
  out.algorithm = absl::AsciiStrToLower(params["algorithm"]);
  out.signature = params["signature"];
  if (!Algorithms().count(out.algorithm)) {
    return Bad(absl::StrCat("names algorithm \"", absl::CHexEscape(out.algorithm.substr(0, 32)),
                            "\": this server takes ", absl::StrJoin(Algorithms(), ", ")));
  }
  if (params.count("headers")) {
    for (absl::string_view h : absl::StrSplit(params["headers"], ' ', absl::SkipEmpty())) {
      out.headers.push_back(absl::AsciiStrToLower(h));
    }
    if (out.headers.empty()) return Bad("signs no headers");
  } else {
    out.headers = {"date"};
  }
  bool dated = false;
  for (const std::string& h : out.headers) dated |= h == "date" || h == "x-date";
  if (!dated) {
    return Bad("does not sign the date: a signature without a date could be replayed forever; sign \"date\" (the "
               "default) or \"x-date\"");
  }
  return out;
}

absl::StatusOr<KeyId> ParseKeyId(absl::string_view key_id) {
  std::vector<absl::string_view> parts = absl::StrSplit(key_id, '/');
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "keyId \"", absl::CHexEscape(key_id.substr(0, 200)),
        "\" is not \"/ACCOUNT/keys/FINGERPRINT\" or \"/ACCOUNT/users/USER/keys/FINGERPRINT\" (the account's login, "
        "not \"my\")"));
  };
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].empty()) return bad();
  }
  KeyId out;
  if (parts.size() == 4 && parts[0].empty() && parts[2] == "keys") {
    out.account = std::string(parts[1]);
    out.fingerprint = std::string(parts[3]);
  } else if (parts.size() == 6 && parts[0].empty() && parts[2] == "users" && parts[4] == "keys") {
    out.account = std::string(parts[1]);
    out.user = std::string(parts[3]);
    out.fingerprint = std::string(parts[5]);
  } else {
    return bad();
  }
  if (out.account == "my") return bad();
  return out;
}

absl::StatusOr<std::string> SigningString(const SignatureParams& params, absl::string_view request_target,
                                          const std::function<std::optional<std::string>(absl::string_view)>& header) {
  std::string out;
  for (size_t i = 0; i < params.headers.size(); ++i) {
    const std::string& h = params.headers[i];
    if (i > 0) out.push_back('\n');
    if (h == "(request-target)") {
      absl::StrAppend(&out, h, ": ", request_target);
    } else if (h == "(keyid)") {
      absl::StrAppend(&out, h, ": ", params.key_id);
    } else if (h == "(algorithm)") {
      absl::StrAppend(&out, h, ": ", params.algorithm);
    } else if (!h.empty() && h[0] == '(') {
      return absl::InvalidArgumentError(absl::StrCat("the signature signs ", h, ", which this server does not take; sign "
                                                     "date, (request-target) and request headers"));
    } else {
      std::optional<std::string> v = header(h);
      if (!v || v->empty()) {
        return absl::InvalidArgumentError(absl::StrCat("the signature signs the ", h, " header, which the request does not carry"));
      }
      absl::StrAppend(&out, h, ": ", *v);
    }
  }
  return out;
}

std::string SignedDate(absl::string_view signing_string) {
  for (absl::string_view line : absl::StrSplit(signing_string, '\n')) {
    for (absl::string_view prefix : {"date: ", "x-date: "}) {
      if (absl::StartsWith(line, prefix)) return std::string(line.substr(prefix.size()));
    }
  }
  return "";
}

absl::Status CheckSignedDate(absl::string_view date, absl::Time now, absl::Duration skew) {
  absl::Time t;
  std::string err;
  std::string d(absl::StripAsciiWhitespace(date));
  if (!absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", d, &t, &err) &&
      !absl::ParseTime("%a, %d %b %Y %H:%M:%S UTC", d, &t, &err)) {
    return absl::UnauthenticatedError(absl::StrCat("the signed date \"", absl::CHexEscape(d.substr(0, 64)),
                                                   "\" is not an HTTP date (\"Sun, 29 Nov 2026 06:00:00 GMT\")"));
  }
  absl::Duration off = t - now;
  if (absl::AbsDuration(off) > skew) {
    return absl::UnauthenticatedError(absl::StrCat(
        "the signed date ", d, " is ", absl::FormatDuration(absl::Trunc(absl::AbsDuration(off), absl::Seconds(1))),
        off > absl::ZeroDuration() ? " ahead of" : " behind", " this server's clock (",
        absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", now, absl::UTCTimeZone()), "); at most ",
        absl::FormatDuration(skew), " either way is taken: sign a fresh date, and check the client's clock (NTP)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SshPublicKey> ParseSshPublicKey(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(' ', 2), absl::SkipEmpty());
  if (fields.size() < 2) return absl::InvalidArgumentError("an SSH public key is \"TYPE BASE64 [COMMENT]\"");
  SshPublicKey key;
  key.type = std::string(fields[0]);
  if (!absl::Base64Unescape(fields[1], &key.blob)) {
    return absl::InvalidArgumentError(absl::StrCat("the ", key.type, " key's body is not base64"));
  }
  if (fields.size() > 2) key.comment = std::string(absl::StripAsciiWhitespace(fields[2]));
  absl::string_view in = key.blob, type;
  if (!ssh_wire::TakeString(&in, &type) || type != key.type) {
    return absl::InvalidArgumentError(absl::StrCat("the key's body does not start with its type ", key.type));
  }
  if (ToEvp(key) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", key.type, " key cannot be read (this server takes ssh-rsa of 1024 bits or more, ecdsa-sha2-nistp256/384/521 "
        "and ssh-ed25519)"));
  }
  key.md5 = HexColons(Digest(EVP_md5(), key.blob));
  std::string sha = absl::Base64Escape(Digest(EVP_sha256(), key.blob));
  while (!sha.empty() && sha.back() == '=') sha.pop_back();
  key.sha256 = absl::StrCat("SHA256:", sha);
  return key;
}

bool FingerprintMatches(const SshPublicKey& key, absl::string_view fp) {
  if (absl::StartsWith(fp, "SHA256:")) return fp == key.sha256;
  if (absl::StartsWithIgnoreCase(fp, "MD5:")) fp.remove_prefix(4);
  std::string plain = absl::AsciiStrToLower(absl::StrReplaceAll(fp, {{":", ""}}));
  return !plain.empty() && plain == absl::StrReplaceAll(key.md5, {{":", ""}});
}

absl::Status VerifySignature(const SshPublicKey& key, absl::string_view algorithm, absl::string_view signing_string,
                             absl::string_view signature_b64) {
  std::string alg = absl::AsciiStrToLower(algorithm);
  const std::string kind = alg.substr(0, alg.find('-'));
  bool fits = (kind == "rsa" && key.type == "ssh-rsa") || (kind == "ecdsa" && absl::StartsWith(key.type, "ecdsa-")) ||
              (kind == "ed25519" && key.type == "ssh-ed25519");
  if (!Algorithms().count(alg) || !fits) {
    return absl::UnauthenticatedError(
        absl::StrCat("the signature's algorithm ", alg, " does not fit the key ", key.md5, " (", key.type, ")"));
  }
  std::string sig;
  if (!absl::Base64Unescape(signature_b64, &sig) || sig.empty()) {
    return absl::UnauthenticatedError("the signature is not base64");
  }
  EvpKey pkey = ToEvp(key);
  if (pkey == nullptr) return absl::UnauthenticatedError(absl::StrCat("the key ", key.md5, " cannot be used"));
  const EVP_MD* md = nullptr;
  if (kind != "ed25519") {
    absl::string_view hash = absl::string_view(alg).substr(alg.find('-') + 1);
    md = hash == "sha256" ? EVP_sha256() : hash == "sha384" ? EVP_sha384() : EVP_sha512();
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx != nullptr && EVP_DigestVerifyInit(ctx, nullptr, md, nullptr, pkey.get()) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                             reinterpret_cast<const unsigned char*>(signing_string.data()), signing_string.size()) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) {
    return absl::UnauthenticatedError(
        absl::StrCat("the signature does not match the request with key ", key.md5,
                     ": the request was changed on its way, or was signed with another key"));
  }
  return absl::OkStatus();
}

void ReplayGuard::Forget(absl::Time now) {
  while (!order_.empty() && (now - order_.front().first > window_ || order_.size() > capacity_)) {
    if (order_.size() > capacity_) ++overflowed_;
    auto it = by_signature_.find(order_.front().second);
    if (it != by_signature_.end() && it->second == order_.front().first) by_signature_.erase(it);
    order_.pop_front();
  }
}

bool ReplayGuard::FirstUse(const std::string& signature, absl::Time now) {
  Forget(now);
  auto it = by_signature_.find(signature);
  if (it != by_signature_.end() && now - it->second <= window_) return false;
  by_signature_[signature] = now;
  order_.emplace_back(now, signature);
  Forget(now);
  return true;
}

}  // namespace mariposa::auth
