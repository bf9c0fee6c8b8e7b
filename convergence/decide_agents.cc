#include "convergence/decider.h"

namespace mariposa::convergence::decide_internal {

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

}  // namespace mariposa::convergence::decide_internal
