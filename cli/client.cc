#include "cli/client.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "projects/limits.h"

namespace mariposa::cli {

Dialer DefaultDialer() {
  return [](const std::string& addr, const auth::ClientCredentials& creds, const grpc::ChannelArguments& args) {
    return auth::Dial(addr, creds, args);
  };
}

absl::Status Client::Connect() {
  // Message limits set on purpose: requests up to what the server takes,
  // replies up to the largest it sends (projects/limits.h).
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(mariposa::Limits::kMaxRequestBytes);
  args.SetMaxReceiveMessageSize(mariposa::Limits::kMaxGrpcMessageBytes);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // not shared with an earlier channel
  auto channel = dial_(addr_, creds_, args);
  if (!channel.ok()) return channel.status();
  projects = v1::Projects::NewStub(*channel);
  admin = v1::Admin::NewStub(*channel);
  queue = v1::Queue::NewStub(*channel);
  state = v1::State::NewStub(*channel);
  events = v1::Events::NewStub(*channel);
  images = v1::Images::NewStub(*channel);
  auth = v1::Auth::NewStub(*channel);
  return absl::OkStatus();
}

absl::Time Client::CommandDeadline() const {
  return deadlines_.command > absl::ZeroDuration() ? deadlines_.start + deadlines_.command : absl::InfiniteFuture();
}

std::unique_ptr<grpc::ClientContext> Client::Ctx(bool watch) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  absl::Time deadline = CommandDeadline();
  if (!watch) deadline = std::min(deadline, clock_->Now() + deadlines_.request);
  if (deadline != absl::InfiniteFuture()) ctx->set_deadline(absl::ToChronoTime(deadline));
  // Who we are is what mariposad authenticates (peer uid, certificate or
  // token), never a name we send.
  auth::AddCallCredentials(creds_, ctx.get(), clock_);
  return ctx;
}

absl::Status Client::Check(const grpc::Status& s) const {
  if (s.ok()) return absl::OkStatus();
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    if (CommandTimedOut()) {
      return absl::DeadlineExceededError(absl::StrCat("--timeout ", absl::FormatDuration(deadlines_.command),
                                                      " passed before mariposad at ", addr_, " answered"));
    }
    return absl::DeadlineExceededError(absl::StrCat(
        "mariposad at ", addr_, " did not answer within ", absl::FormatDuration(deadlines_.request),
        " (--request-timeout); a change it was asked for may still happen: `mariposa events` shows what did"));
  }
  // mariposad's own refusals in a state that takes no such call (readonly,
  // standby, initfail) say so themselves, as does a store database it
  // cannot reach ("PostgreSQL at …"); any other UNAVAILABLE is gRPC's.
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE && absl::StartsWith(s.error_message(), "PostgreSQL at ")) {
    return absl::UnavailableError(
        absl::StrCat("mariposad at ", addr_, " answered, but its store is unavailable: ", s.error_message()));
  }
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE && !absl::StartsWith(s.error_message(), "mariposad ") &&
      !absl::StartsWith(s.error_message(), "this mariposad ")) {
    return absl::UnavailableError(absl::StrCat(
        "cannot reach mariposad at ", addr_, " (", s.error_message(), "); is it running? set --addr or MARIPOSA_ADDR",
        creds_.ca_file.empty() ? "" : " (and is it serving TLS with a certificate --ca signed?)"));
  }
  // Never InvalidArgument: that code is the CLI's own usage errors (exit 2).
  return absl::FailedPreconditionError(s.error_message());
}

}  // namespace mariposa::cli
