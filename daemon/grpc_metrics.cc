#include "daemon/grpc_metrics.h"

#include <string>

namespace mariposa {
namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::ServerRpcInfo;

const char* TypeName(ServerRpcInfo::Type t) {
  switch (t) {
    case ServerRpcInfo::Type::UNARY: return "unary";
    case ServerRpcInfo::Type::CLIENT_STREAMING: return "client_stream";
    case ServerRpcInfo::Type::SERVER_STREAMING: return "server_stream";
    case ServerRpcInfo::Type::BIDI_STREAMING: return "bidi_stream";
  }
  return "unknown";
}

class Interceptor : public grpc::experimental::Interceptor {
 public:
  Interceptor(convergence::ControllerMetrics* m, const Clock* clock, ServerRpcInfo* info)
      : m_(m), clock_(clock), type_(TypeName(info->type())), start_(clock->Now()) {
    // "/mariposa.v1.Projects/Apply" -> service, method.
    std::string full = info->method() != nullptr ? info->method() : "";
    size_t slash = full.rfind('/');
    service_ = slash == std::string::npos || slash == 0 ? full : full.substr(1, slash - 1);
    method_ = slash == std::string::npos ? "" : full.substr(slash + 1);
    m_->GrpcStarted(service_, method_, type_);
  }
  ~Interceptor() override {
    // A call that ends with no status sent was cancelled by its client.
    if (!handled_) m_->GrpcHandled(service_, method_, type_, "Canceled", clock_->Now() - start_);
  }
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) && !handled_) {
      handled_ = true;
      m_->GrpcHandled(service_, method_, type_, GrpcCodeName(methods->GetSendStatus().error_code()),
                      clock_->Now() - start_);
    }
    methods->Proceed();
  }

 private:
  convergence::ControllerMetrics* m_;
  const Clock* clock_;
  std::string service_, method_;
  const char* type_;
  absl::Time start_;
  bool handled_ = false;
};

class Factory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  Factory(convergence::ControllerMetrics* m, const Clock* clock) : m_(m), clock_(clock) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(ServerRpcInfo* info) override {
    return new Interceptor(m_, clock_, info);
  }

 private:
  convergence::ControllerMetrics* m_;
  const Clock* clock_;
};

}  // namespace

const char* GrpcCodeName(int code) {
  static const char* kNames[] = {"OK",           "Canceled",          "Unknown",        "InvalidArgument",
                                 "DeadlineExceeded", "NotFound",      "AlreadyExists",  "PermissionDenied",
                                 "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
                                 "Unimplemented", "Internal",         "Unavailable",    "DataLoss",
                                 "Unauthenticated"};
  return code >= 0 && code < 17 ? kNames[code] : "Unknown";
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewGrpcMetricsInterceptorFactory(
    convergence::ControllerMetrics* metrics, const Clock* clock) {
  return std::make_unique<Factory>(metrics, clock);
}

}  // namespace mariposa
