// The gRPC State service: goal versus actual per service and instance.
// Thread-safe.
#ifndef MARIPOSA_CONVERGENCE_STATE_SERVICE_H_
#define MARIPOSA_CONVERGENCE_STATE_SERVICE_H_

#include "convergence/reconciler.h"
#include "convergence/triton/clients.h"
#include <functional>

#include "mariposa/v1/state.grpc.pb.h"
#include "projects/store.h"

namespace mariposa::convergence {

// A problem as the API carries it (State.GetState, Admin.Status).
void ProblemToProto(const Problem& p, v1::Problem* out);

class StateService final : public v1::State::Service {
 public:
  // `vmapi` may be null (mariposad without --triton): GetState then says so.
  // GetState is the reconciler's Gather and Decide without Execute: the
  // verdicts and problems are the controller's own.
  StateService(ProjectStore* store, triton::VmapiClient* vmapi, Reconciler* reconciler = nullptr)
      : store_(store), vmapi_(vmapi), reconciler_(reconciler) {}
  grpc::Status GetState(grpc::ServerContext*, const v1::GetStateRequest*, v1::GetStateResponse*) override;
  // Problems of the controller itself added to every project's state (it is
  // readonly: nothing converges). Before the server starts.
  void set_controller_problems(std::function<void(v1::GetStateResponse*)> f) { controller_problems_ = std::move(f); }
  grpc::Status GetHealth(grpc::ServerContext*, const v1::GetHealthRequest*, v1::GetHealthResponse*) override;

 private:
  ProjectStore* store_;
  triton::VmapiClient* vmapi_;
  Reconciler* reconciler_;
  std::function<void(v1::GetStateResponse*)> controller_problems_;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_STATE_SERVICE_H_
