// Tasks (QUEUE.md) and the Triton jobs in flight for them. One part of
// ProjectStore (store.h); SqlProjectStore implements it on SQLite and
// PostgreSQL (sql_tasks.cc).
#ifndef MARIPOSA_PROJECTS_TASK_STORE_H_
#define MARIPOSA_PROJECTS_TASK_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "projects/store_records.h"

namespace mariposa {

class TaskStore {
 public:
  virtual ~TaskStore() = default;

  // Tasks. AddTask runs `admit` and writes the outcome in one transaction:
  // the new task (uuid and created_at assigned) and the terminations (those
  // tasks become `terminating`, or `terminated` when still queued or a freeze).
  virtual absl::StatusOr<TaskRecord> AddTask(const TaskRecord& task, const TaskAdmitter& admit) = 0;
  // Queued, active and terminating tasks first, then up to `finished_limit`
  // finished ones, newest first.
  virtual absl::StatusOr<std::vector<TaskRecord>> ListTasks(const std::string& project_uuid, int finished_limit) = 0;
  virtual absl::StatusOr<TaskRecord> GetTask(const std::string& uuid) = 0;
  // Moves a task to `state` (and sets started/finished times and the error
  // as fitting). FAILED_PRECONDITION for a task that already ended.
  virtual absl::StatusOr<TaskRecord> SetTaskState(const std::string& uuid, const std::string& state,
                                                  const std::string& error) = 0;
  virtual absl::Status AddTaskProgress(const std::string& uuid, const TaskProgress& delta) = 0;
  // Pauses an open reprovision task (`note` non-empty: who, when, why) or
  // resumes it (`note` empty), with an event. FAILED_PRECONDITION for a
  // task that ended, is not a rollout, or already is in that state.
  virtual absl::StatusOr<TaskRecord> SetTaskPaused(const std::string& uuid, const std::string& actor,
                                                   const std::string& reason, bool paused) = 0;
  // Every project's queued, active and terminating tasks, oldest first.
  virtual absl::StatusOr<std::vector<TaskRecord>> ListOpenTasks() = 0;
  // Tasks of every project by kind and state.
  virtual absl::StatusOr<std::vector<TaskCount>> CountTasks() = 0;

  // Jobs in flight (JobRecord). RecordJobs writes them in one transaction,
  // with `progress` added to the tasks it names and `events` (what sending
  // them tells: instance.create ...) appended to the event log in the same
  // transaction (a sync that sent a task work is one step of it, recorded
  // with the jobs it sent: one commit per round, not two or three).
  virtual absl::Status RecordJobs(const std::vector<JobRecord>& jobs,
                                  const std::vector<std::pair<std::string, TaskProgress>>& progress,
                                  const std::vector<EventRecord>& events) = 0;
  absl::Status RecordJobs(const std::vector<JobRecord>& jobs) { return RecordJobs(jobs, {}, {}); }
  absl::StatusOr<std::vector<JobRecord>> ListJobs(const std::string& project_uuid) {
    return ListJobsExcept(project_uuid, {});
  }
  // The same without the jobs named in `except` (the pump's, which skips
  // those it saw end: thousands during a scale-up, not worth copying; a
  // hash set, looked up once per job kept).
  virtual absl::StatusOr<std::vector<JobRecord>> ListJobsExcept(const std::string& project_uuid,
                                                                const absl::flat_hash_set<std::string>& except) = 0;
  // Removes each job (job uuid, progress) and adds its progress to its
  // task, if the task is still open, and appends `events` (what their ends
  // tell) to the event log, all in one transaction: no reader sees a job
  // gone without its event, and a crash loses neither. A job already
  // removed is not counted again (OK).
  virtual absl::Status FinishJobs(const std::vector<std::pair<std::string, TaskProgress>>& jobs,
                                  const std::vector<EventRecord>& events = {}) = 0;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_TASK_STORE_H_
