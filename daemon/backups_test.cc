#include "daemon/backups.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "projects/sql_store.h"

namespace mariposa {
namespace {

const absl::Time kT = absl::FromUnixSeconds(1795000000);  // 2026-11-18T...Z

TEST(BackupNames, RoundTrip) {
  std::string n = ScheduledBackupName(kT);
  EXPECT_EQ(n.rfind("mariposa-", 0), 0u) << n;
  ASSERT_TRUE(ScheduledBackupTime(n).has_value());
  EXPECT_EQ(*ScheduledBackupTime(n), kT);
  for (const char* other : {"before-upgrade.db", "mariposa-.db", "mariposa-2026.db", "mariposa-20261124T101500Z.db.tmp",
                            "mariposa-2026112XT101500Z.db"}) {
    EXPECT_FALSE(ScheduledBackupTime(other).has_value()) << other;
  }
}

TEST(NextBackupAt, Table) {
  const absl::Duration h = absl::Hours(1);
  struct Case {
    const char* name;
    std::optional<absl::Time> success, failure;
    absl::Time now;
    absl::Time want;
  } cases[] = {
      {"never: now", std::nullopt, std::nullopt, kT, kT},
      {"recent success: an interval after it", kT, std::nullopt, kT + absl::Minutes(10), kT + h},
      {"old success: now", kT, std::nullopt, kT + 3 * h, kT + 3 * h},
      {"failure after success: a minute later", kT, kT + h, kT + h, kT + h + absl::Minutes(1)},
      {"failure, never a success: a minute later", std::nullopt, kT, kT, kT + absl::Minutes(1)},
      {"success after an older failure: the interval", kT + h, kT, kT + h, kT + 2 * h},
      {"clock went back: never later than now + interval", kT + 5 * h, std::nullopt, kT, kT + h},
  };
  for (const Case& c : cases) EXPECT_EQ(NextBackupAt(c.success, c.failure, h, c.now), c.want) << c.name;
}

TEST(BackupsToPrune, KeepsTheNewestScheduledOnly) {
  std::vector<std::string> names = {"manual.db", ScheduledBackupName(kT), ScheduledBackupName(kT + absl::Hours(2)),
                                    ScheduledBackupName(kT + absl::Hours(1)), "mariposa.db", "."};
  EXPECT_EQ(BackupsToPrune(names, 2), std::vector<std::string>{ScheduledBackupName(kT)});
  EXPECT_EQ(BackupsToPrune(names, 5), std::vector<std::string>{});
  EXPECT_EQ(BackupsToPrune(names, 0).size(), 3u);
}

TEST(BackupScheduler, WritesPrunesAndReportsFailures) {
  SimulatedClock clock(kT);
  std::string dir = ::testing::TempDir() + "/backups_test";
  system(("rm -rf " + dir).c_str());
  auto store = SqlProjectStore::Open(":memory:", &clock);
  ASSERT_TRUE(store.ok());
  BackupScheduler s(store->get(), &clock, {dir, absl::Hours(1), 2});
  for (int i = 0; i < 3; ++i) {
    s.RunOnce();
    clock.Advance(absl::Hours(1));
  }
  BackupScheduler::Report r = s.Get();
  EXPECT_EQ(r.successes, 3);
  EXPECT_EQ(r.failures, 0);
  ASSERT_TRUE(r.last_success.has_value());
  EXPECT_EQ(*r.last_success, kT + absl::Hours(2));
  struct stat st;
  EXPECT_NE(stat((dir + "/" + ScheduledBackupName(kT)).c_str(), &st), 0) << "pruned: keep 2";
  ASSERT_EQ(stat((dir + "/" + ScheduledBackupName(kT + absl::Hours(2))).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  // A restarted scheduler keeps the schedule from the files.
  BackupScheduler again(store->get(), &clock, {dir, absl::Hours(1), 2});
  ASSERT_TRUE(again.Get().last_success.has_value());
  EXPECT_EQ(*again.Get().last_success, kT + absl::Hours(2));
  // A directory that cannot be written: a failure, reported, not a success.
  ASSERT_EQ(chmod(dir.c_str(), 0500), 0);
  if (geteuid() != 0) {
    s.RunOnce();
    EXPECT_EQ(s.Get().failures, 1);
    EXPECT_FALSE(s.Get().last_error.empty());
  }
  chmod(dir.c_str(), 0700);
  // A file in the way of the directory fails as root too.
  BackupScheduler blocked(store->get(), &clock, {dir + "/" + ScheduledBackupName(kT + absl::Hours(2)), absl::Hours(1), 2});
  blocked.RunOnce();
  EXPECT_EQ(blocked.Get().failures, 1);
  EXPECT_EQ(blocked.Get().successes, 0);
  EXPECT_NE(blocked.Get().last_error.find("cannot create"), std::string::npos) << blocked.Get().last_error;
  bool saw_failure_metric = false;
  for (const Sample& m : blocked.Metrics()) {
    if (m.name == "mariposa_backups_total" && m.labels.at("result") == "failure") saw_failure_metric = m.value == 1;
    if (m.name == "mariposa_backup_last_success_timestamp_seconds") {
      EXPECT_EQ(m.value, 0);
    }
  }
  EXPECT_TRUE(saw_failure_metric);
}

}  // namespace
}  // namespace mariposa
