// The decisions of a rollout across data centers (issue 52, point 3): from
// a rollout's record, what each data center last answered and `now`, what
// to send next, what has converged or failed, and when it ends. Pure; the
// daemon's RolloutRunner (daemon/rollout_runner.h) gathers the answers and
// carries the actions out.
#ifndef MARIPOSA_PROJECTS_ROLLOUT_PLAN_H_
#define MARIPOSA_PROJECTS_ROLLOUT_PLAN_H_

#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "projects/store_records.h"

namespace mariposa {

// What a data center said of the project when asked (its State.GetState).
struct DataCenterAnswer {
  bool answered = false;  // false: it did not answer (`error` says why)
  std::string error;
  int64_t version = 0;     // the version number in force there
  bool converged = false;  // every service converged (healthy) at it
  std::string failed;      // "web: …" when a service's verdict is failed
  std::string progress;    // a short line of where it stands
};

// What the runner does for one data center.
struct RolloutAction {
  enum Kind { kSend, kRollback } kind = kSend;
  std::string datacenter;
  std::string to_version;  // kRollback: the version to go back to there
};

struct RolloutDecision {
  RolloutRecord next;                  // the record as it should be written
  std::vector<RolloutAction> actions;  // in order
  std::vector<std::string> events;     // what changed, one line each ("" none)
};

// One look at an active rollout. `answers` holds the data centers in state
// "sent" that were asked. A data center that does not answer keeps its
// state (shown as unknown, with the age of its last answer); the rollout
// waits for it, and so catches up once it answers again.
RolloutDecision DecideRollout(const RolloutRecord& r, const std::map<std::string, DataCenterAnswer>& answers,
                              absl::Time now);

// The outcome of a send (kSend) to a step's data center: stored there as
// version `number`, over `previous` ("" = the project was new there); or
// refused (`refused`: its reason; the rollout fails) or not reached
// (`unreachable`: tried again at the next look).
struct SendResult {
  bool stored = false;
  int64_t number = 0;
  std::string previous;
  std::string refused;
  std::string unreachable;
};
// The record after that send, and the event line ("" none).
std::string AfterSend(RolloutRecord* r, const std::string& datacenter, const SendResult& result, absl::Time now);

// The one-line summary `mariposa rollouts` and events show for a step.
std::string StepLine(const RolloutStep& s, absl::Time now);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_ROLLOUT_PLAN_H_
