#include "daemon/admin_service.h"

#include "common/process_metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "projects/request_guard.h"
#include "absl/strings/str_cat.h"
#include "projects/projects_service.h"

namespace mariposa {

grpc::Status AdminService::Status(grpc::ServerContext* ctx, const v1::StatusRequest*, v1::StatusResponse* resp) {
  MARIPOSA_AUTHORIZE(ctx, "");
  resp->set_mode("active");
  resp->set_version(kMariposaVersion);
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
  if (problems_) problems_(resp);
  // Only the projects the caller may see.
  auto* problems = resp->mutable_problems();
  for (int i = problems->size() - 1; i >= 0; --i) {
    const std::string& project = problems->Get(i).project();
    if (!project.empty() && !CanSee(ctx, project)) problems->DeleteSubrange(i, 1);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::Backup(grpc::ServerContext* ctx, const v1::BackupRequest* req, v1::BackupResponse* resp) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  MARIPOSA_AUTHORIZE(ctx, "");
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
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos || name[0] == '.') {
    return ToGrpc(absl::InvalidArgumentError(absl::StrCat(
        "backup name \"", name, "\" must be a plain file name (no /, not starting with .), written into ",
        backup_dir_)));
  }
  if (mkdir(backup_dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    return ToGrpc(absl::InternalError(absl::StrCat("cannot create backup directory ", backup_dir_, ": ",
                                                   std::strerror(errno))));
  }
  chmod(backup_dir_.c_str(), 0700);
  std::string path = absl::StrCat(backup_dir_, "/", name);
  // Created 0600 and empty before SQLite opens it: never readable by others.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return ToGrpc(absl::AlreadyExistsError(absl::StrCat(path, " exists; choose a new name")));
    return ToGrpc(absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno))));
  }
  close(fd);
  auto bytes = store_->Backup(path);
  if (!bytes.ok()) {
    unlink(path.c_str());
    return ToGrpc(bytes.status());
  }
  resp->set_path(path);
  resp->set_bytes(*bytes);
  return grpc::Status::OK;
}

grpc::Status AdminService::Ping(grpc::ServerContext* ctx, const v1::PingRequest* req, v1::PingResponse* resp) {
  MARIPOSA_AUTHORIZE(ctx, "");
  resp->set_payload(req->payload());
  return grpc::Status::OK;
}

}  // namespace mariposa
