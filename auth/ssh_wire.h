// SSH's wire encoding (RFC 4251: uint32, string) and the making of an
// OpenSSL key from its parts: what the server's check of a public key
// (http_signature.cc) and the client's private keys and ssh-agent
// (ssh_signer.cc) share.
#ifndef MARIPOSA_AUTH_SSH_WIRE_H_
#define MARIPOSA_AUTH_SSH_WIRE_H_

#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace mariposa::auth::ssh_wire {

// One uint32 / string off the front of `in`; false (nothing taken) when
// `in` is too short.
bool TakeU32(absl::string_view* in, uint32_t* v);
bool TakeString(absl::string_view* in, absl::string_view* out);
void PutU32(std::string* out, uint32_t v);
void PutString(std::string* out, absl::string_view s);

// OpenSSL's group of an SSH ECDSA curve ("nistp256" -> "prime256v1"), or
// nullptr for another.
const char* EcGroup(absl::string_view curve);

// The key `bld` describes ("RSA" or "EC"; `selection` EVP_PKEY_PUBLIC_KEY or
// EVP_PKEY_KEYPAIR), or null when OpenSSL will not make it. `bld` stays the
// caller's.
EVP_PKEY* KeyFromParams(const char* kind, OSSL_PARAM_BLD* bld, int selection);

}  // namespace mariposa::auth::ssh_wire

#endif  // MARIPOSA_AUTH_SSH_WIRE_H_
