#include "convergence/decide/images.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

TEST(CompareVersions, Table) {
  struct Case {
    const char* a;
    const char* b;
    int want;
  } cases[] = {
      {"2.14.1", "2.15.0", -1}, {"2.15.0", "2.14.1", 1}, {"2.9.0", "2.10.0", -1}, {"1.2", "1.2.0", 0},
      {"1.2.0-rc1", "1.2.0", -1}, {"1.2.0-rc1", "1.2.0-rc2", -1}, {"v1.3.0", "1.2.9", 1},
      {"20231012T1234Z", "20240101T0000Z", -1}, {"1.0.0+build5", "1.0.0", 0}, {"1.9.0", "1.9.0", 0},
      {"5.7.2", "5.7.10", -1}, {"1.0.a", "1.0.1", 1},
  };
  for (const Case& c : cases) {
    int got = CompareVersions(c.a, c.b);
    int sign = got < 0 ? -1 : got > 0 ? 1 : 0;
    // "1.2" and "1.2.0" are equal by value; the total order still separates their spellings.
    if (c.want == 0 && std::string(c.a) != c.b) {
      EXPECT_EQ(CompareVersions(c.a, c.b), -CompareVersions(c.b, c.a)) << c.a << " vs " << c.b;
      continue;
    }
    EXPECT_EQ(sign, c.want) << c.a << " vs " << c.b;
  }
}

TEST(CompareVersions, IsATotalOrder) {
  std::vector<std::string> v = {"1.0.0", "1.0.0-rc1", "0.9", "1.10.0", "1.2.3", "v2.0.0", "2.0.0-beta", "x", "1.0.a"};
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::shuffle(v.begin(), v.end(), rng);
    for (const auto& a : v) {
      EXPECT_EQ(CompareVersions(a, a), 0);
      for (const auto& b : v) {
        EXPECT_EQ(CompareVersions(a, b) < 0, CompareVersions(b, a) > 0) << a << " " << b;
        for (const auto& c : v) {
          if (CompareVersions(a, b) < 0 && CompareVersions(b, c) < 0) {
            EXPECT_LT(CompareVersions(a, c), 0);
          }
        }
      }
    }
  }
}

TEST(NearestVersions, AlternatesBelowAndAbove) {
  EXPECT_EQ(NearestVersions("1.3.5", {"1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.0.0"}),
            (std::vector<std::string>{"1.3.0", "1.4.0", "1.2.0"}));
  EXPECT_EQ(NearestVersions("9.0", {"1.2.0", "1.3.0", "1.3.0"}), (std::vector<std::string>{"1.3.0", "1.2.0"}));
  EXPECT_EQ(NearestVersions("0.1", {"1.2.0", "1.3.0"}, 1), (std::vector<std::string>{"1.2.0"}));
  EXPECT_TRUE(NearestVersions("1.0", {}).empty());
}

triton::Image Img(const std::string& uuid, const std::string& version) {
  triton::Image i;
  i.uuid = uuid;
  i.name = "cn-agent";
  i.version = version;
  return i;
}

TEST(NewerImages, NewestFirstAndOnlyTheNewestByDefault) {
  std::vector<triton::Image> all = {Img("a", "2.14.1"), Img("b", "2.16.0"), Img("c", "2.15.0"), Img("d", "2.13.0")};
  auto latest = NewerImages("2.14.1", all, false);
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0].uuid, "b");
  auto every = NewerImages("2.14.1", all, true);
  ASSERT_EQ(every.size(), 2u);
  EXPECT_EQ(every[0].uuid, "b");
  EXPECT_EQ(every[1].uuid, "c");
  EXPECT_TRUE(NewerImages("2.16.0", all, true).empty());
}

TEST(ImagesBetween, ExcludesFromIncludesTo) {
  std::vector<triton::Image> all = {Img("a", "2.14.1"), Img("b", "2.16.0"), Img("c", "2.15.0"), Img("d", "2.13.0")};
  auto got = ImagesBetween("2.13.0", "2.15.0", all);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].version, "2.14.1");
  EXPECT_EQ(got[1].version, "2.15.0");
  EXPECT_TRUE(ImagesBetween("2.15.0", "2.13.0", all).empty());
}

TEST(HumanBytes, BinaryUnits) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(72351744), "69 MiB");
  EXPECT_EQ(HumanBytes(3LL << 30), "3 GiB");
}

}  // namespace
}  // namespace mariposa::convergence
