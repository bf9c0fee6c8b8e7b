// Helpers several commands share, and the Context's input.
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/command.h"
#include "cli/plan_text.h"
#include "cli/style.h"
#include "projects/limits.h"

namespace mariposa::cmd {

absl::StatusOr<bool> Context::Confirm(const std::string& question, bool yes) {
  if (yes) return true;
  if (!in_tty_) return Err("not applying without confirmation: standard input is not a terminal; pass --yes");
  out() << question << " [y/N] " << std::flush;
  std::string answer;
  std::getline(in_, answer);
  return answer == "y" || answer == "Y" || answer == "yes";
}

std::string Context::ReadValue(const std::string& prompt) {
  std::string v;
  if (in_tty_) {
    err_ << prompt << std::flush;
    termios old{};
    bool restore = tcgetattr(STDIN_FILENO, &old) == 0;
    if (restore) {
      termios quiet = old;
      quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
      tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
    }
    std::getline(in_, v);
    if (restore) tcsetattr(STDIN_FILENO, TCSANOW, &old);
    err_ << "\n";
    return v;
  }
  std::stringstream s;
  s << in_.rdbuf();
  v = s.str();
  if (!v.empty() && v.back() == '\n') v.pop_back();
  return v;
}

// Reads at most one byte past the limit: a larger file is refused here with
// the limit named, before anything is sent.
absl::StatusOr<std::string> Context::ReadInput(const std::string& path) {
  std::string text;
  std::istream* in = &in_;
  std::ifstream f;
  if (path != "-") {
    f.open(path, std::ios::binary);
    if (!f) return Err(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
    in = &f;
  }
  constexpr size_t kLimit = mariposa::Limits::kMaxManifestBytes;
  // In 64 KiB pieces up to one byte past the limit: a buffer of the whole
  // limit would be zeroed page by page on every apply (tens of ms).
  char piece[64 << 10];
  while (text.size() <= kLimit) {
    in->read(piece, static_cast<std::streamsize>(std::min(sizeof piece, kLimit + 1 - text.size())));
    text.append(piece, static_cast<size_t>(in->gcount()));
    if (!*in) break;  // the end (or an error: what was read is checked like any manifest)
  }
  if (text.size() > kLimit) {
    return Err(absl::StrCat(path == "-" ? "standard input" : path, " is larger than ", kLimit,
                            " bytes, the limit for one manifest; split the project (docs/manifest.md, \"Limits\")"));
  }
  return text;
}

std::string Time(const google::protobuf::Timestamp& t) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixSeconds(t.seconds()), absl::LocalTimeZone());
}

std::string Scope(const std::string& project) { return project.empty() ? "every project" : "project " + project; }

std::vector<std::string> SplitList(const std::optional<std::string>& v) {
  if (!v) return {};
  return absl::StrSplit(*v, ',', absl::SkipEmpty());
}

std::vector<Flag> WaitFlags() {
  return {{{"--wait"}, "", "follow the instances until every service is converged (needs mariposad --triton)"},
          {{"--thaw"}, "", "end a freeze that covers a changed service (else the change is refused)"}};
}

std::vector<Flag> JoinFlags(const std::vector<std::vector<Flag>>& parts) {
  std::vector<Flag> out;
  for (const std::vector<Flag>& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

// A problem as RFD 40's `imgapiadm status` states it.
void PrintProblem(const v1::Problem& p, std::ostream& out) {
  out << "\nError:  " << p.error() << "\nReason: " << p.reason() << "\nFix:    " << p.fix() << "\nImpact: " << p.impact()
      << "\n";
}

// The rollout an apply or rollback queued (update.on_change: rollout).
void PrintRollout(Context& c, const std::string& task, const google::protobuf::RepeatedPtrField<std::string>& services) {
  if (task.empty()) return;
  c.out() << "rolling out " << absl::StrJoin(services, ", ") << ": queued reprovision task " << task
          << " (update.on_change: rollout)\n";
}

using cli::Plural;

void PrintDiff(Context& c, const v1::Diff& d) {
  std::ostringstream out;
  for (const auto& s : d.services()) {
    switch (s.action()) {
      case v1::ServiceChange::CREATE:
        if (s.has_image_plan()) {
          out << cli::ImagePlanText(s);
          break;
        }
        out << "create service \"" << s.service() << "\": " << Plural(s.to_count(), "instance") << " of "
            << s.to_image() << "\n";
        break;
      case v1::ServiceChange::DELETE:
        out << "delete service \"" << s.service() << "\" (" << Plural(s.from_count(), "instance") << ")\n";
        break;
      case v1::ServiceChange::UPDATE: {
        bool only_count = s.fields_size() == 1 && s.fields(0).path() == "count";
        // A scheduled or event service's count is per run: nothing is
        // scaled now, and it has no instances between runs.
        const bool runs = !s.runs().empty();
        if (s.from_count() != s.to_count()) {
          int64_t delta = s.to_count() - s.from_count();
          out << (runs ? "instances per run of \"" : "scale \"") << s.service() << "\" " << s.from_count() << " -> "
              << s.to_count() << " (" << (delta > 0 ? "+" : "") << delta << (runs ? ", from the next run" : "")
              << ")\n";
        }
        if (only_count) break;
        // With an image plan its header names the service; agents have no
        // count and are updated by their rollout.
        bool agent = s.has_image_plan() && s.image_plan().agent();
        if (s.has_image_plan()) {
          out << cli::ImagePlanText(s);
        } else if (runs) {
          out << "update \"" << s.service() << "\" " << s.runs() << " service (" << Plural(s.to_count(), "instance")
              << " per run):\n";
        } else {
          out << "update \"" << s.service() << "\" (" << Plural(s.to_count(), "instance") << "):\n";
        }
        for (const auto& f : s.fields()) {
          if (f.path() == "count") continue;
          if (f.from().empty()) out << "    + " << f.path() << ": " << f.to() << "\n";
          else if (f.to().empty()) out << "    - " << f.path() << ": " << f.from() << "\n";
          else out << "    ~ " << f.path() << ": " << f.from() << " -> " << f.to() << "\n";
        }
        bool cns = false;
        for (const auto& f : s.fields()) cns |= f.path() == "cns" || absl::StartsWith(f.path(), "cns[");
        if (cns && runs) {
          out << "    CNS names are given to the instances of its next runs (tag triton.cns.services; a run under "
                 "way keeps the names it was made with)\n";
        } else if (cns && !agent) {
          out << "    CNS names are set in place on its " << Plural(s.to_count(), "instance")
              << " (tag triton.cns.services; nothing is replaced)\n";
        }
        if (s.spec_changed() && !agent) {
          out << "    " << Plural(s.instances_replaced(), "instance")
              << (s.in_place() ? " will be reprovisioned in place (same uuid, NICs and delegate dataset)"
                               : " will be replaced")
              << (s.from_image() != s.to_image() && !s.has_image_plan() ? absl::StrCat(" from image ", s.from_image())
                                                                        : "")
              << (s.rolls_out() ? " by a rollout when applied (update.on_change: rollout)"
                                : " on the next `mariposa reprovision`")
              << "\n";
        }
        break;
      }
      default:
        break;
    }
  }
  out << cli::DownloadsText(d);
  for (const auto& f : d.project_fields()) {
    if (f.from().empty()) out << "+ " << f.path() << ": " << f.to() << "\n";
    else if (f.to().empty()) out << "- " << f.path() << ": " << f.from() << "\n";
    else out << "~ " << f.path() << ": " << f.from() << " -> " << f.to() << "\n";
  }
  // Painted line by line on a terminal: + green, - red, ~ yellow.
  std::string text = out.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.empty()) return;
  for (absl::string_view l : absl::StrSplit(text, '\n')) c.out() << cli::PaintPlanLine(std::string(l)) << "\n";
}

// Instances whose meta values changed since they were created (meta
// drift), by service; nothing when there are none or the state cannot be
// read (a daemon without --triton).
void PrintStaleMeta(Context& c, const std::string& project) {
  v1::GetStateRequest req;
  req.set_project(project);
  v1::GetStateResponse resp;
  if (!c.d().state->GetState(c.d().Ctx().get(), req, &resp).ok()) return;
  for (const auto& s : resp.services()) {
    std::vector<std::string> stale;
    for (const auto& i : s.instances()) {
      // Only instances that run or come up: preserved and stopped ones are
      // counted nowhere (stop.preserve_stopped) and are not rolled.
      bool live = i.state() == "running" || i.state() == "provisioning";
      if (i.stale_meta() && live) stale.push_back(i.alias());
    }
    if (stale.empty()) continue;
    c.out() << stale.size() << (stale.size() == 1 ? " instance" : " instances") << " of " << s.name()
            << " use older meta values: " << absl::StrJoin(stale, ", ") << "\n  `mariposa -j " << resp.project()
            << " reprovision --service " << s.name()
            << "` rolls them (update.on_meta_change: rollout does it on every change)\n";
  }
}

void PrintTask(Context& c, const v1::Task& t) {
  std::ostream& out = c.out();
  out << "task:     " << t.uuid() << "\nkind:     " << t.kind() << "\nscope:    "
      << (t.services().empty() ? "whole project" : absl::StrJoin(t.services(), ",")) << "\nstate:    " << t.state()
      << "\norigin:   " << t.origin() << (t.trigger().empty() ? "" : " (" + t.trigger() + ")")
      << "\ncreated:  " << Time(t.created_at()) << "\n";
  if (!t.actor().empty()) out << "by:       " << t.actor() << "\n";
  if (!t.reason().empty()) out << "reason:   " << t.reason() << "\n";
  if (!t.only().empty()) out << "only:     " << absl::StrJoin(t.only(), ",") << "\n";
  if (!t.wait_for().empty()) out << "waits for: " << absl::StrJoin(t.wait_for(), ",") << "\n";
  auto filter = [&](const char* name, const google::protobuf::RepeatedPtrField<std::string>& v) {
    if (!v.empty()) out << name << absl::StrJoin(v, ",") << "\n";
  };
  filter("versions: ", t.filter_versions());
  filter("images:   ", t.filter_images());
  filter("servers:  ", t.filter_servers());
  filter("instances: ", t.filter_instances());
  if (t.canary() > 0) out << "canary:   " << t.canary() << "\n";
  if (t.rolling() > 0) out << "rolling:  " << t.rolling() << "\n";
  if (t.steps_planned() > 0 || t.steps_done() > 0) {
    out << "progress: step " << t.steps_done() << "/" << std::max(t.steps_done(), t.steps_planned()) << "; created "
        << t.created() << ", deleted " << t.deleted() << ", replaced " << t.replaced() << ", failed " << t.failed()
        << "\n";
  }
  // A completed task's text is its outcome (a run's "1/1 exited 0"), not
  // an error.
  if (!t.error().empty()) out << (t.state() == "completed" ? "outcome:  " : "error:    ") << t.error() << "\n";
}

namespace {

// The version a --wait waited for is no longer current: what replaced it.
Result Superseded(Context& c, const v1::GetStateResponse& st, int64_t version) {
  v1::GetVersionRequest req;
  req.set_project(st.project());
  req.set_version(absl::StrCat(st.version()));
  v1::GetVersionResponse got;
  std::string why;
  if (c.d().projects->GetVersion(c.d().Ctx().get(), req, &got).ok()) {
    const v1::Version& v = got.version();
    why = v.origin() == "rollback"
              ? absl::StrCat(", a rollback to version ", v.rolled_back_to(), " by ", v.author())
              : absl::StrCat(", applied by ", v.author());
    if (!v.message().empty()) absl::StrAppend(&why, " (", v.message(), ")");
  }
  c.err() << "mariposa: version " << version << " did not converge: version " << st.version() << " replaced it"
          << why << "\n  `mariposa -j " << st.project()
          << " events --kind task.` and `mariposa versions` show what happened\n";
  for (const auto& p : st.problems()) PrintProblem(p, c.err());
  return 1;
}

}  // namespace

absl::Duration WaitBudget(Context& c, absl::Time start, absl::Duration fallback) {
  return c.d().deadlines().command > absl::ZeroDuration() ? c.d().CommandDeadline() - start : fallback;
}

Result WaitSettled(Context& c, const std::string& project, int64_t version, const std::vector<std::string>& scope) {
  absl::Time start = c.clock->Now();
  absl::Duration asked = c.d().deadlines().command;
  absl::Duration timeout = WaitBudget(c, start, absl::Minutes(10));
  auto gave_up = [&]() {
    c.err() << "mariposa: not converged after " << absl::FormatDuration(asked > absl::ZeroDuration() ? asked : timeout)
            << " (--timeout); `mariposa status -v` and `mariposa queue list` show where it stands\n";
    return 1;
  };
  std::string last;
  while (true) {
    v1::GetStateRequest req;
    req.set_project(project);
    v1::GetStateResponse st;
    grpc::Status got = c.d().state->GetState(c.d().Ctx().get(), req, &st);
    if (!got.ok() && c.d().CommandTimedOut()) return gave_up();
    RETURN_IF_ERROR(c.d().Check(got));
    if (version > 0 && st.version() > version) return Superseded(c, st, version);
    std::vector<std::string> parts;
    std::vector<std::string> stuck;
    std::set<std::string> left_behind;  // services with instances on an older spec and no rollout
    for (const auto& p : st.problems()) {
      // Instances on an older spec or older meta values that nothing
      // will roll (update.on_change / on_meta_change: manual).
      if (p.kind() == "older-spec" || p.kind() == "stale-meta") left_behind.insert(p.service());
    }
    const std::set<std::string> in_scope(scope.begin(), scope.end());
    bool scope_converged = !in_scope.empty();
    for (const auto& s : st.services()) {
      if (!in_scope.empty() && !in_scope.count(s.name())) continue;  // not what this command changed
      scope_converged = scope_converged && s.verdict() == "converged";
      parts.push_back(absl::StrCat(s.name(), " ", s.verdict(), s.reason().empty() ? "" : ": " + s.reason()));
      if (s.verdict() == "failed" || s.verdict() == "paused" || left_behind.count(s.name())) {
        stuck.push_back(absl::StrCat(s.name(), " is ", s.verdict(), ": ", s.reason(),
                                     s.fix().empty() ? "" : absl::StrCat("\n  fix: ", s.fix())));
      }
    }
    std::string line = absl::StrJoin(parts, "; ");
    absl::Duration waited = c.clock->Now() - start;
    int secs = static_cast<int>(absl::ToInt64Seconds(waited));
    if (line != last) {
      c.out() << "[" << secs << "s] " << line << "\n";
      c.out().flush();
      last = line;
    }
    if (st.converged()) {
      c.out() << "converged after " << secs << "s\n";
      return 0;
    }
    if (scope_converged) {
      c.out() << absl::StrJoin(scope, ", ") << " converged after " << secs
              << "s (the rest of the project is not: `mariposa -j " << st.project() << " status` shows it)\n";
      return 0;
    }
    if (!stuck.empty()) {
      for (const auto& m : stuck) c.err() << "mariposa: " << m << "\n";
      for (const auto& p : st.problems()) PrintProblem(p, c.err());
      return 1;
    }
    if (waited >= timeout) return gave_up();
    c.clock->SleepFor(std::min(absl::Milliseconds(300), timeout - waited));
  }
}

}  // namespace mariposa::cmd
