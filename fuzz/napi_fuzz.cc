// NAPI's answers: networks and pools, fabric VLANs, fabric networks.
#include "convergence/triton/triton_json.h"
#include "fuzz/triton_json_fuzz.h"

namespace {
void Read(const std::string& body) {
  using namespace mariposa::triton;
  auto pools = ParseNetworks(body, true, "ListNetworkPools");
  if (pools.ok()) {
    for (const Network& n : *pools) {
      if (!n.pool) __builtin_trap();
    }
  }
  (void)ParseNetworks(body, false, "ListNetworks");
  (void)ParseFabricVlans(body, "ListFabricVLANs");
  (void)ParseFabricNetworks(body, "ListNetworks");
  (void)ParseFabricNetwork(body, "CreateFabricNetwork");
}
}  // namespace

TRITON_FUZZ(Read)
