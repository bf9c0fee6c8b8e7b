// mariposa events [-f]: the log, newest first by default; -f follows it
// across mariposad restarts.
#include <algorithm>
#include <utility>

#include "cli/command.h"

namespace mariposa::cmd {
namespace {

void EventLine(Context& c, const v1::Event& e) {
  if (c.Structured()) c.Print(e);
  else c.out() << e.index() << "  " << Time(e.time()) << "  " << e.project() << "  " << e.kind() << "  " << e.actor()
               << "  " << e.detail() << "\n";
  c.out().flush();
}

// Prints events as they are written; when mariposad goes away (a restart)
// it reconnects and resumes after the last index it printed. Ends when
// interrupted, or quietly when --timeout passes.
Result Follow(Context& c, const std::string& project, int64_t after, bool tail, const std::vector<std::string>& kinds) {
  if (tail) {
    // From now on: the newest event's index, so that a reconnect resumes
    // there and not from the beginning.
    v1::ListEventsRequest last;
    last.set_project(project);
    last.set_limit(1);
    last.set_newest(true);
    v1::ListEventsResponse got;
    RETURN_IF_ERROR(c.d().Check(c.d().projects->ListEvents(c.d().Ctx().get(), last, &got)));
    if (!got.events().empty()) after = got.events(0).index();
  }
  absl::Duration backoff = absl::Milliseconds(200);
  while (true) {
    v1::WatchEventsRequest req;
    req.set_project(project);
    req.set_after_index(after);
    for (const std::string& k : kinds) req.add_kinds(k);
    auto ctx = c.d().Ctx(/*watch=*/true);
    auto reader = c.d().events->Watch(ctx.get(), req);
    v1::Event e;
    while (reader->Read(&e)) {
      EventLine(c, e);
      after = e.index();
      backoff = absl::Milliseconds(200);
    }
    grpc::Status st = reader->Finish();
    if (st.ok()) return 0;
    if (c.d().CommandTimedOut()) return 0;  // --timeout: follow that long
    if (st.error_code() != grpc::StatusCode::UNAVAILABLE) return c.d().Check(st);
    c.err() << "mariposa: lost mariposad at " << c.d().addr() << " (" << st.error_message()
            << "); reconnecting, resuming after event " << after << "\n";
    c.clock->SleepFor(std::min(backoff, c.d().CommandDeadline() - c.clock->Now()));
    backoff = std::min(backoff * 2, absl::Seconds(5));
    RETURN_IF_ERROR(c.d().Connect());
  }
}

// The project's newest events in every data center (issue 52, point 5),
// one timeline: each data center's own log, asked through this mariposad.
Result EventsAcross(Context& c, const Parsed& p) {
  if (c.project().empty()) return Usage("events --datacenters needs the project (-j)");
  ASSIGN_OR_RETURN(int64_t limit, p.Int("--limit", 100, 1));
  v1::ProjectAcrossRequest req;
  req.set_project(c.project());
  req.set_events(static_cast<int32_t>(std::min<int64_t>(limit, 1000)));
  v1::ProjectAcrossResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().state->ProjectAcross(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  std::vector<std::pair<const v1::Event*, std::string>> all;
  for (const auto& d : resp.datacenters()) {
    for (const auto& e : d.events()) all.push_back({&e, d.datacenter()});
    if (!d.events_error().empty()) {
      c.err() << "mariposa: the events of data center " << d.datacenter() << " could not be read: " << d.events_error()
              << "\n";
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.first->time().seconds(), a.first->time().nanos()) <
           std::make_pair(b.first->time().seconds(), b.first->time().nanos());
  });
  Rows rows;
  for (const auto& [e, dc] : all) {
    rows.push_back({Time(e->time()), dc, absl::StrCat(e->index()), e->kind(), e->actor(), e->detail()});
  }
  c.Table({"TIME", "DATACENTER", "INDEX", "KIND", "ACTOR", "DETAIL"}, rows);
  for (const auto& d : resp.datacenters()) {
    if (!d.answered()) c.err() << "(data center " << d.datacenter() << " did not answer: " << d.error() << ")\n";
  }
  return 0;
}

Result Events(Context& c, const Parsed& p) {
  if (p.Has("--datacenters")) return EventsAcross(c, p);
  const std::string project = p.Has("--all-projects") ? "" : c.project();
  bool all = p.Has("--all");
  bool after_given = p.Has("--after");
  ASSIGN_OR_RETURN(int64_t after, p.Int("--after", 0, 0));
  const std::vector<std::string> kinds = SplitList(p.Value("--kind"));
  if (p.Has("--follow")) return Follow(c, project, after, !after_given, kinds);
  ASSIGN_OR_RETURN(int64_t limit, p.Int("--limit", 100, 1));
  // Default: the newest --limit; --after: from that index on (oldest first);
  // --all: everything, read a page at a time.
  v1::ListEventsRequest req;
  req.set_project(project);
  req.set_after_index(after);
  req.set_limit(all ? 1000 : static_cast<int32_t>(limit));
  req.set_newest(!all && !after_given);
  for (const std::string& k : kinds) req.add_kinds(k);
  std::vector<v1::Event> events;
  v1::ListEventsResponse resp;
  while (true) {
    resp.Clear();
    RETURN_IF_ERROR(c.d().Check(c.d().projects->ListEvents(c.d().Ctx().get(), req, &resp)));
    for (const auto& e : resp.events()) events.push_back(e);
    if (!all || resp.events().empty() || resp.later() == 0) break;
    req.set_after_index(resp.events().rbegin()->index());
  }
  if (c.Structured()) {
    v1::ListEventsResponse out;
    for (auto& e : events) *out.add_events() = std::move(e);
    out.set_earlier(all ? 0 : resp.earlier());
    out.set_later(resp.later());
    c.Print(out);
    return 0;
  }
  Rows rows;
  for (const auto& e : events) {
    rows.push_back({absl::StrCat(e.index()), Time(e.time()), e.project(), e.kind(), e.actor(), e.detail()});
  }
  c.Table({"INDEX", "TIME", "PROJECT", "KIND", "ACTOR", "DETAIL"}, rows);
  if (!all && resp.earlier() > 0) {
    c.err() << "(" << resp.earlier() << " earlier event" << (resp.earlier() == 1 ? "" : "s")
            << " not shown: --all shows every one, --after INDEX pages from an index)\n";
  }
  if (!all && resp.later() > 0 && !events.empty()) {
    c.err() << "(" << resp.later() << " later event" << (resp.later() == 1 ? "" : "s") << ": --after "
            << events.back().index() << " for the next page)\n";
  }
  return 0;
}

}  // namespace

void AddEvents(cli::Registry& r) {
  r.Add({.path = "events",
         .summary = "the newest events of the project (every project without -j); -f follows",
         .help = "Lists the newest N (--limit, default 100) events, oldest first, and says how many earlier ones\n"
                 "there are. --after INDEX lists from that index on (a page of N); --all lists every one. Without\n"
                 "-j (or with -A) every project's. -f follows: prints new events as they happen (from INDEX with\n"
                 "--after, else from now on) until interrupted or --timeout passes, reconnecting when mariposad\n"
                 "restarts and resuming after the last event printed.\n"
                 "--datacenters: the project's newest N events in every data center (this mariposad's --peers),\n"
                 "one timeline, each row naming its data center.",
         .group = "Log and controller",
         .flags = {{{"-n", "--limit"}, "N", "the newest N (100)"},
                   {{"--after"}, "INDEX", "from this index on"},
                   {{"--all"}, "", "every event"},
                   {{"-A", "--all-projects"}, "", "every project's, even with -j"},
                   {{"-f", "--follow"}, "", "print new events as they happen"},
                   {{"--datacenters"}, "", "the project's events in every data center, one timeline"},
                   {{"-k", "--kind"}, "KINDS", "only these kinds, comma-separated; a prefix ending in . takes all "
                                              "under it (volume.,fabric.,task.completed)"}},
         .project = ProjectUse::kOptional,
         .run = Events});
}

}  // namespace mariposa::cmd
