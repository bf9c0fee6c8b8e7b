#include "daemon/limited_server.h"

#include <unistd.h>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/process_metrics.h"
#include "mariposa/v1/admin.grpc.pb.h"

namespace mariposa {

class LimitedServer::AdminImpl final : public v1::Admin::Service {
 public:
  explicit AdminImpl(LimitedState s) : s_(std::move(s)) {}
  grpc::Status Status(grpc::ServerContext*, const v1::StatusRequest*, v1::StatusResponse* resp) override {
    resp->set_mode(s_.mode);
    resp->set_version(kMariposaVersion);
    resp->set_pid(getpid());
    resp->set_data_dir(s_.data_dir);
    resp->mutable_started_at()->set_seconds(absl::ToUnixSeconds(s_.started_at));
    {
      absl::MutexLock l(&mu_);
      for (const std::string& a : listeners_) resp->add_listeners(a);
    }
    if (s_.describe) s_.describe(resp);
    return grpc::Status::OK;
  }
  void set_listeners(std::vector<std::string> l) {
    absl::MutexLock lock(&mu_);
    listeners_ = std::move(l);
  }
  grpc::Status Ping(grpc::ServerContext*, const v1::PingRequest* req, v1::PingResponse* resp) override {
    resp->set_payload(req->payload());
    return grpc::Status::OK;
  }
  grpc::Status Backup(grpc::ServerContext*, const v1::BackupRequest*, v1::BackupResponse*) override {
    return Unavailable();
  }
  grpc::Status SetState(grpc::ServerContext*, const v1::SetStateRequest*, v1::SetStateResponse*) override {
    return Unavailable();
  }
  grpc::Status Unavailable() const { return grpc::Status(grpc::StatusCode::UNAVAILABLE, s_.unavailable()); }

 private:
  LimitedState s_;
  absl::Mutex mu_;
  std::vector<std::string> listeners_ ABSL_GUARDED_BY(mu_);
};

class LimitedServer::Generic final : public grpc::CallbackGenericService {
 public:
  explicit Generic(const AdminImpl* admin) : admin_(admin) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class Refuse : public grpc::ServerGenericBidiReactor {
     public:
      explicit Refuse(grpc::Status s) { Finish(std::move(s)); }
      void OnDone() override { delete this; }
    };
    return new Refuse(admin_->Unavailable());
  }

 private:
  const AdminImpl* admin_;
};

absl::StatusOr<std::unique_ptr<LimitedServer>> LimitedServer::Start(const std::vector<LimitedListener>& listeners,
                                                                    LimitedState state) {
  std::unique_ptr<LimitedServer> s(new LimitedServer());
  s->admin_ = std::make_unique<AdminImpl>(std::move(state));
  s->generic_ = std::make_unique<Generic>(s->admin_.get());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder b;
  std::vector<int> ports(listeners.size(), 0);
  for (size_t i = 0; i < listeners.size(); ++i) {
    const LimitedListener& l = listeners[i];
    b.AddListeningPort(l.address, l.credentials != nullptr ? l.credentials : grpc::InsecureServerCredentials(),
                       &ports[i]);
  }
  b.RegisterService(s->admin_.get());
  b.RegisterCallbackGenericService(s->generic_.get());
  s->server_ = b.BuildAndStart();
  if (s->server_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", listeners.empty() ? "nothing" : listeners[0].address));
  }
  s->server_->GetHealthCheckService()->SetServingStatus(false);
  for (size_t i = 0; i < listeners.size(); ++i) {
    const std::string& a = listeners[i].address;
    if (a.rfind("unix:", 0) == 0) {
      s->addresses_.push_back(a);
    } else {
      s->addresses_.push_back(absl::StrCat(a.substr(0, a.rfind(':')), ":", ports[i]));
    }
  }
  s->admin_->set_listeners(s->addresses_);
  return s;
}

LimitedServer::~LimitedServer() { Shutdown(); }

void LimitedServer::Shutdown() {
  if (server_ != nullptr) {
    server_->Shutdown();
    server_->Wait();
    server_.reset();
  }
}

}  // namespace mariposa
