// The answers of Triton's APIs read into Mariposa's types: pure functions of
// the body, for the HTTP clients (http_clients.cc) and their fuzz targets
// (fuzz/). None throws or trusts a field's type: a field of the wrong type
// reads as absent, and an answer that is not the JSON expected is DATA_LOSS
// naming the call. VMs are read by vm_json.h.
#ifndef MARIPOSA_CONVERGENCE_TRITON_TRITON_JSON_H_
#define MARIPOSA_CONVERGENCE_TRITON_TRITON_JSON_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "convergence/triton/clients.h"

namespace mariposa::triton {

// VMAPI and IMGAPI jobs, and the job reference of a VMAPI change
// (`headers` lower-cased: workflow-api names the job's workflow API).
absl::StatusOr<Job> ParseJob(absl::string_view body, absl::string_view what);
absl::StatusOr<JobRef> ParseJobRef(absl::string_view body, const std::map<std::string, std::string>& headers,
                                   absl::string_view what);
// CNAPI
absl::StatusOr<std::vector<Server>> ParseServers(absl::string_view body, absl::string_view what);
absl::StatusOr<Server> ParseServer(absl::string_view body, absl::string_view what);
absl::StatusOr<Task> ParseTask(absl::string_view body, absl::string_view what);
// The "id" of a CNAPI answer that starts a task.
absl::StatusOr<std::string> ParseTaskId(absl::string_view body, absl::string_view what);
// IMGAPI
absl::StatusOr<std::vector<Image>> ParseImages(absl::string_view body, absl::string_view what);
absl::StatusOr<Image> ParseImage(absl::string_view body, absl::string_view what);
// PAPI
absl::StatusOr<std::vector<Package>> ParsePackages(absl::string_view body, absl::string_view what);
// NAPI: networks (or network pools), fabric VLANs and fabric networks.
absl::StatusOr<std::vector<Network>> ParseNetworks(absl::string_view body, bool pools, absl::string_view what);
absl::StatusOr<std::vector<FabricVlan>> ParseFabricVlans(absl::string_view body, absl::string_view what);
absl::StatusOr<std::vector<FabricNetwork>> ParseFabricNetworks(absl::string_view body, absl::string_view what);
absl::StatusOr<FabricNetwork> ParseFabricNetwork(absl::string_view body, absl::string_view what);
// FWAPI
absl::StatusOr<std::vector<FwRule>> ParseFwRules(absl::string_view body, absl::string_view what);
// VOLAPI (volumes in state "deleted" left out), and the sizes (MiB) it
// offers for tritonnfs volumes (GET /volumesizes; entries of another type or
// without a positive size left out).
absl::StatusOr<std::vector<Volume>> ParseVolumes(absl::string_view body, absl::string_view what);
absl::StatusOr<std::vector<int64_t>> ParseVolumeSizes(absl::string_view body, absl::string_view what);

}  // namespace mariposa::triton

#endif  // MARIPOSA_CONVERGENCE_TRITON_TRITON_JSON_H_
