#include "common/config_file.h"

#include <fstream>

#include "gtest/gtest.h"

namespace mariposa {
namespace {

std::string Write(const std::string& text) {
  std::string path = ::testing::TempDir() + "/mariposad.yaml";
  std::ofstream(path) << text;
  return path;
}

const std::set<std::string> kSwitches = {"embedded-health", "init"};
const std::set<std::string> kValued = {"listen", "data-dir", "resync"};

TEST(ConfigFile, FlagsComeFirstAndTheCommandLineWins) {
  std::string path = Write("listen: 127.0.0.1:7740\nembedded-health: true\ninit: false\nresync: 5s\n");
  auto args = ConfigFileArgs(path, kSwitches, kValued);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(*args, (std::vector<std::string>{"--listen", "127.0.0.1:7740", "--embedded-health", "--resync", "5s"}));
  std::string config = "--config=" + path;
  const char* argv[] = {"mariposad", "--resync", "1s", config.c_str()};
  int from_file = 0;
  auto all = ExpandConfigFlag(4, const_cast<char**>(argv), kSwitches, kValued, &from_file);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(from_file, 5);
  EXPECT_EQ(all->back(), "1s");  // parsed last: it wins
  EXPECT_EQ((*all)[0], "mariposad");
}

TEST(ConfigFile, ErrorsNameTheFileTheLineAndTheSetting) {
  auto bad = ConfigFileArgs(Write("listen: 1\nlisten-on: x\n"), kSwitches, kValued);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("mariposad.yaml:2: unknown setting \"listen-on\""), std::string::npos)
      << bad.status();
  bad = ConfigFileArgs(Write("init: yes please\n"), kSwitches, kValued);
  EXPECT_NE(bad.status().message().find("init is true or false"), std::string::npos) << bad.status();
  bad = ConfigFileArgs(Write("listen: [a, b]\n"), kSwitches, kValued);
  EXPECT_NE(bad.status().message().find("listen must be a single value"), std::string::npos) << bad.status();
  bad = ConfigFileArgs(Write("- a\n"), kSwitches, kValued);
  EXPECT_NE(bad.status().message().find("must be a map"), std::string::npos);
  EXPECT_EQ(ConfigFileArgs("/nonexistent/x.yaml", kSwitches, kValued).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(ConfigFileArgs(Write(""), kSwitches, kValued)->empty());
}

}  // namespace
}  // namespace mariposa
