// 10,000 random mutations of valid manifests (MARIPOSA_FUZZ_CASES=N for a
// longer run): the parser never crashes, and every input is either accepted
// (and its canonical form reads back to the same hash) or rejected with
// located errors, at most Limits::kMaxErrorsShown of them.
#include <cstdlib>
#include <random>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/process.h"
#include "projects/limits.h"
#include "projects/manifest.h"

namespace mariposa {
namespace {

using ::mariposa::testing::ReadFile;

std::string Mutate(const std::string& text, std::mt19937* rng) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(*rng); };
  static const char* kTokens[] = {"-1", "abc", "{{ .x }}", "[", "}", "", "99999999999999999999", "true", "1.5",
                                  "@", "{a: b}", "- x", "\"{{ .meta.nope }}\"", "10q", "null", "~", "&a", "*a",
                                  "0", "65536", "http", "agent", "[1, 2]", "'unterminated", "\t", ":",
                                  "&m {x: *m}", "*m", "&b [*a, *a, *a]", "[[[[[[[[", "\"\\0\"", "\"\\e\"",
                                  "\xff", "9223372036854775807s", "{? *a : b}", "!!binary x"};
  int n = 1 + static_cast<int>(pick(3));
  for (int k = 0; k < n && !lines.empty(); ++k) {
    size_t i = pick(lines.size());
    switch (pick(9)) {
      case 0: lines.erase(lines.begin() + i); break;
      case 1: lines.insert(lines.begin() + i, lines[pick(lines.size())]); break;
      case 2: std::swap(lines[i], lines[pick(lines.size())]); break;
      case 3: {
        size_t colon = lines[i].find(": ");
        if (colon != std::string::npos) lines[i] = lines[i].substr(0, colon + 2) + kTokens[pick(std::size(kTokens))];
        break;
      }
      case 4: lines[i] = "  " + lines[i]; break;
      case 5: if (lines[i].size() > 1) lines[i] = lines[i].substr(1); break;
      case 6: {
        std::string& l = lines[i];
        if (!l.empty()) l[pick(l.size())] = static_cast<char>(pick(256));
        break;
      }
      case 7: lines.resize(i + 1); break;
      case 8: lines.insert(lines.begin() + i, std::string(pick(100), '[') + "x"); break;
    }
  }
  return absl::StrJoin(lines, "\n");
}

TEST(ManifestFuzzTest, Mutations) {
  const char* env = std::getenv("MARIPOSA_FUZZ_CASES");
  const int cases = env != nullptr ? std::atoi(env) : 10000;
  std::vector<std::string> seeds = {ReadFile("deploy/examples/jupiter.yaml"), ReadFile("deploy/examples/core.yaml")};
  std::mt19937 rng(20261122);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < cases; ++i) {
    std::string text = Mutate(seeds[i % seeds.size()], &rng);
    ParseOptions o;
    o.filename = "fuzz.yaml";
    ParseResult r = ParseManifest(text, o);
    if (r.manifest) {
      ++accepted;
      EXPECT_TRUE(r.errors.empty());
      // The canonical form is itself a valid manifest with the same hash.
      ParseResult again = ParseManifest(CanonicalYaml(*r.manifest), o);
      ASSERT_TRUE(again.manifest.has_value()) << "case " << i << "\n" << text << "\n---\n" << CanonicalYaml(*r.manifest);
      EXPECT_EQ(CanonicalHash(*again.manifest), CanonicalHash(*r.manifest)) << "case " << i << "\n" << text;
    } else {
      ++rejected;
      ASSERT_FALSE(r.errors.empty()) << "case " << i << " rejected without an error:\n" << text;
      EXPECT_LE(r.errors.size(), static_cast<size_t>(Limits::kMaxErrorsShown));
      EXPECT_GE(r.total_errors, static_cast<int64_t>(r.errors.size()));
      for (const auto& e : r.errors) {
        EXPECT_EQ(e.file, "fuzz.yaml");
        EXPECT_GE(e.line, 1) << e.ToString();
        EXPECT_GE(e.column, 1) << e.ToString();
        EXPECT_FALSE(e.message.empty());
      }
    }
  }
  // Both outcomes must occur, or the mutator is not exercising anything.
  EXPECT_GT(accepted, cases / 20);
  EXPECT_GT(rejected, cases / 5);
  std::cout << accepted << " accepted, " << rejected << " rejected\n";
}

}  // namespace
}  // namespace mariposa
