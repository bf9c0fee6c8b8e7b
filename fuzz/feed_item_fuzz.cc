// An item of VMAPI's change feed and the bootstrap answer
// (convergence/triton/vm_feed.h).
#include <cstdint>
#include <string>

#include "convergence/triton/vm_feed.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto item = mariposa::triton::ParseFeedItem(text);
  (void)item;
  (void)mariposa::triton::CheckBootstrap(text);
  return 0;
}
