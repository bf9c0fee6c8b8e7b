// mariposa queue list|get|terminate.
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

Result ListTasks(Context& c, const Parsed& p) {
  ASSIGN_OR_RETURN(int64_t finished, p.Int("--finished", 20, 0));
  v1::ListTasksRequest req;
  req.set_project(c.project());
  req.set_finished_limit(static_cast<int32_t>(finished));
  v1::ListTasksResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().queue->ListTasks(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  Rows rows;
  for (const auto& t : resp.tasks()) {
    std::string progress = t.kind() == "freeze" ? "-" : absl::StrCat("+", t.created(), " -", t.deleted());
    if (t.replaced() > 0) absl::StrAppend(&progress, " ", t.replaced(), " replaced");
    if (t.failed() > 0) absl::StrAppend(&progress, " ", t.failed(), " failed");
    std::string why = !t.error().empty() ? t.error() : t.reason();
    rows.push_back({t.uuid(), t.kind(), t.services().empty() ? "*" : absl::StrJoin(t.services(), ","), t.state(),
                    t.origin() + (t.trigger().empty() ? "" : "/" + t.trigger()), Time(t.created_at()), progress, why});
  }
  c.Table({"TASK", "KIND", "SCOPE", "STATE", "ORIGIN", "CREATED", "PROGRESS", "REASON"}, rows);
  return 0;
}

Result GetTask(Context& c, const Parsed& p) {
  v1::GetTaskRequest req;
  req.set_task(p.args()[0]);
  v1::GetTaskResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().queue->GetTask(c.d().Ctx().get(), req, &resp)));
  if (c.Structured()) c.Print(resp.task());
  else PrintTask(c, resp.task());
  return 0;
}

Result Terminate(Context& c, const Parsed& p) {
  v1::TerminateTaskRequest req;
  req.set_task(p.args()[0]);
  req.set_reason(p.Value("--reason").value_or(""));
  v1::TerminateTaskResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().queue->TerminateTask(c.d().Ctx().get(), req, &resp)));
  c.out() << "task " << resp.task().uuid() << " is " << resp.task().state()
          << "; its scope is frozen until `mariposa thaw`\n";
  return 0;
}

}  // namespace

void AddQueue(cli::Registry& r) {
  const std::string g = "Tasks and freezes";
  r.Add({.path = "queue list", .summary = "open tasks and the newest finished ones", .group = g,
         .flags = {{{"--finished"}, "N", "how many finished tasks (20)"}}, .project = ProjectUse::kRequired,
         .run = ListTasks});
  r.Add({.path = "queue get", .args = "TASK", .summary = "one task (its uuid or a unique prefix)", .group = g,
         .min_args = 1, .max_args = 1, .run = GetTask});
  r.Add({.path = "queue terminate", .args = "TASK", .summary = "end a task and freeze its scope until thaw",
         .group = g, .flags = {{{"--reason"}, "TEXT", "why, kept with the task"}}, .min_args = 1, .max_args = 1,
         .run = Terminate});
}

}  // namespace mariposa::cmd
