// Watching VMAPI's change feed (RFD 5; node-sdc-changefeed's protocol, as
// VMAPI publishes it and tritonsim serves it — deploy/tritonsim/changefeed.h):
// one websocket per data center, registered for every "vm" subResource.
//
// The feed says what changed, not what was there before: a listener must
// read everything once after each (re)connection and then apply the items
// (Kubernetes' informer: list, then watch). VmFeed only watches; the
// reconciler lists (each project's next sync after `since` reads VMAPI in
// full) and applies what VmFeed hands it.
//
//   1. GET /changefeeds: 404 = this VMAPI has no feed (older than RFD 5):
//      `missing`, asked again every `missing_retry`; the reconciler polls.
//   2. Upgrade to a websocket, send the v1 registration, read the bootstrap:
//      from here on every change reaches `on_vms` (watching since then).
//   3. Items carry the changed VM (resourceObject); items without one are
//      fetched by uuid (ListVms uuids=), those already received together.
//      Items already received are handed over together, in their order.
//   4. Any failure — connect, refusal, a bad item, no pong within
//      `idle_timeout` — ends the watch (`on_state(false, why)`) and a new
//      one starts after a backoff (doubling from retry_min to retry_max).
//
// The websocket client is Boost.Beast (Debian's libboost-dev, header only):
// kept in Boost and current, it speaks RFC 6455 with pings and timeouts on
// one thread; websocketpp's Debian release is from 2020 and libwebsockets
// would bring its own event loop. Only vm_feed.cc includes it.
#ifndef MARIPOSA_CONVERGENCE_TRITON_VM_FEED_H_
#define MARIPOSA_CONVERGENCE_TRITON_VM_FEED_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "convergence/triton/clients.h"

namespace mariposa::triton {

// One change item, read (pure; vm_feed_test).
struct FeedItem {
  std::string uuid;                       // changedResourceId
  std::vector<std::string> sub_resources;  // the top-level keys that changed
  std::optional<Vm> vm;                    // resourceObject, when the item carries it
};
absl::StatusOr<FeedItem> ParseFeedItem(const std::string& text);
// The same in two steps: the item without its VM, and where its
// resourceObject is in `text` (size 0: it carries none); then that VM.
absl::StatusOr<FeedItem> ParseFeedItemHead(const std::string& text, size_t* object_at, size_t* object_size);
absl::Status ReadFeedItemVm(absl::string_view object, FeedItem* item);
// The bootstrap VMAPI answers a v1 registration with: an error unless it
// names resource "vm".
absl::Status CheckBootstrap(const std::string& text);
// The registration mariposad sends.
std::string Registration(const std::string& instance);
// The wait before attempt `failures` (1, 2, …) after a watch ended.
absl::Duration FeedBackoff(int failures, absl::Duration min, absl::Duration max);

struct VmFeedOptions {
  std::string vmapi_url;  // http://host[:port]
  std::string instance;   // the registration's instance (this node)
  absl::Duration connect_timeout = absl::Seconds(5);
  // No frame for this long (a ping is sent at half of it): the feed is dead.
  absl::Duration idle_timeout = absl::Seconds(10);
  absl::Duration retry_min = absl::Seconds(1);
  absl::Duration retry_max = absl::Seconds(30);
  absl::Duration missing_retry = absl::Minutes(1);
  size_t fetch_batch = 500;  // uuids per ListVms when items carry no VM
  // After handing items over, the next read waits this long, so what
  // arrives meanwhile is read and handed over together: a mass change (a
  // scale of thousands) costs a wake per batch instead of one per item.
  // It is the most an item waits behind the one before it. 0 (the
  // default): none. A wait makes a job's end seen before its VM's item more
  // often, and that VM is then read again (RefreshEnded): with 20 ms, a
  // scale of 20 read every new VM again in one test run out of three.
  absl::Duration coalesce = absl::ZeroDuration();
  const Clock* clock = nullptr;
  VmapiClient* vmapi = nullptr;  // fetches VMs of items without resourceObject
};

struct VmFeedStatus {
  bool watching = false;
  absl::Time since = absl::InfinitePast();  // watching: the bootstrap; else when it stopped
  std::string why;                          // not watching: why
  bool missing = false;                     // VMAPI has no change feed
  uint64_t items = 0, reconnects = 0;
  // Items not read whole: a later item of the same VM arrived with them.
  uint64_t superseded = 0;
};

class VmFeed {
 public:
  // `on_vms`: changed VMs, in the order published (called on the feed's
  // threads). `on_state`: the watch began (true; every change after `since`
  // will be handed over) or ended (false, why).
  VmFeed(VmFeedOptions options, std::function<void(std::vector<Vm>)> on_vms,
         std::function<void(const VmFeedStatus&)> on_state);
  ~VmFeed();
  void Start();
  void Stop();
  VmFeedStatus status() const;

 private:
  struct Io;
  struct Conn;
  void Run();
  // One connection, from GET /changefeeds to its end; returns why it ended.
  std::string Watch(bool* missing);
  // Watch's steps ("" or why the connection ends).
  std::string CheckFeed(Conn* c, bool* missing);
  std::string Register(Conn* c);
  // An item read, its VM not yet (only the last of each VM is).
  struct Arrived {
    std::string text;
    FeedItem item;
    size_t object_at = 0, object_size = 0;
  };
  std::string ReadItems(Conn* c);
  std::string Deliver(std::vector<Arrived>* arrived);
  // Waits opt_.coalesce after a delivery; false when Stop() came.
  bool Coalesce();
  std::string Ended(Conn* c, const std::string& what);
  // Connects the websocket's stream (`websocket`) or the check's.
  bool Connect(Conn* c, bool websocket);
  bool Read(Conn* c);
  void SetWatching(bool watching, const std::string& why, bool missing);
  // Runs the I/O until `done` is set (by the operation's handler); false
  // when Stop() ended it.
  bool RunIo(const bool& done);
  // Runs what is ready without waiting; true when that finished the operation.
  bool PollIo(const bool& done);
  // Ends the read pending on `c` (the connection is given up); returns `why`.
  std::string Abandon(Conn* c, std::string why);

  VmFeedOptions opt_;
  std::function<void(std::vector<Vm>)> on_vms_;
  std::function<void(const VmFeedStatus&)> on_state_;
  std::unique_ptr<Io> io_;
  std::thread thread_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  VmFeedStatus status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mariposa::triton

#endif  // MARIPOSA_CONVERGENCE_TRITON_VM_FEED_H_
