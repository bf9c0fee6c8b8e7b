#include "health/agents_service.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "health/wire.h"
#include "projects/access.h"

namespace mariposa::health {

std::vector<v1::Assignment> Chunks(const Assignment& a, absl::Duration lease, size_t chunk) {
  std::vector<v1::Assignment> out;
  auto next = [&]() -> v1::Assignment& {
    out.emplace_back();
    out.back().set_lease_ms(absl::ToInt64Milliseconds(lease));
    return out.back();
  };
  next().set_reset(a.reset);
  for (const auto& [group, target] : a.add) {
    if (static_cast<size_t>(out.back().add_size()) >= chunk) next();
    ToProto(group, target, out.back().add_add());
  }
  for (const auto& [group, key] : a.remove) {
    if (static_cast<size_t>(out.back().add_size() + out.back().remove_size()) >= chunk) next();
    v1::CheckKey* k = out.back().add_remove();
    k->set_group(group);
    size_t slash = key.find('/');
    k->set_instance(key.substr(0, slash));
    k->set_check(slash == std::string::npos ? "" : key.substr(slash + 1));
  }
  for (size_t i = 0; i + 1 < out.size(); ++i) out[i].set_more(true);
  return out;
}

HealthAgentsService::HealthAgentsService(Coordinator* coordinator, absl::Duration lease, const Clock* clock,
                                         int max_agents)
    : coordinator_(coordinator), lease_(lease), clock_(clock), max_agents_(max_agents) {
  reaper_ = std::thread([this] {
    absl::MutexLock l(&mu_);
    auto stopping = [this] { return stopping_.load(); };
    while (!stopping_) {
      clock_->AwaitUntil(&mu_, absl::Condition(&stopping),
                         clock_->Now() + std::max(lease_ / 4, absl::Milliseconds(50)));
      for (const std::string& id : coordinator_->ExpireAgents()) {
        LogInfo("health agent dropped: silent longer than its lease; its checks moved to the others",
                {{"agent", id}, {"lease", absl::FormatDuration(lease_)}});
      }
    }
  });
}

HealthAgentsService::~HealthAgentsService() {
  Stop();
  reaper_.join();
}

void HealthAgentsService::Stop() {
  absl::MutexLock l(&mu_);  // releasing it wakes the reaper
  stopping_ = true;
}

grpc::Status HealthAgentsService::Connect(grpc::ServerContext* ctx,
                                          grpc::ServerReaderWriter<v1::Assignment, v1::AgentMessage>* stream) {
  v1::AgentMessage first;
  if (!stream->Read(&first)) return grpc::Status::OK;
  if (first.hello().agent_id().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message of HealthAgents.Connect must be a hello with a non-empty agent_id");
  }
  // An agent id is bound to its credential: token or certificate "X" may
  // only be agent X (mariposad's own embedded agent is "embedded").
  std::string caller = CallerName(ctx);
  std::string bound = caller == "mariposad" ? "embedded"
                      : caller.find(':') != std::string::npos ? caller.substr(caller.find(':') + 1)
                                                             : "";
  if (!bound.empty() && first.hello().agent_id() != bound) {
    LogInfo("health agent refused: its id is not its credential's", {{"agent", first.hello().agent_id()},
                                                                      {"credential", caller}, {"peer", ctx->peer()}});
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat(caller, " may only connect as agent \"", bound, "\", not \"",
                                     first.hello().agent_id(), "\"; start the agent with --id ", bound,
                                     " or give it a credential named after its id"));
  }
  // Bounded: each agent holds two threads of mariposad.
  struct Slot {
    std::atomic<int>* n;
    ~Slot() { --*n; }
  } slot{&streams_};
  if (++streams_ > max_agents_) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("mariposad already serves ", max_agents_,
                                     " health agents (--max-health-agents); stop one or raise the limit"));
  }
  AgentHello hello;
  hello.id = first.hello().agent_id();
  hello.networks.assign(first.hello().networks().begin(), first.hello().networks().end());
  hello.grpc_addr = first.hello().grpc_addr();
  hello.metrics_addr = first.hello().metrics_addr();
  const std::string id = hello.id;
  uint64_t session = coordinator_->Connect(hello);
  LogInfo("health agent connected", {{"agent", id},
                                     {"networks", hello.networks.empty() ? "all" : absl::StrJoin(hello.networks, ",")},
                                     {"peer", ctx->peer()}});
  std::atomic<bool> reading{true};
  std::thread reader([&] {
    v1::AgentMessage m;
    while (stream->Read(&m)) {
      AgentCounters c;
      if (m.has_counters()) {
        c = {m.counters().checks_run(), m.counters().checks_failed(), m.counters().assigned(),
             m.counters().lateness_p99_ms()};
      }
      if (!coordinator_->Touch(id, session, m.has_counters() ? &c : nullptr)) break;
      if (m.changes_size() > 0) {
        std::vector<HealthChange> changes;
        changes.reserve(m.changes_size());
        for (const auto& ch : m.changes()) changes.push_back(FromProto(ch));
        coordinator_->Report(id, session, changes);
      }
    }
    reading = false;
  });
  Directory sent;
  while (reading && !stopping_ && !ctx->IsCancelled()) {
    auto a = coordinator_->TakeAssignment(id, session, absl::Milliseconds(200));
    if (!a) break;  // dropped (lease) or replaced by a newer session
    Directory now = directory_ ? directory_() : Directory{};
    if (a->empty() && now == sent) continue;
    sent = now;
    bool ok = true;
    for (v1::Assignment& m : Chunks(*a, lease_)) {
      m.set_node(now.self);
      for (const auto& [name, address] : now.live) {
        v1::NodeAddress* n = m.add_nodes();
        n->set_name(name);
        n->set_address(address);
      }
      if (!(ok = stream->Write(m))) break;
    }
    if (!ok) break;
  }
  ctx->TryCancel();
  reader.join();
  coordinator_->Disconnect(id, session);
  LogInfo("health agent disconnected", {{"agent", id}});
  return grpc::Status::OK;
}

}  // namespace mariposa::health
