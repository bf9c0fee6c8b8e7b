#include "auth/sealer.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/ids.h"

namespace mariposa::auth {
namespace {

constexpr absl::string_view kPrefix = "sealed:v1:";
constexpr int kNonce = 12, kTag = 16, kKey = 32;

std::string KeyId(const std::string& raw) { return Sha256Hex(raw).substr(0, 12); }

absl::Status WriteKeyFile(const std::string& file, const std::string& raw) {
  std::string tmp = file + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::PermissionDeniedError(absl::StrCat("cannot write key file ", tmp, ": ", std::strerror(errno)));
  std::string text = absl::StrCat(absl::BytesToHexString(raw), "\n");
  bool ok = fchmod(fd, 0600) == 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), file.c_str()) != 0) {
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write key file ", file, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

std::string RandomHex(int bytes) {
  std::vector<unsigned char> b(bytes);
  if (RAND_bytes(b.data(), bytes) != 1) abort();  // no randomness: nothing is safe to do
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

absl::Status Sealer::LoadKey(const std::string& file, bool* found, std::string* id) {
  *found = false;
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::PermissionDeniedError(absl::StrCat("cannot read key file ", file, ": ", std::strerror(errno)));
  }
  struct stat st;
  char buf[256];
  ssize_t n = fstat(fd, &st) == 0 ? read(fd, buf, sizeof(buf)) : -1;
  close(fd);
  if (n < 0) return absl::InternalError(absl::StrCat("cannot read key file ", file, ": ", std::strerror(errno)));
  if ((st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "key file ", file, " has mode ", absl::StrFormat("%04o", st.st_mode & 07777),
        "; others may read the key that seals every secret. Fix: chmod 600 ", file, " (and check who read it)"));
  }
  std::string hex(absl::StripAsciiWhitespace(absl::string_view(buf, n)));
  if (hex.size() != 2 * kKey || !std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(c); })) {
    return absl::DataLossError(absl::StrCat("key file ", file, " does not hold 64 hex digits (a 256-bit key)"));
  }
  std::string raw = absl::HexStringToBytes(hex);
  *id = KeyId(raw);
  keys_[*id] = raw;
  *found = true;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Sealer>> Sealer::Open(const std::string& path) {
  std::unique_ptr<Sealer> s(new Sealer());
  s->path_ = path;
  bool found = false;
  if (auto st = s->LoadKey(path, &found, &s->main_id_); !st.ok()) return st;
  if (!found) {
    std::string raw = absl::HexStringToBytes(RandomHex(kKey));
    if (auto st = WriteKeyFile(path, raw); !st.ok()) return st;
    s->main_id_ = KeyId(raw);
    s->keys_[s->main_id_] = raw;
  }
  bool next = false;
  if (auto st = s->LoadKey(path + ".next", &next, &s->next_id_); !st.ok()) return st;
  if (!next) s->next_id_.clear();
  // Retired keys: PATH.KEYID.retired, for stores restored from old backups.
  std::string dir = path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
  std::string base = path.substr(dir.empty() ? 0 : dir.size() + 1);
  if (DIR* d = opendir(dir.empty() ? "." : dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (absl::StartsWith(name, base + ".") && absl::EndsWith(name, ".retired")) {
        bool ok = false;
        std::string id;
        if (auto st = s->LoadKey(dir.empty() ? name : dir + "/" + name, &ok, &id); !st.ok()) {
          closedir(d);
          return st;
        }
      }
    }
    closedir(d);
  }
  s->current_ = s->next_id_.empty() ? s->main_id_ : s->next_id_;
  return s;
}

std::string Sealer::Seal(absl::string_view plain, absl::string_view place) const {
  absl::ReaderMutexLock l(&mu_);
  const std::string& key = keys_.at(current_);
  std::string nonce = absl::HexStringToBytes(RandomHex(kNonce));
  std::string out(plain.size() + kTag, '\0');
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int len = 0, total = 0;
  bool ok = ctx && EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, kNonce, nullptr) == 1 &&
            EVP_EncryptInit_ex(ctx, nullptr, nullptr, reinterpret_cast<const unsigned char*>(key.data()),
                               reinterpret_cast<const unsigned char*>(nonce.data())) == 1 &&
            EVP_EncryptUpdate(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(place.data()),
                              static_cast<int>(place.size())) == 1 &&
            EVP_EncryptUpdate(ctx, reinterpret_cast<unsigned char*>(out.data()), &len,
                              reinterpret_cast<const unsigned char*>(plain.data()), static_cast<int>(plain.size())) == 1;
  total = len;
  ok = ok && EVP_EncryptFinal_ex(ctx, reinterpret_cast<unsigned char*>(out.data()) + total, &len) == 1;
  total += len;
  ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, kTag, out.data() + total) == 1;
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) abort();  // AES-GCM with a valid key does not fail; never store plain text instead
  out.resize(total + kTag);
  return absl::StrCat(kPrefix, current_, ":", absl::Base64Escape(nonce + out));
}

std::string Sealer::KeyIdOf(absl::string_view value) {
  if (!absl::StartsWith(value, kPrefix)) return "";
  value.remove_prefix(kPrefix.size());
  size_t colon = value.find(':');
  return colon == absl::string_view::npos ? "" : std::string(value.substr(0, colon));
}

bool Sealer::SealedWithCurrentKey(absl::string_view value) const {
  absl::ReaderMutexLock l(&mu_);
  return KeyIdOf(value) == current_;
}

absl::StatusOr<std::string> Sealer::Unseal(absl::string_view sealed, absl::string_view place) const {
  std::string id = KeyIdOf(sealed);
  if (id.empty()) return absl::DataLossError("a secret in the store is not sealed");
  absl::ReaderMutexLock l(&mu_);
  auto k = keys_.find(id);
  if (k == keys_.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a secret is sealed with key ", id, ", which is not in ", path_,
        " (nor PATH.next or a PATH.ID.retired file); restore that key file or set the secret again"));
  }
  std::string blob;
  if (!absl::Base64Unescape(sealed.substr(kPrefix.size() + id.size() + 1), &blob) ||
      blob.size() < static_cast<size_t>(kNonce + kTag)) {
    return absl::DataLossError("a sealed secret is damaged (bad encoding)");
  }
  std::string nonce = blob.substr(0, kNonce);
  std::string tag = blob.substr(blob.size() - kTag);
  std::string ct = blob.substr(kNonce, blob.size() - kNonce - kTag);
  std::string out(ct.size(), '\0');
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int len = 0;
  bool ok = ctx && EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, kNonce, nullptr) == 1 &&
            EVP_DecryptInit_ex(ctx, nullptr, nullptr, reinterpret_cast<const unsigned char*>(k->second.data()),
                               reinterpret_cast<const unsigned char*>(nonce.data())) == 1 &&
            EVP_DecryptUpdate(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(place.data()),
                              static_cast<int>(place.size())) == 1 &&
            EVP_DecryptUpdate(ctx, reinterpret_cast<unsigned char*>(out.data()), &len,
                              reinterpret_cast<const unsigned char*>(ct.data()), static_cast<int>(ct.size())) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, kTag, tag.data()) == 1;
  int fin = 0;
  ok = ok && EVP_DecryptFinal_ex(ctx, reinterpret_cast<unsigned char*>(out.data()) + len, &fin) == 1;
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) return absl::DataLossError("a sealed secret does not open: it was changed or moved to another key");
  out.resize(len + fin);
  return out;
}

absl::Status Sealer::BeginRotation() {
  absl::MutexLock l(&mu_);
  if (!next_id_.empty()) return absl::OkStatus();  // an unfinished rotation: finish that one
  std::string raw = absl::HexStringToBytes(RandomHex(kKey));
  if (auto st = WriteKeyFile(path_ + ".next", raw); !st.ok()) return st;
  next_id_ = KeyId(raw);
  keys_[next_id_] = raw;
  current_ = next_id_;
  return absl::OkStatus();
}

absl::Status Sealer::FinishRotation() {
  absl::MutexLock l(&mu_);
  if (next_id_.empty()) return absl::OkStatus();
  std::string retired = absl::StrCat(path_, ".", main_id_, ".retired");
  if (link(path_.c_str(), retired.c_str()) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot keep the old key as ", retired, ": ", std::strerror(errno)));
  }
  if (rename((path_ + ".next").c_str(), path_.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot move ", path_, ".next to ", path_, ": ", std::strerror(errno)));
  }
  main_id_ = next_id_;
  next_id_.clear();
  current_ = main_id_;
  return absl::OkStatus();
}

}  // namespace mariposa::auth
