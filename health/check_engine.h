// The check engine of HEALTH.md: http, https and tcp checks, thousands at
// once, on one event-loop thread. HTTP(S) goes through libcurl's multi
// interface (a target's connection kept for its next check, TLS through
// it); tcp checks are non-blocking sockets polled in the same loop (curl_multi_poll's extra
// descriptors). Every check ends by its own deadline and reads at most
// kMaxBody bytes, so a target that hangs, drips or sends 10 GiB costs its
// timeout and a bounded buffer, never a thread. Thread-safe: Submit from any
// thread; callbacks run on the loop thread and must be quick.
#ifndef MARIPOSA_HEALTH_CHECK_ENGINE_H_
#define MARIPOSA_HEALTH_CHECK_ENGINE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace mariposa::health {

inline constexpr size_t kMaxBody = 64 * 1024;  // bytes read for expect_body / expect
// HTTP(S) checks keep their connection to a target (keep-alive) for the next
// check of it, at most this long after it was opened, and at most this many
// connections in all (the least recently used is closed first).
inline constexpr absl::Duration kConnectionLifetime = absl::Seconds(60);
inline constexpr size_t kKeptConnections = 1024;

struct CheckSpec {
  std::string type = "http";  // http | https | tcp
  std::string address;        // IPv4 address of the instance on the check's network
  int port = 80;
  // http(s)
  std::string path = "/";
  std::string method = "GET";
  std::map<std::string, std::string> headers;
  std::vector<std::pair<int, int>> expect_status = {{200, 399}};  // inclusive ranges
  std::string expect_body;    // regex over the first kMaxBody bytes; "" = any
  bool tls_skip_verify = false;
  // tcp
  std::string send;           // bytes to send after connecting
  std::string expect;         // regex the reply must match; "" = connecting is enough
  absl::Duration timeout = absl::Seconds(10);  // connect to last byte
};

// Checks the spec (not the target): INVALID_ARGUMENT naming the field.
absl::Status ValidateCheck(const CheckSpec& spec);

struct CheckResult {
  bool pass = false;
  std::string detail;  // why it failed ("status 503", "connection refused", "timed out after 2s", …)
  absl::Duration took;
};

class CheckEngine {
 public:
  // Durations and timeouts are measured on `clock`; the sockets themselves
  // are polled for at most 100 ms at a time, so a simulated clock's advance
  // is seen within that. `kept_connections`: how many connections are kept
  // for their targets' next checks (tests give fewer).
  explicit CheckEngine(const Clock* clock, size_t kept_connections = kKeptConnections);
  ~CheckEngine();  // stops the loop; checks in flight end with "engine stopped"
  CheckEngine(const CheckEngine&) = delete;
  CheckEngine& operator=(const CheckEngine&) = delete;

  // Runs one check now; `done` is called once, on the loop thread.
  void Submit(CheckSpec spec, std::function<void(const CheckResult&)> done);

  // Checks in flight (for metrics and tests).
  size_t in_flight() const;

 private:
  class Loop;
  std::unique_ptr<Loop> loop_;
};

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_CHECK_ENGINE_H_
