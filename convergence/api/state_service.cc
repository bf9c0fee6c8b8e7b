#include "convergence/api/state_service.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "projects/request_guard.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convergence/informer/observer.h"
#include "projects/task_queue.h"
#include "projects/access.h"
#include "projects/api_edge.h"

namespace mariposa::convergence {

void ProblemToProto(const Problem& p, v1::Problem* out) {
  out->set_kind(p.kind);
  out->set_service(p.service);
  out->set_error(p.error);
  out->set_reason(p.reason);
  out->set_fix(p.fix);
  out->set_impact(p.impact);
}

namespace {

void RunsToProto(const ServiceGoalSpec& g, const RunsView& r, v1::RunsStatus* rs) {
  rs->set_service_type(g.spec.service_type);
  if (!g.spec.schedule.empty()) rs->set_schedule(absl::StrCat(g.spec.schedule, " (", g.spec.time_zone, ")"));
  for (const std::string& a : r.active) rs->add_active(a);
  rs->set_last(r.last);
  if (r.next) SetTimestamp(*r.next, rs->mutable_next());
  rs->set_held(r.held);
}

void VerdictToProto(const ServiceVerdict& sv, v1::ServiceStatus* st) {
  st->set_verdict(VerdictName(sv.state));
  st->set_reason(sv.reason);
  st->set_fix(sv.fix);
  st->set_ready(sv.ready);
  st->set_stopped(sv.stopped_by_user);
  st->set_stopped_instances(sv.stopped);
  st->set_unhealthy(sv.unhealthy);
  if (sv.state == VerdictState::kPaused || sv.state == VerdictState::kFailed) st->set_paused(sv.reason);
  if (sv.agent) {
    st->set_desired(sv.desired);
    st->set_running(sv.ready);
    st->set_updating(sv.old_spec);
  }
}

void AgentServerToProto(const AgentServer& a, v1::AgentServer* out) {
  out->set_server(a.server);
  out->set_hostname(a.hostname);
  out->set_version(a.version);
  out->set_image_uuid(a.image_uuid);
  out->set_state(a.state);
  out->set_error(a.error);
}

// Counts `i` in the service's totals; `current`: it runs the goal's spec.
void CountInstance(const InstanceState& i, bool current, v1::ServiceStatus* st) {
  bool live = i.state == "running" || i.state == "provisioning";
  if (i.state == "running") st->set_running(st->running() + 1);
  else if (i.state == "provisioning") st->set_provisioning(st->provisioning() + 1);
  // A preserved instance (stop.preserve_stopped) is kept for inspection and counted nowhere.
  else if (i.state != "preserved" && !(st->stopped() && i.state == "stopped")) st->set_broken(st->broken() + 1);
  if (i.health == "healthy") st->set_healthy(st->healthy() + 1);
  if (live && !current) st->set_updating(st->updating() + 1);
}

// Where the instance stands in CNS's records, as status shows it ("" when
// its service is not discovered through CNS).
std::string DiscoveryOf(const InstanceState& i, bool discovered) {
  if (!discovered) return "";
  if (!i.cns_down) return "in";
  std::optional<DiscoveryHold> hold = ParseDiscoveryHold(i.discovery);
  if (!hold) return "out: set in the instance";
  return absl::StrCat("out: ", hold->why.empty() ? "held by mariposad" : hold->why, " since ",
                      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", hold->since, absl::UTCTimeZone()));
}

void InstanceToProto(const InstanceState& i, bool current, bool discovered,
                     const std::map<std::string, std::string>& hostnames, v1::InstanceStatus* is) {
  is->set_uuid(i.uuid);
  is->set_alias(i.alias);
  is->set_state(i.state);
  is->set_health(i.health);
  is->set_current_spec(current);
  is->set_stale_meta(i.stale_meta);
  is->set_stale_checks(i.stale_checks);
  is->set_version(i.version);
  is->set_image_uuid(i.image_uuid);
  is->set_server_uuid(i.server_uuid);
  is->set_ip(i.ip);
  is->set_liveness(i.liveness);
  is->set_discovery(DiscoveryOf(i, discovered));
  auto host = hostnames.find(i.server_uuid);
  if (host != hostnames.end()) is->set_server_hostname(host->second);
  SetTimestamp(i.created, is->mutable_created_at());
}

// One service's status: its goal, runs, verdict, freezes, agent servers and
// (unless omitted) instances.
void ServiceToProto(const std::string& name, const ServiceGoalSpec& g, const Snapshot& s, const Decision& d,
                    const std::map<std::string, std::string>& hostnames, const v1::GetStateRequest& req,
                    v1::ServiceStatus* st) {
  st->set_name(name);
  // A scheduled or event service wants instances only while it runs.
  auto runs = d.runs.find(name);
  st->set_desired(runs == d.runs.end() ? g.record.count
                                       : g.record.count * static_cast<int64_t>(runs->second.active.size()));
  st->set_agent(g.spec.compute_type == "agent");
  for (const std::string& n : CnsNames(s.project.name, name, g.spec)) st->add_cns_names(n);
  if (runs != d.runs.end()) RunsToProto(g, runs->second, st->mutable_runs());
  if (auto v = d.verdicts.find(name); v != d.verdicts.end()) VerdictToProto(v->second, st);
  for (const TaskRecord& t : s.tasks) st->set_frozen(st->frozen() || FreezeHolds(t, name, ""));
  if (auto rows = d.agent_servers.find(name); rows != d.agent_servers.end()) {
    for (const AgentServer& a : rows->second) AgentServerToProto(a, st->add_servers());
  }
  if (st->agent()) return;
  std::vector<const InstanceState*> mine;
  for (const InstanceState& i : s.instances) {
    if (i.service == name) mine.push_back(&i);
  }
  std::sort(mine.begin(), mine.end(), [](const InstanceState* a, const InstanceState* b) { return a->alias < b->alias; });
  bool readiness_checks = false;
  for (const auto& [check, spec] : g.spec.healthchecks) readiness_checks |= spec.readiness;
  st->set_checked(mine.empty() ? readiness_checks
                               : std::any_of(mine.begin(), mine.end(), [](const InstanceState* i) { return i->checked; }));
  for (const InstanceState* i : mine) {
    bool current = i->spec_hash == g.record.spec_hash && !i->stale_meta && !i->stale_checks && !i->stale_mount;
    CountInstance(*i, current, st);
    if (req.omit_instances() || (!req.service().empty() && req.service() != name)) continue;
    InstanceToProto(*i, current, DiscoveredThroughCns(s, name), hostnames, st->add_instances());
  }
}

// The project's own objects outside VMAPI: FWAPI rules, NAPI networks,
// VOLAPI volumes.
void OwnedObjectsToProto(const Decision& d, v1::GetStateResponse* resp) {
  for (const FirewallRuleView& v : d.firewall_rules) {
    v1::FirewallRuleStatus* f = resp->add_firewall_rules();
    f->set_name(v.name);
    f->set_rule(v.summary);
    f->set_uuid(v.uuid);
    f->set_state(v.state);
    f->set_error(v.error);
  }
  for (const FabricNetworkView& v : d.fabric_networks) {
    v1::FabricNetworkStatus* f = resp->add_fabric_networks();
    f->set_name(v.name);
    f->set_napi_name(v.napi_name);
    f->set_subnet(v.subnet);
    f->set_uuid(v.uuid);
    f->set_state(v.state);
    f->set_error(v.error);
  }
  for (const VolumeView& v : d.volumes) {
    v1::VolumeStatus* o = resp->add_volumes();
    o->set_name(v.name);
    o->set_volapi_name(v.volapi_name);
    o->set_size_mib(v.size_mib);
    o->set_network(v.network);
    o->set_uuid(v.uuid);
    o->set_state(v.state);
    for (const std::string& vm : v.mounted_by) o->add_mounted_by(vm);
    o->set_error(v.error);
  }
}

}  // namespace

grpc::Status StateService::GetState(grpc::ServerContext* /*ctx*/, const v1::GetStateRequest* req,
                                    v1::GetStateResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (vmapi_ == nullptr || reconciler_ == nullptr) {
    return ToGrpc(absl::FailedPreconditionError(
        "mariposad runs without --triton: it keeps goal state only, there is no actual state to show"));
  }
  auto view = reconciler_->Inspect(req->project());
  if (!view.ok()) return ToGrpc(view.status());
  const Snapshot& s = view->snapshot;
  const Decision& d = view->decision;
  resp->set_project(s.project.name);
  resp->set_version(s.project.current_number);
  resp->set_version_uuid(s.project.current_version);
  resp->set_actual_known(s.actual_known);
  if (s.actual_known && s.observed_at != absl::InfinitePast()) SetTimestamp(s.observed_at, resp->mutable_observed_at());
  resp->set_leftover(d.leftover);
  resp->set_deleting(s.project.deleting);
  resp->set_read_now(view->read_now);
  resp->set_watch(view->watch);
  std::map<std::string, std::string> hostnames;  // server uuid -> hostname, when the sync read CNAPI
  for (const triton::Server& sv : s.servers) hostnames[sv.uuid] = sv.hostname;
  if (s.goal) {
    for (const auto& [name, g] : s.goal->services) ServiceToProto(name, g, s, d, hostnames, *req, resp->add_services());
  }
  OwnedObjectsToProto(d, resp);
  for (const Problem& p : d.problems) ProblemToProto(p, resp->add_problems());
  for (const Problem& p : reconciler_->ExecuteProblems(s.project.uuid)) ProblemToProto(p, resp->add_problems());
  if (controller_problems_) controller_problems_(resp);
  resp->set_converged(d.converged);
  return grpc::Status::OK;
}

grpc::Status StateService::GetHealth(grpc::ServerContext* /*ctx*/, const v1::GetHealthRequest* req,
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
    auto instances = Observer(vmapi_, reconciler_->OwnersOf(*p)).ObserveProject(p->uuid, *numbers);
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

void SummarizeAcross(v1::ProjectAcrossResponse* r, absl::Time now) {
  std::vector<std::string> converged, behind, unknown, absent;
  std::set<std::string> versions;
  for (const v1::ProjectInDataCenter& d : r->datacenters()) {
    if (!d.answered()) {
      std::string last = "never answered";
      if (d.has_last_answer()) {
        absl::Time t = absl::FromUnixSeconds(d.last_answer().seconds());
        last = absl::StrCat("last answer ", absl::FormatDuration(absl::Seconds(absl::ToInt64Seconds(now - t))), " ago");
      }
      unknown.push_back(absl::StrCat(d.datacenter(), " (", last, ": ", d.error(), ")"));
    } else if (!d.present()) {
      absent.push_back(d.datacenter());
    } else {
      versions.insert(d.state().version_uuid());
      if (d.state().converged() && d.state().actual_known()) {
        converged.push_back(d.datacenter());
      } else {
        std::vector<std::string> parts;
        for (const auto& s : d.state().services()) {
          if (s.verdict() != "converged") parts.push_back(absl::StrCat(s.name(), " ", s.verdict()));
        }
        behind.push_back(absl::StrCat(d.datacenter(), parts.empty() ? "" : " (" + absl::StrJoin(parts, ", ") + ")"));
      }
    }
  }
  size_t runs = converged.size() + behind.size();
  std::string out = absl::StrCat("converged in ", converged.size(), " of ", runs,
                                 runs == 1 ? " data center that has it" : " data centers that have it");
  if (!behind.empty()) absl::StrAppend(&out, "; not converged: ", absl::StrJoin(behind, ", "));
  if (versions.size() > 1) absl::StrAppend(&out, "; at different versions (a rollout under way or stopped: `rollouts`)");
  if (!unknown.empty()) absl::StrAppend(&out, "; unknown: ", absl::StrJoin(unknown, ", "));
  if (!absent.empty()) absl::StrAppend(&out, "; not in ", absl::StrJoin(absent, ", "));
  r->set_summary(out);
  r->set_converged(unknown.empty() && behind.empty() && versions.size() <= 1 && runs > 0);
}

grpc::Status StateService::ProjectAcross(grpc::ServerContext*, const v1::ProjectAcrossRequest* req,
                                         v1::ProjectAcrossResponse* resp) {
  if (!across_) {
    return ToGrpc(absl::FailedPreconditionError(
        "this mariposad knows no other data center (mariposad --datacenter NAME --peers …; docs/operations.md, "
        "\"Several data centers\"): `mariposa status` shows the project here"));
  }
  if (req->project().empty()) return ToGrpc(absl::InvalidArgumentError("name the project (-j)"));
  resp->set_project(req->project());
  if (req->events() < 0 || req->events() > 1000) {
    return ToGrpc(absl::InvalidArgumentError(absl::StrCat("events: ", req->events(), " is outside 0..1000")));
  }
  across_(*req, resp);
  SummarizeAcross(resp, absl::FromUnixSeconds(resp->as_of().seconds()));
  return grpc::Status::OK;
}

}  // namespace mariposa::convergence
