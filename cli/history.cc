#include "cli/history.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace mariposa::cli {
namespace {

int64_t Nanos(const google::protobuf::Timestamp& t) {
  return static_cast<int64_t>(t.seconds()) * 1000000000 + t.nanos();
}

std::string Scope(const v1::Task& t) { return t.services().empty() ? "the project" : absl::StrJoin(t.services(), ","); }

}  // namespace

const char* const kHistoryEventKinds[4] = {"firewall.", "fabric.", "volume.", "project.delete-requested"};

std::vector<HistoryRow> History(const std::vector<v1::Version>& versions, const std::vector<v1::Task>& tasks,
                                const std::vector<v1::Event>& events,
                                std::string (*format_time)(const google::protobuf::Timestamp&)) {
  std::map<std::string, int64_t> number_of;  // version uuid -> number
  int64_t current = 0;
  for (const v1::Version& v : versions) {
    number_of[v.uuid()] = v.number();
    current = std::max(current, v.number());
  }
  struct Keyed {
    HistoryRow row;
    int order;  // versions before tasks at the same instant
    int64_t seq;
  };
  std::vector<Keyed> out;
  for (const v1::Version& v : versions) {
    HistoryRow r;
    r.at_nanos = Nanos(v.created_at());
    r.when = format_time(v.created_at());
    r.who = v.author();
    r.what = v.origin() == "rollback" ? absl::StrCat("version ", v.number(), ": rollback to version ", v.rolled_back_to())
                                      : absl::StrCat("version ", v.number(), ": ", v.origin().empty() ? "apply" : v.origin());
    absl::StrAppend(&r.what, " (", v.service_count(), v.service_count() == 1 ? " service" : " services", ", ",
                    v.hash().substr(0, 12), ")");
    if (!v.message().empty()) absl::StrAppend(&r.what, " \"", v.message(), "\"");
    if (!v.tags().empty()) absl::StrAppend(&r.what, " [", absl::StrJoin(v.tags(), ","), "]");
    r.result = v.number() == current ? "current" : absl::StrCat("replaced by version ", v.number() + 1);
    out.push_back({std::move(r), 0, v.number()});
  }
  int64_t seq = 0;
  for (const v1::Task& t : tasks) {
    HistoryRow r;
    r.at_nanos = Nanos(t.created_at());
    r.when = format_time(t.created_at());
    r.who = t.origin() == "auto" ? absl::StrCat(t.actor().empty() ? "mariposad" : t.actor(), " (auto)") : t.actor();
    r.what = absl::StrCat(t.kind(), " ", Scope(t));
    if (!t.trigger().empty()) absl::StrAppend(&r.what, " (", t.trigger(), ")");
    auto v = number_of.find(t.version());
    if (v != number_of.end()) absl::StrAppend(&r.what, " for version ", v->second);
    r.result = t.state();
    if (t.kind() != "freeze") {
      std::vector<std::string> counts;
      if (t.created() > 0) counts.push_back(absl::StrCat("+", t.created()));
      if (t.deleted() > 0) counts.push_back(absl::StrCat("-", t.deleted()));
      if (t.replaced() > 0) counts.push_back(absl::StrCat(t.replaced(), " replaced"));
      if (t.failed() > 0) counts.push_back(absl::StrCat(t.failed(), " failed"));
      if (!counts.empty()) absl::StrAppend(&r.result, " ", absl::StrJoin(counts, " "));
    }
    const std::string& why = !t.error().empty() ? t.error() : t.reason();
    if (!why.empty()) absl::StrAppend(&r.result, ": ", why);
    out.push_back({std::move(r), 1, seq++});
  }
  // "fabric.network-created" reads "fabric network created", then its detail.
  for (const v1::Event& e : events) {
    HistoryRow r;
    r.at_nanos = Nanos(e.time());
    r.when = format_time(e.time());
    r.who = e.actor();
    r.what = absl::StrCat(absl::StrReplaceAll(e.kind(), {{".", " "}, {"-", " "}}), " ", e.detail());
    r.result = absl::EndsWith(e.kind(), "-failed")     ? "failed"
               : absl::EndsWith(e.kind(), "-retained") || absl::EndsWith(e.kind(), ".retained") ? "kept"
               : absl::EndsWith(e.kind(), "-requested") ? "requested"
                                                          : "done";
    out.push_back({std::move(r), 2, e.index()});
  }
  std::stable_sort(out.begin(), out.end(), [](const Keyed& a, const Keyed& b) {
    if (a.row.at_nanos != b.row.at_nanos) return a.row.at_nanos < b.row.at_nanos;
    return a.order != b.order ? a.order < b.order : a.seq < b.seq;
  });
  // The same row again and again (a change that fails at every attempt) is
  // one row, counted, as Kubernetes counts a repeated event.
  std::vector<HistoryRow> rows;
  rows.reserve(out.size());
  int repeats = 1;
  std::string last_when;
  auto close = [&] {
    if (repeats > 1) absl::StrAppend(&rows.back().result, " (", repeats, " times, the last at ", last_when, ")");
  };
  for (Keyed& k : out) {
    if (!rows.empty() && rows.back().who == k.row.who && rows.back().what == k.row.what &&
        rows.back().result == k.row.result && k.order == 2) {
      ++repeats;
      last_when = k.row.when;
      continue;
    }
    close();
    repeats = 1;
    rows.push_back(std::move(k.row));
  }
  close();
  return rows;
}

}  // namespace mariposa::cli
