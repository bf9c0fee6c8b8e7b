// Start-up refuses every damaged store the way an operator needs: what is
// wrong, why, how to restore, what it means; an empty store is never silently
// created where one was.
#include "projects/store_open.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "common/clock.h"
#include "common/ids.h"
#include "common/sql.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa {
namespace {

using ::mariposa::testing::ReadFile;
using ::mariposa::testing::TempDir;
using ::mariposa::testing::WriteFile;

SimulatedClock clock_for_test;

// A data dir with a store holding one project with two versions, closed.
std::string GoodDataDir(const std::string& name) {
  std::string dir = TempDir(name);
  StoreRefusal r;
  auto store = OpenStore(dir, false, &clock_for_test, &r);
  EXPECT_TRUE(store.ok()) << r.ToString();
  for (int i = 1; i <= 2; ++i) {
    NewVersion nv;
    nv.project_name = "jupiter";
    nv.create_project = true;
    nv.force = true;
    nv.canonical = "project: jupiter\nservices: {}\n# " + std::to_string(i) + "\n";
    nv.hash = Sha256Hex(nv.canonical);
    nv.manifest = nv.canonical;
    nv.author = "t";
    nv.origin = "apply";
    EXPECT_TRUE((*store)->CommitVersion(nv).ok());
  }
  EXPECT_TRUE((*store)->SetMeta((*store)->GetProject("jupiter")->uuid, "k", "v", false, std::nullopt, "t").ok());
  return dir;
}

void ExpectRefused(const std::string& dir, const std::string& error_part, const std::string& fix_part) {
  StoreRefusal r;
  auto store = OpenStore(dir, false, &clock_for_test, &r);
  ASSERT_FALSE(store.ok()) << "started on a damaged store in " << dir;
  EXPECT_NE(r.error.find(error_part), std::string::npos) << r.ToString();
  EXPECT_NE(r.fix.find(fix_part), std::string::npos) << r.ToString();
  EXPECT_FALSE(r.reason.empty());
  EXPECT_NE(r.impact.find("does not serve"), std::string::npos);
  EXPECT_NE(store.status().message().find("Fix: "), absl::string_view::npos);
}

// Changes the closed store of `dir` behind Mariposa's back.
void Tamper(const std::string& dir, const std::string& sql) {
  auto db = Database::Open(dir + "/mariposa.db");
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec(sql).ok()) << sql;
}

// The Reason line of the refusal (empty when the store opened).
std::string RefusalReason(const std::string& dir) {
  StoreRefusal r;
  auto store = OpenStore(dir, false, &clock_for_test, &r);
  return store.ok() ? "" : r.reason;
}

TEST(OpenStoreTest, FirstStartCreatesStoreAndMarker) {
  std::string dir = GoodDataDir("first");
  struct stat st;
  EXPECT_EQ(stat((dir + "/" + kStoreMarker).c_str(), &st), 0);
  StoreRefusal r;
  auto again = OpenStore(dir, false, &clock_for_test, &r);
  ASSERT_TRUE(again.ok()) << r.ToString();
  EXPECT_TRUE((*again)->GetProject("jupiter").ok());
}

TEST(OpenStoreTest, ZeroByteStoreRefusedEvenWithoutMarker) {
  std::string dir = TempDir("zero");
  WriteFile(dir + "/mariposa.db", "");
  ExpectRefused(dir, "is empty (0 bytes)", "docs/operations.md");
  ExpectRefused(dir, "is empty", "--init");
  StoreRefusal r;
  EXPECT_TRUE(OpenStore(dir, /*init=*/true, &clock_for_test, &r).ok()) << r.ToString();
}

TEST(OpenStoreTest, MissingStoreInDataDirThatHeldOneRefusedUnlessInit) {
  std::string dir = GoodDataDir("missing");
  for (const char* f : {"/mariposa.db", "/mariposa.db-wal", "/mariposa.db-shm"}) unlink((dir + f).c_str());
  ExpectRefused(dir, "is missing", "restore the newest backup");
  StoreRefusal r;
  auto store = OpenStore(dir, /*init=*/true, &clock_for_test, &r);
  ASSERT_TRUE(store.ok()) << r.ToString();
  EXPECT_TRUE(absl::IsNotFound((*store)->GetProject("jupiter").status()));
}

TEST(OpenStoreTest, TruncatedStoreRefused) {
  std::string dir = GoodDataDir("truncated");
  std::string db = ReadFile(dir + "/mariposa.db");
  ASSERT_GT(db.size(), 8192u);
  WriteFile(dir + "/mariposa.db", db.substr(0, db.size() / 2));
  unlink((dir + "/mariposa.db-wal").c_str());
  ExpectRefused(dir, "mariposa.db", "restore the newest backup");
}

TEST(OpenStoreTest, MissingTableRefusedNamingIt) {
  std::string dir = GoodDataDir("no-events");
  Tamper(dir, "DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete; DROP TABLE events");
  ExpectRefused(dir, "failed verification", "restore the newest backup");
  EXPECT_NE(RefusalReason(dir).find("table events"), std::string::npos) << RefusalReason(dir);
}

TEST(OpenStoreTest, MissingIndexRefused) {
  std::string dir = GoodDataDir("no-index");
  Tamper(dir, "DROP INDEX tasks_by_project");
  EXPECT_NE(RefusalReason(dir).find("index tasks_by_project"), std::string::npos) << RefusalReason(dir);
}

TEST(OpenStoreTest, NewerSchemaRefusedWithoutChange) {
  std::string dir = GoodDataDir("newer");
  Tamper(dir, "PRAGMA user_version = 99");
  ExpectRefused(dir, "cannot open store", "release that wrote this store");
}

TEST(OpenStoreTest, AlteredVersionTextRefused) {
  std::string dir = GoodDataDir("altered");
  Tamper(dir, "UPDATE versions SET canonical = canonical || 'x' WHERE number = 1");
  EXPECT_NE(RefusalReason(dir).find("no longer matches its sha256"), std::string::npos) << RefusalReason(dir);
}

// Byte flips anywhere in the file: each copy is either refused with its Fix
// line, or opens and answers every read without an error.
TEST(OpenStoreTest, ByteFlippedCopiesRefusedOrFullyReadable) {
  std::string dir = GoodDataDir("flip-src");
  Tamper(dir, "PRAGMA wal_checkpoint(TRUNCATE)");  // the flips should hit the data, not the WAL
  std::string good = ReadFile(dir + "/mariposa.db");
  std::mt19937 rng(9);
  int refused = 0, readable = 0;
  for (int i = 0; i < 40; ++i) {
    std::string copy = good;
    for (int k = 0; k < 4; ++k) {
      size_t at = std::uniform_int_distribution<size_t>(0, copy.size() - 1)(rng);
      copy[at] = static_cast<char>(copy[at] ^ (1 << std::uniform_int_distribution<int>(0, 7)(rng)));
    }
    std::string d = TempDir("flip-" + std::to_string(i));
    WriteFile(d + "/mariposa.db", copy);
    WriteFile(d + "/" + kStoreMarker, "x");
    StoreRefusal r;
    auto store = OpenStore(d, false, &clock_for_test, &r);
    if (!store.ok()) {
      ++refused;
      EXPECT_FALSE(r.fix.empty());
      continue;
    }
    ++readable;
    auto projects = (*store)->ListProjects();
    ASSERT_TRUE(projects.ok()) << "case " << i << ": " << projects.status();
    for (const auto& p : *projects) {
      auto versions = (*store)->ListVersions(p.uuid);
      ASSERT_TRUE(versions.ok()) << "case " << i << ": " << versions.status();
      EXPECT_TRUE((*store)->ListMeta(p.uuid).ok()) << "case " << i;
    }
    EXPECT_TRUE((*store)->ListEvents("", 0, 1000).ok()) << "case " << i;
  }
  std::cout << refused << " refused, " << readable << " readable\n";
  EXPECT_GT(refused, 0);
}

// What kill -9 of a busy mariposad leaves: a copy of the data dir taken
// while the store is open and has written `writes` meta keys since the last
// checkpoint, with the newest backup taken before the first of them.
struct Killed {
  std::string dir, backups;
  int64_t last_event = 0;
};
Killed KilledWhileBusy(const std::string& name, int writes) {
  Killed k;
  std::string src = GoodDataDir(name + "-src");
  k.backups = TempDir(name + "-backups");
  StoreRefusal r;
  auto store = OpenStore(src, false, &clock_for_test, &r, k.backups);
  EXPECT_TRUE(store.ok()) << r.ToString();
  EXPECT_TRUE((*store)->Backup(k.backups + "/mariposa-20260101T000000Z.db").ok());
  std::string uuid = (*store)->GetProject("jupiter")->uuid;
  for (int i = 0; i < writes; ++i) {
    EXPECT_TRUE((*store)->SetMeta(uuid, "key" + std::to_string(i), std::string(500, 'v'), false, std::nullopt, "t").ok());
  }
  k.last_event = *(*store)->LastEventIndex();
  k.dir = TempDir(name);
  for (const char* f : {"/mariposa.db", "/mariposa.db-wal", "/store-high-water"}) {
    WriteFile(k.dir + f, ReadFile(src + f));
  }
  WriteFile(k.dir + "/" + kStoreMarker, "x");
  return k;  // the source store closes here; the copy never saw a clean close
}

TEST(OpenStoreTest, KilledStoreWithIntactLogStartsWithEverything) {
  Killed k = KilledWhileBusy("killed-intact", 60);
  StoreRefusal r;
  auto store = OpenStore(k.dir, false, &clock_for_test, &r, k.backups);
  ASSERT_TRUE(store.ok()) << r.ToString();
  EXPECT_EQ(*(*store)->LastEventIndex(), k.last_event);
  EXPECT_EQ((*store)->ListMeta((*store)->GetProject("jupiter")->uuid)->size(), 61u);
}

// Issue 31: one flipped byte in the WAL used to start a store with fewer
// meta keys and events than were acknowledged, silently.
TEST(OpenStoreTest, DamagedWalRefusedBeforeSqliteTouchesIt) {
  Killed k = KilledWhileBusy("killed-flip", 60);
  std::string wal = ReadFile(k.dir + "/mariposa.db-wal");
  ASSERT_GT(wal.size(), 100000u);
  wal[wal.size() / 3] ^= 0x04;
  WriteFile(k.dir + "/mariposa.db-wal", wal);
  std::string db = ReadFile(k.dir + "/mariposa.db");
  StoreRefusal r;
  auto store = OpenStore(k.dir, false, &clock_for_test, &r, k.backups);
  ASSERT_FALSE(store.ok()) << "started on a store whose WAL drops committed transactions";
  EXPECT_NE(r.error.find("write-ahead log"), std::string::npos) << r.ToString();
  EXPECT_NE(r.reason.find("fails its checksum"), std::string::npos) << r.ToString();
  EXPECT_NE(r.reason.find("committed transactions"), std::string::npos) << r.ToString();
  // The Fix keeps the files, names the newest backup and what it loses.
  EXPECT_NE(r.fix.find("cp -a"), std::string::npos) << r.fix;
  EXPECT_NE(r.fix.find(k.backups + "/mariposa-20260101T000000Z.db"), std::string::npos) << r.fix;
  EXPECT_NE(r.fix.find(absl::StrCat("..", k.last_event)), std::string::npos) << r.fix;
  EXPECT_NE(r.impact.find("does not serve"), std::string::npos);
  // Nothing was changed: the damaged files are as they were.
  EXPECT_EQ(ReadFile(k.dir + "/mariposa.db-wal"), wal);
  EXPECT_EQ(ReadFile(k.dir + "/mariposa.db"), db);
  // Refused again on the next try, not "repaired" by the first.
  EXPECT_FALSE(OpenStore(k.dir, false, &clock_for_test, &r, k.backups).ok());
}

// --accept-store-loss: an operator with no backup starts on purpose on what
// SQLite recovers; copies of the damaged files are kept, the loss is in the
// event log, and the next start is a normal one.
TEST(OpenStoreTest, AcceptedLossStartsKeepsCopiesAndSaysSo) {
  Killed k = KilledWhileBusy("killed-accept", 60);
  std::string wal = ReadFile(k.dir + "/mariposa.db-wal");
  wal[wal.size() / 3] ^= 0x04;
  WriteFile(k.dir + "/mariposa.db-wal", wal);
  StoreRefusal r;
  {
    auto store = OpenStore(k.dir, false, &clock_for_test, &r, k.backups, /*accept_loss=*/true);
    ASSERT_TRUE(store.ok()) << r.ToString();
    size_t metas = (*store)->ListMeta((*store)->GetProject("jupiter")->uuid)->size();
    EXPECT_LT(metas, 61u) << "the commits after the damage are gone";
    auto events = (*store)->ListNewestEvents("", 0, 1);
    ASSERT_TRUE(events.ok());
    ASSERT_EQ(events->size(), 1u);
    EXPECT_EQ((*events)[0].kind, "store.loss-accepted");
    EXPECT_NE((*events)[0].detail.find("fails its checksum"), std::string::npos) << (*events)[0].detail;
  }
  std::string copies = k.dir + "/damaged-" +
                       absl::FormatTime("%Y%m%dT%H%M%SZ", clock_for_test.Now(), absl::UTCTimeZone());
  EXPECT_EQ(ReadFile(copies + "/mariposa.db-wal"), wal) << "the damaged WAL is kept as it was";
  EXPECT_TRUE(OpenStore(k.dir, false, &clock_for_test, &r, k.backups).ok()) << r.ToString();
}

// A WAL lost entirely (deleted, or an older mariposa.db copied in place):
// SQLite sees a consistent older store; the high-water mark does not.
TEST(OpenStoreTest, StoreBelowItsHighWaterMarkRefused) {
  Killed k = KilledWhileBusy("killed-nowal", 60);
  unlink((k.dir + "/mariposa.db-wal").c_str());
  StoreRefusal r;
  auto store = OpenStore(k.dir, false, &clock_for_test, &r, k.backups);
  ASSERT_FALSE(store.ok()) << "started below the high-water mark";
  EXPECT_NE(r.error.find("older than the store mariposad last wrote"), std::string::npos) << r.ToString();
  EXPECT_NE(r.reason.find("committed transactions"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find(absl::StrCat("..", k.last_event)), std::string::npos) << r.reason;
  EXPECT_NE(r.fix.find("mariposa-20260101T000000Z.db"), std::string::npos) << r.fix;
  // --init starts over on purpose, mark and all.
  EXPECT_TRUE(OpenStore(k.dir, /*init=*/true, &clock_for_test, &r, k.backups).ok()) << r.ToString();
}

TEST(OpenStoreTest, NoBackupSaysSo) {
  Killed k = KilledWhileBusy("killed-nobackup", 5);
  unlink((k.dir + "/mariposa.db-wal").c_str());
  StoreRefusal r;
  std::string empty = TempDir("killed-nobackup-none");
  ASSERT_FALSE(OpenStore(k.dir, false, &clock_for_test, &r, empty).ok());
  EXPECT_NE(r.fix.find("No backup was found in " + empty), std::string::npos) << r.fix;
}

TEST(OpenStoreTest, UnreadableHighWaterMarkIsRewrittenNotFatal) {
  Killed k = KilledWhileBusy("killed-badmark", 5);
  WriteFile(k.dir + "/store-high-water", "garbage");
  StoreRefusal r;
  auto store = OpenStore(k.dir, false, &clock_for_test, &r, k.backups);
  ASSERT_TRUE(store.ok()) << r.ToString();
  EXPECT_TRUE(ParseHighWater(ReadFile(k.dir + "/store-high-water")).has_value());
}

// Issue 48, 6: an older mariposa.db (here: its write-ahead log lost) with
// its high-water mark deleted used to start silently although the marker
// says the data dir held a store. Refused, saying why and how to go on;
// --accept-store-loss starts it and writes a new mark; a store migrated
// from before the mark existed (no commits counted) starts.
TEST(OpenStoreTest, AMissingHighWaterMarkIsRefusedWhenTheStoreCountedCommits) {
  Killed k = KilledWhileBusy("killed-nomark", 20);
  unlink((k.dir + "/mariposa.db-wal").c_str());
  unlink((k.dir + "/store-high-water").c_str());
  StoreRefusal r;
  ASSERT_FALSE(OpenStore(k.dir, false, &clock_for_test, &r, k.backups).ok());
  EXPECT_NE(r.error.find("high-water mark of store"), std::string::npos) << r.ToString();
  EXPECT_NE(r.error.find("is missing"), std::string::npos) << r.ToString();
  EXPECT_NE(r.fix.find("--accept-store-loss"), std::string::npos) << r.fix;
  EXPECT_NE(r.fix.find("mariposa-20260101T000000Z.db"), std::string::npos) << r.fix;
  StoreRefusal again;
  auto accepted = OpenStore(k.dir, false, &clock_for_test, &again, k.backups, /*accept_loss=*/true);
  ASSERT_TRUE(accepted.ok()) << again.ToString();
  EXPECT_TRUE(ParseHighWater(ReadFile(k.dir + "/store-high-water")).has_value());
}

}  // namespace
}  // namespace mariposa
