#include "auth/ssh_signer.h"

#include <dirent.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "auth/client.h"
#include "auth/http_signature.h"
#include "auth/ssh_wire.h"

namespace mariposa::auth {
namespace {

using json = nlohmann::json;

std::string Env(const std::map<std::string, std::string>& env, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    auto it = env.find(n);
    if (it != env.end() && !it->second.empty()) return it->second;
  }
  return "";
}

using ssh_wire::PutString;
using ssh_wire::PutU32;
using ssh_wire::TakeString;
using ssh_wire::TakeU32;

// The algorithm http-signature names for an SSH key type.
std::string AlgorithmFor(absl::string_view type) {
  if (type == "ssh-rsa") return "rsa-sha256";
  if (type == "ssh-ed25519") return "ed25519-sha512";
  if (type == "ecdsa-sha2-nistp256") return "ecdsa-sha256";
  if (type == "ecdsa-sha2-nistp384") return "ecdsa-sha384";
  if (type == "ecdsa-sha2-nistp521") return "ecdsa-sha512";
  return "";
}

std::string KeyIdFor(const TritonProfile& p, const SshPublicKey& key) {
  return p.user.empty() ? absl::StrCat("/", p.account, "/keys/", key.md5)
                        : absl::StrCat("/", p.account, "/users/", p.user, "/keys/", key.md5);
}

absl::StatusOr<SshPublicKey> KeyOfBlob(absl::string_view blob) {
  absl::string_view in = blob, type;
  if (!TakeString(&in, &type)) return absl::InvalidArgumentError("a key blob without its type");
  return ParseSshPublicKey(absl::StrCat(type, " ", absl::Base64Escape(blob)));
}

// ssh-agent's protocol (draft-miller-ssh-agent): one request, one answer.
class Agent {
 public:
  explicit Agent(std::string socket) : socket_(std::move(socket)) {}
  absl::StatusOr<std::string> Ask(absl::string_view request) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::UnavailableError("cannot make a socket for ssh-agent");
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (socket_.size() >= sizeof(a.sun_path)) {
      close(fd);
      return absl::InvalidArgumentError("$SSH_AUTH_SOCK is too long");
    }
    std::memcpy(a.sun_path, socket_.data(), socket_.size());
    std::string out;
    PutU32(&out, request.size());
    out.append(request.data(), request.size());
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    for (size_t sent = 0; ok && sent < out.size();) {
      ssize_t n = write(fd, out.data() + sent, out.size() - sent);
      if (n <= 0) ok = false;
      else sent += n;
    }
    std::string in;
    char buf[4096];
    while (ok) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) break;
      in.append(buf, n);
      if (in.size() >= 4) {
        absl::string_view v = in;
        uint32_t len = 0;
        TakeU32(&v, &len);
        if (len > (1u << 20)) ok = false;
        if (v.size() >= len) break;
      }
    }
    close(fd);
    absl::string_view v = in;
    absl::string_view body;
    if (!ok || !TakeString(&v, &body) || body.empty()) {
      return absl::UnavailableError(absl::StrCat("ssh-agent at ", socket_, " did not answer"));
    }
    return std::string(body);
  }

 private:
  std::string socket_;
};

class AgentSigner : public SshSigner {
 public:
  AgentSigner(std::string socket, std::string blob, std::string type)
      : agent_(std::move(socket)), blob_(std::move(blob)), type_(std::move(type)) {}
  void Set(std::string key_id) {
    key_id_ = std::move(key_id);
    source_ = "ssh-agent";
  }
  absl::StatusOr<std::pair<std::string, std::string>> Sign(absl::string_view data) override {
    std::string req(1, char(13));  // SSH_AGENTC_SIGN_REQUEST
    PutString(&req, blob_);
    PutString(&req, data);
    PutU32(&req, type_ == "ssh-rsa" ? 2 : 0);  // SSH_AGENT_RSA_SHA2_256
    auto answer = agent_.Ask(req);
    if (!answer.ok()) return answer.status();
    if (uint8_t((*answer)[0]) != 14) {  // SSH_AGENT_SIGN_RESPONSE
      return absl::PermissionDeniedError("ssh-agent refused to sign (is the key confirmed or locked?)");
    }
    absl::string_view v = absl::string_view(*answer).substr(1), sig, name, raw;
    if (!TakeString(&v, &sig) || !TakeString(&sig, &name) || !TakeString(&sig, &raw)) {
      return absl::UnavailableError("ssh-agent's signature cannot be read");
    }
    std::string out(raw);
    if (absl::StartsWith(type_, "ecdsa-")) {
      // SSH's (r, s) as two mpints; http-signature's ECDSA is DER.
      absl::string_view r, s;
      if (!TakeString(&raw, &r) || !TakeString(&raw, &s)) return absl::UnavailableError("ssh-agent's ECDSA signature cannot be read");
      ECDSA_SIG* es = ECDSA_SIG_new();
      ECDSA_SIG_set0(es, BN_bin2bn(reinterpret_cast<const unsigned char*>(r.data()), r.size(), nullptr),
                     BN_bin2bn(reinterpret_cast<const unsigned char*>(s.data()), s.size(), nullptr));
      unsigned char* der = nullptr;
      int n = i2d_ECDSA_SIG(es, &der);
      out = n > 0 ? std::string(reinterpret_cast<char*>(der), n) : "";
      OPENSSL_free(der);
      ECDSA_SIG_free(es);
      if (out.empty()) return absl::UnavailableError("ssh-agent's ECDSA signature cannot be read");
    }
    return std::make_pair(AlgorithmFor(type_), absl::Base64Escape(out));
  }

 private:
  Agent agent_;
  std::string blob_, type_;
};

struct EvpKeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using EvpKey = std::unique_ptr<EVP_PKEY, EvpKeyFree>;

// An unencrypted "-----BEGIN OPENSSH PRIVATE KEY-----" (ssh-keygen's own
// format): its first key, as OpenSSL's.
absl::StatusOr<EvpKey> ReadOpensshPrivateKey(const std::string& text, const std::string& path) {
  std::string b64;
  bool in = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line == "-----BEGIN OPENSSH PRIVATE KEY-----") in = true;
    else if (line == "-----END OPENSSH PRIVATE KEY-----") break;
    else if (in) absl::StrAppend(&b64, line);
  }
  std::string raw;
  auto bad = [&](const std::string& why) { return absl::InvalidArgumentError(absl::StrCat(path, ": ", why)); };
  if (!absl::Base64Unescape(b64, &raw) || !absl::StartsWith(raw, absl::string_view("openssh-key-v1\0", 15))) {
    return bad("not an OpenSSH private key");
  }
  absl::string_view v = absl::string_view(raw).substr(15), cipher, kdf, kdfopts, pub, priv;
  uint32_t n = 0, check1 = 0, check2 = 0;
  if (!TakeString(&v, &cipher) || !TakeString(&v, &kdf) || !TakeString(&v, &kdfopts) || !TakeU32(&v, &n) || n < 1 || !TakeString(&v, &pub) ||
      !TakeString(&v, &priv)) {
    return bad("a damaged OpenSSH private key");
  }
  if (cipher != "none") {
    return bad("the key is encrypted with a passphrase: add it to ssh-agent (`ssh-add " + path + "`), which signs for it");
  }
  if (n != 1) return bad(absl::StrCat("holds ", n, " keys; ssh-keygen writes one a file"));
  absl::string_view p = priv, type;
  if (!TakeU32(&p, &check1) || !TakeU32(&p, &check2) || check1 != check2 || !TakeString(&p, &type)) {
    return bad("a damaged OpenSSH private key");
  }
  if (type == "ssh-ed25519") {
    absl::string_view pk, sk;
    if (!TakeString(&p, &pk) || !TakeString(&p, &sk) || sk.size() != 64) return bad("a damaged Ed25519 key");
    return EvpKey(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr,
                                               reinterpret_cast<const unsigned char*>(sk.data()), 32));
  }
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  std::vector<BIGNUM*> bns;
  auto bn = [&](absl::string_view s) {
    bns.push_back(BN_bin2bn(reinterpret_cast<const unsigned char*>(s.data()), s.size(), nullptr));
    return bns.back();
  };
  const char* kind = nullptr;
  bool ok = false;
  if (type == "ssh-rsa") {
    absl::string_view nn, e, d, iqmp, pp, q;
    // At most 16,384 bits, as OpenSSH takes: a larger one would make each
    // signature take seconds.
    ok = TakeString(&p, &nn) && TakeString(&p, &e) && TakeString(&p, &d) && TakeString(&p, &iqmp) && TakeString(&p, &pp) && TakeString(&p, &q) &&
         nn.size() <= 2049 && e.size() <= 8 && d.size() <= 2049 &&
         OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn(nn)) == 1 &&
         OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn(e)) == 1 &&
         OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_D, bn(d)) == 1;
    kind = "RSA";
  } else if (absl::StartsWith(type, "ecdsa-sha2-")) {
    absl::string_view curve, q, d;
    const char* group = nullptr;
    if (TakeString(&p, &curve) && TakeString(&p, &q) && TakeString(&p, &d)) group = ssh_wire::EcGroup(curve);
    ok = group != nullptr && OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) == 1 &&
         OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, q.data(), q.size()) == 1 &&
         OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, bn(d)) == 1;
    kind = "EC";
  }
  EVP_PKEY* out = ok ? ssh_wire::KeyFromParams(kind, bld, EVP_PKEY_KEYPAIR) : nullptr;
  OSSL_PARAM_BLD_free(bld);
  for (BIGNUM* b : bns) BN_clear_free(b);
  if (out == nullptr) return bad(absl::StrCat("a ", type, " key this client cannot use"));
  return EvpKey(out);
}

class FileSigner : public SshSigner {
 public:
  FileSigner(EvpKey key, std::string type, std::string key_id, std::string path)
      : key_(std::move(key)), type_(std::move(type)) {
    key_id_ = std::move(key_id);
    source_ = std::move(path);
  }
  absl::StatusOr<std::pair<std::string, std::string>> Sign(absl::string_view data) override {
    std::string alg = AlgorithmFor(type_);
    const EVP_MD* md = alg == "ed25519-sha512"  ? nullptr
                       : alg == "ecdsa-sha384" ? EVP_sha384()
                       : alg == "ecdsa-sha512" ? EVP_sha512()
                                               : EVP_sha256();
    std::lock_guard<std::mutex> l(mu_);
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    size_t n = 0;
    std::string sig;
    bool ok = ctx != nullptr && EVP_DigestSignInit(ctx, nullptr, md, nullptr, key_.get()) == 1 &&
              EVP_DigestSign(ctx, nullptr, &n, reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
    if (ok) {
      sig.resize(n);
      ok = EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &n,
                          reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
      sig.resize(n);
    }
    EVP_MD_CTX_free(ctx);
    if (!ok) return absl::InternalError(absl::StrCat("cannot sign with ", source_));
    return std::make_pair(alg, absl::Base64Escape(sig));
  }

 private:
  EvpKey key_;
  std::string type_;
  std::mutex mu_;
};

}  // namespace

absl::StatusOr<TritonProfile> LoadTritonProfile(const std::string& name_in, const std::map<std::string, std::string>& env,
                                                const std::string& home) {
  std::string name = name_in;
  if (name.empty() || name == "current") {
    name = Env(env, {"TRITON_PROFILE"});
    if (name.empty()) {
      auto cfg = ReadSmallFile(absl::StrCat(home, "/.triton/config.json"), "triton config");
      if (cfg.ok()) {
        json j = json::parse(*cfg, nullptr, false);
        if (j.is_object() && j.value("profile", json()).is_string()) name = j["profile"].get<std::string>();
      }
    }
    if (name.empty()) name = "env";
  }
  TritonProfile p;
  p.name = name;
  if (name == "env") {
    p.account = Env(env, {"TRITON_ACCOUNT", "SDC_ACCOUNT"});
    p.user = Env(env, {"TRITON_USER", "SDC_USER"});
    p.key_id = Env(env, {"TRITON_KEY_ID", "SDC_KEY_ID"});
    p.url = Env(env, {"TRITON_URL", "SDC_URL"});
    if (p.account.empty() || p.key_id.empty()) {
      return absl::InvalidArgumentError(
          "the \"env\" Triton profile needs $TRITON_ACCOUNT (or $SDC_ACCOUNT) and $TRITON_KEY_ID (or $SDC_KEY_ID); "
          "or name a profile `triton profile list` shows");
    }
    return p;
  }
  if (name.find('/') != std::string::npos || name == "." || name == "..") {
    return absl::InvalidArgumentError(absl::StrCat("\"", name, "\" is not a Triton profile name"));
  }
  std::string path = absl::StrCat(home, "/.triton/profiles.d/", name, ".json");
  if (access(path.c_str(), F_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("no Triton profile ", name, " (", path,
                                            "): `triton profile list` shows those there are, "
                                            "`triton profile create` makes one"));
  }
  auto text = ReadSmallFile(path, "Triton profile");
  if (!text.ok()) return text.status();
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, " is not a JSON object"));
  auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; };
  p.account = str("account");
  p.user = str("user");
  p.key_id = str("keyId");
  p.url = str("url");
  if (p.account.empty() || p.key_id.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, " has no ", p.account.empty() ? "\"account\"" : "\"keyId\"",
                                                   ": `triton profile edit ", name, "` sets it"));
  }
  return p;
}

absl::StatusOr<std::unique_ptr<SshSigner>> SshSigner::Open(const TritonProfile& profile, const std::string& agent_socket,
                                                           const std::string& ssh_dir) {
  std::string tried;
  if (!agent_socket.empty()) {
    Agent agent(agent_socket);
    auto answer = agent.Ask(std::string(1, char(11)));  // SSH_AGENTC_REQUEST_IDENTITIES
    if (answer.ok() && uint8_t((*answer)[0]) == 12) {
      absl::string_view v = absl::string_view(*answer).substr(1);
      uint32_t n = 0;
      TakeU32(&v, &n);
      for (uint32_t i = 0; i < n && i < 1000; ++i) {
        absl::string_view blob, comment;
        if (!TakeString(&v, &blob) || !TakeString(&v, &comment)) break;
        auto key = KeyOfBlob(blob);
        if (!key.ok() || !FingerprintMatches(*key, profile.key_id)) continue;
        auto s = std::make_unique<AgentSigner>(agent_socket, std::string(blob), key->type);
        s->Set(KeyIdFor(profile, *key));
        return std::unique_ptr<SshSigner>(std::move(s));
      }
      absl::StrAppend(&tried, "ssh-agent (", n, " keys)");
    } else {
      absl::StrAppend(&tried, "ssh-agent at ", agent_socket, " (no answer)");
    }
  }
  // ~/.ssh/NAME.pub with the fingerprint, and NAME beside it.
  if (DIR* d = opendir(ssh_dir.c_str())) {
    std::vector<std::string> pubs;
    while (dirent* e = readdir(d)) {
      std::string f = e->d_name;
      if (absl::EndsWith(f, ".pub")) pubs.push_back(f);
    }
    closedir(d);
    for (const std::string& f : pubs) {
      auto text = ReadSmallFile(absl::StrCat(ssh_dir, "/", f), "public key");
      if (!text.ok()) continue;
      auto key = ParseSshPublicKey(*text);
      if (!key.ok() || !FingerprintMatches(*key, profile.key_id)) continue;
      std::string path = absl::StrCat(ssh_dir, "/", f.substr(0, f.size() - 4));
      auto priv = ReadSmallFile(path, "private key");
      if (!priv.ok()) return priv.status();
      return FromPrivateKey(*priv, *text, profile, path);
    }
    absl::StrAppend(&tried, tried.empty() ? "" : " and ", ssh_dir, "/*.pub");
  }
  return absl::NotFoundError(absl::StrCat(
      "the key ", profile.key_id, " of Triton profile ", profile.name, " is not in ", tried.empty() ? "ssh-agent or ~/.ssh" : tried,
      ": start ssh-agent and `ssh-add` the key, or put it in ~/.ssh beside its .pub"));
}

absl::StatusOr<std::unique_ptr<SshSigner>> SshSigner::FromPrivateKey(const std::string& text, const std::string& pub,
                                                                     const TritonProfile& profile,
                                                                     const std::string& path) {
  auto key = ParseSshPublicKey(pub);
  if (!key.ok()) return key.status();
  absl::StatusOr<EvpKey> evp;
  if (absl::StrContains(text, "-----BEGIN OPENSSH PRIVATE KEY-----")) {
    evp = ReadOpensshPrivateKey(text, path);
  } else {
    BIO* bio = BIO_new_mem_buf(text.data(), static_cast<int>(text.size()));
    EVP_PKEY* k = PEM_read_bio_PrivateKey(bio, nullptr, [](char*, int, int, void*) { return 0; }, nullptr);
    BIO_free(bio);
    if (k == nullptr) {
      evp = absl::InvalidArgumentError(absl::StrCat(
          path, " cannot be read (encrypted with a passphrase? add it to ssh-agent: `ssh-add ", path, "`)"));
    } else {
      evp = EvpKey(k);
    }
  }
  if (!evp.ok()) return evp.status();
  return std::unique_ptr<SshSigner>(std::make_unique<FileSigner>(std::move(*evp), key->type, KeyIdFor(profile, *key), path));
}

absl::StatusOr<std::string> SshSigner::Authorization(absl::string_view data, absl::string_view headers) {
  auto sig = Sign(data);
  if (!sig.ok()) return sig.status();
  return absl::StrCat("Signature keyId=\"", key_id_, "\",algorithm=\"", sig->first, "\",headers=\"", headers,
                      "\",signature=\"", sig->second, "\"");
}

}  // namespace mariposa::auth
