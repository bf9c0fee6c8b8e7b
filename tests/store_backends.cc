#include "tests/store_backends.h"

#include <unistd.h>

#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tests/pg_server.h"

namespace mariposa::testing {
namespace {

// The test binary's PostgreSQL, started at the first use and stopped (with
// its directory removed) when the binary exits.
absl::StatusOr<PgServer*> SharedServer() {
  static absl::StatusOr<std::unique_ptr<PgServer>>* server = new absl::StatusOr<std::unique_ptr<PgServer>>(
      PgServer::Start());
  static const bool stop_at_exit = [] {
    std::atexit([] {
      if (server->ok()) server->value().reset();
    });
    return true;
  }();
  (void)stop_at_exit;
  if (!server->ok()) return server->status();
  return server->value().get();
}

std::atomic<int> next_store{0};

}  // namespace

std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kSqlite ? "Sqlite" : "Postgres";
}

absl::StatusOr<std::string> NewStoreSpec(Backend backend) {
  int n = next_store++;
  if (backend == Backend::kSqlite) {
    std::string path = absl::StrCat(::testing::TempDir(), "/store-", getpid(), "-", n, ".db");
    for (const char* f : {"", "-wal", "-shm"}) unlink((path + f).c_str());
    return "sqlite:" + path;
  }
  absl::StatusOr<PgServer*> pg = SharedServer();
  if (!pg.ok()) return pg.status();
  auto admin = PgConnection::Open((*pg)->uri());
  if (!admin.ok()) return admin.status();
  std::string db = absl::StrCat("store_", getpid(), "_", n);
  auto made = (*admin)->Exec(absl::StrCat("CREATE DATABASE ", db));
  if (!made.ok()) return made.status();
  return absl::StrCat("postgresql://postgres@127.0.0.1:", (*pg)->port(), "/", db);
}

absl::StatusOr<std::unique_ptr<Database>> OpenRaw(const std::string& spec) {
  if (SqlProjectStore::IsPostgresSpec(spec)) return Database::OpenPostgres(spec);
  return Database::Open(spec.substr(std::string("sqlite:").size()));
}

}  // namespace mariposa::testing
