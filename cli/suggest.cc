#include "cli/suggest.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace mariposa::cli {
namespace {

bool IsWord(absl::string_view s) {
  if (s.empty() || !absl::ascii_islower(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_islower(c) || c == '-'; });
}

// Edits (insert, delete, substitute, swap two neighbours) from a to b.
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::map<std::string, std::set<std::string>> CommandTree(absl::string_view usage) {
  std::map<std::string, std::set<std::string>> tree;
  for (absl::string_view line : absl::StrSplit(usage, '\n')) {
    if (!absl::StartsWith(line, "  ") || line.size() < 3 || !absl::ascii_islower(line[2])) continue;
    std::string cmd;
    for (absl::string_view part : absl::StrSplit(line.substr(2), " | ")) {
      std::vector<absl::string_view> words = absl::StrSplit(absl::StripAsciiWhitespace(part), ' ', absl::SkipEmpty());
      if (words.empty() || !IsWord(words[0])) break;
      if (cmd.empty() || words[0] == cmd) {  // "meta set …", "admin token list | admin token revoke …"
        cmd = std::string(words[0]);
        tree[cmd];
        if (words.size() > 1 && IsWord(words[1])) tree[cmd].insert(std::string(words[1]));
      } else {  // "config get-contexts | current-context | use-context NAME"
        tree[cmd].insert(std::string(words[0]));
      }
    }
  }
  return tree;
}

std::string DidYouMean(const std::string& word, const std::set<std::string>& candidates) {
  std::string best;
  size_t best_d = word.size() <= 4 ? 1 : 2;
  for (const std::string& c : candidates) {
    size_t d = Distance(word, c);
    if (d < best_d || (d == best_d && best.empty() && d > 0)) {
      best = c;
      best_d = d;
    }
  }
  if (best.empty() && word.size() >= 2) {
    for (const std::string& c : candidates) {
      if (absl::StartsWith(c, word)) return c;
    }
  }
  return best;
}

std::string CompletionScript(const std::string& shell, const std::map<std::string, std::set<std::string>>& tree) {
  if (shell != "bash" && shell != "zsh") return "";
  std::vector<std::string> cmds, cases;
  for (const auto& [cmd, subs] : tree) {
    cmds.push_back(cmd);
    if (!subs.empty()) cases.push_back(absl::StrCat("    ", cmd, ") subs=\"", absl::StrJoin(subs, " "), "\" ;;"));
  }
  std::string script = absl::StrCat(
      "# mariposa ", shell, " completion: source <(mariposa completion ", shell, ")\n",
      shell == "zsh" ? "autoload -U +X bashcompinit && bashcompinit\n" : "",
      "_mariposa() {\n"
      "  local cur prev cmd i subs\n"
      "  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
      "  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
      "  case \"$prev\" in\n"
      "    -j|--project)\n"
      "      COMPREPLY=( $(compgen -W \"$(mariposa -o json project list 2>/dev/null | sed -n 's/.*\"name\": \"\\([^\"]*\\)\".*/\\1/p')\" -- \"$cur\") )\n"
      "      return ;;\n"
      "    -f|--file|--ca|--cert|--key|--token-file) COMPREPLY=( $(compgen -f -- \"$cur\") ); return ;;\n"
      "    -o|--output) COMPREPLY=( $(compgen -W \"table json yaml\" -- \"$cur\") ); return ;;\n"
      "  esac\n"
      "  cmd=\"\"\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    case \"${COMP_WORDS[i]}\" in\n"
      "      -j|--project|--addr|-o|--output|--context|--ca|--cert|--key|--token-file) ((i++)) ;;\n"
      "      -*) ;;\n"
      "      *) cmd=\"${COMP_WORDS[i]}\"; break ;;\n"
      "    esac\n"
      "  done\n"
      "  if [ -z \"$cmd\" ]; then\n"
      "    if [[ \"$cur\" == -* ]]; then\n"
      "      COMPREPLY=( $(compgen -W \"-j --project --addr -o --output --context --ca --cert --key --token-file --help\" -- \"$cur\") )\n"
      "    else\n"
      "      COMPREPLY=( $(compgen -W \"",
      absl::StrJoin(cmds, " "),
      "\" -- \"$cur\") )\n"
      "    fi\n"
      "    return\n"
      "  fi\n"
      "  subs=\"\"\n"
      "  case \"$cmd\" in\n",
      absl::StrJoin(cases, "\n"),
      "\n  esac\n"
      "  if [ -n \"$subs\" ] && [ \"$prev\" = \"$cmd\" ]; then\n"
      "    COMPREPLY=( $(compgen -W \"$subs\" -- \"$cur\") )\n"
      "  fi\n"
      "}\n"
      "complete -o default -F _mariposa mariposa\n");
  return script;
}

}  // namespace mariposa::cli
