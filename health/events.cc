#include "health/events.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "common/log.h"

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
    e.detail = c.flapping ? absl::StrCat(c.check, ": flapping (", HealthName(c.to), ")")
                          : absl::StrCat(c.check, ": ", HealthName(c.from), " -> ", HealthName(c.to),
                                         c.detail.empty() ? "" : " (" + c.detail + ")");
    events.push_back(std::move(e));
  }
  return store->AppendEvents(events);
}

HealthEventSink::HealthEventSink(ProjectStore* store, absl::Duration every) : store_(store), every_(every) {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      cv_.wait_for(l, absl::ToChronoMilliseconds(every_), [this] { return stop_; });
      Flush(l);
    }
    Flush(l);
  });
}

HealthEventSink::~HealthEventSink() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HealthEventSink::Add(const std::vector<HealthChange>& changes) {
  std::lock_guard<std::mutex> l(mu_);
  pending_.insert(pending_.end(), changes.begin(), changes.end());
}

int64_t HealthEventSink::transactions() const {
  std::lock_guard<std::mutex> l(mu_);
  return transactions_;
}

void HealthEventSink::Flush(std::unique_lock<std::mutex>& l) {
  if (pending_.empty()) return;
  std::vector<HealthChange> batch;
  batch.swap(pending_);
  transactions_++;
  l.unlock();
  if (auto st = WriteHealthEvents(store_, batch); !st.ok()) {
    LogError("cannot write health events", {{"error", st.ToString()}, {"events", absl::StrCat(batch.size())}});
  }
  l.lock();
}

}  // namespace mariposa::health
