// A mariposad without its store, in one of RFD 40's states:
//   standby   another mariposad holds the data dir; this one waits for its
//             lock and takes over when it goes (daemon/main.cc);
//   initfail  the store or the secrets key could not be opened
//             (--on-init-failure serve).
// It answers `admin status` (its state and the problems, Error / Reason /
// Fix / Impact), ping, and grpc.health.v1 (NOT_SERVING); every other call
// answers UNAVAILABLE saying why and where to go. No store means no grants:
// these few calls are open to whoever can reach the listener.
#ifndef MARIPOSA_DAEMON_LIMITED_SERVER_H_
#define MARIPOSA_DAEMON_LIMITED_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace grpc {
class Server;
class CallbackGenericService;
class ServerCredentials;
}  // namespace grpc

namespace mariposa {

namespace v1 {
class StatusResponse;
}

struct LimitedState {
  std::string mode;  // standby | initfail
  std::string data_dir;
  absl::Time started_at;
  // Fills the answer's problems and facts at each call (the active
  // mariposad named by the lock file, the init failure).
  std::function<void(v1::StatusResponse*)> describe;
  // What every other call is told: UNAVAILABLE with this message.
  std::function<std::string()> unavailable;
};

// One address to answer on (gRPC form: "127.0.0.1:7741", "unix:/path")
// and its credentials: TLS for a --listen with --tls-cert, none (insecure)
// when null.
struct LimitedListener {
  std::string address;
  std::shared_ptr<grpc::ServerCredentials> credentials;
};

class LimitedServer {
 public:
  // Listens on each of `listeners`; addresses() are the bound addresses
  // with ports resolved, in the same order.
  static absl::StatusOr<std::unique_ptr<LimitedServer>> Start(const std::vector<LimitedListener>& listeners,
                                                              LimitedState state);
  ~LimitedServer();
  const std::vector<std::string>& addresses() const { return addresses_; }
  void Shutdown();

 private:
  class AdminImpl;
  class Generic;
  LimitedServer() = default;
  std::unique_ptr<AdminImpl> admin_;
  std::unique_ptr<grpc::CallbackGenericService> generic_;
  std::unique_ptr<grpc::Server> server_;
  std::vector<std::string> addresses_;
};

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_LIMITED_SERVER_H_
