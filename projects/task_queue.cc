#include "projects/task_queue.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "projects/admission.h"

namespace mariposa {
namespace {

TaskKind KindOf(const std::string& k) {
  if (k == "start") return TaskKind::kStart;
  if (k == "stop") return TaskKind::kStop;
  if (k == "scale") return TaskKind::kScale;
  if (k == "reprovision") return TaskKind::kReprovision;
  if (k == "run") return TaskKind::kRun;
  return TaskKind::kFreeze;
}

TaskInfo InfoOf(const TaskRecord& t, bool thaw) {
  TaskInfo i;
  i.uuid = t.uuid;
  i.kind = KindOf(t.kind);
  i.services = std::set<std::string>(t.services.begin(), t.services.end());
  i.automatic = t.origin == "auto";
  i.auto_kind = t.auto_kind;
  i.thaw = thaw;
  i.frozen_by = t.actor;
  i.frozen_since = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t.created_at, absl::UTCTimeZone());
  i.reason = t.reason;
  i.only = std::set<std::string>(t.only.begin(), t.only.end());
  return i;
}

}  // namespace

bool FreezeHolds(const TaskRecord& t, const std::string& service, const std::string& kind) {
  if (t.kind != "freeze" || t.state == "terminating") return false;
  bool in_scope = t.services.empty() || std::find(t.services.begin(), t.services.end(), service) != t.services.end();
  bool kind_held = kind.empty() || t.only.empty() || std::find(t.only.begin(), t.only.end(), kind) != t.only.end();
  return in_scope && kind_held;
}

absl::StatusOr<std::map<std::string, int64_t>> VersionNumbers(ProjectStore* store, const std::string& project_uuid) {
  ASSIGN_OR_RETURN(std::vector<VersionRecord> versions, store->ListVersions(project_uuid));
  std::map<std::string, int64_t> numbers;
  for (const auto& v : versions) numbers[v.uuid] = v.number;
  return numbers;
}

int64_t ManifestCanary(const std::vector<ServiceRecord>& services, const std::vector<std::string>& scope) {
  int64_t canary = 0;
  for (const ServiceRecord& s : services) {
    if (!scope.empty() && std::find(scope.begin(), scope.end(), s.name) == scope.end()) continue;
    auto spec = nlohmann::json::parse(s.spec_json, nullptr, false);
    if (spec.is_object() && spec.contains("update") && spec["update"].is_object()) {
      canary = std::max<int64_t>(canary, spec["update"].value("canary", int64_t{0}));
    }
  }
  return canary;
}

int64_t ManifestCanary(const Manifest& m, const std::vector<std::string>& scope) {
  int64_t canary = 0;
  for (const auto& [name, spec] : m.services) {
    if (!scope.empty() && std::find(scope.begin(), scope.end(), name) == scope.end()) continue;
    canary = std::max<int64_t>(canary, spec.update_canary);
  }
  return canary;
}

TaskAdmitter QueueAdmitter() {
  return [](const std::vector<TaskRecord>& open, TaskRecord* incoming, std::vector<std::string>* terminate) {
    std::vector<TaskInfo> existing;
    for (const TaskRecord& t : open) {
      if (t.state != "terminating") existing.push_back(InfoOf(t, false));
    }
    // `--thaw` travels as the trigger of a user command.
    Admission a = Admit(existing, InfoOf(*incoming, incoming->trigger == "thaw"));
    if (a.verdict == Verdict::kReject) return absl::FailedPreconditionError(a.message);
    *terminate = a.terminate;
    incoming->wait_for = a.wait_for;
    return absl::OkStatus();
  };
}

absl::StatusOr<std::vector<std::string>> FreezesInTheWay(const std::vector<TaskRecord>& open,
                                                         const std::set<std::string>& services, bool thaw) {
  if (services.empty()) return std::vector<std::string>{};
  std::vector<TaskInfo> freezes;
  for (const TaskRecord& t : open) {
    if (t.kind == "freeze" && (t.state == "active" || t.state == "queued")) freezes.push_back(InfoOf(t, false));
  }
  TaskInfo command;
  command.kind = TaskKind::kScale;  // a change of the goal, by a user
  command.services = services;
  command.thaw = thaw;
  Admission a = Admit(freezes, command);
  if (a.verdict == Verdict::kReject) return absl::FailedPreconditionError(a.message);
  return a.terminate;
}

absl::StatusOr<TaskRecord> TaskQueue::Add(const TaskRecord& task) { return store_->AddTask(task, QueueAdmitter()); }

absl::StatusOr<TaskRecord> TaskQueue::Terminate(const std::string& task_uuid, const std::string& actor,
                                                const std::string& reason) {
  ASSIGN_OR_RETURN(TaskRecord t, store_->GetTask(task_uuid));
  if (t.kind == "freeze") {
    return absl::InvalidArgumentError(absl::StrCat("task ", task_uuid, " is a freeze; end it with `mariposa thaw`"));
  }
  // The freeze terminates the task through the admission rules (every
  // kind's row says "terminate" for an added freeze) in one transaction.
  TaskRecord freeze;
  freeze.project_uuid = t.project_uuid;
  freeze.kind = "freeze";
  freeze.services = t.services;
  freeze.origin = "user";
  freeze.trigger = "terminate";
  freeze.actor = actor;
  freeze.reason = reason.empty() ? absl::StrCat("terminated task ", task_uuid) : reason;
  ASSIGN_OR_RETURN(TaskRecord added, Add(freeze));
  (void)added;
  return store_->GetTask(task_uuid);
}

}  // namespace mariposa
