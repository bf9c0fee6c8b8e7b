// Backups of the store: one written on request (`mariposa admin backup
// NAME`) and scheduled ones (`--backup-interval`, `--backup-keep`), written
// by the same code into --backup-dir. Scheduled backups are named
// mariposa-YYYYMMDDTHHMMSSZ.db; only those are pruned. docs/operations.md,
// "Backup and restore".
#ifndef MARIPOSA_DAEMON_BACKUPS_H_
#define MARIPOSA_DAEMON_BACKUPS_H_

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/process_metrics.h"
#include "projects/store.h"

namespace mariposa {

// Decisions (pure).
std::string ScheduledBackupName(absl::Time t);
// The time in a scheduled backup's name; nullopt for any other name.
std::optional<absl::Time> ScheduledBackupTime(const std::string& name);
// When the next scheduled backup is due: `interval` after the newest
// success (now when there is none or it is older), or a minute after a
// failure (at most `interval`).
absl::Time NextBackupAt(std::optional<absl::Time> last_success, std::optional<absl::Time> last_failure,
                        absl::Duration interval, absl::Time now);
// The scheduled backups to delete so that the `keep` newest remain; other
// names are never chosen.
std::vector<std::string> BackupsToPrune(const std::vector<std::string>& names, int keep);

struct BackupFile {
  std::string path;
  int64_t bytes = 0;
};
// Writes a consistent online copy of `store` to DIR/NAME: NAME must be a
// new plain file name (INVALID_ARGUMENT, ALREADY_EXISTS); the directory is
// created 0700 and the file 0600. A failed copy leaves no file.
absl::StatusOr<BackupFile> WriteBackup(ProjectStore* store, const std::string& dir, const std::string& name);

class BackupScheduler {
 public:
  struct Options {
    std::string dir;
    absl::Duration interval = absl::Hours(1);  // zero: no scheduled backups
    int keep = 24;
  };
  BackupScheduler(ProjectStore* store, const Clock* clock, Options o);
  ~BackupScheduler();
  void Start();
  void Stop();

  struct Report {
    absl::Duration interval;
    int keep = 0;
    std::optional<absl::Time> last_success, last_failure, next;
    std::string last_path, last_error;
    int64_t successes = 0, failures = 0;
  };
  Report Get() const;
  // mariposa_backup_* for /metrics.
  std::vector<Sample> Metrics() const;
  // Takes one scheduled backup now and prunes (what the thread does when due).
  void RunOnce();

 private:
  ProjectStore* store_;
  const Clock* clock_;
  Options o_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  Report report_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_BACKUPS_H_
