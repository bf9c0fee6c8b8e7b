// common/pg against a real, throwaway PostgreSQL: parameters and NULLs,
// errors mapped to codes that name the database (never its password), a
// lost server as UNAVAILABLE, and Reset() once it is back.
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/pg.h"
#include "common/sql.h"
#include "gtest/gtest.h"
#include "tests/pg_server.h"

namespace mariposa::testing {
namespace {

TEST(PgCodeTest, SqlStatesMapToCodesACallerCanActOn) {
  EXPECT_EQ(PgCode(""), absl::StatusCode::kOk);
  EXPECT_EQ(PgCode("00000"), absl::StatusCode::kOk);
  EXPECT_EQ(PgCode("08006"), absl::StatusCode::kUnavailable);  // connection failure
  EXPECT_EQ(PgCode("57P01"), absl::StatusCode::kUnavailable);  // admin shutdown
  EXPECT_EQ(PgCode("23505"), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(PgCode("23503"), absl::StatusCode::kFailedPrecondition);  // foreign key
  EXPECT_EQ(PgCode("40001"), absl::StatusCode::kAborted);
  EXPECT_EQ(PgCode("40P01"), absl::StatusCode::kAborted);
  EXPECT_EQ(PgCode("53100"), absl::StatusCode::kResourceExhausted);  // disk full
  EXPECT_EQ(PgCode("42601"), absl::StatusCode::kInternal);  // syntax error: our bug
}

TEST(PgConnectionTest, AgainstARealServer) {
  auto pg = PgServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status();
  auto c = PgConnection::Open((*pg)->uri());
  ASSERT_TRUE(c.ok()) << c.status();
  std::string where = absl::StrCat("PostgreSQL at 127.0.0.1:", (*pg)->port(), "/postgres");
  EXPECT_EQ((*c)->where(), where);

  ASSERT_TRUE((*c)->Exec("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT, n BIGINT)").ok());
  auto ins = (*c)->Exec("INSERT INTO kv VALUES ($1, $2, $3), ($4, $5, $6)",
                        {"a", "it's \"quoted\"", "42", "b", std::nullopt, std::nullopt});
  ASSERT_TRUE(ins.ok()) << ins.status();
  EXPECT_EQ(ins->affected(), 2);
  auto rows = (*c)->Exec("SELECT k, v, n FROM kv ORDER BY k");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->rows(), 2);
  EXPECT_EQ(rows->Text(0, 1), "it's \"quoted\"");
  EXPECT_EQ(rows->Int(0, 2), 42);
  EXPECT_TRUE(rows->IsNull(1, 1));
  EXPECT_EQ(rows->Text(1, 1), "");

  auto dup = (*c)->Exec("INSERT INTO kv (k) VALUES ($1)", {"a"});
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists) << dup.status();
  EXPECT_NE(dup.status().message().find(where), std::string::npos) << dup.status();
  EXPECT_NE(dup.status().message().find("23505"), std::string::npos) << dup.status();
  auto bad = (*c)->Exec("SELEKT 1");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInternal) << bad.status();

  // The server goes away: UNAVAILABLE naming it; back: Reset reconnects.
  ASSERT_TRUE((*pg)->Stop().ok());
  auto lost = (*c)->Exec("SELECT 1");
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kUnavailable) << lost.status();
  EXPECT_NE(lost.status().message().find(where + " cannot be reached"), std::string::npos) << lost.status();
  EXPECT_EQ((*c)->Reset().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE((*pg)->Restart().ok());
  ASSERT_TRUE((*c)->Reset().ok());
  auto again = (*c)->Exec("SELECT n FROM kv WHERE k = $1", {"a"});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->Int(0, 0), 42);
}

// A write transaction on PostgreSQL: BEGIN with the store's lock, and the
// wake-up with COMMIT, each in one round trip. A wake-up PostgreSQL refuses
// (a payload over its 8,000 bytes) fails the commit, writes nothing, and
// leaves the connection ready for the next transaction.
TEST(PgConnectionTest, ATransactionsWakeUpGoesWithItsCommit) {
  auto pg = PgServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status();
  auto db = Database::OpenPostgres((*pg)->uri());
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (k TEXT PRIMARY KEY)").ok());
  auto listener = PgConnection::Open((*pg)->uri());
  ASSERT_TRUE(listener.ok()) << listener.status();
  ASSERT_TRUE((*listener)->Exec(absl::StrCat("LISTEN ", kWakeChannel)).ok());

  auto insert = [&](const std::string& k, const std::string& payload) -> absl::Status {
    auto t = Transaction::Begin(db->get(), WriteScope::kShared);
    if (!t.ok()) return t.status();
    auto st = (*db)->Prepare("INSERT INTO t (k) VALUES (?)");
    if (!st.ok()) return st.status();
    st->Bind(1, k);
    if (absl::Status s = st->Run(); !s.ok()) return s;
    (*db)->NoticeAtCommit(payload);
    return (*t)->Commit();
  };
  ASSERT_TRUE(insert("a", "it's \"a\"").ok());
  int wake[2];
  ASSERT_EQ(pipe(wake), 0);
  auto got = (*listener)->WaitForNotifications(wake[0]);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, std::vector<std::string>{"it's \"a\""});

  absl::Status refused = insert("b", std::string(9000, 'x'));
  EXPECT_FALSE(refused.ok());
  ASSERT_TRUE(insert("c", "c").ok()) << "the connection is left in no aborted transaction";
  auto rows = (*db)->Prepare("SELECT k FROM t ORDER BY k");
  ASSERT_TRUE(rows.ok());
  std::vector<std::string> keys;
  while (true) {
    auto row = rows->Step();
    ASSERT_TRUE(row.ok()) << row.status();
    if (!*row) break;
    keys.push_back(rows->Text(0));
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "c"}));
  close(wake[0]);
  close(wake[1]);
}

// A peer that goes away is noticed in seconds (keepalives, TCP user
// timeout), unless the URI says otherwise.
TEST(PgConnectionTest, DeadPeersAreNoticedInSecondsUnlessTheUriSaysOtherwise) {
  auto pg = testing::PgServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status();
  auto c = PgConnection::Open((*pg)->uri());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->Option("tcp_user_timeout"), "5000");
  EXPECT_EQ((*c)->Option("keepalives_idle"), "5");
  auto own = PgConnection::Open((*pg)->uri() + "?tcp_user_timeout=9000&keepalives_idle=30");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ((*own)->Option("tcp_user_timeout"), "9000");
  EXPECT_EQ((*own)->Option("keepalives_idle"), "30");
}

TEST(PgConnectionTest, NothingListeningIsUnavailableAndHidesThePassword) {
  // A port nothing listens on (the server is started and stopped to own it).
  auto pg = PgServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status();
  ASSERT_TRUE((*pg)->Stop().ok());
  std::string uri = absl::StrCat("postgresql://mariposa:s3cret-pw@127.0.0.1:", (*pg)->port(), "/mariposa");
  auto c = PgConnection::Open(uri, 2);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable) << c.status();
  EXPECT_NE(c.status().message().find(absl::StrCat("127.0.0.1:", (*pg)->port(), "/mariposa")), std::string::npos)
      << c.status();
  EXPECT_EQ(c.status().message().find("s3cret-pw"), std::string::npos) << c.status();
}

}  // namespace
}  // namespace mariposa::testing
