#include "convergence/triton/vm_feed.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "convergence/triton/vm_json.h"

namespace mariposa::triton {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::json;

std::chrono::milliseconds Ms(absl::Duration d) { return std::chrono::milliseconds(absl::ToInt64Milliseconds(d)); }

// "http://host[:port][/…]" -> host, port.
bool SplitUrl(const std::string& url, std::string* host, std::string* port) {
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "http://")) return false;
  rest = rest.substr(0, rest.find('/'));
  size_t colon = rest.rfind(':');
  *host = std::string(rest.substr(0, colon));
  *port = colon == absl::string_view::npos ? "80" : std::string(rest.substr(colon + 1));
  return !host->empty();
}

}  // namespace

namespace {

// `key` of object `j` when it is a string, else "" (json::value throws on
// another type: a feed item from a faulty VMAPI must not end mariposad).
std::string StringField(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

absl::StatusOr<FeedItem> ParseFeedItemHead(const std::string& text, size_t* object_at, size_t* object_size) {
  // The resourceObject (most of the item's bytes) is found first and left
  // out; the rest of the item is read without it (a feed of a mass change is
  // thousands of items, and most VMs' items are superseded by their next).
  size_t open = std::string::npos, end = std::string::npos;
  size_t object_key = text.find("\"resourceObject\"");
  if (object_key != std::string::npos) {
    open = text.find_first_not_of(" \t\r\n:", object_key + 16);
    if (open != std::string::npos && text.compare(open, 4, "null") == 0) open = std::string::npos;  // fetched by uuid
  }
  if (open != std::string::npos) {
    if (text[open] != '{') {
      return absl::DataLossError("change item's resourceObject is not an object");
    }
    // The object's end: braces outside strings.
    int depth = 0;
    bool in_string = false, escaped = false;
    for (end = open; end < text.size(); ++end) {
      char c = text[end];
      if (in_string) {
        if (escaped) escaped = false;
        else if (c == '\\') escaped = true;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        break;
      }
    }
    if (end >= text.size()) return absl::DataLossError("change item's resourceObject is cut short");
  }
  json j = open == std::string::npos
               ? json::parse(text, nullptr, false)
               : json::parse(absl::StrCat(absl::string_view(text).substr(0, open), "null",
                                          absl::string_view(text).substr(end + 1)),
                             nullptr, false);
  if (j.is_discarded() || !j.is_object()) return absl::DataLossError("change item is not a JSON object");
  if (!j.contains("changedResourceId") || !j["changedResourceId"].is_string()) {
    return absl::DataLossError("change item has no changedResourceId");
  }
  const json& kind = j.contains("changeKind") ? j["changeKind"] : json();
  if (!kind.is_object() || StringField(kind, "resource") != "vm") {
    return absl::DataLossError("change item is not about a vm (changeKind.resource)");
  }
  FeedItem item;
  item.uuid = j["changedResourceId"].get<std::string>();
  if (kind.contains("subResources") && kind["subResources"].is_array()) {
    for (const json& s : kind["subResources"]) {
      if (s.is_string()) item.sub_resources.push_back(s.get<std::string>());
    }
  }
  *object_at = open == std::string::npos ? 0 : open;
  *object_size = open == std::string::npos ? 0 : end - open + 1;
  return item;
}

absl::Status ReadFeedItemVm(absl::string_view object, FeedItem* item) {
  if (object.empty()) return absl::OkStatus();
  auto vm = ParseVm(object);
  if (!vm.ok()) return absl::DataLossError(absl::StrCat("change item's resourceObject: ", vm.status().message()));
  if (vm->uuid != item->uuid) return absl::DataLossError("change item's resourceObject is another VM");
  item->vm = *std::move(vm);
  return absl::OkStatus();
}

absl::StatusOr<FeedItem> ParseFeedItem(const std::string& text) {
  size_t at = 0, size = 0;
  absl::StatusOr<FeedItem> item = ParseFeedItemHead(text, &at, &size);
  if (!item.ok()) return item;
  absl::Status st = ReadFeedItemVm(absl::string_view(text).substr(at, size), &*item);
  if (!st.ok()) return st;
  return item;
}

absl::Status CheckBootstrap(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("bootstrapRoute")) {
    return absl::DataLossError(absl::StrCat("expected the bootstrap (an object with bootstrapRoute), got: ",
                                            text.substr(0, 200)));
  }
  if (StringField(j, "resource") != "vm") {
    return absl::DataLossError(absl::StrCat("the bootstrap is for resource \"", StringField(j, "resource").substr(0, 64),
                                            "\", not \"vm\""));
  }
  return absl::OkStatus();
}

std::string Registration(const std::string& instance) {
  return json{{"instance", instance},
              {"service", "mariposa"},
              {"changeKind",
               {{"resource", "vm"},
                {"subResources",
                 {"alias", "customer_metadata", "destroyed", "internal_metadata", "nics", "owner_uuid",
                  "server_uuid", "state", "tags"}}}}}
      .dump();
}

absl::Duration FeedBackoff(int failures, absl::Duration min, absl::Duration max) {
  absl::Duration d = min;
  for (int k = 1; k < failures && d < max; ++k) d *= 2;
  return std::min(d, max);
}

struct VmFeed::Io {
  net::io_context ioc;
};

VmFeed::VmFeed(VmFeedOptions options, std::function<void(std::vector<Vm>)> on_vms,
               std::function<void(const VmFeedStatus&)> on_state)
    : opt_(std::move(options)), on_vms_(std::move(on_vms)), on_state_(std::move(on_state)), io_(new Io) {}

VmFeed::~VmFeed() { Stop(); }

void VmFeed::Start() {
  {
    absl::MutexLock l(&mu_);
    stop_ = false;
    status_.why = "connecting";
  }
  thread_ = std::thread([this] { Run(); });
}

void VmFeed::Stop() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  io_->ioc.stop();
  if (thread_.joinable()) thread_.join();
}

VmFeedStatus VmFeed::status() const {
  absl::MutexLock l(&mu_);
  return status_;
}

bool VmFeed::PollIo(const bool& done) {
  io_->ioc.restart();
  while (!done) {
    if (io_->ioc.poll_one() == 0) break;  // nothing ready
  }
  return done;
}

bool VmFeed::RunIo(const bool& done) {
  {
    absl::MutexLock l(&mu_);
    if (stop_) return false;
  }
  // A Stop() from here on stops this run (restart() came before it). The
  // websocket's own timers stay pending: run until this operation is done.
  io_->ioc.restart();
  {
    absl::MutexLock l(&mu_);
    if (stop_) return false;
  }
  while (!done) {
    if (io_->ioc.run_one() == 0) break;  // stopped
  }
  absl::MutexLock l(&mu_);
  return !stop_ && done;
}

void VmFeed::SetWatching(bool watching, const std::string& why, bool missing) {
  VmFeedStatus now;
  {
    absl::MutexLock l(&mu_);
    if (status_.watching == watching && status_.why == why && status_.missing == missing) return;
    if (status_.watching && !watching) ++status_.reconnects;
    status_.watching = watching;
    status_.why = why;
    status_.missing = missing;
    status_.since = opt_.clock->Now();
    now = status_;
  }
  on_state_(now);
}

void VmFeed::Run() {
  int failures = 0;
  for (;;) {
    bool missing = false, watched = false;
    {
      absl::MutexLock l(&mu_);
      if (stop_) return;
    }
    std::string why = Watch(&missing);
    {
      absl::MutexLock l(&mu_);
      if (stop_) return;
      watched = status_.watching;
    }
    SetWatching(false, why, missing);
    LogWarn(missing ? "VMAPI has no change feed: every sync reads VMAPI" : "VMAPI change feed ended: polling until it is back",
            {{"vmapi", opt_.vmapi_url}, {"why", why}});
    failures = watched ? 1 : failures + 1;
    absl::Duration wait = missing ? opt_.missing_retry : FeedBackoff(failures, opt_.retry_min, opt_.retry_max);
    absl::MutexLock l(&mu_);
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
    opt_.clock->AwaitUntil(&mu_, absl::Condition(&stopping), opt_.clock->Now() + wait);
  }
}

// One connection's I/O: the address, the last operation's outcome, the
// websocket and its read buffer.
struct VmFeed::Conn {
  explicit Conn(net::io_context& ioc) : ioc(ioc), check(ioc), ws(ioc) {}
  net::io_context& ioc;
  std::string host, port;
  tcp::resolver::results_type endpoints;
  beast::error_code ec;
  bool done = false;
  beast::tcp_stream check;  // GET /changefeeds
  websocket::stream<beast::tcp_stream> ws;
  beast::flat_buffer buf;
  // A completion handler: the operation ended with `e`.
  auto Finish() {
    done = false;
    return [this](beast::error_code e, auto&&...) {
      ec = e;
      done = true;
    };
  }
};

std::string VmFeed::Abandon(Conn* c, std::string why) {
  beast::error_code ignored;
  beast::get_lowest_layer(c->ws).socket().close(ignored);
  // The pending read ends (aborted) before `c` goes: its handler writes to it.
  io_->ioc.restart();
  while (!c->done) {
    if (io_->ioc.run_one() == 0) break;  // Stop(): the io_context is not run again
  }
  return why;
}

bool VmFeed::Connect(Conn* c, bool websocket) {
  beast::tcp_stream* s = websocket ? &beast::get_lowest_layer(c->ws) : &c->check;
  s->expires_after(Ms(opt_.connect_timeout));
  auto finish = c->Finish();
  s->async_connect(c->endpoints, [finish](beast::error_code e, const tcp::endpoint&) mutable { finish(e); });
  return RunIo(c->done);
}

std::string VmFeed::Watch(bool* missing) {
  Conn c(io_->ioc);
  if (!SplitUrl(opt_.vmapi_url, &c.host, &c.port)) {
    *missing = true;
    return absl::StrCat("the change feed is read over http:// only; VMAPI is at ", opt_.vmapi_url);
  }
  tcp::resolver resolver(c.ioc);
  c.endpoints = resolver.resolve(c.host, c.port, c.ec);
  if (c.ec) return absl::StrCat("cannot resolve ", c.host, ": ", c.ec.message());
  if (std::string why = CheckFeed(&c, missing); !why.empty()) return why;
  if (std::string why = Register(&c); !why.empty()) return why;
  SetWatching(true, "", false);
  return ReadItems(&c);
}

// The Listener's compatibility check: GET /changefeeds names the resources
// (404: an older VMAPI without a feed, `missing`). "" when the vm resource is
// there.
std::string VmFeed::CheckFeed(Conn* c, bool* missing) {
  beast::tcp_stream& check = c->check;
  if (!Connect(c, false)) return "stopped";
  if (c->ec) return absl::StrCat("cannot connect to VMAPI at ", opt_.vmapi_url, ": ", c->ec.message());
  http::request<http::empty_body> req{http::verb::get, "/changefeeds", 11};
  req.set(http::field::host, c->host);
  req.set("Accept-Version", "~1");
  req.set(http::field::user_agent, "mariposad");
  check.expires_after(Ms(opt_.connect_timeout));
  http::async_write(check, req, c->Finish());
  if (!RunIo(c->done)) return "stopped";
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  if (!c->ec) {
    http::async_read(check, buf, res, c->Finish());
    if (!RunIo(c->done)) return "stopped";
  }
  if (c->ec) return absl::StrCat("GET ", opt_.vmapi_url, "/changefeeds: ", c->ec.message());
  if (res.result_int() == 404) {
    *missing = true;
    return absl::StrCat("VMAPI at ", opt_.vmapi_url, " has no change feed (GET /changefeeds answered 404)");
  }
  json resources = json::parse(res.body(), nullptr, false);
  if (res.result_int() != 200 || !resources.is_object() || !resources.contains("vm")) {
    return absl::StrCat("GET ", opt_.vmapi_url, "/changefeeds answered ", res.result_int(),
                        " without the vm resource: ", res.body().substr(0, 200));
  }
  check.socket().shutdown(tcp::socket::shutdown_both, c->ec);
  check.close();
  return "";
}

// The websocket: the upgrade (pinged when idle), the registration for vm
// changes, the bootstrap reply. "" when the watch has begun.
std::string VmFeed::Register(Conn* c) {
  websocket::stream<beast::tcp_stream>& ws = c->ws;
  if (!Connect(c, true)) return "stopped";
  if (c->ec) return absl::StrCat("cannot connect to VMAPI at ", opt_.vmapi_url, ": ", c->ec.message());
  beast::get_lowest_layer(ws).expires_never();
  websocket::stream_base::timeout limits;
  limits.handshake_timeout = Ms(opt_.connect_timeout);
  limits.idle_timeout = Ms(opt_.idle_timeout);
  limits.keep_alive_pings = true;
  ws.set_option(limits);
  ws.set_option(websocket::stream_base::decorator([](websocket::request_type& r) {
    r.set("Accept-Version", "~1");
    r.set(http::field::user_agent, "mariposad");
  }));
  ws.read_message_max(64 << 20);
  ws.async_handshake(absl::StrCat(c->host, ":", c->port), "/changefeeds", c->Finish());
  if (!RunIo(c->done)) return "stopped";
  if (c->ec) return absl::StrCat("websocket upgrade at ", opt_.vmapi_url, "/changefeeds: ", c->ec.message());
  ws.text(true);
  std::string reg = Registration(opt_.instance);
  ws.async_write(net::buffer(reg), c->Finish());
  if (!RunIo(c->done)) return "stopped";
  if (!c->ec && !Read(c)) return "stopped";
  if (c->ec) return Ended(c, "registering for vm changes");
  if (absl::Status st = CheckBootstrap(beast::buffers_to_string(c->buf.data())); !st.ok()) {
    return std::string(st.message());
  }
  return "";
}

bool VmFeed::Read(Conn* c) {
  c->buf.clear();
  c->ws.async_read(c->buf, c->Finish());
  return RunIo(c->done);
}

// Why the websocket ended: VMAPI's close reason, or the error.
std::string VmFeed::Ended(Conn* c, const std::string& what) {
  const websocket::close_reason& reason = c->ws.reason();
  if (c->ec == websocket::error::closed || !reason.reason.empty()) {
    return absl::StrCat("VMAPI ended the feed", reason.reason.empty() ? "" : ": ", std::string(reason.reason.c_str()),
                        " (", what, ")");
  }
  return absl::StrCat(what, ": ", c->ec.message());
}

// Items until the feed ends. What has arrived is handed over together (the
// next read waits): of several items of one VM only the last is read whole
// (its VM), and items without their VM have it read, in batches. "Arrived"
// is what can be read without waiting: the websocket reads ahead of the
// message it returns, so the socket being empty does not say the batch is.
std::string VmFeed::ReadItems(Conn* c) {
  std::vector<Arrived> arrived;
  for (;;) {
    c->buf.clear();
    c->ws.async_read(c->buf, c->Finish());
    if (!arrived.empty() && !PollIo(c->done)) {
      // Nothing more without waiting: what came is handed over (the read
      // stays pending meanwhile, and is ended before the connection goes).
      if (std::string e = Deliver(&arrived); !e.empty()) return Abandon(c, e);
      if (!Coalesce()) return Abandon(c, "stopped");
    }
    if (!RunIo(c->done)) return "stopped";
    if (c->ec) return Ended(c, "reading the feed");
    Arrived a;
    a.text = beast::buffers_to_string(c->buf.data());
    auto head = ParseFeedItemHead(a.text, &a.object_at, &a.object_size);
    if (!head.ok()) return std::string(head.status().message());
    a.item = *std::move(head);
    arrived.push_back(std::move(a));
    {
      absl::MutexLock l(&mu_);
      ++status_.items;
    }
    if (arrived.size() >= 1000) {
      if (std::string e = Deliver(&arrived); !e.empty()) return e;
    }
  }
}

bool VmFeed::Coalesce() {
  absl::MutexLock l(&mu_);
  if (opt_.coalesce > absl::ZeroDuration()) {
    opt_.clock->AwaitUntil(&mu_, absl::Condition(&stop_), opt_.clock->Now() + opt_.coalesce);
  }
  return !stop_;
}

// Hands the VMs of `arrived` over: the last item of each VM, its VM read
// from the item or, when it carried none, by uuid (ListVms uuids=, in
// batches). "" or why they could not be read.
std::string VmFeed::Deliver(std::vector<Arrived>* arrived) {
  absl::flat_hash_map<absl::string_view, size_t> last;  // uuid -> its last item
  for (size_t k = 0; k < arrived->size(); ++k) last[(*arrived)[k].item.uuid] = k;
  {
    absl::MutexLock l(&mu_);
    status_.superseded += arrived->size() - last.size();
  }
  std::vector<Vm> ready;
  std::vector<std::string> fetch;
  for (size_t k = 0; k < arrived->size(); ++k) {
    Arrived& a = (*arrived)[k];
    if (last[a.item.uuid] != k) continue;  // a later item of the same VM says more
    if (a.object_size == 0) {
      fetch.push_back(a.item.uuid);
      continue;
    }
    if (absl::Status st = ReadFeedItemVm(absl::string_view(a.text).substr(a.object_at, a.object_size), &a.item);
        !st.ok()) {
      return std::string(st.message());
    }
    ready.push_back(*std::move(a.item.vm));
  }
  if (!fetch.empty()) {
    if (opt_.vmapi == nullptr) return "a change item carried no VM and there is no VMAPI client to read it";
    auto vms = ListVmsByUuid(opt_.vmapi, fetch, opt_.fetch_batch);
    if (!vms.ok()) return absl::StrCat("reading the VMs of change items: ", vms.status().message());
    for (Vm& vm : *vms) ready.push_back(std::move(vm));
  }
  arrived->clear();
  if (!ready.empty()) on_vms_(std::move(ready));
  return "";
}

}  // namespace mariposa::triton
