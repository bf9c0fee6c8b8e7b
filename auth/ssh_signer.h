// The client side of HTTP Signature (auth/http_signature.h): a Triton user
// as the `triton` CLI knows them — its profiles (~/.triton/profiles.d/*.json,
// the current one in ~/.triton/config.json or $TRITON_PROFILE, the "env"
// profile from $TRITON_ACCOUNT/$SDC_ACCOUNT, $TRITON_KEY_ID/$SDC_KEY_ID,
// $TRITON_USER/$SDC_USER) — signing with the key the profile names, held by
// ssh-agent ($SSH_AUTH_SOCK) or in ~/.ssh (an unencrypted OpenSSH or PEM
// private key beside its .pub). docs/security.md, "Triton accounts".
#ifndef MARIPOSA_AUTH_SSH_SIGNER_H_
#define MARIPOSA_AUTH_SSH_SIGNER_H_

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace mariposa::auth {

struct TritonProfile {
  std::string name;     // "env" for the environment's
  std::string account;  // the account's login
  std::string user;     // a sub-user's login, or ""
  std::string key_id;   // the key's fingerprint (MD5 "aa:bb:…" or "SHA256:…")
  std::string url;      // CloudAPI's (shown, not used)
};

// The profile `name` ("current": $TRITON_PROFILE, else ~/.triton/config.json's
// "profile", else "env"; "env": the environment's). `env` is the process
// environment, `home` $HOME. INVALID_ARGUMENT / NOT_FOUND saying which file
// or variable is missing what, and how `triton profile` makes it.
absl::StatusOr<TritonProfile> LoadTritonProfile(const std::string& name, const std::map<std::string, std::string>& env,
                                                const std::string& home);

// Signs for one Triton identity. Thread-safe.
class SshSigner {
 public:
  virtual ~SshSigner() = default;
  // The key in ssh-agent (when `agent_socket` is set and holds it), else the
  // private key in `ssh_dir` whose .pub has the profile's fingerprint.
  // NOT_FOUND naming where it looked when neither has it.
  static absl::StatusOr<std::unique_ptr<SshSigner>> Open(const TritonProfile& profile, const std::string& agent_socket,
                                                         const std::string& ssh_dir);
  // A signer with the private key `text` (an unencrypted OpenSSH or PEM
  // private key, read from `path`) whose public half is `pub`.
  // INVALID_ARGUMENT naming `path` when it cannot be used (encrypted: the fix
  // is ssh-agent).
  static absl::StatusOr<std::unique_ptr<SshSigner>> FromPrivateKey(const std::string& text, const std::string& pub,
                                                                   const TritonProfile& profile,
                                                                   const std::string& path);
  // The keyId: "/ACCOUNT/keys/MD5" or "/ACCOUNT/users/USER/keys/MD5".
  const std::string& key_id() const { return key_id_; }
  // Where the key is: "ssh-agent" or the key file.
  const std::string& source() const { return source_; }
  // {algorithm ("rsa-sha256", "ecdsa-sha256", "ed25519-sha512"), base64 signature}.
  virtual absl::StatusOr<std::pair<std::string, std::string>> Sign(absl::string_view data) = 0;
  // The Authorization header for `data` signed over `headers` ("date
  // (request-target) x-mariposa-nonce").
  absl::StatusOr<std::string> Authorization(absl::string_view data, absl::string_view headers);

 protected:
  std::string key_id_, source_;
};

}  // namespace mariposa::auth

#endif  // MARIPOSA_AUTH_SSH_SIGNER_H_
