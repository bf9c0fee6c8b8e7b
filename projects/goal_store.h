// The goal: projects, their versions (services, deployment groups, tags)
// and their meta, secrets sealed at rest. One part of ProjectStore
// (store.h); SqlProjectStore implements it on SQLite and PostgreSQL
// (sql_goal.cc).
#ifndef MARIPOSA_PROJECTS_GOAL_STORE_H_
#define MARIPOSA_PROJECTS_GOAL_STORE_H_

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

class GoalStore {
 public:
  virtual ~GoalStore() = default;

  // `owner`: the Triton account of its instances ("" = not recorded).
  virtual absl::StatusOr<ProjectRecord> CreateProject(const std::string& name, const std::string& description,
                                                      const std::string& actor, const std::string& owner) = 0;
  absl::StatusOr<ProjectRecord> CreateProject(const std::string& name, const std::string& description,
                                              const std::string& actor) {
    return CreateProject(name, description, actor, "");
  }
  // Records `owner` as the account of every project that has none (made
  // before accounts were recorded); how many there were.
  virtual absl::StatusOr<int> ClaimUnownedProjects(const std::string& owner) = 0;
  virtual absl::StatusOr<std::vector<ProjectRecord>> ListProjects() = 0;
  // By name or uuid.
  virtual absl::StatusOr<ProjectRecord> GetProject(const std::string& name_or_uuid) = 0;
  // The project and its current version (without its texts; none before
  // the first), read together (one round trip on PostgreSQL).
  virtual absl::StatusOr<std::pair<ProjectRecord, std::optional<VersionRecord>>> GetProjectWithCurrent(
      const std::string& name_or_uuid) = 0;
  // Removes the project, its versions and meta; its events stay.
  virtual absl::Status DeleteProject(const std::string& name_or_uuid, const std::string& actor) = 0;

  // Stores a new version (or reports a no-op) in one transaction, checking
  // expected_current against the current version inside it.
  virtual absl::StatusOr<CommitResult> CommitVersion(const NewVersion& v) = 0;
  virtual absl::StatusOr<std::vector<VersionRecord>> ListVersions(const std::string& project_uuid) = 0;
  // `ref`: uuid, unique uuid prefix (4+ hex), number, tag, or "current".
  virtual absl::StatusOr<VersionRecord> GetVersion(const std::string& project_uuid, const std::string& ref,
                                                   bool include_text) = 0;
  virtual absl::StatusOr<std::vector<ServiceRecord>> ListServices(const std::string& version_uuid) = 0;
  virtual absl::StatusOr<std::vector<GroupRecord>> ListGroups(const std::string& version_uuid) = 0;
  // Points `tag` at the version (moving it if it exists).
  virtual absl::StatusOr<VersionRecord> TagVersion(const std::string& project_uuid, const std::string& ref,
                                                   const std::string& tag, const std::string& actor) = 0;

  virtual absl::StatusOr<std::vector<MetaRecord>> ListMeta(const std::string& project_uuid) = 0;
  virtual absl::StatusOr<MetaRecord> GetMeta(const std::string& project_uuid, const std::string& key) = 0;
  // `cas`: when set, the write happens only if the key's cas_id equals it
  // (0 = the key must not exist). cas_id values are unique across the store
  // and never reused, so a deleted and re-created key never matches an old id.
  virtual absl::StatusOr<MetaRecord> SetMeta(const std::string& project_uuid, const std::string& key,
                                             const std::string& value, bool secret, std::optional<int64_t> cas,
                                             const std::string& actor) = 0;
  virtual absl::Status DeleteMeta(const std::string& project_uuid, const std::string& key,
                                  std::optional<int64_t> cas, const std::string& actor) = 0;
  // Adds `delta` to an integer value (a missing key counts as 0).
  virtual absl::StatusOr<MetaRecord> IncrMeta(const std::string& project_uuid, const std::string& key,
                                              int64_t delta, std::optional<int64_t> cas,
                                              const std::string& actor) = 0;
  // Sets every entry in one transaction.
  virtual absl::StatusOr<int> ImportMeta(const std::string& project_uuid,
                                         const std::map<std::string, std::string>& entries, bool secret,
                                         const std::string& actor) = 0;

  // Marks a project for deletion once its instances and what else it owns
  // in the data center are gone (the controller removes them, then calls
  // DeleteProject); `detail` is the event's. `delete_volumes`: its volumes
  // go whatever their deletion_policy.
  virtual absl::Status MarkProjectDeleting(const std::string& name_or_uuid, const std::string& actor,
                                           bool delete_volumes, const std::string& detail) = 0;

  // Secrets: with a codec set, secret meta values are sealed when written
  // and opened when read. ResealSecrets seals every secret that is plain or
  // under another key with the codec's current key, in one transaction, and
  // returns how many it changed.
  virtual void SetSecretCodec(const SecretCodec* codec) = 0;
  virtual absl::StatusOr<int> ResealSecrets() = 0;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_GOAL_STORE_H_
