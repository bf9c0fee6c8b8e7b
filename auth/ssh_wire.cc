#include "auth/ssh_wire.h"

namespace mariposa::auth::ssh_wire {

bool TakeU32(absl::string_view* in, uint32_t* v) {
  if (in->size() < 4) return false;
  *v = (uint32_t(uint8_t((*in)[0])) << 24) | (uint32_t(uint8_t((*in)[1])) << 16) | (uint32_t(uint8_t((*in)[2])) << 8) |
       uint32_t(uint8_t((*in)[3]));
  in->remove_prefix(4);
  return true;
}

bool TakeString(absl::string_view* in, absl::string_view* out) {
  absl::string_view rest = *in;
  uint32_t n = 0;
  if (!TakeU32(&rest, &n) || n > rest.size()) return false;
  *out = rest.substr(0, n);
  rest.remove_prefix(n);
  *in = rest;
  return true;
}

void PutU32(std::string* out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out->push_back(char((v >> s) & 0xff));
}

void PutString(std::string* out, absl::string_view s) {
  PutU32(out, s.size());
  out->append(s.data(), s.size());
}

const char* EcGroup(absl::string_view curve) {
  if (curve == "nistp256") return "prime256v1";
  if (curve == "nistp384") return "secp384r1";
  if (curve == "nistp521") return "secp521r1";
  return nullptr;
}

EVP_PKEY* KeyFromParams(const char* kind, OSSL_PARAM_BLD* bld, int selection) {
  EVP_PKEY* out = nullptr;
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, kind, nullptr);
  if (params == nullptr || ctx == nullptr || EVP_PKEY_fromdata_init(ctx) != 1 ||
      EVP_PKEY_fromdata(ctx, &out, selection, params) != 1) {
    out = nullptr;
  }
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  return out;
}

}  // namespace mariposa::auth::ssh_wire
