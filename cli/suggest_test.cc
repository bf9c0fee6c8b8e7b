#include "cli/suggest.h"

#include "gtest/gtest.h"

namespace mariposa::cli {
namespace {

TEST(Suggest, DidYouMean) {
  std::set<std::string> cmds = {"apply", "diff", "events", "status", "scale", "project", "version", "versions"};
  EXPECT_EQ(DidYouMean("aply", cmds), "apply");
  EXPECT_EQ(DidYouMean("stauts", cmds), "status");
  EXPECT_EQ(DidYouMean("evnets", cmds), "events");
  EXPECT_EQ(DidYouMean("proj", cmds), "project");  // a prefix
  EXPECT_EQ(DidYouMean("zzzzzz", cmds), "");
  EXPECT_EQ(DidYouMean("xy", cmds), "");
}

}  // namespace
}  // namespace mariposa::cli
