// What the reconciler's files (reconciler.cc, gather.cc, send.cc) share:
// RunParallel (common/parallel.h), and a store write that failed as a
// problem of the sync.
#ifndef MARIPOSA_CONVERGENCE_SYNC_HELPERS_H_
#define MARIPOSA_CONVERGENCE_SYNC_HELPERS_H_

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/log.h"
#include "common/parallel.h"
#include "convergence/decide/decide.h"

namespace mariposa::convergence {

// RunParallel: common/parallel.h (threads kept for the process's life).
using ::mariposa::RunParallel;

// What a failed write of the jobs sent is named in its problem.
inline constexpr absl::string_view kJobsRecord = "jobs in flight, their tasks' progress and their events";

// A store write that failed, as a problem of the project's sync.
inline void StoreError(const std::string& project, std::vector<Problem>* problems, absl::string_view what,
                const absl::Status& st) {
  if (st.ok() || absl::IsFailedPrecondition(st)) return;
  LogWarn("store write failed", {{"project", project}, {"what", std::string(what)}, {"error", st.ToString()}});
  problems->push_back({"store", "", absl::StrCat("cannot record ", what), st.ToString(),
                       "check the data directory's disk (space, permissions) and the daemon log; mariposad retries",
                       "progress is not recorded; work may be repeated until the store accepts writes"});
}

// What of an account's firewall rules, fabric networks and volumes the
// project owns (their markers; volumes by name): what a sync reads
// (gather.cc) and what deleting the project must remove (Holdings).
std::vector<OwnedRule> OwnedRules(const std::string& project_uuid, const std::vector<triton::FwRule>& rules);
std::vector<triton::FabricNetwork> OwnedNetworks(const std::string& project_uuid,
                                                 std::vector<triton::FabricNetwork> networks);
std::vector<triton::Volume> OwnedVolumes(const std::string& project_name, std::vector<triton::Volume> volumes);

// Whether the kept listing (`listed`: the job's VM in it, nullptr when it
// has none) already shows what a finished VMAPI job did, as the change feed
// brings it: a create out of provisioning, a deleted VM gone or destroyed,
// a start running, a stop stopped. Such a VM is not read again after its
// job (RefreshEnded); any other job's VM is.
bool ListingShowsJobEnd(const JobRecord& job, const InstanceState* listed);

// Whether a VM's state (from a listing or the change feed) shows that its
// VMAPI job succeeded, so the job need not be asked (one GetJob per create
// less during a mass scale: issue 49): a create's VM running, a deleted VM
// destroyed. Any other state, and every other kind of job, says nothing —
// a failed create is asked for its error.
bool StateShowsJobSucceeded(const JobRecord& job, absl::string_view vm_state);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_SYNC_HELPERS_H_
