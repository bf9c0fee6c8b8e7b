// The data centers a mariposad knows (issue 52, point 1): its own name
// (--datacenter) and its peers, the mariposads of the other data centers
// (--peers NAME=HOST:PORT,…), each asked for its status every
// --peer-interval with this data center's token for it (--peer-tokens) over
// TLS when --peer-ca is given (the peer's certificate verified: how this
// side knows it is the peer; the token, or a client certificate with
// --peer-cert/--peer-key, is how the peer knows this side, under the same
// RBAC and audit as any caller). `mariposa datacenters`, the Admin service's
// DataCenters and /metrics show what was last seen of each.
//
// Parsing and the view of a peer after an answer are pure (peers_test.cc);
// PeerProber only asks and records.
#ifndef MARIPOSA_DAEMON_PEERS_H_
#define MARIPOSA_DAEMON_PEERS_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "auth/client.h"
#include "common/clock.h"

namespace mariposa {

struct PeerSpec {
  std::string name;     // its data center's name
  std::string address;  // its mariposad's gRPC address, host:port
  std::string token_file;
};

// The peers of data center `self` from --peers ("us-west-1=host:7740,…") and
// --peer-tokens ("us-west-1=/etc/mariposa/us-west-1.token,…"); a name is a
// DNS label, given once, not `self`; a token names a listed peer.
// INVALID_ARGUMENT says which flag, what and how to fix it.
absl::StatusOr<std::vector<PeerSpec>> ParsePeers(const std::string& self, const std::string& peers,
                                                 const std::string& tokens);
// A data center's name: a DNS label (a-z, 0-9, '-'), 1 to 63 bytes.
absl::Status CheckDataCenterName(const std::string& flag, const std::string& name);

// What one status call to a peer gave.
struct PeerAnswer {
  absl::Status status;     // the call's
  std::string datacenter;  // the name it answers with (StatusResponse.datacenter)
  std::string version;     // its mariposad's
  std::string mode;        // active | readonly | …
  absl::Duration rtt;
};

// What is known of a peer.
struct PeerView {
  std::string name, address;
  bool reachable = false;
  bool asked = false;                             // asked at least once
  absl::Time checked_at = absl::InfinitePast();   // the last question
  absl::Time last_ok = absl::InfinitePast();      // the last good answer
  absl::Duration rtt;                             // of the last good answer
  std::string version, mode;
  std::string error;  // not reachable: why, and what to check
  int64_t failures = 0;  // in a row
};

// The view after `answer` came at `now` (pure).
PeerView ObservePeer(PeerView view, const PeerAnswer& answer, absl::Time now);

// How this side authenticates to its peers (and verifies them).
struct PeerCredentials {
  std::string ca_file, cert_file, key_file;
};

class PeerProber {
 public:
  // `peers`' token files are read by Start. `clock` must outlive it.
  PeerProber(std::string self, std::vector<PeerSpec> peers, PeerCredentials creds, absl::Duration interval,
             absl::Duration timeout, const Clock* clock);
  ~PeerProber();
  // Reads the token files (INVALID_ARGUMENT naming one that cannot be read)
  // and starts asking.
  absl::Status Start();
  void Stop();
  const std::string& self() const { return self_; }
  std::vector<PeerView> Views() const;
  // Calls peer `name` with `call`, given its channel and a context that
  // carries this data center's credentials and a deadline `timeout` from
  // now. FAILED_PRECONDITION when `name` is not a peer; else the call's
  // status, its message prefixed with the data center (and, when it cannot
  // be reached, what to check).
  absl::Status Call(const std::string& name,
                    const std::function<grpc::Status(const std::shared_ptr<grpc::Channel>&, grpc::ClientContext*)>& call,
                    absl::Duration timeout) const;
  // One unary RPC of `Service` to peer `name` through Call:
  // Ask<v1::State>(dc, &v1::State::Stub::GetState, req, timeout).
  template <typename Service, typename Req, typename Resp>
  absl::StatusOr<Resp> Ask(const std::string& name,
                           grpc::Status (Service::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                           const Req& req, absl::Duration timeout) const {
    Resp resp;
    absl::Status st = Call(
        name,
        [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* ctx) {
          auto stub = Service::NewStub(channel);
          return ((*stub).*method)(ctx, req, &resp);
        },
        timeout);
    if (!st.ok()) return st;
    return resp;
  }

 private:
  struct Peer;
  void Run();
  PeerAnswer Ask(Peer* p);

  std::string self_;
  PeerCredentials creds_;
  absl::Duration interval_, timeout_;
  const Clock* clock_;
  std::vector<std::unique_ptr<Peer>> peers_;
  mutable absl::Mutex mu_;
  std::vector<PeerView> views_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_PEERS_H_
