#include "convergence/decide/decider.h"

namespace mariposa::convergence::decide_internal {

// Agents of services that left the manifest: uninstalled from every server
// that runs them, `rolling` at a time; counted as leftover until done.
void Decider::Uninstalls() {
  for (const auto& kv : f_.s.removed_agents) {
    const std::string& svc = kv.first;
    if (!f_.s.servers_known) {
      ++d_.leftover;  // not known to be gone
      continue;
    }
    bool going = false;
    for (const JobRecord& j : f_.s.in_flight) going |= j.api == "cnapi" && j.kind == "uninstall" && j.service == svc;
    std::vector<const triton::Server*> todo;
    AgentGoal selection;
    selection.name = kv.second.name;
    selection.select = kv.second.select;
    selection.servers = kv.second.servers;
    selection.exclude = kv.second.exclude;
    for (const triton::Server* sp : SelectServers(selection, f_.s.servers)) {
      const triton::Server& sv = *sp;
      bool has = false;
      for (const triton::Agent& a : sv.agents) has |= a.name == kv.second.name;
      if (!has) continue;
      ++d_.leftover;
      if (sv.status == "running") todo.push_back(&sv);
    }
    std::string frozen = f_.FrozenBy(svc, "agent-rollout");
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
  for (const JobRecord& j : f_.s.in_flight) {
    if (j.api == "imgapi") going.insert(j.instance);
  }
  for (const auto& kv : f_.s.imports) {
    const std::string& svc = kv.first;
    const triton::Image& im = kv.second;
    if (!going.insert(im.uuid).second) continue;  // in flight, or asked for by another service
    const ServiceMemory& m = d_.memory[svc];
    if (f_.now < m.import_retry) {
      going.erase(im.uuid);
      continue;
    }
    std::string task;
    for (const TaskRecord& t : f_.s.tasks) {
      if (Covers(t, svc) && (t.state == "queued" || t.state == "active") && f_.WaitingFor(t).empty()) {
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
  auto imp = f_.s.imports.find(svc);
  if (imp == f_.s.imports.end()) return false;
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

// Agent services (compute_type: agent): each rolls its image out to the
// servers it selects, a step at a time, under a reprovision task.
void Decider::Agents() {
  if (!f_.s.goal) return;
  for (const auto& [svc, g] : f_.s.goal->services) {
    if (g.spec.compute_type == "agent") AgentService(svc, g);
  }
  EndAgentTasks();
}

void Decider::AgentService(const std::string& svc, const ServiceGoalSpec& g) {
  ServiceVerdict v;
  v.agent = true;
  if (ImportVerdict(svc, &v)) return;
  ServiceMemory& m = d_.memory[svc];
  auto img = f_.s.images.find(svc);
  if (img == f_.s.images.end() || !f_.s.servers_known) {
    AgentUnknown(svc, g, &v);
    return;
  }
  const triton::Image& image = img->second;
  AgentRollout r;
  r.goal = AgentGoalFor(svc, g.spec, image);
  ForgetInstallFailures(svc, image, &m);
  AddReinstalls(svc, &m, &r.goal);
  r.max_attempts = std::max(1, PolicyFor(g.spec, f_.s.policy).max_attempts);
  for (const auto& [server, attempts] : m.install_attempts) {
    if (attempts >= r.max_attempts) r.goal.skip.insert(server);
  }
  for (const JobRecord& j : f_.s.in_flight) {
    if (j.api == "cnapi" && j.service == svc) r.installing.insert(j.instance);
  }
  r.plan = PlanAgents(r.goal, f_.s.servers);
  r.idle = r.plan.install_on.empty() && r.installing.empty();
  r.frozen = f_.FrozenBy(svc, "agent-rollout");
  d_.agent_servers[svc] = AgentRows(r, m);
  for (const AgentServer& row : d_.agent_servers[svc]) {
    if (row.state == "skipped") r.skipped_names.push_back(row.hostname);
  }
  d_.agent_plans[svc] = r.plan;
  AgentStep(svc, image, m, r);
  v.desired = r.plan.selected;
  v.ready = r.plan.current;
  v.old_spec = r.plan.outdated;
  AgentVerdict(svc, image, m, r, &v);
  d_.verdicts[svc] = v;
}

// No image in IMGAPI, or CNAPI unread: what the agent service's verdict says.
void Decider::AgentUnknown(const std::string& svc, const ServiceGoalSpec& g, ServiceVerdict* v) {
  if (f_.s.images.count(svc)) {
    v->state = VerdictState::kUnknown;
    v->reason = "CNAPI could not be read";
    d_.verdicts[svc] = *v;
    return;
  }
  auto err = f_.s.image_errors.find(svc);
  v->state = VerdictState::kFailed;
  v->reason = absl::StrCat("image ", g.record.image, " is not in IMGAPI");
  v->fix = "import the image into IMGAPI, or apply a manifest naming one it has";
  Problem("image-missing", svc, absl::StrCat("image ", g.record.image, " of agent service ", svc, " not found"),
          err != f_.s.image_errors.end() ? err->second : "IMGAPI did not return it", v->fix,
          absl::StrCat("no server gets ", svc, "; servers keep the version they run"));
  d_.verdicts[svc] = *v;
}

// A new image: failures of the old one say nothing about it (the first sight
// of an image keeps failures counted in this Decide). A user's reprovision
// tries skipped servers again.
void Decider::ForgetInstallFailures(const std::string& svc, const triton::Image& image, ServiceMemory* m) {
  if (m->install_image != image.uuid) {
    if (!m->install_image.empty()) {
      m->install_failures.clear();
      m->install_attempts.clear();
    }
    m->install_image = image.uuid;
  }
  for (const TaskRecord& t : f_.s.tasks) {
    if (t.kind == "reprovision" && t.origin != "auto" && t.state == "queued" && Covers(t, svc) && !f_.Newer(t) &&
        f_.WaitingFor(t).empty()) {
      m->install_attempts.clear();
      m->install_failures.clear();
    }
  }
}

// A user's reprovision reinstalls the current image on every selected server
// it has not reinstalled yet (sdcadm's forced same-image update), one task at
// a time; what closed tasks reinstalled is forgotten.
void Decider::AddReinstalls(const std::string& svc, ServiceMemory* m, AgentGoal* goal) {
  for (auto it = m->reinstalled.begin(); it != m->reinstalled.end();) {
    bool open = false;
    for (const TaskRecord& t : f_.s.tasks) open |= t.uuid == it->first;
    if (open) ++it;
    else it = m->reinstalled.erase(it);
  }
  for (const TaskRecord& t : f_.s.tasks) {
    if (t.kind != "reprovision" || t.origin == "auto" || !Covers(t, svc) || f_.Newer(t) || !f_.WaitingFor(t).empty() ||
        (t.state != "queued" && t.state != "active")) {
      continue;
    }
    const std::set<std::string>& done = m->reinstalled[t.uuid];
    auto named = [&t](const triton::Server* sv) {
      const std::vector<std::string>& f = t.filter_servers;
      return f.empty() || std::find(f.begin(), f.end(), sv->uuid) != f.end() ||
             std::find(f.begin(), f.end(), sv->hostname) != f.end();
    };
    for (const triton::Server* sv : SelectServers(*goal, f_.s.servers)) {
      if (named(sv) && !done.count(sv->uuid)) goal->reinstall.insert(sv->uuid);
    }
    break;  // one at a time
  }
}

// Every set-up server as `status -v` and `core check` show it, by hostname.
std::vector<AgentServer> Decider::AgentRows(const AgentRollout& r, const ServiceMemory& m) const {
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
void Decider::AgentStep(const std::string& svc, const triton::Image& image, const ServiceMemory& m,
                        const AgentRollout& r) {
  const TaskRecord* task = nullptr;
  for (const TaskRecord& t : f_.s.tasks) {
    if (t.kind == "reprovision" && Covers(t, svc) && (t.state == "queued" || t.state == "active") && !f_.Newer(t) &&
        f_.WaitingFor(t).empty()) {
      task = &t;
    }
  }
  if (task != nullptr && !r.idle) busy_tasks_.insert(task->uuid);
  std::vector<std::string> install_on;
  if (r.installing.empty()) install_on = r.plan.install_on;
  if (r.idle) {
    if (task != nullptr) EndAgentTask(svc, *task, m, r);
  } else if (!r.frozen.empty() || f_.now < m.install_retry) {
    std::string why = r.frozen.empty() ? "backoff after a failed install" : r.frozen;
    for (const std::string& server : install_on) {
      d_.held.push_back({Action{ActionKind::kCreate, svc, server, "agent-rollout"}, why});
    }
    hold_reason_.emplace(svc, why);
  } else if (!install_on.empty()) {
    std::string task_ref = task != nullptr ? task->uuid : AgentTask(svc);
    if (task != nullptr && task->state == "queued") Change(*task, "active");
    if (task_ref.empty()) return;
    for (const std::string& server : install_on) {
      d_.installs.push_back({svc, server, image.uuid, absl::StrCat(image.name, " ", image.version), task_ref});
    }
  }
}

// The automatic reprovision task an agent rollout runs under: "new:SVC", or
// "" when the queue does not admit it now (the reason is held).
std::string Decider::AgentTask(const std::string& svc) {
  TaskRecord t = f_.AutoTask("reprovision", svc, "agent-rollout");
  t.trigger = "apply";
  std::vector<std::string> terminate;
  absl::Status ok = QueueAdmitter()(f_.s.tasks, &t, &terminate);
  if (!ok.ok() || !t.wait_for.empty()) {
    hold_reason_.emplace(svc, ok.ok() ? "agent rollout waits for another task" : std::string(ok.message()));
    return "";
  }
  d_.new_tasks.push_back(t);
  return absl::StrCat("new:", svc);
}

// Nothing left to install for `svc`: its part of the task is done; skipped
// servers fail it (not a success: what was not done is named). Applied by
// EndAgentTasks once no service works on the task.
void Decider::EndAgentTask(const std::string& svc, const TaskRecord& task, const ServiceMemory& m,
                           const AgentRollout& r) {
  auto end = [&](const std::string& state, const std::string& note) {
    auto& e = agent_task_ends_[task.uuid];
    if (e.first != "failed") e.first = state;  // one service failing fails the task
    if (!note.empty()) e.second = e.second.empty() ? note : absl::StrCat(e.second, "; ", note);
  };
  if (r.plan.skipped > 0) {
    end("failed", absl::StrCat(svc, ": ", r.plan.skipped, " servers skipped after ", r.max_attempts,
                               " failed installs each (", absl::StrJoin(r.skipped_names, ", "), "); last error: ",
                               m.install_failures.empty() ? "unknown" : m.install_failures.begin()->second));
    return;
  }
  end("completed", r.plan.unreachable > 0 ? absl::StrCat(svc, ": ", r.plan.unreachable,
                                                          " servers were not running and still run another version")
                                          : "");
}

void Decider::EndAgentTasks() {
  for (const auto& [uuid, end] : agent_task_ends_) {
    if (busy_tasks_.count(uuid)) continue;
    for (const TaskRecord& t : f_.s.tasks) {
      if (t.uuid == uuid) Change(t, end.first, end.second);
    }
  }
}

// The agent service's verdict (and its problem when installs fail).
void Decider::AgentVerdict(const std::string& svc, const triton::Image& image, const ServiceMemory& m,
                           const AgentRollout& r, ServiceVerdict* v) {
  const AgentPlan& plan = r.plan;
  int failing = static_cast<int>(m.install_failures.size());
  std::string impact = absl::StrCat(plan.outdated, " of ", plan.selected, " servers run another version of ", image.name);
  if (plan.skipped > 0 && r.idle) {
    std::string last = m.install_failures.empty() ? "unknown" : m.install_failures.begin()->second;
    v->state = plan.current == 0 ? VerdictState::kFailed : VerdictState::kDegraded;
    v->reason = absl::StrCat(plan.skipped, " servers skipped after ", r.max_attempts, " failed installs: ",
                             absl::StrJoin(r.skipped_names, ", "));
    v->fix = absl::StrCat("fix the cause (last: ", last, "), then `mariposa reprovision --service ", svc,
                          "` tries them again");
    Problem("agent-install-failing", svc,
            absl::StrCat("installing ", image.name, " ", image.version, " failed ", r.max_attempts,
                         " times on each of ", plan.skipped, " servers; they are skipped"),
            last, v->fix, impact);
  } else if (failing > 0) {
    std::string first = m.install_failures.begin()->second;
    v->state = plan.current == 0 ? VerdictState::kFailed : VerdictState::kDegraded;
    v->reason = absl::StrCat("install failing on ", failing, " of ", plan.selected,
                             " servers (retried with backoff; ", r.max_attempts, " failures skip a server)");
    v->fix = absl::StrCat("see `mariposa events` (agent.install-failed); fix the cause (last: ", first,
                          "), then `mariposa reprovision --service ", svc, "`");
    Problem("agent-install-failing", svc,
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
    v->fix = absl::StrCat("`mariposa thaw ", svc, "`");
  } else {
    v->state = VerdictState::kProgressing;
    v->reason = absl::StrCat("rolling out: ", plan.current, "/", plan.selected, " servers at ", image.version);
  }
}

}  // namespace mariposa::convergence::decide_internal
