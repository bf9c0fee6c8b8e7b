// FWAPI in tritonsim: the rule grammar as a table, and the rules' life
// (create with a chosen uuid and its retry, update, owner checks, delete).
#include "deploy/tritonsim/fwapi.h"

#include "gtest/gtest.h"

namespace tritonsim {
namespace {

TEST(FwRuleTest, Grammar) {
  struct Case {
    std::string rule;
    bool ok;
  };
  const std::vector<Case> cases = {
      {"FROM any TO all vms ALLOW icmp TYPE 8 CODE 0", true},
      {"FROM any TO tag www ALLOW tcp (PORT 80 AND PORT 443)", true},
      {"FROM tag www TO tag db ALLOW tcp PORT 5432", true},
      {"FROM all vms TO all vms ALLOW tcp port 22", true},
      {"FROM (ip 10.99.99.254 OR ip 10.99.99.7) TO vm dfbcc139-990f-4b49-bb62-d3d6bd2fd52d ALLOW tcp PORT 559", true},
      {"FROM (tag \"mariposa.service\" = \"web\") TO (tag \"mariposa.service\" = \"db\") ALLOW tcp PORT 5432", true},
      {"FROM subnet 10.8.0.0/16 TO any BLOCK udp PORTS 53, 1000 - 2000", true},
      {"FROM any TO any ALLOW tcp ALL PORTS PRIORITY 10", true},
      {"FROM any TO any ALLOW esp", true},
      {"from any to any allow tcp port 80", true},
      {"", false},
      {"TO any ALLOW tcp PORT 80", false},
      {"FROM any ALLOW tcp PORT 80", false},
      {"FROM any TO any PERMIT tcp PORT 80", false},
      {"FROM any TO any ALLOW tcp PORT 70000", false},
      {"FROM any TO any ALLOW tcp", false},
      {"FROM any TO any ALLOW gre", false},
      {"FROM (tag a OR tag b TO any ALLOW tcp PORT 1", false},
      {"FROM vm not-a-uuid TO any ALLOW tcp PORT 1", false},
      {"FROM tag \"open TO any ALLOW tcp PORT 1", false},
      {"FROM any TO any ALLOW tcp PORT 80 extra", false},
      {"FROM any TO any ALLOW icmp TYPE 300", false},
  };
  for (const Case& c : cases) EXPECT_EQ(CheckFwRule(c.rule).empty(), c.ok) << c.rule << ": " << CheckFwRule(c.rule);
}

TEST(FirewallTest, RulesLiveAsFwapiSays) {
  int n = 0;
  Firewall fw([] { return int64_t{1764000000000}; }, [&n] { return "00000000-0000-4000-8000-00000000000" + std::to_string(++n); });
  const std::string owner = "930896af-bf8c-48d4-885c-6573a94b1853";
  const std::string uuid = "5b1e5c2e-6a1e-4b8e-9a53-2f1d6c3b4a10";
  json body = {{"rule", "FROM tag www TO tag db ALLOW tcp PORT 5432"}, {"owner_uuid", owner}, {"enabled", true},
               {"uuid", uuid}, {"description", "web to db"}};
  Reply made = fw.Create(body);
  ASSERT_EQ(made.status, 202) << made.body.dump();
  EXPECT_EQ(made.body["uuid"], uuid);
  EXPECT_TRUE(made.headers.count("x-update-id"));
  // A retried create with the same uuid finds it taken.
  Reply again = fw.Create(body);
  EXPECT_EQ(again.status, 422);
  EXPECT_EQ(again.body["code"], "RuleExistsError");
  EXPECT_EQ(fw.size(), 1u);
  // Refusals name the field.
  Reply bad = fw.Create({{"rule", "FROM any TO any ALLOW tcp"}, {"owner_uuid", owner}});
  EXPECT_EQ(bad.status, 422);
  EXPECT_EQ(bad.body["errors"][0]["field"], "rule");
  EXPECT_EQ(fw.Create({{"rule", "FROM any TO any ALLOW tcp PORT 1"}}).body["errors"][0]["field"], "owner_uuid");
  EXPECT_EQ(fw.Create({{"owner_uuid", owner}}).status, 409);  // "rule" parameter required
  // Update keeps the uuid, takes a new version.
  Reply up = fw.Update(uuid, {{"enabled", false}});
  ASSERT_EQ(up.status, 202);
  EXPECT_EQ(up.body["enabled"], false);
  EXPECT_EQ(up.body["rule"], "FROM tag www TO tag db ALLOW tcp PORT 5432");
  // Another owner can neither read nor delete it.
  Params other = {{"owner_uuid", "11111111-1111-4111-8111-111111111111"}};
  EXPECT_EQ(fw.Get(uuid, other).status, 403);
  EXPECT_EQ(fw.Delete(uuid, other).status, 403);
  Params mine = {{"owner_uuid", owner}};
  EXPECT_EQ(fw.List(mine).body.size(), 1u);
  EXPECT_EQ(fw.List(other).body.size(), 0u);
  EXPECT_EQ(fw.Delete(uuid, mine).status, 204);
  EXPECT_EQ(fw.Get(uuid, {}).status, 404);
}

}  // namespace
}  // namespace tritonsim
