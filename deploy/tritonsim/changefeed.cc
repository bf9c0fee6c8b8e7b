#include "deploy/tritonsim/changefeed.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>
#include <nlohmann/json.hpp>
#include <utility>

namespace tritonsim {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxMessage = 1 << 20;  // a registration is a few hundred bytes
constexpr size_t kSendChunk = 256 << 10;  // the most one write of items sends

// The top-level members of a JSON object's text: key -> value text (views
// into `text`: nothing copied, as every change of every VM is diffed so).
std::vector<std::pair<std::string_view, std::string_view>> Members(std::string_view text) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  out.reserve(48);
  size_t i = text.find('{');
  if (i == std::string::npos) return out;
  ++i;
  auto skip_ws = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) ++i;
  };
  auto skip_string = [&] {  // at the opening quote; leaves i after the closing one
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\') ++i;
    }
    ++i;
  };
  while (i < text.size()) {
    skip_ws();
    if (i >= text.size() || text[i] == '}') break;
    if (text[i] == ',') {
      ++i;
      continue;
    }
    if (text[i] != '"') break;  // not an object's member: stop
    size_t k = i;
    skip_string();
    std::string_view key = text.substr(k + 1, i - k - 2);
    skip_ws();
    if (i >= text.size() || text[i] != ':') break;
    ++i;
    skip_ws();
    size_t v = i;
    int depth = 0;
    while (i < text.size()) {
      char c = text[i];
      if (c == '"') {
        skip_string();
        if (depth == 0) break;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (depth == 0) break;
        --depth;
        ++i;
        if (depth == 0) break;
        continue;
      }
      if (c == ',' && depth == 0) break;
      ++i;
    }
    out.emplace_back(key, text.substr(v, i - v));
  }
  return out;
}

bool SendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool Intersects(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const std::string& x : a) {
    for (const std::string& y : b) {
      if (x == y) return true;
    }
  }
  return false;
}

bool IsV2(const std::string& accept_version) {
  // restify's req.getVersion(): "*" when absent; the Publisher takes v1 for
  // "*" and any range below 2.0.0 (the Listener asks "~1" or "~2").
  if (accept_version.empty() || accept_version == "*") return false;
  size_t d = accept_version.find_first_of("0123456789");
  return d != std::string::npos && std::atoi(accept_version.c_str() + d) >= 2;
}

}  // namespace

std::string WebSocketAccept(const std::string& key) {
  std::string in = key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(in.data(), in.size(), digest, &len, EVP_sha1(), nullptr);
  unsigned char out[64];
  int n = EVP_EncodeBlock(out, digest, static_cast<int>(len));
  return std::string(reinterpret_cast<char*>(out), n);
}

long DecodeWsFrame(const std::string& buf, size_t max_payload, WsFrame* frame, std::string* why) {
  if (buf.size() < 2) return 0;
  const auto* b = reinterpret_cast<const unsigned char*>(buf.data());
  frame->fin = (b[0] & 0x80) != 0;
  frame->opcode = b[0] & 0x0f;
  if ((b[0] & 0x70) != 0) {
    *why = "reserved bits set (no extension was agreed)";
    return -1;
  }
  bool masked = (b[1] & 0x80) != 0;
  uint64_t len = b[1] & 0x7f;
  size_t at = 2;
  if (len == 126) {
    if (buf.size() < 4) return 0;
    len = (uint64_t{b[2]} << 8) | b[3];
    at = 4;
  } else if (len == 127) {
    if (buf.size() < 10) return 0;
    len = 0;
    for (int k = 0; k < 8; ++k) len = (len << 8) | b[2 + k];
    at = 10;
  }
  if (!masked) {
    *why = "a client's frame must be masked (RFC 6455 5.1)";
    return -1;
  }
  if (frame->opcode >= 8 && (len > 125 || !frame->fin)) {
    *why = "a control frame must be whole and at most 125 bytes";
    return -1;
  }
  if (len > max_payload) {
    *why = "frame of " + std::to_string(len) + " bytes is larger than " + std::to_string(max_payload);
    return -1;
  }
  if (buf.size() < at + 4 + len) return 0;
  const unsigned char* mask = b + at;
  at += 4;
  frame->payload.resize(len);
  for (uint64_t k = 0; k < len; ++k) frame->payload[k] = static_cast<char>(b[at + k] ^ mask[k % 4]);
  return static_cast<long>(at + len);
}

std::string EncodeWsFrame(int opcode, const std::string& payload) {
  std::string out;
  out.push_back(static_cast<char>(0x80 | (opcode & 0x0f)));
  size_t n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(n));
  } else if (n < 65536) {
    out.push_back(126);
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xff));
  } else {
    out.push_back(127);
    for (int k = 7; k >= 0; --k) out.push_back(static_cast<char>((uint64_t{n} >> (8 * k)) & 0xff));
  }
  out += payload;
  return out;
}

std::string EncodeWsClose(int code, const std::string& reason) {
  std::string p;
  p.push_back(static_cast<char>(code >> 8));
  p.push_back(static_cast<char>(code & 0xff));
  p += reason.substr(0, 123);
  return EncodeWsFrame(8, p);
}

std::vector<std::string> ChangedKeys(const std::string& before, const std::string& after) {
  const auto old = Members(before), now = Members(after);
  std::vector<std::string> out;
  // The same writer made both, so their keys are mostly in the same order:
  // compared side by side while they are, by name after that.
  size_t same = 0;
  while (same < old.size() && same < now.size() && old[same].first == now[same].first) {
    if (old[same].second != now[same].second) out.emplace_back(now[same].first);
    ++same;
  }
  if (same == old.size() && same == now.size()) return out;
  std::map<std::string_view, std::string_view> rest(old.begin() + same, old.end());
  for (size_t i = same; i < now.size(); ++i) {
    auto it = rest.find(now[i].first);
    if (it == rest.end() || it->second != now[i].second) out.emplace_back(now[i].first);
    if (it != rest.end()) rest.erase(it);
  }
  for (const auto& [k, v] : rest) out.emplace_back(k);  // gone
  return out;
}

int FindConnectionFd(const std::string& local_addr, int local_port, const std::string& remote_addr,
                     int remote_port) {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int found = -1;
  while (dirent* e = readdir(d)) {
    int fd = std::atoi(e->d_name);
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d)) continue;
    sockaddr_in local{}, peer{};
    socklen_t ll = sizeof(local), pl = sizeof(peer);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0 || local.sin_family != AF_INET) continue;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0 || peer.sin_family != AF_INET) continue;
    char la[INET_ADDRSTRLEN], pa[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &local.sin_addr, la, sizeof(la));
    inet_ntop(AF_INET, &peer.sin_addr, pa, sizeof(pa));
    if (ntohs(local.sin_port) == local_port && ntohs(peer.sin_port) == remote_port && local_addr == la &&
        remote_addr == pa) {
      found = fd;
      break;
    }
  }
  closedir(d);
  return found;
}

// One listener's websocket. The outbox is filled by Publish (under the
// feed's mutex) and drained by the session's thread, woken by `wake`.
struct ChangeFeed::Session {
  int fd = -1;
  int wake = -1;  // eventfd
  std::string instance;
  std::map<std::string, std::vector<std::string>> registered;  // resource -> subResources
  std::deque<std::shared_ptr<const std::string>> outbox;       // ABSL_GUARDED_BY(ChangeFeed::mu_)
  bool ended = false;                                          // ditto: drop asked, or too far behind
  std::string end_reason;
  // The serving thread's own: bytes read, the message being assembled, the
  // close frame to send before ending, whether it counts as listening.
  std::string in, message;
  int message_opcode = 0;
  std::string close_with;
  bool counted = false;
  void Wake() const {
    uint64_t one = 1;
    (void)!write(wake, &one, sizeof(one));
  }
};

ChangeFeed::ChangeFeed() {
  resources_.push_back({"vm",
                        "/vms",
                        {"alias", "customer_metadata", "destroyed", "internal_metadata", "nics", "owner_uuid",
                         "server_uuid", "state", "tags"}});
}

ChangeFeed::~ChangeFeed() { DropAll(); }

void ChangeFeed::SetEnabled(bool on) {
  enabled_ = on;
  if (!on) DropAll();
}

void ChangeFeed::DropAll() {
  absl::MutexLock l(&mu_);
  for (Session* s : sessions_) {
    s->ended = true;
    s->end_reason = "publisher going away";
    s->Wake();
  }
}

void ChangeFeed::Publish(const std::string& resource, const std::string& id, const std::vector<std::string>& changed,
                         const std::string& object, int64_t now_ms) {
  if (changed.empty()) return;
  if (skip_.load() > 0 && skip_.fetch_sub(1) > 0) return;
  std::string item = "{\"changeKind\":{\"resource\":" + json(resource).dump() + ",\"subResources\":" +
                     json(changed).dump() + "},\"changedResourceId\":" + json(id).dump() +
                     ",\"resourceObject\":" + object + ",\"published\":\"" + std::to_string(now_ms) + "\"}";
  auto frame = std::make_shared<const std::string>(EncodeWsFrame(1, item));
  ++published_;
  absl::MutexLock l(&mu_);
  for (Session* s : sessions_) {
    auto r = s->registered.find(resource);
    if (s->ended || r == s->registered.end() || !Intersects(r->second, changed)) continue;
    if (s->outbox.size() >= kMaxBacklog) {
      s->ended = true;
      s->end_reason = "listener too far behind; register again and re-read";
    } else {
      s->outbox.push_back(frame);
      // Woken once per batch: the session sends all that waits when it
      // wakes, so an item behind another needs no wake of its own.
      if (s->outbox.size() > 1) continue;
    }
    s->Wake();
  }
}

std::string ChangeFeed::ResourcesJson() const {
  json out = json::object();
  for (const Resource& r : resources_) {
    out[r.name] = {{"resource", r.name}, {"subResources", r.sub_resources}, {"bootstrapRoute", r.bootstrap_route}};
  }
  return out.dump();
}

std::string ChangeFeed::StatsJson() const {
  json regs = json::object();
  for (const Resource& r : resources_) regs[r.name] = json::object();
  int listeners = 0;
  absl::MutexLock l(&mu_);
  for (const Session* s : sessions_) {
    if (s->registered.empty()) continue;
    ++listeners;
    for (const auto& [res, subs] : s->registered) {
      regs[res][s->instance] = {{"resource", res}, {"subResources", subs}};
    }
  }
  return json{{"listeners", listeners}, {"registrations", regs}}.dump();
}

std::string ChangeFeed::Register(const std::string& text, bool v2, Session* s, std::string* bootstrap) {
  const char* v = v2 ? "v2" : "v1";
  json reg = json::parse(text, nullptr, false);
  if (reg.is_discarded()) return std::string("failed to parse ") + v + " registration payload";
  if (!reg.is_object()) return std::string(v) + " registration should be an object";
  if (!reg.contains("instance") || !reg["instance"].is_string()) {
    return std::string(v) + " registration should contain an \"instance\" identifier";
  }
  auto known = [&](const std::string& name) -> const Resource* {
    for (const Resource& r : resources_) {
      if (r.name == name) return &r;
    }
    return nullptr;
  };
  std::map<std::string, std::vector<std::string>> wanted;
  json answer;
  if (!v2) {
    const json& ck = reg.contains("changeKind") ? reg["changeKind"] : json();
    if (!ck.is_object()) return "v1 registration should contain a \"changeKind\"";
    if (!ck.contains("resource") || !ck["resource"].is_string()) return "v1 registration should contain a valid \"resource\"";
    if (!ck.contains("subResources") || !ck["subResources"].is_array()) {
      return "v1 registration should contain a valid \"subResources\" array";
    }
    const Resource* r = known(ck["resource"].get<std::string>());
    if (r == nullptr) return "unknown resource: " + ck["resource"].get<std::string>();
    for (const json& sr : ck["subResources"]) {
      if (sr.is_string()) wanted[r->name].push_back(sr.get<std::string>());
    }
    answer = {{"resource", r->name}, {"subResources", r->sub_resources}, {"bootstrapRoute", r->bootstrap_route}};
  } else {
    const json& list = reg.contains("resources") ? reg["resources"] : json();
    if (!list.is_array()) return "v2 registration should contain a \"resources\" array";
    if (list.empty()) return "no resources specified";
    json routes = json::array();
    for (const json& r : list) {
      if (!r.is_object()) return "v2 registration \"resources\" array should contain objects";
      if (!r.contains("resource") || !r["resource"].is_string() || r["resource"].get<std::string>().empty()) {
        return "v2 registration resources should contain a \"resource\"";
      }
      if (!r.contains("subResources") || !r["subResources"].is_array()) {
        return "v2 registration resources should contain \"subResources\"";
      }
      const Resource* k = known(r["resource"].get<std::string>());
      if (k == nullptr) return "unknown resource: " + r["resource"].get<std::string>();
      for (const json& sr : r["subResources"]) {
        if (sr.is_string()) wanted[k->name].push_back(sr.get<std::string>());
      }
      routes.push_back({{"resource", k->name}, {"subResources", k->sub_resources},
                        {"bootstrapRoute", k->bootstrap_route}});
    }
    answer = {{"bootstrapRoutes", routes}};
  }
  *bootstrap = answer.dump();
  absl::MutexLock l(&mu_);
  s->instance = reg["instance"].get<std::string>();
  s->registered = std::move(wanted);
  ++listening_;  // before the bootstrap: no change after it is missed
  return "";
}

// What waits in the outbox goes out in one write (one segment where it
// fits): a write per item costs a system call and a wake of the listener
// each, which a mass change multiplies. Items published in the next
// flush_ms_ wait to go out together; the listener's frames are still read
// meanwhile (`readable` says so). False once the session ends.
bool ChangeFeed::SendWaiting(Session* s, short* readable) {
  uint64_t n;
  (void)!read(s->wake, &n, sizeof(n));
  std::deque<std::shared_ptr<const std::string>> batch;
  bool open = true;
  {
    absl::MutexLock l(&mu_);
    batch.swap(s->outbox);
    if (s->ended) {
      s->close_with = EncodeWsClose(1001, s->end_reason);
      open = false;
    }
  }
  std::string out;
  for (const auto& f : batch) {
    out += *f;
    if (out.size() >= kSendChunk) {
      if (!SendAll(s->fd, out)) open = false;
      out.clear();
    }
    if (!open) break;
  }
  if (open && !out.empty() && !SendAll(s->fd, out)) open = false;
  if (open && !batch.empty() && flush_ms_.load() > 0) {
    pollfd only = {s->fd, POLLIN, 0};
    if (poll(&only, 1, flush_ms_.load()) > 0) *readable = only.revents;
  }
  return open;
}

// The frames read so far: pings answered, a close returned, the first text
// message taken as the registration (anything after it, "heartbeat"
// included, is ignored). False once the session ends.
bool ChangeFeed::ReadFrames(Session* s, const std::string& accept_version) {
  for (;;) {
    WsFrame f;
    std::string why;
    long used = DecodeWsFrame(s->in, kMaxMessage, &f, &why);
    if (used == 0) return true;
    if (used < 0) {
      s->close_with = EncodeWsClose(1002, why);
      return false;
    }
    s->in.erase(0, used);
    if (f.opcode == 9) {
      if (!SendAll(s->fd, EncodeWsFrame(10, f.payload))) return false;
      continue;
    }
    if (f.opcode == 10) continue;
    if (f.opcode == 8) {
      s->close_with = EncodeWsFrame(8, f.payload.substr(0, 2));
      return false;
    }
    if (f.opcode != 0) s->message_opcode = f.opcode;
    s->message += f.payload;
    if (s->message.size() > kMaxMessage) {
      s->close_with = EncodeWsClose(1009, "message too large");
      return false;
    }
    if (!f.fin) continue;
    std::string text = std::move(s->message);
    s->message.clear();
    if (s->message_opcode != 1) continue;
    {
      absl::MutexLock l(&mu_);
      if (!s->registered.empty()) continue;  // "heartbeat" and anything after the registration
    }
    std::string bootstrap;
    std::string refused = Register(text, IsV2(accept_version), s, &bootstrap);
    if (!refused.empty()) {
      s->close_with = EncodeWsClose(1000, refused);
      return false;
    }
    s->counted = true;
    if (!SendAll(s->fd, EncodeWsFrame(1, bootstrap))) return false;
  }
}

void ChangeFeed::Serve(int fd, const std::string& ws_key, const std::string& accept_version) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::string answer =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
      WebSocketAccept(ws_key) + "\r\n\r\n";
  if (!SendAll(fd, answer)) return;
  Session s;
  s.fd = fd;
  s.wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s.wake < 0) return;
  {
    absl::MutexLock l(&mu_);
    sessions_.insert(&s);
  }
  bool open = true;
  while (open) {
    pollfd p[2] = {{fd, POLLIN, 0}, {s.wake, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents & POLLIN) open = SendWaiting(&s, &p[0].revents);
    if (!open || !(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buf[16384];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    s.in.append(buf, n);
    open = ReadFrames(&s, accept_version);
  }
  if (!s.close_with.empty() && SendAll(fd, s.close_with)) {
    // The closing handshake: the listener answers with its close frame (or
    // hangs up); what else it sends meanwhile is dropped.
    shutdown(fd, SHUT_WR);
    for (;;) {
      pollfd p = {fd, POLLIN, 0};
      char buf[4096];
      if (poll(&p, 1, 2000) <= 0 || recv(fd, buf, sizeof(buf), 0) <= 0) break;
    }
  }
  {
    absl::MutexLock l(&mu_);
    sessions_.erase(&s);
  }
  if (s.counted) --listening_;
  close(s.wake);
}

}  // namespace tritonsim
