// What the controller keeps of its own: each project's memory and its
// instances' clocks, its settings, and (several nodes) heartbeats, leases
// and fences. One part of ProjectStore (store.h); SqlProjectStore
// implements it on SQLite and PostgreSQL (sql_controller.cc).
#ifndef MARIPOSA_PROJECTS_CONTROLLER_STORE_H_
#define MARIPOSA_PROJECTS_CONTROLLER_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "projects/store_records.h"

namespace mariposa {

class ControllerStore {
 public:
  virtual ~ControllerStore() = default;

  // What the convergence engine remembers of a project between syncs
  // (convergence/memory_codec.h; opaque here), so that a restart goes on
  // from it: "" when nothing is kept. Put replaces it; a project that no
  // longer exists keeps nothing, and deleting a project deletes it.
  virtual absl::StatusOr<std::string> GetControllerMemory(const std::string& project_uuid) = 0;
  virtual absl::Status PutControllerMemory(const std::string& project_uuid, const std::string& body) = 0;
  virtual absl::StatusOr<std::vector<InstanceTimes>> ListInstanceTimes(const std::string& project_uuid) = 0;
  // Writes `changed` and removes `gone` (instance uuids) in one
  // transaction; a project deleted meanwhile keeps nothing.
  virtual absl::Status UpdateInstanceTimes(const std::string& project_uuid, const std::vector<InstanceTimes>& changed,
                                           const std::vector<std::string>& gone) = 0;

  // The controller's own settings that outlive a restart (its readonly
  // state): "" when unset. SetSetting writes `value` and the event
  // (kind, subject = key, detail) in one transaction.
  virtual absl::StatusOr<std::string> GetSetting(const std::string& key) = 0;
  virtual absl::Status SetSetting(const std::string& key, const std::string& value, const std::string& actor,
                                  const std::string& kind, const std::string& detail) = 0;


  // Nodes and leases (issue 33). Heartbeat records `node`'s heartbeat at
  // the database's clock and reads the lease state, in one transaction.
  virtual absl::StatusOr<LeaseState> Heartbeat(const std::string& node, const std::string& address,
                                               absl::Time started_at) = 0;
  // Makes each write that still applies (see LeaseWrite), in one
  // transaction; whether each was made.
  virtual absl::StatusOr<std::vector<bool>> WriteLeases(const std::vector<LeaseWrite>& writes) = 0;
  // A node leaving: its leases released and its heartbeat removed.
  virtual absl::Status LeaveNode(const std::string& node) = 0;
  // OK while `fence` holds (see Fence); ABORTED saying who holds the lease
  // now otherwise. Checked before Triton is asked to act.
  virtual absl::Status CheckFence(const Fence& fence) = 0;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_CONTROLLER_STORE_H_
