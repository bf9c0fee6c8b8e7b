#include "daemon/backups.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "common/log.h"

namespace mariposa {
namespace {

constexpr char kPrefix[] = "mariposa-";
constexpr char kSuffix[] = ".db";
constexpr char kStamp[] = "%Y%m%dT%H%M%SZ";

std::vector<std::string> ListNames(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) out.push_back(e->d_name);
  closedir(d);
  return out;
}

}  // namespace

std::string ScheduledBackupName(absl::Time t) {
  return absl::StrCat(kPrefix, absl::FormatTime(kStamp, t, absl::UTCTimeZone()), kSuffix);
}

std::optional<absl::Time> ScheduledBackupTime(const std::string& name) {
  if (!absl::StartsWith(name, kPrefix) || !absl::EndsWith(name, kSuffix)) return std::nullopt;
  std::string stamp = name.substr(sizeof(kPrefix) - 1, name.size() - (sizeof(kPrefix) - 1) - (sizeof(kSuffix) - 1));
  // YYYYMMDDTHHMMSSZ (absl's %Y would take every digit, so by hand).
  if (stamp.size() != 16 || stamp[8] != 'T' || stamp[15] != 'Z') return std::nullopt;
  auto num = [&](size_t at, size_t n, int* out) {
    *out = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (stamp[i] < '0' || stamp[i] > '9') return false;
      *out = *out * 10 + (stamp[i] - '0');
    }
    return true;
  };
  int y, mo, d, h, mi, s;
  if (!num(0, 4, &y) || !num(4, 2, &mo) || !num(6, 2, &d) || !num(9, 2, &h) || !num(11, 2, &mi) || !num(13, 2, &s)) {
    return std::nullopt;
  }
  absl::CivilSecond c(y, mo, d, h, mi, s);
  if (c.month() != mo || c.day() != d || c.hour() != h || c.minute() != mi || c.second() != s) return std::nullopt;
  return absl::FromCivil(c, absl::UTCTimeZone());
}

absl::Time NextBackupAt(std::optional<absl::Time> last_success, std::optional<absl::Time> last_failure,
                        absl::Duration interval, absl::Time now) {
  absl::Time due = last_success ? std::min(*last_success + interval, now + interval) : now;
  if (last_failure && (!last_success || *last_failure > *last_success)) {
    due = std::max(due, *last_failure + std::min(absl::Minutes(1), interval));
  }
  return std::max(due, now);
}

std::vector<std::string> BackupsToPrune(const std::vector<std::string>& names, int keep) {
  std::vector<std::pair<absl::Time, std::string>> scheduled;
  for (const std::string& n : names) {
    if (auto t = ScheduledBackupTime(n)) scheduled.emplace_back(*t, n);
  }
  std::sort(scheduled.begin(), scheduled.end(), [](const auto& a, const auto& b) { return a > b; });
  std::vector<std::string> out;
  for (size_t i = static_cast<size_t>(std::max(keep, 0)); i < scheduled.size(); ++i) out.push_back(scheduled[i].second);
  return out;
}

absl::StatusOr<BackupFile> WriteBackup(ProjectStore* store, const std::string& dir, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos || name[0] == '.') {
    return absl::InvalidArgumentError(absl::StrCat(
        "backup name \"", name, "\" must be a plain file name (no /, not starting with .), written into ", dir));
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create backup directory ", dir, ": ", std::strerror(errno)));
  }
  chmod(dir.c_str(), 0700);
  std::string path = absl::StrCat(dir, "/", name);
  // Created 0600 and empty before SQLite opens it: never readable by others.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return absl::AlreadyExistsError(absl::StrCat(path, " exists; choose a new name"));
    return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  close(fd);
  auto bytes = store->Backup(path);
  if (!bytes.ok()) {
    unlink(path.c_str());
    return bytes.status();
  }
  return BackupFile{path, *bytes};
}

BackupScheduler::BackupScheduler(ProjectStore* store, const Clock* clock, Options o)
    : store_(store), clock_(clock), o_(std::move(o)) {
  absl::MutexLock l(&mu_);
  report_.interval = o_.interval;
  report_.keep = o_.keep;
  // A restart keeps the schedule: the newest scheduled backup counts.
  for (const std::string& n : ListNames(o_.dir)) {
    auto t = ScheduledBackupTime(n);
    if (t && (!report_.last_success || *t > *report_.last_success)) {
      report_.last_success = t;
      report_.last_path = absl::StrCat(o_.dir, "/", n);
    }
  }
}

BackupScheduler::~BackupScheduler() { Stop(); }

void BackupScheduler::Start() {
  if (o_.interval <= absl::ZeroDuration()) return;
  thread_ = std::thread([this] {
    absl::MutexLock l(&mu_);
    while (!stop_) {
      absl::Time next = NextBackupAt(report_.last_success, report_.last_failure, o_.interval, clock_->Now());
      report_.next = next;
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      if (clock_->AwaitUntil(&mu_, absl::Condition(&stopping), next)) break;
      mu_.Unlock();
      RunOnce();
      mu_.Lock();
    }
  });
}

void BackupScheduler::Stop() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void BackupScheduler::RunOnce() {
  absl::Time now = clock_->Now();
  auto file = WriteBackup(store_, o_.dir, ScheduledBackupName(now));
  std::vector<std::string> pruned;
  if (file.ok()) {
    for (const std::string& n : BackupsToPrune(ListNames(o_.dir), o_.keep)) {
      if (unlink(absl::StrCat(o_.dir, "/", n).c_str()) == 0) pruned.push_back(n);
    }
    LogInfo("scheduled backup written", {{"path", file->path}, {"bytes", absl::StrCat(file->bytes)},
                                         {"pruned", absl::StrCat(pruned.size())}});
  } else {
    LogError("scheduled backup failed", {{"dir", o_.dir}, {"error", file.status().ToString()}});
  }
  absl::MutexLock l(&mu_);
  if (file.ok()) {
    report_.last_success = now;
    report_.last_path = file->path;
    ++report_.successes;
  } else {
    report_.last_failure = now;
    report_.last_error = std::string(file.status().message());
    ++report_.failures;
  }
}

BackupScheduler::Report BackupScheduler::Get() const {
  absl::MutexLock l(&mu_);
  return report_;
}

std::vector<Sample> BackupScheduler::Metrics() const {
  Report r = Get();
  std::vector<Sample> out;
  out.push_back({"mariposa_backup_interval_seconds", "Interval of scheduled backups of the store (0: none).",
                 absl::ToDoubleSeconds(r.interval)});
  // 0 until the first one: an alert on its age fires if it never comes.
  out.push_back({"mariposa_backup_last_success_timestamp_seconds",
                 "Unix time of the newest scheduled backup written (0: none yet).",
                 r.last_success ? absl::ToDoubleSeconds(*r.last_success - absl::UnixEpoch()) : 0});
  if (r.last_failure) {
    out.push_back({"mariposa_backup_last_failure_timestamp_seconds", "Unix time of the last failed scheduled backup.",
                   absl::ToDoubleSeconds(*r.last_failure - absl::UnixEpoch())});
  }
  out.push_back({"mariposa_backups_total", "Scheduled backups attempted, by result.", static_cast<double>(r.successes),
                 {{"result", "success"}}, true});
  out.push_back({"mariposa_backups_total", "Scheduled backups attempted, by result.", static_cast<double>(r.failures),
                 {{"result", "failure"}}, true});
  return out;
}

}  // namespace mariposa
