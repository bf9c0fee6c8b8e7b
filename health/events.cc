#include "health/events.h"

#include <map>

#include "absl/strings/str_cat.h"

namespace mariposa::health {

namespace {

// "[ALIAS ]CHECK: FROM -> TO[ (…)]": TO, when `detail` is of `check`.
std::string RecordedTo(const std::string& detail, const std::string& check) {
  const std::string head = check + ": ";
  size_t at = detail.rfind(head, 0) == 0 ? 0 : detail.find(" " + head);
  if (at == std::string::npos) return "";
  size_t arrow = detail.find(" -> ", at);
  if (arrow == std::string::npos) return "";
  size_t from = arrow + 4, end = detail.find(' ', from);
  return detail.substr(from, end == std::string::npos ? std::string::npos : end - from);
}

}  // namespace

std::vector<bool> AlreadyRecorded(const std::vector<HealthChange>& changes, const std::vector<EventRecord>& recent) {
  std::vector<bool> out(changes.size(), false);
  for (size_t i = 0; i < changes.size(); ++i) {
    const HealthChange& c = changes[i];
    if (c.flapping || c.from != Health::kUnknown) continue;
    for (auto e = recent.rbegin(); e != recent.rend(); ++e) {  // the newest of this instance's check
      if (e->kind != "instance.health" || e->subject != c.instance) continue;
      std::string to = RecordedTo(e->detail, c.check);
      if (to.empty()) continue;
      out[i] = to == HealthName(c.to);
      break;
    }
  }
  return out;
}

absl::Status WriteHealthEvents(ProjectStore* store, const std::vector<HealthChange>& changes) {
  std::map<std::string, std::string> names;  // project uuid -> name, once per batch
  std::map<std::string, std::vector<EventRecord>> recent;  // by project uuid: its newest health events
  std::vector<EventRecord> events;
  events.reserve(changes.size());
  for (const HealthChange& c : changes) {
    auto name = names.find(c.group);
    if (name == names.end()) {
      auto p = store->GetProject(c.group);
      name = names.emplace(c.group, p.ok() ? p->name : c.group).first;
    }
    // A first result after mariposad (or the agent) started says nothing
    // new when the log already holds that state: the event is not written
    // twice (a restart, a check moved to another agent).
    if (c.from == Health::kUnknown && !c.flapping) {
      auto r = recent.find(c.group);
      if (r == recent.end()) {
        auto got = store->ListNewestEvents(name->second, 0, kRecentHealthEvents, {"instance.health"});
        r = recent.emplace(c.group, got.ok() ? std::move(*got) : std::vector<EventRecord>{}).first;
      }
      if (AlreadyRecorded({c}, r->second)[0]) continue;
    }
    EventRecord e;
    e.actor = "mariposad";
    e.project = name->second;
    e.kind = c.flapping ? "instance.flapping" : "instance.health";
    e.subject = c.instance;
    // "jupiter-web-1 http: healthy -> unhealthy (…)": the instance by name.
    const std::string who = c.alias.empty() ? "" : c.alias + " ";
    e.detail = c.flapping ? absl::StrCat(who, c.check, ": flapping (", HealthName(c.to), ")")
                          : absl::StrCat(who, c.check, ": ", HealthName(c.from), " -> ", HealthName(c.to),
                                         c.detail.empty() ? "" : " (" + c.detail + ")");
    events.push_back(std::move(e));
  }
  if (events.empty()) return absl::OkStatus();
  return store->AppendEvents(events);
}

}  // namespace mariposa::health
