// mariposad's HTTP/JSON API and web console (docs/http-api.md,
// docs/console.md), beside gRPC.
//
// Served by an event-driven HTTP server (gateway/http_server.h) with limits
// on connections, heads, bodies and deadlines; no client holds a thread.
// Each API request is matched to its RPC (gateway/routes.h), mapped to the
// request message (gateway/json_mapping.h) and forwarded over an in-process
// channel to mariposad's own gRPC server: authorization, tenancy, limits,
// validation and audit are the gRPC path's, not a copy. The caller is
// identified here as the gRPC listeners would, and passed along with the
// gateway's secret (auth/authorizer.h): its Bearer token as is; on TLS a
// verified client certificate's CN; on a loopback listener the uid owning
// the client's socket — but only for requests that are not a browser's
// (no Origin or Sec-Fetch-* header), so that a web page cannot borrow the
// local user's identity; a browser logs in with a token. Server-streaming
// RPCs answer as Server-Sent Events that resume from Last-Event-ID.
#ifndef MARIPOSA_GATEWAY_GATEWAY_H_
#define MARIPOSA_GATEWAY_GATEWAY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "gateway/http_server.h"

namespace grpc {
class Channel;
}

namespace mariposa::gateway {

struct GatewayOptions {
  std::string listen;  // "127.0.0.1:8080" (port 0: any free one)
  // TLS (HTTPS) with these, as --tls-cert/--tls-key/--tls-client-ca; plain
  // HTTP only on loopback unless `insecure`.
  std::string tls_cert, tls_key, tls_client_ca;
  bool insecure = false;
  std::shared_ptr<grpc::Channel> channel;  // mariposad's in-process channel
  std::string token;                       // the Authorizer's gateway_token
  const Clock* clock = nullptr;
  size_t max_body = 0;  // bytes; 0: the HttpLimits default
  std::string version;  // mariposad's, for the OpenAPI document
  HttpLimits limits;    // connections, heads, bodies, deadlines (http_server.h)
  // Event streams open at once: by one caller (a token, a certificate, a
  // local uid, else an address), and on the listener.
  int max_streams_per_caller = 16;
  int max_streams = 512;
};

class Gateway {
 public:
  // Bound and serving, or why not.
  static absl::StatusOr<std::unique_ptr<Gateway>> Start(GatewayOptions o);
  ~Gateway();
  // "http://127.0.0.1:PORT" or "https://…", as bound.
  std::string url() const;
  // Ends the event streams and stops serving.
  void Stop();

  struct Impl;

 private:
  explicit Gateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mariposa::gateway

#endif  // MARIPOSA_GATEWAY_GATEWAY_H_
