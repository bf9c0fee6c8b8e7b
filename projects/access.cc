#include "projects/access.h"

#include <atomic>

namespace mariposa {
namespace {
std::atomic<Access*> g_access{nullptr};
}  // namespace

void SetAccess(Access* a) { g_access = a; }

grpc::Status Authorize(grpc::ServerContext* ctx, const std::string& project, const std::string& variant) {
  Access* a = g_access.load();
  return a == nullptr ? grpc::Status::OK : a->Authorize(ctx, project, variant);
}

std::string AuthorOf(const grpc::ServerContext* ctx) {
  Access* a = g_access.load();
  return a == nullptr ? ctx->peer() : a->Author(ctx);
}

bool CanSee(const grpc::ServerContext* ctx, const std::string& project_name) {
  Access* a = g_access.load();
  return a == nullptr || a->CanSee(ctx, project_name);
}

std::string CallerName(const grpc::ServerContext* ctx) {
  Access* a = g_access.load();
  return a == nullptr ? "" : a->CallerName(ctx);
}

std::string CallerAccount(const grpc::ServerContext* ctx) {
  Access* a = g_access.load();
  return a == nullptr ? "" : a->CallerAccount(ctx);
}

std::string ProjectOfTask(const std::string& task) {
  Access* a = g_access.load();
  return a == nullptr ? "" : a->ProjectOfTask(task);
}

}  // namespace mariposa
