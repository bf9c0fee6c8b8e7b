// VMAPI's answers: a page of VMs, one VM, a job and a job reference
// (convergence/triton/vm_json.h, triton_json.h).
#include <vector>

#include "convergence/triton/triton_json.h"
#include "convergence/triton/vm_json.h"
#include "fuzz/triton_json_fuzz.h"

namespace {
void Read(const std::string& body) {
  using namespace mariposa::triton;
  std::vector<Vm> vms;
  auto n = ParseVmPage(body, &vms);
  if (n.ok() && *n != vms.size()) __builtin_trap();
  (void)ParseVm(body);
  (void)ParseJob(body, "GetJob");
  auto ref = ParseJobRef(body, {{"workflow-api", "http://127.0.0.1:1"}}, "CreateVm");
  if (ref.ok() && ref->job_uuid.empty()) __builtin_trap();
}
}  // namespace

TRITON_FUZZ(Read)
