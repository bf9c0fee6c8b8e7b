// The CLI's one connection to mariposad: a channel, a stub per service, and
// the deadlines every call gets: --request-timeout per call (default 35 s,
// a little more than the 30 s mariposad works on a request) and --timeout
// for the whole command (every call, and any --wait, ends by then).
// Errors come back as absl::Status with what happened and how to fix it;
// the dialer is a seam, so tests run commands against fakes in-process.
#ifndef MARIPOSA_CLI_CLIENT_H_
#define MARIPOSA_CLI_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "auth/client.h"
#include "common/clock.h"
#include "mariposa/v1/admin.grpc.pb.h"
#include "mariposa/v1/auth.grpc.pb.h"
#include "mariposa/v1/events.grpc.pb.h"
#include "mariposa/v1/images.grpc.pb.h"
#include "mariposa/v1/projects.grpc.pb.h"
#include "mariposa/v1/queue.grpc.pb.h"
#include "mariposa/v1/state.grpc.pb.h"

namespace mariposa::cli {

using Dialer = std::function<absl::StatusOr<std::shared_ptr<grpc::Channel>>(
    const std::string& addr, const auth::ClientCredentials& creds, const grpc::ChannelArguments& args)>;

// auth::Dial: TCP, TLS or a Unix socket, as the address and credentials say.
Dialer DefaultDialer();

struct Deadlines {
  absl::Duration request = absl::Seconds(35);  // --request-timeout
  absl::Duration command;                      // --timeout; zero: none
  absl::Time start;                            // when the command started
};

class Client {
 public:
  Client(std::string addr, auth::ClientCredentials creds, Dialer dial, const Clock* clock, Deadlines deadlines)
      : addr_(std::move(addr)), creds_(std::move(creds)), dial_(std::move(dial)), clock_(clock), deadlines_(deadlines) {}

  // A new channel and stubs: a channel whose server went away keeps failing
  // for its reconnect backoff, so `events -f` starts afresh after a restart.
  absl::Status Connect();

  // A call's context: credentials, and its deadline (the sooner of
  // --request-timeout from now and the end of --timeout). A watch has only
  // the end of --timeout.
  std::unique_ptr<grpc::ClientContext> Ctx(bool watch = false) const;
  // ok, or what went wrong in the operator's words: mariposad's own message,
  // "cannot reach mariposad at …", or which timeout passed.
  absl::Status Check(const grpc::Status& s) const;

  const std::string& addr() const { return addr_; }
  // The end of --timeout; InfiniteFuture when none was given.
  absl::Time CommandDeadline() const;
  bool CommandTimedOut() const { return clock_->Now() >= CommandDeadline(); }
  const Deadlines& deadlines() const { return deadlines_; }

  std::unique_ptr<v1::Projects::Stub> projects;
  std::unique_ptr<v1::Admin::Stub> admin;
  std::unique_ptr<v1::Queue::Stub> queue;
  std::unique_ptr<v1::State::Stub> state;
  std::unique_ptr<v1::Events::Stub> events;
  std::unique_ptr<v1::Images::Stub> images;
  std::unique_ptr<v1::Auth::Stub> auth;

 private:
  std::string addr_;
  auth::ClientCredentials creds_;
  Dialer dial_;
  const Clock* clock_;
  Deadlines deadlines_;
};

}  // namespace mariposa::cli

#endif  // MARIPOSA_CLI_CLIENT_H_
