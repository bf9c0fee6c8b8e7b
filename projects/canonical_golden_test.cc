// The compiled forms of every manifest in the tests, docs and examples
// (projects/testdata/manifests.txt) are fixed: the canonical text's hash
// (a stored version's identity), each service's spec JSON and instance hash
// (what decides a rollout), the errors of those that do not parse, and the
// diff of each manifest against the one before it. A faster parser or
// writer must leave every line of projects/testdata/canonical.golden as it
// is (issue 49, 1: "hashes unchanged for every stored version").
//
// After a deliberate change of the canonical form (which would make every
// stored version look changed), write the file anew:
//   MARIPOSA_GOLDEN_WRITE=$PWD/projects/testdata/canonical.golden bazel test //projects:canonical_golden_test
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/ids.h"
#include "projects/diff.h"
#include "projects/manifest.h"

namespace mariposa {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Corpus() {
  const std::string kSep = "#### manifest ####\n";
  std::string all = ReadFile("projects/testdata/manifests.txt");
  std::vector<std::string> out;
  size_t at = all.find(kSep);
  while (at != std::string::npos) {
    size_t next = all.find(kSep, at + kSep.size());
    out.push_back(all.substr(at + kSep.size(), next == std::string::npos ? std::string::npos : next - at - kSep.size()));
    at = next;
  }
  return out;
}

// One line per manifest and one per diff.
std::string Golden() {
  std::string out;
  std::vector<std::string> corpus = Corpus();
  std::shared_ptr<CompiledManifest> before;
  for (size_t k = 0; k < corpus.size(); ++k) {
    ParseResult p = ParseManifest(corpus[k], {});
    if (!p.manifest) {
      absl::StrAppend(&out, k, " invalid: ", p.total_errors, " errors, first at line ",
                      p.errors.empty() ? -1 : p.errors[0].line, "\n");
      continue;
    }
    auto c = std::make_shared<CompiledManifest>(Compile(std::move(*p.manifest)));
    std::string specs, hashes;
    for (const auto& [name, json] : c->spec_json) absl::StrAppend(&specs, name, "=", json, "\n");
    for (const auto& [name, hash] : c->instance_hash) absl::StrAppend(&hashes, name, "=", hash, "\n");
    absl::StrAppend(&out, k, " hash ", c->hash, " specs ", Sha256Hex(specs).substr(0, 16), " instances ",
                    Sha256Hex(hashes).substr(0, 16), " services ", c->spec_json.size(), "\n");
    v1::Diff d = DiffManifests(before.get(), *c);
    std::string text;
    d.SerializeToString(&text);
    absl::StrAppend(&out, k, " diff ", Sha256Hex(text).substr(0, 16), "\n");
    before = c;
  }
  return out;
}

TEST(CanonicalGoldenTest, EveryManifestCompilesAndDiffsAsBefore) {
  std::vector<std::string> corpus = Corpus();
  ASSERT_GE(corpus.size(), 100u) << "projects/testdata/manifests.txt not read";
  std::string got = Golden();
  if (const char* path = std::getenv("MARIPOSA_GOLDEN_WRITE")) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "wrote " << path;
  }
  std::string want = ReadFile("projects/testdata/canonical.golden");
  ASSERT_FALSE(want.empty()) << "projects/testdata/canonical.golden not read";
  std::vector<std::string> g = absl::StrSplit(got, '\n'), w = absl::StrSplit(want, '\n');
  for (size_t k = 0; k < std::max(g.size(), w.size()); ++k) {
    std::string a = k < g.size() ? g[k] : "(none)", b = k < w.size() ? w[k] : "(none)";
    EXPECT_EQ(a, b) << "line " << k + 1 << " of projects/testdata/canonical.golden";
  }
}

}  // namespace
}  // namespace mariposa
