// Several nodes on one PostgreSQL (issue 33): a change made through one node
// (an apply, a task, an image) wakes the reconciler of every node at once,
// through LISTEN/NOTIFY on the channel mariposa_wake, instead of waiting for
// its next --resync. A notification lost with a connection costs only that
// wait: after reconnecting the bus wakes its node once, and the periodic
// resync stays the safety net.
#ifndef MARIPOSA_DAEMON_WAKE_BUS_H_
#define MARIPOSA_DAEMON_WAKE_BUS_H_

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/pg.h"

namespace mariposa {

class WakeBus {
 public:
  static constexpr const char* kChannel = kWakeChannel;
  // Events were committed (the store's notice): event watchers read again;
  // nothing else needs to look.
  static constexpr const char* kEvents = kEventsNotice;
  // What a notification may say besides "look again": the images IMGAPI
  // holds changed (an import ended), so resolved images are forgotten.
  static constexpr char kImages[] = "images";
  // After a lost connection: anything may have changed meanwhile.
  static constexpr char kAnything[] = "*";
  // `on_wake` runs on the bus's thread for every batch of notifications (its
  // own included), with what they said ("" for a plain wake-up).
  using OnWake = std::function<void(const std::set<std::string>& what)>;
  // Whether notifications say events were committed somewhere (or may
  // have been: after a lost connection), and whether that is all they say.
  static bool SaysEvents(const std::set<std::string>& what) { return what.count(kEvents) || what.count(kAnything); }
  static bool OnlyEvents(const std::set<std::string>& what) { return what.size() == 1 && what.count(kEvents); }
  WakeBus(std::string uri, const Clock* clock, OnWake on_wake);
  ~WakeBus();
  // Connects and listens; UNAVAILABLE naming the database when it cannot.
  absl::Status Start();
  // Tells every node (itself too) to look again. Never blocks a caller for
  // long: a failure is logged and the other nodes wait for their resync.
  void Publish(const std::string& what = "");
  void Stop();

 private:
  void Loop();
  std::string uri_;
  const Clock* clock_;
  OnWake on_wake_;
  int wake_pipe_[2] = {-1, -1};
  std::unique_ptr<PgConnection> listener_;
  absl::Mutex publish_mu_;
  std::unique_ptr<PgConnection> publisher_ ABSL_GUARDED_BY(publish_mu_);
  std::atomic<bool> stop_{false};
  std::thread loop_;
};

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_WAKE_BUS_H_
