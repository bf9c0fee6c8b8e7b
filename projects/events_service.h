// gRPC Events: the store's append-only event log as a server stream,
// resumable from an index. New events are picked up within `poll`.
#ifndef MARIPOSA_PROJECTS_EVENTS_SERVICE_H_
#define MARIPOSA_PROJECTS_EVENTS_SERVICE_H_

#include <atomic>

#include "absl/time/time.h"
#include "common/clock.h"
#include "projects/store.h"
#include "mariposa/v1/events.grpc.pb.h"

namespace mariposa {

class EventsService final : public v1::Events::Service {
 public:
  // `store` must outlive the service.
  // Watch polls the store every `poll` on `clock`.
  EventsService(ProjectStore* store, const Clock* clock, absl::Duration poll = absl::Milliseconds(100))
      : store_(store), clock_(clock), poll_(poll) {}

  grpc::Status Watch(grpc::ServerContext* ctx, const v1::WatchEventsRequest* req,
                     grpc::ServerWriter<v1::Event>* writer) override;

  // Ends every watch within one poll with UNAVAILABLE (clients reconnect
  // and resume), so that a graceful stop does not wait for them.
  void Stop() { stopping_.store(true); }

 private:
  ProjectStore* store_;
  const Clock* clock_;
  absl::Duration poll_;
  std::atomic<bool> stopping_{false};
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_EVENTS_SERVICE_H_
