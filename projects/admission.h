// Admission of a new task against the tasks already queued or active in the
// same project: the concurrency table of QUEUE.md, scope overlap, and the
// freeze rules. Pure; thread-safe. The store applies them inside the
// transaction that adds a task (ProjectStore::AddTask with a TaskAdmitter).
#ifndef MARIPOSA_PROJECTS_ADMISSION_H_
#define MARIPOSA_PROJECTS_ADMISSION_H_

#include <set>
#include <string>
#include <vector>

namespace mariposa {

enum class TaskKind { kStart, kStop, kScale, kReprovision, kFreeze, kRun };

struct TaskInfo {
  std::string uuid;
  TaskKind kind;
  // The services the task covers; empty = the whole project (a deployment
  // group is given as its services).
  std::set<std::string> services;
  bool automatic = false;       // origin auto (health, drift, server-down) vs user
  std::string auto_kind;        // for automatic tasks: replace-unhealthy, scale, reprovision, agent-rollout
  bool thaw = false;            // a user command given with --thaw
  // For freezes: who, since when, why, and the --only kinds ("" = all).
  std::string frozen_by, frozen_since, reason;
  std::set<std::string> only;
};

enum class Verdict { kAccept, kReject };

struct Admission {
  Verdict verdict = Verdict::kAccept;
  std::string message;                 // for a rejection: which task blocks and how to proceed
  std::vector<std::string> terminate;  // tasks to terminate before the new one runs
  std::vector<std::string> wait_for;   // tasks the new one waits for (FIFO)
};

// True when two scopes share a service (a whole-project scope overlaps all).
bool Overlaps(const std::set<std::string>& a, const std::set<std::string>& b);

const char* KindName(TaskKind k);

// Decides what happens when `incoming` is added while `existing` (queued or
// active tasks of the project) run. Rejections name the blocking task.
Admission Admit(const std::vector<TaskInfo>& existing, const TaskInfo& incoming);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_ADMISSION_H_
