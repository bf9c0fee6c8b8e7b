// mariposa queue, pause, resume, freeze, thaw, reprovision, start, stop.
#include "cli/cli.h"

namespace mariposa::cmd {

void Cli::PrintTask(const v1::Task& t) {
  std::cout << "task:     " << t.uuid() << "\nkind:     " << t.kind() << "\nscope:    "
            << (t.services().empty() ? "whole project" : absl::StrJoin(t.services(), ",")) << "\nstate:    " << t.state()
            << "\norigin:   " << t.origin() << (t.trigger().empty() ? "" : " (" + t.trigger() + ")")
            << "\ncreated:  " << Time(t.created_at()) << "\n";
  if (!t.actor().empty()) std::cout << "by:       " << t.actor() << "\n";
  if (!t.reason().empty()) std::cout << "reason:   " << t.reason() << "\n";
  if (!t.only().empty()) std::cout << "only:     " << absl::StrJoin(t.only(), ",") << "\n";
  if (!t.wait_for().empty()) std::cout << "waits for: " << absl::StrJoin(t.wait_for(), ",") << "\n";
  auto filter = [](const char* name, const google::protobuf::RepeatedPtrField<std::string>& v) {
    if (!v.empty()) std::cout << name << absl::StrJoin(v, ",") << "\n";
  };
  filter("versions: ", t.filter_versions());
  filter("images:   ", t.filter_images());
  filter("servers:  ", t.filter_servers());
  filter("instances: ", t.filter_instances());
  if (t.canary() > 0) std::cout << "canary:   " << t.canary() << "\n";
  if (t.rolling() > 0) std::cout << "rolling:  " << t.rolling() << "\n";
  if (t.steps_planned() > 0 || t.steps_done() > 0) {
    std::cout << "progress: step " << t.steps_done() << "/" << std::max(t.steps_done(), t.steps_planned())
              << "; created " << t.created() << ", deleted " << t.deleted() << ", replaced " << t.replaced()
              << ", failed " << t.failed() << "\n";
  }
  if (!t.error().empty()) std::cout << "error:    " << t.error() << "\n";
}

int Cli::QueueCmd(Args& a) {
  auto finished = a.Value({"--finished"});
  auto reason = a.Value({"--reason"});
  auto rest = a.Positional(1, 2, "queue list|get|terminate");
  if (rest[0] == "list") {
    v1::ListTasksRequest req;
    req.set_project(NeedProject());
    int n = 20;
    if (finished && !absl::SimpleAtoi(*finished, &n)) throw UsageError{"--finished needs a number"};
    req.set_finished_limit(n);
    v1::ListTasksResponse resp;
    Check(queue_->ListTasks(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& t : resp.tasks()) {
      std::string progress = t.kind() == "freeze" ? "-" : absl::StrCat("+", t.created(), " -", t.deleted());
      if (t.replaced() > 0) absl::StrAppend(&progress, " ", t.replaced(), " replaced");
      if (t.failed() > 0) absl::StrAppend(&progress, " ", t.failed(), " failed");
      std::string why = !t.error().empty() ? t.error() : t.reason();
      rows.push_back({t.uuid(), t.kind(), t.services().empty() ? "*" : absl::StrJoin(t.services(), ","), t.state(),
                      t.origin() + (t.trigger().empty() ? "" : "/" + t.trigger()), Time(t.created_at()), progress, why});
    }
    Table({"TASK", "KIND", "SCOPE", "STATE", "ORIGIN", "CREATED", "PROGRESS", "REASON"}, rows);
    return 0;
  }
  if (rest.size() != 2) throw UsageError{"expected queue get TASK | queue terminate TASK"};
  if (rest[0] == "get") {
    v1::GetTaskRequest req;
    req.set_task(rest[1]);
    v1::GetTaskResponse resp;
    Check(queue_->GetTask(Ctx().get(), req, &resp));
    if (Structured()) Print(resp.task());
    else PrintTask(resp.task());
    return 0;
  }
  if (rest[0] == "terminate") {
    v1::TerminateTaskRequest req;
    req.set_task(rest[1]);
    req.set_reason(reason.value_or(""));
    v1::TerminateTaskResponse resp;
    Check(queue_->TerminateTask(Ctx().get(), req, &resp));
    std::cout << "task " << rest[1] << " is " << resp.task().state() << "; its scope is frozen until `mariposa thaw`\n";
    return 0;
  }
  throw UsageError{"expected queue list|get|terminate"};
}

int Cli::PauseCmd(bool pause, Args& a) {
  auto reason = pause ? a.Value({"--reason"}) : std::nullopt;
  auto rest = a.Positional(2, 2, pause ? "pause TASK" : "resume TASK");
  v1::Task task;
  if (pause) {
    v1::PauseTaskRequest req;
    req.set_task(rest[1]);
    req.set_reason(reason.value_or(""));
    v1::PauseTaskResponse resp;
    Check(queue_->PauseTask(Ctx().get(), req, &resp));
    task = resp.task();
  } else {
    v1::ResumeTaskRequest req;
    req.set_task(rest[1]);
    v1::ResumeTaskResponse resp;
    Check(queue_->ResumeTask(Ctx().get(), req, &resp));
    task = resp.task();
  }
  if (Structured()) {
    Print(task);
    return 0;
  }
  if (pause) {
    std::cout << "rollout " << task.uuid() << " is paused (" << task.paused()
              << "): no further step starts; jobs in flight finish. `mariposa resume " << task.uuid()
              << "` continues it\n";
  } else {
    std::cout << "rollout " << task.uuid() << " continues\n";
  }
  return 0;
}

int Cli::FreezeCmd(Args& a, bool thaw) {
  auto services = a.Value({"--service", "--services"});
  auto group = a.Value({"--group"});
  auto reason = thaw ? std::nullopt : a.Value({"--reason"});
  auto only = thaw ? std::nullopt : a.Value({"--only"});
  a.Positional(1, 1, thaw ? "thaw" : "freeze");
  std::vector<std::string> svc;
  if (services) svc = absl::StrSplit(*services, ',', absl::SkipEmpty());
  if (thaw) {
    v1::ThawRequest req;
    req.set_project(NeedProject());
    for (const auto& s : svc) req.add_services(s);
    req.set_group(group.value_or(""));
    v1::ThawResponse resp;
    Check(queue_->Thaw(Ctx().get(), req, &resp));
    std::cout << "thawed " << resp.thawed_size() << (resp.thawed_size() == 1 ? " freeze" : " freezes") << "\n";
    return 0;
  }
  v1::FreezeRequest req;
  req.set_project(NeedProject());
  for (const auto& s : svc) req.add_services(s);
  req.set_group(group.value_or(""));
  req.set_reason(reason.value_or(""));
  if (only) {
    for (absl::string_view o : absl::StrSplit(*only, ',', absl::SkipEmpty())) req.add_only(std::string(o));
  }
  v1::FreezeResponse resp;
  Check(queue_->Freeze(Ctx().get(), req, &resp));
  if (Structured()) Print(resp.task());
  else std::cout << "frozen (task " << resp.task().uuid() << ")\n";
  return 0;
}

// reprovision, start and stop: a task on a scope; reprovision also takes
// filters and a canary.
int Cli::TaskCmd(const std::string& kind, Args& a) {
  auto services = a.Value({"--service", "--services"});
  auto group = a.Value({"--group"});
  bool thaw = a.Flag({"--thaw"});
  bool wait = a.Flag({"--wait"});
  absl::Duration timeout = WaitTimeout(a.Value({"--timeout"}));
  v1::AddTaskRequest req;
  if (kind == "reprovision") {
    auto list = [&](const char* flag, google::protobuf::RepeatedPtrField<std::string>* out) {
      if (auto v = a.Value({flag})) {
        for (absl::string_view s : absl::StrSplit(*v, ',', absl::SkipEmpty())) out->Add(std::string(s));
      }
    };
    list("--version", req.mutable_versions());
    list("--image", req.mutable_images());
    list("--server", req.mutable_servers());
    list("--instance", req.mutable_instances());
    if (auto canary = a.Value({"--canary"})) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(*canary, &n) || n < 0) {
        throw UsageError{absl::StrCat("--canary \"", *canary, "\" is not a count")};
      }
      req.set_canary(n);
    }
    if (auto rolling = a.Value({"--rolling"})) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(*rolling, &n) || n < 1) {
        throw UsageError{absl::StrCat("--rolling \"", *rolling, "\" must be a count of at least 1")};
      }
      req.set_rolling(n);
    }
  }
  a.Positional(1, 1, kind);
  req.set_project(NeedProject());
  req.set_kind(kind);
  if (services) {
    for (absl::string_view s : absl::StrSplit(*services, ',', absl::SkipEmpty())) req.add_services(std::string(s));
  }
  req.set_group(group.value_or(""));
  req.set_thaw(thaw);
  v1::AddTaskResponse resp;
  Check(queue_->AddTask(Ctx().get(), req, &resp));
  if (Structured()) Print(resp.task());
  else std::cout << "queued " << kind << " task " << resp.task().uuid() << "\n";
  if (wait) return WaitSettled(req.project(), timeout);
  return 0;
}

}  // namespace mariposa::cmd
