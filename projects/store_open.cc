#include "projects/store_open.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace mariposa {
namespace {

// Where an operator finds the procedure.
constexpr char kRestore[] =
    "stop mariposad and restore the newest backup: `mariposa admin restore DATA_DIR/backups/mariposa-…db "
    "--data-dir DATA_DIR` (it verifies the backup and keeps this store aside), then start mariposad again "
    "(docs/operations.md, \"Backup and restore\")";
constexpr char kImpact[] =
    "mariposad does not serve: projects, versions, meta and tasks cannot be read or changed, and nothing in the "
    "data center is converged until the store is restored; running instances are not touched";

bool Exists(const std::string& path, off_t* size) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  if (size) *size = st.st_size;
  return true;
}

absl::Status Refuse(StoreRefusal* out, StoreRefusal r) {
  *out = std::move(r);
  return absl::FailedPreconditionError(out->ToString());
}

}  // namespace

std::string StoreRefusal::ToString() const {
  return absl::StrCat("Error: ", error, "\nReason: ", reason, "\nFix: ", fix, "\nImpact: ", impact);
}

absl::StatusOr<std::unique_ptr<SqliteProjectStore>> OpenStore(const std::string& data_dir, bool init,
                                                              const Clock* clock, StoreRefusal* refusal) {
  std::string path = data_dir + "/mariposa.db";
  std::string marker = data_dir + "/" + kStoreMarker;
  off_t size = 0;
  bool exists = Exists(path, &size);
  bool held_one = Exists(marker, nullptr);
  if (!init && ((!exists && held_one) || (exists && size == 0))) {
    std::string what = exists ? "is empty (0 bytes)" : "is missing";
    std::string reason =
        held_one ? absl::StrCat("this data dir held a store (", marker, " exists), so an empty one would silently "
                                "forget every project")
                 : "Mariposa never leaves an empty file behind: its first start writes the schema at once";
    return Refuse(refusal, StoreRefusal{absl::StrCat("store ", path, " ", what), reason,
                                        absl::StrCat(kRestore, "; or, to start over with no projects on purpose, "
                                                               "run mariposad once with --init"),
                                        absl::StrCat(kImpact, ". Starting empty would also make every instance "
                                                              "tagged by Mariposa belong to no project")});
  }
  auto store = SqliteProjectStore::Open(path, clock);
  if (!store.ok()) {
    bool newer = absl::IsFailedPrecondition(store.status());
    return Refuse(refusal, StoreRefusal{absl::StrCat("cannot open store ", path), std::string(store.status().message()),
                                        newer ? "run the mariposad release that wrote this store, or restore a backup "
                                                "taken with this release"
                                              : kRestore,
                                        kImpact});
  }
  if (absl::Status s = (*store)->Verify(); !s.ok()) {
    return Refuse(refusal, StoreRefusal{absl::StrCat("store ", path, " failed verification"),
                                        std::string(s.message()), kRestore, kImpact});
  }
  if (!held_one) {
    std::ofstream f(marker);
    f << "This data dir holds a Mariposa store (mariposa.db). While this file exists, mariposad refuses to start\n"
         "on a missing or empty store instead of creating a new one; see docs/operations.md.\n";
    if (!f) {
      return Refuse(refusal, StoreRefusal{absl::StrCat("cannot write ", marker), std::strerror(errno),
                                          "check the data dir's permissions and free space", kImpact});
    }
  }
  return store;
}

}  // namespace mariposa
