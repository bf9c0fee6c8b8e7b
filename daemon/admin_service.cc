#include "daemon/admin_service.h"

#include <unistd.h>

#include "projects/request_guard.h"
#include "absl/strings/str_cat.h"
#include "projects/projects_service.h"

namespace mariposa {

grpc::Status AdminService::Status(grpc::ServerContext*, const v1::StatusRequest*, v1::StatusResponse* resp) {
  resp->set_mode("active");
  resp->set_version(MARIPOSA_VERSION);
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
  if (problems_) problems_(resp);
  return grpc::Status::OK;
}

grpc::Status AdminService::Backup(grpc::ServerContext*, const v1::BackupRequest* req, v1::BackupResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (req->path().empty() || req->path()[0] != '/') {
    return ToGrpc(absl::InvalidArgumentError("backup path must be an absolute path on the controller's machine"));
  }
  if (access(req->path().c_str(), F_OK) == 0) {
    return ToGrpc(absl::AlreadyExistsError(absl::StrCat(req->path(), " exists; choose a new file")));
  }
  auto bytes = store_->Backup(req->path());
  if (!bytes.ok()) return ToGrpc(bytes.status());
  resp->set_path(req->path());
  resp->set_bytes(*bytes);
  return grpc::Status::OK;
}

grpc::Status AdminService::Ping(grpc::ServerContext*, const v1::PingRequest* req, v1::PingResponse* resp) {
  resp->set_payload(req->payload());
  return grpc::Status::OK;
}

}  // namespace mariposa
