// An event-driven HTTP/1.1 server for the gateway, on Boost.Beast (Asio):
// a fixed number of I/O threads serve every connection, idle, slow or
// streaming, so no client holds a thread. Each connection runs on its own
// strand; the handler answers when it can, from any thread (Reply), or opens
// a chunked stream (Open, Send, End) whose client leaving is noticed at once
// (a read on the socket fails) and reported through `on_gone`.
//
// Limits, enforced as bytes arrive (HttpLimits; docs/http-api.md, "Limits"):
// the request head must arrive within `header_timeout` (slow clients are cut
// off, however they dribble), be at most `max_header_bytes` with at most
// `max_headers` fields, carry no control bytes, no Content-Length together
// with Transfer-Encoding, no transfer coding other than chunked, and no body
// on GET, HEAD, DELETE or OPTIONS; a body, chunked or not, is refused (413)
// as soon as it passes `max_body`, and the bodies being read at once hold at
// most `max_body_in_flight` bytes between them (503 beyond). Connections
// beyond `max_connections` are answered 503 and closed.
//
// Kept out of widely included headers: Boost, gRPC and OpenSSL.
#ifndef MARIPOSA_GATEWAY_HTTP_SERVER_H_
#define MARIPOSA_GATEWAY_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

typedef struct ssl_st SSL;

namespace mariposa::gateway {

struct HttpLimits {
  size_t max_header_bytes = 16 << 10;  // request line and fields together
  int max_headers = 100;
  size_t max_body = 5 << 20;
  size_t max_body_in_flight = 128 << 20;  // all bodies being read at once
  int max_connections = 1024;
  int io_threads = 2;
  absl::Duration header_timeout = absl::Seconds(10);  // a whole request head, or an idle keep-alive wait
  absl::Duration body_timeout = absl::Seconds(60);    // a whole body
  absl::Duration write_timeout = absl::Seconds(30);   // each answer, each event written
  absl::Duration keepalive = absl::Seconds(15);       // a comment on a quiet stream
};

struct HttpRequest {
  std::string method;  // "GET"
  std::string target;  // "/v1/projects?limit=5"
  std::string path;    // "/v1/projects" (not decoded)
  std::string query;   // "limit=5" (not decoded)
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order
  std::string body;
  std::string remote_addr;
  int remote_port = 0;
  SSL* ssl = nullptr;  // the TLS session (HTTPS), valid while the handler runs

  // The first field of that name (any case), or "".
  std::string header(const std::string& name) const;
  bool has_header(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  void set_header(std::string name, std::string value);
};

// What a request head must satisfy before its body is read: OK, or the HTTP
// status (400, 413, 431, 501) and why. Pure; `content_length` is -1 when the
// head has none.
struct HeadCheck {
  int status = 0;  // 0: fine
  std::string why;
};
HeadCheck CheckHead(const std::string& method, const std::vector<std::pair<std::string, std::string>>& headers,
                    int64_t content_length, bool chunked, const HttpLimits& limits);

// One request read from `bytes` (all of it at hand) as the server reads it:
// the same parser, limits and CheckHead. status 0: `out` holds the request;
// else the status the server would answer (400, 413, 431, 501) and why, or
// status -1 when the bytes end before the request does. For the fuzz
// target (fuzz/http_request_fuzz.cc) and tests.
HeadCheck ReadRequest(absl::string_view bytes, const HttpLimits& limits, HttpRequest* out);

// One request and its answer. Thread-safe; the answer is written on the
// connection's strand.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  virtual const HttpRequest& request() const = 0;
  // The whole answer (once).
  virtual void Reply(HttpResponse res) = 0;
  // Starts a chunked answer with `head`'s status and fields (its body is
  // ignored). `on_gone` runs once, on the connection's strand, when the
  // client leaves or a write fails; after it, Send reports false. While
  // nothing is sent for `keepalive`, `comment` is written.
  virtual void Open(HttpResponse head, std::string comment, std::function<void()> on_gone) = 0;
  // Writes one chunk; `written(ok)` runs once it has left (or failed). One
  // at a time.
  virtual void Send(std::string chunk, std::function<void(bool ok)> written) = 0;
  // Ends the chunked answer (after `last`, if any) and closes the connection.
  virtual void End(std::string last) = 0;
};

using HttpHandler = std::function<void(std::shared_ptr<HttpExchange>)>;

struct HttpServerOptions {
  std::string host;
  int port = 0;  // 0: any free one
  HttpLimits limits;
  // HTTPS when set (PEM files); `client_ca` asks for client certificates
  // (verified against it) without requiring them.
  std::string tls_cert, tls_key, tls_client_ca;
  // The JSON body of a refusal the server makes itself (a head too large, a
  // body over the limit, a full server): the HTTP status and why.
  std::function<std::string(int status, const std::string& why)> error_body;
};

class HttpServer {
 public:
  // Bound and serving, or why not.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions o, HttpHandler handler);
  virtual ~HttpServer() = default;
  virtual int port() const = 0;
  // Stops accepting, closes every connection and joins the I/O threads.
  virtual void Stop() = 0;
};

}  // namespace mariposa::gateway

#endif  // MARIPOSA_GATEWAY_HTTP_SERVER_H_
