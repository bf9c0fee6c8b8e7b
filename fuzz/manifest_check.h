// What every manifest input must give (the manifest fuzz targets): accepted
// with no errors, its canonical form accepted again with the same hash and
// compiled; or refused with at most Limits::kMaxErrorsShown located errors.
#ifndef MARIPOSA_FUZZ_MANIFEST_CHECK_H_
#define MARIPOSA_FUZZ_MANIFEST_CHECK_H_

#include <string>

#include "projects/limits.h"
#include "projects/manifest.h"

namespace mariposa::fuzz {

inline void CheckManifest(const std::string& text) {
  ParseOptions o;
  o.filename = "fuzz.yaml";
  ParseResult r = ParseManifest(text, o);
  if (r.manifest) {
    if (!r.errors.empty()) __builtin_trap();
    ParseResult again = ParseManifest(CanonicalYaml(*r.manifest), o);
    if (!again.manifest || CanonicalHash(*again.manifest) != CanonicalHash(*r.manifest)) __builtin_trap();
    (void)Compile(*r.manifest);
    return;
  }
  if (r.errors.empty() || r.errors.size() > static_cast<size_t>(Limits::kMaxErrorsShown)) __builtin_trap();
  for (const auto& e : r.errors) {
    if (e.line < 1 || e.column < 1 || e.message.empty()) __builtin_trap();
  }
}

}  // namespace mariposa::fuzz

#endif  // MARIPOSA_FUZZ_MANIFEST_CHECK_H_
