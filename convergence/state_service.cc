#include "convergence/state_service.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "projects/request_guard.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "convergence/observer.h"
#include "convergence/queue.h"
#include "projects/projects_service.h"

namespace mariposa::convergence {

grpc::Status StateService::GetState(grpc::ServerContext*, const v1::GetStateRequest* req,
                                    v1::GetStateResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (vmapi_ == nullptr) {
    return ToGrpc(absl::FailedPreconditionError(
        "mariposad runs without --triton: it keeps goal state only, there is no actual state to show"));
  }
  auto p = store_->GetProject(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  std::vector<ServiceRecord> services;
  if (!p->current_version.empty()) {
    auto s = store_->ListServices(p->current_version);
    if (!s.ok()) return ToGrpc(s.status());
    services = *s;
  }
  auto numbers = VersionNumbers(store_, p->uuid);
  if (!numbers.ok()) return ToGrpc(numbers.status());
  Observer observer(vmapi_);
  auto instances = observer.ObserveProject(p->uuid, *numbers);
  if (!instances.ok()) return ToGrpc(instances.status());
  auto tasks = store_->ListTasks(p->uuid, 0);
  if (!tasks.ok()) return ToGrpc(tasks.status());

  resp->set_project(p->name);
  resp->set_version(p->current_number);
  bool converged = true, settled = true;
  for (const ServiceRecord& s : services) {
    v1::ServiceStatus* st = resp->add_services();
    st->set_name(s.name);
    st->set_desired(s.count);
    st->set_stopped(p->stopped.count(s.name) > 0);
    if (reconciler_ != nullptr) st->set_paused(reconciler_->PausedBecause(p->uuid, s.name));
    if (s.compute_type == "agent") {
      // One per selected server, from CNAPI as the last sync saw it.
      st->set_agent(true);
      auto a = reconciler_ != nullptr ? reconciler_->AgentStatus(p->uuid, s.name) : std::nullopt;
      if (a.has_value()) {
        st->set_desired(a->selected);
        st->set_running(a->current);
        st->set_updating(a->outdated);
      }
      bool done = a.has_value() && a->outdated == a->unreachable;
      settled &= done;
      converged &= done && a->unreachable == 0;
      continue;
    }
    for (const TaskRecord& t : *tasks) st->set_frozen(st->frozen() || FreezeHolds(t, s.name, ""));
    std::vector<const InstanceState*> mine;
    for (const InstanceState& i : *instances) {
      if (i.service == s.name) mine.push_back(&i);
    }
    std::sort(mine.begin(), mine.end(), [](const InstanceState* a, const InstanceState* b) { return a->alias < b->alias; });
    for (const InstanceState* i : mine) {
      bool current = i->spec_hash == s.spec_hash;
      bool live = i->state == "running" || i->state == "provisioning";
      if (i->state == "running") st->set_running(st->running() + 1);
      else if (i->state == "provisioning") st->set_provisioning(st->provisioning() + 1);
      else st->set_broken(st->broken() + 1);
      if ((reconciler_ != nullptr ? reconciler_->HealthOf(i->uuid) : i->health) == "healthy") {
        st->set_healthy(st->healthy() + 1);
      }
      if (live && !current) st->set_updating(st->updating() + 1);
      v1::InstanceStatus* is = st->add_instances();
      is->set_uuid(i->uuid);
      is->set_alias(i->alias);
      is->set_state(i->state);
      std::string h = reconciler_ != nullptr ? reconciler_->HealthOf(i->uuid) : "";
      is->set_health(h.empty() ? i->health : h);
      is->set_current_spec(current);
      is->set_version(i->version);
      SetTimestamp(i->created, is->mutable_created_at());
    }
    if (st->stopped()) {
      bool down = st->running() == 0 && st->provisioning() == 0;
      converged &= down;
      settled &= down;
    } else {
      bool counts = st->running() == s.count && st->provisioning() == 0 && st->broken() == 0;
      settled &= counts;
      converged &= counts && st->updating() == 0;
    }
  }
  // Instances of services that left the manifest are not converged either.
  for (const InstanceState& i : *instances) {
    bool known = false;
    for (const ServiceRecord& s : services) known |= s.name == i.service;
    converged &= known;
    settled &= known;
  }
  resp->set_converged(converged);
  resp->set_settled(settled);
  return grpc::Status::OK;
}

grpc::Status StateService::GetHealth(grpc::ServerContext*, const v1::GetHealthRequest* req,
                                     v1::GetHealthResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (reconciler_ == nullptr || reconciler_->health() == nullptr) {
    return ToGrpc(absl::FailedPreconditionError(
        "no health checks run here: start mariposad with --triton and --embedded-health or --health-agents"));
  }
  auto p = store_->GetProject(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  std::map<std::string, std::pair<std::string, std::string>> names;  // uuid -> (alias, service)
  if (vmapi_ != nullptr) {
    auto numbers = VersionNumbers(store_, p->uuid);
    if (!numbers.ok()) return ToGrpc(numbers.status());
    auto instances = Observer(vmapi_).ObserveProject(p->uuid, *numbers);
    if (!instances.ok()) return ToGrpc(instances.status());
    for (const InstanceState& i : *instances) names[i.uuid] = {i.alias, i.service};
  }
  for (const auto& c : reconciler_->health()->Checks(p->uuid)) {
    v1::CheckStatus* out = resp->add_checks();
    out->set_instance(c.instance);
    out->set_alias(names[c.instance].first);
    out->set_service(names[c.instance].second);
    out->set_check(c.check);
    out->set_type(c.type);
    out->set_target(absl::StrCat(c.address, ":", c.port));
    out->set_state(health::HealthName(c.state));
    out->set_last_failure(c.last_detail);
    if (c.since != absl::InfinitePast()) SetTimestamp(c.since, out->mutable_since());
    out->set_agent(c.agent);
  }
  for (const auto& a : reconciler_->health()->Agents()) {
    v1::HealthAgentStatus* out = resp->add_agents();
    out->set_id(a.hello.id);
    for (const std::string& n : a.hello.networks) out->add_networks(n);
    out->set_grpc_addr(a.hello.grpc_addr);
    out->set_metrics_addr(a.hello.metrics_addr);
    SetTimestamp(a.connected, out->mutable_connected_at());
    SetTimestamp(a.last_seen, out->mutable_last_seen());
    out->set_checks(a.owned);
    out->set_checks_run(a.counters.checks_run);
    out->set_checks_failed(a.counters.checks_failed);
    out->set_lateness_p99_ms(a.counters.lateness_p99_ms);
  }
  std::sort(resp->mutable_checks()->begin(), resp->mutable_checks()->end(),
            [](const v1::CheckStatus& a, const v1::CheckStatus& b) {
              return std::tie(a.alias(), a.check()) < std::tie(b.alias(), b.check());
            });
  return grpc::Status::OK;
}

}  // namespace mariposa::convergence
