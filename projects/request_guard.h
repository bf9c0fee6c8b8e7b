// The API edge's per-request guard: checks every text field of a request
// against the text rule (projects/limits.h), answers "is the caller still
// there?" for long work, caps the server work one request may take, and
// gives memory back to the system after a large request. Heavy gRPC headers
// stay here, out of the libraries.
#ifndef MARIPOSA_PROJECTS_REQUEST_GUARD_H_
#define MARIPOSA_PROJECTS_REQUEST_GUARD_H_

#include <grpcpp/server_context.h>

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/cancel.h"
#include "common/clock.h"

namespace google::protobuf {
class Message;
}

namespace mariposa {

// INVALID_ARGUMENT naming the field ("SetMetaRequest.value: a NUL byte at
// byte 3 …") when a string or bytes field of `request` (nested messages and
// map entries included) breaks the text rule or its length limit. A field
// named `manifest` is left to the manifest parser, which reports line and
// column.
absl::Status ValidateRequestText(const google::protobuf::Message& request);

// One per handler call, declared first so that it is destroyed last. Not
// thread-safe except Check(), which any thread may call.
class RequestGuard : public Cancellation {
 public:
  // Reads `clock` once for the start of the work; validates `request`.
  RequestGuard(const grpc::ServerContext* ctx, const Clock* clock, const google::protobuf::Message& request);
  // The heap a large request leaves is given back by jemalloc's own thread
  // within about a second (malloc_conf, daemon/main.cc), not on the
  // request's path.
  ~RequestGuard() override = default;
  RequestGuard(const RequestGuard&) = delete;
  RequestGuard& operator=(const RequestGuard&) = delete;

  // The request's validation; handlers return it when not OK.
  const absl::Status& status() const { return status_; }
  // CANCELLED when the client cancelled or its deadline passed;
  // DEADLINE_EXCEEDED when the work passed Limits::kMaxRequestWork.
  // Asking gRPC whether the call was cancelled polls the call's completion
  // queue (tens of microseconds, and it can wait on the queue's lock), so it
  // is asked after kFirstCancelPoll of work, then at most once per
  // kCancelPollEvery (a request shorter than 1 ms never asks: P4's no-op
  // apply); the clock is read at every call. The first ask is not put off
  // further: a large request's handler that never polls its queue until it
  // ends left mariposad 15-25 MiB larger after tests/hostile_input_test's
  // corpus. A parse of 1,000 services checked it 1,000 times: half
  // of the apply's time (docs/development.md, P3).
  absl::Status Check() const override;
  static constexpr absl::Duration kCancelPollEvery = absl::Milliseconds(5);
  static constexpr absl::Duration kFirstCancelPoll = absl::Milliseconds(1);

 private:
  const grpc::ServerContext* ctx_;
  const Clock* clock_;
  absl::Time give_up_;
  // When IsCancelled is next asked (unix nanoseconds); any thread.
  mutable std::atomic<int64_t> next_poll_ns_;
  mutable std::atomic<bool> cancelled_{false};
  absl::Status status_;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_REQUEST_GUARD_H_
