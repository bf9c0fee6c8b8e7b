#include "projects/restore.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "projects/sql_store.h"
#include "tests/store_backends.h"

namespace mariposa {
namespace {

// "sealed:v1:KEY:PLAIN": opens only what one of its keys sealed.
class TestCodec : public SecretCodec {
 public:
  explicit TestCodec(std::vector<std::string> keys) : keys_(std::move(keys)) {}
  std::string Seal(absl::string_view plain, absl::string_view) const override {
    return absl::StrCat("sealed:v1:", keys_[0], ":", plain);
  }
  absl::StatusOr<std::string> Unseal(absl::string_view sealed, absl::string_view) const override {
    for (const std::string& k : keys_) {
      std::string prefix = absl::StrCat("sealed:v1:", k, ":");
      if (absl::StartsWith(sealed, prefix)) return std::string(sealed.substr(prefix.size()));
    }
    return absl::PermissionDeniedError("sealed with a key this key file does not have");
  }
  bool SealedWithCurrentKey(absl::string_view value) const override {
    return absl::StartsWith(value, absl::StrCat("sealed:v1:", keys_[0], ":"));
  }

 private:
  std::vector<std::string> keys_;
};

class RestoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/restore_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    system(("rm -rf " + dir_ + " && mkdir -p " + dir_ + "/data").c_str());
    data_ = dir_ + "/data";
  }
  // A store with `names` as projects, at DATA/mariposa.db; a backup of it
  // at `backup` when given.
  void MakeStore(const std::string& path, const std::vector<std::string>& names, const std::string& backup = "") {
    auto store = SqlProjectStore::Open(path, &clock_);
    ASSERT_TRUE(store.ok()) << store.status();
    for (const auto& n : names) ASSERT_TRUE((*store)->CreateProject(n, "", "test").ok());
    if (!backup.empty()) {
      ASSERT_TRUE((*store)->Backup(backup).ok());
    }
  }
  std::vector<std::string> Projects(const std::string& path) {
    auto store = SqlProjectStore::Open(path, &clock_);
    std::vector<std::string> out;
    auto projects = (*store)->ListProjects();
    for (const auto& p : *projects) out.push_back(p.name);
    return out;
  }
  SimulatedClock clock_;
  std::string dir_, data_;
};

TEST_F(RestoreTest, PutsTheBackupInPlaceAndKeepsTheOldStore) {
  MakeStore(dir_ + "/src.db", {"mars", "venus"}, dir_ + "/backup.db");
  MakeStore(data_ + "/mariposa.db", {"jupiter"});
  auto r = RestoreStore(dir_ + "/backup.db", data_, {}, &clock_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->projects, 2);
  EXPECT_EQ(Projects(data_ + "/mariposa.db"), (std::vector<std::string>{"mars", "venus"}));
  ASSERT_FALSE(r->moved_aside.empty());
  EXPECT_EQ(Projects(r->moved_aside), std::vector<std::string>{"jupiter"});
  struct stat st;
  ASSERT_EQ(stat((data_ + "/mariposa.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  EXPECT_NE(stat((data_ + "/mariposa.db.restoring").c_str(), &st), 0) << "no copy left behind";
  // Again at the same instant: the store kept the first time is not replaced.
  auto again = RestoreStore(dir_ + "/backup.db", data_, {}, &clock_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(again->moved_aside, r->moved_aside);
  EXPECT_EQ(Projects(r->moved_aside), std::vector<std::string>{"jupiter"});
  EXPECT_EQ(Projects(again->moved_aside), (std::vector<std::string>{"mars", "venus"}));
}

TEST_F(RestoreTest, RefusesWhileMariposadHoldsTheDataDir) {
  MakeStore(dir_ + "/src.db", {"mars"}, dir_ + "/backup.db");
  MakeStore(data_ + "/mariposa.db", {"jupiter"});
  int fd = open((data_ + "/mariposad.lock").c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  ASSERT_EQ(write(fd, "4242\n", 5), 5);
  // flock locks belong to the open file: a second open in this process
  // conflicts as another process's would.
  auto r = RestoreStore(dir_ + "/backup.db", data_, {}, &clock_);
  close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status()));
  EXPECT_NE(r.status().message().find("4242"), std::string::npos) << r.status();
  EXPECT_EQ(Projects(data_ + "/mariposa.db"), std::vector<std::string>{"jupiter"}) << "unchanged";
}

TEST_F(RestoreTest, RefusesACorruptOrForeignFileAndChangesNothing) {
  MakeStore(data_ + "/mariposa.db", {"jupiter"});
  std::ofstream(dir_ + "/garbage.db") << "this is not SQLite at all, just text that is long enough to look like a file";
  auto r = RestoreStore(dir_ + "/garbage.db", data_, {}, &clock_);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  // A SQLite file that is not a Mariposa store.
  {
    auto db = Database::Open(dir_ + "/other.db");
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t (x)").ok());
  }
  r = RestoreStore(dir_ + "/other.db", data_, {}, &clock_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a Mariposa store"), std::string::npos) << r.status();
  // A backup damaged in the middle (a page overwritten).
  MakeStore(dir_ + "/src.db", {"mars"}, dir_ + "/damaged.db");
  {
    int fd = open((dir_ + "/damaged.db").c_str(), O_WRONLY);
    std::string junk(4096, '\x5a');
    ASSERT_EQ(pwrite(fd, junk.data(), junk.size(), 4096 * 2), 4096);
    close(fd);
  }
  r = RestoreStore(dir_ + "/damaged.db", data_, {}, &clock_);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(Projects(data_ + "/mariposa.db"), std::vector<std::string>{"jupiter"}) << "unchanged";
  struct stat st;
  EXPECT_NE(stat((data_ + "/mariposa.db.restoring").c_str(), &st), 0);
  EXPECT_FALSE(RestoreStore(dir_ + "/missing.db", data_, {}, &clock_).ok());
}

TEST_F(RestoreTest, RefusesANewerSchema) {
  MakeStore(dir_ + "/src.db", {"mars"}, dir_ + "/newer.db");
  {
    auto db = Database::Open(dir_ + "/newer.db");
    ASSERT_TRUE((*db)->Exec("PRAGMA user_version = 999").ok());
  }
  MakeStore(data_ + "/mariposa.db", {"jupiter"});
  auto r = RestoreStore(dir_ + "/newer.db", data_, {}, &clock_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("newer mariposad"), std::string::npos) << r.status();
}

// The secrets in a backup open with the key mariposad will use, or the
// restore is refused and nothing changes.
TEST_F(RestoreTest, SecretsMustOpenWithTheKey) {
  TestCodec key_a({"aaaa"});
  {
    auto store = SqlProjectStore::Open(dir_ + "/src.db", &clock_);
    ASSERT_TRUE(store.ok());
    (*store)->SetSecretCodec(&key_a);
    auto p = (*store)->CreateProject("mars", "", "test");
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE((*store)->SetMeta(p->uuid, "password", "hunter2", true, std::nullopt, "test").ok());
    ASSERT_TRUE((*store)->Backup(dir_ + "/backup.db").ok());
  }
  MakeStore(data_ + "/mariposa.db", {"jupiter"});
  TestCodec key_b({"bbbb"});
  auto r = RestoreStore(dir_ + "/backup.db", data_, {&key_b, "/keys/b"}, &clock_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("do not open with the secrets key /keys/b"), std::string::npos) << r.status();
  r = RestoreStore(dir_ + "/backup.db", data_, {nullptr, "/keys/none"}, &clock_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("holds 1 secret meta values and there is no secrets key at /keys/none"),
            std::string::npos)
      << r.status();
  EXPECT_EQ(Projects(data_ + "/mariposa.db"), std::vector<std::string>{"jupiter"}) << "unchanged";
  // A rotated key: the new one seals, the retired one still opens.
  TestCodec rotated({"cccc", "aaaa"});
  r = RestoreStore(dir_ + "/backup.db", data_, {&rotated, "/keys/c"}, &clock_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->secrets, 1);
  EXPECT_EQ(Projects(data_ + "/mariposa.db"), std::vector<std::string>{"mars"});
}

// Restore into PostgreSQL: a backup (of a PostgreSQL store, so a SQLite
// file) is verified, its secrets opened with the key, and copied into a new,
// empty database; a database that holds anything is refused unchanged; a
// backup whose secrets do not open is refused before anything is written.
TEST_F(RestoreTest, IntoANewPostgresDatabase) {
  TestCodec key({"aaaa"});
  auto source_spec = testing::NewStoreSpec(testing::Backend::kPostgres);
  ASSERT_TRUE(source_spec.ok()) << source_spec.status();
  {
    auto source = SqlProjectStore::OpenSpec(*source_spec, &clock_);
    ASSERT_TRUE(source.ok()) << source.status();
    (*source)->SetSecretCodec(&key);
    auto p = (*source)->CreateProject("mars", "", "test");
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE((*source)->SetMeta(p->uuid, "password", "hunter2", true, std::nullopt, "test").ok());
    ASSERT_TRUE((*source)->Backup(dir_ + "/pg-backup.db").ok());
  }
  TestCodec wrong({"bbbb"});
  auto target = testing::NewStoreSpec(testing::Backend::kPostgres);
  ASSERT_TRUE(target.ok());
  auto refused = RestoreStoreInto(dir_ + "/pg-backup.db", *target, {&wrong, "wrong.key"}, &clock_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("do not open"), std::string::npos) << refused.status();
  auto r = RestoreStoreInto(dir_ + "/pg-backup.db", *target, {&key, "good.key"}, &clock_);
  ASSERT_TRUE(r.ok()) << r.status();  // the refusal wrote nothing: the target is still empty
  EXPECT_EQ(r->projects, 1);
  EXPECT_EQ(r->secrets, 1);
  EXPECT_NE(r->store.find("PostgreSQL at 127.0.0.1:"), std::string::npos);
  auto restored = SqlProjectStore::OpenSpec(*target, &clock_);
  ASSERT_TRUE(restored.ok());
  (*restored)->SetSecretCodec(&key);
  auto mars = (*restored)->GetProject("mars");
  ASSERT_TRUE(mars.ok());
  EXPECT_EQ((*restored)->GetMeta(mars->uuid, "password")->value, "hunter2");
  auto again = RestoreStoreInto(dir_ + "/pg-backup.db", *target, {&key, "good.key"}, &clock_);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("not empty"), std::string::npos) << again.status();
}

}  // namespace
}  // namespace mariposa
