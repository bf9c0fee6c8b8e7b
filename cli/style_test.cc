#include "cli/style.h"

#include <gtest/gtest.h>

namespace mariposa::cli {
namespace {

TEST(Style, ColorOnlyOnATerminalWithoutNoColor) {
  EXPECT_TRUE(ColorWanted(false, nullptr, true));
  EXPECT_FALSE(ColorWanted(false, nullptr, false)) << "piped: never";
  EXPECT_FALSE(ColorWanted(true, nullptr, true)) << "--no-color";
  EXPECT_FALSE(ColorWanted(false, "", true)) << "NO_COLOR set, even empty";
  EXPECT_FALSE(ColorWanted(false, "1", true));
}

TEST(Style, PaintsVerdictsAndPlanLinesOnlyWhenOn) {
  SetColor(false);
  EXPECT_EQ(Paint("converged", ToneOf("converged")), "converged");
  EXPECT_EQ(PaintPlanLine("+ meta.x: 1"), "+ meta.x: 1");
  SetColor(true);
  EXPECT_EQ(Paint("converged", ToneOf("converged")), "\033[32mconverged\033[0m");
  EXPECT_EQ(Paint("degraded", ToneOf("degraded")), "\033[31mdegraded\033[0m");
  EXPECT_EQ(Paint("progressing", ToneOf("progressing")), "\033[33mprogressing\033[0m");
  EXPECT_EQ(Paint("nginx", ToneOf("nginx")), "nginx");
  EXPECT_EQ(PaintPlanLine("    - image: a"), "\033[31m    - image: a\033[0m");
  EXPECT_EQ(PaintPlanLine("    ~ count: 1 -> 2"), "\033[33m    ~ count: 1 -> 2\033[0m");
  EXPECT_EQ(PaintPlanLine("-1 instance"), "-1 instance") << "not a plan line";
  SetColor(false);
}

}  // namespace
}  // namespace mariposa::cli
