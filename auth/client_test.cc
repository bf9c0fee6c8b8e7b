#include "auth/client.h"

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"

namespace mariposa::auth {
namespace {

TEST(CheckToken, OneWordOfPrintableAscii) {
  EXPECT_TRUE(CheckToken("mpt_abcDEF012-_.~", "t").ok());
  struct Case {
    std::string token, says;
  };
  for (const Case& c : std::vector<Case>{{"", "t is empty"},
                                         {"mpt_a\nmpt_b", "more than one line (a line break at byte 5)"},
                                         {"mpt_a\r", "more than one line"},
                                         {"mpt a", "a space at byte 3"},
                                         {"mpt_\x01", "byte 0x01 at byte 4"},
                                         {"mpt_\xc3\xa9", "byte 0xc3 at byte 4"},
                                         {std::string(5000, 'a'), "5000 bytes, not a token"}}) {
    absl::Status s = CheckToken(c.token, "t");
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.token;
    EXPECT_NE(s.message().find(c.says), absl::string_view::npos) << s.message();
    EXPECT_NE(s.message().find("mariposa admin token create"), absl::string_view::npos) << s.message();
  }
}

TEST(ReadTokenFile, AFinalNewlineIsFineStrayTextIsNot) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/token";
  std::ofstream(path) << "mpt_abc\n";
  auto t = ReadTokenFile(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, "mpt_abc");
  std::ofstream(path) << "mpt_abc\nleft over\n";
  t = ReadTokenFile(path);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("token file " + path + " holds more than one line"), absl::string_view::npos)
      << t.status();
  EXPECT_FALSE(ReadTokenFile(path + ".missing").ok());
}

}  // namespace
}  // namespace mariposa::auth
