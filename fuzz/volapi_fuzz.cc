// VOLAPI's answer: volumes; none in state "deleted" is kept.
#include "convergence/triton/triton_json.h"
#include "fuzz/triton_json_fuzz.h"

namespace {
void Read(const std::string& body) {
  auto volumes = mariposa::triton::ParseVolumes(body, "ListVolumes");
  if (volumes.ok()) {
    for (const auto& v : *volumes) {
      if (v.state == "deleted") __builtin_trap();
    }
  }
  auto sizes = mariposa::triton::ParseVolumeSizes(body, "ListVolumeSizes");
  if (sizes.ok()) {
    for (int64_t s : *sizes) {
      if (s <= 0) __builtin_trap();
    }
  }
}
}  // namespace

TRITON_FUZZ(Read)
