// The controller's own state, after RFD 40's states for IMGAPI:
//   active    serving reads and writes, converging;
//   readonly  set by an operator (`mariposa admin state set readonly`):
//             reads work, every call that writes answers UNAVAILABLE with
//             the reason, automatic work (syncs, replacements) is paused.
//             Kept in the store, so it outlives a restart.
// `standby` and `initfail` are states of a mariposad that has no store
// open; daemon/limited_server.h serves those.
#ifndef MARIPOSA_DAEMON_CONTROLLER_STATE_H_
#define MARIPOSA_DAEMON_CONTROLLER_STATE_H_

#include <functional>
#include <optional>
#include <string>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "auth/rbac.h"
#include "common/clock.h"
#include "mariposa/v1/state.pb.h"
#include "projects/store.h"

namespace mariposa {

struct ControllerMode {
  std::string mode = "active";  // active | readonly
  std::string reason;           // why an operator set it
  absl::Time since = absl::InfinitePast();
  std::string by;               // the author of the change
};

// The setting's stored form and back (JSON); pure, for tests.
std::string EncodeMode(const ControllerMode& m);
absl::StatusOr<ControllerMode> DecodeMode(const std::string& text);
// The problem `m` is for an operator (Error / Reason / Fix / Impact);
// false when it is none (active).
bool ModeProblem(const ControllerMode& m, v1::Problem* out);
// The refusal of a call that writes while `m` is readonly; OK otherwise.
grpc::Status GateCall(const ControllerMode& m, const auth::MethodRule& rule);

class ControllerState {
 public:
  ControllerState(ControllerStore* store, const Clock* clock) : store_(store), clock_(clock) {}
  // Reads the stored state (active when none).
  absl::Status Load();
  ControllerMode Get() const;
  // Several nodes: reads the stored state again (another node may have set
  // it); `on_change` runs when it differs from what this node had.
  absl::Status Reload();
  // active | readonly; INVALID_ARGUMENT for anything else, and for readonly
  // without a reason. Written with an event `controller.state`; `on_change`
  // runs after.
  absl::Status Set(const std::string& mode, const std::string& reason, const std::string& actor);
  void set_on_change(std::function<void(const ControllerMode&)> f) { on_change_ = std::move(f); }
  grpc::Status Gate(const auth::MethodRule& rule) const { return GateCall(Get(), rule); }

 private:
  ControllerStore* store_;
  const Clock* clock_;
  mutable absl::Mutex mu_;
  ControllerMode mode_ ABSL_GUARDED_BY(mu_);
  std::function<void(const ControllerMode&)> on_change_;
};

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_CONTROLLER_STATE_H_
