#include "common/ids.h"

#include <set>

#include "gtest/gtest.h"

namespace mariposa {
namespace {

TEST(IdsTest, UuidsAreV4AndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string u = NewUuid();
    EXPECT_TRUE(IsUuid(u)) << u;
    EXPECT_EQ(u[14], '4');
    EXPECT_TRUE(u[19] == '8' || u[19] == '9' || u[19] == 'a' || u[19] == 'b');
    seen.insert(u);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_FALSE(IsUuid("not-a-uuid"));
  EXPECT_FALSE(IsUuid("0123456789012345678901234567890123456"));
}

TEST(IdsTest, Sha256KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(IdsTest, DnsLabels) {
  EXPECT_TRUE(IsDnsLabel("jupiter"));
  EXPECT_TRUE(IsDnsLabel("cn-agent"));
  EXPECT_TRUE(IsDnsLabel("a1"));
  EXPECT_FALSE(IsDnsLabel(""));
  EXPECT_FALSE(IsDnsLabel("-a"));
  EXPECT_FALSE(IsDnsLabel("a-"));
  EXPECT_FALSE(IsDnsLabel("Web"));
  EXPECT_FALSE(IsDnsLabel("a_b"));
  EXPECT_FALSE(IsDnsLabel(std::string(64, 'a')));
}

}  // namespace
}  // namespace mariposa
