// Rollouts across data centers (issue 52, point 3): the versions this
// mariposad sends to the data centers a manifest lists, and how far each
// got. One part of ProjectStore (store.h); SqlProjectStore implements it
// (sql_rollouts.cc).
#ifndef MARIPOSA_PROJECTS_ROLLOUT_STORE_H_
#define MARIPOSA_PROJECTS_ROLLOUT_STORE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "projects/store_records.h"

namespace mariposa {

class RolloutStore {
 public:
  virtual ~RolloutStore() = default;

  // Stores a new rollout (its uuid, created_at and updated_at are set) with
  // the event datacenter.rollout; FAILED_PRECONDITION naming the active
  // rollout of the same project, which must end first.
  virtual absl::StatusOr<RolloutRecord> AddRollout(const RolloutRecord& r, const std::string& actor) = 0;
  // The active rollouts ("" = every project's), oldest first; with `all`,
  // the last 100 that ended too.
  virtual absl::StatusOr<std::vector<RolloutRecord>> ListRollouts(const std::string& project, bool all) = 0;
  // By uuid or a unique prefix (4+ characters).
  virtual absl::StatusOr<RolloutRecord> GetRollout(const std::string& uuid) = 0;
  // Writes `r`'s state, message and steps if it is still active (else
  // FAILED_PRECONDITION: it ended meanwhile), with an event of `event_kind`
  // saying `detail` when `detail` is not empty.
  virtual absl::StatusOr<RolloutRecord> UpdateRollout(const RolloutRecord& r, const std::string& actor,
                                                      const std::string& event_kind, const std::string& detail) = 0;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_ROLLOUT_STORE_H_
