// A small HTTP/JSON client for Triton's internal APIs, on libcurl: connection
// reuse, per-request timeouts, retries with jittered exponential backoff on
// connection errors and 5xx (never on 4xx), Triton error bodies carried into
// absl::Status, and a metrics hook. Thread-safe.
#ifndef MARIPOSA_CONVERGENCE_TRITON_HTTP_H_
#define MARIPOSA_CONVERGENCE_TRITON_HTTP_H_

#include <functional>
#include <map>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace mariposa::triton {

struct HttpOptions {
  std::string base_url;                               // e.g. http://127.0.0.1:8580
  absl::Duration timeout = absl::Seconds(10);         // whole request
  absl::Duration connect_timeout = absl::Seconds(2);
  int max_attempts = 4;                               // 1 = no retries
  absl::Duration backoff_base = absl::Milliseconds(50);
  absl::Duration backoff_cap = absl::Seconds(2);
  // Requests in flight at once (each holds a connection); more wait for
  // one to end. 0 = no limit.
  int max_connections = 0;
};

// One finished request, for metrics: api ("vmapi"), op ("CreateVm"), HTTP code
// (0 for a connection error or timeout), latency, attempt number.
struct RequestRecord {
  std::string api;
  std::string op;
  int code = 0;
  absl::Duration latency;
  int attempt = 1;
};
using MetricsHook = std::function<void(const RequestRecord&)>;

struct HttpResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // keys lower-cased
};

// Payload key under which a failed call's Triton error code ("ValidationFailed",
// "ResourceNotFound", …) is attached to the returned status.
inline constexpr absl::string_view kTritonCodePayload = "triton.code";
// The Triton error code of a status from these clients, or "".
std::string TritonCode(const absl::Status& s);
// The HTTP status of a failed call, or 0.
int HttpCode(const absl::Status& s);

class HttpClient {
 public:
  // Retry pauses and latencies are measured on `clock`.
  HttpClient(std::string api, HttpOptions options, const Clock* clock, MetricsHook hook = nullptr);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `method path` (path includes the query string) with an optional
  // JSON body. 2xx answers are returned; others become a status whose code
  // follows the HTTP status (404 NOT_FOUND, 409 FAILED_PRECONDITION or
  // ALREADY_EXISTS for duplicates, 400/422 INVALID_ARGUMENT, 5xx UNAVAILABLE,
  // timeouts DEADLINE_EXCEEDED) and whose message names the API, the
  // operation and the Triton code and message.
  absl::StatusOr<HttpResponse> Call(absl::string_view op, absl::string_view method, absl::string_view path,
                                    absl::string_view body = "");
  // Same, against another base URL (e.g. the workflow API a job lives on).
  absl::StatusOr<HttpResponse> CallAt(absl::string_view base_url, absl::string_view op, absl::string_view method,
                                      absl::string_view path, absl::string_view body = "");

  const std::string& base_url() const { return options_.base_url; }
  const HttpOptions& options() const { return options_; }

 private:
  void* TakeHandle();
  void ReturnHandle(void* h);

  std::string api_;
  HttpOptions options_;
  const Clock* clock_;
  MetricsHook hook_;
  std::mutex mu_;
  std::condition_variable freed_;  // a handle came back (max_connections)
  int in_use_ = 0;
  std::vector<void*> idle_;  // CURL* easy handles, each keeping its connections
};

// URL-encodes a query parameter value.
std::string UrlEncode(absl::string_view s);

}  // namespace mariposa::triton

#endif  // MARIPOSA_CONVERGENCE_TRITON_HTTP_H_
