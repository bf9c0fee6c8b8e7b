// What every mariposa command's code sees: the Context it runs in (output,
// client, project, input), how it fails (Usage: exit 2 with the command's
// usage; Err: exit 1), the helpers commands share, and the function each
// cli/commands/*.cc file exports to register its commands.
#ifndef MARIPOSA_CLI_COMMAND_H_
#define MARIPOSA_CLI_COMMAND_H_

#include <istream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "cli/client.h"
#include "cli/config.h"
#include "cli/output.h"
#include "cli/registry.h"
#include "common/clock.h"
#include "common/status_macros.h"

namespace mariposa::cmd {

using cli::Flag;
using cli::Parsed;
using cli::ProjectUse;
using Result = absl::StatusOr<int>;
using Record = cli::Output::Record;
using Rows = std::vector<std::vector<std::string>>;

// A usage error (exit 2, the command's usage printed): InvalidArgument,
// which no other error uses (Client::Check maps mariposad's to others).
inline absl::Status Usage(std::string msg) { return absl::InvalidArgumentError(msg); }
// Any other error (exit 1).
inline absl::Status Err(std::string msg) { return absl::FailedPreconditionError(msg); }

class Context {
 public:
  // What Main sets up for one command.
  struct Setup {
    const Clock* clock;
    const cli::Registry* registry;
    cli::Settings flags;
    std::map<std::string, std::string> env;
    std::string project;
    bool in_tty = false;
  };
  Context(Setup setup, cli::Output& output, std::ostream& err, std::istream& in, cli::Client* client)
      : clock(setup.clock), registry(*setup.registry), flags(std::move(setup.flags)), env(std::move(setup.env)),
        output_(output), err_(err), in_(in), in_tty_(setup.in_tty), project_(std::move(setup.project)),
        client_(client) {}

  std::ostream& out() { return output_.out(); }
  std::ostream& err() { return err_; }
  bool Structured() const { return output_.Structured(); }
  void Print(const google::protobuf::Message& m) { output_.Print(m); }
  // With -o json|yaml: prints the reply as it is and says so (the command is
  // done); with tables, false.
  bool PrintIfStructured(const google::protobuf::Message& m) {
    if (!Structured()) return false;
    Print(m);
    return true;
  }
  void PrintRecords(const std::vector<Record>& r) { output_.PrintRecords(r); }
  void Table(const std::vector<std::string>& header, const Rows& rows) { output_.Table(header, rows); }

  // The daemon: only commands registered with daemon = true have one.
  cli::Client& d() { return *client_; }
  // -j, $MARIPOSA_PROJECT or the context's; "" when none (never for a
  // command registered with ProjectUse::kRequired).
  const std::string& project() const { return project_; }

  // y/N on a terminal; `yes` (--yes) answers it; refused without a terminal.
  absl::StatusOr<bool> Confirm(const std::string& question, bool yes);
  // A value from stdin: asked for without echo on a terminal, else all of
  // stdin with one trailing newline dropped.
  std::string ReadValue(const std::string& prompt);
  // A manifest or file ("-": stdin), refused past the manifest size limit.
  absl::StatusOr<std::string> ReadInput(const std::string& path);

  const Clock* clock;
  const cli::Registry& registry;
  const cli::Settings flags;  // the connection options as given (config set-context)
  const std::map<std::string, std::string> env;  // the MARIPOSA_* variables and HOME

 private:
  cli::Output& output_;
  std::ostream& err_;
  std::istream& in_;
  bool in_tty_;
  std::string project_;
  cli::Client* client_;
};

// Shared by several commands (cli/commands/common.cc).
std::string Time(const google::protobuf::Timestamp& t);
std::string Scope(const std::string& project);  // "project P" or "every project"
void PrintProblem(const v1::Problem& p, std::ostream& out);
void PrintDiff(Context& c, const v1::Diff& d);
void PrintRollout(Context& c, const std::string& task, const google::protobuf::RepeatedPtrField<std::string>& services);
void PrintStaleMeta(Context& c, const std::string& project);
void PrintTask(Context& c, const v1::Task& t);
// --wait: follows the project's verdicts until every service is converged
// (0), one is paused or failed (1, with the reason and fix), or the wait
// ends: --timeout, else 10 minutes.
// `version` (> 0): the version this command made; if the project's current
// version becomes another (mariposad's auto_rollback, or another apply), the
// wait ends with exit 1 saying which version replaced it and why, never
// "converged" for a version that is not the one applied.
// `scope`: the services the command changed (scale, a task on services);
// only they are waited for. Empty: the whole project.
// How long a wait that began at `start` may go on: to --timeout's deadline
// when one was given, else `fallback`.
absl::Duration WaitBudget(Context& c, absl::Time start, absl::Duration fallback);
Result WaitSettled(Context& c, const std::string& project, int64_t version = 0,
                   const std::vector<std::string>& scope = {});
// "a,b,,c" -> a, b, c
std::vector<std::string> SplitList(const std::optional<std::string>& v);
// The options of --wait (and --timeout's mention in its help).
std::vector<Flag> WaitFlags();
// The options of each part, in order: JoinFlags({ScopeFlags(), {...}, WaitFlags()}).
std::vector<Flag> JoinFlags(const std::vector<std::vector<Flag>>& parts);
// --service s1,s2 and --group G (cli/commands/tasks.cc).
std::vector<Flag> ScopeFlags();
// apply and diff share their code (cli/commands/apply.cc).
Result RunApply(Context& c, const Parsed& p, bool dry_run);
// What apply prints when it started a rollout across data centers, and
// with --wait its progress until it ends (cli/commands/rollouts.cc).
Result FollowRollout(Context& c, const v1::DataCenterRollout& started, bool wait);

// Each cli/commands/NAME.cc registers its commands.
void AddProject(cli::Registry& r);
void AddImport(cli::Registry& r);
void AddApply(cli::Registry& r);
void AddDiff(cli::Registry& r);
void AddVersions(cli::Registry& r);
void AddRollouts(cli::Registry& r);
void AddHistory(cli::Registry& r);
void AddVersion(cli::Registry& r);
void AddRollback(cli::Registry& r);
void AddScale(cli::Registry& r);
void AddMeta(cli::Registry& r);
void AddStatus(cli::Registry& r);
void AddHealth(cli::Registry& r);
void AddTasks(cli::Registry& r);
void AddQueue(cli::Registry& r);
void AddPause(cli::Registry& r);
void AddFreeze(cli::Registry& r);
void AddImage(cli::Registry& r);
void AddCore(cli::Registry& r);
void AddEvents(cli::Registry& r);
void AddAdmin(cli::Registry& r);
void AddToken(cli::Registry& r);
void AddGrant(cli::Registry& r);
void AddAuth(cli::Registry& r);
void AddConfig(cli::Registry& r);
void AddCompletion(cli::Registry& r);

}  // namespace mariposa::cmd

#endif  // MARIPOSA_CLI_COMMAND_H_
