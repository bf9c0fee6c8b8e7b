// Store tests on both backends (issue 33): a new, empty store per call, on
// SQLite (a new file under the test's temporary directory) or on PostgreSQL
// (a new database on one throwaway server per test binary, started at the
// first use: tests/pg_server.h). Used with INSTANTIATE_TEST_SUITE_P over
// kBackends so that every store test runs on both.
#ifndef MARIPOSA_TESTS_STORE_BACKENDS_H_
#define MARIPOSA_TESTS_STORE_BACKENDS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/sql.h"
#include "gtest/gtest.h"
#include "projects/sql_store.h"

namespace mariposa::testing {

enum class Backend { kSqlite, kPostgres };
inline constexpr Backend kBackends[] = {Backend::kSqlite, Backend::kPostgres};
std::string BackendName(const ::testing::TestParamInfo<Backend>& info);

// The `--store` value of a new, empty store.
absl::StatusOr<std::string> NewStoreSpec(Backend backend);
// A raw connection to the database `spec` names (to break rules the store
// keeps, as an attacker or a bug would).
absl::StatusOr<std::unique_ptr<Database>> OpenRaw(const std::string& spec);

}  // namespace mariposa::testing

#endif  // MARIPOSA_TESTS_STORE_BACKENDS_H_
