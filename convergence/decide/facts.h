// What the project level of one Decide gathers before any service is
// decided: the snapshot, the clock, every instance (the observed ones and the
// creates VMAPI does not list yet) by service and by uuid, the job in flight
// on each, and what the open tasks say about each service (stopped,
// starting, rolling, paused, waiting, reprovisioning). The decisions per
// service read it and do not change it.
#ifndef MARIPOSA_CONVERGENCE_DECIDE_FACTS_H_
#define MARIPOSA_CONVERGENCE_DECIDE_FACTS_H_

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "convergence/decide/decide.h"
#include "projects/task_queue.h"

namespace mariposa::convergence::decide_internal {

inline std::string Stamp(absl::Time t) { return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone()); }

struct ProjectFacts {
  ProjectFacts(const Snapshot& snapshot, absl::Time at) : s(snapshot), now(at) {}

  const Snapshot& s;
  const absl::Time now;

  // The instances (the project level's Instances step).
  std::vector<InstanceState> synthetic;        // creates in flight VMAPI does not list yet
  std::vector<const InstanceState*> instances;  // observed, then synthetic
  std::map<std::string, std::vector<const InstanceState*>> of;  // by service
  absl::flat_hash_map<absl::string_view, const InstanceState*> by_uuid;
  std::map<std::string, const JobRecord*> job_on;  // instance -> its job in flight

  // The open tasks (the project level's Tasks step).
  std::set<std::string> open_ids;
  std::set<std::string> stopped;   // services stopped (by the project or a stop task acting now)
  std::set<std::string> starting;  // services a start task acting now starts
  std::vector<const TaskRecord*> start_tasks;  // start tasks acting now
  std::map<std::string, std::string> run_task_of, reprovision_task_of, scale_task_of;  // service -> task uuid
  std::set<std::string> reprovision;  // services a reprovision task works on now
  std::map<std::string, std::set<std::string>> reprovision_only;  // service -> the instances its filters choose
  std::map<std::string, int> rolling;  // service -> its rollout's step (the task's override)
  std::set<std::string> rolled_back;  // services whose rollout fails over to a rollback now
  std::map<std::string, std::string> task_waits;  // service -> why its task waits
  std::map<std::string, const TaskRecord*> paused;  // service -> its rollout `mariposa pause` holds

  // The instances of `service` (none: an empty list).
  const std::vector<const InstanceState*>& Of(const std::string& service) const {
    static const std::vector<const InstanceState*> kNone;
    auto it = of.find(service);
    return it == of.end() ? kNone : it->second;
  }
  const ServiceGoalSpec* GoalOf(const std::string& service) const {
    if (!s.goal) return nullptr;
    auto it = s.goal->services.find(service);
    return it == s.goal->services.end() ? nullptr : &it->second;
  }
  // The freeze holding `kind` of work on `service`, said for an operator, or "".
  std::string FrozenBy(const std::string& service, const std::string& kind) const {
    for (const TaskRecord& t : s.tasks) {
      if (!FreezeHolds(t, service, kind)) continue;
      return absl::StrCat("frozen since ", Stamp(t.created_at), " by ", t.actor.empty() ? "?" : t.actor,
                          t.reason.empty() ? "" : absl::StrCat(" (", t.reason, ")"));
    }
    return "";
  }
  // A task for a version newer than the goal.
  bool Newer(const TaskRecord& t) const {
    if (t.version_uuid.empty() || !s.goal) return false;
    auto it = s.version_numbers.find(t.version_uuid);
    return it != s.version_numbers.end() && it->second > s.goal->number;
  }
  // The open task `t` waits for, or "".
  std::string WaitingFor(const TaskRecord& t) const {
    for (const std::string& w : t.wait_for) {
      if (open_ids.count(w)) return w;
    }
    return "";
  }
  // An automatic task of `kind` on one service, toward the goal's version,
  // by mariposad (the caller sets trigger and the rest).
  TaskRecord AutoTask(const std::string& kind, const std::string& svc, const std::string& auto_kind) const {
    TaskRecord t;
    t.project_uuid = s.project.uuid;
    t.kind = kind;
    t.services = {svc};
    t.origin = "auto";
    t.auto_kind = auto_kind;
    t.version_uuid = s.goal ? s.goal->version_uuid : "";
    t.actor = "mariposad";
    return t;
  }
  EventRecord Event(const std::string& kind, const std::string& subject, const std::string& detail) const {
    return EventRecord{0, now, "mariposad", s.project.name, kind, subject, detail};
  }
};

}  // namespace mariposa::convergence::decide_internal

#endif  // MARIPOSA_CONVERGENCE_DECIDE_FACTS_H_
