#include "projects/store_open.h"

#include <dirent.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/sqlite_wal.h"

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

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream b;
  b << in.rdbuf();
  return b.str();
}

// The newest backup in `dir` (by modification time) and what it holds,
// read without changing it (immutable: no lock, no journal).
struct NewestBackup {
  std::string path;
  absl::Time taken;
  int64_t last_event = -1;  // -1: unreadable
};
std::optional<NewestBackup> FindNewestBackup(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return std::nullopt;
  std::optional<NewestBackup> best;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (!absl::EndsWith(name, ".db")) continue;
    std::string path = dir + "/" + name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    absl::Time t = absl::TimeFromTimespec(st.st_mtim);
    if (!best || t > best->taken) best = NewestBackup{path, t};
  }
  closedir(d);
  if (!best) return best;
  sqlite3* db = nullptr;
  std::string uri = absl::StrCat("file:", best->path, "?immutable=1");
  if (sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT COALESCE(MAX(idx), 0) FROM events", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      best->last_event = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return best;
}

// The Fix of a store that would come up older than it was: keep the files,
// restore the newest backup, and what that loses.
std::string OlderStoreFix(const std::string& data_dir, const std::string& backup_dir,
                          const std::optional<HighWater>& mark) {
  std::string keep = absl::StrCat("mariposad changed nothing: keep the damaged files for analysis (cp -a ", data_dir,
                                  " ", data_dir, ".damaged) and ");
  std::optional<NewestBackup> b = backup_dir.empty() ? std::nullopt : FindNewestBackup(backup_dir);
  if (!b) {
    return absl::StrCat(keep, "restore a backup: ", kRestore, ". No backup was found in ",
                        backup_dir.empty() ? "the backup dir" : backup_dir,
                        "; without one, `mariposad --accept-store-loss` starts on what SQLite can recover (the commits before "
                        "the damage; copies of the damaged files are kept), and --init starts over with no projects");
  }
  std::string loses;
  if (b->last_event >= 0 && mark && mark->last_event > b->last_event) {
    loses = absl::StrCat("; the restore loses what happened after ", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", b->taken,
                                                                                      absl::UTCTimeZone()),
                         ": events ", b->last_event + 1, "..", mark->last_event, " (", mark->last_event - b->last_event,
                         " events) and the versions, meta and tasks they record");
  } else {
    loses = absl::StrCat("; the restore loses every change after ",
                         absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", b->taken, absl::UTCTimeZone()));
  }
  return absl::StrCat(keep, "restore the newest backup, ", b->path, ": `mariposa admin restore ", b->path,
                      " --data-dir ", data_dir, "` with mariposad stopped, then start it", loses,
                      " (docs/operations.md, \"Backup and restore\")");
}

absl::Status Refuse(StoreRefusal* out, StoreRefusal r) {
  *out = std::move(r);
  return absl::FailedPreconditionError(out->ToString());
}

}  // namespace

std::string StoreRefusal::ToString() const {
  return absl::StrCat("Error: ", error, "\nReason: ", reason, "\nFix: ", fix, "\nImpact: ", impact);
}

// Copies of the store's files into DATA_DIR/damaged-STAMP/ (kept for
// analysis when a loss is accepted); the folder, or an error.
absl::StatusOr<std::string> KeepDamagedCopies(const std::string& data_dir, const Clock* clock) {
  std::string dir = absl::StrCat(data_dir, "/damaged-",
                                 absl::FormatTime("%Y%m%dT%H%M%SZ", clock->Now(), absl::UTCTimeZone()));
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("cannot make ", dir, ": ", std::strerror(errno)));
  }
  for (const char* f : {"mariposa.db", "mariposa.db-wal", kHighWaterFile}) {
    std::optional<std::string> text = ReadFile(data_dir + "/" + f);
    if (!text) continue;
    std::ofstream out(dir + "/" + f, std::ios::binary);
    out << *text;
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", dir, "/", f));
  }
  return dir;
}

namespace {

// A damaged write-ahead log refuses the start, or with --accept-store-loss
// is kept aside and noted in `accepted`.
absl::Status CheckWalFirst(const std::string& data_dir, const Clock* clock, StoreRefusal* refusal,
                           const std::string& backup_dir, bool accept_loss, const std::optional<HighWater>& mark,
                           std::vector<std::string>* accepted) {
  const std::string path = data_dir + "/mariposa.db";
  if (std::optional<std::string> wal = ReadFile(path + "-wal")) {
    WalReport w = CheckWal(*wal);
    if (!w.ok && accept_loss) {
      auto kept = KeepDamagedCopies(data_dir, clock);
      if (!kept.ok()) {
        return Refuse(refusal, StoreRefusal{"cannot keep copies of the damaged store", std::string(kept.status().message()),
                                            "free space in the data dir, or copy it aside by hand and restore a backup",
                                            kImpact});
      }
      LogError("store loss accepted (--accept-store-loss): starting on what SQLite recovers before the damage",
               {{"damage", w.damage}, {"copies", *kept}});
      accepted->push_back(absl::StrCat(w.damage, "; copies of the damaged files in ", *kept));
    } else if (!w.ok) {
      return Refuse(refusal,
                    StoreRefusal{absl::StrCat("the write-ahead log of store ", path, " is damaged"),
                                 absl::StrCat(w.damage, ". Starting would serve an older store as if it were "
                                                        "whole: acknowledged writes would be gone with no error"),
                                 OlderStoreFix(data_dir, backup_dir, mark), kImpact});
    }
  }
  return absl::OkStatus();
}

// The store against its high-water mark: older than the mark, or the mark
// gone from a data dir that held a store, refuses the start (or with
// --accept-store-loss, is noted in `accepted`).
absl::Status CheckHighWater(SqlProjectStore& store, const std::string& data_dir, StoreRefusal* refusal,
                            const std::string& backup_dir, bool accept_loss, bool init, bool held_one,
                            const std::optional<HighWater>& mark, bool mark_missing,
                            std::vector<std::string>* accepted) {
  const std::string path = data_dir + "/mariposa.db";
  const std::string mark_path = data_dir + "/" + kHighWaterFile;
  const std::string marker = data_dir + "/" + kStoreMarker;
  if (mark && !accept_loss) {
    auto now = store.CurrentHighWater();
    if (!now.ok()) {
      return Refuse(refusal, StoreRefusal{absl::StrCat("cannot read the commit count of store ", path),
                                          std::string(now.status().message()), kRestore, kImpact});
    }
    if (std::string loss = HighWaterLoss(*mark, *now); !loss.empty()) {
      return Refuse(refusal,
                    StoreRefusal{absl::StrCat("store ", path, " is older than the store mariposad last wrote"),
                                 absl::StrCat(loss, ", by its high-water mark ", mark_path,
                                              " (written after every commit). The write-ahead log was lost or "
                                              "damaged, or an older copy of mariposa.db was put in place"),
                                 OlderStoreFix(data_dir, backup_dir, mark), kImpact});
    }
  }
  // The mark gone while the store has commits a release that writes it made
  // (a store migrated from before the mark starts at 0): nothing shows
  // whether this store is the newest one, so it is not taken as such.
  if (!mark && mark_missing && held_one && !init && !accept_loss) {
    auto now = store.CurrentHighWater();
    if (!now.ok() || now->commits > 0) {
      return Refuse(refusal,
                    StoreRefusal{absl::StrCat("the high-water mark of store ", path, " is missing"),
                                 absl::StrCat("this data dir held a store (", marker, " exists) and the store has ",
                                              now.ok() ? absl::StrCat(now->commits) : std::string("some"),
                                              " commits counted, so mariposad wrote ", mark_path,
                                              " after each of them; without it, an older copy of mariposa.db or a "
                                              "lost write-ahead log cannot be told from the newest store"),
                                 absl::StrCat("if this is the store mariposad last wrote (the mark was deleted by "
                                              "hand), start once with --accept-store-loss: a new mark is written; "
                                              "otherwise ",
                                              OlderStoreFix(data_dir, backup_dir, mark)),
                                 kImpact});
    }
  }
  if (mark && accept_loss) {
    auto now = store.CurrentHighWater();
    std::string loss = now.ok() ? HighWaterLoss(*mark, *now) : std::string(now.status().message());
    if (!loss.empty()) {
      LogError("store loss accepted (--accept-store-loss): the store is older than its high-water mark",
               {{"loss", loss}, {"mark", mark_path}});
      accepted->push_back(loss);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqlProjectStore>> OpenStore(const std::string& data_dir, bool init,
                                                              const Clock* clock, StoreRefusal* refusal,
                                                              const std::string& backup_dir, bool accept_loss) {
  std::string path = data_dir + "/mariposa.db";
  std::string mark_path = data_dir + "/" + kHighWaterFile;
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
  std::vector<std::string> accepted;  // what --accept-store-loss let through, for the event log
  std::optional<HighWater> mark;
  const bool mark_missing = !Exists(mark_path, nullptr);
  if (std::optional<std::string> text = ReadFile(mark_path); text && !init) {
    mark = ParseHighWater(*text);
    if (!mark) {
      LogError("the store's high-water mark is unreadable; this start cannot check the store against it",
               {{"path", mark_path}});
    }
  }
  // Before SQLite recovers the write-ahead log: its recovery would drop every
  // commit after a damaged frame without a word.
  if (exists) RETURN_IF_ERROR(CheckWalFirst(data_dir, clock, refusal, backup_dir, accept_loss, mark, &accepted));
  auto store = SqlProjectStore::Open(path, clock);
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
  RETURN_IF_ERROR(CheckHighWater(**store, data_dir, refusal, backup_dir, accept_loss, init, held_one, mark,
                                  mark_missing, &accepted));
  if (absl::Status s = (*store)->KeepHighWaterMark(mark_path); !s.ok()) {
    return Refuse(refusal, StoreRefusal{absl::StrCat("cannot write the store's high-water mark ", mark_path),
                                        std::string(s.message()), "check the data dir's permissions and free space",
                                        kImpact});
  }
  if (!accepted.empty()) {
    auto logged = (*store)->AppendEvent("mariposad (--accept-store-loss)", "", "store.loss-accepted", path,
                                        absl::StrJoin(accepted, "; "));
    if (!logged.ok()) LogError("cannot record the accepted loss in the event log", {{"error", logged.status().ToString()}});
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

absl::StatusOr<std::unique_ptr<SqlProjectStore>> OpenPostgresStore(const std::string& uri, const Clock* clock,
                                                                   StoreRefusal* refusal) {
  auto store = SqlProjectStore::OpenPostgres(uri, clock);
  if (!store.ok()) {
    if (absl::IsUnavailable(store.status())) {
      return Refuse(refusal,
                    StoreRefusal{"cannot reach the store's database", std::string(store.status().message()),
                                 "start PostgreSQL or fix --store (host, port, database, user; a password belongs in "
                                 "~/.pgpass or PGPASSFILE, not on the command line), then start mariposad again; "
                                 "with several hosts in the URI, at least one must accept writes",
                                 kImpact});
    }
    bool newer = absl::IsFailedPrecondition(store.status());
    return Refuse(refusal, StoreRefusal{"cannot open the store's database", std::string(store.status().message()),
                                        newer ? "run the mariposad release the other nodes run (upgrade every node)"
                                              : "check that the database user may create tables in the database, "
                                                "and the PostgreSQL log",
                                        kImpact});
  }
  if (absl::Status v = (*store)->Verify(); !v.ok()) {
    return Refuse(refusal, StoreRefusal{absl::StrCat("the store at ", (*store)->where(), " failed verification"),
                                        std::string(v.message()),
                                        "restore a backup into a new, empty database (`mariposa admin store-copy "
                                        "--from sqlite:BACKUP --to postgresql://…`) and point every node at it",
                                        kImpact});
  }
  return store;
}

}  // namespace mariposa
