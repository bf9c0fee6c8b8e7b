// One answer body for the Triton fuzz targets.
#ifndef MARIPOSA_FUZZ_TRITON_JSON_FUZZ_H_
#define MARIPOSA_FUZZ_TRITON_JSON_FUZZ_H_

#include <cstdint>
#include <string>

#define TRITON_FUZZ(body_fn)                                                       \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {        \
    std::string body(reinterpret_cast<const char*>(data), size);                   \
    body_fn(body);                                                                 \
    return 0;                                                                      \
  }

#endif  // MARIPOSA_FUZZ_TRITON_JSON_FUZZ_H_
