#include "convergence/decide/placement.h"

#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

PlacementRuleText R(const std::string& s) { return *ParsePlacementRule(s); }

std::vector<PlacementCandidate> Vms() {
  return {{"u-web-1", "shop-web-1", "web", {}},
          {"u-web-2", "shop-web-2", "web", {}},
          {"u-db-1", "shop-db-1", "db", {}},
          {"u-other", "billing-pg", "", {{"role", "database"}}}};
}

TEST(PlacementTest, ParsesRules) {
  auto r = R("service!=~web");
  EXPECT_EQ(r.key, "service");
  EXPECT_FALSE(r.equal);
  EXPECT_TRUE(r.soft);
  EXPECT_EQ(r.value, "web");
  EXPECT_FALSE(ParsePlacementRule("service=web").ok());
}

TEST(PlacementTest, ValuesMatchExactlyByGlobOrRegex) {
  EXPECT_TRUE(PlacementValueMatches("web", "web"));
  EXPECT_FALSE(PlacementValueMatches("web", "web2"));
  EXPECT_TRUE(PlacementValueMatches("we*", "web2"));
  EXPECT_TRUE(PlacementValueMatches("*-1", "shop-web-1"));
  EXPECT_FALSE(PlacementValueMatches("*-1", "shop-web-2"));
  EXPECT_TRUE(PlacementValueMatches("/^shop-(web|db)-1$/", "shop-db-1"));
  EXPECT_FALSE(PlacementValueMatches("/^shop-(web|db)-1$/", "shop-db-2"));
}

TEST(PlacementTest, HardRulesAreStrictAndSoftOnesDropped) {
  auto loc = LocalityFor({R("service!=db"), R("role!=database"), R("service!=~web")}, Vms());
  ASSERT_TRUE(loc.has_value());
  EXPECT_TRUE(loc->strict);
  EXPECT_EQ(loc->far, (std::vector<std::string>{"u-db-1", "u-other"}));
  EXPECT_TRUE(loc->near.empty());
}

TEST(PlacementTest, SoftRulesArePreferences) {
  auto loc = LocalityFor({R("service!=~web"), R("instance==~shop-db-*")}, Vms());
  ASSERT_TRUE(loc.has_value());
  EXPECT_FALSE(loc->strict);
  EXPECT_EQ(loc->far, (std::vector<std::string>{"u-web-1", "u-web-2"}));
  EXPECT_EQ(loc->near, (std::vector<std::string>{"u-db-1"}));
}

TEST(PlacementTest, NothingToPointAtIsNoLocality) {
  EXPECT_FALSE(LocalityFor({R("service!=cache")}, Vms()).has_value());
  EXPECT_FALSE(LocalityFor({}, Vms()).has_value());
}

}  // namespace
}  // namespace mariposa::convergence
