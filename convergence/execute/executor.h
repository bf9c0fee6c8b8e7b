// The Executor: what one sync's Decision does (execute.cc), in order —
// records finished jobs, automatic rollbacks, task state changes and new
// automatic tasks; sends the steps whose task the store admitted (through
// the Sender) and the changes to what the project owns outside VMAPI
// (through OwnedObjects); keeps the backlog the pump may send, the
// controller's memory and the problems in the project's state; tells the
// health coordinator its targets and the metrics their counts.
#ifndef MARIPOSA_CONVERGENCE_EXECUTE_EXECUTOR_H_
#define MARIPOSA_CONVERGENCE_EXECUTE_EXECUTOR_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "convergence/decide/decide.h"
#include "convergence/execute/sender.h"
#include "convergence/informer/vm_cache.h"
#include "convergence/owned/owned_objects.h"
#include "convergence/project_state.h"
#include "projects/store.h"

namespace mariposa::convergence {

struct ReconcilerOptions;
struct SyncResult;

class Executor {
 public:
  // What the Reconciler shares with it, under the Reconciler's lock.
  struct Shared {
    absl::Mutex* mu;                                // guards projects
    std::map<std::string, ProjectState>* projects;  // by uuid
  };
  // All collaborators must outlive it.
  Executor(ProjectStore* store, const Clock* clock, const ReconcilerOptions* options, Sender* sender,
           OwnedObjects* owned, VmCache* vms, Shared shared);

  // `changes` is the Reconciler's count of wake-ups when the sync began.
  SyncResult Execute(const Snapshot& s, Decision d, uint64_t changes);
  // Keeps `o`'s event as pending (memory_codec.h's PendingChange) before its
  // change is sent to `api`'s API; an error when the store cannot keep it
  // (the change is then not sent).
  absl::Status Intend(const ProjectRecord& p, const char* api, const OwnedObjects::ChangeOutcome& o);
  // The kept memory of project `p` (memory_codec.h; recalled by the
  // Gatherer) written when it changes (a failed write is one of `problems`,
  // and tried again at the next sync).
  void KeepMemory(const ProjectRecord& p, const std::map<std::string, ServiceMemory>& memory,
                  std::vector<Problem>* problems);

 private:
  struct NewTasks {
    std::map<std::string, std::string> uuids;  // "new:<service>" -> uuid, or "" when not added
    // A step's task: "new:<service>" becomes the added task's uuid; false
    // when the store did not add it now (the step is not sent).
    bool Resolve(std::string* task) const;
  };
  void AutoRollbacks(const ProjectRecord& p, const std::vector<Rollback>& rollbacks, std::vector<EventRecord>* events,
                     std::vector<Problem>* problems);
  void ChangeTasks(const ProjectRecord& p, const std::vector<TaskChange>& changes, std::vector<Problem>* problems);
  NewTasks AddNewTasks(const std::vector<TaskRecord>& tasks);
  void Remember(const Snapshot& s, Decision* d, std::vector<Problem> problems, std::vector<Step> backlog,
                size_t in_flight, uint64_t changes, bool quiet);
  // After a sync's changes: the pending changes of an earlier mariposad
  // whose API now shows nothing left to do get their events (in `events`);
  // Unpend, once the batch is written, forgets all but those still unknown.
  void SettlePending(const Snapshot& s, std::vector<EventRecord>* events);
  void Unpend(const ProjectRecord& p, std::vector<Problem>* problems);
  // Writes the memory with the pending changes when it differs from the kept.
  absl::Status WriteMemory(const ProjectRecord& p, const std::map<std::string, ServiceMemory>& memory);
  void AssignHealth(const Snapshot& s);
  void ServiceMetrics(const Snapshot& s, const Decision& d);
  // Counts the broken instances `d` replaces (by why: failed, stopped,
  // unhealthy, server-down) and the budget and crash-loop episodes in `events`.
  void RecordReplacements(const Snapshot& s, const Decision& d, const std::vector<EventRecord>& events);

  ProjectStore* store_;
  const Clock* clock_;
  const ReconcilerOptions& options_;
  Sender& sender_;
  OwnedObjects& owned_;
  VmCache& vms_;
  absl::Mutex& mu_;
  std::map<std::string, ProjectState>& projects_;
};

// Whether this node may still act on the project of the sync that runs
// (several nodes: it holds the fence the sync runs under; one node: always).
bool HoldsFence(ProjectStore* store);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_EXECUTE_EXECUTOR_H_
