#include "auth/rbac.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace mariposa::auth {
namespace {

const Role kRoles[] = {Role::kViewer, Role::kDeployer, Role::kOperator, Role::kAdmin, Role::kHealthAgent};

TEST(Rbac, RolesParseAndPrint) {
  for (Role r : kRoles) EXPECT_EQ(ParseRole(RoleName(r)), r);
  EXPECT_FALSE(ParseRole("root").has_value());
  EXPECT_FALSE(ParseRole("").has_value());
}

TEST(Rbac, RolesAreOrderedAndHealthAgentStandsApart) {
  struct Row {
    Permission p;
    std::set<Role> allowed;
  };
  const Row rows[] = {
      {Permission::kAnyone, {Role::kViewer, Role::kDeployer, Role::kOperator, Role::kAdmin, Role::kHealthAgent}},
      {Permission::kRead, {Role::kViewer, Role::kDeployer, Role::kOperator, Role::kAdmin}},
      {Permission::kDeploy, {Role::kDeployer, Role::kOperator, Role::kAdmin}},
      {Permission::kOperate, {Role::kOperator, Role::kAdmin}},
      {Permission::kAdmin, {Role::kAdmin}},
      {Permission::kHealthAgent, {Role::kHealthAgent, Role::kAdmin}},
  };
  for (const Row& row : rows) {
    for (Role r : kRoles) {
      EXPECT_EQ(RoleAllows(r, row.p), row.allowed.count(r) > 0) << RoleName(r) << " / " << PermissionName(row.p);
    }
  }
}

TEST(Rbac, EveryRuleIsUniqueAndNamesAServiceMethod) {
  std::set<std::string> seen;
  for (const MethodRule& r : MethodRules()) {
    EXPECT_TRUE(seen.insert(r.method).second) << r.method;
    EXPECT_NE(std::string(r.method).find('/'), std::string::npos) << r.method;
    EXPECT_EQ(RuleFor(r.method), &r);
  }
  EXPECT_EQ(RuleFor("Projects/NoSuchThing"), nullptr);
}

TEST(Rbac, ProjectGrantsCoverTheirProjectOnly) {
  const MethodRule& apply = *RuleFor("Projects/Apply");
  std::vector<Grant> jupiter_deployer = {{Role::kDeployer, "jupiter"}};
  EXPECT_TRUE(Allowed(jupiter_deployer, apply, "jupiter"));
  EXPECT_FALSE(Allowed(jupiter_deployer, apply, "saturn"));
  // A call about no single project: allowed, and the answer is filtered.
  EXPECT_TRUE(Allowed(jupiter_deployer, *RuleFor("Projects/ListProjects"), ""));
  // Global rules need a grant on every project.
  EXPECT_FALSE(Allowed({{Role::kAdmin, "jupiter"}}, *RuleFor("Admin/Backup"), ""));
  EXPECT_TRUE(Allowed({{Role::kAdmin, ""}}, *RuleFor("Admin/Backup"), ""));
  // Core manifests need admin.
  EXPECT_FALSE(Allowed(jupiter_deployer, *RuleFor("Projects/Apply#core"), "jupiter"));
  EXPECT_TRUE(Allowed({{Role::kAdmin, "jupiter"}}, *RuleFor("Projects/Apply#core"), "jupiter"));
  // No grants: only what anyone may do.
  EXPECT_FALSE(Allowed({}, *RuleFor("Projects/GetProject"), "jupiter"));
  EXPECT_TRUE(Allowed({}, *RuleFor("Auth/WhoAmI"), ""));
  // A plan is a read.
  EXPECT_TRUE(Allowed({{Role::kViewer, "jupiter"}}, *RuleFor("Projects/Apply#dry-run"), "jupiter"));
  EXPECT_FALSE(Allowed({{Role::kViewer, "jupiter"}}, *RuleFor("Projects/Apply"), "jupiter"));
}

TEST(Rbac, DeployerChangesButDoesNotOperate) {
  std::vector<Grant> g = {{Role::kDeployer, ""}};
  for (const char* m : {"Projects/Apply", "Projects/Scale", "Projects/SetMeta", "Queue/AddTask", "Projects/Rollback"}) {
    EXPECT_TRUE(Allowed(g, *RuleFor(m), "jupiter")) << m;
  }
  for (const char* m : {"Queue/Freeze", "Queue/Thaw", "Queue/TerminateTask", "Queue/AddTask#start",
                        "Queue/AddTask#stop", "Projects/DeleteProject", "Admin/Backup", "Auth/CreateToken"}) {
    EXPECT_FALSE(Allowed(g, *RuleFor(m), "jupiter")) << m;
  }
}

TEST(Rbac, CanSee) {
  EXPECT_TRUE(CanSee({{Role::kViewer, "jupiter"}}, "jupiter"));
  EXPECT_FALSE(CanSee({{Role::kViewer, "jupiter"}}, "saturn"));
  EXPECT_FALSE(CanSee({{Role::kViewer, "jupiter"}}, ""));  // controller-wide events
  EXPECT_TRUE(CanSee({{Role::kViewer, ""}}, ""));
  EXPECT_FALSE(CanSee({{Role::kHealthAgent, ""}}, "jupiter"));
}

TEST(Rbac, VerbsAndShortMethods) {
  EXPECT_EQ(MethodForVerb("apply"), "Projects/Apply");
  EXPECT_EQ(MethodForVerb("freeze"), "Queue/Freeze");
  EXPECT_EQ(MethodForVerb("Queue/Thaw"), "Queue/Thaw");
  EXPECT_FALSE(MethodForVerb("fly").has_value());
  for (const char* verb : {"apply", "diff", "rollback", "scale", "create", "delete", "status", "health", "events",
                           "reprovision", "start", "stop", "terminate", "pause", "resume", "freeze", "thaw", "backup",
                           "token", "grant", "rotate-key", "image-import", "image-create"}) {
    auto m = MethodForVerb(verb);
    ASSERT_TRUE(m.has_value()) << verb;
    EXPECT_NE(RuleFor(*m), nullptr) << verb << " -> " << *m;
  }
  EXPECT_EQ(ShortMethod("/mariposa.v1.Projects/Apply"), "Projects/Apply");
  EXPECT_EQ(ShortMethod("/grpc.health.v1.Health/Check"), "grpc.health.v1.Health/Check");
}

}  // namespace
}  // namespace mariposa::auth
