#include "cli/registry.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/suggest.h"

namespace mariposa::cli {
namespace {

// "-jjupiter" for "-j jupiter": a one-letter option with its value attached.
bool AttachedShort(const std::string& name, const std::string& arg) {
  return name.size() == 2 && name[0] == '-' && name[1] != '-' && arg.size() > 2 && absl::StartsWith(arg, name) &&
         arg[2] != '=';
}

bool IsNumber(const std::string& s) {
  int64_t n = 0;
  return absl::SimpleAtoi(s, &n);
}

std::string FlagSynopsis(const Flag& f) {
  return f.value.empty() ? f.names.front() : absl::StrCat(f.names.front(), " ", f.value);
}

// "  -n, --limit N" padded, then the help; long ones on their own line.
std::string FlagLines(const std::vector<Flag>& flags) {
  std::string out;
  for (const Flag& f : flags) {
    std::string left = absl::StrCat("  ", absl::StrJoin(f.names, ", "), f.value.empty() ? "" : " " + f.value);
    if (left.size() < 26) absl::StrAppend(&out, left, std::string(26 - left.size(), ' '), f.help, "\n");
    else absl::StrAppend(&out, left, "\n", std::string(26, ' '), f.help, "\n");
  }
  return out;
}

// "  meta set KEY [VALUE|-]     set a value": a command in a list (the
// overview, a group's help); a long synopsis puts the summary on its own line.
std::string SummaryLine(const Command& c) {
  std::string left = absl::StrCat("  ", c.path, c.args.empty() ? "" : " " + c.args);
  return absl::StrCat(left, left.size() <= 38 ? std::string(40 - left.size(), ' ') : "\n" + std::string(40, ' '),
                      c.summary, "\n");
}

// Words joined into lines of at most `width`, continuation lines indented.
std::string Wrap(const std::vector<std::string>& words, size_t width, size_t indent) {
  std::string out, line;
  for (const std::string& w : words) {
    if (!line.empty() && line.size() + 1 + w.size() > width) {
      absl::StrAppend(&out, line, "\n");
      line = std::string(indent, ' ');
    }
    if (!line.empty() && line.back() != ' ') line += ' ';
    line += w;
  }
  absl::StrAppend(&out, line);
  return out;
}

}  // namespace

std::optional<std::string> Parsed::Value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<int64_t> Parsed::Int(const std::string& name, int64_t def, int64_t min) const {
  auto v = Value(name);
  if (!v) return def;
  int64_t n = 0;
  if (!absl::SimpleAtoi(*v, &n) || n < min) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " needs a whole number", min > 0 ? absl::StrCat(" of at least ", min) : min == 0 ? " (0 or more)" : "",
                     ", not \"", *v, "\""));
  }
  return n;
}

absl::StatusOr<absl::Duration> Parsed::Duration(const std::string& name, absl::Duration def) const {
  auto v = Value(name);
  if (!v) return def;
  absl::Duration d;
  if (!absl::ParseDuration(*v, &d) || d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(name, " \"", *v, "\" is not a positive duration (e.g. 90s, 5m)"));
  }
  return d;
}

absl::StatusOr<Parsed> ParseFlags(const std::vector<Flag>& flags, const std::vector<std::string>& argv,
                                  bool allow_positional, std::vector<std::string>* rest, const std::string& what) {
  Parsed p;
  bool options_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (options_done || a.size() < 2 || a[0] != '-' || IsNumber(a)) {
      if (rest != nullptr) rest->push_back(a);
      else if (allow_positional) p.args_.push_back(a);
      continue;
    }
    if (a == "--") {
      if (rest != nullptr) {
        rest->insert(rest->end(), argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
        break;
      }
      options_done = true;
      continue;
    }
    const Flag* match = nullptr;
    std::optional<std::string> inline_value;
    for (const Flag& f : flags) {
      for (const std::string& n : f.names) {
        if (a == n) {
          match = &f;
        } else if (absl::StartsWith(a, n + "=")) {
          match = &f;
          inline_value = a.substr(n.size() + 1);
        } else if (!f.value.empty() && AttachedShort(n, a)) {
          match = &f;
          inline_value = a.substr(2);
        }
        if (match != nullptr) break;
      }
      if (match != nullptr) break;
    }
    if (match == nullptr) {
      if (rest != nullptr) {
        rest->push_back(a);
        continue;
      }
      std::set<std::string> names;
      for (const Flag& f : flags) names.insert(f.names.begin(), f.names.end());
      std::string option = a.substr(0, a.find('='));
      std::string near = DidYouMean(option, names);
      std::vector<std::string> own;
      for (const Flag& f : flags) own.push_back(f.name());
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown option \"", option, "\" for ", what,
          !near.empty() ? absl::StrCat("; did you mean \"", near, "\"?")
          : own.empty() ? "; it takes no options of its own"
                        : absl::StrCat("; its options: ", absl::StrJoin(own, ", "))));
    }
    if (match->value.empty()) {
      if (inline_value) return absl::InvalidArgumentError(absl::StrCat(match->name(), " takes no value"));
      p.values_[match->name()] = "";
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argv.size()) {
        return absl::InvalidArgumentError(absl::StrCat(match->name(), " needs a value (", match->value, ")"));
      }
      inline_value = argv[++i];
    }
    p.values_[match->name()] = *inline_value;
    p.all_[match->name()].push_back(*inline_value);
  }
  return p;
}

void Registry::Add(Command c) {
  std::vector<std::string> words = absl::StrSplit(c.path, ' ');
  std::string node;
  for (const std::string& w : words) {
    children_[node].insert(w);
    node = node.empty() ? w : absl::StrCat(node, " ", w);
  }
  by_path_[c.path] = commands_.size();
  commands_.push_back(std::move(c));
}

absl::StatusOr<const Command*> Registry::Find(const std::vector<std::string>& words, size_t* used) const {
  if (words.empty()) return absl::InvalidArgumentError("no command given");
  std::string node;
  size_t i = 0;
  while (i < words.size()) {
    auto kids = children_.find(node);
    if (kids == children_.end()) break;
    std::string w = words[i];
    if (node.empty() && aliases_.count(w)) w = aliases_.at(w);
    if (!kids->second.count(w)) {
      if (by_path_.count(node)) break;  // a command's first argument
      std::set<std::string> candidates = kids->second;
      if (node.empty()) {
        for (const auto& kv : aliases_) candidates.insert(kv.first);
      }
      std::string near = DidYouMean(w, candidates);
      std::string where = node.empty() ? "command" : absl::StrCat("subcommand of ", node);
      if (node.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("unknown command \"", w, "\"",
                                                       near.empty() ? "" : absl::StrCat("; did you mean \"", near, "\"?")));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown subcommand \"", w, "\" of ", node,
          near.empty() ? absl::StrCat(" (", absl::StrJoin(kids->second, ", "), ")")
                       : absl::StrCat("; did you mean \"", near, "\"?")));
    }
    node = node.empty() ? w : absl::StrCat(node, " ", w);
    ++i;
  }
  auto it = by_path_.find(node);
  if (it == by_path_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(node, " needs a subcommand: ", absl::StrJoin(children_.at(node), ", ")));
  }
  *used = i;
  return &commands_[it->second];
}

std::string Registry::Usage(const Command& c) const {
  std::vector<std::string> words = {"usage: mariposa"};
  if (c.project == ProjectUse::kRequired) words.push_back("-j PROJECT");
  if (c.project == ProjectUse::kOptional) words.push_back("[-j PROJECT]");
  words.push_back(c.path);
  if (!c.args.empty()) words.push_back(c.args);
  for (const Flag& f : c.flags) words.push_back(absl::StrCat("[", FlagSynopsis(f), "]"));
  return absl::StrCat(Wrap(words, 100, 7 + 9 + c.path.size()), "\n");
}

std::string Registry::Help(const Command& c) const {
  std::string out = Usage(c);
  absl::StrAppend(&out, "\n", c.summary, "\n");
  if (!c.help.empty()) absl::StrAppend(&out, "\n", c.help, absl::EndsWith(c.help, "\n") ? "" : "\n");
  if (!c.flags.empty()) absl::StrAppend(&out, "\nOptions:\n", FlagLines(c.flags));
  absl::StrAppend(&out, "\nGlobal options (-j, --addr, -o, --timeout, …): mariposa --help\n");
  return out;
}

std::string Registry::NodeHelp(const std::string& path) const {
  std::string out = absl::StrCat("usage: mariposa ", path, " COMMAND ...\n\n");
  for (const Command& c : commands_) {
    if (!absl::StartsWith(c.path, path + " ")) continue;
    absl::StrAppend(&out, SummaryLine(c));
  }
  absl::StrAppend(&out, "\n`mariposa ", path, " COMMAND --help` for one of them.\n");
  return out;
}

std::string Registry::Overview(const std::string& intro, const std::string& footer) const {
  std::string out = intro;
  std::vector<std::string> groups;
  for (const Command& c : commands_) {
    if (std::find(groups.begin(), groups.end(), c.group) == groups.end()) groups.push_back(c.group);
  }
  for (const std::string& g : groups) {
    absl::StrAppend(&out, g, "\n");
    for (const Command& c : commands_) {
      if (c.group != g) continue;
      absl::StrAppend(&out, SummaryLine(c));
    }
  }
  absl::StrAppend(&out, "\nGlobal options\n", FlagLines(globals_), "\n", footer);
  return out;
}

std::string Registry::Completion(const std::string& shell) const {
  if (shell != "bash" && shell != "zsh") return "";
  std::string subs, flags;
  for (const auto& [node, kids] : children_) {
    absl::StrAppend(&subs, "    \"", node, "\") echo \"", absl::StrJoin(kids, " "), "\" ;;\n");
  }
  for (const Command& c : commands_) {
    std::vector<std::string> names;
    for (const Flag& f : c.flags) names.insert(names.end(), f.names.begin(), f.names.end());
    if (!names.empty()) absl::StrAppend(&flags, "    \"", c.path, "\") echo \"", absl::StrJoin(names, " "), "\" ;;\n");
  }
  std::vector<std::string> global_names, global_values, aliases;
  for (const Flag& f : globals_) {
    global_names.insert(global_names.end(), f.names.begin(), f.names.end());
    if (!f.value.empty()) global_values.insert(global_values.end(), f.names.begin(), f.names.end());
  }
  // Options whose value is a path complete file names.
  std::set<std::string> paths;
  auto add_paths = [&paths](const std::vector<Flag>& flags) {
    for (const Flag& f : flags) {
      if (f.value == "FILE" || f.value == "DIR") paths.insert(f.names.begin(), f.names.end());
    }
  };
  add_paths(globals_);
  for (const Command& c : commands_) add_paths(c.flags);
  for (const auto& [alias, word] : aliases_) aliases.push_back(absl::StrCat("[ \"$w\" = ", alias, " ] && w=", word));
  return absl::StrCat(
      "# mariposa ", shell, " completion: source <(mariposa completion ", shell, ")\n",
      shell == "zsh" ? "autoload -U +X bashcompinit && bashcompinit\n" : "",
      "_mariposa_subs() {\n  case \"$1\" in\n", subs, "  esac\n}\n",
      "_mariposa_flags() {\n  case \"$1\" in\n", flags, "  esac\n}\n",
      "_mariposa() {\n"
      "  local cur prev path w i kids done=\"\"\n"
      "  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
      "  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
      "  case \"$prev\" in\n"
      "    -j|--project)\n"
      "      COMPREPLY=( $(compgen -W \"$(mariposa -o json project list 2>/dev/null | sed -n 's/.*\"name\": \"\\([^\"]*\\)\".*/\\1/p')\" -- \"$cur\") )\n"
      "      return ;;\n",
      paths.empty() ? "" : absl::StrCat("    ", absl::StrJoin(paths, "|"), ") COMPREPLY=( $(compgen -f -- \"$cur\") ); return ;;\n"),
      "    -o|--output) COMPREPLY=( $(compgen -W \"table json yaml\" -- \"$cur\") ); return ;;\n"
      "  esac\n"
      "  path=\"\"\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=\"${COMP_WORDS[i]}\"\n"
      "    case \"$w\" in\n"
      "      ", absl::StrJoin(global_values, "|"), ") ((i++)); continue ;;\n"
      "      -*) continue ;;\n"
      "    esac\n"
      "    [ -n \"$done\" ] && continue\n"
      "    [ -z \"$path\" ] && { ", aliases.empty() ? ":" : absl::StrJoin(aliases, "; "), "; }\n"
      "    kids=\" $(_mariposa_subs \"$path\") \"\n"
      "    if [[ \"$kids\" == *\" $w \"* ]]; then path=\"${path:+$path }$w\"; else done=1; fi\n"
      "  done\n"
      "  if [[ \"$cur\" == -* ]]; then\n"
      "    COMPREPLY=( $(compgen -W \"$(_mariposa_flags \"$path\") ", absl::StrJoin(global_names, " "),
      "\" -- \"$cur\") )\n"
      "  elif [ -z \"$done\" ]; then\n"
      "    COMPREPLY=( $(compgen -W \"$(_mariposa_subs \"$path\")\" -- \"$cur\") )\n"
      "  fi\n"
      "}\n"
      "complete -o default -F _mariposa mariposa\n");
}

}  // namespace mariposa::cli
