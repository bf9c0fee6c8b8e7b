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
#include "common/sqlite.h"
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

}  // namespace
}  // namespace mariposa
