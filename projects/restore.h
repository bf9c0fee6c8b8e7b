// `mariposa admin restore BACKUP`: puts a backup in place of a stopped
// mariposad's store. docs/operations.md, "Backup and restore".
#ifndef MARIPOSA_PROJECTS_RESTORE_H_
#define MARIPOSA_PROJECTS_RESTORE_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "projects/store.h"

namespace mariposa {

struct RestoreResult {
  std::string store;        // DATA_DIR/mariposa.db
  std::string moved_aside;  // where the store it replaced went ("" if none)
  int schema = 0;           // of the backup, before any migration
  int projects = 0;
  int64_t last_event = 0;
  int secrets = 0;  // secret meta values, each opened with the key
};

// The key mariposad will open the restored secrets with: `codec` loaded
// from `key_path` (its --secrets-key), or null when there is no key file.
struct RestoreSecrets {
  const SecretCodec* codec = nullptr;
  std::string key_path;
};

// Refuses (FAILED_PRECONDITION) while a mariposad holds DATA_DIR's lock,
// naming it, and holds the lock itself meanwhile. Copies `backup` next to
// the store, opens the copy as mariposad would (a newer schema is refused,
// an older one migrated) and verifies it (integrity check, every version's
// text, every reference) and opens every secret meta value with `secrets`
// (refused when one does not open, or when there are secrets and no key:
// mariposad could never read them); only then moves the current store (with its WAL)
// aside as mariposa.db.before-restore-STAMP and puts the copy in its place.
// Nothing in DATA_DIR changes when any check fails.
absl::StatusOr<RestoreResult> RestoreStore(const std::string& backup, const std::string& data_dir,
                                           const RestoreSecrets& secrets, const Clock* clock);

// A store on PostgreSQL (`target`: its URI): the backup (a SQLite store
// file, as `admin backup` writes for both kinds) is copied to a temporary
// file, opened, migrated and verified as above, its secrets opened with
// `secrets`, then copied row by row into `target` in one transaction
// (SqlProjectStore::CopyStore). `target` must be an empty database (a new
// one): a database that holds anything is refused and nothing is written.
// Point every node at it afterwards.
absl::StatusOr<RestoreResult> RestoreStoreInto(const std::string& backup, const std::string& target,
                                               const RestoreSecrets& secrets, const Clock* clock);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_RESTORE_H_
