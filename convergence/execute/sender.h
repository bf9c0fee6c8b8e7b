// The send step of a sync: one sync's requests to Triton, built, sent in
// dependency waves while this node holds the project's lease, counted and
// recorded (convergence/execute/send.cc has the steps). The Reconciler owns
// one; it reads Triton through the clients it is given and asks the
// Reconciler only to note an API's health and that IMGAPI changed.
#ifndef MARIPOSA_CONVERGENCE_EXECUTE_SENDER_H_
#define MARIPOSA_CONVERGENCE_EXECUTE_SENDER_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "convergence/decide/decide.h"
#include "convergence/decide/placement.h"
#include "convergence/triton/clients.h"
#include "projects/store.h"

namespace mariposa::convergence {

struct ReconcilerOptions;
struct SyncResult;

class Sender {
 public:
  struct Hooks {
    std::function<void(const std::string& api, const absl::Status& st)> note_api;  // an API answered (or not)
    std::function<void()> images_changed;                                        // IMGAPI holds a new image
  };
  // All must outlive the sender; `options` is the Reconciler's.
  Sender(ProjectStore* store, triton::VmapiClient* vmapi, triton::ImgapiClient* imgapi, const Clock* clock,
         const ReconcilerOptions* options, Hooks hooks)
      : store_(store), vmapi_(vmapi), imgapi_(imgapi), clock_(clock), options_(*options), hooks_(std::move(hooks)) {}

  // Builds, sends (in dependency waves) and records the requests of
  // `steps`, `installs` and `imports` (tasks resolved); refusals are counted
  // into `memory` at once. Returns the jobs sent. When any was sent, the
  // `events` given and those of what was sent are written with the jobs in
  // one commit and `events` is emptied (left as they are, with the new ones
  // after, when the store refused that write); events added after it (the
  // refusals') are the caller's to write.
  //
  // With `record_later` (the pump's), that commit is not made here: it is
  // handed back as a call the caller runs when it chooses (on another
  // thread, while it sends more), `events` is emptied all the same, and
  // the call writes them alone when the store refuses the jobs. Its status
  // is the jobs' write's.
  std::vector<JobRecord> Send(const Snapshot& s, const std::vector<Step>& steps,
                              const std::vector<AgentInstall>& installs, const std::vector<ImageImport>& imports,
                              const std::vector<AgentUninstall>& uninstalls,
                              std::map<std::string, ServiceMemory>* memory, SyncResult* r,
                              std::vector<EventRecord>* events, std::vector<Problem>* problems,
                              std::function<absl::Status()>* record_later = nullptr);

  // What VMAPI is asked to make of one instance of `g` (a create, or the
  // update before an in-place reprovision).
  absl::Status InstanceRequest(const Snapshot& s, const ServiceGoalSpec& g, const std::string& alias,
                               const std::string& uuid, triton::CreateVmRequest* req,
                               std::vector<PlacementRuleText>* rules) const;

 private:
  struct Request {
    JobRecord job;
    std::function<absl::StatusOr<triton::JobRef>()> call;
    int wave = 0;
    absl::StatusOr<triton::JobRef> result = absl::UnknownError("not sent");
    bool attempted = false;  // false: held back (the lease moved), nothing to count
  };
  struct Outbox {
    std::vector<Request> requests;
    std::vector<FinishedJob> refused;  // refused outright: counted like failed jobs
    int waves = 1;
    // Placement candidates (only when a create has rules), the instances
    // the steps name, and this step's creates (uuid -> wave).
    std::vector<PlacementCandidate> candidates;
    absl::flat_hash_map<absl::string_view, const InstanceState*> by_uuid;
    std::map<std::string, int> this_step;
  };
  void VmRequests(const Snapshot& s, const std::vector<Step>& steps, Outbox* out, SyncResult* r);
  JobRecord StepJob(const Snapshot& s, const Step& st) const;
  void VmActionRequest(const Snapshot& s, const Step& st, Outbox* out, SyncResult* r);
  void CreateRequest(const Snapshot& s, const Step& st, Outbox* out, SyncResult* r);
  void OtherRequests(const ProjectRecord& project, const std::vector<AgentInstall>& installs,
                     const std::vector<AgentUninstall>& uninstalls, const std::vector<ImageImport>& imports,
                     Outbox* out);
  void SendWaves(const ProjectRecord& project, Outbox* out, std::vector<Problem>* problems);
  std::vector<JobRecord> CountSent(const ProjectRecord& project, Outbox* out, SyncResult* r,
                                   std::vector<EventRecord>* events);
  void CountRefused(const Snapshot& s, std::vector<FinishedJob> refused, std::map<std::string, ServiceMemory>* memory,
                    std::vector<EventRecord>* events, std::vector<Problem>* problems);
  void NoteApi(const std::string& api, const absl::Status& st) const {
    if (hooks_.note_api) hooks_.note_api(api, st);
  }
  void ImagesChanged() const {
    if (hooks_.images_changed) hooks_.images_changed();
  }

  ProjectStore* store_;
  triton::VmapiClient* vmapi_;
  triton::ImgapiClient* imgapi_;
  const Clock* clock_;
  const ReconcilerOptions& options_;
  Hooks hooks_;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_EXECUTE_SENDER_H_
