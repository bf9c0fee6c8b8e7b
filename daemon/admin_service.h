// The gRPC Admin service: controller status, online backup, echo.
#ifndef MARIPOSA_DAEMON_ADMIN_SERVICE_H_
#define MARIPOSA_DAEMON_ADMIN_SERVICE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "daemon/backups.h"
#include "daemon/controller_state.h"
#include "daemon/peers.h"
#include "mariposa/v1/admin.grpc.pb.h"
#include "projects/store.h"

namespace mariposa {

class AdminService final : public v1::Admin::Service {
 public:
  // `problems` adds the controller's current problems to a status answer
  // (empty when mariposad runs without Triton).
  using ProblemSource = std::function<void(v1::StatusResponse*)>;
  AdminService(ProjectStore* store, std::string data_dir, std::string store_path, absl::Time started_at)
      : store_(store), data_dir_(std::move(data_dir)), store_path_(std::move(store_path)), started_at_(started_at) {}
  // Before the server starts.
  void set_problems(ProblemSource problems) { problems_ = std::move(problems); }
  // The directory backups are written to (created 0700 if missing).
  void set_backup_dir(std::string dir) { backup_dir_ = std::move(dir); }
  // Scheduled backups, reported by status (may be unset).
  void set_backups(const BackupScheduler* b) { backups_ = b; }
  // The controller's state (active | readonly); unset: always active.
  void set_controller(ControllerState* c) { controller_ = c; }
  // Facts for `admin status`: listeners, the secrets key; and problems of
  // the controller's own set-up (an insecure listener), shown every time.
  void set_facts(std::vector<std::string> listeners, std::string secrets_key, std::vector<v1::Problem> standing) {
    listeners_ = std::move(listeners);
    secrets_key_ = std::move(secrets_key);
    standing_ = std::move(standing);
  }

  grpc::Status Status(grpc::ServerContext*, const v1::StatusRequest*, v1::StatusResponse*) override;
  grpc::Status Backup(grpc::ServerContext*, const v1::BackupRequest*, v1::BackupResponse*) override;
  grpc::Status Ping(grpc::ServerContext*, const v1::PingRequest*, v1::PingResponse*) override;
  grpc::Status SetState(grpc::ServerContext*, const v1::SetStateRequest*, v1::SetStateResponse*) override;
  grpc::Status Nodes(grpc::ServerContext*, const v1::NodesRequest*, v1::NodesResponse*) override;

  // Several nodes: what this node's lease keeper last read. Unset: one node
  // on SQLite.
  struct NodesView {
    std::string self;
    absl::Duration ttl;
    LeaseState state;
    std::string error;
  };
  void set_nodes(std::function<NodesView()> nodes) { nodes_ = std::move(nodes); }

  // Several data centers: this one's name and what was last seen of each
  // peer. Unset: no --datacenter.
  struct DataCentersView {
    std::string self;
    absl::Duration interval;
    absl::Time as_of;
    std::vector<PeerView> peers;
  };
  void set_datacenters(std::function<DataCentersView()> f) { datacenters_ = std::move(f); }
  grpc::Status DataCenters(grpc::ServerContext*, const v1::DataCentersRequest*, v1::DataCentersResponse*) override;

 private:
  ProjectStore* store_;
  std::string data_dir_;
  std::string store_path_;
  absl::Time started_at_;
  ProblemSource problems_;
  std::string backup_dir_;
  const BackupScheduler* backups_ = nullptr;
  ControllerState* controller_ = nullptr;
  std::vector<std::string> listeners_;
  std::string secrets_key_;
  std::vector<v1::Problem> standing_;
  std::function<NodesView()> nodes_;
  std::function<DataCentersView()> datacenters_;
};

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_ADMIN_SERVICE_H_
