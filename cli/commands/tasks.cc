// mariposa reprovision, start, stop: a task on a scope (one code path; the
// kind is the only difference, and reprovision takes filters and a canary).
#include "cli/command.h"

namespace mariposa::cmd {
namespace {

Result AddTask(Context& c, const Parsed& p, const std::string& kind) {
  v1::AddTaskRequest req;
  for (const auto& [flag, field] : std::vector<std::pair<std::string, google::protobuf::RepeatedPtrField<std::string>*>>{
           {"--version", req.mutable_versions()},
           {"--image", req.mutable_images()},
           {"--server", req.mutable_servers()},
           {"--instance", req.mutable_instances()},
           {"--service", req.mutable_services()}}) {
    for (const std::string& v : SplitList(p.Value(flag))) field->Add(std::string(v));
  }
  // Set only when given: an unset canary is the manifest's update.canary,
  // an explicit 0 is "all".
  if (p.Has("--canary")) {
    ASSIGN_OR_RETURN(int64_t canary, p.Int("--canary", 0, 0));
    req.set_canary(canary);
  }
  if (p.Has("--rolling")) {
    ASSIGN_OR_RETURN(int64_t rolling, p.Int("--rolling", 0, 1));
    req.set_rolling(rolling);
  }
  req.set_project(c.project());
  req.set_kind(kind);
  req.set_group(p.Value("--group").value_or(""));
  req.set_thaw(p.Has("--thaw"));
  v1::AddTaskResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().queue->AddTask(c.d().Ctx().get(), req, &resp)));
  if (c.Structured()) c.Print(resp.task());
  else c.out() << "queued " << kind << " task " << resp.task().uuid() << "\n";
  if (p.Has("--wait")) {
    return WaitSettled(c, req.project(), 0, {resp.task().services().begin(), resp.task().services().end()});
  }
  return 0;
}

// `mariposa run SERVICE`: a run now; --wait follows it to its end and
// exits 0 only when it completed (every instance exited 0).
Result Run(Context& c, const Parsed& p) {
  v1::AddTaskRequest req;
  req.set_project(c.project());
  req.set_kind("run");
  req.add_services(p.args()[0]);
  req.set_thaw(p.Has("--thaw"));
  v1::AddTaskResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().queue->AddTask(c.d().Ctx().get(), req, &resp)));
  const std::string uuid = resp.task().uuid();
  if (!p.Has("--wait")) {
    if (c.Structured()) c.Print(resp.task());
    else c.out() << "queued run task " << uuid << " of " << p.args()[0] << "\n";
    return 0;
  }
  if (!c.Structured()) c.out() << "queued run task " << uuid << " of " << p.args()[0] << "; waiting for it to end\n";
  absl::Time start = c.clock->Now();
  absl::Duration timeout = WaitBudget(c, start, absl::Minutes(60));
  while (true) {
    v1::GetTaskRequest get;
    get.set_task(uuid);
    v1::GetTaskResponse got;
    grpc::Status st = c.d().queue->GetTask(c.d().Ctx().get(), get, &got);
    if (!st.ok() && c.d().CommandTimedOut()) break;
    RETURN_IF_ERROR(c.d().Check(st));
    const v1::Task& t = got.task();
    if (t.state() == "completed" || t.state() == "failed" || t.state() == "terminated") {
      if (c.Structured()) c.Print(t);
      else PrintTask(c, t);
      if (t.state() != "completed") {
        c.err() << "mariposa: run " << uuid << " " << t.state() << (t.error().empty() ? "" : ": " + t.error())
                << "\n";
        return 1;
      }
      return 0;
    }
    if (c.clock->Now() - start >= timeout) break;
    c.clock->SleepFor(absl::Milliseconds(300));
  }
  c.err() << "mariposa: run " << uuid << " has not ended (--timeout); `mariposa queue get " << uuid
          << "` shows where it stands\n";
  return 1;
}

}  // namespace

std::vector<Flag> ScopeFlags() {
  return {{{"--service", "--services"}, "s1,s2", "these services (default: the whole project)"},
          {{"--group"}, "G", "the services of deployment group G"}};
}

void AddTasks(cli::Registry& r) {
  const std::string g = "Tasks and freezes";
  std::vector<Flag> reprovision = JoinFlags(
      {ScopeFlags(),
       {{{"--version"}, "V,..", "only instances created for these versions (number or uuid)"},
        {{"--image"}, "I,..", "only instances of these images (uuid or name[@version])"},
        {{"--server"}, "UUID,..", "only instances on these servers"},
        {{"--instance"}, "I,..", "only these instances (uuid or alias)"},
        {{"--canary"}, "N", "stop after N replacements (default: the manifest's update.canary; 0 = all)"},
        {{"--rolling"}, "N", "replace N at a time instead of update.rolling"}},
       WaitFlags()});
  r.Add({.path = "reprovision",
         .summary = "roll instances onto the current version",
         .help = "Queues a reprovision task: instances at another spec are replaced by the current version's,\n"
                 "`rolling` at a time, never more than `max_surge` above count; an old instance goes once its\n"
                 "replacement is ready. Order: oldest project version first, then oldest instance. Filters limit\n"
                 "the instances replaced (each given filter must match). --canary N stops after N replacements and\n"
                 "completes the task; run reprovision again to continue. --wait follows the instances until every\n"
                 "service is converged (as apply --wait).",
         .group = g,
         .flags = reprovision,
         .project = ProjectUse::kRequired,
         .run = [](Context& c, const Parsed& p) { return AddTask(c, p, "reprovision"); }});
  r.Add({.path = "run",
         .args = "SERVICE",
         .summary = "run a scheduled or event service now",
         .help = "Queues a run of SERVICE (service_type event, or scheduled outside its schedule): its instances\n"
                 "are created, run until they exit, the outcome is recorded on the task (completed when every\n"
                 "instance exited 0, else failed with the statuses) and they are removed (run.history keeps the\n"
                 "last ones). The service's run.concurrency applies; a freeze holds it until thawed. --wait\n"
                 "follows the run to its end and exits 0 only when it completed.",
         .group = g,
         .flags = {{{"--wait"}, "", "wait for the run to end; exit 0 only when it completed"},
                   {{"--thaw"}, "", "end a freeze that covers the service (else the run is refused)"}},
         .min_args = 1,
         .max_args = 1,
         .project = ProjectUse::kRequired,
         .run = Run});
  std::vector<Flag> scope = JoinFlags({ScopeFlags(), WaitFlags()});
  for (const auto& [kind, summary, help] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"start", "start stopped instances",
            "Queues a start task: stopped instances of the scope are started (not replaced) and the services\n"
            "run again as the manifest says."},
           {"stop", "stop instances until start",
            "Queues a stop task: running instances of the scope are stopped and stay stopped (none is created\n"
            "or replaced) until `mariposa start`."}}) {
    r.Add({.path = kind,
           .summary = summary,
           .help = help,
           .group = g,
           .flags = scope,
           .project = ProjectUse::kRequired,
           .run = [kind = kind](Context& c, const Parsed& p) { return AddTask(c, p, kind); }});
  }
}

}  // namespace mariposa::cmd
