// Commands as the usage text lists them: "did you mean" for a mistyped
// command or subcommand, and the shell completion scripts. The usage text is
// the one list; nothing here repeats it. Pure functions, tested in
// suggest_test.cc.
#ifndef MARIPOSA_CLI_SUGGEST_H_
#define MARIPOSA_CLI_SUGGEST_H_

#include <map>
#include <set>
#include <string>

#include "absl/strings/string_view.h"

namespace mariposa::cli {

// Command -> its subcommands (empty for a plain command), read from the
// usage text's lines "  COMMAND [SUBCOMMAND] …" (alternatives after " | ").
std::map<std::string, std::set<std::string>> CommandTree(absl::string_view usage);

// The candidate closest to `word` by edit distance, if close enough to be a
// typo (at most 1 edit for short words, 2 for longer), or one `word` is a
// prefix of; "" when none is.
std::string DidYouMean(const std::string& word, const std::set<std::string>& candidates);

// The completion script for `shell` ("bash" or "zsh"): commands, their
// subcommands, global options, and project names after -j (asked of
// mariposad). "" for another shell.
std::string CompletionScript(const std::string& shell, const std::map<std::string, std::set<std::string>>& tree);

}  // namespace mariposa::cli

#endif  // MARIPOSA_CLI_SUGGEST_H_
