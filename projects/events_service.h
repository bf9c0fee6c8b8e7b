// gRPC Events: the store's append-only event log as a server stream,
// resumable from an index. A watcher reads again as soon as the store's
// EventsSignal says events were committed (on PostgreSQL also those of other
// nodes, relayed from the database's notices); at the latest after `poll`,
// which is all a store without a signal gives.
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
  // Watch reads the store again after `poll` at the latest (on `clock`).
  EventsService(ProjectStore* store, const Clock* clock, absl::Duration poll = absl::Seconds(1))
      : store_(store), clock_(clock), poll_(poll) {}

  grpc::Status Watch(grpc::ServerContext* ctx, const v1::WatchEventsRequest* req,
                     grpc::ServerWriter<v1::Event>* writer) override;

  // Ends every watch at once with UNAVAILABLE (clients reconnect
  // and resume), so that a graceful stop does not wait for them.
  void Stop() {
    stopping_.store(true);
    if (ChangeSignal* signal = store_->EventsSignal()) signal->Notify();  // wakes the watchers
  }

 private:
  ProjectStore* store_;
  const Clock* clock_;
  absl::Duration poll_;
  std::atomic<bool> stopping_{false};
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_EVENTS_SERVICE_H_
