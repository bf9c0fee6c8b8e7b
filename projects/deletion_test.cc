#include "projects/deletion.h"

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace mariposa {
namespace {

VolumeSpec Policy(const std::string& p) {
  VolumeSpec v;
  v.deletion_policy = p;
  return v;
}

TEST(PlanDeletion, WhatGoesAndWhatIsKept) {
  struct Case {
    std::string name;
    ProjectHoldings held;
    std::vector<std::string> agents;
    std::map<std::string, VolumeSpec> volumes;
    bool delete_volumes;
    std::string removes, retains;  // joined by " | "
  };
  ProjectHoldings all;
  all.instances = 3;
  all.firewall_rules = {"web-in", "web-to-db"};
  all.fabric = {"network private", "VLAN 60"};
  all.volumes = {"data", "logs", "old"};
  ProjectHoldings one;
  one.instances = 1;
  ProjectHoldings unread;
  unread.unread = {"FWAPI: connection refused"};
  const std::map<std::string, VolumeSpec> policies = {{"data", Policy("retain")}, {"logs", Policy("delete")}};
  const std::vector<Case> cases = {
      {"nothing held", {}, {}, {}, false, "", ""},
      {"one instance", one, {}, {}, false, "1 instance", ""},
      {"agents", {}, {"cn-agent"}, {}, false, "agent services cn-agent (uninstalled from their servers)", ""},
      {"each by its policy; one left out of the manifest is retained", all, {}, policies, false,
       "3 instances | firewall rules web-in, web-to-db | volume logs (deletion_policy: delete: its data is lost) | "
       "fabric network private, VLAN 60",
       "volume data (deletion_policy: retain) with its data; --delete-volumes deletes it | volume old (not in the "
       "manifest) with its data; --delete-volumes deletes it | the fabric network each kept volume is served on, and "
       "its VLAN"},
      {"--delete-volumes takes every volume", all, {}, policies, true,
       "3 instances | firewall rules web-in, web-to-db | volume data (--delete-volumes: its data is lost) | volume logs "
       "(--delete-volumes: its data is lost) | volume old (--delete-volumes: its data is lost) | fabric network "
       "private, VLAN 60",
       ""},
      {"an API not read", unread, {}, {}, false,
       "what it owns in FWAPI: connection refused (not readable now; removed once it is)", ""},
  };
  for (const Case& c : cases) {
    DeletionPlan p = PlanDeletion(c.held, c.agents, c.volumes, c.delete_volumes);
    EXPECT_EQ(absl::StrJoin(p.removes, " | "), c.removes) << c.name;
    EXPECT_EQ(absl::StrJoin(p.retains, " | "), c.retains) << c.name;
  }
}

TEST(PlanDeletion, OwnsMoreThanInstances) {
  ProjectHoldings h;
  h.instances = 5;
  EXPECT_FALSE(h.OwnsMore());
  using List = std::vector<std::string> ProjectHoldings::*;
  for (List list : {&ProjectHoldings::firewall_rules, &ProjectHoldings::fabric, &ProjectHoldings::volumes,
                    &ProjectHoldings::unread}) {
    ProjectHoldings one;
    (one.*list).push_back("x");
    EXPECT_TRUE(one.OwnsMore());
  }
}

}  // namespace
}  // namespace mariposa
