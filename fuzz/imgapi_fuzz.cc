// IMGAPI's answers: images and an image.
#include "convergence/triton/triton_json.h"
#include "fuzz/triton_json_fuzz.h"

namespace {
void Read(const std::string& body) {
  using namespace mariposa::triton;
  (void)ParseImages(body, "ListImages");
  (void)ParseImage(body, "GetImage");
}
}  // namespace

TRITON_FUZZ(Read)
