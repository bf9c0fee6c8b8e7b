// The registry: parsing (errors, never exceptions), finding commands,
// generated usage, help and completion (run by bash).
#include "cli/registry.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"

namespace mariposa::cli {
namespace {

std::vector<Flag> Globals() {
  return {{{"-j", "--project"}, "NAME", "the project"}, {{"-o", "--output"}, "FORMAT", "format"}, {{"-h", "--help"}, "", "help"}};
}

Registry Sample() {
  Registry r(Globals());
  r.Add({.path = "meta set", .args = "KEY VALUE", .summary = "set a value", .group = "Metadata",
         .flags = {{{"--cas"}, "ID", "cas id"}, {{"--secret"}, "", "a secret"}}, .min_args = 1, .max_args = 2,
         .project = ProjectUse::kRequired});
  r.Add({.path = "meta list", .summary = "every key", .group = "Metadata", .project = ProjectUse::kRequired});
  r.Add({.path = "events", .summary = "the log", .group = "Log",
         .flags = {{{"-n", "--limit"}, "N", "how many"}, {{"-f", "--follow"}, "", "follow"}}, .project = ProjectUse::kOptional});
  r.Add({.path = "admin state", .summary = "show the state", .group = "Log"});
  r.Add({.path = "admin state set", .args = "MODE", .summary = "set it", .group = "Log", .min_args = 1, .max_args = 1});
  r.Add({.path = "project list", .summary = "projects", .group = "Projects"});
  r.Alias("projects", "project");
  return r;
}

std::vector<Flag> MetaSetFlags() { return {{{"--cas"}, "ID", "cas id"}, {{"--secret"}, "", "a secret"}, {{"-n", "--limit"}, "N", "n"}}; }

TEST(Parse, ValuesSwitchesAndPositionals) {
  auto p = ParseFlags(MetaSetFlags(), {"K", "--cas", "3", "V", "--secret"}, true, nullptr, "meta set");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->args(), (std::vector<std::string>{"K", "V"}));
  EXPECT_EQ(p->Value("--cas"), "3");
  EXPECT_TRUE(p->Has("--secret"));
  EXPECT_FALSE(p->Has("--limit"));
  // --name=V, -nV, and the canonical (last) name for a short one.
  p = ParseFlags(MetaSetFlags(), {"--cas=7", "-n5"}, true, nullptr, "x");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->Value("--cas"), "7");
  EXPECT_EQ(*p->Int("--limit", 0, 1), 5);
  // An option given again: the last wins, All has each in order.
  p = ParseFlags(MetaSetFlags(), {"--cas", "1", "--cas=2", "--cas", "3"}, true, nullptr, "x");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->Value("--cas"), "3");
  EXPECT_EQ(p->All("--cas"), (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_TRUE(p->All("--limit").empty());
  // A negative number and anything after -- are positional.
  p = ParseFlags(MetaSetFlags(), {"K", "-5", "--", "--secret"}, true, nullptr, "x");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->args(), (std::vector<std::string>{"K", "-5", "--secret"}));
  EXPECT_FALSE(p->Has("--secret"));
}

TEST(Parse, ErrorsSayWhatAndHowToFix) {
  auto p = ParseFlags(MetaSetFlags(), {"--cass", "3"}, true, nullptr, "mariposa meta set");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), "unknown option \"--cass\" for mariposa meta set; did you mean \"--cas\"?");
  p = ParseFlags(MetaSetFlags(), {"--zzzzzz"}, true, nullptr, "mariposa meta set");
  EXPECT_EQ(p.status().message(), "unknown option \"--zzzzzz\" for mariposa meta set; its options: --cas, --secret, --limit");
  p = ParseFlags({}, {"--x"}, true, nullptr, "mariposa versions");
  EXPECT_EQ(p.status().message(), "unknown option \"--x\" for mariposa versions; it takes no options of its own");
  p = ParseFlags(MetaSetFlags(), {"K", "--cas"}, true, nullptr, "x");
  EXPECT_EQ(p.status().message(), "--cas needs a value (ID)");
  p = ParseFlags(MetaSetFlags(), {"--secret=yes"}, true, nullptr, "x");
  EXPECT_EQ(p.status().message(), "--secret takes no value");
  p = ParseFlags(MetaSetFlags(), {"--limit", "x"}, true, nullptr, "x");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->Int("--limit", 1, 1).status().message(), "--limit needs a whole number of at least 1, not \"x\"");
  EXPECT_EQ(p->Duration("--cas", absl::Seconds(1)).value(), absl::Seconds(1));  // absent: the default
}

TEST(Parse, GlobalsAreFoundAnywhereAndTheRestKeptInOrder) {
  std::vector<std::string> rest;
  auto p = ParseFlags(Globals(), {"meta", "-jjupiter", "set", "K", "--cas", "3", "-o=json"}, true, &rest, "mariposa");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->Value("--project"), "jupiter");
  EXPECT_EQ(p->Value("--output"), "json");
  EXPECT_EQ(rest, (std::vector<std::string>{"meta", "set", "K", "--cas", "3"}));
}

TEST(Find, TheLongestPathAliasesAndErrors) {
  Registry r = Sample();
  size_t used = 0;
  auto c = r.Find({"meta", "set", "K", "V"}, &used);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->path, "meta set");
  EXPECT_EQ(used, 2u);
  c = r.Find({"admin", "state"}, &used);
  EXPECT_EQ((*c)->path, "admin state");
  c = r.Find({"admin", "state", "set", "readonly"}, &used);
  EXPECT_EQ((*c)->path, "admin state set");
  EXPECT_EQ(used, 3u);
  c = r.Find({"projects", "list"}, &used);
  EXPECT_EQ((*c)->path, "project list");
  EXPECT_EQ(r.Find({"evnets"}, &used).status().message(), "unknown command \"evnets\"; did you mean \"events\"?");
  EXPECT_EQ(r.Find({"meta", "sett"}, &used).status().message(), "unknown subcommand \"sett\" of meta; did you mean \"set\"?");
  EXPECT_EQ(r.Find({"meta", "zzzzzz"}, &used).status().message(), "unknown subcommand \"zzzzzz\" of meta (list, set)");
  EXPECT_EQ(r.Find({"meta"}, &used).status().message(), "meta needs a subcommand: list, set");
  EXPECT_EQ(r.Find({}, &used).status().message(), "no command given");
}

TEST(Help, GeneratedFromTheDeclarations) {
  Registry r = Sample();
  size_t used = 0;
  const Command* set = *r.Find({"meta", "set"}, &used);
  EXPECT_EQ(r.Usage(*set), "usage: mariposa -j PROJECT meta set KEY VALUE [--cas ID] [--secret]\n");
  const Command* events = *r.Find({"events"}, &used);
  EXPECT_EQ(r.Usage(*events), "usage: mariposa [-j PROJECT] events [-n N] [-f]\n");
  std::string help = r.Help(*events);
  EXPECT_NE(help.find("\nOptions:\n  -n, --limit N           how many\n  -f, --follow            follow\n"),
            std::string::npos)
      << help;
  std::string overview = r.Overview("usage: mariposa COMMAND\n\n", "footer\n");
  EXPECT_NE(overview.find("Metadata\n  meta set KEY VALUE                    set a value\n  meta list"), std::string::npos)
      << overview;
  EXPECT_NE(overview.find("Global options\n  -j, --project NAME"), std::string::npos);
  EXPECT_EQ(overview.substr(overview.size() - 7), "footer\n");
  EXPECT_NE(r.NodeHelp("meta").find("  meta set KEY VALUE"), std::string::npos);
  // Every command is in the overview, once.
  for (const Command& c : r.commands()) {
    EXPECT_NE(overview.find("  " + c.path + " "), std::string::npos) << c.path;
  }
}

// The completion script, run by bash as a shell would.
std::string Complete(const Registry& r, const std::string& line) {
  std::string path = ::testing::TempDir() + "/completion.bash";
  std::ofstream(path) << r.Completion("bash");
  std::string cmd = "bash -c 'source " + path + "; COMP_WORDS=(" + line +
                    "); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _mariposa; echo \"${COMPREPLY[*]}\"'";
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (f != nullptr && fgets(buf, sizeof buf, f) != nullptr) out += buf;
  if (f != nullptr) pclose(f);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

TEST(Completion, BashCompletesCommandsSubcommandsAndOptions) {
  Registry r = Sample();
  EXPECT_EQ(Complete(r, "mariposa \"\""), "admin events meta project");
  EXPECT_EQ(Complete(r, "mariposa me"), "meta");
  EXPECT_EQ(Complete(r, "mariposa -j x meta \"\""), "list set");
  EXPECT_EQ(Complete(r, "mariposa projects l"), "list");
  EXPECT_EQ(Complete(r, "mariposa admin state \"\""), "set");
  EXPECT_EQ(Complete(r, "mariposa meta set --c"), "--cas");
  EXPECT_EQ(Complete(r, "mariposa events --"), "--limit --follow --project --output --help");
  EXPECT_EQ(Complete(r, "mariposa -o \"\""), "table json yaml");
  EXPECT_EQ(r.Completion("zsh").rfind("# mariposa zsh completion", 0), 0u);
  EXPECT_EQ(r.Completion("fish"), "");
}

}  // namespace
}  // namespace mariposa::cli
