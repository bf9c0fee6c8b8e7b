// mariposa events, events -f.
#include "cli/cli.h"

namespace mariposa::cmd {

int Cli::Events(Args& a) {
  auto after = a.Value({"--after"});
  auto limit = a.Value({"--limit", "-n"});
  bool all = a.Flag({"--all"});
  bool all_projects = a.Flag({"--all-projects", "-A"});
  bool follow = a.Flag({"-f", "--follow"});
  a.Positional(1, 1, "events");
  const std::string project = all_projects ? "" : project_;
  int64_t n = 0;
  if (after && !absl::SimpleAtoi(*after, &n)) throw UsageError{"--after needs an event index"};
  auto line = [](const v1::Event& e) {
    return std::vector<std::string>{absl::StrCat(e.index()), Time(e.time()), e.project(), e.kind(), e.actor(), e.detail()};
  };
  if (follow) return FollowEvents(project, n, !after.has_value());
  int lim = 100;
  if (limit && (!absl::SimpleAtoi(*limit, &lim) || lim < 1)) throw UsageError{"--limit needs a positive number"};
  // Default: the newest --limit; --after: from that index on (oldest first);
  // --all: everything, read a page at a time.
  v1::ListEventsRequest req;
  req.set_project(project);
  req.set_after_index(n);
  req.set_limit(all ? 1000 : lim);
  req.set_newest(!all && !after);
  std::vector<v1::Event> events;
  v1::ListEventsResponse resp;
  while (true) {
    resp.Clear();
    Check(projects_->ListEvents(Ctx().get(), req, &resp));
    for (const auto& e : resp.events()) events.push_back(e);
    if (!all || resp.events().empty() || resp.later() == 0) break;
    req.set_after_index(resp.events().rbegin()->index());
  }
  if (Structured()) {
    v1::ListEventsResponse out;
    for (auto& e : events) *out.add_events() = std::move(e);
    out.set_earlier(all ? 0 : resp.earlier());
    out.set_later(resp.later());
    Print(out);
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : events) rows.push_back(line(e));
  Table({"INDEX", "TIME", "PROJECT", "KIND", "ACTOR", "DETAIL"}, rows);
  if (!all && resp.earlier() > 0) {
    std::cerr << "(" << resp.earlier() << " earlier event" << (resp.earlier() == 1 ? "" : "s")
              << " not shown: --all shows every one, --after INDEX pages from an index)\n";
  }
  if (!all && resp.later() > 0 && !events.empty()) {
    std::cerr << "(" << resp.later() << " later event" << (resp.later() == 1 ? "" : "s") << ": --after "
              << events.back().index() << " for the next page)\n";
  }
  return 0;
}

// events -f: prints events as they are written; when mariposad goes away
// (a restart) it reconnects and resumes after the last index it printed.
int Cli::FollowEvents(const std::string& project, int64_t after, bool tail) {
  if (tail) {
    // From now on: the newest event's index, so that a reconnect resumes
    // there and not from the beginning.
    v1::ListEventsRequest last;
    last.set_project(project);
    last.set_limit(1);
    last.set_newest(true);
    v1::ListEventsResponse got;
    Check(projects_->ListEvents(Ctx().get(), last, &got));
    if (!got.events().empty()) after = got.events(0).index();
    tail = false;
  }
  absl::Duration backoff = absl::Milliseconds(200);
  while (true) {
    v1::WatchEventsRequest req;
    req.set_project(project);
    req.set_after_index(after);
    req.set_tail(tail);
    auto ctx = Ctx(/*deadline=*/false);
    auto reader = events_->Watch(ctx.get(), req);
    v1::Event e;
    while (reader->Read(&e)) {
      if (Structured()) {
        Print(e);
      } else {
        std::cout << e.index() << "  " << Time(e.time()) << "  " << e.project() << "  " << e.kind() << "  " << e.actor()
                  << "  " << e.detail() << "\n";
      }
      std::cout.flush();
      after = e.index();
      tail = false;
      backoff = absl::Milliseconds(200);
    }
    grpc::Status st = reader->Finish();
    if (st.ok()) return 0;
    if (st.error_code() != grpc::StatusCode::UNAVAILABLE) Check(st);
    std::cerr << "mariposa: lost mariposad at " << addr_ << " (" << st.error_message() << "); reconnecting, resuming after event "
              << after << "\n";
    clock_->SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(5));
    Connect();
  }
}

}  // namespace mariposa::cmd
