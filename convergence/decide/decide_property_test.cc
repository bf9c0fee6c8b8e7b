// A randomized property test of Decide over simulated time. Each case runs
// a small world — one project, two services, a model of VMAPI with jobs that
// take time and sometimes fail, a task queue with QUEUE.md's admission — for
// a random sequence of user commands (apply, scale, freeze, thaw, terminate,
// stop, start, reprovision) and Triton faults (failed jobs, killed VMs, a
// down server, an unreadable VMAPI), calling Decide at every tick and
// executing its decision against the model. Invariants checked every tick:
//
//   1. no step works for a task that has ended (or is ending);
//   2. no automatic work in a frozen scope;
//   3. `converged` implies actual equals goal;
//   4. creates never take a service above count + max_surge;
//   5. a rollout's deletes never take ready instances below its floor;
//   6. Decide with a PlanCache decides exactly what it decides without;
//   7. discovery follows readiness (an instance is put back only when
//      ready, taken out for not being ready only when it is not), and a
//      freeze holds everything but discovery;
// and at the end, after the faults stop and every freeze is thawed, every
// task has ended and the project converged (liveness).
//
// MARIPOSA_PROPERTY_CASES sets the number of cases (default 2,000); a
// failure prints the seed, and MARIPOSA_PROPERTY_SEED replays one.
#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convergence/decide/decide.h"
#include "convergence/decide/decide_testing.h"
#include "projects/task_queue.h"
#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

using testing::GoalOf;
using testing::kT0;

struct Job {
  JobRecord record;
  absl::Time done_at;
  bool fail = false;
};

class World {
 public:
  explicit World(uint64_t seed) : rng_(seed) {
    counts_ = {{"api", Pick(0, 4)}, {"web", Pick(0, 4)}};
    Apply();
  }

  // One case; returns "" or the first broken invariant.
  std::string Run() {
    int ticks = Pick(20, 60);
    for (int t = 0; t < ticks; ++t) {
      Perturb();
      if (std::string e = Tick(/*faults=*/true); !e.empty()) return e;
    }
    // Calm: faults stop, every freeze is thawed, stopped services started.
    for (TaskRecord& t : tasks_) {
      if (t.kind == "freeze" && Open(t)) t.state = "terminated";
    }
    server_down_ = false;
    for (int t = 0; t < 200; ++t) {
      // The operator follows the verdict's fix: an older spec with no
      // rollout running takes `mariposa reprovision SERVICE`.
      for (const auto& kv : last_.verdicts) {
        if (kv.second.old_spec == 0 || kv.second.state != VerdictState::kDegraded) continue;
        bool open = false;
        for (const TaskRecord& o : tasks_) open |= Open(o) && o.kind == "reprovision";
        if (open) continue;
        TaskRecord r;
        r.kind = "reprovision";
        r.services = {kv.first};
        r.version_uuid = goal_->version_uuid;
        r.actor = "operator";
        Add(r);
      }
      if (std::string e = Tick(/*faults=*/false); !e.empty()) return e;
      if (last_.converged && OpenTasks() == 0 && jobs_.empty()) return "";
    }
    std::vector<std::string> open;
    for (const TaskRecord& t : tasks_) {
      if (Open(t)) open.push_back(absl::StrCat(t.kind, " ", t.uuid, " ", t.state));
    }
    std::string why;
    for (const auto& kv : last_.verdicts) absl::StrAppend(&why, kv.first, ": ", VerdictName(kv.second.state), " ", kv.second.reason, "; ");
    return absl::StrCat("never settled: converged=", last_.converged, " open tasks [", absl::StrJoin(open, ", "),
                        "] jobs ", jobs_.size(), " verdicts ", why, Dump(last_snapshot_, last_));
  }

 private:
  int Pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  static bool Open(const TaskRecord& t) {
    return t.state == "queued" || t.state == "active" || t.state == "terminating";
  }
  int OpenTasks() const {
    int n = 0;
    for (const TaskRecord& t : tasks_) n += Open(t) && t.kind != "freeze";
    return n;
  }

  void Apply() {
    ++version_;
    std::string text = "project: p\nservices:\n";
    for (const auto& kv : counts_) {
      absl::StrAppend(&text, "  ", kv.first, ":\n    image: ", kv.first, "@1\n    count: ", kv.second,
                      "\n    start: {window: 5s}\n    update: {rolling: ", rolling_, ", max_surge: ", surge_,
                      "}\n    tags: {rev: r", spec_rev_[kv.first], "}\n",
                      // web drains before its instances stop or go (decide_discovery.cc)
                      kv.first == "web" ? "    stop: {drain: 12s}\n" : "");
    }
    goal_ = GoalOf(text, version_);
    numbers_[goal_->version_uuid] = version_;
  }

  bool Add(TaskRecord t) {
    t.uuid = absl::StrCat("task-", ++next_task_);
    t.project_uuid = "p-uuid";
    t.created_at = now_;
    t.state = t.kind == "freeze" ? "active" : "queued";
    std::vector<TaskRecord> open;
    for (const TaskRecord& o : tasks_) {
      if (Open(o)) open.push_back(o);
    }
    std::vector<std::string> terminate;
    if (!QueueAdmitter()(open, &t, &terminate).ok()) return false;
    for (TaskRecord& o : tasks_) {
      if (std::find(terminate.begin(), terminate.end(), o.uuid) == terminate.end() || !Open(o)) continue;
      o.state = o.state == "queued" || o.kind == "freeze" ? "terminated" : "terminating";
    }
    tasks_.push_back(t);
    return true;
  }

  std::vector<std::string> Scope() {
    if (Chance(0.3)) return {};
    return {Chance(0.5) ? "api" : "web"};
  }

  bool Frozen(const std::vector<std::string>& scope) {
    for (const TaskRecord& t : tasks_) {
      if (!Open(t) || t.kind != "freeze") continue;
      if (scope.empty() || t.services.empty()) return true;
      for (const std::string& s : scope) {
        if (FreezeHolds(t, s, "")) return true;
      }
    }
    return false;
  }

  void Perturb() {
    int r = Pick(0, 99);
    if (r < 8) {  // apply: a count or spec change (refused in a frozen scope, as the API does)
      std::string svc = Chance(0.5) ? "api" : "web";
      if (Frozen({svc})) return;
      if (Chance(0.5)) counts_[svc] = Pick(0, 5);
      else spec_rev_[svc]++;
      if (Chance(0.2)) surge_ = Pick(0, 2), rolling_ = Pick(1, 3);
      Apply();
    } else if (r < 12) {
      TaskRecord t;
      t.kind = "freeze";
      t.services = Scope();
      t.actor = "alice";
      Add(t);
    } else if (r < 16) {  // thaw
      for (TaskRecord& t : tasks_) {
        if (t.kind == "freeze" && Open(t) && Chance(0.7)) t.state = "terminated";
      }
    } else if (r < 20) {  // terminate an open task (freezes its scope, as TaskQueue::Terminate)
      std::vector<TaskRecord*> open;
      for (TaskRecord& t : tasks_) {
        if (Open(t) && t.kind != "freeze" && t.state != "terminating") open.push_back(&t);
      }
      if (open.empty()) return;
      TaskRecord* victim = open[Pick(0, static_cast<int>(open.size()) - 1)];
      TaskRecord f;
      f.kind = "freeze";
      f.services = victim->services;
      f.actor = "bob";
      f.trigger = "terminate";
      if (!Add(f)) return;
      if (Open(*victim)) victim->state = victim->state == "queued" ? "terminated" : "terminating";
    } else if (r < 28) {  // stop, start, reprovision (user tasks; refused when frozen)
      TaskRecord t;
      t.kind = r < 22 ? "stop" : r < 24 ? "start" : "reprovision";
      t.services = Scope();
      if ((t.kind == "stop" || t.kind == "start") && t.services.empty()) t.services = {"api", "web"};
      if (Frozen(t.services)) return;
      t.version_uuid = goal_->version_uuid;
      t.actor = "alice";
      if (t.kind == "reprovision" && Chance(0.3)) t.canary = Pick(1, 2);
      Add(t);
    } else if (r < 33) {  // kill a VM
      if (vms_.empty()) return;
      auto it = vms_.begin();
      std::advance(it, Pick(0, static_cast<int>(vms_.size()) - 1));
      if (it->second.state == "running") it->second.state = Chance(0.5) ? "stopped" : "failed";
    } else if (r < 35) {
      server_down_ = !server_down_;
    }
  }

  // The model's view, as Gather would read it.
  Snapshot Observe(bool faults) {
    Snapshot s;
    s.project.uuid = "p-uuid";
    s.project.name = "p";
    s.project.current_version = goal_->version_uuid;
    s.project.current_number = version_;
    s.project.stopped = stopped_;
    s.goal = goal_;
    s.version_numbers = numbers_;
    for (const auto& kv : goal_->services) s.images[kv.first] = triton::Image{"img", kv.first, "1", "active"};
    s.actual_known = !(faults && Chance(0.05));
    if (!s.actual_known) s.api_problems = {{"VMAPI", "http://127.0.0.1:1", "refused", now_}};
    for (const auto& kv : vms_) {
      InstanceState i = kv.second;
      if (server_down_ && i.server_uuid == "cn-down" && i.state == "running") i.state = "unknown";
      if (s.actual_known) s.instances.push_back(i);
    }
    for (const TaskRecord& t : tasks_) {
      if (Open(t)) s.tasks.push_back(t);
    }
    s.memory = memory_;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (s.actual_known && it->done_at <= now_) {
        s.finished.push_back({it->record, !it->fail, it->fail ? "provision failed" : ""});
        Land(*it);
        it = jobs_.erase(it);
      } else {
        s.in_flight.push_back(it->record);
        ++it;
      }
    }
    s.policy.max_jobs_per_project = 8;
    s.jitter = 0.5;
    return s;
  }

  // A job's effect on the model when it ends.
  void Land(const Job& j) {
    auto it = vms_.find(j.record.instance);
    if (j.record.kind == "create" && it != vms_.end()) it->second.state = j.fail ? "failed" : "running";
    if (j.fail) return;
    if (j.record.kind == "delete") vms_.erase(j.record.instance);
    if (j.record.kind == "stop" && it != vms_.end()) it->second.state = "stopped";
    if (j.record.kind == "start" && it != vms_.end()) it->second.state = "running";
    if (j.record.kind == "discovery" && it != vms_.end()) ApplyDiscoveryChange(j.record.reason, now_, &it->second);
  }

  std::string Check(const Snapshot& s, const Decision& d) {
    std::map<std::string, const TaskRecord*> by_uuid;
    for (const TaskRecord& t : tasks_) by_uuid[t.uuid] = &t;
    std::map<std::string, int64_t> live, creates, ready_after, ready_deletes;
    std::set<std::string> ready, deleting;  // ready instances; instances a reprovision deletes
    for (const InstanceState& i : s.instances) {
      if (i.state == "running" || i.state == "provisioning") live[i.service]++;
      const auto& g = goal_->services.find(i.service);
      if (g != goal_->services.end() && i.state == "running" && now_ - i.created >= g->second.spec.start_window) {
        ready.insert(i.uuid);
      }
    }
    for (const JobRecord& j : s.in_flight) {
      if (j.kind == "delete" && j.reason == "reprovision") deleting.insert(j.instance);
    }
    for (const Step& st : d.steps) {
      // 1. no work for an ended task
      if (!st.task.empty() && st.task.rfind("new:", 0) != 0) {
        auto t = by_uuid.find(st.task);
        if (t == by_uuid.end() || t->second->state == "terminated" || t->second->state == "completed" ||
            t->second->state == "failed" || t->second->state == "terminating") {
          return absl::StrCat("step for ended task ", st.task, " (", t == by_uuid.end() ? "?" : t->second->state, ")");
        }
      }
      // 3. discovery follows readiness: back in only when ready, out for
      // not being ready only when it is not
      if (st.action.kind == ActionKind::kDiscovery) {
        bool is_ready = ready.count(st.action.instance) > 0;
        if (st.action.reason == "up: ready" && !is_ready) return absl::StrCat("up for ", st.action.instance, " not ready");
        if (absl::StartsWith(st.action.reason, "down: not ready") && is_ready) {
          return absl::StrCat("down for ", st.action.instance, " ready");
        }
        continue;  // a freeze holds changes to a service, not its discovery
      }
      // 2. no automatic work in a frozen scope
      for (const TaskRecord& t : s.tasks) {
        if (FreezeHolds(t, st.action.service, WorkKind(st.action))) {
          return absl::StrCat("step ", st.action.reason, " on ", st.action.service, " while frozen by ", t.uuid);
        }
      }
      if (st.action.kind == ActionKind::kCreate) creates[st.action.service]++;
      if (st.action.kind == ActionKind::kDelete && st.action.reason == "reprovision") {
        deleting.insert(st.action.instance);
        ready_deletes[st.action.service] += ready.count(st.action.instance);
      }
    }
    for (const InstanceState& i : s.instances) {
      if (ready.count(i.uuid) && !deleting.count(i.uuid)) ready_after[i.service]++;
    }
    for (const auto& kv : goal_->services) {
      const ServiceSpec& spec = kv.second.spec;
      int64_t count = kv.second.record.count;
      // 4. never above count + max_surge by creating
      if (creates[kv.first] > 0 && live[kv.first] + creates[kv.first] > count + spec.update_max_surge) {
        return absl::StrCat(kv.first, ": ", live[kv.first], " live + ", creates[kv.first], " creates > count ", count,
                            " + surge ", spec.update_max_surge);
      }
      // 5. rollout floor
      int64_t floor = spec.update_max_surge > 0 ? count : count - std::max(1, spec.update_rolling);
      // (deleting an instance that is not ready takes nothing away)
      if (ready_deletes[kv.first] > 0 && ready_after[kv.first] < floor) {
        return absl::StrCat(kv.first, ": reprovision deletes ", ready_deletes[kv.first], " ready instances, leaving ",
                            ready_after[kv.first], " below floor ", floor);
      }
    }
    // 3. converged implies actual equals goal (stopped as this decision
    // leaves it: a stop task it starts counts)
    std::set<std::string> stopped = stopped_;
    for (const TaskChange& c : d.task_changes) {
      for (const TaskRecord& t : tasks_) {
        if (t.uuid != c.task || t.state != "queued" || c.state != "active") continue;
        for (const std::string& svc : t.services) {
          if (t.kind == "stop") stopped.insert(svc);
          if (t.kind == "start") stopped.erase(svc);
        }
      }
    }
    if (d.converged) {
      for (const auto& kv : goal_->services) {
        int64_t want = stopped.count(kv.first) ? 0 : kv.second.record.count;
        int64_t at_spec = 0;
        for (const InstanceState& i : s.instances) {
          if (i.service != kv.first) continue;
          if (i.state == "running" && i.spec_hash == kv.second.record.spec_hash) ++at_spec;
          else if (!(stopped.count(kv.first) && (i.state == "stopped" || i.state == "failed"))) {
            return absl::StrCat("converged with ", i.alias, " ", i.state, stopped.count(kv.first) ? " (service stopped)" : "");
          }
        }
        if (at_spec != want) return absl::StrCat("converged with ", at_spec, " of ", want, " ", kv.first);
      }
    }
    return "";
  }

  // Executes the decision against the model.
  void Execute(const Decision& d) {
    memory_ = d.memory;
    std::map<std::string, std::string> new_ids;
    for (const TaskChange& c : d.task_changes) {
      for (TaskRecord& t : tasks_) {
        if (t.uuid != c.task || !Open(t)) continue;
        if ((t.kind == "stop" || t.kind == "start") && t.state == "queued" && c.state == "active") {
          for (const std::string& svc : t.services) {
            if (t.kind == "stop") stopped_.insert(svc);
            else stopped_.erase(svc);
          }
        }
        t.state = c.state;
        t.error = c.note;
      }
    }
    for (const TaskRecord& t : d.new_tasks) {
      std::string ref = absl::StrCat("new:", t.services.front());
      if (Add(t)) {
        TaskRecord& added = tasks_.back();
        if (added.wait_for.empty()) {
          added.state = "active";
          new_ids[ref] = added.uuid;
        }
      }
    }
    for (const Step& st : d.steps) {
      JobRecord j;
      j.job_uuid = absl::StrCat("job-", ++next_job_);
      j.api = "vmapi";
      j.task_uuid = st.task;
      if (st.task.rfind("new:", 0) == 0) {
        auto it = new_ids.find(st.task);
        if (it == new_ids.end()) continue;
        j.task_uuid = it->second;
      }
      j.service = st.action.service;
      j.reason = st.action.reason;
      j.sent_at = now_;
      if (st.action.kind == ActionKind::kCreate) {
        j.kind = "create";
        InstanceState i;
        i.uuid = absl::StrCat("vm-", ++next_vm_);
        i.service = st.action.service;
        i.alias = st.alias;
        i.state = "provisioning";
        i.health = "unknown";
        i.spec_hash = goal_->services.at(i.service).record.spec_hash;
        i.cns = CnsTagValue("p", i.service, goal_->services.at(i.service).spec);  // its create's tag
        i.version = version_;
        i.version_uuid = goal_->version_uuid;
        i.created = now_;
        i.server_uuid = Chance(0.2) ? "cn-down" : "cn-1";
        if (!i.cns.empty()) {  // made out of CNS's records until ready (as the sender makes it)
          i.cns_down = true;
          i.discovery = DiscoveryHoldValue(now_, "not ready: created");
        }
        vms_[i.uuid] = i;
        j.instance = i.uuid;
        j.alias = i.alias;
      } else {
        j.kind = st.action.kind == ActionKind::kDelete      ? "delete"
                 : st.action.kind == ActionKind::kStop      ? "stop"
                 : st.action.kind == ActionKind::kDiscovery ? "discovery"
                                                            : "start";
        j.instance = st.action.instance;
      }
      jobs_.push_back({j, now_ + absl::Seconds(Pick(1, 8)), faults_now_ && j.kind == "create" && Chance(0.15)});
    }
  }

  static std::string SameSteps(const Decision& a, const Decision& b) {
    auto text = [](const Decision& d) {
      std::string out;
      for (const Step& st : d.steps) {
        absl::StrAppend(&out, static_cast<int>(st.action.kind), " ", st.action.service, " ", st.action.instance, " ",
                        st.action.reason, " ", st.alias, " ", st.task, "; ");
      }
      absl::StrAppend(&out, "| held ", d.held.size());
      return out;
    };
    return text(a) == text(b) ? "" : absl::StrCat("without: ", text(a), "\n  with: ", text(b));
  }

  // The world at a broken invariant, for MARIPOSA_PROPERTY_SEED replays.
  std::string Dump(const Snapshot& s, const Decision& d) const {
    if (std::getenv("MARIPOSA_PROPERTY_SEED") == nullptr) return "";
    std::string out = absl::StrCat("\n  now +", absl::FormatDuration(now_ - kT0), " goal v", version_, "\n");
    for (const auto& kv : goal_->services) {
      absl::StrAppend(&out, "  service ", kv.first, " count ", kv.second.record.count, " spec ",
                      kv.second.record.spec_hash.substr(0, 6), " rolling ", kv.second.spec.update_rolling, " surge ",
                      kv.second.spec.update_max_surge, "\n");
    }
    for (const InstanceState& i : s.instances) {
      absl::StrAppend(&out, "  vm ", i.alias, " ", i.uuid, " ", i.state, " spec ", i.spec_hash.substr(0, 6), " age ",
                      absl::FormatDuration(now_ - i.created), "\n");
    }
    for (const JobRecord& j : s.in_flight) absl::StrAppend(&out, "  job ", j.kind, " ", j.instance, " ", j.reason, " task ", j.task_uuid, "\n");
    for (const FinishedJob& f : s.finished) absl::StrAppend(&out, "  finished ", f.job.kind, " ", f.job.instance, " ok ", f.ok, "\n");
    for (const TaskRecord& t : s.tasks) absl::StrAppend(&out, "  task ", t.uuid, " ", t.kind, " ", t.state, " [", absl::StrJoin(t.services, ","), "]\n");
    for (const Step& st : d.steps) {
      absl::StrAppend(&out, "  step ", st.action.kind == ActionKind::kCreate ? "create" : st.action.kind == ActionKind::kDelete ? "delete" : "run", " ",
                      st.action.service, " ", st.action.instance, " ", st.action.reason, " task ", st.task, "\n");
    }
    for (const auto& kv : d.verdicts) absl::StrAppend(&out, "  verdict ", kv.first, " ", VerdictName(kv.second.state), " ", kv.second.reason, "\n");
    return out;
  }

  std::string Tick(bool faults) {
    faults_now_ = faults;
    Snapshot s = Observe(faults);
    last_ = Decide(s, now_);
    last_snapshot_ = s;
    // 6. the plan cache changes nothing: the same decision with it.
    Decision cached = Decide(s, now_, &cache_);
    if (std::string e = SameSteps(last_, cached); !e.empty()) return absl::StrCat("with the plan cache: ", e);
    if (std::string e = Check(s, last_); !e.empty()) return absl::StrCat(e, Dump(s, last_));
    Execute(last_);
    now_ += absl::Seconds(Pick(1, 10));
    return "";
  }

  std::mt19937_64 rng_;
  absl::Time now_ = kT0;
  std::map<std::string, int> counts_;
  std::map<std::string, int> spec_rev_;
  int rolling_ = 1, surge_ = 1;
  int64_t version_ = 0;
  std::shared_ptr<const ProjectGoal> goal_;
  std::map<std::string, int64_t> numbers_;
  std::map<std::string, InstanceState> vms_;
  std::vector<TaskRecord> tasks_;
  std::set<std::string> stopped_;
  std::map<std::string, ServiceMemory> memory_;
  std::vector<Job> jobs_;
  bool server_down_ = false, faults_now_ = false;
  int next_task_ = 0, next_job_ = 0, next_vm_ = 0;
  Decision last_;
  Snapshot last_snapshot_;
  PlanCache cache_;
};

TEST(DecidePropertyTest, InvariantsHoldOverRandomHistories) {
  int cases = 2000;
  if (const char* n = std::getenv("MARIPOSA_PROPERTY_CASES")) cases = std::atoi(n);
  uint64_t first = 1;
  if (const char* seed = std::getenv("MARIPOSA_PROPERTY_SEED")) {
    first = std::strtoull(seed, nullptr, 10);
    cases = 1;
  }
  int failures = 0;
  for (uint64_t seed = first; seed < first + static_cast<uint64_t>(cases); ++seed) {
    std::string e = World(seed).Run();
    if (!e.empty()) {
      ADD_FAILURE() << "seed " << seed << ": " << e;
      if (++failures >= 5) break;
    }
  }
}

}  // namespace
}  // namespace mariposa::convergence
