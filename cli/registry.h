// The mariposa command registry: every command declares its path ("meta
// set"), arguments, options, project use and help once; the overview
// (`mariposa --help`), each command's help, usage errors, "did you mean",
// shell completion and dispatch are all generated from it. The argument
// parser returns errors; nothing here throws. Pure: no I/O, no gRPC
// (registry_test.cc).
#ifndef MARIPOSA_CLI_REGISTRY_H_
#define MARIPOSA_CLI_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace mariposa::cmd {
class Context;  // cli/command.h
}

namespace mariposa::cli {

// One option: its names ("-n", "--limit"; the first long one is canonical),
// its value's placeholder ("N"; empty for a switch) and one line of help.
struct Flag {
  std::vector<std::string> names;
  std::string value;
  std::string help;
  const std::string& name() const {
    for (const std::string& n : names) {
      if (n.size() > 2 && n[0] == '-' && n[1] == '-') return n;
    }
    return names.front();
  }
};

// An option parsed: switches given, values given (the last one wins; All
// has every one, for options given again: --set A --set B) and the
// positional arguments, in order.
class Parsed {
 public:
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::optional<std::string> Value(const std::string& name) const;
  // Every value given for `name`, in order (none: empty).
  std::vector<std::string> All(const std::string& name) const {
    auto it = all_.find(name);
    return it == all_.end() ? std::vector<std::string>{} : it->second;
  }
  // A whole number (>= min) or `def` when the option is absent.
  absl::StatusOr<int64_t> Int(const std::string& name, int64_t def, int64_t min = 0) const;
  // A positive duration ("90s", "5m") or `def` when absent.
  absl::StatusOr<absl::Duration> Duration(const std::string& name, absl::Duration def) const;
  const std::vector<std::string>& args() const { return args_; }

 private:
  friend absl::StatusOr<Parsed> ParseFlags(const std::vector<Flag>&, const std::vector<std::string>&, bool,
                                           std::vector<std::string>*, const std::string&);
  std::map<std::string, std::string> values_;  // a switch has ""
  std::map<std::string, std::vector<std::string>> all_;
  std::vector<std::string> args_;
};

enum class ProjectUse {
  kNone,      // takes no project
  kOptional,  // -j narrows it (events, image avail, auth can-i) or the manifest names it (apply)
  kRequired,  // refused before anything is sent when there is none
};

using Handler = std::function<absl::StatusOr<int>(cmd::Context&, const Parsed&)>;

struct Command {
  std::string path = {};     // "meta set"
  std::string args = {};     // the positional synopsis: "KEY VALUE"
  std::string summary = {};  // one line for the overview
  std::string help = {};     // paragraphs for `mariposa meta set --help`
  std::string group = {};    // the overview's heading
  std::vector<Flag> flags = {};
  int min_args = 0;
  int max_args = 0;  // -1: any number
  ProjectUse project = ProjectUse::kNone;
  bool daemon = true;   // false: runs without a connection to mariposad
  int error_exit = 1;   // diff: 2 (its 1 means "changes")
  Handler run = {};
};

// Parses `argv` against `flags`: "--name V", "--name=V", "-nV" for a
// one-letter name, switches, "--" ends the options; a negative number is a
// positional argument. With `rest` set, unknown options and positionals go
// there instead of being refused (the global options, found anywhere).
// `what` names the command in errors.
absl::StatusOr<Parsed> ParseFlags(const std::vector<Flag>& flags, const std::vector<std::string>& argv,
                                  bool allow_positional, std::vector<std::string>* rest, const std::string& what);

class Registry {
 public:
  // `globals`: the options every command takes (listed once, in the
  // overview, and completed everywhere).
  explicit Registry(std::vector<Flag> globals) : globals_(std::move(globals)) {}

  void Add(Command c);
  // Another name for a top-level word: "projects" for "project".
  void Alias(const std::string& alias, const std::string& word) { aliases_[alias] = word; }

  // The command the leading words of `words` name (the longest registered
  // path); `*used` is how many words that took. Errors name the unknown word,
  // the closest known one ("did you mean") or the subcommands to choose from.
  absl::StatusOr<const Command*> Find(const std::vector<std::string>& words, size_t* used) const;
  // A node of the tree ("meta", "admin token") or a command, for --help.
  bool IsNode(const std::string& path) const { return children_.count(path) > 0; }

  // `mariposa --help`: every command by group, then the global options.
  std::string Overview(const std::string& intro, const std::string& footer) const;
  // `mariposa meta --help`: the commands under a node.
  std::string NodeHelp(const std::string& path) const;
  // `mariposa meta set --help`: usage, help text and options.
  std::string Help(const Command& c) const;
  // "usage: mariposa -j PROJECT meta set KEY VALUE [--cas ID]"
  std::string Usage(const Command& c) const;
  // The bash/zsh completion script: the command tree, each command's
  // options, the global ones, project names after -j. "" for another shell.
  std::string Completion(const std::string& shell) const;

  const std::vector<Command>& commands() const { return commands_; }
  const std::vector<Flag>& globals() const { return globals_; }
  // Node -> its children ("" is the root).
  const std::map<std::string, std::set<std::string>>& tree() const { return children_; }

 private:
  std::vector<Flag> globals_;
  std::vector<Command> commands_;
  std::map<std::string, size_t> by_path_;
  std::map<std::string, std::set<std::string>> children_;
  std::map<std::string, std::string> aliases_;
};

}  // namespace mariposa::cli

#endif  // MARIPOSA_CLI_REGISTRY_H_
