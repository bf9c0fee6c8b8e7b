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
  // The project in every data center: each one's answer, asked now (the
  // daemon's peer link); it fills the answer's datacenters and as_of.
  // Unset: no --datacenter. Before the server starts.
  using AskAcross = std::function<void(const v1::ProjectAcrossRequest& req, v1::ProjectAcrossResponse* resp)>;
  void set_across(AskAcross f) { across_ = std::move(f); }
  grpc::Status ProjectAcross(grpc::ServerContext*, const v1::ProjectAcrossRequest*, v1::ProjectAcrossResponse*) override;

 private:
  ProjectStore* store_;
  triton::VmapiClient* vmapi_;
  Reconciler* reconciler_;
  std::function<void(v1::GetStateResponse*)> controller_problems_;
  AskAcross across_;
};

// The whole of a project across data centers from each one's answer: its
// summary line and whether it is converged everywhere (at one version).
void SummarizeAcross(v1::ProjectAcrossResponse* r, absl::Time now);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_STATE_SERVICE_H_
