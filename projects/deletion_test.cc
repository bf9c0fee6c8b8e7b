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
  all.networks = {{"private", "n1", 60}, {"public", "n2", 60}, {"other", "n3", 61}};
  all.vlans = {60, 61};
  all.volumes = {{"data", {"n1"}}, {"logs", {"n1"}}, {"old", {"n2"}}};
  ProjectHoldings deleted = all;  // every volume deleted by its policy: the whole fabric goes
  deleted.volumes = {{"logs", {"n1"}}};
  ProjectHoldings one;
  one.instances = 1;
  ProjectHoldings unread;
  unread.unread = {"FWAPI: connection refused"};
  const std::map<std::string, VolumeSpec> policies = {{"data", Policy("retain")}, {"logs", Policy("delete")}};
  const std::vector<Case> cases = {
      {"nothing held", {}, {}, {}, false, "", ""},
      {"one instance", one, {}, {}, false, "1 instance", ""},
      {"agents", {}, {"cn-agent"}, {}, false, "agent services cn-agent (uninstalled from their servers)", ""},
      {"each by its policy; one left out of the manifest is retained, with the networks they are served on", all, {},
       policies, false,
       "3 instances | firewall rules web-in, web-to-db | volume logs (deletion_policy: delete: its data is lost) | "
       "fabric network other, VLAN 61",
       "volume data (deletion_policy: retain) with its data; --delete-volumes deletes it | volume old (not in the "
       "manifest) with its data; --delete-volumes deletes it | fabric network private (volume data is served on it) | "
       "fabric network public (volume old is served on it) | VLAN 60 (a kept network is on it)"},
      {"--delete-volumes takes every volume, then the whole fabric", all, {}, policies, true,
       "3 instances | firewall rules web-in, web-to-db | volume data (--delete-volumes: its data is lost) | volume logs "
       "(--delete-volumes: its data is lost) | volume old (--delete-volumes: its data is lost) | fabric network "
       "private, network public, network other, VLAN 60, VLAN 61",
       ""},
      {"deletion_policy delete everywhere: nothing kept", deleted, {}, policies, false,
       "3 instances | firewall rules web-in, web-to-db | volume logs (deletion_policy: delete: its data is lost) | "
       "fabric network private, network public, network other, VLAN 60, VLAN 61",
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
  std::vector<ProjectHoldings> each(5);
  each[0].firewall_rules = {"x"};
  each[1].networks = {{"x", "n1", 1}};
  each[2].vlans = {1};
  each[3].volumes = {{"x", {}}};
  each[4].unread = {"NAPI: down"};
  for (const ProjectHoldings& one : each) EXPECT_TRUE(one.OwnsMore());
}

}  // namespace
}  // namespace mariposa
