// A gRPC server interceptor that counts every call into ControllerMetrics
// (grpc_server_started_total, grpc_server_handled_total by code,
// grpc_server_handling_seconds), timed by the injected clock.
#ifndef MARIPOSA_DAEMON_GRPC_METRICS_H_
#define MARIPOSA_DAEMON_GRPC_METRICS_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>

#include "common/clock.h"
#include "convergence/metrics.h"

namespace mariposa {

// `metrics` and `clock` must outlive the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewGrpcMetricsInterceptorFactory(
    convergence::ControllerMetrics* metrics, const Clock* clock);

// "PermissionDenied" for PERMISSION_DENIED: the names Prometheus dashboards
// of gRPC servers expect.
const char* GrpcCodeName(int code);

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_GRPC_METRICS_H_
