// mahi's answers (the shapes of its docs/index.md) and what Triton roles
// give in Mariposa, by table.
#include "auth/mahi.h"

#include "gtest/gtest.h"

namespace mariposa::auth {
namespace {

constexpr char kAccount[] = R"({"roles": {}, "account": {"type": "account",
  "uuid": "83546bda-028d-11e2-aabe-17b87241f6ee", "login": "fred", "groups": [], "approved_for_provisioning": true,
  "keys": {"e3:4d:9b:26:bd:ef:a1:db:43:ae:4b:f7:bc:69:a7:24": "ssh-ed25519 AAAA fred"}, "isOperator": false}})";

constexpr char kUser[] = R"({"roles": {
    "1e605e9d-e591-c865-e1df-9d60b3d98ce8": {"type": "role", "uuid": "1e605e9d-e591-c865-e1df-9d60b3d98ce8",
      "name": "mariposa-deployer", "account": "83546bda-028d-11e2-aabe-17b87241f6ee", "policies": []},
    "2e605e9d-e591-c865-e1df-9d60b3d98ce8": {"type": "role", "uuid": "2e605e9d-e591-c865-e1df-9d60b3d98ce8",
      "name": "mariposa-operator.web", "account": "83546bda-028d-11e2-aabe-17b87241f6ee", "policies": []}},
  "account": {"type": "account", "uuid": "83546bda-028d-11e2-aabe-17b87241f6ee", "login": "fred", "keys": {}},
  "user": {"type": "user", "uuid": "92543592-6018-62ae-fc60-ffb83f0b5157",
    "account": "83546bda-028d-11e2-aabe-17b87241f6ee", "login": "muskie", "keys": {"aa:bb": "ssh-rsa BBBB"},
    "roles": ["1e605e9d-e591-c865-e1df-9d60b3d98ce8", "2e605e9d-e591-c865-e1df-9d60b3d98ce8"],
    "defaultRoles": ["1e605e9d-e591-c865-e1df-9d60b3d98ce8", "2e605e9d-e591-c865-e1df-9d60b3d98ce8"]}})";

TEST(MahiTest, AccountsAndUsersAsMahiAnswers) {
  auto a = ParseMahiAnswer(kAccount, "");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->account_login, "fred");
  EXPECT_EQ(a->account_uuid, "83546bda-028d-11e2-aabe-17b87241f6ee");
  ASSERT_EQ(a->keys.size(), 1u);
  EXPECT_EQ(a->keys.begin()->second, "ssh-ed25519 AAAA fred");
  EXPECT_TRUE(a->user_login.empty());
  auto u = ParseMahiAnswer(kUser, "muskie");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->user_login, "muskie");
  EXPECT_EQ(u->keys.size(), 1u);
  EXPECT_EQ(u->keys.begin()->first, "aa:bb");  // the user's keys, not the account's
  EXPECT_EQ(u->roles, (std::vector<std::string>{"mariposa-deployer", "mariposa-operator.web"}));
  // GetUser's fallback answers the account alone: no such user.
  EXPECT_EQ(ParseMahiAnswer(kAccount, "muskie").status().code(), absl::StatusCode::kNotFound);
  for (const char* bad : {"", "[]", "{}", R"({"account": {"login": "x"}})", R"({"account": "x"})"}) {
    EXPECT_EQ(ParseMahiAnswer(bad, "").status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  auto disabled = ParseMahiAnswer(R"({"account": {"uuid": "u", "login": "l", "disabled": "true"}})", "");
  ASSERT_TRUE(disabled.ok());
  EXPECT_TRUE(disabled->disabled);
}

TEST(MahiTest, WhatTritonRolesGive) {
  std::vector<std::string> mine = {"web", "db"};
  TritonPrincipal account;
  account.account_login = "fred";
  EXPECT_EQ(TritonGrants(account, mine), (std::vector<Grant>{{Role::kOperator, "web"}, {Role::kOperator, "db"}}));
  account.disabled = true;
  EXPECT_TRUE(TritonGrants(account, mine).empty());

  struct Case {
    std::vector<std::string> roles;
    std::vector<Grant> grants;
  } cases[] = {
      {{}, {}},
      {{"mariposa-viewer"}, {{Role::kViewer, "web"}, {Role::kViewer, "db"}}},
      {{"mariposa-deployer.web"}, {{Role::kDeployer, "web"}}},
      {{"mariposa-operator.other"}, {}},  // not the account's project
      {{"mariposa-admin"}, {}},           // never from Triton
      {{"mariposa-health-agent"}, {}},
      {{"mariposa-root", "operators", "deployer"}, {}},
      {{"mariposa-viewer", "mariposa-operator.db"}, {{Role::kViewer, "web"}, {Role::kViewer, "db"}, {Role::kOperator, "db"}}},
  };
  for (const Case& c : cases) {
    TritonPrincipal u;
    u.account_login = "fred";
    u.user_login = "muskie";
    u.roles = c.roles;
    EXPECT_EQ(TritonGrants(u, mine), c.grants) << (c.roles.empty() ? "" : c.roles[0]);
  }
}

}  // namespace
}  // namespace mariposa::auth
