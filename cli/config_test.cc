#include "cli/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

namespace mariposa::cli {
namespace {

std::string TempDir() {
  std::string t = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/cfgXXXXXX";
  return mkdtemp(t.data());
}

TEST(Config, FlagsBeatEnvironmentBeatContextBeatDefaults) {
  ConfigFile cfg;
  cfg.current = "prod";
  cfg.contexts["prod"] = Settings{"prod:7740", "jupiter", "/ca.pem", "", "", "", "~/prod.token"};
  cfg.contexts["lab"] = Settings{"lab:7740", "saturn", "", "", "", "mpt_lab", ""};
  std::map<std::string, std::string> env = {{"HOME", "/home/op"}};
  auto s = Resolve({}, "", env, cfg);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->addr, "prod:7740");
  EXPECT_EQ(s->project, "jupiter");
  EXPECT_EQ(s->ca, "/ca.pem");
  EXPECT_EQ(s->token_file, "/home/op/prod.token");
  env["MARIPOSA_PROJECT"] = "mars";
  env["MARIPOSA_TOKEN"] = "mpt_env";
  s = Resolve({}, "", env, cfg);
  EXPECT_EQ(s->project, "mars");
  EXPECT_EQ(s->token, "mpt_env");
  EXPECT_EQ(s->token_file, "") << "an environment token hides the context's token file";
  Settings flags;
  flags.addr = "flag:1";
  s = Resolve(flags, "lab", env, cfg);
  EXPECT_EQ(s->addr, "flag:1");
  EXPECT_EQ(s->ca, "");
  env.erase("MARIPOSA_TOKEN");
  s = Resolve({}, "lab", env, cfg);
  EXPECT_EQ(s->token, "mpt_lab");
  EXPECT_EQ(s->addr, "lab:7740");
  EXPECT_EQ(Resolve({}, "", {}, ConfigFile{})->addr, "127.0.0.1:7740");
  auto missing = Resolve({}, "nope", env, cfg);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

// The triton CLI's own variables make the CLI sign as that user, unless a
// token is given or the profile is "none".
TEST(Config, TritonVariablesSignUnlessATokenIsGiven) {
  ConfigFile cfg;
  struct Case {
    std::map<std::string, std::string> env;
    std::string flag;
    std::string want;
  } cases[] = {
      {{}, "", ""},
      {{{"SDC_ACCOUNT", "jill"}}, "", ""},  // an account alone says no key
      {{{"SDC_ACCOUNT", "jill"}, {"SDC_KEY_ID", "aa:bb"}}, "", "env"},
      {{{"TRITON_ACCOUNT", "jill"}, {"TRITON_KEY_ID", "aa:bb"}}, "", "env"},
      {{{"TRITON_PROFILE", "east"}}, "", "current"},
      {{{"TRITON_PROFILE", "east"}}, "west", "west"},
      {{{"TRITON_PROFILE", "east"}}, "none", ""},
      {{{"TRITON_PROFILE", "east"}, {"MARIPOSA_TOKEN", "mpt_x"}}, "", ""},
      {{{"SDC_ACCOUNT", "jill"}, {"SDC_KEY_ID", "aa:bb"}, {"MARIPOSA_TOKEN_FILE", "/t"}}, "", ""},
      {{{"MARIPOSA_TRITON_PROFILE", "east"}}, "", "east"},
  };
  for (const Case& c : cases) {
    Settings flags;
    flags.triton_profile = c.flag;
    auto s = Resolve(flags, "", c.env, cfg);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->triton_profile, c.want) << c.flag << " " << c.env.size();
  }
}

TEST(Config, SavedPrivatelyAndReadBack) {
  std::string dir = TempDir();
  std::string path = dir + "/sub/config.yaml";
  ConfigFile cfg;
  cfg.current = "a";
  cfg.contexts["a"] = Settings{"127.0.0.1:1", "p", "", "", "", "mpt_x", ""};
  ASSERT_TRUE(SaveConfig(path, cfg).ok());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  auto back = LoadConfig(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->current, "a");
  EXPECT_EQ(back->contexts["a"].token, "mpt_x");
  EXPECT_EQ(back->contexts["a"].addr, "127.0.0.1:1");
  std::ofstream(dir + "/bad.yaml") << "contexts:\n  a:\n    adress: x\n";
  auto bad = LoadConfig(dir + "/bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("adress"), std::string::npos);
  EXPECT_TRUE(LoadConfig(dir + "/none.yaml")->contexts.empty());
}

}  // namespace
}  // namespace mariposa::cli
