// A manifest in YAML (projects/manifest.h ParseManifest), checked by
// manifest_check.h.
#include <cstdint>

#include "fuzz/manifest_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mariposa::fuzz::CheckManifest(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
