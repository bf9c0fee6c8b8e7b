#include "daemon/admin_service.h"

#include "common/process_metrics.h"

#include <set>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include "projects/request_guard.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "projects/access.h"
#include "projects/api_edge.h"

namespace mariposa {

grpc::Status AdminService::Status(grpc::ServerContext* ctx, const v1::StatusRequest*, v1::StatusResponse* resp) {
  ControllerMode mode = controller_ ? controller_->Get() : ControllerMode{};
  resp->set_mode(mode.mode);
  if (mode.mode == "readonly") {
    resp->set_state_reason(mode.reason);
    resp->mutable_state_since()->set_seconds(absl::ToUnixSeconds(mode.since));
    resp->set_state_by(mode.by);
    ModeProblem(mode, resp->add_problems());
  }
  resp->set_version(kMariposaVersion);
  if (datacenters_) {
    DataCentersView dcs = datacenters_();
    resp->set_datacenter(dcs.self);
    for (const PeerView& p : dcs.peers) {
      if (!p.asked || p.reachable) continue;
      v1::Problem* pr = resp->add_problems();
      pr->set_kind("datacenter-unreachable");
      pr->set_error(absl::StrCat("data center ", p.name, " (", p.address, ") does not answer"));
      pr->set_reason(p.error);
      pr->set_fix(absl::StrCat("`mariposa datacenters` shows each peer; check ", p.name,
                               "'s mariposad, the link to it and --peers / --peer-tokens here"));
      pr->set_impact(p.last_ok == absl::InfinitePast()
                         ? "nothing is known of it since this mariposad started"
                         : absl::StrCat("what is known of it is as of ",
                                        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", p.last_ok, absl::UTCTimeZone()),
                                        "; this data center goes on converging its own projects"));
    }
  }
  resp->set_pid(getpid());
  resp->set_data_dir(data_dir_);
  resp->set_store_path(store_path_);
  resp->set_schema_version(store_->SchemaVersion());
  resp->mutable_started_at()->set_seconds(absl::ToUnixSeconds(started_at_));
  auto projects = store_->ListProjects();
  if (!projects.ok()) return ToGrpc(projects.status());
  resp->set_project_count(static_cast<int>(projects->size()));
  auto last = store_->LastEventIndex();
  if (!last.ok()) return ToGrpc(last.status());
  resp->set_last_event_index(*last);
  for (const auto& l : listeners_) resp->add_listeners(l);
  resp->set_backup_dir(backup_dir_);
  resp->set_secrets_key(secrets_key_);
  for (const auto& p : standing_) *resp->add_problems() = p;
  if (backups_ != nullptr) {
    BackupScheduler::Report r = backups_->Get();
    v1::BackupSchedule* b = resp->mutable_backups();
    b->set_interval_seconds(absl::ToInt64Seconds(r.interval));
    b->set_keep(r.keep);
    if (r.last_success) b->mutable_last_success()->set_seconds(absl::ToUnixSeconds(*r.last_success));
    b->set_last_path(r.last_path);
    if (r.last_failure) b->mutable_last_failure()->set_seconds(absl::ToUnixSeconds(*r.last_failure));
    b->set_last_error(r.last_error);
    if (r.next) b->mutable_next()->set_seconds(absl::ToUnixSeconds(*r.next));
    b->set_successes(r.successes);
    b->set_failures(r.failures);
    if (r.last_failure && (!r.last_success || *r.last_failure > *r.last_success)) {
      v1::Problem* p = resp->add_problems();
      p->set_kind("backup-failing");
      p->set_error(absl::StrCat("the scheduled backup into ", backup_dir_, " failed: ", r.last_error));
      p->set_reason(r.last_success ? absl::StrCat("the newest good one is ", r.last_path)
                                   : "no scheduled backup has been written yet");
      p->set_fix(absl::StrCat("free space in ", backup_dir_,
                              " or fix its permissions (owner mariposad, 0700); it is retried every minute"));
      p->set_impact("the store is not backed up: a lost disk loses the changes since the newest backup");
    }
  }
  if (problems_) problems_(resp);
  // Only the projects the caller may see.
  auto* problems = resp->mutable_problems();
  for (int i = problems->size() - 1; i >= 0; --i) {
    const std::string& project = problems->Get(i).project();
    if (!project.empty() && !CanSee(ctx, project)) problems->DeleteSubrange(i, 1);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::Backup(grpc::ServerContext* /*ctx*/, const v1::BackupRequest* req, v1::BackupResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (backup_dir_.empty()) {
    return ToGrpc(absl::FailedPreconditionError("backups are off: start mariposad with --backup-dir DIR"));
  }
  // Only a new file directly in the backup directory: a name, or an
  // absolute path whose directory is the backup directory.
  std::string name = req->path();
  if (!name.empty() && name[0] == '/') {
    size_t slash = name.rfind('/');
    char* dir = realpath(name.substr(0, slash == 0 ? 1 : slash).c_str(), nullptr);
    char* want = realpath(backup_dir_.c_str(), nullptr);
    bool inside = dir != nullptr && want != nullptr && std::string(dir) == std::string(want);
    free(dir);
    free(want);
    if (!inside) {
      return ToGrpc(absl::PermissionDeniedError(absl::StrCat(
          "mariposad writes backups only into its backup directory ", backup_dir_,
          "; give a file name (`mariposa admin backup NAME`), then copy the file from there")));
    }
    name = name.substr(slash + 1);
  }
  auto file = WriteBackup(store_, backup_dir_, name);
  if (!file.ok()) return ToGrpc(file.status());
  resp->set_path(file->path);
  resp->set_bytes(file->bytes);
  return grpc::Status::OK;
}

grpc::Status AdminService::Ping(grpc::ServerContext* /*ctx*/, const v1::PingRequest* req, v1::PingResponse* resp) {
  resp->set_payload(req->payload());
  return grpc::Status::OK;
}

grpc::Status AdminService::SetState(grpc::ServerContext* ctx, const v1::SetStateRequest* req,
                                    v1::SetStateResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (controller_ == nullptr) return ToGrpc(absl::FailedPreconditionError("this mariposad has no controller state"));
  std::string previous = controller_->Get().mode;
  if (absl::Status s = controller_->Set(req->mode(), req->reason(), AuthorOf(ctx)); !s.ok()) return ToGrpc(s);
  resp->set_mode(controller_->Get().mode);
  resp->set_previous(previous);
  return grpc::Status::OK;
}

grpc::Status AdminService::DataCenters(grpc::ServerContext*, const v1::DataCentersRequest*,
                                       v1::DataCentersResponse* resp) {
  if (!datacenters_) return grpc::Status::OK;  // no --datacenter: none known
  DataCentersView v = datacenters_();
  resp->set_self(v.self);
  resp->set_interval_seconds(absl::ToInt64Seconds(v.interval));
  SetTimestamp(v.as_of, resp->mutable_as_of());
  for (const PeerView& p : v.peers) {
    v1::PeerDataCenter* out = resp->add_peers();
    out->set_name(p.name);
    out->set_address(p.address);
    out->set_reachable(p.reachable);
    out->set_asked(p.asked);
    if (p.checked_at != absl::InfinitePast()) SetTimestamp(p.checked_at, out->mutable_checked_at());
    if (p.last_ok != absl::InfinitePast()) SetTimestamp(p.last_ok, out->mutable_last_ok());
    out->set_rtt_micros(absl::ToInt64Microseconds(p.rtt));
    out->set_version(p.version);
    out->set_mode(p.mode);
    out->set_error(p.error);
    out->set_failures(p.failures);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::Nodes(grpc::ServerContext* ctx, const v1::NodesRequest*, v1::NodesResponse* resp) {
  auto projects = store_->ListProjects();
  if (!projects.ok()) return ToGrpc(projects.status());
  resp->set_store(store_path_);
  if (!nodes_) {
    // One node: this one runs every project.
    resp->set_self("this mariposad");
    auto* n = resp->add_nodes();
    n->set_name("this mariposad");
    n->set_live(true);
    n->set_self(true);
    n->set_projects(static_cast<int>(projects->size()));
    n->mutable_started_at()->set_seconds(absl::ToUnixSeconds(started_at_));
    for (const ProjectRecord& p : *projects) {
      if (!CanSee(ctx, p.name)) continue;  // a caller sees only the projects it may read
      auto* l = resp->add_projects();
      l->set_project(p.name);
      l->set_project_uuid(p.uuid);
      l->set_holder("this mariposad");
      l->set_state("held");
    }
    return grpc::Status::OK;
  }
  NodesView v = nodes_();
  resp->set_shared(true);
  resp->set_self(v.self);
  resp->set_lease_ttl_seconds(absl::ToInt64Seconds(v.ttl));
  resp->set_error(v.error);
  if (v.state.now != absl::Time()) resp->mutable_as_of()->set_seconds(absl::ToUnixSeconds(v.state.now));
  std::map<std::string, int> held;
  for (const ProjectRecord& p : *projects) {
    auto it = v.state.leases.find(p.uuid);
    bool live = it != v.state.leases.end() && !it->second.holder.empty() && it->second.expires > v.state.now;
    if (live) ++held[it->second.holder];  // counted for every project, shown only for those it may read
    if (!CanSee(ctx, p.name)) continue;
    auto* l = resp->add_projects();
    l->set_project(p.name);
    l->set_project_uuid(p.uuid);
    if (it == v.state.leases.end() || it->second.holder.empty()) {
      l->set_state("free");
      continue;
    }
    l->set_holder(it->second.holder);
    l->set_epoch(it->second.epoch);
    l->mutable_expires_at()->set_seconds(absl::ToUnixSeconds(it->second.expires));
    l->set_state(live ? "held" : "expired");
  }
  for (const NodeBeat& b : v.state.nodes) {
    auto* n = resp->add_nodes();
    n->set_name(b.node);
    n->set_address(b.address);
    n->mutable_started_at()->set_seconds(absl::ToUnixSeconds(b.started_at));
    n->mutable_seen_at()->set_seconds(absl::ToUnixSeconds(b.seen));
    n->set_live(v.state.now - b.seen < v.ttl);
    n->set_self(b.node == v.self);
    n->set_projects(held[b.node]);
  }
  return grpc::Status::OK;
}

}  // namespace mariposa
