// CheckWal against write-ahead logs written by SQLite itself, damaged the
// ways a disk or a person damages them; and the premise: SQLite's own
// recovery drops the commits after a damaged frame without an error.
#include "common/sqlite_wal.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/sql.h"
#include "gtest/gtest.h"

namespace mariposa {
namespace {

std::string NewDir() {
  std::string t = absl::StrCat(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", "/walXXXXXX");
  return mkdtemp(t.data());
}
std::string Read(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream b;
  b << in.rdbuf();
  return b.str();
}
void Write(const std::string& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

constexpr int kCommits = 40;

// A database in WAL mode whose log holds `commits` transactions (of a few
// frames each), as a process killed after them leaves it: returns the
// directory; the db and the -wal are copies taken while the writer was open.
struct Written {
  std::string db, wal;
};
Written WriteCommits(int commits, int restart_at = -1) {
  std::string dir = NewDir();
  auto db = Database::Open(dir + "/w.db");
  EXPECT_TRUE(db.ok());
  EXPECT_TRUE((*db)->Exec("PRAGMA journal_mode=WAL").ok());
  EXPECT_TRUE((*db)->Exec("PRAGMA wal_autocheckpoint=0").ok());
  EXPECT_TRUE((*db)->Exec("CREATE TABLE t (i INTEGER PRIMARY KEY, pad TEXT)").ok());
  EXPECT_TRUE((*db)->Exec("PRAGMA wal_checkpoint(TRUNCATE)").ok());
  for (int i = 0; i < commits; ++i) {
    if (i == restart_at) {
      EXPECT_TRUE((*db)->Exec("PRAGMA wal_checkpoint(RESTART)").ok());
    }
    EXPECT_TRUE((*db)->Exec(absl::StrCat("INSERT INTO t VALUES (", i, ", printf('%.3000c', 'x'))")).ok());
  }
  Written w{Read(dir + "/w.db"), Read(dir + "/w.db-wal")};
  return w;  // the writer closes here; the copies are what kill -9 leaves
}

int64_t FrameOffset(const WalReport& r, int64_t frame) { return 32 + (frame - 1) * (24 + r.page_size); }

// Opens a copy of db + wal with SQLite and counts the rows it recovered.
int64_t RowsSqliteRecovers(const Written& w, const std::string& wal) {
  std::string dir = NewDir();
  Write(dir + "/w.db", w.db);
  Write(dir + "/w.db-wal", wal);
  auto db = Database::Open(dir + "/w.db");
  EXPECT_TRUE(db.ok());
  auto st = (*db)->Prepare("SELECT COUNT(*) FROM t");
  EXPECT_TRUE(st.ok()) << st.status();
  EXPECT_TRUE(*st->Step());
  return st->Int(0);
}

TEST(CheckWal, AnIntactLogIsOkAndCountsEveryCommit) {
  Written w = WriteCommits(kCommits);
  WalReport r = CheckWal(w.wal);
  EXPECT_TRUE(r.ok) << r.damage;
  EXPECT_EQ(r.recovered_commits, kCommits);
  EXPECT_EQ(r.first_bad_frame, 0);
  EXPECT_EQ(r.valid_frames, r.frames);
  EXPECT_EQ(RowsSqliteRecovers(w, w.wal), kCommits);
}

TEST(CheckWal, EmptyOrHeaderOnlyIsOk) {
  EXPECT_TRUE(CheckWal("").ok);
  Written w = WriteCommits(1);
  EXPECT_TRUE(CheckWal(w.wal.substr(0, 32)).ok);
}

// The case: one flipped byte anywhere in an earlier frame. SQLite
// silently recovers less; CheckWal says so, for every position tried.
TEST(CheckWal, AFlippedByteBeforeLaterCommitsIsDamage) {
  Written w = WriteCommits(kCommits);
  WalReport intact = CheckWal(w.wal);
  ASSERT_GT(intact.frames, 10);
  for (int64_t frame : {int64_t{1}, intact.frames / 3, intact.frames / 2, intact.frames - 3}) {
    for (int64_t within : {int64_t{0}, int64_t{9}, int64_t{17}, int64_t{24}, int64_t{24} + intact.page_size / 2,
                           int64_t{24} + intact.page_size - 1}) {
      std::string bad = w.wal;
      bad[FrameOffset(intact, frame) + within] ^= 0x20;
      WalReport r = CheckWal(bad);
      SCOPED_TRACE(absl::StrCat("frame ", frame, " byte ", within));
      EXPECT_FALSE(r.ok);
      EXPECT_EQ(r.first_bad_frame, frame);
      EXPECT_GT(r.lost_commits, 0);
      // The damaged frame itself may have been a commit (counted in neither).
      EXPECT_GE(r.recovered_commits + r.lost_commits, kCommits - 1);
      EXPECT_LE(r.recovered_commits + r.lost_commits, kCommits);
      EXPECT_NE(r.damage.find(absl::StrCat("frame ", frame, " of ")), std::string::npos) << r.damage;
      // The premise: SQLite itself opens it without complaint, with less.
      if (within == 24) {
        EXPECT_EQ(RowsSqliteRecovers(w, bad), r.recovered_commits);
      }
    }
  }
}

TEST(CheckWal, ADamagedHeaderInFrontOfFramesIsDamage) {
  Written w = WriteCommits(kCommits);
  for (int at : {0, 8, 16, 25}) {
    std::string bad = w.wal;
    bad[at] ^= 0x01;
    WalReport r = CheckWal(bad);
    EXPECT_FALSE(r.ok) << "byte " << at;
    EXPECT_NE(r.damage.find("header"), std::string::npos);
  }
  std::string bad = w.wal;
  bad[24] ^= 0x01;
  EXPECT_EQ(RowsSqliteRecovers(w, bad), 0);  // SQLite ignores the whole log
}

// A process killed while writing its last frame leaves it torn; that commit
// was never acknowledged (the commit returns after the write), so recovery
// rightly drops it. The high-water mark covers damage to a last frame.
TEST(CheckWal, ATornLastFrameIsOk) {
  Written w = WriteCommits(kCommits);
  WalReport intact = CheckWal(w.wal);
  std::string torn = w.wal;
  torn[FrameOffset(intact, intact.frames) + 24 + 100] ^= 0x55;
  WalReport r = CheckWal(torn);
  EXPECT_TRUE(r.ok) << r.damage;
  EXPECT_EQ(r.first_bad_frame, intact.frames);
  EXPECT_EQ(r.recovered_commits, kCommits - 1);
  // And a file cut in the middle of a frame.
  EXPECT_TRUE(CheckWal(w.wal.substr(0, w.wal.size() - 100)).ok);
}

// After a checkpoint the log starts over with new salts; the frames of the
// older generation beyond the new end are not commits SQLite would replay.
TEST(CheckWal, FramesOfAnOlderGenerationAreNotLostCommits) {
  Written w = WriteCommits(kCommits, /*restart_at=*/30);
  WalReport r = CheckWal(w.wal);
  EXPECT_TRUE(r.ok) << r.damage;
  EXPECT_EQ(r.recovered_commits, kCommits - 30);
  EXPECT_GT(r.frames, r.valid_frames);  // the old generation's tail
  EXPECT_EQ(RowsSqliteRecovers(w, w.wal), kCommits);
  // Damage in the new generation's last frame, old frames after it: ok.
  std::string bad = w.wal;
  bad[FrameOffset(r, r.valid_frames) + 24 + 7] ^= 0x01;
  EXPECT_TRUE(CheckWal(bad).ok) << CheckWal(bad).damage;
  // Damage before the new generation's last commit: lost commits.
  bad = w.wal;
  bad[FrameOffset(r, 1) + 24 + 7] ^= 0x01;
  EXPECT_FALSE(CheckWal(bad).ok);
}

}  // namespace
}  // namespace mariposa
