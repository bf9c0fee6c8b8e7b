#include "convergence/decide.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convergence/images.h"
#include "convergence/meta_drift.h"
#include "convergence/queue.h"
#include "projects/interpolate.h"

namespace mariposa::convergence {
namespace {

// The wait after the n-th failure in a row of an install or an import:
// backoff_base * 2^(n - 1), capped at backoff_cap.
absl::Duration RetryWait(const ControllerPolicy& p, int n) {
  return std::min(p.backoff_base * (1 << std::min(std::max(n, 1) - 1, 16)), p.backoff_cap);
}

bool Covers(const TaskRecord& t, const std::string& service) {
  return t.services.empty() || std::find(t.services.begin(), t.services.end(), service) != t.services.end();
}

std::string Stamp(absl::Time t) { return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone()); }

RestartPolicy PolicyFor(const ServiceSpec& spec, const ControllerPolicy& c) {
  RestartPolicy p;
  p.max_attempts = spec.restart_max_attempts;
  p.window = spec.restart_window;
  p.backoff_base = c.backoff_base;
  p.backoff_cap = c.backoff_cap;
  return p;
}

// `images`: the services' resolved images (in-place services compare them).
ServiceGoal GoalFor(const ServiceGoalSpec& g, const std::map<std::string, triton::Image>& images) {
  ServiceGoal out{g.record.name, g.record.count, g.record.spec_hash, std::max(1, g.spec.update_rolling),
                  std::max(0, g.spec.update_max_surge)};
  out.start_window = g.spec.start_window;
  out.min_healthy_time = g.spec.update_min_healthy_time;
  const std::vector<std::string>& when = g.spec.restart_condition;
  auto has = [&](const char* c) { return std::find(when.begin(), when.end(), c) != when.end(); };
  out.restart_on_failure = has("on-failure") || has("always");
  out.restart_on_cn = has("on-cn-restart") || has("always");
  out.preserve = g.spec.preserve_stopped;
  out.preserve_keep = std::max(1, g.spec.restart_max_attempts);
  if (g.spec.update_strategy == "reprovision") {
    out.in_place = true;
    auto image = images.find(g.record.name);
    if (image != images.end()) out.image_uuid = image->second.uuid;
    // A service that keeps its state in delegate datasets never has one
    // destroyed by a replacement: broken instances are kept, all of them.
    if (out.preserve == "never") out.preserve = "on-failure";
    out.preserve_keep = 1 << 30;
  }
  return out;
}

// A job that takes an instance out of the service (Removes).
bool RemovesKind(const std::string& job_kind) { return job_kind == "delete" || job_kind == "preserve"; }
// A job a rollout's step counts: an old instance removed or reprovisioned.
bool RollsKind(const std::string& job_kind) { return RemovesKind(job_kind) || job_kind == "reprovision"; }

bool IsReplacement(const Action& a) { return a.reason == "replace-broken" || a.reason == "remove-broken"; }

bool IsScaleWork(const Action& a) {
  std::string k = WorkKind(a);
  return k == "scale" || k == "replace-unhealthy";
}

// Does instance `i` match a reprovision task's filters? Each non-empty list
// must contain one of the instance's names for that property.
bool MatchesFilters(const TaskRecord& t, const InstanceState& i, const std::set<std::string>& image_uuids) {
  auto in = [](const std::vector<std::string>& list, std::initializer_list<std::string> names) {
    if (list.empty()) return true;
    for (const std::string& want : list) {
      for (const std::string& n : names) {
        if (!n.empty() && want == n) return true;
      }
    }
    return false;
  };
  return in(t.filter_versions, {absl::StrCat(i.version), absl::StrCat("v", i.version), i.version_uuid}) &&
         (t.filter_images.empty() || image_uuids.count(i.image_uuid) > 0) &&
         in(t.filter_servers, {i.server_uuid}) && in(t.filter_instances, {i.uuid, i.alias});
}

// What one Decide call works with besides the snapshot.
class Decider {
 public:
  Decider(const Snapshot& s, absl::Time now, PlanCache* cache = nullptr) : s_(s), now_(now), cache_(cache) {}
  Decision Run();
  // Only the finished jobs' accounting (CountFinished).
  Decision RunFinished() {
    Memory();
    FinishedJobs();
    return std::move(d_);
  }

 private:
  void Memory();
  void Event(const std::string& kind, const std::string& subject, const std::string& detail) {
    d_.events.push_back(EventRecord{0, now_, "mariposad", s_.project.name, kind, subject, detail});
  }
  void Change(const TaskRecord& t, const std::string& state, const std::string& note = "") {
    d_.task_changes.push_back({t.uuid, state, note});
  }
  void Problem(const std::string& kind, const std::string& service, std::string error, std::string reason,
               std::string fix, std::string impact) {
    d_.problems.push_back({kind, service, std::move(error), std::move(reason), std::move(fix), std::move(impact)});
  }
  // A failure that counts toward the service's crash loop (and backoff).
  void CrashFailure(const std::string& service, const std::string& why);
  void FinishedJobs();
  // A rollout past one of its services' deadlines (update.healthy_deadline,
  // update.progress_deadline): why, or "".
  std::string Overdue(const TaskRecord& t, const std::vector<std::string>& scope) const;
  void Instances();
  void Tasks();
  void Plan();
  void StartsDone();
  void Hold();
  void ScaleTasks();
  void Names();
  void Imports();
  void Uninstalls();
  bool ImportVerdict(const std::string& svc, ServiceVerdict* v);
  void Agents();
  void Window();
  void Verdicts();
  void Stale();  // an observation too old for verdicts: every one unknown, and why
  const ServiceGoalSpec* GoalOf(const std::string& service) const {
    if (!s_.goal) return nullptr;
    auto it = s_.goal->services.find(service);
    return it == s_.goal->services.end() ? nullptr : &it->second;
  }
  std::string FrozenBy(const std::string& service, const std::string& kind) const {
    for (const TaskRecord& t : s_.tasks) {
      if (!FreezeHolds(t, service, kind)) continue;
      return absl::StrCat("frozen since ", Stamp(t.created_at), " by ", t.actor.empty() ? "?" : t.actor,
                          t.reason.empty() ? "" : absl::StrCat(" (", t.reason, ")"));
    }
    return "";
  }
  bool Newer(const TaskRecord& t) const {
    if (t.version_uuid.empty() || !s_.goal) return false;
    auto it = s_.version_numbers.find(t.version_uuid);
    return it != s_.version_numbers.end() && it->second > s_.goal->number;
  }
  std::string WaitingFor(const TaskRecord& t) const {
    for (const std::string& w : t.wait_for) {
      if (open_ids_.count(w)) return w;
    }
    return "";
  }

  const Snapshot& s_;
  const absl::Time now_;
  PlanCache* cache_;
  Decision d_;
  std::vector<InstanceState> synthetic_;        // creates in flight VMAPI does not list yet
  std::vector<const InstanceState*> instances_;  // observed, then synthetic_
  std::map<std::string, std::vector<const InstanceState*>> of_;
  absl::flat_hash_map<absl::string_view, const InstanceState*> by_uuid_;
  std::map<std::string, const JobRecord*> job_on_;  // instance -> its job in flight
  std::set<std::string> open_ids_;
  std::set<std::string> stopped_;
  std::set<std::string> starting_;
  std::vector<const TaskRecord*> start_tasks_;  // start tasks acting now
  std::map<std::string, std::string> run_task_of_, reprovision_task_of_, scale_task_of_;
  std::set<std::string> reprovision_;
  // Tasks some service still works on; an agent service's end of a task
  // (task uuid -> state, note) applies only when none does.
  std::set<std::string> busy_tasks_;
  bool uninstalled_ = false;  // Uninstalls() ran (early, for a deleted project)
  std::map<std::string, std::pair<std::string, std::string>> agent_task_ends_;
  std::map<std::string, std::set<std::string>> reprovision_only_;
  std::map<std::string, int> rolling_;
  std::set<std::string> rolled_back_;  // services whose rollout fails over to a rollback now
  std::map<std::string, std::string> task_waits_;  // service -> why its task waits
  std::map<std::string, const TaskRecord*> paused_;  // service -> its rollout `mariposa pause` holds
  std::vector<Action> planned_;
  std::vector<Step> steps_;
  std::map<std::string, std::string> hold_reason_;  // service -> first reason its work is held
};

void Decider::CrashFailure(const std::string& service, const std::string& why) {
  const ServiceGoalSpec* g = GoalOf(service);
  auto m = d_.memory.find(service);
  if (g == nullptr || m == d_.memory.end()) return;
  RestartPolicy p = PolicyFor(g->spec, s_.policy);
  if (m->second.history.Failure(p, now_, s_.jitter)) {
    m->second.pause_reason =
        absl::StrCat(m->second.history.consecutive(), " failures in a row (restart.max_attempts ", p.max_attempts,
                     ", window ", absl::FormatDuration(p.window), "); replacement paused. Last: ", why);
    Event("service.crashlooping", service, m->second.pause_reason);
  }
}

void Decider::FinishedJobs() {
  for (const FinishedJob& f : s_.finished) {
    const JobRecord& j = f.job;
    TaskProgress prog;
    auto m = d_.memory.find(j.service);
    if (f.ok) {
      if (j.kind == "create") {
        prog.created = 1;
        if (j.reason == "replace-broken") prog.replaced = 1;
        if (m != d_.memory.end()) m->second.history.Success();
      } else if (RemovesKind(j.kind)) {
        prog.deleted = 1;
        if (j.reason == "reprovision") prog.replaced = 1;
      } else if (j.kind == "reprovision") {
        prog.replaced = 1;
        Event("instance.reprovisioned", j.instance, j.alias);
      } else if (j.kind == "import") {
        Event("image.imported", j.instance, absl::StrCat(j.alias, " (", j.reason, ")"));
        for (auto& kv : d_.memory) {
          kv.second.import_error.clear();
          kv.second.import_failures = 0;
          kv.second.import_retry = absl::InfinitePast();
        }
      } else if (j.kind == "uninstall") {
        prog.deleted = 1;
        Event("agent.uninstalled", j.instance, absl::StrCat(j.alias, " on server ", j.instance, " (", j.reason, ")"));
      } else if (j.kind == "install") {
        prog.created = 1;
        Event("agent.install", j.instance, absl::StrCat(j.alias, " on server ", j.instance));
        if (m != d_.memory.end()) {
          if (!j.task_uuid.empty()) m->second.reinstalled[j.task_uuid].insert(j.instance);
          m->second.install_failures.erase(j.instance);
          m->second.install_attempts.erase(j.instance);
          // The slow-server warning: much longer than the median of the last ones.
          absl::Duration took = now_ - j.sent_at;
          std::vector<absl::Duration>& times = m->second.install_times;
          if (times.size() >= 5) {
            std::vector<absl::Duration> sorted = times;
            std::sort(sorted.begin(), sorted.end());
            absl::Duration median = sorted[sorted.size() / 2];
            if (took > 3 * median && took - median > absl::Seconds(5)) {
              Event("agent.install-slow", j.instance,
                    absl::StrCat(j.alias, " took ", absl::FormatDuration(absl::Trunc(took, absl::Seconds(1))),
                                 ", over 3 times the median of the last ", times.size(), " installs (",
                                 absl::FormatDuration(absl::Trunc(median, absl::Milliseconds(100))),
                                 "); check the server"));
            }
          }
          times.push_back(took);
          if (times.size() > 50) times.erase(times.begin());
        }
      }
    } else {
      prog.failed = 1;
      if (j.kind == "create") {
        Event("instance.create-failed", j.service, absl::StrCat(j.alias, ": ", f.error));
        CrashFailure(j.service, absl::StrCat(j.alias, ": ", f.error));
      } else if (j.kind == "import") {
        Event("image.import-failed", j.instance, absl::StrCat(j.alias, " (", j.reason, "): ", f.error));
        // Every service waiting for the image waits for the next attempt.
        for (const auto& kv : s_.imports) {
          if (kv.second.uuid != j.instance) continue;
          ServiceMemory& mem = d_.memory[kv.first];
          mem.import_error = f.error;
          ++mem.import_failures;
          mem.import_retry = now_ + RetryWait(s_.policy, mem.import_failures);
        }
      } else if (j.kind == "uninstall") {
        Event("agent.uninstall-failed", j.instance, absl::StrCat(j.alias, ": ", f.error));
      } else if (j.kind == "install") {
        Event("agent.install-failed", j.instance, absl::StrCat(j.alias, " on server ", j.instance, ": ", f.error));
        if (m != d_.memory.end()) {
          m->second.install_failures[j.instance] = f.error;
          int n = ++m->second.install_attempts[j.instance];
          m->second.install_retry = std::max(m->second.install_retry, now_ + RetryWait(s_.policy, n));
        }
      } else {
        Event(absl::StrCat("instance.", j.kind, "-failed"), j.instance, absl::StrCat(j.alias, ": ", f.error));
      }
    }
    d_.job_progress.push_back({j.job_uuid, prog});
  }
}

void Decider::Instances() {
  absl::flat_hash_set<absl::string_view> seen;
  seen.reserve(s_.instances.size());
  for (const InstanceState& i : s_.instances) seen.insert(i.uuid);
  for (const JobRecord& j : s_.in_flight) {
    if (j.api != "vmapi") continue;
    const ServiceGoalSpec* g = GoalOf(j.service);
    if (j.kind == "create" && !seen.count(j.instance) && g != nullptr) {
      // Sent, not listed yet (a slow VMAPI): it is on its way.
      InstanceState i;
      i.uuid = j.instance;
      i.service = j.service;
      i.alias = j.alias;
      i.state = "provisioning";
      i.health = "unknown";
      i.spec_hash = g->record.spec_hash;
      i.version = s_.goal->number;
      i.version_uuid = s_.goal->version_uuid;
      i.created = j.sent_at;
      synthetic_.push_back(std::move(i));
    }
  }
  instances_.reserve(s_.instances.size() + synthetic_.size());
  for (const InstanceState& i : s_.instances) instances_.push_back(&i);
  for (const InstanceState& i : synthetic_) instances_.push_back(&i);
  by_uuid_.reserve(instances_.size());
  for (const InstanceState* i : instances_) {
    of_[i->service].push_back(i);
    by_uuid_[i->uuid] = i;
  }
  for (const JobRecord& j : s_.in_flight) {
    if (j.api == "vmapi") job_on_[j.instance] = &j;
  }
}

std::string Decider::Overdue(const TaskRecord& t, const std::vector<std::string>& scope) const {
  if (t.state != "active" || t.started_at == absl::InfinitePast()) return "";
  // The rollout's clock starts when it started or was last resumed.
  absl::Time from = std::max(t.started_at, t.resumed_at);
  absl::Time progress = from;  // the last time an instance of the new spec became ready
  absl::Duration progress_deadline = absl::ZeroDuration();
  bool pending = false;
  for (const std::string& svc : scope) {
    const ServiceGoalSpec* g = GoalOf(svc);
    if (g == nullptr || g->spec.compute_type == "agent") continue;
    ServiceGoal goal = GoalFor(*g, s_.images);
    const absl::Duration healthy_deadline = g->spec.update_healthy_deadline;
    if (g->spec.update_progress_deadline > absl::ZeroDuration()) {
      progress_deadline = progress_deadline == absl::ZeroDuration()
                              ? g->spec.update_progress_deadline
                              : std::min(progress_deadline, g->spec.update_progress_deadline);
    }
    auto it = of_.find(svc);
    if (it == of_.end()) continue;
    for (const InstanceState* i : it->second) {
      if (Outdated(*i, goal)) {
        pending |= i->state == "running";
        continue;
      }
      absl::Time ready_at = ReadySince(*i, goal.start_window);  // may be ahead (start.window)
      if (ready_at <= now_) {
        if (ready_at != absl::InfinitePast()) progress = std::max(progress, ready_at);
        continue;
      }
      pending = true;
      if (i->state != "running") continue;
      absl::Time up = i->up_since == absl::InfinitePast() ? i->created : i->up_since;
      // Not this rollout's. VMAPI's timestamps have milliseconds: an
      // instance created in the millisecond the rollout started is its.
      if (up < absl::FromUnixMillis(absl::ToUnixMillis(from)) || up == absl::InfiniteFuture()) continue;
      // In place, an instance reprovisioned onto the new image that fails its
      // checks stops the rollout: the next ones would get the same image.
      if (goal.in_place && i->checked && i->health == "unhealthy") {
        return absl::StrCat(i->alias, " of ", svc, " fails its health checks since it was reprovisioned onto ",
                            g->record.image, "; no more instances are reprovisioned onto it");
      }
      // An instance this rollout brought up that is not ready in time.
      if (healthy_deadline <= absl::ZeroDuration()) continue;
      if (now_ - up > healthy_deadline) {
        return absl::StrCat("update.healthy_deadline ", absl::FormatDuration(healthy_deadline), ": ", i->alias,
                            " of ", svc, " was not ready ", absl::FormatDuration(now_ - up), " after it came up (",
                            i->checked ? absl::StrCat("health ", i->health) : "no checks", ")");
      }
    }
  }
  if (pending && progress_deadline > absl::ZeroDuration() && now_ - progress > progress_deadline) {
    return absl::StrCat("update.progress_deadline ", absl::FormatDuration(progress_deadline),
                        ": no instance of the new spec became ready since ", Stamp(progress));
  }
  return "";
}

void Decider::Tasks() {
  for (const TaskRecord& t : s_.tasks) {
    if (t.state == "queued" || t.state == "active" || t.state == "terminating") open_ids_.insert(t.uuid);
  }
  stopped_ = s_.project.stopped;
  std::vector<std::string> all, agent_services;
  if (s_.goal) {
    for (const auto& kv : s_.goal->services) {
      (kv.second.spec.compute_type != "agent" ? all : agent_services).push_back(kv.first);
    }
  }
  auto in_flight_for = [&](const std::string& task) {
    for (const JobRecord& j : s_.in_flight) {
      if (j.task_uuid == task) return true;
    }
    return false;
  };
  for (const TaskRecord& t : s_.tasks) {
    if (t.kind == "freeze") continue;
    std::vector<std::string> scope = t.services.empty() ? all : t.services;
    if (t.state == "terminating") {
      Change(t, "terminated");
      continue;
    }
    if (t.auto_kind == "agent-rollout") continue;  // Agents() drives it
    if (Newer(t)) {
      for (const std::string& svc : scope) task_waits_[svc] = absl::StrCat("task ", t.uuid, " waits for its version");
      continue;
    }
    if (std::string w = WaitingFor(t); !w.empty()) {
      for (const std::string& svc : scope) {
        task_waits_.emplace(svc, absl::StrCat(t.kind, " task ", t.uuid, " waits for task ", w));
      }
      continue;
    }
    if (t.kind == "stop" || t.kind == "start") {
      if (t.state == "queued") {
        Change(t, "active");
        for (const std::string& svc : t.services) {
          if (t.kind == "stop") stopped_.insert(svc);
          else stopped_.erase(svc);
        }
      }
      for (const std::string& svc : scope) run_task_of_[svc] = t.uuid;
      if (t.kind == "start") {
        // Done when the plan starts nothing more in its scope (StartsDone):
        // a stopped instance the plan removes instead (the service has
        // `count` running already) is not the start task's to wait for.
        for (const std::string& svc : scope) starting_.insert(svc);
        start_tasks_.push_back(&t);
        continue;
      }
      bool pending = false;
      for (const std::string& svc : scope) {
        for (const InstanceState* i : of_[svc]) pending |= i->state == "running" || i->state == "provisioning";
      }
      if (!pending && !in_flight_for(t.uuid)) {
        Change(t, "completed");
        for (const std::string& svc : scope) run_task_of_.erase(svc);
      }
      continue;
    }
    if (t.kind != "reprovision") continue;  // scale: after the plan
    if (!t.paused.empty()) {
      // `mariposa pause`: no further step; what is in flight finishes.
      for (const std::string& svc : scope) {
        task_waits_[svc] = absl::StrCat("rollout ", t.uuid, " paused by ", t.paused, "; `mariposa resume ", t.uuid,
                                        "` continues it");
        paused_[svc] = &t;
      }
      continue;
    }
    std::string overdue = s_.project.current_version == t.version_uuid ? Overdue(t, scope) : "";
    // update.auto_rollback: a new-spec instance of this rollout that is
    // unhealthy fails the rollout; the executor rolls the project back to
    // the version before and queues a reprovision back to it.
    if (s_.goal && s_.project.current_version == t.version_uuid) {
      std::string bad_service, bad_instance;
      for (const std::string& svc : scope) {
        const ServiceGoalSpec* g = GoalOf(svc);
        if (g == nullptr || !g->spec.update_auto_rollback) continue;
        for (const InstanceState* i : of_[svc]) {
          if (i->checked && i->state == "running" && i->spec_hash == g->record.spec_hash && i->health == "unhealthy") {
            bad_service = svc;
            bad_instance = i->alias;
          }
        }
      }
      std::string before;
      for (const auto& v : s_.version_numbers) {
        if (v.second == s_.goal->number - 1) before = v.first;
      }
      if (!bad_service.empty() && !before.empty()) {
        d_.rollbacks.push_back({t.uuid, before, s_.project.current_version, t.services,
                                absl::StrCat("auto_rollback: ", bad_instance, " of the new spec of ", bad_service,
                                             " is unhealthy; rolled back to version ", s_.goal->number - 1)});
        rolled_back_.insert(scope.begin(), scope.end());
        continue;
      }
      bool auto_rollback = false;
      for (const std::string& svc : scope) {
        const ServiceGoalSpec* g = GoalOf(svc);
        auto_rollback |= g != nullptr && g->spec.update_auto_rollback;
      }
      if (!overdue.empty() && auto_rollback && !before.empty()) {
        d_.rollbacks.push_back({t.uuid, before, s_.project.current_version, t.services,
                                absl::StrCat("auto_rollback: ", overdue, "; rolled back to version ", s_.goal->number - 1)});
        rolled_back_.insert(scope.begin(), scope.end());
        continue;
      }
    }
    if (!overdue.empty()) {
      // The rollout failed; what it replaced stays, the rest keeps its old spec.
      Change(t, "failed", overdue);
      Event("rollout.failed", t.uuid, overdue);
      continue;
    }
    static const std::set<std::string> kNone;
    auto images = s_.filter_images.find(t.uuid);
    const std::set<std::string>& image_uuids = images == s_.filter_images.end() ? kNone : images->second;
    int64_t deleting = 0;  // this task's replacements in flight count toward its canary
    for (const JobRecord& j : s_.in_flight) deleting += j.task_uuid == t.uuid && RollsKind(j.kind);
    // Replacements that ended since the task was read: counted into it by
    // this sync (FinishedJobs), not yet in t.replaced.
    int64_t just_replaced = 0;
    for (const FinishedJob& f : s_.finished) {
      just_replaced += f.ok && f.job.task_uuid == t.uuid && f.job.reason == "reprovision" &&
                       RollsKind(f.job.kind);
    }
    int64_t canary_left =
        t.canary > 0 ? std::max<int64_t>(0, t.canary - t.replaced - just_replaced - deleting) : -1;
    bool filtered = t.canary > 0 || !t.filter_versions.empty() || !t.filter_images.empty() ||
                    !t.filter_servers.empty() || !t.filter_instances.empty();
    int64_t pending = 0, coming_up = 0;  // coming_up: reprovisioned in place, not ready yet
    std::vector<std::string> mine;
    for (const std::string& svc : scope) {
      const ServiceGoalSpec* g = GoalOf(svc);
      if (g == nullptr || g->spec.compute_type == "agent") continue;
      ServiceGoal goal = GoalFor(*g, s_.images);
      std::set<std::string> chosen;
      for (const InstanceState* i : ReprovisionOrder(of_[svc], goal)) {
        if (canary_left >= 0 && pending >= canary_left) break;
        if (!MatchesFilters(t, *i, image_uuids) || job_on_.count(i->uuid)) continue;
        chosen.insert(i->uuid);
        ++pending;
      }
      // Instances of the new spec still coming up belong to the rollout too.
      // In place, that is until they are ready again.
      bool starting = false;
      for (const InstanceState* i : of_[svc]) {
        bool current = !Outdated(*i, goal);
        starting |= i->state == "provisioning" && i->spec_hash == goal.spec_hash;
        if (goal.in_place && current && i->state == "running" && !InstanceReady(*i, now_, goal.start_window)) {
          starting = true;
          ++coming_up;
        }
      }
      if (chosen.empty() && !starting) continue;
      reprovision_.insert(svc);
      if (t.rolling > 0) rolling_[svc] = static_cast<int>(t.rolling);  // the task's --rolling
      if (filtered) reprovision_only_[svc] = std::move(chosen);
      reprovision_task_of_[svc] = t.uuid;
      mine.push_back(svc);
    }
    bool agents = false;  // Agents() ends a task that covers agent services too
    for (const std::string& a : agent_services) agents |= Covers(t, a);
    if (pending == 0 && deleting == 0 && coming_up == 0) {
      if (!agents) Change(t, "completed");
      else if (t.state == "queued") Change(t, "active");
      if (t.canary > 0 && t.replaced + just_replaced >= t.canary) {
        Event("reprovision.canary-done", t.uuid,
              absl::StrCat(t.canary, " instances replaced; `mariposa reprovision` continues with the rest"));
      }
      for (const std::string& svc : mine) {
        reprovision_.erase(svc);
        reprovision_only_.erase(svc);
        reprovision_task_of_.erase(svc);
      }
      continue;
    }
    busy_tasks_.insert(t.uuid);
    if (t.state == "queued") Change(t, "active");
  }
}

void Decider::Plan() {
  PlanInput in;
  if (s_.goal && !s_.project.deleting) {
    for (const auto& kv : s_.goal->services) {
      if (kv.second.spec.compute_type == "agent") continue;
      ServiceGoal g = GoalFor(kv.second, s_.images);
      g.stopped = stopped_.count(kv.first) > 0;
      auto r = rolling_.find(kv.first);
      if (r != rolling_.end()) g.rolling = r->second;
      in.services[kv.first] = g;
    }
  }
  if (cache_ == nullptr) {
    in.instances.reserve(instances_.size());
    for (const InstanceState* i : instances_) in.instances.push_back(*i);
  }  // (the cache takes them grouped, below)
  in.reprovision = reprovision_;
  for (const std::string& svc : rolled_back_) in.reprovision.erase(svc);
  in.reprovision_only = reprovision_only_;
  in.starting = starting_;
  for (const JobRecord& j : s_.in_flight) {
    if (j.api == "vmapi" && RemovesKind(j.kind)) in.deleting.insert(j.instance);
    if (j.api == "vmapi" && j.kind == "reprovision") in.reprovisioning.insert(j.instance);
  }
  std::vector<Action> actions;
  if (cache_ == nullptr) {
    actions = mariposa::convergence::Plan(in, now_);
  } else {
    // The same plan, reusing each unchanged service's actions (PlanCache).
    std::map<std::string, PlanCache::ServiceInput> services;
    for (const auto& kv : in.services) {
      PlanCache::ServiceInput& si = services[kv.first];
      si.goal = kv.second;
      si.flags.reprovision = in.reprovision.count(kv.first) > 0;
      auto only = in.reprovision_only.find(kv.first);
      if (only != in.reprovision_only.end()) si.flags.only = &only->second;
      si.flags.starting = in.starting.count(kv.first) > 0;
      si.flags.deleting = &in.deleting;
      si.flags.reprovisioning = &in.reprovisioning;
      auto of = of_.find(kv.first);
      if (of != of_.end()) si.instances = of->second;
      si.fingerprint = InstancesFingerprint(si.instances);
    }
    std::vector<const InstanceState*> removed;
    for (const InstanceState* ip : instances_) {
    const InstanceState& i = *ip;
      if (i.state != "destroyed" && !in.services.count(i.service)) removed.push_back(&i);
    }
    actions = cache_->Plan(services, removed, now_);
  }
  for (const Action& a : actions) {
    // An instance with a job in flight is being acted on already.
    if (!a.instance.empty() && job_on_.count(a.instance)) continue;
    planned_.push_back(a);
  }
}

void Decider::StartsDone() {
  for (const TaskRecord* t : start_tasks_) {
    bool pending = false;
    for (const Action& a : planned_) {
      pending |= a.kind == ActionKind::kStart && Covers(*t, a.service);
    }
    for (const JobRecord& j : s_.in_flight) pending |= j.task_uuid == t->uuid;
    if (pending) continue;
    Change(*t, "completed");
    for (auto it = run_task_of_.begin(); it != run_task_of_.end();) {
      it = it->second == t->uuid ? run_task_of_.erase(it) : std::next(it);
    }
  }
}

void Decider::Hold() {
  // Crash-loop pauses end after their window; an instance created after the
  // last failure that became ready ends a run of failures.
  for (auto& kv : d_.memory) {
    const ServiceGoalSpec* g = GoalOf(kv.first);
    if (g == nullptr || g->spec.compute_type == "agent") continue;
    ServiceHistory& h = kv.second.history;
    if (h.EndPauseIfOver(PolicyFor(g->spec, s_.policy), now_)) {
      Event("service.crashloop-ended", kv.first, "the restart window has passed; creating instances again");
    }
    for (const InstanceState* i : of_[kv.first]) {
      if (i->spec_hash == g->record.spec_hash && i->created > h.last_failure() &&
          InstanceReady(*i, now_, g->spec.start_window)) {
        h.Recovered();
        break;
      }
    }
  }
  // Placement: the VMs the services' rules may point at, and each hard
  // "near" rule that points at none of them (it cannot hold yet).
  std::vector<PlacementCandidate> candidates;
  bool rules = false;  // the candidates are gathered only when a service has placement rules
  if (s_.goal) {
    for (const auto& kv : s_.goal->services) rules |= !kv.second.spec.placement.empty();
  }
  if (rules) {
    candidates = s_.labelled_vms;
    for (const InstanceState* ip : instances_) {
      const InstanceState& i = *ip;
      if (i.state != "destroyed" && !i.server_uuid.empty()) candidates.push_back({i.uuid, i.alias, i.service, {}});
    }
  }
  std::map<std::string, std::string> placement_hold;  // service -> why its creates wait
  if (s_.goal) {
    for (const auto& kv : s_.goal->services) {
      InterpolationContext ctx;
      ctx.meta = s_.meta;
      ctx.project_name = s_.project.name;
      ctx.project_uuid = s_.project.uuid;
      ctx.project_version = absl::StrCat(s_.goal->number);
      ctx.service_name = kv.first;
      ctx.scale = kv.second.record.count;
      ctx.package_name = kv.second.record.package;
      ctx.leave_unknown = true;
      for (const PlacementRule& r : kv.second.spec.placement) {
        if (r.soft || !r.equal) continue;
        PlacementRuleText rule{r.key, r.equal, r.soft, r.value};
        auto value = Interpolate(r.value, ctx);
        if (!value.ok()) {
          placement_hold[kv.first] = absl::StrCat("placement rule ", r.ToString(), ": ", value.status().message());
          break;
        }
        rule.value = *value;
        bool any = false;
        for (const PlacementCandidate& c : candidates) any = any || PlacementRuleMatches(rule, c);
        if (!any) {
          placement_hold[kv.first] = absl::StrCat("placement rule ", r.ToString(),
                                                  " points at no placed VM yet; its creates wait for one");
          break;
        }
      }
    }
  }
  std::map<std::string, int64_t> budget;  // service -> replacements left now
  std::map<std::string, int64_t> removes_left;
  for (auto& kv : d_.memory) {
    const ServiceGoalSpec* g = GoalOf(kv.first);
    if (g == nullptr) continue;
    budget[kv.first] = kv.second.history.ReplaceBudget(g->record.count, s_.policy.replace_interval, now_);
    removes_left[kv.first] = budget[kv.first];
  }
  std::set<std::string> over_budget;
  std::map<std::string, int64_t> starting;  // service -> VMAPI starts in flight and taken now
  for (const JobRecord& j : s_.in_flight) {
    if (j.kind == "start") ++starting[j.service];
  }
  for (const Action& a : planned_) {
    std::string why = FrozenBy(a.service, WorkKind(a));
    const ServiceGoalSpec* g = GoalOf(a.service);
    auto m = d_.memory.find(a.service);
    bool create = a.kind == ActionKind::kCreate;
    // A failed provision never ran: removing it takes nothing away, so
    // neither a crash loop nor the replacement budget holds its removal.
    auto target = a.instance.empty() ? by_uuid_.end() : by_uuid_.find(a.instance);
    bool cleanup = a.reason == "remove-broken" && target != by_uuid_.end() && target->second->state == "failed";
    if (why.empty() && m != d_.memory.end() && g != nullptr && !cleanup) {
      const ServiceHistory& h = m->second.history;
      RestartPolicy p = PolicyFor(g->spec, s_.policy);
      if (h.Paused(p, now_) && (create || a.reason == "remove-broken")) {
        why = absl::StrCat("crash loop: ", m->second.pause_reason);
      } else if (create && now_ < h.next_attempt()) {
        why = absl::StrCat("backoff after a failed create, until ", Stamp(h.next_attempt()));
      } else if (IsReplacement(a)) {
        int64_t& left = create ? budget[a.service] : removes_left[a.service];
        if (left <= 0) {
          why = "replacement budget (max(1, 10 %) of count per interval) is spent";
          over_budget.insert(a.service);
        } else {
          --left;
          if (create) m->second.history.Replaced(now_);  // spends the budget for later syncs too
        }
      }
    }
    if (why.empty() && create) {
      auto img = s_.image_errors.find(a.service);
      if (img != s_.image_errors.end()) why = absl::StrCat("image: ", img->second);
    }
    if (why.empty() && a.kind != ActionKind::kStart && a.kind != ActionKind::kStop) {
      // Nothing is created, replaced or reprovisioned before the image is here.
      auto imp = s_.imports.find(a.service);
      if (imp != s_.imports.end()) {
        why = absl::StrCat("image: ", imp->second.name, "@", imp->second.version, " is imported from ",
                           imp->second.source, " first");
      }
    }
    if (why.empty() && create) {
      auto spec = s_.spec_errors.find(a.service);
      if (spec != s_.spec_errors.end()) why = spec->second;
    }
    if (why.empty() && create) {
      auto pl = placement_hold.find(a.service);
      if (pl != placement_hold.end()) why = pl->second;
    }
    if (why.empty() && a.kind == ActionKind::kStart && g != nullptr) {
      int64_t& n = starting[a.service];
      if (n >= g->spec.start_parallelism) {
        why = absl::StrCat("start.parallelism ", g->spec.start_parallelism, ": ", n, " starting");
      } else {
        ++n;
      }
    }
    if (!why.empty()) {
      d_.held.push_back({a, why});
      hold_reason_.emplace(a.service, why);
      continue;
    }
    std::string task;
    auto find = [&](const std::map<std::string, std::string>& m2) {
      auto it = m2.find(a.service);
      return it == m2.end() ? std::string() : it->second;
    };
    if (a.reason == "reprovision") task = find(reprovision_task_of_);
    else if (a.kind == ActionKind::kStop || a.kind == ActionKind::kStart) task = find(run_task_of_);
    steps_.push_back({a, task, ""});
  }
  // A task that waits (for its version, or for the task ahead of it) acts on
  // nothing yet; the work of the tasks acting now goes on (holding it would
  // keep the waiting task waiting forever). The wait is the reason shown.
  for (const auto& kv : task_waits_) hold_reason_.emplace(kv.first, kv.second);
  for (const std::string& svc : over_budget) {
    ServiceMemory& m = d_.memory[svc];
    if (now_ - m.budget_event >= s_.policy.replace_interval) {
      m.budget_event = now_;
      const ServiceGoalSpec* g = GoalOf(svc);
      Event("replacement.budget-exceeded", svc,
            absl::StrCat("more broken instances than the replacement budget (max(1, 10%) of ", g ? g->record.count : 0,
                         " per ", absl::FormatDuration(s_.policy.replace_interval),
                         "); the rest wait — a correlated failure (CN or network outage) is likely"));
    }
  }
}

// Automatic work runs as `scale` tasks, one per service: added when work
// appears (never in a frozen scope: admission refuses it), completed when
// the plan has none left for the service. A user's scale task, or one
// already open, is reused.
void Decider::ScaleTasks() {
  std::set<std::string> scale_pending;
  for (const Action& a : planned_) {
    if (IsScaleWork(a)) scale_pending.insert(a.service);
  }
  std::map<std::string, std::string> blocked;  // service -> why its scale task waits
  std::vector<std::string> all;
  if (s_.goal) {
    for (const auto& kv : s_.goal->services) all.push_back(kv.first);
  }
  for (const TaskRecord& t : s_.tasks) {
    if (t.kind != "scale" || t.state == "terminating" || Newer(t)) continue;
    std::vector<std::string> scope = t.services.empty() ? all : t.services;
    if (std::string w = WaitingFor(t); !w.empty()) {
      for (const std::string& svc : scope) {
        scale_task_of_[svc] = t.uuid;
        blocked[svc] = absl::StrCat("scale task ", t.uuid, " waits for task ", w);
      }
      continue;
    }
    bool pending = false, jobs = false;
    for (const std::string& svc : scope) pending |= scale_pending.count(svc) > 0;
    for (const JobRecord& j : s_.in_flight) jobs |= j.task_uuid == t.uuid;
    if (!pending && !jobs) {
      Change(t, "completed");
      continue;
    }
    if (t.state == "queued") Change(t, "active");
    for (const std::string& svc : scope) scale_task_of_[svc] = t.uuid;
  }
  // New automatic tasks, admitted against the open ones (the store decides
  // again in its transaction).
  std::vector<TaskRecord> open = s_.tasks;
  std::map<std::string, std::string> first_reason;
  for (const Step& st : steps_) {
    if (IsScaleWork(st.action) && !scale_task_of_.count(st.action.service) &&
        !reprovision_task_of_.count(st.action.service)) {
      first_reason.emplace(st.action.service, st.action.reason);
    }
  }
  TaskAdmitter admit = QueueAdmitter();
  for (const auto& kv : first_reason) {
    TaskRecord t;
    t.project_uuid = s_.project.uuid;
    t.kind = "scale";
    t.services = {kv.first};
    t.origin = "auto";
    t.version_uuid = s_.goal ? s_.goal->version_uuid : "";
    t.actor = "mariposad";
    bool replacing = kv.second == "replace-broken" || kv.second == "remove-broken";
    t.auto_kind = replacing ? "replace-unhealthy" : "scale";
    t.trigger = replacing ? "drift" : "apply";
    if (replacing) {
      for (const InstanceState* i : of_[kv.first]) {
        if (i->state == "unknown") t.trigger = "server-down";
        if (i->state == "running" && i->health == "unhealthy") t.trigger = "health";
      }
    } else if (s_.goal && s_.goal->origin == "scale") {  // `mariposa scale`: the user's own task
      t.origin = "user";
      t.trigger = "scale";
      t.actor = s_.goal->author;
    }
    std::vector<std::string> terminate;
    absl::Status ok = admit(open, &t, &terminate);
    if (!ok.ok()) {
      blocked[kv.first] = absl::StrCat("queue: ", ok.message());
      continue;
    }
    if (!t.wait_for.empty()) blocked[kv.first] = absl::StrCat("scale work waits for task ", t.wait_for.front());
    scale_task_of_[kv.first] = absl::StrCat("new:", kv.first);
    d_.new_tasks.push_back(t);
    TaskRecord as_open = t;
    as_open.uuid = scale_task_of_[kv.first];
    as_open.state = "queued";
    open.push_back(as_open);
  }
  std::vector<Step> kept;
  for (Step& st : steps_) {
    if (IsScaleWork(st.action)) {
      // A rollout acting on the service owns the creates that bring it back
      // to `count` (its floor counts on them): they go ahead as its work
      // even when a scale task is queued behind it.
      auto rollout = reprovision_task_of_.find(st.action.service);
      if (rollout != reprovision_task_of_.end()) {
        st.task = rollout->second;
        kept.push_back(std::move(st));
        continue;
      }
      auto b = blocked.find(st.action.service);
      if (b != blocked.end()) {
        d_.held.push_back({st.action, b->second});
        hold_reason_.emplace(st.action.service, b->second);
        continue;
      }
      st.task = scale_task_of_[st.action.service];
    }
    kept.push_back(std::move(st));
  }
  steps_ = std::move(kept);
  // A crash loop keeps its task open with the reason shown.
  std::set<std::string> ended;
  for (const TaskChange& c : d_.task_changes) {
    if (c.state != "active") ended.insert(c.task);
  }
  for (const TaskRecord& t : s_.tasks) {
    if (t.kind != "scale" || t.state != "active" || ended.count(t.uuid)) continue;
    std::string why;
    for (const std::string& svc : t.services) {
      auto m = d_.memory.find(svc);
      const ServiceGoalSpec* g = GoalOf(svc);
      if (m != d_.memory.end() && g != nullptr && m->second.history.Paused(PolicyFor(g->spec, s_.policy), now_)) {
        why = absl::StrCat("paused: ", svc, " is crash-looping (restart.max_attempts reached)");
      }
    }
    if (why != t.error) Change(t, "active", why);
  }
}

// Ordinals: the lowest free one per service, from the aliases
// <project>-<service>-<n> of the instances known (and those in flight).
void Decider::Names() {
  std::map<std::string, std::set<int>> used;
  for (const InstanceState* ip : instances_) {
    const InstanceState& i = *ip;
    std::string prefix = absl::StrCat(s_.project.name, "-", i.service, "-");
    int n = 0;
    if (i.alias.rfind(prefix, 0) == 0 && absl::SimpleAtoi(i.alias.substr(prefix.size()), &n)) used[i.service].insert(n);
  }
  std::map<std::string, int> from;  // service -> every ordinal below it is taken
  std::vector<Step*> creates;       // those that go now, then the backlog
  for (auto* list : {&steps_, &d_.backlog}) {
    for (Step& st : *list) {
      if (st.action.kind == ActionKind::kCreate) creates.push_back(&st);
    }
  }
  for (Step* stp : creates) {
    Step& st = *stp;
    int& ordinal = from.emplace(st.action.service, 1).first->second;
    std::set<int>& u = used[st.action.service];
    while (u.count(ordinal)) ++ordinal;
    u.insert(ordinal);
    st.alias = absl::StrCat(s_.project.name, "-", st.action.service, "-", ordinal);
  }
}

// Agents of services that left the manifest: uninstalled from every server
// that runs them, `rolling` at a time; counted as leftover until done.
void Decider::Uninstalls() {
  for (const auto& kv : s_.removed_agents) {
    const std::string& svc = kv.first;
    if (!s_.servers_known) {
      ++d_.leftover;  // not known to be gone
      continue;
    }
    bool going = false;
    for (const JobRecord& j : s_.in_flight) going |= j.api == "cnapi" && j.kind == "uninstall" && j.service == svc;
    std::vector<const triton::Server*> todo;
    AgentGoal selection;
    selection.name = kv.second.name;
    selection.select = kv.second.select;
    selection.servers = kv.second.servers;
    selection.exclude = kv.second.exclude;
    for (const triton::Server* sp : SelectServers(selection, s_.servers)) {
      const triton::Server& sv = *sp;
      bool has = false;
      for (const triton::Agent& a : sv.agents) has |= a.name == kv.second.name;
      if (!has) continue;
      ++d_.leftover;
      if (sv.status == "running") todo.push_back(&sv);
    }
    std::string frozen = FrozenBy(svc, "agent-rollout");
    if (going || todo.empty()) continue;
    std::sort(todo.begin(), todo.end(), [](const triton::Server* a, const triton::Server* b) {
      return a->hostname != b->hostname ? a->hostname < b->hostname : a->uuid < b->uuid;
    });
    for (size_t i = 0; i < todo.size() && static_cast<int>(i) < std::max(1, kv.second.rolling); ++i) {
      if (!frozen.empty()) {
        d_.held.push_back({Action{ActionKind::kDelete, svc, todo[i]->uuid, "service-removed"}, frozen});
        continue;
      }
      d_.uninstalls.push_back({svc, todo[i]->uuid, kv.second.name});
    }
  }
}

// Images only in the source: one import per image at a time, for the open
// task that needs it; a failed import is tried again after a backoff.
void Decider::Imports() {
  std::set<std::string> going;
  for (const JobRecord& j : s_.in_flight) {
    if (j.api == "imgapi") going.insert(j.instance);
  }
  for (const auto& kv : s_.imports) {
    const std::string& svc = kv.first;
    const triton::Image& im = kv.second;
    if (!going.insert(im.uuid).second) continue;  // in flight, or asked for by another service
    const ServiceMemory& m = d_.memory[svc];
    if (now_ < m.import_retry) {
      going.erase(im.uuid);
      continue;
    }
    std::string task;
    for (const TaskRecord& t : s_.tasks) {
      if (Covers(t, svc) && (t.state == "queued" || t.state == "active") && WaitingFor(t).empty()) {
        task = t.uuid;
        break;
      }
    }
    d_.imports.push_back({im.uuid, absl::StrCat(im.name, "@", im.version), im.source, im.size, svc, task});
  }
}

// The verdict of a service waiting for its image's import; false when it
// does not wait for one.
bool Decider::ImportVerdict(const std::string& svc, ServiceVerdict* v) {
  auto imp = s_.imports.find(svc);
  if (imp == s_.imports.end()) return false;
  const triton::Image& im = imp->second;
  const ServiceMemory& m = d_.memory[svc];
  std::string label = absl::StrCat(im.name, "@", im.version);
  if (!m.import_error.empty()) {
    v->state = VerdictState::kFailed;
    v->reason = absl::StrCat("importing image ", label, " failed");
    v->fix = absl::StrCat("check the image source ", im.source, " (`mariposa image avail ", svc,
                          "`); it is tried again at ", Stamp(m.import_retry),
                          ", or apply a manifest naming an image IMGAPI has");
    Problem("image-import-failing", svc, absl::StrCat("importing image ", label, " from ", im.source, " fails"),
            m.import_error, v->fix, absl::StrCat("nothing of ", svc, " is created or updated until it is imported"));
  } else {
    v->state = VerdictState::kProgressing;
    v->reason = absl::StrCat("importing image ", label, " (", HumanBytes(im.size), ") from ", im.source);
  }
  d_.verdicts[svc] = *v;
  return true;
}

void Decider::Agents() {
  if (!s_.goal) return;
  for (const auto& kv : s_.goal->services) {
    const ServiceSpec& spec = kv.second.spec;
    if (spec.compute_type != "agent") continue;
    const std::string& svc = kv.first;
    ServiceVerdict v;
    v.agent = true;
    if (ImportVerdict(svc, &v)) continue;
    ServiceMemory& m = d_.memory[svc];
    auto img = s_.images.find(svc);
    if (img == s_.images.end()) {
      auto err = s_.image_errors.find(svc);
      v.state = VerdictState::kFailed;
      v.reason = absl::StrCat("image ", kv.second.record.image, " is not in IMGAPI");
      v.fix = "import the image into IMGAPI, or apply a manifest naming one it has";
      Problem("image-missing", svc, absl::StrCat("image ", kv.second.record.image, " of agent service ", svc, " not found"),
              err != s_.image_errors.end() ? err->second : "IMGAPI did not return it", v.fix,
              absl::StrCat("no server gets ", svc, "; servers keep the version they run"));
      d_.verdicts[svc] = v;
      continue;
    }
    if (!s_.servers_known) {
      v.state = VerdictState::kUnknown;
      v.reason = "CNAPI could not be read";
      d_.verdicts[svc] = v;
      continue;
    }
    const triton::Image& image = img->second;
    if (m.install_image != image.uuid) {
      // A new image: failures of the old one say nothing about it. (The
      // first sight of an image keeps failures counted in this Decide.)
      if (!m.install_image.empty()) {
        m.install_failures.clear();
        m.install_attempts.clear();
      }
      m.install_image = image.uuid;
    }
    // A user's reprovision tries skipped servers again.
    for (const TaskRecord& t : s_.tasks) {
      if (t.kind == "reprovision" && t.origin != "auto" && t.state == "queued" && Covers(t, svc) && !Newer(t) &&
          WaitingFor(t).empty()) {
        m.install_attempts.clear();
        m.install_failures.clear();
      }
    }
    AgentGoal goal = AgentGoalFor(svc, spec, image);
    // A user's reprovision reinstalls the current image on every selected
    // server it has not reinstalled yet (sdcadm's forced same-image update).
    for (auto it = m.reinstalled.begin(); it != m.reinstalled.end();) {
      bool open = false;
      for (const TaskRecord& t : s_.tasks) open |= t.uuid == it->first;
      if (open) ++it;
      else it = m.reinstalled.erase(it);
    }
    for (const TaskRecord& t : s_.tasks) {
      if (t.kind != "reprovision" || t.origin == "auto" || !Covers(t, svc) || Newer(t) || !WaitingFor(t).empty() ||
          (t.state != "queued" && t.state != "active")) {
        continue;
      }
      const std::set<std::string>& done = m.reinstalled[t.uuid];
      for (const triton::Server* sv : SelectServers(goal, s_.servers)) {
        bool named = t.filter_servers.empty() ||
                     std::find(t.filter_servers.begin(), t.filter_servers.end(), sv->uuid) != t.filter_servers.end() ||
                     std::find(t.filter_servers.begin(), t.filter_servers.end(), sv->hostname) != t.filter_servers.end();
        if (named && !done.count(sv->uuid)) goal.reinstall.insert(sv->uuid);
      }
      break;  // one at a time
    }
    const int max_attempts = std::max(1, PolicyFor(spec, s_.policy).max_attempts);
    std::vector<std::string> skipped_names;
    for (const auto& kv2 : m.install_attempts) {
      if (kv2.second >= max_attempts) goal.skip.insert(kv2.first);
    }
    std::set<std::string> installing;
    std::string running_task;
    for (const JobRecord& j : s_.in_flight) {
      if (j.api == "cnapi" && j.service == svc) {
        installing.insert(j.instance);
        running_task = j.task_uuid;
      }
    }
    AgentPlan plan = PlanAgents(goal, s_.servers);
    // Every set-up server as status -v and `core check` show it.
    {
      std::set<const triton::Server*> selected;
      for (const triton::Server* sp : SelectServers(goal, s_.servers)) selected.insert(sp);
      std::vector<AgentServer>& rows = d_.agent_servers[svc];
      for (const triton::Server& sv : s_.servers) {
        if (!sv.setup) continue;
        AgentServer row;
        row.server = sv.uuid;
        row.hostname = sv.hostname;
        const triton::Agent* a = AgentOn(goal, sv);
        if (a != nullptr) {
          row.version = a->version;
          row.image_uuid = a->image_uuid;
        }
        bool current = AgentCurrent(goal, a);
        auto failure = m.install_failures.find(sv.uuid);
        if (!selected.count(&sv)) row.state = ExcludedBy(goal, sv) ? "excluded" : "not-selected";
        else if (current) row.state = "current";
        else if (installing.count(sv.uuid)) row.state = "installing";
        else if (goal.skip.count(sv.uuid)) row.state = "skipped";
        else if (sv.status != "running") row.state = "unreachable";
        else if (failure != m.install_failures.end()) row.state = "failed";
        else row.state = "outdated";
        if (failure != m.install_failures.end() && (row.state == "skipped" || row.state == "failed")) {
          row.error = failure->second;
        }
        if (row.state == "skipped") skipped_names.push_back(sv.hostname);
        rows.push_back(std::move(row));
      }
      std::sort(skipped_names.begin(), skipped_names.end());
      std::sort(rows.begin(), rows.end(), [](const AgentServer& a, const AgentServer& b) {
        return a.hostname != b.hostname ? a.hostname < b.hostname : a.server < b.server;
      });
    }
    // A step at a time: while installs run, no more start.
    std::vector<std::string> install_on;
    if (installing.empty()) install_on = plan.install_on;
    d_.agent_plans[svc] = plan;
    const TaskRecord* task = nullptr;
    for (const TaskRecord& t : s_.tasks) {
      if (t.kind == "reprovision" && Covers(t, svc) && (t.state == "queued" || t.state == "active") && !Newer(t) &&
          WaitingFor(t).empty()) {
        task = &t;
      }
    }
    std::string frozen = FrozenBy(svc, "agent-rollout");
    bool backoff = now_ < m.install_retry;
    if (task != nullptr && !(plan.install_on.empty() && installing.empty())) busy_tasks_.insert(task->uuid);
    v.desired = plan.selected;
    v.ready = plan.current;
    v.old_spec = plan.outdated;
    if (plan.install_on.empty() && installing.empty()) {
      auto end = [&](const std::string& state, const std::string& note) {
        auto& e = agent_task_ends_[task->uuid];
        if (e.first != "failed") e.first = state;  // one service failing fails the task
        if (!note.empty()) e.second = e.second.empty() ? note : absl::StrCat(e.second, "; ", note);
      };
      if (task != nullptr && plan.skipped > 0) {
        // Not a success: name what was not done.
        end("failed", absl::StrCat(svc, ": ", plan.skipped, " servers skipped after ", max_attempts,
                                   " failed installs each (", absl::StrJoin(skipped_names, ", "), "); last error: ",
                                   m.install_failures.empty() ? "unknown" : m.install_failures.begin()->second));
      } else if (task != nullptr) {
        end("completed", plan.unreachable > 0 ? absl::StrCat(svc, ": ", plan.unreachable,
                                                             " servers were not running and still run another version")
                                              : "");
      }
    } else if (!frozen.empty() || backoff) {
      for (const std::string& server : install_on) {
        d_.held.push_back({Action{ActionKind::kCreate, svc, server, "agent-rollout"},
                           frozen.empty() ? "backoff after a failed install" : frozen});
      }
      hold_reason_.emplace(svc, frozen.empty() ? "backoff after a failed install" : frozen);
    } else if (!install_on.empty()) {
      std::string task_ref;
      if (task != nullptr) {
        task_ref = task->uuid;
        if (task->state == "queued") Change(*task, "active");
      } else {
        TaskRecord t;
        t.project_uuid = s_.project.uuid;
        t.kind = "reprovision";
        t.services = {svc};
        t.origin = "auto";
        t.trigger = "apply";
        t.auto_kind = "agent-rollout";
        t.version_uuid = s_.goal->version_uuid;
        t.actor = "mariposad";
        std::vector<std::string> terminate;
        absl::Status ok = QueueAdmitter()(s_.tasks, &t, &terminate);
        if (!ok.ok() || !t.wait_for.empty()) {
          hold_reason_.emplace(svc, ok.ok() ? "agent rollout waits for another task" : std::string(ok.message()));
          install_on.clear();
        } else {
          task_ref = absl::StrCat("new:", svc);
          d_.new_tasks.push_back(t);
        }
      }
      for (const std::string& server : install_on) {
        d_.installs.push_back({svc, server, image.uuid, absl::StrCat(image.name, " ", image.version), task_ref});
      }
    }
    // The verdict.
    int failing = static_cast<int>(m.install_failures.size());
    if (plan.skipped > 0 && plan.install_on.empty() && installing.empty()) {
      std::string last = m.install_failures.empty() ? "unknown" : m.install_failures.begin()->second;
      v.state = plan.current == 0 ? VerdictState::kFailed : VerdictState::kDegraded;
      v.reason = absl::StrCat(plan.skipped, " servers skipped after ", max_attempts, " failed installs: ",
                              absl::StrJoin(skipped_names, ", "));
      v.fix = absl::StrCat("fix the cause (last: ", last, "), then `mariposa reprovision --service ", svc,
                           "` tries them again");
      Problem("agent-install-failing", svc,
              absl::StrCat("installing ", image.name, " ", image.version, " failed ", max_attempts,
                           " times on each of ", plan.skipped, " servers; they are skipped"),
              last, v.fix,
              absl::StrCat(plan.outdated, " of ", plan.selected, " servers run another version of ", image.name));
    } else if (failing > 0) {
      std::string first = m.install_failures.begin()->second;
      v.state = plan.current == 0 ? VerdictState::kFailed : VerdictState::kDegraded;
      v.reason = absl::StrCat("install failing on ", failing, " of ", plan.selected, " servers (retried with backoff; ",
                              max_attempts, " failures skip a server)");
      v.fix = absl::StrCat("see `mariposa events` (agent.install-failed); fix the cause (last: ", first,
                           "), then `mariposa reprovision --service ", svc, "`");
      Problem("agent-install-failing", svc,
              absl::StrCat("installing ", image.name, " ", image.version, " fails on ", failing, " servers"), first,
              v.fix,
              absl::StrCat(plan.outdated, " of ", plan.selected, " servers run another version of ", image.name));
    } else if (plan.outdated == 0 && plan.reinstall > 0) {  // servers in flight are not done yet
      v.state = VerdictState::kProgressing;
      v.reason = absl::StrCat("reinstalling ", image.version, " (forced): ", plan.reinstall,
                              plan.reinstall == 1 ? " server" : " servers", " to go");
    } else if (plan.outdated == 0) {
      v.state = VerdictState::kConverged;
      v.reason = absl::StrCat(plan.current, "/", plan.selected, " servers at ", image.version);
    } else if (plan.outdated == plan.unreachable) {
      v.state = VerdictState::kDegraded;
      v.reason = absl::StrCat(plan.unreachable, " servers down still run another version");
      v.fix = "they are updated when they come back";
    } else if (!frozen.empty()) {
      v.state = VerdictState::kPaused;
      v.reason = frozen;
      v.fix = absl::StrCat("`mariposa thaw ", svc, "`");
    } else {
      v.state = VerdictState::kProgressing;
      v.reason = absl::StrCat("rolling out: ", plan.current, "/", plan.selected, " servers at ", image.version);
    }
    d_.verdicts[svc] = v;
  }
  for (const auto& kv : agent_task_ends_) {
    if (busy_tasks_.count(kv.first)) continue;
    for (const TaskRecord& t : s_.tasks) {
      if (t.uuid == kv.first) Change(t, kv.second.first, kv.second.second);
    }
  }
}

// The job window: jobs in flight for this project and everywhere.
void Decider::Window() {
  int64_t free = std::min<int64_t>(s_.policy.max_jobs_per_project - static_cast<int64_t>(s_.in_flight.size()),
                                   s_.global_jobs_free);
  free = std::max<int64_t>(0, free);
  int64_t n = static_cast<int64_t>(d_.installs.size() + d_.uninstalls.size() + d_.imports.size());
  std::vector<Step> kept;
  for (Step& st : steps_) {
    if (n < free) {
      kept.push_back(std::move(st));
      ++n;
    } else {
      d_.held.push_back({st.action, absl::StrCat("job window: ", s_.in_flight.size(), " jobs of this project in flight")});
      if (st.action.kind == ActionKind::kCreate) d_.backlog.push_back(std::move(st));
    }
  }
  steps_ = std::move(kept);
}

void Decider::Verdicts() {
  // Counting: removals of broken instances that go ahead now count toward
  // the crash loop when the instance failed its checks or died soon after
  // it was created (a failed provision was counted when its job failed).
  for (const Step& st : steps_) {
    if (!Removes(st.action.kind) || st.action.reason != "remove-broken") continue;
    auto it = by_uuid_.find(st.action.instance);
    const ServiceGoalSpec* g = GoalOf(st.action.service);
    if (it == by_uuid_.end() || g == nullptr) continue;
    const InstanceState& i = *it->second;
    if (i.spec_hash != g->record.spec_hash) continue;
    if (i.state == "running" && i.health == "unhealthy") {
      CrashFailure(i.service, absl::StrCat(i.alias, " failed its health checks"));
    } else if (i.state == "stopped" && now_ - i.created < g->spec.restart_window) {
      CrashFailure(i.service, absl::StrCat(i.alias, " stopped soon after creation"));
    }
  }
  std::set<std::string> active_scope;  // services with work in flight or a task acting
  for (const JobRecord& j : s_.in_flight) active_scope.insert(j.service);
  for (const Step& st : steps_) active_scope.insert(st.action.service);
  for (const AgentInstall& a : d_.installs) active_scope.insert(a.service);
  std::map<std::string, std::string> open_task;  // service -> a non-freeze task open in its scope
  for (const TaskRecord& t : s_.tasks) {
    if (t.kind == "freeze" || t.state == "terminating") continue;
    bool ending = false;
    for (const TaskChange& c : d_.task_changes) {
      ending |= c.task == t.uuid && (c.state == "completed" || c.state == "failed" || c.state == "terminated");
    }
    if (ending) continue;
    if (!s_.goal) continue;
    for (const auto& kv : s_.goal->services) {
      if (Covers(t, kv.first)) open_task.emplace(kv.first, absl::StrCat(t.kind, " task ", t.uuid));
    }
  }
  for (const ApiProblem& a : s_.api_problems) {
    Problem("triton-unreachable", "", absl::StrCat(a.api, " is unreachable at ", a.url),
            absl::StrCat(a.error, " (since ", Stamp(a.since), ")"),
            absl::StrCat("check that ", a.api, " is up (`svcs -xv` in its zone) and reachable from mariposad at ", a.url,
                         "; mariposad retries on its own"),
            absl::StrCat("project ", s_.project.name,
                         ": no instance is created, replaced or removed, and its actual state is unknown until ", a.api,
                         " answers"));
  }
  if (!s_.goal) return;
  for (const auto& kv : s_.goal->services) {
    const std::string& svc = kv.first;
    const ServiceGoalSpec& g = kv.second;
    if (g.spec.compute_type == "agent") continue;
    ServiceVerdict v;
    v.desired = g.record.count;
    v.stopped_by_user = stopped_.count(svc) > 0;
    if (!s_.actual_known) {
      v.state = VerdictState::kUnknown;
      bool pending = s_.api_problems.empty() && s_.observed_at == absl::InfinitePast();
      v.reason = pending ? "not read yet: the project's first sync has not finished" : "VMAPI could not be read";
      v.fix = pending ? "wait a moment; `mariposa events -f` shows the sync's work" : "see the problems below";
      d_.verdicts[svc] = v;
      continue;
    }
    int64_t live = 0, left_broken = 0;
    ServiceGoal goal = GoalFor(g, s_.images);
    for (const InstanceState* i : of_[svc]) {
      bool current = !Outdated(*i, goal);
      if (i->state == "provisioning") {
        ++v.provisioning;
        ++live;
        if (!current) ++v.old_spec;
        continue;
      }
      // A stopped service wants nothing running: a failed VM is as good as a
      // stopped one (it is replaced on `start`). One on a server that does
      // not answer (`unknown`) may still run: that is not stopped.
      if (v.stopped_by_user && (i->state == "stopped" || i->state == "failed")) {
        ++v.stopped;
        continue;
      }
      if (InstanceBroken(*i)) {
        ++v.broken;
        if (i->state == "running") ++v.unhealthy;
        if (!Restarts(goal, *i)) ++left_broken;
        continue;
      }
      if (i->state != "running") continue;
      ++live;
      if (!current) {
        ++v.old_spec;
        if (i->spec_hash == g.record.spec_hash) ++v.stale_meta;
        continue;
      }
      // Ready: the one definition the rollouts use too (InstanceReady):
      // healthy when it has checks, else running for start.window; and so
      // for update.min_healthy_time.
      if (InstanceReady(*i, now_, goal.start_window, goal.min_healthy_time)) ++v.ready;
      else if (i->checked) ++v.checks_pending;
      else ++v.starting;
    }
    auto held = hold_reason_.find(svc);
    auto task = open_task.find(svc);
    const ServiceMemory& m = d_.memory[svc];
    bool paused = m.history.Paused(PolicyFor(g.spec, s_.policy), now_);
    bool acting = active_scope.count(svc) > 0;
    auto image_error = s_.image_errors.find(svc);
    auto spec_error = s_.spec_errors.find(svc);
    if (v.stopped_by_user) {
      bool down = v.provisioning == 0 && live == 0 && v.broken == 0;
      v.state = down && task == open_task.end() ? VerdictState::kConverged : VerdictState::kProgressing;
      v.reason = down ? absl::StrCat("stopped (", v.stopped, " instances)") : "stopping";
      if (down) {
        v.fix = absl::StrCat("`mariposa start ", svc, "` runs it again");
      } else if (live == 0 && v.provisioning == 0 && !acting) {
        v.state = VerdictState::kDegraded;
        v.reason = absl::StrCat(v.broken, " instances on servers that do not answer: not known to be stopped");
        v.fix = "they are stopped when their servers answer again; see `mariposa status -v`";
      }
      d_.verdicts[svc] = v;
      continue;
    }
    if (ImportVerdict(svc, &v)) continue;
    bool exact = v.ready == g.record.count && live == g.record.count && v.old_spec == 0 && v.broken == 0 &&
                 v.provisioning == 0 && v.checks_pending == 0 && v.starting == 0;
    if (exact && task == open_task.end() && held == hold_reason_.end() && !acting) {
      v.state = VerdictState::kConverged;
      v.reason = absl::StrCat(v.ready, "/", g.record.count, " ready");
    } else if (paused) {
      v.state = VerdictState::kPaused;
      v.reason = "crash loop: replacement paused";
      v.fix = absl::StrCat("see `mariposa events` (service.crashlooping) for why instances fail; apply a fixed spec, "
                           "or wait: one attempt is made after restart.window");
      Problem("crash-loop", svc, absl::StrCat("service ", svc, " is crash-looping"), m.pause_reason, v.fix,
              absl::StrCat(v.ready, " of ", g.record.count, " instances ready; no replacement is created until ",
                           Stamp(m.history.last_failure() + g.spec.restart_window)));
    } else if (image_error != s_.image_errors.end() && held != hold_reason_.end() &&
               held->second.rfind("image:", 0) == 0) {
      v.state = VerdictState::kFailed;
      v.reason = absl::StrCat("image ", g.record.image, " not found");
      v.fix = absl::StrCat("import ", g.record.image, " into IMGAPI, or apply a manifest naming an image it has");
      Problem("image-missing", svc, absl::StrCat("image ", g.record.image, " of service ", svc, " is not in IMGAPI"),
              image_error->second, v.fix,
              absl::StrCat(g.record.count - live, " instances of ", svc, " cannot be created; ", live,
                           " keep running"));
    } else if (spec_error != s_.spec_errors.end() && held != hold_reason_.end() && held->second == spec_error->second) {
      // The package, networks or brand cannot be chosen (catalog.h).
      std::string field = spec_error->second.substr(0, spec_error->second.find(':'));
      v.state = VerdictState::kFailed;
      v.reason = spec_error->second;
      v.fix = absl::StrCat("apply a manifest whose ", field, " the data center has (`mariposa diff` checks it first)");
      Problem(absl::StrCat(field, "-unavailable"), svc, absl::StrCat("service ", svc, ": ", spec_error->second),
              spec_error->second, v.fix,
              absl::StrCat(g.record.count - live, " instances of ", svc, " cannot be created; ", live, " keep running"));
    } else if (held != hold_reason_.end() && held->second.rfind("frozen", 0) == 0) {
      v.state = VerdictState::kPaused;
      v.reason = held->second;
      v.fix = absl::StrCat("`mariposa thaw ", svc, "` lets the work go on");
    } else if (held != hold_reason_.end() && held->second.rfind("placement", 0) == 0) {
      v.state = VerdictState::kPaused;
      v.reason = held->second;
      v.fix = "create what the rule points at, or change the rule in the manifest";
      Problem("placement", svc, absl::StrCat("creates of ", svc, " wait for their placement"), held->second, v.fix,
              absl::StrCat(g.record.count - live, " instances of ", svc, " are not created"));
    } else if (held != hold_reason_.end() && held->second.rfind("replacement budget", 0) == 0) {
      v.state = VerdictState::kDegraded;
      v.reason = absl::StrCat(v.broken, " broken; replacement budget spent");
      v.fix = "more replacements are made each interval; many broken at once usually means a server or network "
              "outage: check `sdc-server list`";
      Problem("budget-exceeded", svc, absl::StrCat(v.broken, " broken instances of ", svc), held->second, v.fix,
              absl::StrCat(v.ready, " of ", g.record.count, " ready"));
    } else if (auto p = paused_.find(svc);
               p != paused_.end() && held != hold_reason_.end() && held->second == task_waits_.at(svc)) {
      const TaskRecord& t = *p->second;
      v.state = VerdictState::kPaused;
      v.reason = absl::StrCat("rollout ", t.uuid, " paused by ", t.paused, " (", v.old_spec,
                              " instances on an older spec)");
      v.fix = absl::StrCat("`mariposa resume ", t.uuid, "` continues it");
    } else if (v.old_spec > 0 && !reprovision_task_of_.count(svc) && !acting && v.broken == 0 &&
               v.provisioning == 0) {
      v.state = VerdictState::kDegraded;
      bool manual = g.spec.update_on_change == "manual";
      if (v.stale_meta == v.old_spec) {  // only meta changed (meta_drift.h)
        manual = g.spec.update_on_meta_change == "manual";
        v.reason = absl::StrCat(v.stale_meta, " of ", live, " instances were created with older meta values (the service uses ",
                                absl::StrJoin(g.meta_keys, ", "), "); no rollout is running",
                                manual ? " (update.on_meta_change: manual)" : "");
      } else {
        v.reason = absl::StrCat(v.old_spec, " of ", live, " instances run an older spec; no rollout is running",
                                manual ? " (update.on_change: manual)" : "");
      }
      v.fix = absl::StrCat("`mariposa -j ", s_.project.name, " reprovision --service ", svc, "` replaces them");
      Problem(v.stale_meta == v.old_spec ? "stale-meta" : "older-spec", svc, v.reason,
              manual ? "the service rolls out only when asked (update.on_change / on_meta_change: manual)"
              : g.spec.update_canary > 0
                  ? absl::StrCat("the rollout stopped after its canary (update.canary: ", g.spec.update_canary,
                                 " replacements) to let you check them, or was terminated")
                  : "the rollout that would replace them ended (terminated, or not queued)",
              v.fix, absl::StrCat(v.old_spec, " instances of ", svc, " do not run what the manifest says"));
    } else if (left_broken > 0 && !acting && v.provisioning == 0) {
      v.state = VerdictState::kDegraded;
      std::string when = absl::StrJoin(g.spec.restart_condition, ", ");
      v.reason = absl::StrCat(left_broken, " broken ", left_broken == 1 ? "instance is" : "instances are",
                              " not replaced (restart.condition: ", when, ")");
      v.fix = absl::StrCat("`mariposa -j ", s_.project.name, " start --service ", svc,
                           "` starts stopped ones; destroy a broken one to have it replaced, or add the condition "
                           "to restart.condition");
      Problem("not-restarted", svc, v.reason,
              "restart.condition does not cover how they broke: on-failure covers failed, stopped and unhealthy "
              "instances, on-cn-restart those on a server that does not answer",
              v.fix, absl::StrCat(v.ready, " of ", g.record.count, " instances of ", svc, " ready"));
    } else if (v.unhealthy > 0 && !acting) {
      v.state = VerdictState::kDegraded;
      v.reason = absl::StrCat(v.unhealthy, " unhealthy");
      v.fix = "`mariposa health` shows the failing checks";
    } else {
      v.state = VerdictState::kProgressing;
      std::vector<std::string> parts;
      parts.push_back(absl::StrCat(v.ready, "/", g.record.count, " ready"));
      if (v.provisioning > 0) parts.push_back(absl::StrCat(v.provisioning, " provisioning"));
      if (v.checks_pending > 0) parts.push_back(absl::StrCat(v.checks_pending, " waiting for checks"));
      if (v.starting > 0) {
        parts.push_back(absl::StrCat(v.starting, " starting (ready after ", absl::FormatDuration(goal.start_window),
                                     " up, start.window)"));
      }
      if (v.old_spec > 0) parts.push_back(absl::StrCat(v.old_spec, " on an older spec"));
      if (v.broken > 0) parts.push_back(absl::StrCat(v.broken, " broken"));
      if (held != hold_reason_.end()) parts.push_back(held->second);
      else if (task != open_task.end() && !acting) parts.push_back(task->second);
      v.reason = absl::StrJoin(parts, ", ");
    }
    d_.verdicts[svc] = v;
  }
}

void Decider::Memory() {
  if (!s_.goal) return;
  for (const auto& kv : s_.goal->services) {
    ServiceMemory m;
    auto it = s_.memory.find(kv.first);
    if (it != s_.memory.end() && it->second.spec_hash == kv.second.record.spec_hash) m = it->second;
    m.spec_hash = kv.second.record.spec_hash;
    d_.memory[kv.first] = std::move(m);
  }
}

Decision Decider::Run() {
  Memory();
  FinishedJobs();
  Instances();
  if (!s_.actual_known) {
    Verdicts();
    return std::move(d_);
  }
  if (s_.project.deleting) {
    // Its agents are uninstalled as well (rolling); the project goes when
    // nothing of it is left.
    Uninstalls();
    uninstalled_ = true;
    if (instances_.empty() && d_.leftover == 0 && d_.uninstalls.empty()) {
      d_.delete_project = true;
      d_.converged = true;
      return std::move(d_);
    }
  }
  Tasks();
  Plan();
  StartsDone();
  Hold();
  ScaleTasks();
  Imports();
  Agents();
  if (!uninstalled_) Uninstalls();
  Window();
  Names();  // the creates that go now, then the backlog's
  Verdicts();
  d_.steps = std::move(steps_);
  for (const InstanceState* ip : instances_) {
    const InstanceState& i = *ip;
    if (!s_.goal || !s_.goal->services.count(i.service) || s_.project.deleting) ++d_.leftover;
  }
  Stale();
  bool all = s_.actual_known && d_.leftover == 0;
  for (const auto& kv : d_.verdicts) all = all && kv.second.state == VerdictState::kConverged;
  d_.converged = all;
  return std::move(d_);
}

void Decider::Stale() {
  if (s_.observed_at == absl::InfinitePast() || now_ - s_.observed_at <= s_.policy.stale_after) return;
  std::string age = absl::FormatDuration(absl::Trunc(now_ - s_.observed_at, absl::Seconds(1)));
  std::vector<std::string> slow;
  for (const auto& [api, took] : s_.api_latency) {
    if (took >= absl::Seconds(2)) {
      slow.push_back(absl::StrCat(api, " (its last answer took ",
                                  absl::FormatDuration(absl::Trunc(took, absl::Milliseconds(100))), ")"));
    }
  }
  std::string why = slow.empty() ? "the sync that reads it again has not finished"
                                 : absl::StrCat("Triton answers slowly: ", absl::StrJoin(slow, ", "));
  for (auto& [svc, v] : d_.verdicts) {
    v.state = VerdictState::kUnknown;
    v.reason = absl::StrCat("as of ", age, " ago: ", v.reason);
    v.fix = "the counts are the last observation's; a newer one replaces them when the sync ends";
  }
  Problem("observation-stale", "", absl::StrCat("the actual state of project ", s_.project.name, " was read ", age,
                                                " ago"),
          why,
          slow.empty() ? "wait for the sync; `mariposa events -f` shows what it does"
                       : "check those APIs (`svcs -xv` and the logs in their zones, `sdc-healthcheck`); mariposad keeps "
                         "syncing, and `status` shows the newer state as soon as it is read",
          "verdicts are unknown until then: nothing is claimed converged; instances are still created, replaced and "
          "removed, as slowly as Triton answers");
}

}  // namespace

const char* VerdictName(VerdictState v) {
  switch (v) {
    case VerdictState::kConverged: return "converged";
    case VerdictState::kProgressing: return "progressing";
    case VerdictState::kDegraded: return "degraded";
    case VerdictState::kPaused: return "paused";
    case VerdictState::kFailed: return "failed";
    case VerdictState::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string WorkKind(const Action& a) {
  if (a.kind == ActionKind::kStop || a.kind == ActionKind::kStart) return "";
  if (a.reason == "replace-broken" || a.reason == "remove-broken") return "replace-unhealthy";
  if (a.reason == "reprovision") return "reprovision";
  return "scale";
}

Decision Decide(const Snapshot& s, absl::Time now, PlanCache* cache) { return Decider(s, now, cache).Run(); }

Decision CountFinished(const Snapshot& s, absl::Time now) { return Decider(s, now).RunFinished(); }

}  // namespace mariposa::convergence
