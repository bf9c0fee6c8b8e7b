// The running mariposad, once main() has read its flags and locked the data
// dir: it opens the store and the secrets, makes the services, the Triton
// clients and the reconciler, listens, serves until a signal, and stops in
// order. One function per step (daemon.cc):
//
//   Open        TLS files, store, secrets key, controller state (a failure:
//               InitFailed, which exits or serves `admin status` only)
//   Services    authorization, the gRPC services, metrics, backups
//   Health      the health coordinator and the agents' service
//   Triton      the API clients, the reconciler and its options, the
//               project leases of several nodes (Leases)
//   Wire        what the reconciler is told and asked by the services
//   Listen      gRPC's listeners (loopback, Unix socket, TLS) and services
//   Watch       VMAPI's change feed
//   StartWork   reconciler, leases, backups, the embedded health agent
//   Serve       until SIGTERM/SIGINT, then Stop in order
//
// Included only by daemon/main.cc: gRPC's headers are fine here.
#ifndef MARIPOSA_DAEMON_DAEMON_H_
#define MARIPOSA_DAEMON_DAEMON_H_

#include <signal.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "auth/auth_service.h"
#include "auth/authorizer.h"
#include "auth/listener.h"
#include "auth/sealer.h"
#include "common/bounded.h"
#include "common/clock.h"
#include "convergence/api/images_service.h"
#include "convergence/lease_keeper.h"
#include "convergence/metrics.h"
#include "convergence/api/queue_service.h"
#include "convergence/reconciler.h"
#include "convergence/api/state_service.h"
#include "convergence/triton/http_clients.h"
#include "convergence/triton/vm_feed.h"
#include "daemon/admin_service.h"
#include "daemon/peers.h"
#include "daemon/rollout_runner.h"
#include "daemon/backups.h"
#include "daemon/config.h"
#include "daemon/controller_state.h"
#include "daemon/mahi_client.h"
#include "daemon/wake_bus.h"
#include "gateway/gateway.h"
#include "health/agent.h"
#include "health/agents_service.h"
#include "health/coordinator.h"
#include "health/metrics.h"
#include "mariposa/v1/admin.pb.h"
#include "projects/events_service.h"
#include "projects/projects_service.h"
#include "projects/sql_store.h"

namespace mariposa {

// What main() hands over once the data dir is locked.
struct DaemonStart {
  DaemonConfig config;
  int lock_fd = -1;
  sigset_t sigs;           // blocked in every thread; taken by Serve's signal thread
  absl::Time started;
  RealClock* clock = nullptr;
  std::string hostname;
  bool default_socket = false;  // --socket was not given: a socket that cannot be made is not fatal
};

class Daemon {
 public:
  explicit Daemon(DaemonStart start);
  ~Daemon();
  // Serves until a signal; returns the exit code.
  int Run();

 private:
  // An exit code when mariposad stops here, nullopt to go on.
  using Exit = std::optional<int>;
  Exit Open();
  Exit OpenSecrets();
  // A failure to start: exit 1, or (--on-init-failure serve) stay up in
  // state initfail, answering `admin status` with it until stopped.
  int InitFailed(const std::string& error, const std::string& reason, const std::string& fix,
                 const std::string& impact);
  Exit Services();
  Exit DataCenters();
  void Rollouts();
  void Health();
  void Triton();
  convergence::ReconcilerOptions ReconcilerOptionsFor();
  void Leases(convergence::ReconcilerOptions* ropts);
  Exit Wire();
  void WireWakeBus();
  void WireProjects();
  Exit Listen();
  Exit ListenLocal(grpc::ServerBuilder* builder, int* port);
  Exit BuildServer(grpc::ServerBuilder* builder, const int* port);  // *port: set by BuildAndStart
  Exit ServeHttp();  // --http-listen
  void Watch();
  void StartWork();
  void StartEmbeddedAgent();
  void Serve();
  void Stop();

  DaemonConfig config_;
  DaemonFlags& flags_;  // config_.flags
  const int lock_fd_;
  const sigset_t sigs_;
  const absl::Time started_;
  RealClock* const clock_;
  const std::string hostname_;
  const bool default_socket_;
  // Named in logs and `admin status`: the file, or the database once connected.
  std::string store_path_;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> tls_credentials_ = nullptr;
  std::unique_ptr<SqlProjectStore> store_;
  std::unique_ptr<auth::Sealer> sealer_;
  std::unique_ptr<ControllerState> controller_;  // active or readonly (kept in the store)
  auth::Authorizer::Options aopts_;
  std::unique_ptr<MahiClient> mahi_;  // Triton accounts' keys (--mahi); before the authorizer
  std::unique_ptr<auth::Authorizer> authorizer_;
  std::unique_ptr<auth::AuthService> auth_service_;
  std::unique_ptr<ProjectsService> projects_;
  std::unique_ptr<AdminService> admin_;
  std::unique_ptr<PeerProber> peers_;  // the other data centers (--peers)
  std::unique_ptr<RolloutRunner> rollouts_;  // versions on their way across data centers
  convergence::StateService::AskAcross across_;  // a project in every data center (Rollouts())
  std::unique_ptr<BackupScheduler> backups_;
  std::unique_ptr<convergence::QueueService> queue_;
  std::unique_ptr<convergence::ControllerMetrics> metrics_;
  // Every Triton call's latency also reaches the reconciler (once it is
  // made): a stale `status` names the API that is slow.
  std::atomic<convergence::Reconciler*> latency_sink_{nullptr};
  std::unique_ptr<triton::HttpVmapiClient> vmapi_;
  std::unique_ptr<triton::HttpImgapiClient> imgapi_, image_source_;
  std::unique_ptr<convergence::ImagesService> images_;
  std::unique_ptr<triton::HttpCnapiClient> cnapi_;
  std::unique_ptr<triton::HttpPapiClient> papi_;
  std::unique_ptr<triton::HttpNapiClient> napi_;
  std::unique_ptr<triton::HttpFwapiClient> fwapi_;  // null: no FWAPI address
  std::unique_ptr<triton::HttpVolapiClient> volapi_;  // null: no VOLAPI address
  std::unique_ptr<convergence::Reconciler> reconciler_;
  // Several nodes on PostgreSQL: the project leases this node holds.
  std::unique_ptr<convergence::LeaseKeeper> leases_;
  std::unique_ptr<WakeBus> wake_bus_;
  // After the reconciler: its functions still running are waited for first.
  std::unique_ptr<BoundedRunner> bounded_;
  // What the Projects service asks of the data center (the reconciler's).
  std::unique_ptr<DataCenter> data_center_;
  // Health: the coordinator shards the services' checks over the agents that
  // connect (mariposa-health, or the embedded one) and turns their reports
  // into events; the reconciler reads instance health from it.
  std::unique_ptr<health::Coordinator> health_;
  std::unique_ptr<health::HealthAgentsService> health_agents_;
  health::HealthMetrics health_metrics_;
  std::atomic<convergence::Reconciler*> wake_target_{nullptr};
  std::unique_ptr<convergence::StateService> state_;
  // Local addresses are accepted by mariposad itself (to learn the caller's
  // uid) and handed to gRPC; TLS and --insecure-listen ones by gRPC.
  std::vector<std::unique_ptr<auth::LocalListener>> locals_;
  std::vector<std::string> listeners_;     // each with what it accepts, for the log and `admin status`
  std::vector<v1::Problem> standing_;      // problems for as long as it runs (--insecure-listen)
  std::string bound_;                      // the --listen address bound
  std::unique_ptr<EventsService> events_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<gateway::Gateway> gateway_;  // --http-listen
  std::unique_ptr<triton::VmFeed> feed_;
  std::unique_ptr<health::Agent> embedded_;
};

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_DAEMON_H_
