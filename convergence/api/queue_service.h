// The gRPC Queue service: tasks, freeze and thaw. Thread-safe.
#ifndef MARIPOSA_CONVERGENCE_QUEUE_SERVICE_H_
#define MARIPOSA_CONVERGENCE_QUEUE_SERVICE_H_

#include <functional>

#include "projects/task_queue.h"
#include "mariposa/v1/queue.grpc.pb.h"
#include "projects/store.h"

namespace mariposa::convergence {

class QueueService final : public v1::Queue::Service {
 public:
  // `store` must outlive the service.
  explicit QueueService(ProjectStore* store) : store_(store), queue_(store) {}

  grpc::Status ListTasks(grpc::ServerContext*, const v1::ListTasksRequest*, v1::ListTasksResponse*) override;
  grpc::Status GetTask(grpc::ServerContext*, const v1::GetTaskRequest*, v1::GetTaskResponse*) override;
  grpc::Status TerminateTask(grpc::ServerContext*, const v1::TerminateTaskRequest*, v1::TerminateTaskResponse*) override;
  grpc::Status PauseTask(grpc::ServerContext*, const v1::PauseTaskRequest*, v1::PauseTaskResponse*) override;
  grpc::Status ResumeTask(grpc::ServerContext*, const v1::ResumeTaskRequest*, v1::ResumeTaskResponse*) override;
  grpc::Status Freeze(grpc::ServerContext*, const v1::FreezeRequest*, v1::FreezeResponse*) override;
  grpc::Status Thaw(grpc::ServerContext*, const v1::ThawRequest*, v1::ThawResponse*) override;
  grpc::Status AddTask(grpc::ServerContext*, const v1::AddTaskRequest*, v1::AddTaskResponse*) override;
  // Called after a task is added (the controller's wake-up).
  // Called with the project whose tasks changed.
  void set_on_change(std::function<void(const std::string& project_uuid)> f) { on_change_ = std::move(f); }

 private:
  grpc::Status AddRun(grpc::ServerContext* ctx, const v1::AddTaskRequest& req, v1::AddTaskResponse* resp);
  // The task's uuid (a unique prefix resolved), or `task` as given.
  std::string TaskUuid(const std::string& task);
  // The services named by `services` or `group` (empty = whole project),
  // checked against the project's current version.
  absl::StatusOr<std::vector<std::string>> Scope(const ProjectRecord& p, const std::vector<std::string>& services,
                                                 const std::string& group);
  absl::Status ToProto(const TaskRecord& t, v1::Task* out);

  ProjectStore* store_;
  TaskQueue queue_;
  std::function<void(const std::string&)> on_change_;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_QUEUE_SERVICE_H_
