#include "convergence/triton/vm_feed.h"

#include <gtest/gtest.h>

namespace mariposa::triton {
namespace {

constexpr char kUuid[] = "3c4f29b4-1a2b-4c3d-8e9f-000000000001";

TEST(ParseFeedItem, ReadsVmapisItems) {
  struct Case {
    std::string text;
    bool ok;
    bool has_vm;
    std::string error;  // part of it
  };
  const std::string vm = std::string(R"({"uuid":")") + kUuid + R"(","state":"running","tags":{"a":"b"}})";
  const std::string other = R"({"uuid":"3c4f29b4-1a2b-4c3d-8e9f-000000000002","state":"running"})";
  const std::vector<Case> cases = {
      {std::string(R"({"changeKind":{"resource":"vm","subResources":["state"]},"changedResourceId":")") + kUuid +
           R"(","resourceObject":)" + vm + R"(,"published":"1764000000000"})",
       true, true, ""},
      {std::string(R"({"changeKind":{"resource":"vm","subResources":["tags"]},"changedResourceId":")") + kUuid +
           R"("})",
       true, false, ""},
      // A null resourceObject: the VM is read by its uuid.
      {std::string(R"({"changeKind":{"resource":"vm","subResources":["state"]},"changedResourceId":")") + kUuid +
           R"(","resourceObject": null})",
       true, false, ""},
      {std::string(R"({"changeKind":{"resource":"vm","subResources":["state"]},"changedResourceId":")") + kUuid +
           R"(","resourceObject":[1]})",
       false, false, "not an object"},
      {"heartbeat", false, false, "not a JSON object"},
      {R"({"changeKind":{"resource":"vm","subResources":[]}})", false, false, "changedResourceId"},
      {std::string(R"({"changeKind":{"resource":"server","subResources":[]},"changedResourceId":")") + kUuid + R"("})",
       false, false, "not about a vm"},
      {std::string(R"({"changeKind":{"resource":"vm","subResources":[]},"changedResourceId":")") + kUuid +
           R"(","resourceObject":)" + other + "}",
       false, false, "another VM"},
  };
  for (const Case& c : cases) {
    auto item = ParseFeedItem(c.text);
    EXPECT_EQ(item.ok(), c.ok) << c.text << " " << item.status();
    if (!c.ok) {
      EXPECT_NE(item.status().message().find(c.error), absl::string_view::npos) << item.status();
      continue;
    }
    EXPECT_EQ(item->uuid, kUuid);
    EXPECT_EQ(item->vm.has_value(), c.has_vm);
    if (c.has_vm) {
      EXPECT_EQ(item->vm->state, "running");
      EXPECT_EQ(item->vm->tags.at("a"), "b");
      EXPECT_EQ(item->sub_resources, std::vector<std::string>{"state"});
    }
  }
}

TEST(ParseFeedItem, FindsTheWholeResourceObjectWhateverItsStringsHold) {
  std::string item = std::string(R"({"changeKind":{"resource":"vm","subResources":["tags"]},"changedResourceId":")") +
                     kUuid + R"(","resourceObject":{"uuid":")" + kUuid +
                     R"(","state":"running","tags":{"odd":"}\"{ resourceObject"}},"published":"1"})";
  auto got = ParseFeedItem(item);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->vm.has_value());
  EXPECT_EQ(got->vm->tags.at("odd"), "}\"{ resourceObject");
  EXPECT_EQ(got->vm->state, "running");
  auto cut = ParseFeedItem(item.substr(0, item.size() - 20));
  EXPECT_FALSE(cut.ok());
}

TEST(CheckBootstrap, WantsTheVmResource) {
  EXPECT_TRUE(CheckBootstrap(R"({"resource":"vm","subResources":["state"],"bootstrapRoute":"/vms"})").ok());
  EXPECT_FALSE(CheckBootstrap(R"({"bootstrapRoutes":[]})").ok());
  EXPECT_FALSE(CheckBootstrap(R"({"resource":"server","bootstrapRoute":"/servers"})").ok());
  EXPECT_FALSE(CheckBootstrap("not json").ok());
}

TEST(Registration, IsAV1RegistrationForEveryVmSubResource) {
  std::string r = Registration("node-a");
  EXPECT_NE(r.find(R"("instance":"node-a")"), std::string::npos);
  EXPECT_NE(r.find(R"("resource":"vm")"), std::string::npos);
  for (const char* sub : {"alias", "customer_metadata", "destroyed", "internal_metadata", "nics", "owner_uuid",
                          "server_uuid", "state", "tags"}) {
    EXPECT_NE(r.find(std::string("\"") + sub + "\""), std::string::npos) << sub;
  }
}

TEST(FeedBackoff, DoublesFromMinToMax) {
  absl::Duration min = absl::Seconds(1), max = absl::Seconds(30);
  EXPECT_EQ(FeedBackoff(1, min, max), absl::Seconds(1));
  EXPECT_EQ(FeedBackoff(2, min, max), absl::Seconds(2));
  EXPECT_EQ(FeedBackoff(5, min, max), absl::Seconds(16));
  EXPECT_EQ(FeedBackoff(6, min, max), absl::Seconds(30));
  EXPECT_EQ(FeedBackoff(1000, min, max), absl::Seconds(30));
  for (int k = 1; k < 50; ++k) EXPECT_LE(FeedBackoff(k, min, max), FeedBackoff(k + 1, min, max));
}

}  // namespace
}  // namespace mariposa::triton
