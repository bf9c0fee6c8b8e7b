// The mariposa CLI as a library: the Cli class (one gRPC client of
// mariposad), the argument helpers and the helpers every command shares.
// Each command's code is in its own cli/cmd_*.cc; cli/cli.cc has the usage
// text, the command table and Main, which cli/main.cc calls and tests call
// in-process (cli/commands_test.cc).
#ifndef MARIPOSA_CLI_CLI_H_
#define MARIPOSA_CLI_CLI_H_

#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <yaml-cpp/yaml.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "mariposa/v1/events.grpc.pb.h"
#include "mariposa/v1/health.grpc.pb.h"
#include "mariposa/v1/images.grpc.pb.h"
#include "mariposa/v1/admin.grpc.pb.h"
#include "mariposa/v1/auth.grpc.pb.h"
#include "mariposa/v1/projects.grpc.pb.h"
#include "mariposa/v1/queue.grpc.pb.h"
#include "mariposa/v1/state.grpc.pb.h"
#include "auth/client.h"
#include "cli/config.h"
#include "cli/history.h"
#include "cli/plan_text.h"
#include "projects/restore.h"
#include "cli/style.h"
#include "cli/suggest.h"
#include "projects/limits.h"

namespace mariposa::cmd {

using v1::Admin;
using v1::Projects;

struct UsageError {
  std::string msg;
};


struct Error {
  std::string msg;
};


// "-jjupiter" for "-j jupiter": a one-letter option with its value attached.
bool AttachedShort(absl::string_view name, absl::string_view arg);

// Command-line arguments after the global options, with flag helpers.
class Args {
 public:
  explicit Args(std::vector<std::string> a) : a_(std::move(a)) {}

  // Removes and returns a flag's value ("--flag V" or "--flag=V").
  std::optional<std::string> Value(std::initializer_list<const char*> names) {
    for (size_t i = 0; i < a_.size(); ++i) {
      for (const char* n : names) {
        if (a_[i] == n) {
          if (i + 1 >= a_.size()) throw UsageError{absl::StrCat(n, " needs a value")};
          std::string v = a_[i + 1];
          a_.erase(a_.begin() + i, a_.begin() + i + 2);
          return v;
        }
        std::string prefix = absl::StrCat(n, "=");
        if (absl::StartsWith(a_[i], prefix) || AttachedShort(n, a_[i])) {
          std::string v = a_[i].substr(AttachedShort(n, a_[i]) ? 2 : prefix.size());
          a_.erase(a_.begin() + i);
          return v;
        }
      }
    }
    return std::nullopt;
  }
  bool Flag(std::initializer_list<const char*> names) {
    for (size_t i = 0; i < a_.size(); ++i) {
      for (const char* n : names) {
        if (a_[i] == n) {
          a_.erase(a_.begin() + i);
          return true;
        }
      }
    }
    return false;
  }
  // Positional arguments; unknown flags are usage errors.
  // The first positional argument, "" if none.
  std::string Peek() const {
    for (const auto& s : a_) {
      if (s.empty() || s[0] != '-') return s;
    }
    return "";
  }
  std::vector<std::string> Positional(size_t min, size_t max, const std::string& what) {
    for (const auto& s : a_) {
      if (s.size() > 1 && s[0] == '-' && !absl::SimpleAtoi(s, &dummy_)) throw UsageError{absl::StrCat("unknown option ", s)};
    }
    if (a_.size() < min || a_.size() > max) throw UsageError{absl::StrCat("expected ", what)};
    return a_;
  }

 private:
  std::vector<std::string> a_;
  int64_t dummy_ = 0;
};

class Cli {
 public:
  Cli(std::string addr, std::string project, std::string output, const Clock* clock,
      auth::ClientCredentials creds = {})
      : project_(std::move(project)), output_(std::move(output)), clock_(clock), creds_(std::move(creds)) {
    addr_ = addr;
    Connect();
  }

  // A new channel and stubs: a channel whose server went away keeps failing
  // for its reconnect backoff, so `events -f` starts afresh after a restart.
  void Connect() {
    // Message limits set on purpose: requests up to what the server takes,
    // replies up to the largest it sends (projects/limits.h).
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(mariposa::Limits::kMaxRequestBytes);
    args.SetMaxReceiveMessageSize(mariposa::Limits::kMaxGrpcMessageBytes);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // not shared with an earlier channel
    auto channel = auth::Dial(addr_, creds_, args);
    if (!channel.ok()) throw UsageError{std::string(channel.status().message())};
    channel_ = *channel;
    auth_ = v1::Auth::NewStub(channel_);
    projects_ = Projects::NewStub(channel_);
    admin_ = Admin::NewStub(channel_);
    queue_ = v1::Queue::NewStub(channel_);
    state_ = v1::State::NewStub(channel_);
    events_ = v1::Events::NewStub(channel_);
    images_ = v1::Images::NewStub(channel_);
  }

  int Run(const std::string& cmd, Args args);

 private:
  std::unique_ptr<grpc::ClientContext> Ctx(bool deadline = true) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    // The server stops any request after 30 s of work; a little more here so
    // that its own answer, which says what happened, arrives first.
    if (deadline) ctx->set_deadline(absl::ToChronoTime(clock_->Now() + request_timeout_));
    // Who we are is what mariposad authenticates (peer uid, certificate or
    // token), never a name we send.
    auth::AddCallCredentials(creds_, ctx.get());
    return ctx;
  }
  void Check(const grpc::Status& s) {
    if (s.ok()) return;
    // mariposad's own refusals in a state that takes no such call (readonly,
    // standby, initfail) say so themselves; any other UNAVAILABLE is gRPC's.
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE && !absl::StartsWith(s.error_message(), "mariposad ") &&
        !absl::StartsWith(s.error_message(), "this mariposad ")) {
      throw Error{absl::StrCat("cannot reach mariposad at ", addr_, " (", s.error_message(),
                               "); is it running? set --addr or MARIPOSA_ADDR",
                               creds_.ca_file.empty() ? "" : " (and is it serving TLS with a certificate --ca signed?)")};
    }
    throw Error{s.error_message()};
  }
  const std::string& NeedProject() {
    if (project_.empty()) throw UsageError{"no project: pass -j PROJECT or set MARIPOSA_PROJECT"};
    return project_;
  }
  bool Structured() const { return output_ == "json" || output_ == "yaml"; }
  void Print(const google::protobuf::Message& m);
  void PrintJson(const std::string& json);  // as -o asks: JSON text, or YAML
  // Rows of named text fields, printed as a JSON or YAML list (-o json|yaml).
  using Record = std::vector<std::pair<std::string, std::string>>;
  void PrintRecords(const std::vector<Record>& records);
  bool Confirm(const std::string& question, bool yes);
  void PrintDiff(const v1::Diff& d, const std::string& project);

  int Project(Args& a);
  int Apply(Args& a, bool dry_run);
  int Versions(Args& a);
  int HistoryCmd(Args& a);
  int Version(Args& a);
  int Rollback(Args& a);
  int Meta(Args& a);
  int Events(Args& a);
  int FollowEvents(const std::string& project, int64_t after, bool tail);
  int AdminCmd(Args& a);
  int TokenCmd(Args& a);
  int AuthCmd(Args& a);
  int QueueCmd(Args& a);
  int FreezeCmd(Args& a, bool thaw);
  int PauseCmd(bool pause, Args& a);
  int ImageCmd(Args& a);
  int CoreCmd(Args& a);
  int TaskCmd(const std::string& kind, Args& a);
  int HealthCmd(Args& a);
  int WaitSettled(const std::string& project, absl::Duration timeout);
  int StatusCmd(Args& a);
  void PrintStaleMeta(const std::string& project);
  int ScaleCmd(Args& a);
  void PrintTask(const v1::Task& t);

  std::string addr_;
  std::string project_;
  std::string output_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Projects::Stub> projects_;
  std::unique_ptr<Admin::Stub> admin_;
  std::unique_ptr<v1::Queue::Stub> queue_;
  std::unique_ptr<v1::State::Stub> state_;
  const Clock* clock_;
  std::unique_ptr<v1::Events::Stub> events_;
  std::unique_ptr<v1::Images::Stub> images_;
  auth::ClientCredentials creds_;
  std::unique_ptr<v1::Auth::Stub> auth_;
  // --request-timeout: the deadline of each call (watches have none).
  absl::Duration request_timeout_ = absl::Seconds(35);

 public:
  void set_request_timeout(absl::Duration d) { request_timeout_ = d; }
};


const std::map<std::string, std::set<std::string>>& Commands();
const std::map<std::string, std::string>& CommandHelp();
std::string UnknownCommand(const std::string& cmd);
std::string Env(const char* name, const std::string& def);
std::string ReadValue(const std::string& prompt);
std::map<std::string, std::string> Environment();
int ConfigCmd(const std::vector<std::string>& args, const cli::Settings& flags);
std::string Time(const google::protobuf::Timestamp& t);
void Table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
void EmitYaml(const YAML::Node& n, YAML::Emitter* e);
std::string ReadInput(const std::string& path);
void PrintProblem(const v1::Problem& p, std::ostream& out);
void PrintRollout(const std::string& task, const google::protobuf::RepeatedPtrField<std::string>& services);
absl::Duration WaitTimeout(const std::optional<std::string>& flag);
void Flatten(const YAML::Node& n, const std::string& prefix, std::map<std::string, std::string>* out);
int64_t ParseExpiry(const std::string& text);
std::string Scope(const std::string& project);
int Main(int argc, char** argv, const Clock* clock);

}  // namespace mariposa::cmd

#endif  // MARIPOSA_CLI_CLI_H_
