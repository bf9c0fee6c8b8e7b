// Secrets sealed at rest: AES-256-GCM (OpenSSL EVP) with a 256-bit key kept
// in its own file (0600), apart from the store. A sealed value reads
// "sealed:v1:KEYID:BASE64(nonce | ciphertext | tag)"; the associated data
// binds it to its place (project and key), so a value copied to another row
// does not open.
//
// Rotation without a window where a secret is unreadable:
//   1. a new key is written to PATH.next (0600);
//   2. every secret is sealed again with it, in one store transaction;
//   3. PATH is kept as PATH.KEYID.retired (old backups need it) and PATH.next
//      becomes PATH.
// A crash between steps leaves PATH.next; the next start seals with it and
// finishes the rotation (Sealer::Open + FinishRotation).
#ifndef MARIPOSA_AUTH_SEALER_H_
#define MARIPOSA_AUTH_SEALER_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "projects/store.h"

namespace mariposa::auth {

class Sealer : public SecretCodec {
 public:
  // Loads the key at `path` (and PATH.next, and retired keys beside it),
  // creating a new random key with mode 0600 when none exists. Refuses a
  // key file that others may read or that is not 64 hex digits.
  static absl::StatusOr<std::unique_ptr<Sealer>> Open(const std::string& path);

  std::string Seal(absl::string_view plain, absl::string_view place) const override;
  absl::StatusOr<std::string> Unseal(absl::string_view sealed, absl::string_view place) const override;
  bool SealedWithCurrentKey(absl::string_view value) const override;

  // The id of the key new secrets are sealed with.
  std::string current_key_id() const {
    absl::ReaderMutexLock l(&mu_);
    return current_;
  }
  const std::string& path() const { return path_; }
  // Whether it can open values sealed with key `id` (current, next or retired).
  bool HasKey(const std::string& id) const {
    absl::ReaderMutexLock l(&mu_);
    return keys_.count(id) > 0;
  }


  // Step 1 of a rotation: a new key in PATH.next, used from now on.
  absl::Status BeginRotation();
  // Step 3: PATH.next becomes PATH; the old key is kept as a retired key.
  absl::Status FinishRotation();
  // The key id a sealed value names ("" if it is not sealed).
  static std::string KeyIdOf(absl::string_view value);

 private:
  Sealer() = default;
  absl::Status LoadKey(const std::string& file, bool* found, std::string* id);

  std::string path_;
  mutable absl::Mutex mu_;  // Seal/Unseal read while a rotation writes
  std::map<std::string, std::string> keys_;  // id -> 32 raw bytes
  std::string main_id_;
  std::string next_id_;
  std::string current_;
};

// `bytes` random bytes (OpenSSL RAND_bytes) as hex digits.
std::string RandomHex(int bytes);

}  // namespace mariposa::auth

#endif  // MARIPOSA_AUTH_SEALER_H_
