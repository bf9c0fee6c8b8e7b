// Agent services (compute_type: agent): each service's rollout of its image
// to the servers it selects is decided by itself (DecideAgentService), from
// the project's facts and its own memory; the project level merges the
// outcomes, ends the tasks no service works on any more (EndAgentTasks),
// imports images (DecideImports) and uninstalls the agents of services that
// left the manifest (DecideUninstalls).
#include "convergence/decide/decider.h"

namespace mariposa::convergence::decide_internal {

UninstallOutcome DecideUninstalls(const ProjectFacts& f) {
  UninstallOutcome out;
  for (const auto& [svc, agent] : f.s.removed_agents) {
    if (!f.s.servers_known) {
      ++out.leftover;  // not known to be gone
      continue;
    }
    bool going = false;
    for (const JobRecord& j : f.s.in_flight) going |= j.api == "cnapi" && j.kind == "uninstall" && j.service == svc;
    std::vector<const triton::Server*> todo;
    AgentGoal selection;
    selection.name = agent.name;
    selection.select = agent.select;
    selection.servers = agent.servers;
    selection.exclude = agent.exclude;
    for (const triton::Server* sp : SelectServers(selection, f.s.servers)) {
      const triton::Server& sv = *sp;
      bool has = false;
      for (const triton::Agent& a : sv.agents) has |= a.name == agent.name;
      if (!has) continue;
      ++out.leftover;
      if (sv.status == "running") todo.push_back(&sv);
    }
    std::string frozen = f.FrozenBy(svc, "agent-rollout");
    if (going || todo.empty()) continue;
    std::sort(todo.begin(), todo.end(), [](const triton::Server* a, const triton::Server* b) {
      return a->hostname != b->hostname ? a->hostname < b->hostname : a->uuid < b->uuid;
    });
    for (size_t i = 0; i < todo.size() && static_cast<int>(i) < std::max(1, agent.rolling); ++i) {
      if (!frozen.empty()) {
        out.held.push_back({Action{ActionKind::kDelete, svc, todo[i]->uuid, "service-removed"}, frozen});
        continue;
      }
      out.uninstalls.push_back({svc, todo[i]->uuid, agent.name});
    }
  }
  return out;
}

// Images only in the source: one import per image at a time, for the open
// task that needs it; a failed import is tried again after a backoff.
std::vector<ImageImport> DecideImports(const ProjectFacts& f, const std::map<std::string, ServiceMemory>& memory) {
  std::vector<ImageImport> out;
  std::set<std::string> going;
  for (const JobRecord& j : f.s.in_flight) {
    if (j.api == "imgapi") going.insert(j.instance);
  }
  for (const auto& [svc, im] : f.s.imports) {
    if (!going.insert(im.uuid).second) continue;  // in flight, or asked for by another service
    auto m = memory.find(svc);
    if (m != memory.end() && f.now < m->second.import_retry) {
      going.erase(im.uuid);
      continue;
    }
    std::string task;
    for (const TaskRecord& t : f.s.tasks) {
      if (Covers(t, svc) && (t.state == "queued" || t.state == "active") && f.WaitingFor(t).empty()) {
        task = t.uuid;
        break;
      }
    }
    out.push_back({im.uuid, absl::StrCat(im.name, "@", im.version), im.source, im.size, svc, task});
  }
  return out;
}

std::vector<TaskChange> EndAgentTasks(const ProjectFacts& f, const std::map<std::string, TaskChange>& ends,
                                      const std::set<std::string>& busy) {
  std::vector<TaskChange> out;
  for (const auto& [uuid, end] : ends) {
    if (busy.count(uuid)) continue;
    for (const TaskRecord& t : f.s.tasks) {
      if (t.uuid == uuid) out.push_back({t.uuid, end.state, end.note});
    }
  }
  return out;
}

bool ImportVerdict(const ProjectFacts& f, const std::string& svc, const ServiceMemory& m, ServiceVerdict* v,
                   std::vector<Problem>* problems) {
  auto imp = f.s.imports.find(svc);
  if (imp == f.s.imports.end()) return false;
  const triton::Image& im = imp->second;
  std::string label = absl::StrCat(im.name, "@", im.version);
  if (!m.import_error.empty()) {
    v->state = VerdictState::kFailed;
    v->reason = absl::StrCat("importing image ", label, " failed");
    v->fix = absl::StrCat("check the image source ", im.source, " (`mariposa image avail ", svc,
                          "`); it is tried again at ", Stamp(m.import_retry),
                          ", or apply a manifest naming an image IMGAPI has");
    problems->push_back({"image-import-failing", svc,
                         absl::StrCat("importing image ", label, " from ", im.source, " fails"), m.import_error, v->fix,
                         absl::StrCat("nothing of ", svc, " is created or updated until it is imported")});
  } else {
    v->state = VerdictState::kProgressing;
    v->reason = absl::StrCat("importing image ", label, " (", HumanBytes(im.size), ") from ", im.source);
  }
  return true;
}

namespace {

// One agent service's decision, computed with its own locals.
class AgentServiceDecision {
 public:
  AgentServiceDecision(const ProjectFacts& f, const std::string& svc, const ServiceGoalSpec& g, ServiceMemory m)
      : f_(f), svc_(svc), g_(g) {
    out_.memory = std::move(m);
  }
  AgentOutcome Run() &&;

 private:
  // The rollout as this decision sees it.
  struct Rollout {
    AgentGoal goal;
    AgentPlan plan;
    std::set<std::string> installing;  // servers with an install in flight
    bool idle = false;                 // nothing to install and nothing installing
    int max_attempts = 1;              // failed installs that skip a server
    std::string frozen;                // the freeze holding it, or ""
    std::vector<std::string> skipped_names;
  };
  void Unknown();
  void ForgetInstallFailures(const triton::Image& image);
  void AddReinstalls(AgentGoal* goal);
  std::vector<AgentServer> Rows(const Rollout& r) const;
  void Step(const triton::Image& image, const Rollout& r);
  std::string NewTask();
  void EndTask(const TaskRecord& task, const Rollout& r);
  void Verdict(const triton::Image& image, const Rollout& r);
  void Problem(const std::string& kind, std::string error, std::string reason, std::string fix, std::string impact) {
    out_.problems.push_back({kind, svc_, std::move(error), std::move(reason), std::move(fix), std::move(impact)});
  }
  void Hold(const std::string& why) {
    if (out_.hold_reason.empty()) out_.hold_reason = why;
  }

  const ProjectFacts& f_;
  const std::string& svc_;
  const ServiceGoalSpec& g_;
  AgentOutcome out_;
};

AgentOutcome AgentServiceDecision::Run() && {
  out_.verdict.agent = true;
  if (ImportVerdict(f_, svc_, out_.memory, &out_.verdict, &out_.problems)) return std::move(out_);
  auto img = f_.s.images.find(svc_);
  if (img == f_.s.images.end() || !f_.s.servers_known) {
    Unknown();
    return std::move(out_);
  }
  const triton::Image& image = img->second;
  const ServiceMemory& m = out_.memory;
  Rollout r;
  r.goal = AgentGoalFor(svc_, g_.spec, image);
  ForgetInstallFailures(image);
  AddReinstalls(&r.goal);
  r.max_attempts = std::max(1, PolicyFor(g_.spec, f_.s.policy).max_attempts);
  for (const auto& [server, attempts] : m.install_attempts) {
    if (attempts >= r.max_attempts) r.goal.skip.insert(server);
  }
  for (const JobRecord& j : f_.s.in_flight) {
    if (j.api == "cnapi" && j.service == svc_) r.installing.insert(j.instance);
  }
  r.plan = PlanAgents(r.goal, f_.s.servers);
  r.idle = r.plan.install_on.empty() && r.installing.empty();
  r.frozen = f_.FrozenBy(svc_, "agent-rollout");
  out_.servers = Rows(r);
  for (const AgentServer& row : *out_.servers) {
    if (row.state == "skipped") r.skipped_names.push_back(row.hostname);
  }
  out_.plan = r.plan;
  Step(image, r);
  out_.verdict.desired = r.plan.selected;
  out_.verdict.ready = r.plan.current;
  out_.verdict.old_spec = r.plan.outdated;
  Verdict(image, r);
  return std::move(out_);
}

// No image in IMGAPI, or CNAPI unread: what the agent service's verdict says.
void AgentServiceDecision::Unknown() {
  ServiceVerdict* v = &out_.verdict;
  if (f_.s.images.count(svc_)) {
    v->state = VerdictState::kUnknown;
    v->reason = "CNAPI could not be read";
    return;
  }
  auto err = f_.s.image_errors.find(svc_);
  v->state = VerdictState::kFailed;
  v->reason = absl::StrCat("image ", g_.record.image, " is not in IMGAPI");
  v->fix = "import the image into IMGAPI, or apply a manifest naming one it has";
  Problem("image-missing", absl::StrCat("image ", g_.record.image, " of agent service ", svc_, " not found"),
          err != f_.s.image_errors.end() ? err->second : "IMGAPI did not return it", v->fix,
          absl::StrCat("no server gets ", svc_, "; servers keep the version they run"));
}

// A new image: failures of the old one say nothing about it (the first sight
// of an image keeps failures counted in this Decide). A user's reprovision
// tries skipped servers again.
void AgentServiceDecision::ForgetInstallFailures(const triton::Image& image) {
  ServiceMemory* m = &out_.memory;
  if (m->install_image != image.uuid) {
    if (!m->install_image.empty()) {
      m->install_failures.clear();
      m->install_attempts.clear();
    }
    m->install_image = image.uuid;
  }
  for (const TaskRecord& t : f_.s.tasks) {
    if (t.kind == "reprovision" && t.origin != "auto" && t.state == "queued" && Covers(t, svc_) && !f_.Newer(t) &&
        f_.WaitingFor(t).empty()) {
      m->install_attempts.clear();
      m->install_failures.clear();
    }
  }
}

// A user's reprovision reinstalls the current image on every selected server
// it has not reinstalled yet (sdcadm's forced same-image update), one task at
// a time; what closed tasks reinstalled is forgotten.
void AgentServiceDecision::AddReinstalls(AgentGoal* goal) {
  ServiceMemory* m = &out_.memory;
  for (auto it = m->reinstalled.begin(); it != m->reinstalled.end();) {
    bool open = false;
    for (const TaskRecord& t : f_.s.tasks) open |= t.uuid == it->first;
    if (open) ++it;
    else it = m->reinstalled.erase(it);
  }
  for (const TaskRecord& t : f_.s.tasks) {
    if (t.kind != "reprovision" || t.origin == "auto" || !Covers(t, svc_) || f_.Newer(t) ||
        !f_.WaitingFor(t).empty() || (t.state != "queued" && t.state != "active")) {
      continue;
    }
    const std::set<std::string>& done = m->reinstalled[t.uuid];
    auto named = [&t](const triton::Server* sv) {
      const std::vector<std::string>& fs = t.filter_servers;
      return fs.empty() || std::find(fs.begin(), fs.end(), sv->uuid) != fs.end() ||
             std::find(fs.begin(), fs.end(), sv->hostname) != fs.end();
    };
    for (const triton::Server* sv : SelectServers(*goal, f_.s.servers)) {
      if (named(sv) && !done.count(sv->uuid)) goal->reinstall.insert(sv->uuid);
    }
    break;  // one at a time
  }
}

// Every set-up server as `status -v` and `core check` show it, by hostname.
std::vector<AgentServer> AgentServiceDecision::Rows(const Rollout& r) const {
  const ServiceMemory& m = out_.memory;
  std::set<const triton::Server*> selected;
  for (const triton::Server* sp : SelectServers(r.goal, f_.s.servers)) selected.insert(sp);
  std::vector<AgentServer> rows;
  for (const triton::Server& sv : f_.s.servers) {
    if (!sv.setup) continue;
    AgentServer row;
    row.server = sv.uuid;
    row.hostname = sv.hostname;
    const triton::Agent* a = AgentOn(r.goal, sv);
    if (a != nullptr) {
      row.version = a->version;
      row.image_uuid = a->image_uuid;
    }
    auto failure = m.install_failures.find(sv.uuid);
    if (!selected.count(&sv)) row.state = ExcludedBy(r.goal, sv) ? "excluded" : "not-selected";
    else if (AgentCurrent(r.goal, a)) row.state = "current";
    else if (r.installing.count(sv.uuid)) row.state = "installing";
    else if (r.goal.skip.count(sv.uuid)) row.state = "skipped";
    else if (sv.status != "running") row.state = "unreachable";
    else if (failure != m.install_failures.end()) row.state = "failed";
    else row.state = "outdated";
    if (failure != m.install_failures.end() && (row.state == "skipped" || row.state == "failed")) {
      row.error = failure->second;
    }
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const AgentServer& a, const AgentServer& b) {
    return a.hostname != b.hostname ? a.hostname < b.hostname : a.server < b.server;
  });
  return rows;
}

// The rollout's next step: its task ends when nothing is left to install;
// otherwise installs start (a step at a time: none while installs run), or
// are held by a freeze or the backoff after a failure.
void AgentServiceDecision::Step(const triton::Image& image, const Rollout& r) {
  const ServiceMemory& m = out_.memory;
  const TaskRecord* task = nullptr;
  for (const TaskRecord& t : f_.s.tasks) {
    if (t.kind == "reprovision" && Covers(t, svc_) && (t.state == "queued" || t.state == "active") && !f_.Newer(t) &&
        f_.WaitingFor(t).empty()) {
      task = &t;
    }
  }
  if (task != nullptr && !r.idle) out_.busy_task = task->uuid;
  std::vector<std::string> install_on;
  if (r.installing.empty()) install_on = r.plan.install_on;
  if (r.idle) {
    if (task != nullptr) EndTask(*task, r);
  } else if (!r.frozen.empty() || f_.now < m.install_retry) {
    std::string why = r.frozen.empty() ? "backoff after a failed install" : r.frozen;
    for (const std::string& server : install_on) {
      out_.held.push_back({Action{ActionKind::kCreate, svc_, server, "agent-rollout"}, why});
    }
    Hold(why);
  } else if (!install_on.empty()) {
    std::string task_ref = task != nullptr ? task->uuid : NewTask();
    if (task != nullptr && task->state == "queued") out_.task_changes.push_back({task->uuid, "active", ""});
    if (task_ref.empty()) return;
    for (const std::string& server : install_on) {
      out_.installs.push_back({svc_, server, image.uuid, absl::StrCat(image.name, " ", image.version), task_ref});
    }
  }
}

// The automatic reprovision task an agent rollout runs under: "new:SVC", or
// "" when the queue does not admit it now (the reason is held).
std::string AgentServiceDecision::NewTask() {
  TaskRecord t = f_.AutoTask("reprovision", svc_, "agent-rollout");
  t.trigger = "apply";
  std::vector<std::string> terminate;
  absl::Status ok = QueueAdmitter()(f_.s.tasks, &t, &terminate);
  if (!ok.ok() || !t.wait_for.empty()) {
    Hold(ok.ok() ? "agent rollout waits for another task" : std::string(ok.message()));
    return "";
  }
  out_.new_tasks.push_back(t);
  return absl::StrCat("new:", svc_);
}

// Nothing left to install: the service's part of the task is done; skipped
// servers fail it (not a success: what was not done is named). Applied by
// EndAgentTasks once no service works on the task.
void AgentServiceDecision::EndTask(const TaskRecord& task, const Rollout& r) {
  const ServiceMemory& m = out_.memory;
  if (r.plan.skipped > 0) {
    out_.task_end = TaskChange{
        task.uuid, "failed",
        absl::StrCat(svc_, ": ", r.plan.skipped, " servers skipped after ", r.max_attempts, " failed installs each (",
                     absl::StrJoin(r.skipped_names, ", "), "); last error: ",
                     m.install_failures.empty() ? "unknown" : m.install_failures.begin()->second)};
    return;
  }
  out_.task_end = TaskChange{
      task.uuid, "completed",
      r.plan.unreachable > 0
          ? absl::StrCat(svc_, ": ", r.plan.unreachable, " servers were not running and still run another version")
          : ""};
}

// The agent service's verdict (and its problem when installs fail).
void AgentServiceDecision::Verdict(const triton::Image& image, const Rollout& r) {
  const ServiceMemory& m = out_.memory;
  ServiceVerdict* v = &out_.verdict;
  const AgentPlan& plan = r.plan;
  int failing = static_cast<int>(m.install_failures.size());
  std::string impact = absl::StrCat(plan.outdated, " of ", plan.selected, " servers run another version of ", image.name);
  if (plan.skipped > 0 && r.idle) {
    std::string last = m.install_failures.empty() ? "unknown" : m.install_failures.begin()->second;
    v->state = plan.current == 0 ? VerdictState::kFailed : VerdictState::kDegraded;
    v->reason = absl::StrCat(plan.skipped, " servers skipped after ", r.max_attempts, " failed installs: ",
                             absl::StrJoin(r.skipped_names, ", "));
    v->fix = absl::StrCat("fix the cause (last: ", last, "), then `mariposa reprovision --service ", svc_,
                          "` tries them again");
    Problem("agent-install-failing",
            absl::StrCat("installing ", image.name, " ", image.version, " failed ", r.max_attempts,
                         " times on each of ", plan.skipped, " servers; they are skipped"),
            last, v->fix, impact);
  } else if (failing > 0) {
    std::string first = m.install_failures.begin()->second;
    v->state = plan.current == 0 ? VerdictState::kFailed : VerdictState::kDegraded;
    v->reason = absl::StrCat("install failing on ", failing, " of ", plan.selected,
                             " servers (retried with backoff; ", r.max_attempts, " failures skip a server)");
    v->fix = absl::StrCat("see `mariposa events` (agent.install-failed); fix the cause (last: ", first,
                          "), then `mariposa reprovision --service ", svc_, "`");
    Problem("agent-install-failing",
            absl::StrCat("installing ", image.name, " ", image.version, " fails on ", failing, " servers"), first,
            v->fix, impact);
  } else if (plan.outdated == 0 && plan.reinstall > 0) {  // servers in flight are not done yet
    v->state = VerdictState::kProgressing;
    v->reason = absl::StrCat("reinstalling ", image.version, " (forced): ", plan.reinstall,
                             plan.reinstall == 1 ? " server" : " servers", " to go");
  } else if (plan.outdated == 0) {
    v->state = VerdictState::kConverged;
    v->reason = absl::StrCat(plan.current, "/", plan.selected, " servers at ", image.version);
  } else if (plan.outdated == plan.unreachable) {
    v->state = VerdictState::kDegraded;
    v->reason = absl::StrCat(plan.unreachable, " servers down still run another version");
    v->fix = "they are updated when they come back";
  } else if (!r.frozen.empty()) {
    v->state = VerdictState::kPaused;
    v->reason = r.frozen;
    v->fix = absl::StrCat("`mariposa thaw ", svc_, "`");
  } else {
    v->state = VerdictState::kProgressing;
    v->reason = absl::StrCat("rolling out: ", plan.current, "/", plan.selected, " servers at ", image.version);
  }
}

}  // namespace

AgentOutcome DecideAgentService(const ProjectFacts& f, const std::string& svc, const ServiceGoalSpec& g,
                                ServiceMemory memory) {
  return AgentServiceDecision(f, svc, g, std::move(memory)).Run();
}


// Each agent service decided by itself, merged in the goal's order; a task
// several services share ends when none works on it any more, failed when
// one failed it, with every service's note.
void Decider::Agents() {
  if (!f_.s.goal) return;
  std::map<std::string, TaskChange> ends;
  std::set<std::string> busy;
  for (const auto& [svc, g] : f_.s.goal->services) {
    if (g.spec.compute_type != "agent") continue;
    AgentOutcome o = DecideAgentService(f_, svc, g, d_.memory[svc]);
    d_.memory[svc] = std::move(o.memory);
    d_.verdicts[svc] = std::move(o.verdict);
    if (o.servers) d_.agent_servers[svc] = std::move(*o.servers);
    if (o.plan) d_.agent_plans[svc] = std::move(*o.plan);
    Append(std::move(o.held), &d_.held);
    Append(std::move(o.installs), &d_.installs);
    Append(std::move(o.new_tasks), &d_.new_tasks);
    Append(std::move(o.task_changes), &d_.task_changes);
    Append(std::move(o.problems), &d_.problems);
    if (!o.hold_reason.empty()) hold_reason_.emplace(svc, o.hold_reason);
    if (!o.busy_task.empty()) busy.insert(o.busy_task);
    if (o.task_end) {
      TaskChange& e = ends[o.task_end->task];
      if (e.state != "failed") e.state = o.task_end->state;
      const std::string& note = o.task_end->note;
      if (!note.empty()) e.note = e.note.empty() ? note : absl::StrCat(e.note, "; ", note);
    }
  }
  for (const std::string& t : busy_tasks_) busy.insert(t);
  Append(EndAgentTasks(f_, ends, busy), &d_.task_changes);
}

void Decider::Uninstalls() {
  UninstallOutcome o = DecideUninstalls(f_);
  d_.leftover += o.leftover;
  Append(std::move(o.held), &d_.held);
  Append(std::move(o.uninstalls), &d_.uninstalls);
}

}  // namespace mariposa::convergence::decide_internal
