// VMAPI VM objects read straight from the answer's text into triton::Vm,
// without building a JSON tree: a ListVms page is 1,000 VMs (about 1 MB),
// and 100,000 instances are listed in 100 pages on every full observation.
#ifndef MARIPOSA_CONVERGENCE_TRITON_VM_JSON_H_
#define MARIPOSA_CONVERGENCE_TRITON_VM_JSON_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "convergence/triton/clients.h"

namespace mariposa::triton {

// A page of ListVms (a JSON array of VM objects), appended to `out`;
// returns how many VMs the page held. Fields Mariposa does not use are
// skipped; tag and metadata values that are not strings are kept as their
// JSON text; `image_uuid` falls back to the first disk's (HVM brands).
// DataLoss when the text is not JSON or not an array of objects.
// A JSON number as an int64: truncated toward zero, held at int64's bounds
// (a float beyond them, or an unsigned beyond its maximum, is not undefined
// behaviour here), NaN 0.
int64_t SaturatingInt64(double v);
int64_t SaturatingInt64(uint64_t v);

absl::StatusOr<size_t> ParseVmPage(absl::string_view text, std::vector<Vm>* out);

// One VM object (GetVm).
absl::StatusOr<Vm> ParseVm(absl::string_view text);

}  // namespace mariposa::triton

#endif  // MARIPOSA_CONVERGENCE_TRITON_VM_JSON_H_
