// mariposa apply, diff, scale, and the --wait that follows them.
#include "cli/cli.h"

namespace mariposa::cmd {

int Cli::WaitSettled(const std::string& project, absl::Duration timeout) {
  absl::Time start = clock_->Now();
  std::string last;
  while (true) {
    v1::GetStateRequest req;
    req.set_project(project);
    v1::GetStateResponse st;
    Check(state_->GetState(Ctx().get(), req, &st));
    std::vector<std::string> parts;
    std::vector<std::string> stuck;
    std::set<std::string> left_behind;  // services with instances on an older spec and no rollout
    for (const auto& p : st.problems()) {
      if (p.kind() == "older-spec") left_behind.insert(p.service());
    }
    for (const auto& s : st.services()) {
      parts.push_back(absl::StrCat(s.name(), " ", s.verdict(), s.reason().empty() ? "" : ": " + s.reason()));
      if (s.verdict() == "failed" || s.verdict() == "paused" || left_behind.count(s.name())) {
        stuck.push_back(absl::StrCat(s.name(), " is ", s.verdict(), ": ", s.reason(),
                                     s.fix().empty() ? "" : absl::StrCat("\n  fix: ", s.fix())));
      }
    }
    std::string line = absl::StrJoin(parts, "; ");
    int secs = static_cast<int>(absl::ToInt64Seconds(clock_->Now() - start));
    if (line != last) {
      std::cout << "[" << secs << "s] " << line << "\n";
      std::cout.flush();
      last = line;
    }
    if (st.converged()) {
      std::cout << "converged after " << secs << "s\n";
      return 0;
    }
    if (!stuck.empty()) {
      for (const auto& m : stuck) std::cerr << "mariposa: " << m << "\n";
      for (const auto& p : st.problems()) PrintProblem(p, std::cerr);
      return 1;
    }
    if (clock_->Now() - start > timeout) {
      std::cerr << "mariposa: not converged after " << absl::FormatDuration(timeout)
                << "; `mariposa status -v` and `mariposa queue list` show where it stands\n";
      return 1;
    }
    clock_->SleepFor(absl::Milliseconds(300));
  }
}

int Cli::Apply(Args& a, bool dry_run) {
  auto file = a.Value({"-f", "--file"});
  bool wait = a.Flag({"--wait"});
  absl::Duration timeout = WaitTimeout(a.Value({"--timeout"}));
  bool yes = a.Flag({"--yes", "-y"});
  bool force = a.Flag({"--force"});
  bool thaw = !dry_run && a.Flag({"--thaw"});
  auto previous = a.Value({"--previous"});
  auto message = a.Value({"-m", "--message"});
  a.Positional(1, 1, dry_run ? "diff -f FILE" : "apply -f FILE");
  if (!file) throw UsageError{dry_run ? "diff needs -f FILE" : "apply needs -f FILE"};
  std::string text = ReadInput(*file);
  v1::ApplyRequest req;
  req.set_project(project_);
  req.set_manifest(text);
  req.set_filename(*file == "-" ? "<stdin>" : *file);
  req.set_thaw(thaw);
  req.set_allow_downgrade(force);
  req.set_dry_run(true);
  v1::ApplyResponse plan;
  Check(projects_->Apply(Ctx().get(), req, &plan));
  std::string name = project_;
  if (name.empty() && plan.has_version()) name = "";
  for (const auto& w : plan.warnings()) std::cerr << "warning: " << w << "\n";
  if (dry_run && Structured()) {
    Print(plan);
    return plan.changed() ? 1 : 0;  // diff: 0 no changes, 1 changes, 2 trouble
  }
  if (!Structured()) std::cout << cli::PlanHeader(plan.project(), addr_);
  // What runs besides the manifest: instances whose meta values changed.
  const std::string& existing = plan.version().project_uuid();
  if (plan.diff().empty()) {
    std::cout << "no changes: the manifest matches version " << plan.base_version_number() << " ("
              << plan.base_version() << ")\n";
    if (dry_run && !existing.empty()) PrintStaleMeta(existing);
    if (!force || plan.base_version().empty()) return 0;
    // sdcadm's forced same-image update: every instance reprovisioned or
    // replaced, every agent reinstalled, at the image it runs.
    std::cout << "--force: every service's current image will be installed again (instances replaced or "
                 "reprovisioned, agents reinstalled on every selected server), at each service's update.rolling\n";
    if (dry_run) return 1;
    if (!Confirm("Reinstall every service?", yes)) {
      std::cout << "not applied\n";
      return 1;
    }
    v1::AddTaskRequest task;
    task.set_project(plan.version().project_uuid().empty() ? project_ : plan.version().project_uuid());
    if (task.project().empty()) task.set_project(NeedProject());
    task.set_kind("reprovision");
    task.set_thaw(thaw);
    v1::AddTaskResponse added;
    Check(queue_->AddTask(Ctx().get(), task, &added));
    if (Structured()) Print(added.task());
    else std::cout << "queued reprovision task " << added.task().uuid() << " (forced reinstall)\n";
    if (wait) return WaitSettled(task.project(), timeout);
    return 0;
  }
  PrintDiff(plan.diff(), name);
  std::cout << cli::PlanSummary(plan.diff());
  if (dry_run) {
    if (!existing.empty()) PrintStaleMeta(existing);
    return 1;  // changes (0 when none, 2 on trouble)
  }
  if (!Confirm("Apply these changes?", yes)) {
    std::cout << "not applied\n";
    return 1;
  }
  req.set_dry_run(false);
  req.set_previous_version(previous ? *previous : plan.base_version());
  req.set_force(force);
  req.set_message(message.value_or(""));
  v1::ApplyResponse resp;
  Check(projects_->Apply(Ctx().get(), req, &resp));
  if (Structured()) {
    Print(resp);
    return 0;
  }
  if (!resp.changed()) {
    std::cout << "no changes: version " << resp.version().number() << " is current\n";
  } else {
    std::cout << (resp.project_created() ? "created project and " : "") << "applied version "
              << resp.version().number() << " (" << resp.version().uuid() << ")\n";
  }
  PrintRollout(resp.rollout_task(), resp.rollout_services());
  if (wait) return WaitSettled(resp.version().project_uuid(), timeout);
  return 0;
}

int Cli::ScaleCmd(Args& a) {
  bool dry_run = a.Flag({"--dry-run"});
  bool wait = a.Flag({"--wait"});
  bool thaw = a.Flag({"--thaw"});
  absl::Duration timeout = WaitTimeout(a.Value({"--timeout"}));
  auto rest = a.Positional(2, 1000, "scale SERVICE=N ...");
  v1::ScaleRequest req;
  req.set_thaw(thaw);
  req.set_project(NeedProject());
  for (size_t i = 1; i < rest.size(); ++i) req.add_changes(rest[i]);
  req.set_dry_run(dry_run);
  v1::ScaleResponse resp;
  Check(projects_->Scale(Ctx().get(), req, &resp));
  if (Structured()) {
    Print(resp);
    return 0;
  }
  if (resp.diff().empty()) {
    std::cout << "no changes\n";
    return 0;
  }
  PrintDiff(resp.diff(), project_);
  if (!dry_run) std::cout << "applied version " << resp.version().number() << " (" << resp.version().uuid() << ")\n";
  if (wait && !dry_run) return WaitSettled(project_, timeout);
  return 0;
}

}  // namespace mariposa::cmd
