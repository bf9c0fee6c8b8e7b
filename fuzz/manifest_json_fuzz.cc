// A manifest in JSON: the input is made a JSON object (a leading '{' is
// added when missing, so mutations stay in JSON's flow style), then checked
// by manifest_check.h.
#include <cstdint>

#include "fuzz/manifest_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (text.empty() || text[0] != '{') text.insert(0, "{");
  mariposa::fuzz::CheckManifest(text);
  return 0;
}
