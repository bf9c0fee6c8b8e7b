// The Last-Event-ID header of an event stream (gateway/json_mapping.h): an
// accepted one is a non-negative number that prints back as given, without
// leading zeros beyond "0".
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "gateway/json_mapping.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto v = mariposa::gateway::ParseLastEventId(text);
  if (v.ok()) {
    if (*v < 0) __builtin_trap();
    std::string back = absl::StrCat(*v);
    if (text.find_first_not_of('0') != std::string::npos &&
        back != text.substr(text.find_first_not_of('0'))) __builtin_trap();
  }
  return 0;
}
