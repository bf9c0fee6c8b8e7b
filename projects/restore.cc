#include "projects/restore.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/sql.h"
#include "common/status_macros.h"
#include "projects/high_water.h"
#include "projects/sql_store.h"
#include "projects/store_open.h"

namespace mariposa {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

bool Exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// The backup's schema version, read without changing it.
absl::StatusOr<int> SchemaOf(const std::string& path) {
  ASSIGN_OR_RETURN(auto db, Database::Open(path));
  ASSIGN_OR_RETURN(auto st, db->Prepare("PRAGMA user_version"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? static_cast<int>(st.Int(0)) : 0;
}

// Every secret meta value of the copy opens with the key mariposad will
// use: sealed again with its current key, as mariposad does at start (the
// copy is not in place yet, so a refusal changes nothing).
absl::Status OpenSecrets(const std::string& copy, ProjectStore* store, const RestoreSecrets& secrets, int* count) {
  {
    ASSIGN_OR_RETURN(auto db, Database::Open(copy));
    ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT count(*) FROM meta WHERE secret = 1"));
    ASSIGN_OR_RETURN(bool row, st.Step());
    *count = row ? static_cast<int>(st.Int(0)) : 0;
  }
  if (*count == 0) return absl::OkStatus();
  if (secrets.codec == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "it holds ", *count, " secret meta values and there is no secrets key at ", secrets.key_path,
        ": mariposad could not open them. Put the key file that sealed them there (0600, with any .retired keys "
        "beside it), or name it with --secrets-key"));
  }
  store->SetSecretCodec(secrets.codec);
  auto resealed = store->ResealSecrets();
  if (!resealed.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "its secret meta values do not open with the secrets key ", secrets.key_path, " (", resealed.status().message(),
        "). Restore with the key file that sealed them (--secrets-key FILE; a rotated-out key is kept as "
        "KEYFILE.KEYID.retired)"));
  }
  return absl::OkStatus();
}

absl::Status CopyFile(const std::string& from, const std::string& to) {
  int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return Errno(absl::StrCat("cannot read backup ", from));
  int out = open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (out < 0) {
    close(in);
    return Errno(absl::StrCat("cannot write ", to));
  }
  char buf[1 << 16];
  absl::Status s;
  for (;;) {
    ssize_t n = read(in, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0 || write(out, buf, n) != n) {
      s = Errno(absl::StrCat("cannot copy ", from, " to ", to));
      break;
    }
  }
  if (s.ok() && fsync(out) != 0) s = Errno(absl::StrCat("cannot sync ", to));
  close(in);
  close(out);
  return s;
}

// The copy of the backup checked: a Mariposa store at a schema this
// release reads, that verifies and whose secrets open; what it holds in `r`
// and its own high-water mark in `mark`.
absl::Status CheckCopy(const std::string& backup, const std::string& copy, const RestoreSecrets& secrets,
                       const Clock* clock, RestoreResult* r, std::optional<HighWater>* mark) {
  auto schema = SchemaOf(copy);
  if (!schema.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(backup, " is not a readable SQLite store: ", schema.status().message()));
  }
  r->schema = *schema;
  if (r->schema == 0) return absl::InvalidArgumentError(absl::StrCat(backup, " is not a Mariposa store (no schema version)"));
  absl::Status verified;
  {
    // Closed at the end of this scope: SQLite folds its WAL into the copy.
    auto opened = SqlProjectStore::Open(copy, clock);
    verified = opened.ok() ? (*opened)->Verify() : opened.status();
    if (verified.ok()) verified = OpenSecrets(copy, opened->get(), secrets, &r->secrets);
    if (verified.ok()) {
      auto projects = (*opened)->ListProjects();
      auto last = (*opened)->LastEventIndex();
      if (projects.ok()) r->projects = static_cast<int>(projects->size());
      if (last.ok()) r->last_event = *last;
      if (auto now = (*opened)->CurrentHighWater(); now.ok()) *mark = *now;
    }
  }
  if (!verified.ok()) return absl::InvalidArgumentError(absl::StrCat(backup, " failed verification: ", verified.message()));
  return absl::OkStatus();
}

// The store being replaced (and its -wal, -shm) moved to
// STORE.before-restore-TIME (".2", ".3" … within one second); `aside` is
// where, "" when there was none.
absl::Status MoveAside(const std::string& store, const Clock* clock, std::string* aside) {
  if (!Exists(store)) return absl::OkStatus();
  std::string stamp = absl::FormatTime("%Y%m%dT%H%M%SZ", clock->Now(), absl::UTCTimeZone());
  *aside = absl::StrCat(store, ".before-restore-", stamp);
  // Two restores within a second never overwrite the store kept by the first.
  for (int n = 2; Exists(*aside); ++n) *aside = absl::StrCat(store, ".before-restore-", stamp, ".", n);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::string from = store + suffix;
    if (Exists(from) && rename(from.c_str(), (*aside + suffix).c_str()) != 0) {
      return Errno(absl::StrCat("cannot move ", from, " aside"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RestoreResult> RestoreStore(const std::string& backup, const std::string& data_dir,
                                           const RestoreSecrets& secrets, const Clock* clock) {
  if (!Exists(backup)) return absl::NotFoundError(absl::StrCat("backup ", backup, " does not exist"));
  if (!Exists(data_dir)) {
    return absl::NotFoundError(absl::StrCat("data dir ", data_dir, " does not exist; give mariposad's --data-dir"));
  }
  std::string lock_path = data_dir + "/mariposad.lock";
  int lock = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) return Errno(absl::StrCat("cannot open ", lock_path));
  if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
    std::ifstream in(lock_path);
    std::string pid;
    std::getline(in, pid);
    close(lock);
    return absl::FailedPreconditionError(absl::StrCat(
        "mariposad pid ", pid.empty() ? "?" : pid, " is running on ", data_dir,
        ": a running store is never replaced. Stop it first (systemctl stop mariposad, and any --standby), then "
        "restore; the standby would take over the moment the active stops"));
  }
  // From here the lock is ours: no mariposad starts on the data dir.
  struct Unlock {
    int fd;
    ~Unlock() { close(fd); }
  } unlock{lock};

  std::string store = data_dir + "/mariposa.db";
  std::string copy = data_dir + "/mariposa.db.restoring";
  auto cleanup = [&] {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) unlink((copy + suffix).c_str());
  };
  cleanup();  // a copy left by an interrupted restore
  RETURN_IF_ERROR(CopyFile(backup, copy));
  RestoreResult r;
  r.store = store;
  std::optional<HighWater> restored_mark;  // the restored store's own, written with it
  if (absl::Status checked = CheckCopy(backup, copy, secrets, clock, &r, &restored_mark); !checked.ok()) {
    cleanup();
    return checked;
  }
  // The high-water mark belongs to the store being replaced: the restored one
  // is older on purpose. Moved first, so a failure changes nothing else; the
  // restored store's own is written once it is in place.
  std::string mark = data_dir + "/" + kHighWaterFile;
  if (Exists(mark)) {
    std::string aside = absl::StrCat(mark, ".before-restore-",
                                     absl::FormatTime("%Y%m%dT%H%M%SZ", clock->Now(), absl::UTCTimeZone()));
    if (rename(mark.c_str(), aside.c_str()) != 0) {
      cleanup();
      return Errno(absl::StrCat("cannot move ", mark, " aside"));
    }
  }
  if (absl::Status moved = MoveAside(store, clock, &r.moved_aside); !moved.ok()) {
    cleanup();
    return moved;
  }
  if (rename(copy.c_str(), store.c_str()) != 0) return Errno(absl::StrCat("cannot put the backup in place at ", store));
  cleanup();
  int dir = open(data_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
  // Its own high-water mark: a start finds the store it was given, and a
  // later loss of this store is measured against it.
  if (restored_mark) {
    std::ofstream(mark, std::ios::trunc) << FormatHighWater(*restored_mark);
  }
  // The data dir holds a store now: mariposad must not start on an empty one.
  std::string marker = data_dir + "/" + kStoreMarker;
  if (!Exists(marker)) std::ofstream(marker) << "This data dir holds a Mariposa store (mariposa.db).\n";
  return r;
}

absl::StatusOr<RestoreResult> RestoreStoreInto(const std::string& backup, const std::string& target,
                                               const RestoreSecrets& secrets, const Clock* clock) {
  if (!Exists(backup)) return absl::NotFoundError(absl::StrCat("backup ", backup, " does not exist"));
  char tmpl[] = "/tmp/mariposa-restore-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Errno("cannot make a temporary directory");
  std::string dir = tmpl, copy = dir + "/backup.db";
  struct Cleanup {
    std::string dir, copy;
    ~Cleanup() {
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) unlink((copy + suffix).c_str());
      rmdir(dir.c_str());
    }
  } cleanup{dir, copy};
  RETURN_IF_ERROR(CopyFile(backup, copy));
  RestoreResult r;
  auto schema = SchemaOf(copy);
  if (!schema.ok() || *schema == 0) {
    return absl::InvalidArgumentError(absl::StrCat(backup, " is not a Mariposa store",
                                                   schema.ok() ? " (no schema version)" : ": ",
                                                   schema.ok() ? "" : schema.status().message()));
  }
  r.schema = *schema;
  auto opened = SqlProjectStore::Open(copy, clock);
  absl::Status verified = opened.ok() ? (*opened)->Verify() : opened.status();
  if (verified.ok()) verified = OpenSecrets(copy, opened->get(), secrets, &r.secrets);
  if (!verified.ok()) return absl::InvalidArgumentError(absl::StrCat(backup, " failed verification: ", verified.message()));
  auto into = SqlProjectStore::OpenSpec(target, clock);
  if (!into.ok()) return into.status();
  auto counts = SqlProjectStore::CopyStore(opened->get(), into->get());
  if (!counts.ok()) return counts.status();
  r.store = (*into)->where();
  auto projects = (*into)->ListProjects();
  auto last = (*into)->LastEventIndex();
  if (projects.ok()) r.projects = static_cast<int>(projects->size());
  if (last.ok()) r.last_event = *last;
  return r;
}

}  // namespace mariposa
