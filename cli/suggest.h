// "Did you mean": the closest known word to a mistyped command, subcommand
// or option (cli/registry.cc). Pure, tested in suggest_test.cc.
#ifndef MARIPOSA_CLI_SUGGEST_H_
#define MARIPOSA_CLI_SUGGEST_H_

#include <map>
#include <set>
#include <string>

#include "absl/strings/string_view.h"

namespace mariposa::cli {

// The candidate closest to `word` by edit distance, if close enough to be a
// typo (at most 1 edit for short words, 2 for longer), or one `word` is a
// prefix of; "" when none is.
std::string DidYouMean(const std::string& word, const std::set<std::string>& candidates);

}  // namespace mariposa::cli

#endif  // MARIPOSA_CLI_SUGGEST_H_
