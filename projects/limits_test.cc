#include "projects/limits.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace mariposa {
namespace {

TEST(CheckTextTest, AcceptsUtf8WithTabsAndNewlines) {
  EXPECT_TRUE(CheckText("f", "héllo\twörld\r\n✓ 𝄞", 100).ok());
  EXPECT_TRUE(CheckText("f", "", 0).ok());
}

TEST(CheckTextTest, RejectsControlCharactersNamingFieldAndOffset) {
  struct Case {
    std::string text;
    std::string why;
    size_t at;
  } cases[] = {
      {std::string("ab\0c", 4), "a NUL byte", 2},
      {"a\x01", "control character 0x01", 1},
      {"\x1b[31m", "control character 0x1b", 0},
      {"x\x7f", "DEL", 1},
      {"x\xc2\x85", "C1 control", 1},
      {"\xff", "invalid UTF-8", 0},
      {"ok\xc3", "invalid UTF-8", 2},           // truncated sequence
      {"\xc0\xaf", "invalid UTF-8", 0},         // overlong '/'
      {"\xed\xa0\x80", "invalid UTF-8", 0},     // a surrogate
      {"\xf4\x90\x80\x80", "invalid UTF-8", 0}  // above U+10FFFF
  };
  for (const auto& c : cases) {
    absl::Status s = CheckText("services.web.tags.x", c.text, 100);
    ASSERT_TRUE(absl::IsInvalidArgument(s)) << c.why;
    EXPECT_NE(s.message().find("services.web.tags.x"), absl::string_view::npos) << s;
    EXPECT_NE(s.message().find(c.why), absl::string_view::npos) << s;
    EXPECT_NE(s.message().find("at byte " + std::to_string(c.at)), absl::string_view::npos) << s;
  }
}

TEST(CheckTextTest, RejectsTooLong) {
  absl::Status s = CheckText("description", std::string(5000, 'a'), 4096);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("4096"), absl::string_view::npos) << s;
}

TEST(CheckMetaKeyTest, OneRuleForManifestAndStore) {
  EXPECT_TRUE(CheckMetaKey("db.password").ok());
  EXPECT_TRUE(CheckMetaKey(std::string(256, 'k')).ok());
  for (const std::string& bad : {std::string(), std::string(257, 'k'), std::string("a b"), std::string("a=b"),
                                 std::string("{x}"), std::string("a\nb"), std::string("a\0b", 3),
                                 std::string("\xff")}) {
    EXPECT_TRUE(absl::IsInvalidArgument(CheckMetaKey(bad))) << bad;
  }
}

TEST(ValidUtf8Test, ReplacesBrokenBytesOnly) {
  EXPECT_EQ(ValidUtf8("héllo"), "héllo");
  EXPECT_EQ(ValidUtf8("a\xff" "b"), "a\xEF\xBF\xBD" "b");
}

TEST(CheckedAddTest, RefusesOverflowInsteadOfWrapping) {
  int64_t out = 0;
  EXPECT_TRUE(CheckedAdd(2, 3, "x", &out).ok());
  EXPECT_EQ(out, 5);
  absl::Status s = CheckedAdd(INT64_MAX, INT64_MAX, "meta key \"n\"", &out);
  EXPECT_TRUE(absl::IsOutOfRange(s));
  EXPECT_NE(s.message().find("meta key"), absl::string_view::npos);
  EXPECT_TRUE(absl::IsOutOfRange(CheckedAdd(INT64_MIN, -1, "x", &out)));
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

TEST(CheckRangeTest, NamesTheFieldTheValueAndTheRange) {
  EXPECT_TRUE(CheckRange("limit", 0, 0, 1000).ok());
  EXPECT_TRUE(CheckRange("limit", 1000, 0, 1000).ok());
  absl::Status s = CheckRange("limit", -1, 0, 1000, "0 = the default 100");
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_EQ(s.message(), "limit -1 is outside 0..1000; 0 = the default 100");
  EXPECT_EQ(CheckRange("--rolling", INT64_MAX, 0, 100000).message(),
            "--rolling 9223372036854775807 is outside 0..100000");
}

}  // namespace
}  // namespace mariposa
