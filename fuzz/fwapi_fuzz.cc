// FWAPI's answer: firewall rules.
#include "convergence/triton/triton_json.h"
#include "fuzz/triton_json_fuzz.h"

namespace {
void Read(const std::string& body) { (void)mariposa::triton::ParseFwRules(body, "ListRules"); }
}  // namespace

TRITON_FUZZ(Read)
