// Local listeners: mariposad accepts connections on its Unix socket and on
// loopback TCP itself, learns who is at the other end (SO_PEERCRED; for
// loopback TCP the uid that owns the client's socket in /proc/net/tcp), tells
// the Authorizer, and hands the connection to gRPC.
#ifndef MARIPOSA_AUTH_LISTENER_H_
#define MARIPOSA_AUTH_LISTENER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/server.h>

#include "absl/status/statusor.h"
#include "auth/authorizer.h"

namespace mariposa::auth {

// True for "unix:…", 127.0.0.0/8 and [::1] addresses.
bool IsLocalAddress(const std::string& addr);

class LocalListener {
 public:
  // "unix:/path" (an existing socket file there is replaced; mode 0666, the
  // directory decides who can reach it) or "127.x.y.z:PORT" (port 0: any).
  static absl::StatusOr<std::unique_ptr<LocalListener>> Bind(const std::string& addr);
  ~LocalListener();

  // "unix:/path" or "127.0.0.1:PORT" as bound.
  const std::string& address() const { return address_; }
  // Accepts in a thread of its own until Stop.
  void Start(grpc::Server* server, Authorizer* auth, const Clock* clock);
  void Stop();

 private:
  LocalListener() = default;
  void Loop();
  LocalPeer PeerOf(int fd) const;

  int fd_ = -1;
  bool unix_ = false;
  int port_ = 0;
  std::string path_;
  std::string address_;
  grpc::Server* server_ = nullptr;
  Authorizer* auth_ = nullptr;
  const Clock* clock_ = nullptr;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// The uid owning the loopback TCP socket whose local port is `client_port`
// and remote port `server_port`, from /proc/net/tcp and /proc/net/tcp6; -1
// if none. Exposed for tests.
int64_t LoopbackPeerUid(int client_port, int server_port);

}  // namespace mariposa::auth

#endif  // MARIPOSA_AUTH_LISTENER_H_
