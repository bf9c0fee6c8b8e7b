#include "health/events.h"

#include <map>

#include "absl/strings/str_cat.h"

namespace mariposa::health {

absl::Status WriteHealthEvents(ProjectStore* store, const std::vector<HealthChange>& changes) {
  std::map<std::string, std::string> names;  // project uuid -> name, once per batch
  std::vector<EventRecord> events;
  events.reserve(changes.size());
  for (const HealthChange& c : changes) {
    auto name = names.find(c.group);
    if (name == names.end()) {
      auto p = store->GetProject(c.group);
      name = names.emplace(c.group, p.ok() ? p->name : c.group).first;
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
  return store->AppendEvents(events);
}

}  // namespace mariposa::health
