// The throwaway PostgreSQL the store tests of issue 33 run against: it
// starts, answers libpq on loopback, keeps its data across a stop and a
// restart on the same port, refuses connections while stopped, and leaves
// nothing behind.
#include "tests/pg_server.h"

#include <postgresql/libpq-fe.h>
#include <sys/stat.h>

#include <string>

#include "gtest/gtest.h"

namespace mariposa::testing {
namespace {

// The first column of the first row of `sql`, or "ERROR: …".
std::string One(PGconn* c, const std::string& sql) {
  PGresult* r = PQexec(c, sql.c_str());
  std::string out;
  ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
  else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) out = std::string("ERROR: ") + PQresultErrorMessage(r);
  PQclear(r);
  return out;
}

TEST(PgServerTest, StartsAnswersKeepsDataAcrossARestartAndCleansUp) {
  auto pg = PgServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status();
  std::string uri = (*pg)->uri();
  std::string dir;
  {
    PGconn* c = PQconnectdb(uri.c_str());
    ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    EXPECT_EQ(One(c, "SELECT 1"), "1");
    EXPECT_EQ(One(c, "CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)"), "");
    EXPECT_EQ(One(c, "INSERT INTO t VALUES ('a', 42)"), "");
    dir = One(c, "SHOW data_directory");
    PQfinish(c);
  }
  struct stat st {};
  ASSERT_EQ(stat(dir.c_str(), &st), 0) << dir;

  ASSERT_TRUE((*pg)->Stop().ok());
  PGconn* down = PQconnectdb((uri + "?connect_timeout=2").c_str());
  EXPECT_NE(PQstatus(down), CONNECTION_OK);
  PQfinish(down);

  ASSERT_TRUE((*pg)->Restart().ok());
  PGconn* c = PQconnectdb(uri.c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  EXPECT_EQ(One(c, "SELECT v FROM t WHERE k = 'a'"), "42");
  PQfinish(c);

  pg->reset();
  EXPECT_NE(stat(dir.c_str(), &st), 0) << "the server's directory outlived it";
}

}  // namespace
}  // namespace mariposa::testing
