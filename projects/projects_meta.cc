// The Projects service's metadata RPCs: list, get, set, delete, increment,
// import; a change rolls out the services that use a changed key and say
// update.on_meta_change: rollout.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "projects/meta_drift.h"
#include "projects/projects_service.h"
#include "projects/request_guard.h"
#include "projects/task_queue.h"

namespace mariposa {
namespace {

// Secrets never leave the server.
void ToProto(const MetaRecord& m, v1::MetaEntry* out) {
  out->set_key(m.key);
  out->set_value(m.secret ? "<secret>" : m.value);
  out->set_secret(m.secret);
  out->set_cas_id(m.cas_id);
  out->set_source("store");
  SetTimestamp(m.updated_at, out->mutable_updated_at());
}

}  // namespace

grpc::Status ProjectsService::ListMeta(grpc::ServerContext* ctx, const v1::ListMetaRequest* req,
                                       v1::ListMetaResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto p = Project(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  auto list = store_->ListMeta(p->uuid);
  if (!list.ok()) return ToGrpc(list.status());
  std::set<std::string> in_store;
  for (const auto& m : *list) {
    ToProto(m, resp->add_entries());
    in_store.insert(m.key);
  }
  // Manifest defaults that the store does not override.
  if (!p->current_version.empty()) {
    auto parsed = StoredManifest(*p, p->current_version);
    if (!parsed.ok()) return ToGrpc(parsed.status());
    for (const auto& kv : (*parsed)->manifest.meta) {
      if (in_store.count(kv.first)) continue;
      v1::MetaEntry* e = resp->add_entries();
      e->set_key(kv.first);
      e->set_value(kv.second);
      e->set_source("manifest");
    }
  }
  std::sort(resp->mutable_entries()->begin(), resp->mutable_entries()->end(),
            [](const v1::MetaEntry& a, const v1::MetaEntry& b) { return a.key() < b.key(); });
  return grpc::Status::OK;
}

grpc::Status ProjectsService::GetMeta(grpc::ServerContext* ctx, const v1::GetMetaRequest* req,
                                      v1::GetMetaResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  v1::ListMetaRequest lreq;
  lreq.set_project(req->project());
  v1::ListMetaResponse all;
  grpc::Status s = ListMeta(ctx, &lreq, &all);
  if (!s.ok()) return s;
  for (const auto& e : all.entries()) {
    if (e.key() == req->key()) {
      *resp->mutable_entry() = e;
      return grpc::Status::OK;
    }
  }
  return ToGrpc(absl::NotFoundError(absl::StrCat("no meta key \"", req->key(), "\" in project ", req->project())));
}

void ProjectsService::MetaChanged(const ProjectRecord& p, const std::set<std::string>& keys, const std::string& author) {
  if (p.current_version.empty()) return;
  auto current = StoredManifest(p, p.current_version);
  if (!current.ok()) {
    LogWarn("meta changed; cannot read the version in force", {{"project", p.name}, {"error", current.status().ToString()}});
    return;
  }
  // update.on_meta_change: rollout rolls the services using a changed key;
  // the others' instances are named stale by `status`.
  std::vector<std::string> rollout;
  for (const auto& kv : (*current)->manifest.services) {
    if (kv.second.update_on_meta_change != "rollout") continue;
    for (const std::string& k : MetaKeysOf(kv.second)) {
      if (keys.count(k)) {
        rollout.push_back(kv.first);
        break;
      }
    }
  }
  std::vector<std::string> warnings;
  QueueReprovision(p.uuid, rollout, ManifestCanary((*current)->manifest, rollout), p.current_version,
                   "meta", author, &warnings);
  for (const auto& w : warnings) LogWarn("meta rollout", {{"project", p.name}, {"warning", w}});
}

grpc::Status ProjectsService::SetMeta(grpc::ServerContext* ctx, const v1::SetMetaRequest* req,
                                      v1::SetMetaResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto p = Project(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  auto m = store_->SetMeta(p->uuid, req->key(), req->value(), req->secret(),
                           req->has_cas_id() ? std::optional<int64_t>(req->cas_id()) : std::nullopt, AuthorOf(ctx));
  if (!m.ok()) return ToGrpc(m.status());
  ToProto(*m, resp->mutable_entry());
  MetaChanged(*p, {req->key()}, AuthorOf(ctx));
  if (on_change_) on_change_(p->uuid);  // instances created from now on get the new value
  return grpc::Status::OK;
}

grpc::Status ProjectsService::DeleteMeta(grpc::ServerContext* ctx, const v1::DeleteMetaRequest* req,
                                         v1::DeleteMetaResponse*) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto p = Project(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  absl::Status st = store_->DeleteMeta(p->uuid, req->key(),
                                      req->has_cas_id() ? std::optional<int64_t>(req->cas_id()) : std::nullopt,
                                      AuthorOf(ctx));
  if (st.ok()) MetaChanged(*p, {req->key()}, AuthorOf(ctx));
  if (st.ok() && on_change_) on_change_(p->uuid);
  return ToGrpc(st);
}

grpc::Status ProjectsService::IncrMeta(grpc::ServerContext* ctx, const v1::IncrMetaRequest* req,
                                       v1::IncrMetaResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto p = Project(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  auto m = store_->IncrMeta(p->uuid, req->key(), req->delta(),
                            req->has_cas_id() ? std::optional<int64_t>(req->cas_id()) : std::nullopt, AuthorOf(ctx));
  if (!m.ok()) return ToGrpc(m.status());
  ToProto(*m, resp->mutable_entry());
  MetaChanged(*p, {req->key()}, AuthorOf(ctx));
  if (on_change_) on_change_(p->uuid);
  return grpc::Status::OK;
}

grpc::Status ProjectsService::ImportMeta(grpc::ServerContext* ctx, const v1::ImportMetaRequest* req,
                                         v1::ImportMetaResponse* resp) {
  RequestGuard guard(ctx, clock_, *req);
  if (!guard.status().ok()) return ToGrpc(guard.status());
  auto p = Project(req->project());
  if (!p.ok()) return ToGrpc(p.status());
  std::map<std::string, std::string> entries(req->entries().begin(), req->entries().end());
  auto n = store_->ImportMeta(p->uuid, entries, req->secret(), AuthorOf(ctx));
  if (!n.ok()) return ToGrpc(n.status());
  resp->set_imported(*n);
  std::set<std::string> keys;
  for (const auto& kv : entries) keys.insert(kv.first);
  MetaChanged(*p, keys, AuthorOf(ctx));
  if (on_change_) on_change_(p->uuid);
  return grpc::Status::OK;
}

}  // namespace mariposa
