// The `mariposa` CLI starts fast because it does not load gRPC, protobuf,
// Abseil or libpq as shared libraries (cli/BUILD.bazel, common/pq_lazy.cc;
// docs/development.md "How fast the CLI starts"), and the one command that
// needs libpq still works: it loads it when it first talks to PostgreSQL.
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/pg_server.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

// The shared libraries the binary records as needed (readelf -d).
std::set<std::string> Needed(const std::string &binary) {
  RunResult r = RunProcess({"/usr/bin/readelf", "-d", binary});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> out;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    if (!absl::StrContains(line, "(NEEDED)")) continue;
    size_t open = line.find('[');
    size_t close = line.find(']', open);
    if (open != absl::string_view::npos && close != absl::string_view::npos) {
      out.insert(std::string(line.substr(open + 1, close - open - 1)));
    }
  }
  return out;
}

TEST(CliStartupTest, LoadsNeitherGrpcNorProtobufNorAbseilNorLibpq) {
  std::set<std::string> needed = Needed("cli/mariposa");
  ASSERT_TRUE(needed.count("libc.so.6")) << "readelf's output was not understood";
  for (const std::string &lib : needed) {
    for (const char *heavy : {"grpc", "protobuf", "absl", "libpq", "yaml-cpp", "sqlite", "gpr", "upb", "re2"}) {
      EXPECT_FALSE(absl::StrContains(lib, heavy))
          << "cli/mariposa needs " << lib << " again; each command then starts tens of ms slower. A library "
          << "linked shared: give it to static_linkopts "
             "(third_party/system/libs.bzl). libpq: a function "
          << "common/pg.cc now calls must be added to common/pq_lazy.cc.";
    }
  }
  // The daemon links them as usual: the test would notice a readelf that
  // lists nothing.
  std::set<std::string> daemon = Needed("daemon/mariposad");
  EXPECT_TRUE(daemon.count("libpq.so.5")) << "mariposad is expected to link libpq shared";
}

// `admin restore --store postgresql://…`: the CLI loads libpq on first use.
TEST(CliStartupTest, RestoresIntoPostgresqlWithLibpqLoadedOnUse) {
  auto pg = PgServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status();
  std::string dir = TempDir("cli_startup");
  std::string backups = dir + "/backups";
  ServerProcess sqlite(
      {"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir + "/data", "--backup-dir", backups},
      dir + "/sqlite");
  ASSERT_TRUE(sqlite.Start()) << sqlite.log();
  ASSERT_EQ(Cli(sqlite.addr(), {"project", "create", "saturn"}).exit_code, 0);
  ASSERT_EQ(Cli(sqlite.addr(), {"admin", "backup", "b.db"}).exit_code, 0);
  ASSERT_EQ(sqlite.Stop(), 0);

  std::string key = dir + "/data/secrets.key";
  RunResult unreachable = RunProcess({"cli/mariposa", "admin", "restore", backups + "/b.db", "--store",
                                      "postgresql://postgres@127.0.0.1:1/postgres", "--secrets-key", key});
  EXPECT_EQ(unreachable.exit_code, 1);
  EXPECT_NE(unreachable.err.find("nothing was changed"), std::string::npos) << unreachable.err;
  EXPECT_NE(unreachable.err.find("127.0.0.1"), std::string::npos) << "libpq's own message: " << unreachable.err;

  RunResult restored = RunProcess(
      {"cli/mariposa", "admin", "restore", backups + "/b.db", "--store", (*pg)->uri(), "--secrets-key", key});
  ASSERT_EQ(restored.exit_code, 0) << restored.out << restored.err;
  EXPECT_NE(restored.out.find("1 projects"), std::string::npos) << restored.out;

  ServerProcess shared({"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir + "/node", "--store",
                        (*pg)->uri(), "--node", "node-a", "--secrets-key", key},
                       dir + "/pg");
  ASSERT_TRUE(shared.Start()) << shared.log();
  RunResult list = Cli(shared.addr(), {"project", "list"});
  EXPECT_NE(list.out.find("saturn"), std::string::npos) << list.out << list.err;
}

}  // namespace
}  // namespace mariposa::testing
