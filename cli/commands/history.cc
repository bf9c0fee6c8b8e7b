// mariposa history: versions and tasks in one timeline.
#include "cli/command.h"
#include "cli/history.h"

namespace mariposa::cmd {
namespace {

Result History(Context& c, const Parsed& p) {
  ASSIGN_OR_RETURN(int64_t n, p.Int("--limit", 50, 1));
  v1::ListVersionsRequest vreq;
  vreq.set_project(c.project());
  v1::ListVersionsResponse versions;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->ListVersions(c.d().Ctx().get(), vreq, &versions)));
  v1::ListTasksRequest treq;
  treq.set_project(vreq.project());
  treq.set_finished_limit(100000);
  v1::ListTasksResponse tasks;
  RETURN_IF_ERROR(c.d().Check(c.d().queue->ListTasks(c.d().Ctx().get(), treq, &tasks)));
  // The newest n of mariposad's changes to the project's other resources:
  // no more can be among the newest n rows.
  v1::ListEventsRequest ereq;
  ereq.set_project(vreq.project());
  ereq.set_newest(true);
  ereq.set_limit(static_cast<int32_t>(std::min<int64_t>(n, 1000)));
  for (const char* k : cli::kHistoryEventKinds) ereq.add_kinds(k);
  v1::ListEventsResponse events;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->ListEvents(c.d().Ctx().get(), ereq, &events)));
  // Events name the project; an earlier project of the same name (deleted)
  // is not this one's history.
  v1::GetProjectRequest preq;
  preq.set_project(vreq.project());
  v1::GetProjectResponse project;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->GetProject(c.d().Ctx().get(), preq, &project)));
  const google::protobuf::Timestamp& since = project.project().created_at();
  std::vector<v1::Event> own;
  for (const v1::Event& e : events.events()) {
    if (std::make_pair(e.time().seconds(), e.time().nanos()) >= std::make_pair(since.seconds(), since.nanos())) {
      own.push_back(e);
    }
  }
  std::vector<cli::HistoryRow> rows = cli::History({versions.versions().begin(), versions.versions().end()},
                                                   {tasks.tasks().begin(), tasks.tasks().end()}, own, &Time);
  size_t earlier = rows.size() > static_cast<size_t>(n) ? rows.size() - n : 0;
  rows.erase(rows.begin(), rows.begin() + earlier);  // the newest n
  if (c.Structured()) {
    std::vector<Record> records;
    for (const cli::HistoryRow& r : rows) records.push_back({{"when", r.when}, {"who", r.who}, {"what", r.what}, {"result", r.result}});
    c.PrintRecords(records);
    return 0;
  }
  if (earlier > 0) c.out() << "(" << earlier << " earlier entries; --limit " << rows.size() + earlier << " shows all)\n";
  Rows table;
  for (const cli::HistoryRow& r : rows) table.push_back({r.when, r.who, r.what, r.result});
  c.Table({"WHEN", "WHO", "WHAT", "RESULT"}, table);
  return 0;
}

}  // namespace

void AddHistory(cli::Registry& r) {
  r.Add({.path = "history",
         .summary = "versions, tasks and changes to firewall rules, fabric and volumes in one timeline: when, who, "
                    "what, result",
         .group = "Manifests and versions", .flags = {{{"-n", "--limit"}, "N", "the newest N entries (50)"}},
         .project = ProjectUse::kRequired, .run = History});
}

}  // namespace mariposa::cmd
