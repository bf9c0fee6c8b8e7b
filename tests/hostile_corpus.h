// A corpus of hostile input for mariposad: generated and hand-written
// manifests (recursive aliases, alias bombs, deep nesting, huge key counts,
// oversized values, control characters, invalid UTF-8, out-of-range numbers,
// random bytes and truncations) and hostile RPC arguments. Deterministic for
// a seed. Used by the hostile-input end-to-end test and the fuzz tests.
#ifndef MARIPOSA_TESTS_HOSTILE_CORPUS_H_
#define MARIPOSA_TESTS_HOSTILE_CORPUS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace mariposa::testing {

struct HostileManifest {
  std::string name;   // class and variant, e.g. "alias-bomb-7"
  std::string text;
  // A substring the error must contain; empty when the manifest is valid
  // (it must then be accepted).
  std::string expect_error;
};

// At least 100 entries covering every class above; `seed` varies the random
// ones.
std::vector<HostileManifest> HostileManifests(uint32_t seed);

// A valid manifest for project `project` with `services` services.
std::string ValidManifest(const std::string& project, int services);

}  // namespace mariposa::testing

#endif  // MARIPOSA_TESTS_HOSTILE_CORPUS_H_
