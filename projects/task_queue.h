// The task queue on top of the store: admission by QUEUE.md's rules inside
// the store's transaction, and termination (which freezes the same scope, as
// RFD 36 asks). Tasks are run by the convergence engine
// (convergence/reconciler.h). Thread-safe.
#ifndef MARIPOSA_PROJECTS_TASK_QUEUE_H_
#define MARIPOSA_PROJECTS_TASK_QUEUE_H_

#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "projects/manifest.h"
#include "projects/store.h"

namespace mariposa {

// True when `task` is an open freeze that holds `kind` of automatic work
// (replace-unhealthy, scale, reprovision, agent-rollout) for `service`;
// an empty `kind` asks whether the service is frozen at all.
bool FreezeHolds(const TaskRecord& task, const std::string& service, const std::string& kind);

// Project version uuid -> number, for ordering instances by version.
absl::StatusOr<std::map<std::string, int64_t>> VersionNumbers(ProjectStore* store, const std::string& project_uuid);

// The canary of a rollout of `scope` (every service when empty) that was not
// given one: the largest update.canary among those services of `services`
// (a version's records); 0 = all. Used by `mariposa reprovision` without
// --canary and by the rollouts apply and rollback queue, so both stop after
// the canary alike.
int64_t ManifestCanary(const std::vector<ServiceRecord>& services, const std::vector<std::string>& scope);
// The same from a parsed manifest (what apply has in hand: no store read,
// no JSON).
int64_t ManifestCanary(const Manifest& m, const std::vector<std::string>& scope);

// The TaskAdmitter implementing admission.h's rules: FAILED_PRECONDITION
// naming the blocking task, or the tasks to terminate and to wait for.
TaskAdmitter QueueAdmitter();

// QUEUE.md: a user command that changes the goal of `services` (apply,
// scale, rollback) is refused with "frozen since … by …; thaw first" when a
// freeze among `open` covers one of them, unless the user said --thaw; then
// the freezes it ends are returned. Freezes with --only (which suspend only
// kinds of automatic work) do not refuse user commands.
absl::StatusOr<std::vector<std::string>> FreezesInTheWay(const std::vector<TaskRecord>& open,
                                                         const std::set<std::string>& services, bool thaw);

class TaskQueue {
 public:
  // `store` must outlive the queue.
  explicit TaskQueue(ProjectStore* store) : store_(store) {}

  absl::StatusOr<TaskRecord> Add(const TaskRecord& task);
  // Terminates a queued or active task and freezes its scope (same
  // services), recording who and why.
  absl::StatusOr<TaskRecord> Terminate(const std::string& task_uuid, const std::string& actor,
                                       const std::string& reason);

 private:
  ProjectStore* store_;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_TASK_QUEUE_H_
