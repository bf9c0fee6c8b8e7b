#include "auth/sealer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/clock.h"
#include "projects/sql_store.h"

namespace mariposa::auth {
namespace {

std::string TempDir() {
  std::string t = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/sealerXXXXXX";
  return mkdtemp(t.data());
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Sealer, CreatesAPrivateKeyAndRoundTrips) {
  std::string dir = TempDir();
  auto s = Sealer::Open(dir + "/k");
  ASSERT_TRUE(s.ok()) << s.status();
  struct stat st;
  ASSERT_EQ(stat((dir + "/k").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  std::string sealed = (*s)->Seal("hunter2", "p/db.password");
  EXPECT_EQ(sealed.find("hunter2"), std::string::npos);
  EXPECT_EQ(sealed.rfind("sealed:v1:", 0), 0u);
  EXPECT_TRUE((*s)->SealedWithCurrentKey(sealed));
  EXPECT_EQ(*(*s)->Unseal(sealed, "p/db.password"), "hunter2");
  // Two seals of one value differ (fresh nonce).
  EXPECT_NE((*s)->Seal("hunter2", "p/db.password"), sealed);
  // Bound to its place, and tamper-evident.
  EXPECT_FALSE((*s)->Unseal(sealed, "q/db.password").ok());
  std::string bent = sealed;
  bent[bent.size() - 3] = bent[bent.size() - 3] == 'A' ? 'B' : 'A';
  EXPECT_FALSE((*s)->Unseal(bent, "p/db.password").ok());
  // The same key file opens it again.
  auto again = Sealer::Open(dir + "/k");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*again)->Unseal(sealed, "p/db.password"), "hunter2");
}

TEST(Sealer, RefusesAKeyOthersCanRead) {
  std::string dir = TempDir();
  ASSERT_TRUE(Sealer::Open(dir + "/k").ok());
  chmod((dir + "/k").c_str(), 0644);
  auto s = Sealer::Open(dir + "/k");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("chmod 600"), std::string::npos) << s.status();
}

TEST(Sealer, TheStoreHoldsOnlyCiphertextAndRotationKeepsEverySecret) {
  std::string dir = TempDir();
  auto sealer = Sealer::Open(dir + "/secrets.key");
  ASSERT_TRUE(sealer.ok());
  SimulatedClock clock(absl::FromUnixSeconds(1700000000));
  {
    auto store = SqlProjectStore::Open(dir + "/m.db", &clock);
    ASSERT_TRUE(store.ok());
    (*store)->SetSecretCodec(sealer->get());
    auto p = (*store)->CreateProject("jupiter", "", "t");
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE((*store)->SetMeta(p->uuid, "db.password", "correct-horse-battery", true, std::nullopt, "t").ok());
    ASSERT_TRUE((*store)->SetMeta(p->uuid, "plain", "visible-value", false, std::nullopt, "t").ok());
    ASSERT_TRUE((*store)->ImportMeta(p->uuid, {{"api.key", "sk-live-1234567"}}, true, "t").ok());
    EXPECT_EQ((*store)->GetMeta(p->uuid, "db.password")->value, "correct-horse-battery");
    std::string old_key = (*sealer)->current_key_id();
    ASSERT_TRUE((*sealer)->BeginRotation().ok());
    auto n = (*store)->ResealSecrets();
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 2);
    ASSERT_TRUE((*sealer)->FinishRotation().ok());
    EXPECT_NE((*sealer)->current_key_id(), old_key);
    EXPECT_EQ(access((dir + "/secrets.key." + old_key + ".retired").c_str(), F_OK), 0);
    EXPECT_EQ((*store)->GetMeta(p->uuid, "db.password")->value, "correct-horse-battery");
    EXPECT_EQ((*store)->GetMeta(p->uuid, "api.key")->value, "sk-live-1234567");
    ASSERT_TRUE((*store)->Backup(dir + "/backup.db").ok());
  }
  for (const char* f : {"/m.db", "/m.db-wal", "/backup.db"}) {
    std::string bytes = Slurp(dir + f);
    EXPECT_EQ(bytes.find("correct-horse-battery"), std::string::npos) << f;
    EXPECT_EQ(bytes.find("sk-live-1234567"), std::string::npos) << f;
  }
  // The grep itself works: the plain value is in the store files.
  EXPECT_NE((Slurp(dir + "/m.db") + Slurp(dir + "/m.db-wal")).find("visible-value"), std::string::npos);
  // A new process: the rotated key file alone opens everything.
  auto fresh = Sealer::Open(dir + "/secrets.key");
  ASSERT_TRUE(fresh.ok());
  auto store = SqlProjectStore::Open(dir + "/m.db", &clock);
  ASSERT_TRUE(store.ok());
  (*store)->SetSecretCodec(fresh->get());
  auto p = (*store)->GetProject("jupiter");
  EXPECT_EQ((*store)->GetMeta(p->uuid, "db.password")->value, "correct-horse-battery");
}

TEST(Sealer, AnInterruptedRotationIsFinishedByTheNextOpen) {
  std::string dir = TempDir();
  SimulatedClock clock(absl::FromUnixSeconds(1700000000));
  auto s1 = Sealer::Open(dir + "/k");
  auto store = SqlProjectStore::Open(dir + "/m.db", &clock);
  (*store)->SetSecretCodec(s1->get());
  auto p = (*store)->CreateProject("jupiter", "", "t");
  ASSERT_TRUE((*store)->SetMeta(p->uuid, "s", "v1", true, std::nullopt, "t").ok());
  ASSERT_TRUE((*s1)->BeginRotation().ok());  // the crash comes before any secret is sealed again
  auto s2 = Sealer::Open(dir + "/k");
  ASSERT_TRUE(s2.ok());
  (*store)->SetSecretCodec(s2->get());
  EXPECT_EQ(*(*store)->ResealSecrets(), 1);
  ASSERT_TRUE((*s2)->FinishRotation().ok());
  EXPECT_NE(access((dir + "/k.next").c_str(), F_OK), 0);
  auto s3 = Sealer::Open(dir + "/k");
  (*store)->SetSecretCodec(s3->get());
  EXPECT_EQ((*store)->GetMeta(p->uuid, "s")->value, "v1");
  EXPECT_EQ(*(*store)->ResealSecrets(), 0);
}

}  // namespace
}  // namespace mariposa::auth
