// PAPI's answer: packages.
#include "convergence/triton/triton_json.h"
#include "fuzz/triton_json_fuzz.h"

namespace {
void Read(const std::string& body) { (void)mariposa::triton::ParsePackages(body, "ListPackages"); }
}  // namespace

TRITON_FUZZ(Read)
