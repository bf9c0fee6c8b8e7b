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
  std::map<std::string, std::vector<const EventRecord*>> by_instance;  // oldest first
  for (const EventRecord& e : recent) {
    if (e.kind == "instance.health") by_instance[e.subject].push_back(&e);
  }
  std::vector<bool> out(changes.size(), false);
  for (size_t i = 0; i < changes.size(); ++i) {
    const HealthChange& c = changes[i];
    auto events = by_instance.find(c.instance);
    if (c.flapping || c.from != Health::kUnknown || events == by_instance.end()) continue;
    for (auto e = events->second.rbegin(); e != events->second.rend(); ++e) {  // the newest of this check
      std::string to = RecordedTo((*e)->detail, c.check);
      if (to.empty()) continue;
      out[i] = to == HealthName(c.to);
      break;
    }
  }
  return out;
}

absl::Status WriteHealthEvents(ProjectStore* store, const std::vector<HealthChange>& changes) {
  // A first result after mariposad (or the agent) started says nothing new
  // when the log already holds that state: it is not written twice (a
  // restart, a check moved to another agent). One read of each project's
  // newest health events per batch, and only for a batch with such results.
  std::map<std::string, std::vector<size_t>> firsts;  // project uuid -> indexes of first results
  for (size_t i = 0; i < changes.size(); ++i) {
    if (changes[i].from == Health::kUnknown && !changes[i].flapping) firsts[changes[i].group].push_back(i);
  }
  std::map<std::string, std::string> names;  // project uuid -> name, once per batch
  auto name_of = [&](const std::string& group) -> const std::string& {
    auto name = names.find(group);
    if (name == names.end()) {
      auto p = store->GetProject(group);
      name = names.emplace(group, p.ok() ? p->name : group).first;
    }
    return name->second;
  };
  std::vector<bool> skip(changes.size(), false);
  for (const auto& [group, indexes] : firsts) {
    auto recent = store->ListNewestEvents(name_of(group), 0, kRecentHealthEvents, {"instance.health"});
    if (!recent.ok()) continue;  // written, at worst twice
    std::vector<HealthChange> these;
    for (size_t i : indexes) these.push_back(changes[i]);
    std::vector<bool> repeated = AlreadyRecorded(these, *recent);
    for (size_t k = 0; k < indexes.size(); ++k) skip[indexes[k]] = repeated[k];
  }
  std::vector<EventRecord> events;
  events.reserve(changes.size());
  for (size_t i = 0; i < changes.size(); ++i) {
    if (skip[i]) continue;
    const HealthChange& c = changes[i];
    EventRecord e;
    e.actor = "mariposad";
    e.project = name_of(c.group);
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
