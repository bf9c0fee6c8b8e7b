#include "cli/suggest.h"

#include "gtest/gtest.h"

namespace mariposa::cli {
namespace {

constexpr char kUsage[] = R"(usage: mariposa COMMAND ...

Projects
  project create NAME [--description TEXT]
  project list
  apply -f FILE [--yes]
  meta set KEY VALUE [--cas ID]
  admin token list | admin token revoke ID|NAME
  config get-contexts | current-context | use-context NAME

Global options
  -j, --project NAME   the project
VERSION is a version number.
)";

TEST(Suggest, TheTreeComesFromTheUsageText) {
  auto tree = CommandTree(kUsage);
  EXPECT_EQ(tree, (std::map<std::string, std::set<std::string>>{
                      {"project", {"create", "list"}},
                      {"apply", {}},
                      {"meta", {"set"}},
                      {"admin", {"token"}},
                      {"config", {"get-contexts", "current-context", "use-context"}}}));
}

TEST(Suggest, DidYouMean) {
  std::set<std::string> cmds = {"apply", "diff", "events", "status", "scale", "project", "version", "versions"};
  EXPECT_EQ(DidYouMean("aply", cmds), "apply");
  EXPECT_EQ(DidYouMean("stauts", cmds), "status");
  EXPECT_EQ(DidYouMean("evnets", cmds), "events");
  EXPECT_EQ(DidYouMean("proj", cmds), "project");  // a prefix
  EXPECT_EQ(DidYouMean("zzzzzz", cmds), "");
  EXPECT_EQ(DidYouMean("xy", cmds), "");
}

TEST(Suggest, CompletionScripts) {
  auto tree = CommandTree(kUsage);
  std::string bash = CompletionScript("bash", tree);
  EXPECT_NE(bash.find("complete -o default -F _mariposa mariposa"), std::string::npos);
  EXPECT_NE(bash.find("compgen -W \"admin apply config meta project\""), std::string::npos) << bash;
  EXPECT_NE(bash.find("project) subs=\"create list\" ;;"), std::string::npos);
  std::string zsh = CompletionScript("zsh", tree);
  EXPECT_EQ(zsh.rfind("# mariposa zsh completion", 0), 0u);
  EXPECT_NE(zsh.find("bashcompinit"), std::string::npos);
  EXPECT_EQ(CompletionScript("fish", tree), "");
}

}  // namespace
}  // namespace mariposa::cli
