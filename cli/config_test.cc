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
