// Scheduled and event services (service_type scheduled | event): each run
// is a task of kind "run". A due schedule adds one (or records it skipped
// or missed); an active run creates `count` instances tagged with it, ends
// when they have all exited, and records its outcome; the instances of
// finished runs are removed, but for the last run.history ones. The habits
// of Kubernetes CronJobs and Nomad periodic jobs.
#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convergence/decide/decider.h"
#include "projects/cron.h"

namespace mariposa::convergence::decide_internal {
namespace {

bool Live(const InstanceState& i) { return i.state == "running" || i.state == "provisioning"; }

// What the queued runs of a service do now, oldest first, under its
// run.concurrency: start, wait, or end (missed, skipped, replaced).
struct RunStarts {
  std::vector<TaskChange> changes;
  std::string held;                  // why a run waits
  std::set<std::string> active;      // runs active after this decision
  std::set<std::string> replaced;    // active runs a newer one replaced
};

RunStarts StartRuns(const std::vector<const TaskRecord*>& open, const ServiceSpec& spec, const std::string& frozen,
                    const std::function<bool(const TaskRecord&)>& newer, std::set<std::string> active) {
  RunStarts out;
  for (const TaskRecord* t : open) {
    if (t->state != "queued" || newer(*t)) continue;
    if (t->trigger == "missed") {
      out.changes.push_back({t->uuid, "terminated", absl::StrCat("missed: ", t->reason, " (run.starting_deadline ",
                                                                 FormatManifestDuration(spec.run_starting_deadline), ")")});
      continue;
    }
    if (!frozen.empty()) {
      out.held = frozen;
      continue;
    }
    if (!active.empty() && spec.run_concurrency == "forbid") {
      if (t->origin == "auto") {
        out.changes.push_back({t->uuid, "terminated", absl::StrCat("skipped: run ", *active.begin(),
                                                                   " is still active (run.concurrency: forbid)")});
      } else {
        out.held = absl::StrCat("run ", t->uuid, " waits for run ", *active.begin(), " (run.concurrency: forbid)");
      }
      continue;
    }
    if (!active.empty() && spec.run_concurrency == "replace") {
      for (const std::string& old : active) {
        for (const TaskRecord* o : open) {
          if (o->uuid == old) {
            out.changes.push_back({o->uuid, "terminated",
                                   absl::StrCat("replaced by run ", t->uuid, " (run.concurrency: replace)")});
          }
        }
        out.replaced.insert(old);
      }
      active.clear();
    }
    out.changes.push_back({t->uuid, "active", ""});
    active.insert(t->uuid);
  }
  out.active = std::move(active);
  return out;
}

// An active run's instances: made (or being made), ended, still live, and
// why those that ended did not exit 0.
struct RunProgress {
  int64_t in_flight = 0, made = 0, ended = 0, live = 0;
  std::vector<std::string> bad;
};

RunProgress ProgressOf(const TaskRecord& t, const std::vector<const InstanceState*>& mine,
                       const std::vector<JobRecord>& jobs_in_flight) {
  RunProgress p;
  for (const JobRecord& j : jobs_in_flight) p.in_flight += j.task_uuid == t.uuid && j.kind == "create";
  p.made = std::max<int64_t>(t.created + t.failed + p.in_flight, static_cast<int64_t>(mine.size()));
  for (const InstanceState* i : mine) {
    if (Live(*i)) {
      ++p.live;
      continue;
    }
    ++p.ended;
    if (i->state == "stopped" && i->exit_status == 0) continue;
    p.bad.push_back(i->state == "stopped" && i->exit_status > 0 ? absl::StrCat(i->alias, " exited ", i->exit_status)
                    : i->state == "stopped"                    ? absl::StrCat(i->alias, " stopped without exiting")
                                                               : absl::StrCat(i->alias, " is ", i->state));
  }
  return p;
}

// A schedule looks back at most this far for a fire time it has not acted
// on (mariposad down for longer runs the latest one only, as cron does).
constexpr absl::Duration kLookBack = absl::Hours(24 * 7);

// A due fire time of the schedule not acted on yet adds its run (origin
// auto, trigger schedule; trigger missed when later than
// run.starting_deadline); a freeze holds it until thawed.
std::optional<TaskRecord> Schedule(const ProjectFacts& f, const std::string& svc, const ServiceGoalSpec& g,
                                   RunsView* view) {
  const ServiceSpec& spec = g.spec;
  auto cron = ParseCron(spec.schedule);
  absl::TimeZone tz;
  if (!cron.ok() || !absl::LoadTimeZone(spec.time_zone, &tz)) return std::nullopt;  // checked at apply
  view->next = NextFire(*cron, tz, f.now);
  absl::Time since = f.s.goal->created_at;  // a new schedule does not run for times before it was applied
  auto later = [&](const TaskRecord& t) {
    if (t.kind == "run" && t.origin == "auto" && !t.services.empty() && t.services[0] == svc) {
      since = std::max(since, t.created_at);
    }
  };
  for (const TaskRecord& t : f.s.tasks) later(t);
  for (const TaskRecord& t : f.s.finished_runs) later(t);
  if (since == absl::InfinitePast()) since = f.now - kLookBack;
  since = std::max(since, f.now - kLookBack);
  std::optional<absl::Time> due = LastFire(*cron, tz, f.now, f.now - since - absl::Nanoseconds(1));
  if (!due || *due <= since) return std::nullopt;
  if (std::string frozen = f.FrozenBy(svc, "run"); !frozen.empty()) {
    view->held = absl::StrCat("the run due at ", Stamp(*due), " waits: ", frozen);
    return std::nullopt;
  }
  TaskRecord t = f.AutoTask("run", svc, "run");
  t.reason = absl::StrCat("scheduled for ", Stamp(*due));
  const absl::Duration late = f.now - *due;
  t.trigger = spec.run_starting_deadline > absl::ZeroDuration() && late > spec.run_starting_deadline ? "missed"
                                                                                                    : "schedule";
  if (t.trigger == "missed") {
    absl::StrAppend(&t.reason, ", ", FormatManifestDuration(absl::Trunc(late, absl::Seconds(1))), " late");
  }
  return t;
}

// The instances of finished runs that go: every run's but those `keep`
// names, and but those of runs still open (queued or active) that do not
// end now.
void CleanUpRuns(const ProjectFacts& f, const std::string& svc,
                 const std::map<std::string, std::vector<const InstanceState*>>& of_run, const std::set<std::string>& keep,
                 const std::set<std::string>& open, const std::set<std::string>& ends, std::vector<Action>* planned) {
  for (const auto& [run, instances] : of_run) {
    if (keep.count(run) || (open.count(run) && !ends.count(run))) continue;
    for (const InstanceState* i : instances) {
      if (f.job_on.count(i->uuid) || i->state == "destroyed") continue;
      Action a{ActionKind::kDelete, svc, i->uuid, "run-cleanup"};
      a.run = run;
      planned->push_back(a);
    }
  }
}

}  // namespace

void Decider::Runs() {
  if (!f_.s.goal || f_.s.project.deleting) return;
  for (const auto& [svc, g] : f_.s.goal->services) {
    if (!RunsToCompletion(g.spec)) continue;
    RunsOutcome o = DecideRuns(f_, svc, g);
    d_.runs[svc] = std::move(o.view);
    Append(std::move(o.task_changes), &d_.task_changes);
    Append(std::move(o.planned), &planned_);
    Append(std::move(o.new_tasks), &d_.new_tasks);
  }
}

RunsOutcome DecideRuns(const ProjectFacts& f, const std::string& svc, const ServiceGoalSpec& g) {
  RunsOutcome out;
  RunsView& view = out.view;
  const ServiceSpec& spec = g.spec;
  const int64_t count = std::max<int64_t>(1, g.record.count);
  std::vector<const TaskRecord*> open;  // the service's queued and active runs, oldest first
  for (const TaskRecord& t : f.s.tasks) {
    if (t.kind == "run" && !t.services.empty() && t.services[0] == svc && (t.state == "queued" || t.state == "active")) {
      open.push_back(&t);
    }
  }
  std::sort(open.begin(), open.end(), [](const TaskRecord* a, const TaskRecord* b) { return a->created_at < b->created_at; });
  std::map<std::string, std::vector<const InstanceState*>> of_run;
  for (const InstanceState* i : f.Of(svc)) of_run[i->run].push_back(i);
  std::set<std::string> active;
  for (const TaskRecord* t : open) {
    if (t->state == "active") active.insert(t->uuid);
  }
  // Queued runs start, under the service's concurrency policy.
  RunStarts starts = StartRuns(open, spec, f.FrozenBy(svc, "run"), [&](const TaskRecord& t) { return f.Newer(t); },
                               std::move(active));
  for (TaskChange& c : starts.changes) out.task_changes.push_back(std::move(c));
  if (!starts.held.empty()) view.held = starts.held;
  active = std::move(starts.active);
  const std::set<std::string>& replaced = starts.replaced;
  // Active runs: their creates, deadline, end and outcome.
  std::set<std::string> ending = replaced;  // runs this decision stops: their instances go
  struct Ended {
    std::string uuid, state, note;
  };
  std::vector<Ended> ended_now;  // runs that end now, oldest first: their outcome
  for (const TaskRecord* t : open) {
    if (!active.count(t->uuid) || (t->state != "active" && t->state != "queued")) continue;
    const std::vector<const InstanceState*>& mine = of_run[t->uuid];
    RunProgress p = ProgressOf(*t, mine, f.s.in_flight);
    const int64_t made = p.made, ended = p.ended, live = p.live, in_flight = p.in_flight;
    std::vector<std::string>& bad = p.bad;
    const bool started = t->state == "active" && t->started_at != absl::InfinitePast();
    if (started && spec.run_deadline > absl::ZeroDuration() && f.now - t->started_at > spec.run_deadline) {
      std::string note = absl::StrCat("run.deadline ", FormatManifestDuration(spec.run_deadline), " passed with ", live,
                                      " of ", count, " instances still running; they are removed");
      out.task_changes.push_back({t->uuid, "failed", note});
      ended_now.push_back({t->uuid, "failed", note});
      ending.insert(t->uuid);
      continue;
    }
    if (made < count) {
      for (int64_t k = made; k < count; ++k) {
        Action a{ActionKind::kCreate, svc, "", "run"};
        a.run = t->uuid;
        out.planned.push_back(a);
      }
    }
    // Done when every create was sent and answered, every instance made is
    // seen (a finished create shows in the next listing), and none runs.
    bool done = made >= count && in_flight == 0 && live == 0 && static_cast<int64_t>(mine.size()) >= t->created;
    if (!done) {
      view.active.push_back(absl::StrCat(t->uuid, ": ", ended, "/", count, " ended"));
      continue;
    }
    if (t->failed > 0) bad.push_back(absl::StrCat(t->failed, " instances could not be created"));
    std::string note = bad.empty() ? absl::StrCat(count, "/", count, " exited 0")
                                   : absl::StrCat(bad.size(), " of ", count, " did not exit 0: ", absl::StrJoin(bad, "; "));
    out.task_changes.push_back({t->uuid, bad.empty() ? "completed" : "failed", note});
    ended_now.push_back({t->uuid, bad.empty() ? "completed" : "failed", note});
  }
  // Finished runs' instances go, but for those of the last run.history
  // succeeded and failed runs (kept stopped, for inspection); a run stopped
  // by its deadline or replaced keeps nothing running.
  std::set<std::string> keep = active;
  for (const Ended& e : ended_now) keep.erase(e.uuid);
  int succeeded = 0, failed = 0;
  auto history = [&](const std::string& uuid, const std::string& state, absl::Time at, const std::string& note) {
    if (view.last.empty()) {
      view.last = absl::StrCat(uuid, " ", state, " ", Stamp(at), note.empty() ? "" : ": " + note);
      view.last_state = state;
    }
    if (ending.count(uuid)) return;  // stopped: nothing of it stays running
    if (state == "completed" && succeeded++ < spec.run_keep_succeeded) keep.insert(uuid);
    if (state == "failed" && failed++ < spec.run_keep_failed) keep.insert(uuid);
  };
  for (auto it = ended_now.rbegin(); it != ended_now.rend(); ++it) history(it->uuid, it->state, f.now, it->note);
  for (const TaskRecord& t : f.s.finished_runs) {  // newest first
    if (!t.services.empty() && t.services[0] == svc) history(t.uuid, t.state, t.finished_at, t.error);
  }
  std::set<std::string> open_ids, ends = ending;
  for (const TaskRecord* t : open) open_ids.insert(t->uuid);
  for (const Ended& e : ended_now) ends.insert(e.uuid);
  CleanUpRuns(f, svc, of_run, keep, open_ids, ends, &out.planned);
  if (spec.service_type == "scheduled") {
    if (std::optional<TaskRecord> due = Schedule(f, svc, g, &view)) out.new_tasks.push_back(std::move(*due));
  }
  return out;
}

ServiceVerdict RunVerdict(const ProjectFacts& f, const std::string& svc, const RunsView& r) {
  ServiceVerdict v;
  v.desired = 0;
  for (const InstanceState* i : f.Of(svc)) {
    if (i->state == "provisioning") ++v.provisioning;
  }
  std::string next = r.next ? absl::StrCat("next run ", Stamp(*r.next)) : "runs on `mariposa run " + svc + "`";
  if (!r.active.empty()) {
    v.state = VerdictState::kProgressing;
    v.reason = absl::StrCat("run ", absl::StrJoin(r.active, ", run "));
  } else if (r.last_state == "failed") {
    v.state = VerdictState::kDegraded;
    v.reason = absl::StrCat("last run ", r.last);
    v.fix = absl::StrCat("`mariposa queue get ", r.last.substr(0, r.last.find(' ')),
                         "` shows the run; fix the job and `mariposa run ", svc, "`, or wait: ", next);
  } else {
    v.state = VerdictState::kConverged;
    v.reason = r.last.empty() ? absl::StrCat("no run yet; ", next) : absl::StrCat("last run ", r.last, "; ", next);
  }
  if (!r.held.empty()) v.reason = absl::StrCat(v.reason, "; held: ", r.held);
  return v;
}

}  // namespace mariposa::convergence::decide_internal
