// mariposa apply (and the code diff shares with it).
#include "cli/command.h"
#include "cli/plan_text.h"

namespace mariposa::cmd {

// `apply --yes` (no --force): one call, the plan made and committed in one
// transaction against whatever version is current (there is no plan to
// protect with --previous unless one is given); printed as the two-step
// apply prints it.
Result ApplyAtOnce(Context& c, const Parsed& p, v1::ApplyRequest req) {
  req.set_dry_run(false);
  auto previous = p.Value("--previous");
  req.set_previous_version(previous.value_or(""));
  req.set_force(!previous.has_value());  // skips only the --previous check: downgrades stay refused
  req.set_allow_downgrade(false);
  req.set_message(p.Value("--message").value_or(""));
  v1::ApplyResponse resp;
  grpc::Status st = c.d().projects->Apply(c.d().Ctx().get(), req, &resp);
  if (!st.ok()) {
    // Refused (a downgrade, a frozen scope, a stale --previous): the plan it
    // was refused on is shown, as the two-step apply shows it, then why.
    v1::ApplyRequest dry = req;
    dry.set_dry_run(true);
    v1::ApplyResponse plan;
    if (!c.Structured() && c.d().projects->Apply(c.d().Ctx().get(), dry, &plan).ok() && !plan.diff().empty()) {
      c.out() << cli::PlanHeader(plan.project(), c.d().addr());
      PrintDiff(c, plan.diff());
      c.out() << cli::PlanSummary(plan.diff());
    }
    RETURN_IF_ERROR(c.d().Check(st));
  }
  for (const auto& w : resp.warnings()) c.err() << "warning: " << w << "\n";
  if (c.PrintIfStructured(resp)) return 0;
  c.out() << cli::PlanHeader(resp.project(), c.d().addr());
  if (resp.has_datacenter_rollout()) {
    PrintDiff(c, resp.diff());
    c.out() << cli::PlanSummary(resp.diff());
    return FollowRollout(c, resp.datacenter_rollout(), p.Has("--wait"));
  }
  if (!resp.changed()) {
    c.out() << "no changes: the manifest matches version " << resp.version().number() << " ("
            << resp.version().uuid() << ")\n";
    return 0;
  }
  PrintDiff(c, resp.diff());
  c.out() << cli::PlanSummary(resp.diff());
  c.out() << (resp.project_created() ? "created project and " : "") << "applied version " << resp.version().number()
          << " (" << resp.version().uuid() << ")\n";
  PrintRollout(c, resp.rollout_task(), resp.rollout_services());
  if (p.Has("--wait")) return WaitSettled(c, resp.version().project_uuid(), resp.version().number());
  return 0;
}

Result RunApply(Context& c, const Parsed& p, bool dry_run) {
  auto file = p.Value("--file");
  if (!file) return Usage(dry_run ? "diff needs -f FILE" : "apply needs -f FILE");
  bool wait = p.Has("--wait");
  bool yes = p.Has("--yes");
  bool force = p.Has("--force");
  bool thaw = p.Has("--thaw");
  ASSIGN_OR_RETURN(std::string text, c.ReadInput(*file));
  v1::ApplyRequest req;
  req.set_project(c.project());
  req.set_manifest(text);
  req.set_filename(*file == "-" ? "<stdin>" : *file);
  req.set_thaw(thaw);
  req.set_allow_downgrade(force);
  if (!dry_run && yes && !force) return ApplyAtOnce(c, p, req);
  req.set_dry_run(true);
  v1::ApplyResponse plan;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->Apply(c.d().Ctx().get(), req, &plan)));
  for (const auto& w : plan.warnings()) c.err() << "warning: " << w << "\n";
  if (dry_run && c.Structured()) {
    c.Print(plan);
    return plan.changed() ? 1 : 0;  // diff: 0 no changes, 1 changes, 2 trouble
  }
  if (!c.Structured()) c.out() << cli::PlanHeader(plan.project(), c.d().addr());
  // What runs besides the manifest: instances whose meta values changed.
  const std::string& existing = plan.version().project_uuid();
  if (plan.diff().empty()) {
    c.out() << "no changes: the manifest matches version " << plan.base_version_number() << " ("
            << plan.base_version() << ")\n";
    if (dry_run && !existing.empty()) PrintStaleMeta(c, existing);
    if (!force || plan.base_version().empty()) return 0;
    // sdcadm's forced same-image update: every instance reprovisioned or
    // replaced, every agent reinstalled, at the image it runs.
    c.out() << "--force: every service's current image will be installed again (instances replaced or "
               "reprovisioned, agents reinstalled on every selected server), at each service's update.rolling\n";
    if (dry_run) return 1;
    ASSIGN_OR_RETURN(bool go, c.Confirm("Reinstall every service?", yes));
    if (!go) {
      c.out() << "not applied\n";
      return 1;
    }
    v1::AddTaskRequest task;
    task.set_project(existing.empty() ? c.project() : existing);
    if (task.project().empty()) return Usage("no project: pass -j PROJECT or set MARIPOSA_PROJECT");
    task.set_kind("reprovision");
    task.set_thaw(thaw);
    v1::AddTaskResponse added;
    RETURN_IF_ERROR(c.d().Check(c.d().queue->AddTask(c.d().Ctx().get(), task, &added)));
    if (c.Structured()) c.Print(added.task());
    else c.out() << "queued reprovision task " << added.task().uuid() << " (forced reinstall)\n";
    if (wait) return WaitSettled(c, task.project());
    return 0;
  }
  PrintDiff(c, plan.diff());
  c.out() << cli::PlanSummary(plan.diff());
  if (dry_run) {
    if (!existing.empty()) PrintStaleMeta(c, existing);
    return 1;  // changes (0 when none, 2 on trouble)
  }
  ASSIGN_OR_RETURN(bool go, c.Confirm("Apply these changes?", yes));
  if (!go) {
    c.out() << "not applied\n";
    return 1;
  }
  req.set_dry_run(false);
  req.set_previous_version(p.Value("--previous").value_or(plan.base_version()));
  req.set_force(force);
  req.set_message(p.Value("--message").value_or(""));
  v1::ApplyResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->Apply(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  if (resp.has_datacenter_rollout()) return FollowRollout(c, resp.datacenter_rollout(), wait);
  if (!resp.changed()) {
    c.out() << "no changes: version " << resp.version().number() << " is current\n";
  } else {
    c.out() << (resp.project_created() ? "created project and " : "") << "applied version " << resp.version().number()
            << " (" << resp.version().uuid() << ")\n";
  }
  PrintRollout(c, resp.rollout_task(), resp.rollout_services());
  if (wait) return WaitSettled(c, resp.version().project_uuid(), resp.changed() ? resp.version().number() : 0);
  return 0;
}

void AddApply(cli::Registry& r) {
  std::vector<Flag> flags = JoinFlags(
      {{{{"-f", "--file"}, "FILE", "the manifest, YAML or JSON (- for stdin)"},
        {{"-y", "--yes"}, "", "do not ask"},
        {{"--force"}, "", "skip the --previous check and allow image downgrades; unchanged: reinstall every service"},
        {{"--previous"}, "VERSION", "refuse unless VERSION is still current (default: the one the plan was made against)"},
        {{"-m", "--message"}, "MESSAGE", "why, kept with the version"}},
       WaitFlags()});
  r.Add({.path = "apply",
         .summary = "store a manifest as a new version after showing the plan",
         .help = "Validates FILE, shows what changes against the version in force (the project and the mariposad\n"
                 "it targets first, a summary line last), asks for confirmation (or --yes) and stores a new\n"
                 "version. The version the plan was computed against is sent as --previous, so a concurrent change\n"
                 "is refused instead of overwritten; with --yes (and no --force) the plan is made and stored in one\n"
                 "call, against the version current then. Applying an unchanged manifest is a no-op. Services whose\n"
                 "instance spec changes are rolled out by a reprovision task, update.rolling at a time, unless the\n"
                 "service says update.on_change: manual.\n"
                 "The project is -j, $MARIPOSA_PROJECT or the manifest's project:; when both are given and differ,\n"
                 "it is refused, naming both.\n"
                 "--wait follows the instances until every service is converged, printing each verdict change;\n"
                 "exits 1 with the reason and fix when one is paused or failed, or when --timeout (default 10m)\n"
                 "passes.",
         .group = "Manifests and versions",
         .flags = flags,
         .project = ProjectUse::kOptional,
         .run = [](Context& c, const Parsed& p) { return RunApply(c, p, false); }});
}

}  // namespace mariposa::cmd
