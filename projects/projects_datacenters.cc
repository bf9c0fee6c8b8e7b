// The Projects service across data centers (issue 52, point 3): an apply of
// a manifest that lists other data centers is checked and planned by each
// of them, then stored as a rollout that the daemon's RolloutRunner takes
// from one data center to the next; ReceiveVersion is the receiving end.
#include <algorithm>
#include <future>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "projects/access.h"
#include "projects/api_edge.h"
#include "projects/projects_service.h"
#include "projects/projects_service_parts.h"
#include "projects/request_guard.h"

namespace mariposa {
namespace {

using projects_parts::AdmitManifest;

void ToProto(const RolloutRecord& r, v1::DataCenterRollout* out) {
  out->set_uuid(r.uuid);
  out->set_project(r.project);
  out->set_version_uuid(r.version_uuid);
  out->set_hash(r.hash);
  out->set_state(r.state);
  out->set_author(r.author);
  out->set_origin(r.origin);
  out->set_max_parallel(r.max_parallel);
  out->set_on_failure(r.on_failure);
  out->set_message(r.message);
  SetTimestamp(r.created_at, out->mutable_created_at());
  SetTimestamp(r.updated_at, out->mutable_updated_at());
  for (const RolloutStep& s : r.steps) {
    v1::DataCenterStep* p = out->add_steps();
    p->set_datacenter(s.datacenter);
    p->set_state(s.state);
    p->set_number(s.number);
    p->set_previous_version(s.previous_version);
    p->set_detail(s.detail);
    p->set_canary(s.canary);
    if (s.since != absl::InfinitePast()) SetTimestamp(s.since, p->mutable_since());
    if (s.last_answer != absl::InfinitePast()) SetTimestamp(s.last_answer, p->mutable_last_answer());
  }
}

}  // namespace

absl::Status ProjectsService::StartRollout(const ApplyRequest& a, Outcome& out, bool dry_run,
                                           v1::ApplyResponse* resp) {
  const Manifest& doc = *out.compiled->document;
  if (!send_version_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the manifest lists data centers ", DataCenterList(doc.datacenters), ", but this mariposad (",
        datacenter_, ") has no peers to send it to: start it with --peers NAME=HOST:PORT,… and --peer-tokens "
        "(docs/operations.md, \"Several data centers\"); nothing was changed"));
  }
  // Rollout order: the listed data centers, then those that drop the
  // project (this one, and those the version in force listed).
  std::vector<std::string> order = DataCenterOrder(doc.datacenters);
  auto add = [&order](const std::string& dc) {
    if (std::find(order.begin(), order.end(), dc) == order.end()) order.push_back(dc);
  };
  if (!out.base_version.empty() && !RunsInDataCenter(doc, datacenter_)) add(datacenter_);
  for (const auto& plan : out.diff.datacenters()) {
    if (plan.listed_before() && !plan.listed_after()) add(plan.name());
  }

  // Every other data center checks the version (its catalog, its rules,
  // the caller's rights there) and plans it against what it runs.
  v1::ReceiveVersionRequest probe;
  probe.set_project(out.project);
  probe.set_manifest(a.text);
  probe.set_dry_run(true);
  probe.set_origin(absl::StrCat(a.author, " through ", datacenter_));
  std::map<std::string, std::future<absl::StatusOr<v1::ApplyResponse>>> asked;
  for (const std::string& dc : order) {
    if (dc != datacenter_) asked[dc] = std::async(std::launch::async, [this, dc, &probe] { return send_version_(dc, probe); });
  }
  std::map<std::string, v1::ApplyResponse> plans;
  std::vector<std::string> refusals;
  absl::StatusCode code = absl::StatusCode::kOk;
  for (auto& [dc, f] : asked) {
    auto got = f.get();
    if (got.ok()) {
      plans[dc] = *std::move(got);
      continue;
    }
    // Another data center that does not answer is not this mariposad being
    // unavailable: the apply cannot be checked (and says why).
    absl::StatusCode c = got.status().code();
    if (c == absl::StatusCode::kUnavailable || c == absl::StatusCode::kDeadlineExceeded) {
      c = absl::StatusCode::kFailedPrecondition;
    }
    if (code == absl::StatusCode::kOk) code = c;
    refusals.push_back(absl::StrCat(dc, ": ", got.status().message()));
  }
  if (!refusals.empty()) {
    return absl::Status(code, absl::StrCat("the version was not started in any data center, since not every one "
                                           "listed checked it:\n",
                                           absl::StrJoin(refusals, "\n"), "\nnothing was changed"));
  }

  bool changed = !out.diff.empty();
  Answer(out, /*dry_run=*/true, a.author, resp);  // takes out.diff
  for (v1::DataCenterPlan& plan : *resp->mutable_diff()->mutable_datacenters()) {
    auto p = plans.find(plan.name());
    if (p == plans.end()) continue;
    // Its own plan, against what it runs, its images' plan included.
    *plan.mutable_services() = p->second.diff().services();
    plan.set_checked(true);
    changed = changed || p->second.changed();
    for (const auto& w : p->second.warnings()) resp->add_warnings(absl::StrCat(plan.name(), ": ", w));
  }
  resp->set_changed(changed);
  if (changed) resp->mutable_diff()->set_empty(false);  // another data center runs something else
  if (dry_run || !changed) return absl::OkStatus();

  RolloutRecord r;
  r.project = out.project;
  r.version_uuid = NewUuid();
  r.hash = out.compiled->hash;
  r.author = a.author;
  r.origin = datacenter_;
  r.manifest = a.text;
  if (doc.datacenter_rollout) {
    r.max_parallel = doc.datacenter_rollout->max_parallel;
    r.on_failure = doc.datacenter_rollout->on_failure;
  }
  r.message = "sending";
  for (const std::string& dc : order) {
    RolloutStep s;
    s.datacenter = dc;
    for (const auto& e : doc.datacenters) s.canary = s.canary || (e.name == dc && e.canary);
    r.steps.push_back(std::move(s));
  }
  ASSIGN_OR_RETURN(RolloutRecord stored, store_->AddRollout(r, a.author));
  ToProto(stored, resp->mutable_datacenter_rollout());
  if (rollout_started_) rollout_started_();
  return absl::OkStatus();
}

absl::StatusOr<v1::ApplyResponse> ProjectsService::ReceiveHere(const v1::ReceiveVersionRequest& req,
                                                               const std::string& author) {
  return Receive(req, author, NotCancelled::Get(), nullptr);
}

absl::StatusOr<v1::ApplyResponse> ProjectsService::Receive(const v1::ReceiveVersionRequest& req,
                                                           const std::string& author, const Cancellation* cancel,
                                                           std::function<absl::Status(const Manifest&)> admit) {
  if (req.project().empty() || req.manifest().empty()) {
    return absl::InvalidArgumentError("a version sent by a rollout names its project and carries its manifest");
  }
  if (!req.dry_run() && !IsUuid(req.version_uuid())) {
    return absl::InvalidArgumentError("a version sent by a rollout carries its id (version_uuid, a uuid)");
  }
  ApplyRequest a;
  a.project = req.project();
  a.text = req.manifest();
  a.filename = absl::StrCat("the version from ", req.origin().empty() ? "another data center" : req.origin());
  a.force = true;  // the rollout's order is the sending data center's to keep
  a.dry_run = req.dry_run();
  a.origin = "apply";
  a.message = req.message();
  a.author = req.origin().empty() ? author : absl::StrCat(author, " for ", req.origin());
  a.cancel = cancel;
  a.admit = std::move(admit);
  a.version_uuid = req.version_uuid();
  a.received = true;
  ASSIGN_OR_RETURN(Outcome out, ApplyText(a));
  v1::ApplyResponse resp;
  Answer(out, req.dry_run(), a.author, &resp);
  return resp;
}

grpc::Status ProjectsService::ReceiveVersion(grpc::ServerContext* ctx, const v1::ReceiveVersionRequest* req,
                                             v1::ApplyResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  const bool dry_run = req->dry_run();
  auto got = Receive(*req, AuthorOf(ctx), &guard,
                     [ctx, dry_run](const Manifest& m) { return AdmitManifest(ctx, m, dry_run); });
  if (!got.ok()) return ToGrpc(got.status());
  *resp = *std::move(got);
  return grpc::Status::OK;
}

grpc::Status ProjectsService::ListRollouts(grpc::ServerContext* ctx, const v1::ListRolloutsRequest* req,
                                           v1::ListRolloutsResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto list = store_->ListRollouts(req->project(), req->all());
  if (!list.ok()) return ToGrpc(list.status());
  for (const RolloutRecord& r : *list) ToProto(r, resp->add_rollouts());
  return grpc::Status::OK;
}

grpc::Status ProjectsService::CancelRollout(grpc::ServerContext* ctx, const v1::CancelRolloutRequest* req,
                                            v1::CancelRolloutResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto r = store_->GetRollout(req->rollout());
  if (!r.ok()) return ToGrpc(r.status());
  if (!req->project().empty() && r->project != req->project()) {
    return ToGrpc(absl::NotFoundError(absl::StrCat("no rollout ", req->rollout(), " of project ", req->project())));
  }
  const std::string author = AuthorOf(ctx);
  std::vector<std::string> kept;
  for (RolloutStep& s : r->steps) {
    if (s.state == "pending") {
      s.state = "not started";
      s.detail = absl::StrCat("cancelled by ", author);
      s.since = clock_->Now();
    } else if (s.state == "sent" || s.state == "converged") {
      kept.push_back(s.datacenter);
    }
  }
  r->state = "cancelled";
  r->message = absl::StrCat("cancelled by ", author, kept.empty() ? "" : absl::StrCat("; ", absl::StrJoin(kept, ", "),
                                                                                      " keep the version"),
                            "; the data centers not started keep theirs");
  auto written = store_->UpdateRollout(*r, author, "datacenter.rollout.cancelled", r->message);
  if (!written.ok()) return ToGrpc(written.status());
  ToProto(*written, resp->mutable_rollout());
  return grpc::Status::OK;
}

}  // namespace mariposa
