#include "convergence/memory_codec.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace mariposa::convergence {
namespace {

using json = nlohmann::json;

// Times as Unix microseconds; the infinite past and future (never, not
// yet) as null, read back as `never`.
json T(absl::Time t) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) return nullptr;
  return absl::ToUnixMicros(t);
}
absl::Time FromT(const json& j, absl::Time never = absl::InfinitePast()) {
  return j.is_null() ? never : absl::FromUnixMicros(j.get<int64_t>());
}
json Ts(const std::deque<absl::Time>& ts) {
  json a = json::array();
  for (absl::Time t : ts) a.push_back(T(t));
  return a;
}
std::deque<absl::Time> FromTs(const json& j) {
  std::deque<absl::Time> out;
  for (const json& t : j) out.push_back(FromT(t));
  return out;
}

json History(const ServiceHistory& h) {
  const ServiceHistory::State& s = h.state();
  return {{"failures", Ts(s.failures)},         {"replaced", Ts(s.replaced)},
          {"consecutive", s.consecutive},       {"backoff_steps", s.backoff_steps},
          {"last_failure", T(s.last_failure)},  {"crashlooping", s.crashlooping},
          {"next_attempt", T(s.next_attempt)}};
}
ServiceHistory FromHistory(const json& j) {
  ServiceHistory::State s;
  s.failures = FromTs(j.at("failures"));
  s.replaced = FromTs(j.at("replaced"));
  s.consecutive = j.at("consecutive").get<int>();
  s.backoff_steps = j.at("backoff_steps").get<int>();
  s.last_failure = FromT(j.at("last_failure"));
  s.crashlooping = j.at("crashlooping").get<bool>();
  s.next_attempt = FromT(j.at("next_attempt"));
  return ServiceHistory(std::move(s));
}

// install_times is not kept: a statistic of the last installs (slow
// servers), it refills after a restart, and keeping it would write the
// store at every install of a rollout.
json Service(const ServiceMemory& m) {
  json reinstalled = json::object();
  for (const auto& [task, servers] : m.reinstalled) reinstalled[task] = servers;
  return {{"spec_hash", m.spec_hash},
          {"history", History(m.history)},
          {"budget_event", T(m.budget_event)},
          {"pause_reason", m.pause_reason},
          {"install_image", m.install_image},
          {"install_failures", m.install_failures},
          {"install_attempts", m.install_attempts},
          {"install_retry", T(m.install_retry)},
          {"reinstalled", reinstalled},
          {"import_error", m.import_error},
          {"import_failures", m.import_failures},
          {"import_retry", T(m.import_retry)}};
}
ServiceMemory FromService(const json& j) {
  ServiceMemory m;
  m.spec_hash = j.at("spec_hash").get<std::string>();
  m.history = FromHistory(j.at("history"));
  m.budget_event = FromT(j.at("budget_event"));
  m.pause_reason = j.at("pause_reason").get<std::string>();
  m.install_image = j.at("install_image").get<std::string>();
  m.install_failures = j.at("install_failures").get<std::map<std::string, std::string>>();
  m.install_attempts = j.at("install_attempts").get<std::map<std::string, int>>();
  m.install_retry = FromT(j.at("install_retry"));
  for (const auto& [task, servers] : j.at("reinstalled").items()) {
    m.reinstalled[task] = servers.get<std::set<std::string>>();
  }
  m.import_error = j.at("import_error").get<std::string>();
  m.import_failures = j.at("import_failures").get<int>();
  m.import_retry = FromT(j.at("import_retry"));
  return m;
}

}  // namespace

std::string EncodeMemory(const std::map<std::string, ServiceMemory>& memory,
                         const std::vector<PendingChange>& pending) {
  json services = json::object();
  for (const auto& [name, m] : memory) services[name] = Service(m);
  json out{{"v", 1}, {"services", services}};
  // Absent when empty: the text of a memory without any stays as it was.
  for (const PendingChange& c : pending) {
    const EventRecord& e = c.done;
    out["pending"].push_back({{"api", c.api}, {"key", c.key}, {"time", T(e.time)}, {"actor", e.actor},
                              {"project", e.project}, {"kind", e.kind}, {"subject", e.subject}, {"detail", e.detail}});
  }
  return out.dump();
}

absl::StatusOr<std::map<std::string, ServiceMemory>> DecodeMemory(const std::string& text,
                                                                  std::vector<PendingChange>* pending) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return absl::DataLossError("the controller's memory is not JSON");
  if (j.value("v", 0) != 1) {
    return absl::DataLossError(absl::StrCat("the controller's memory has version ", j.value("v", 0),
                                            "; this mariposad reads version 1"));
  }
  std::map<std::string, ServiceMemory> out;
  try {
    for (const auto& [name, m] : j.at("services").items()) out[name] = FromService(m);
    if (pending != nullptr && j.contains("pending")) {
      for (const json& c : j.at("pending")) {
        pending->push_back({c.at("api"), c.at("key"),
                            EventRecord{0, FromT(c.at("time")), c.at("actor"), c.at("project"), c.at("kind"),
                                        c.at("subject"), c.at("detail")}});
      }
    }
  } catch (const json::exception& e) {
    return absl::DataLossError(absl::StrCat("the controller's memory cannot be read: ", e.what()));
  }
  return out;
}

}  // namespace mariposa::convergence
