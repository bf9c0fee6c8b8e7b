// InsertRows (common/sql.h) on both backends: every row lands once, in
// order, with its values, whatever the count (empty, below, at and past a
// batch), and a failing row fails the call.
#include <string>

#include "absl/strings/str_cat.h"
#include "common/sql.h"
#include "gtest/gtest.h"
#include "tests/store_backends.h"

namespace mariposa::testing {
namespace {

class InsertRowsTest : public ::testing::TestWithParam<Backend> {};

TEST_P(InsertRowsTest, EveryRowOnceWithItsValues) {
  auto spec = NewStoreSpec(GetParam());
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto db = OpenRaw(*spec);
  ASSERT_TRUE(db.ok()) << db.status();
  Database* d = db->get();
  for (size_t n : {0, 1, 2, 7, 63, 64, 65, 127, 1000}) {
    ASSERT_TRUE(d->Exec("DROP TABLE IF EXISTS t; CREATE TABLE t (k BIGINT PRIMARY KEY, a TEXT, b BIGINT)").ok());
    ASSERT_TRUE(InsertRows(d, "t", {"k", "a", "b"}, n, [](Statement& st, size_t row, int f) {
                  st.Bind(f, static_cast<int64_t>(row)).Bind(f + 1, absl::StrCat("r", row)).Bind(f + 2,
                                                                                                   static_cast<int64_t>(row * 3));
                }).ok())
        << n;
    auto st = d->Prepare("SELECT COUNT(*), COALESCE(SUM(b), 0), COALESCE(MAX(k), -1) FROM t");
    ASSERT_TRUE(st.ok());
    auto row = st->Step();
    ASSERT_TRUE(row.ok() && *row) << n;
    EXPECT_EQ(st->Int(0), static_cast<int64_t>(n));
    EXPECT_EQ(st->Int(1), static_cast<int64_t>(3 * n * (n ? n - 1 : 0) / 2));
    EXPECT_EQ(st->Int(2), static_cast<int64_t>(n) - 1);
    auto one = d->Prepare("SELECT a FROM t WHERE k = ?");
    ASSERT_TRUE(one.ok());
    if (n > 0) {
      one->Bind(1, static_cast<int64_t>(n - 1));
      ASSERT_TRUE(*one->Step());
      EXPECT_EQ(one->Text(0), absl::StrCat("r", n - 1));
    }
  }
  // A duplicate key in the 65th row: the call fails.
  ASSERT_TRUE(d->Exec("DROP TABLE IF EXISTS t; CREATE TABLE t (k BIGINT PRIMARY KEY, a TEXT, b BIGINT)").ok());
  EXPECT_FALSE(InsertRows(d, "t", {"k", "a", "b"}, 65, [](Statement& st, size_t row, int f) {
                 st.Bind(f, static_cast<int64_t>(row == 64 ? 0 : row)).Bind(f + 1, "x").Bind(f + 2, 0);
               }).ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, InsertRowsTest, ::testing::ValuesIn(kBackends), BackendName);

}  // namespace
}  // namespace mariposa::testing
