// An HTTP/1.x response read incrementally, for the check engine's plain-http
// checks (HEALTH.md). It reads what a health check needs and no more: the
// status line, the headers that frame the body (Content-Length,
// Transfer-Encoding: chunked, Connection), and at most `body_limit` bytes of
// body, of which it keeps the first `keep_body`. Interim 1xx responses are
// skipped. It says whether the connection can carry the next request
// (keep-alive): only when the whole body was read, framed by length or
// chunks, and neither side said `Connection: close`.
//
// Pure: no I/O, no clock. Input that is not HTTP, a head over kMaxHead
// bytes, or framing that cannot be trusted (two different Content-Lengths, a
// bad chunk size) ends in kError with a reason a user can read.
#ifndef MARIPOSA_HEALTH_HTTP_RESPONSE_H_
#define MARIPOSA_HEALTH_HTTP_RESPONSE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

namespace mariposa::health {

class HttpResponseReader {
 public:
  static constexpr size_t kMaxHead = 16 * 1024;  // status line and headers, each response

  enum class State { kMore, kDone, kError };

  // `head_request`: the request was HEAD (no body follows whatever the
  // headers say). `body_limit`: body bytes read at most; a longer body ends
  // the read there (kDone, truncated, not reusable). `keep_body`: how many of
  // them to keep for body().
  HttpResponseReader(bool head_request, size_t body_limit, size_t keep_body);

  // Consumes `data` (the bytes that arrived). Bytes past the end of the
  // response make the connection not reusable (a server must not send them).
  State Feed(std::string_view data);
  // The peer closed the connection: ends a body read to the close, else an
  // error (kError with a reason) unless the response was already done.
  State Close();

  State state() const { return state_; }
  int status() const { return status_; }
  const std::string& body() const { return body_; }
  bool truncated() const { return truncated_; }  // the body was longer than body_limit
  bool reusable() const { return state_ == State::kDone && keep_alive_ && !truncated_ && !extra_; }
  const std::string& error() const { return error_; }

 private:
  enum class Phase { kStatus, kHeaders, kLengthBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kToClose, kEnd };
  State Fail(std::string why);
  State Line(absl::string_view line);       // a status, header, chunk-size or trailer line
  State HeadersDone();
  void TakeBody(absl::string_view data);    // counts and keeps body bytes
  State Finish();

  const bool head_request_;
  const size_t body_limit_;
  const size_t keep_body_;
  State state_ = State::kMore;
  Phase phase_ = Phase::kStatus;
  std::string line_;          // a line not yet ended
  size_t head_bytes_ = 0;     // of the current response's head
  bool got_bytes_ = false;
  int status_ = 0;
  bool http10_ = false;
  bool keep_alive_ = true;
  bool close_header_ = false, keep_alive_header_ = false;
  bool chunked_ = false;
  bool te_to_close_ = false;  // a Transfer-Encoding other than chunked last
  bool has_length_ = false;
  uint64_t length_ = 0;       // Content-Length, then what is left of it or of a chunk
  uint64_t body_read_ = 0;
  std::string body_;
  bool truncated_ = false;
  bool extra_ = false;
  std::string error_;
};

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_HTTP_RESPONSE_H_
