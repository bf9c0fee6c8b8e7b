// mariposa pause TASK, resume TASK: hold a rollout between steps.
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

Result Pause(Context& c, const Parsed& p) {
  v1::PauseTaskRequest req;
  req.set_task(p.args()[0]);
  req.set_reason(p.Value("--reason").value_or(""));
  v1::PauseTaskResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().queue->PauseTask(c.d().Ctx().get(), req, &resp)));
  const v1::Task& task = resp.task();
  if (c.Structured()) c.Print(task);
  else c.out() << "rollout " << task.uuid() << " is paused (" << task.paused()
               << "): no further step starts; jobs in flight finish. `mariposa resume " << task.uuid()
               << "` continues it\n";
  return 0;
}

Result Resume(Context& c, const Parsed& p) {
  v1::ResumeTaskRequest req;
  req.set_task(p.args()[0]);
  v1::ResumeTaskResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().queue->ResumeTask(c.d().Ctx().get(), req, &resp)));
  if (c.Structured()) c.Print(resp.task());
  else c.out() << "rollout " << resp.task().uuid() << " continues\n";
  return 0;
}

}  // namespace

void AddPause(cli::Registry& r) {
  const std::string g = "Tasks and freezes";
  r.Add({.path = "pause",
         .args = "TASK",
         .summary = "hold a rollout between steps; it stays open",
         .help = "Holds a rollout (a reprovision task, as `queue list` shows it) between steps without ending it:\n"
                 "no further instance is replaced or reprovisioned for it; jobs in flight finish. Its\n"
                 "progress_deadline does not run while it is paused. `mariposa resume TASK` continues it;\n"
                 "`queue terminate` ends it.",
         .group = g,
         .flags = {{{"--reason"}, "TEXT", "why, kept with the task"}},
         .min_args = 1,
         .max_args = 1,
         .run = Pause});
  r.Add({.path = "resume", .args = "TASK", .summary = "continue a paused rollout", .group = g, .min_args = 1,
         .max_args = 1, .run = Resume});
}

}  // namespace mariposa::cmd
