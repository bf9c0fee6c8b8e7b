#include "convergence/api/queue_service.h"

#include <limits>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "projects/limits.h"
#include "projects/request_guard.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "projects/admission.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "projects/access.h"
#include "projects/api_edge.h"

namespace mariposa::convergence {
namespace {

bool Overlap(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return Overlaps(std::set<std::string>(a.begin(), a.end()), std::set<std::string>(b.begin(), b.end()));
}

}  // namespace

absl::Status QueueService::ToProto(const TaskRecord& t, v1::Task* out) {
  ASSIGN_OR_RETURN(ProjectRecord p, store_->GetProject(t.project_uuid));
  out->set_uuid(t.uuid);
  out->set_project(p.name);
  out->set_kind(t.kind);
  for (const auto& s : t.services) out->add_services(s);
  out->set_state(t.state);
  out->set_origin(t.origin);
  out->set_trigger(t.trigger);
  out->set_version(t.version_uuid);
  SetTimestamp(t.created_at, out->mutable_created_at());
  SetTimestamp(t.started_at, out->mutable_started_at());
  SetTimestamp(t.finished_at, out->mutable_finished_at());
  out->set_steps_done(t.steps_done);
  out->set_steps_planned(t.steps_planned);
  out->set_created(t.created);
  out->set_deleted(t.deleted);
  out->set_replaced(t.replaced);
  out->set_failed(t.failed);
  out->set_error(t.error);
  for (const auto& w : t.wait_for) out->add_wait_for(w);
  out->set_actor(t.actor);
  out->set_reason(t.reason);
  for (const auto& o : t.only) out->add_only(o);
  for (const auto& v : t.filter_versions) out->add_filter_versions(v);
  for (const auto& v : t.filter_images) out->add_filter_images(v);
  for (const auto& v : t.filter_servers) out->add_filter_servers(v);
  for (const auto& v : t.filter_instances) out->add_filter_instances(v);
  out->set_canary(t.canary);
  out->set_rolling(t.rolling);
  out->set_paused(t.paused);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> QueueService::Scope(const ProjectRecord& p,
                                                            const std::vector<std::string>& services,
                                                            const std::string& group) {
  if (!services.empty() && !group.empty()) {
    return absl::InvalidArgumentError("give services or a group, not both");
  }
  std::vector<ServiceRecord> known;
  std::vector<GroupRecord> groups;
  if (!p.current_version.empty()) {
    ASSIGN_OR_RETURN(known, store_->ListServices(p.current_version));
    ASSIGN_OR_RETURN(groups, store_->ListGroups(p.current_version));
  }
  if (!group.empty()) {
    for (const auto& g : groups) {
      if (g.name == group) return g.services;
    }
    return absl::NotFoundError(absl::StrCat("no deployment group \"", group, "\" in project ", p.name));
  }
  for (const auto& s : services) {
    bool found = false;
    for (const auto& k : known) found |= k.name == s;
    if (!found) return absl::NotFoundError(absl::StrCat("no service \"", s, "\" in project ", p.name));
  }
  return services;
}

// A task's uuid, a prefix resolved; else as given (NOT_FOUND follows).
std::string QueueService::TaskUuid(const std::string& task) {
  auto t = store_->GetTask(task);
  return t.ok() ? t->uuid : task;
}

grpc::Status QueueService::ListTasks(grpc::ServerContext* /*ctx*/, const v1::ListTasksRequest* req,
                                     v1::ListTasksResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  auto p = store_->GetProject(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  if (absl::Status s = CheckRange("finished_limit", req->finished_limit(), 0, std::numeric_limits<int32_t>::max(),
                                  "0 = the default 20");
      !s.ok()) {
    return ToGrpc(s);
  }
  auto tasks = store_->ListTasks(p->uuid, req->finished_limit() > 0 ? req->finished_limit() : 20);
  if (!tasks.ok()) return ToGrpc(tasks.status());
  for (const auto& t : *tasks) {
    if (auto s = ToProto(t, resp->add_tasks()); !s.ok()) return ToGrpc(s);
  }
  return grpc::Status::OK;
}

grpc::Status QueueService::GetTask(grpc::ServerContext* /*ctx*/, const v1::GetTaskRequest* req, v1::GetTaskResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  auto t = store_->GetTask(req->task());
  if (!t.ok()) return ToGrpc(t.status());
  return ToGrpc(ToProto(*t, resp->mutable_task()));
}

grpc::Status QueueService::TerminateTask(grpc::ServerContext* ctx, const v1::TerminateTaskRequest* req,
                                         v1::TerminateTaskResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  std::string id = TaskUuid(req->task());
  auto t = queue_.Terminate(id, AuthorOf(ctx), req->reason());
  if (!t.ok()) return ToGrpc(t.status());
  if (on_change_) on_change_(t->project_uuid);  // the controller must stop acting for it now
  return ToGrpc(ToProto(*t, resp->mutable_task()));
}

grpc::Status QueueService::PauseTask(grpc::ServerContext* ctx, const v1::PauseTaskRequest* req,
                                     v1::PauseTaskResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  std::string id = TaskUuid(req->task());
  auto t = store_->SetTaskPaused(id, AuthorOf(ctx), req->reason(), true);
  if (!t.ok()) return ToGrpc(t.status());
  if (on_change_) on_change_(t->project_uuid);  // no further step is started from now
  return ToGrpc(ToProto(*t, resp->mutable_task()));
}

grpc::Status QueueService::ResumeTask(grpc::ServerContext* ctx, const v1::ResumeTaskRequest* req,
                                      v1::ResumeTaskResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  std::string id = TaskUuid(req->task());
  auto t = store_->SetTaskPaused(id, AuthorOf(ctx), "", false);
  if (!t.ok()) return ToGrpc(t.status());
  if (on_change_) on_change_(t->project_uuid);
  return ToGrpc(ToProto(*t, resp->mutable_task()));
}

grpc::Status QueueService::Freeze(grpc::ServerContext* ctx, const v1::FreezeRequest* req, v1::FreezeResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  static const std::set<std::string> kOnly = {"replace-unhealthy", "scale", "reprovision", "agent-rollout"};
  for (const auto& o : req->only()) {
    if (!kOnly.count(o)) {
      return ToGrpc(absl::InvalidArgumentError(
          absl::StrCat("--only \"", o, "\" is not one of: replace-unhealthy, scale, reprovision, agent-rollout")));
    }
  }
  auto p = store_->GetProject(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  auto scope = Scope(*p, {req->services().begin(), req->services().end()}, req->group());
  if (!scope.ok()) return ToGrpc(scope.status());
  TaskRecord t;
  t.project_uuid = p->uuid;
  t.kind = "freeze";
  t.services = *scope;
  t.origin = "user";
  t.trigger = "freeze";
  t.actor = AuthorOf(ctx);
  t.reason = req->reason();
  t.only = {req->only().begin(), req->only().end()};
  auto added = queue_.Add(t);
  if (!added.ok()) return ToGrpc(added.status());
  if (on_change_) on_change_(added->project_uuid);  // work in the scope stops now, not at the next resync
  return ToGrpc(ToProto(*added, resp->mutable_task()));
}

grpc::Status QueueService::Thaw(grpc::ServerContext* ctx, const v1::ThawRequest* req, v1::ThawResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  auto p = store_->GetProject(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  auto scope = Scope(*p, {req->services().begin(), req->services().end()}, req->group());
  if (!scope.ok()) return ToGrpc(scope.status());
  auto tasks = store_->ListTasks(p->uuid, 0);
  if (!tasks.ok()) return ToGrpc(tasks.status());
  for (const auto& t : *tasks) {
    if (t.kind != "freeze" || !Overlap(t.services, *scope)) continue;
    auto ended = store_->SetTaskState(t.uuid, "terminated", absl::StrCat("thawed by ", AuthorOf(ctx)));
    if (!ended.ok()) return ToGrpc(ended.status());
    resp->add_thawed(t.uuid);
  }
  if (resp->thawed().empty()) {
    return ToGrpc(absl::NotFoundError(absl::StrCat("nothing to thaw: no freeze covers ",
                                                   scope->empty() ? "the project" : absl::StrJoin(*scope, ","),
                                                   " in project ", p->name)));
  }
  if (on_change_) on_change_(p->uuid);
  return grpc::Status::OK;
}

grpc::Status QueueService::AddTask(grpc::ServerContext* ctx, const v1::AddTaskRequest* req,
                                   v1::AddTaskResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (req->kind() != "reprovision" && req->kind() != "start" && req->kind() != "stop" && req->kind() != "run") {
    return ToGrpc(absl::InvalidArgumentError(absl::StrCat(
        "task kind \"", req->kind(), "\" cannot be queued here; use reprovision, start, stop or run (scale with "
        "`mariposa scale`, freeze with `mariposa freeze`)")));
  }
  if (req->kind() == "run") return AddRun(ctx, *req, resp);
  if (absl::Status s = CheckRange("--canary", req->canary(), 0, Limits::kMaxCount, "0 = every instance"); !s.ok()) {
    return ToGrpc(s);
  }
  if (absl::Status s = CheckRange("--rolling", req->rolling(), 0, Limits::kMaxCount, "0 = the manifest's update.rolling");
      !s.ok()) {
    return ToGrpc(s);
  }
  auto p = store_->GetProject(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  if (p->current_version.empty()) {
    return ToGrpc(absl::FailedPreconditionError(absl::StrCat("project ", p->name, " has no version to reprovision to")));
  }
  auto scope = Scope(*p, {req->services().begin(), req->services().end()}, req->group());
  if (!scope.ok()) return ToGrpc(scope.status());
  TaskRecord t;
  t.project_uuid = p->uuid;
  t.kind = req->kind();
  t.services = *scope;
  if ((t.kind == "start" || t.kind == "stop") && t.services.empty()) {
    // The run state is kept per service: name them all.
    auto services = store_->ListServices(p->current_version);
    if (!services.ok()) return ToGrpc(services.status());
    for (const ServiceRecord& s : *services) t.services.push_back(s.name);
  }
  t.origin = "user";
  t.trigger = req->thaw() ? "thaw" : req->kind();
  t.version_uuid = p->current_version;
  t.actor = AuthorOf(ctx);
  // Filters are checked here so that a typo fails now, not as a task that
  // silently matches nothing.
  auto numbers = VersionNumbers(store_, p->uuid);
  if (!numbers.ok()) return ToGrpc(numbers.status());
  for (const std::string& v : req->versions()) {
    int64_t n = 0;
    bool known = false;
    std::string digits = absl::StartsWith(v, "v") ? v.substr(1) : v;
    for (const auto& kv : *numbers) {
      known |= kv.first == v || (absl::SimpleAtoi(digits, &n) && kv.second == n);
    }
    if (!known) {
      return ToGrpc(absl::InvalidArgumentError(absl::StrCat(
          "--version \"", v, "\": project ", p->name, " has no such version; `mariposa versions` lists them")));
    }
    t.filter_versions.push_back(v);
  }
  for (const std::string& s : req->servers()) {
    if (!IsUuid(s)) {
      return ToGrpc(absl::InvalidArgumentError(absl::StrCat("--server \"", s, "\" is not a server uuid")));
    }
    t.filter_servers.push_back(s);
  }
  t.filter_images.assign(req->images().begin(), req->images().end());
  t.filter_instances.assign(req->instances().begin(), req->instances().end());
  t.canary = req->canary();
  t.rolling = req->rolling();
  if (!req->has_canary()) {  // the manifest's update.canary (the largest of the services in scope)
    auto services = store_->ListServices(p->current_version);
    if (!services.ok()) return ToGrpc(services.status());
    t.canary = ManifestCanary(*services, t.services);
  }
  auto added = queue_.Add(t);
  if (!added.ok()) return ToGrpc(added.status());
  if (on_change_) on_change_(added->project_uuid);
  return ToGrpc(ToProto(*added, resp->mutable_task()));
}

// `mariposa run SERVICE`: a run of one scheduled or event service now, as
// the service's runs are (Decide starts it, under its concurrency policy).
grpc::Status QueueService::AddRun(grpc::ServerContext* ctx, const v1::AddTaskRequest& req, v1::AddTaskResponse* resp) {
  auto p = store_->GetProject(req.project());
  if (!p.ok()) return ToGrpc(p.status());
  if (req.services_size() != 1 || !req.group().empty()) {
    return ToGrpc(absl::InvalidArgumentError("a run is of one service: `mariposa run SERVICE`"));
  }
  if (p->current_version.empty()) {
    return ToGrpc(absl::FailedPreconditionError(absl::StrCat("project ", p->name, " has no version; apply one first")));
  }
  auto services = store_->ListServices(p->current_version);
  if (!services.ok()) return ToGrpc(services.status());
  const std::string& name = req.services(0);
  auto s = std::find_if(services->begin(), services->end(), [&](const ServiceRecord& r) { return r.name == name; });
  if (s == services->end()) {
    return ToGrpc(absl::NotFoundError(absl::StrCat("project ", p->name, " has no service \"", name, "\"")));
  }
  if (s->service_type != "event" && s->service_type != "scheduled") {
    return ToGrpc(absl::FailedPreconditionError(absl::StrCat(
        "service ", name, " is ", s->service_type, ": it runs all the time. Runs are of services with service_type "
        "event (on demand) or scheduled")));
  }
  TaskRecord t;
  t.project_uuid = p->uuid;
  t.kind = "run";
  t.services = {name};
  t.origin = "user";
  t.trigger = req.thaw() ? "thaw" : "run";
  t.version_uuid = p->current_version;
  t.actor = AuthorOf(ctx);
  t.reason = "run by " + t.actor;
  auto added = queue_.Add(t);
  if (!added.ok()) return ToGrpc(added.status());
  if (on_change_) on_change_(added->project_uuid);
  return ToGrpc(ToProto(*added, resp->mutable_task()));
}

}  // namespace mariposa::convergence
