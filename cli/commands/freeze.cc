// mariposa freeze, thaw.
#include "cli/command.h"

namespace mariposa::cmd {

namespace {

Result Freeze(Context& c, const Parsed& p) {
  v1::FreezeRequest req;
  req.set_project(c.project());
  for (const auto& s : SplitList(p.Value("--service"))) req.add_services(s);
  req.set_group(p.Value("--group").value_or(""));
  req.set_reason(p.Value("--reason").value_or(""));
  for (const auto& o : SplitList(p.Value("--only"))) req.add_only(o);
  v1::FreezeResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().queue->Freeze(c.d().Ctx().get(), req, &resp)));
  if (c.Structured()) c.Print(resp.task());
  else c.out() << "frozen (task " << resp.task().uuid() << ")\n";
  return 0;
}

Result Thaw(Context& c, const Parsed& p) {
  v1::ThawRequest req;
  req.set_project(c.project());
  for (const auto& s : SplitList(p.Value("--service"))) req.add_services(s);
  req.set_group(p.Value("--group").value_or(""));
  v1::ThawResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().queue->Thaw(c.d().Ctx().get(), req, &resp)));
  c.out() << "thawed " << resp.thawed_size() << (resp.thawed_size() == 1 ? " freeze" : " freezes") << "\n";
  return 0;
}

}  // namespace

void AddFreeze(cli::Registry& r) {
  const std::string g = "Tasks and freezes";
  std::vector<Flag> freeze = ScopeFlags();
  freeze.push_back({{"--reason"}, "TEXT", "why, kept with the freeze"});
  freeze.push_back({{"--only"}, "kind,kind", "suspend just these: replace-unhealthy, scale, reprovision, agent-rollout"});
  r.Add({.path = "freeze",
         .summary = "stop automatic work on a scope until thaw",
         .help = "Terminates the tasks in scope and blocks automatic work there until `mariposa thaw`; user\n"
                 "commands are refused unless given --thaw. --only suspends just those kinds of automatic work.",
         .group = g,
         .flags = freeze,
         .project = ProjectUse::kRequired,
         .run = Freeze});
  r.Add({.path = "thaw", .summary = "end the freezes that overlap the scope", .group = g, .flags = ScopeFlags(),
         .project = ProjectUse::kRequired, .run = Thaw});
}

}  // namespace mariposa::cmd
