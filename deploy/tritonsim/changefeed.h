// VMAPI's change feed as node-sdc-changefeed's Publisher serves it when
// sdc-vmapi mounts it on its restify server (RFD 5):
//
//   GET /changefeeds           the resources a listener may register for, by
//                              name: {"vm": {resource, subResources, bootstrapRoute}}
//   GET /changefeeds/stats     registered listeners
//   GET /changefeeds + Upgrade a websocket: the listener sends its registration
//                              ({instance, service, changeKind {resource,
//                              subResources}}; with Accept-Version ~2,
//                              {instance, service, resources: [...]}), the
//                              publisher answers with the bootstrap (the
//                              resource; v2: {bootstrapRoutes: [...]}), then
//                              sends one text message per change item:
//                              {changeKind {resource, subResources: the
//                              top-level keys that changed}, changedResourceId,
//                              resourceObject, published}
//
// A registration is refused as the Publisher refuses it: the websocket is
// ended with the reason. Items go to the registrations whose subResources
// meet the item's. The listener's "heartbeat" texts are read and ignored;
// pings are answered. A listener that falls more than kMaxBacklog items
// behind is disconnected (it must list again, as after any reconnect).
//
// httplib 0.11 cannot hand a connection over to another protocol, so the
// upgrade handler finds its own connection by its address pair
// (FindConnectionFd) and runs the websocket on it until it ends.
#ifndef MARIPOSA_DEPLOY_TRITONSIM_CHANGEFEED_H_
#define MARIPOSA_DEPLOY_TRITONSIM_CHANGEFEED_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace tritonsim {

// RFC 6455 framing, the publisher's side (pure; tested in changefeed_test).
std::string WebSocketAccept(const std::string& key);
struct WsFrame {
  bool fin = true;
  int opcode = 0;  // 1 text, 2 binary, 8 close, 9 ping, 10 pong
  std::string payload;
};
// Decodes the frame at the front of `buf` (a client's frames are masked).
// Returns the bytes it took, 0 when the frame is not complete yet, -1 when
// it is malformed or larger than `max_payload` (`why` says which).
long DecodeWsFrame(const std::string& buf, size_t max_payload, WsFrame* frame, std::string* why);
// A server's frame (unmasked).
std::string EncodeWsFrame(int opcode, const std::string& payload);
// A close frame with status `code` and `reason`.
std::string EncodeWsClose(int code, const std::string& reason);

// The top-level keys whose values differ between two JSON objects given as
// text (a key present in one only counts), in the order of `after`, then
// those only in `before`. "" stands for an object with no keys.
std::vector<std::string> ChangedKeys(const std::string& before, const std::string& after);

// The socket of this process whose local and peer addresses are these
// (IPv4), or -1.
int FindConnectionFd(const std::string& local_addr, int local_port, const std::string& remote_addr,
                     int remote_port);

class ChangeFeed {
 public:
  static constexpr size_t kMaxBacklog = 200000;
  // VMAPI's resource: "vm", its subResources and bootstrap route (as
  // sdc-vmapi's sapi_manifests/vmapi/template configures them).
  ChangeFeed();
  ~ChangeFeed();

  // Off: GET /changefeeds answers 404 (a VMAPI older than the feed) and
  // every session is ended.
  void SetEnabled(bool on);
  bool enabled() const { return enabled_.load(); }
  // Ends every session now (the listeners see the feed drop).
  void DropAll();
  // The next `n` changes are not published (lost items: a listener that
  // relies on the feed alone misses them; its full listings must not).
  void SkipNext(int n) { skip_ = n; }
  // After a session sends what waited, it sends again no sooner than this
  // (items published meanwhile go out together). VMAPI sends each item as
  // it comes; the simulator shares the host's cores with the listener it
  // is measured with, and a write and a wake per item of a mass change
  // would be the simulator's cost counted as the listener's. 0: each item
  // at once, as VMAPI.
  void SetFlushMs(int ms) { flush_ms_ = ms < 0 ? 0 : ms; }
  // Some listener is registered: changes must be published.
  bool Listening() const { return listening_.load() > 0; }
  // One change of `id`: `changed` top-level keys, `object` its JSON text.
  void Publish(const std::string& resource, const std::string& id, const std::vector<std::string>& changed,
               const std::string& object, int64_t now_ms);
  std::string ResourcesJson() const;
  std::string StatsJson() const;
  // Runs one websocket session on `fd`, the connection that asked for the
  // upgrade with `ws_key` and `accept_version`, until it ends. Writes the
  // 101 answer itself; the caller's connection is shut down on return.
  void Serve(int fd, const std::string& ws_key, const std::string& accept_version);
  // Items published and sent, since start.
  uint64_t published() const { return published_.load(); }

 private:
  struct Resource {
    std::string name, bootstrap_route;
    std::vector<std::string> sub_resources;
  };
  struct Session;
  // Validates a registration as the Publisher does; "" or the reason.
  std::string Register(const std::string& text, bool v2, Session* s, std::string* bootstrap);
  // Serve's two directions (changefeed.cc).
  bool SendWaiting(Session* s, short* readable);
  bool ReadFrames(Session* s, const std::string& accept_version);

  std::vector<Resource> resources_;
  std::atomic<bool> enabled_{true};
  std::atomic<int> listening_{0};
  std::atomic<uint64_t> published_{0};
  std::atomic<int> skip_{0};
  std::atomic<int> flush_ms_{10};
  mutable absl::Mutex mu_;
  std::set<Session*> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tritonsim

#endif  // MARIPOSA_DEPLOY_TRITONSIM_CHANGEFEED_H_
