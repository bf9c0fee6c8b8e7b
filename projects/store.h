// ProjectStore: everything mariposad keeps durably, in parts — the goal
// (goal_store.h), the event log (event_log.h), tasks and jobs
// (task_store.h), access (access_store.h) and the controller's own
// (controller_store.h), rollouts across data centers (rollout_store.h)
// — over one connection, so that one transaction can
// span them (a version and its event, a task and its terminations).
// SqlProjectStore (sql_store.h) implements it on SQLite and PostgreSQL.
// Code that needs one part takes that part.
#ifndef MARIPOSA_PROJECTS_STORE_H_
#define MARIPOSA_PROJECTS_STORE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "projects/access_store.h"
#include "projects/controller_store.h"
#include "projects/event_log.h"
#include "projects/goal_store.h"
#include "projects/rollout_store.h"
#include "projects/store_records.h"
#include "projects/task_store.h"

namespace mariposa {

// Thread-safe. Status codes: NOT_FOUND (project, version, key), ALREADY_EXISTS
// (project name), FAILED_PRECONDITION (stale expected version, non-integer
// incr), ABORTED (meta CAS mismatch), INVALID_ARGUMENT (bad names/refs).
class ProjectStore : public GoalStore,
                     public EventLog,
                     public TaskStore,
                     public AccessStore,
                     public ControllerStore,
                     public RolloutStore {
 public:
  ~ProjectStore() override = default;

  // A consistent online copy of the whole store at `path`; returns its size.
  virtual absl::StatusOr<int64_t> Backup(const std::string& path) = 0;
  virtual int SchemaVersion() = 0;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_STORE_H_
