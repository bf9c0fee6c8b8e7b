// Opening the store at start-up: a store that is missing, empty, damaged or
// incomplete is refused with an operator's explanation (RFD 40's Error /
// Reason / Fix / Impact), never silently replaced by an empty one.
#ifndef MARIPOSA_PROJECTS_STORE_OPEN_H_
#define MARIPOSA_PROJECTS_STORE_OPEN_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "projects/sql_store.h"

namespace mariposa {

// Why start-up stopped, for a person.
struct StoreRefusal {
  std::string error;
  std::string reason;
  std::string fix;
  std::string impact;
  // The four lines, "Error: …\nReason: …\nFix: …\nImpact: …".
  std::string ToString() const;
};

// The file a data dir gets once it holds a store; a data dir with it whose
// store is missing or empty lost its store.
constexpr char kStoreMarker[] = "store-initialized";

// Opens DATA_DIR/mariposa.db, migrating and verifying it
// (SqlProjectStore::Verify), and writes the marker. Refuses (filling
// `refusal`, returning its status) when:
//  - the store is missing or empty in a data dir whose marker says it held
//    one, or the file is empty (0 bytes: never left by Mariposa) — unless
//    `init` (mariposad --init) says an empty store is wanted;
//  - its write-ahead log is damaged so that SQLite's recovery would drop
//    committed transactions (common/sqlite_wal.h), checked before SQLite
//    opens anything, so the damaged files stay as they are;
//  - the store cannot be opened, has a newer schema, lacks a table, index or
//    trigger, fails its integrity check, or holds damaged text;
//  - it holds fewer commits or events than its high-water mark
//    (DATA_DIR/store-high-water, projects/high_water.h) says it had — unless
//    `init`.
// Then it keeps the mark after every commit. A refusal's Fix names the
// newest backup in `backup_dir` and what restoring it loses.
// `accept_loss` (mariposad --accept-store-loss) starts on such a store on
// purpose: copies of the damaged files go to DATA_DIR/damaged-STAMP/ first,
// SQLite keeps what it can, the loss is logged, and the mark starts anew.
absl::StatusOr<std::unique_ptr<SqlProjectStore>> OpenStore(const std::string& data_dir, bool init,
                                                              const Clock* clock, StoreRefusal* refusal,
                                                              const std::string& backup_dir = "",
                                                              bool accept_loss = false);

// Opens the store on PostgreSQL that `uri` names (mariposad --store),
// migrating and verifying it. Refuses (filling `refusal`) when the database
// cannot be reached, has a newer schema or fails verification; the URI's
// password is never repeated.
absl::StatusOr<std::unique_ptr<SqlProjectStore>> OpenPostgresStore(const std::string& uri, const Clock* clock,
                                                                   StoreRefusal* refusal);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_STORE_OPEN_H_
