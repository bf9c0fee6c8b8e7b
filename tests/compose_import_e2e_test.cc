// `mariposa import compose` on real Compose files (docker/awesome-compose,
// tests/testdata/compose), the way a Triton user would go: import each,
// apply the manifest to a mariposad converging tritonsim, and wait until it
// converged. tritonsim is seeded with the docker images the manifests name
// (a data center's IMGAPI holds the images its users run).
#include <dirent.h>

#include <algorithm>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

TEST(ComposeImportTest, EachRealComposeFileIsImportedAppliedAndConverged) {
  const std::string dir = TempDir("compose");
  std::vector<std::string> files;
  DIR* d = opendir("tests/testdata/compose");
  ASSERT_NE(d, nullptr);
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (absl::EndsWith(name, ".yaml")) files.push_back(name);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 12u);

  // Import each (no mariposad needed), and collect the images they name.
  std::map<std::string, std::string> manifests;  // project -> manifest file
  std::set<std::pair<std::string, std::string>> images;
  int vlan = 10;
  for (const std::string& f : files) {
    std::string project = absl::AsciiStrToLower(f.substr(0, f.size() - 5));
    std::string out = dir + "/" + project + ".yaml";
    // A VLAN of its own each: the fabric networks it makes must not clash
    // with another project's.
    RunResult r = RunProcess({"cli/mariposa", "import", "compose", "tests/testdata/compose/" + f, "--project", project,
                              "--vlan", absl::StrCat(++vlan), "--out", out});
    ASSERT_EQ(r.exit_code, 0) << f << ": " << r.out << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, "wrote " + out)) << r.err;
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    for (absl::string_view line : absl::StrSplit(text.str(), '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (!absl::ConsumePrefix(&line, "image: ")) continue;
      std::string ref(absl::StripPrefix(absl::StripSuffix(line, "\""), "\""));
      size_t at = ref.rfind('@');
      images.insert({ref.substr(0, at), at == std::string::npos ? "1.0.0" : ref.substr(at + 1)});
    }
    manifests[project] = out;
  }
  // The seed: every image, as docker images in IMGAPI.
  json seed = {{"images", json::array()}};
  int k = 0;
  for (const auto& [name, version] : images) {
    seed["images"].push_back({{"uuid", absl::StrFormat("7c0e0000-0000-4000-8000-%012d", ++k)},
                              {"name", name},
                              {"version", version},
                              {"os", "linux"},
                              {"type", "docker"}});
  }
  std::ofstream(dir + "/seed.json") << seed.dump();
  Tritonsim sim({"--servers", "4", "--seed", dir + "/seed.json", "--job-latency", "10"});
  ASSERT_TRUE(sim.Start()) << sim.log();
  ServerProcess daemon({"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir + "/d", "--triton",
                        sim.addr(), "--owner", "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                        "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms"},
                       dir + "/d");
  ASSERT_TRUE(daemon.Start()) << daemon.log();
  // All applied, then waited for together (services without checks are
  // ready after start.window, a minute by default).
  for (const auto& [project, file] : manifests) {
    RunResult applied = Cli(daemon.addr(), {"apply", "--yes", "-f", file});
    EXPECT_EQ(applied.exit_code, 0) << project << ":\n" << applied.out << applied.err;
  }
  for (const auto& [project, file] : manifests) {
    EXPECT_TRUE(Eventually(
        [&, p = project] {
          return absl::StrContains(Cli(daemon.addr(), {"-j", p, "status"}).out, "project " + p + " at version 1: converged");
        },
        absl::Seconds(150)))
        << project << ":\n" << Cli(daemon.addr(), {"-j", project, "status"}).out;
  }
}

}  // namespace
}  // namespace mariposa::testing
