// What every manifest input must give (the manifest fuzz targets): accepted
// with no errors, its canonical form accepted again with the same hash and
// compiled, under one hash for every data center it lists; or refused with at most Limits::kMaxErrorsShown located errors.
#ifndef MARIPOSA_FUZZ_MANIFEST_CHECK_H_
#define MARIPOSA_FUZZ_MANIFEST_CHECK_H_

#include <cstdio>
#include <string>

#include "projects/limits.h"
#include "projects/manifest.h"

namespace mariposa::fuzz {

// Says which promise broke, then stops (libFuzzer keeps the input).
[[noreturn]] inline void Broken(const std::string& what) {
  std::fprintf(stderr, "manifest check: %s\n", what.c_str());
  __builtin_trap();
}

inline void CheckManifest(const std::string& text) {
  ParseOptions o;
  o.filename = "fuzz.yaml";
  ParseResult r = ParseManifest(text, o);
  if (r.manifest) {
    if (!r.errors.empty()) Broken("accepted with errors");
    std::string canonical = CanonicalYaml(*r.manifest);
    ParseResult again = ParseManifest(canonical, o);
    if (!again.manifest) {
      Broken("the canonical form is refused: " + (again.errors.empty() ? "" : again.errors[0].ToString()) + "\n" +
             canonical);
    }
    if (CanonicalHash(*again.manifest) != CanonicalHash(*r.manifest)) Broken("the canonical form hashes apart:\n" + canonical);
    const std::string hash = Compile(*r.manifest).hash;
    // Every data center stores the same document (issue 52).
    for (const auto& dc : r.manifest->datacenters) {
      if (Compile(*r.manifest, dc.name).hash != hash) Broken("data center " + dc.name + " compiles another hash");
    }
    return;
  }
  if (r.errors.empty() || r.errors.size() > static_cast<size_t>(Limits::kMaxErrorsShown)) {
    Broken("refused with " + std::to_string(r.errors.size()) + " errors");
  }
  for (const auto& e : r.errors) {
    if (e.line < 1 || e.column < 1 || e.message.empty()) Broken("an error not located: " + e.ToString());
  }
}

}  // namespace mariposa::fuzz

#endif  // MARIPOSA_FUZZ_MANIFEST_CHECK_H_
