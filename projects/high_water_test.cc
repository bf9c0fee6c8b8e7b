#include "projects/high_water.h"

#include "gtest/gtest.h"

namespace mariposa {
namespace {

TEST(HighWater, RoundTripsAndHasOneLength) {
  for (HighWater m : {HighWater{0, 0}, HighWater{1, 2}, HighWater{123456789, 987654321},
                      HighWater{INT64_MAX, INT64_MAX}}) {
    std::string line = FormatHighWater(m);
    EXPECT_EQ(line.size(), FormatHighWater({}).size()) << "rewritten in place: one length";
    auto back = ParseHighWater(line);
    ASSERT_TRUE(back.has_value()) << line;
    EXPECT_EQ(*back, m);
  }
}

TEST(HighWater, AnythingElseIsUnreadable) {
  std::string good = FormatHighWater({42, 7});
  EXPECT_FALSE(ParseHighWater("").has_value());
  EXPECT_FALSE(ParseHighWater(good.substr(0, good.size() - 1)).has_value());  // torn
  for (size_t i = 0; i + 1 < good.size(); ++i) {
    std::string bad = good;
    bad[i] = bad[i] == '1' ? '2' : '1';
    EXPECT_FALSE(ParseHighWater(bad).has_value()) << "edited at " << i << ": " << bad;
  }
}

TEST(HighWater, LossNamesWhatIsMissing) {
  EXPECT_EQ(HighWaterLoss({10, 20}, {10, 20}), "");
  EXPECT_EQ(HighWaterLoss({10, 20}, {11, 25}), "");
  EXPECT_EQ(HighWaterLoss({10, 20}, {9, 20}), "the store is missing 1 of 10 committed transactions (it has 9)");
  EXPECT_EQ(HighWaterLoss({10, 20}, {10, 17}),
            "the store is missing events 18..20 (its newest event is 17, the mark says 20)");
  EXPECT_NE(HighWaterLoss({10, 20}, {4, 2}).find(" and events 3..20"), std::string::npos);
}

}  // namespace
}  // namespace mariposa
