// VMAPI's answers: a page of VMs, one VM, a job and a job reference
// (convergence/triton/vm_json.h, triton_json.h).
#include <vector>

#include "convergence/decide/decide.h"
#include "convergence/triton/triton_json.h"
#include "convergence/triton/vm_json.h"
#include "fuzz/triton_json_fuzz.h"

namespace {
void Read(const std::string& body) {
  using namespace mariposa::triton;
  std::vector<Vm> vms;
  auto n = ParseVmPage(body, &vms);
  if (n.ok() && *n != vms.size()) __builtin_trap();
  // Mariposa's discovery hold, as any VM's internal_metadata may carry it.
  for (const Vm& vm : vms) {
    auto hold = vm.internal_metadata.find("mariposa:discovery");
    if (hold == vm.internal_metadata.end()) continue;
    auto h = mariposa::convergence::ParseDiscoveryHold(hold->second);
    if (!h && !hold->second.empty()) __builtin_trap();  // a value is a hold, readable or not
  }
  (void)ParseVm(body);
  (void)ParseJob(body, "GetJob");
  auto ref = ParseJobRef(body, {{"workflow-api", "http://127.0.0.1:1"}}, "CreateVm");
  if (ref.ok() && ref->job_uuid.empty()) __builtin_trap();
}
}  // namespace

TRITON_FUZZ(Read)
