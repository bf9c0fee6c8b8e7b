#include "health/check_engine.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "health/http_response.h"

namespace mariposa::health {
namespace {

// libstdc++'s breadth-first regex executor: no recursion per input byte, so a
// 64 KiB body cannot exhaust the loop thread's stack.
constexpr auto kRegexFlags = std::regex::ECMAScript | std::regex_constants::__polynomial;

bool CompileRegex(const std::string& pattern, std::regex* out) {
  try {
    *out = std::regex(pattern, kRegexFlags);
    return true;
  } catch (const std::regex_error&) {
    return false;
  }
}

std::string Took(absl::Duration d) { return absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(1))); }

// Everything but the regular expressions (which the loop compiles once and
// caches).
absl::Status ValidateShape(const CheckSpec& s) {
  if (s.type != "http" && s.type != "https" && s.type != "tcp") {
    return absl::InvalidArgumentError(absl::StrCat("type \"", s.type, "\" is not http, https or tcp"));
  }
  in_addr a;
  if (inet_pton(AF_INET, s.address.c_str(), &a) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("address \"", s.address, "\" is not an IPv4 address"));
  }
  if (s.port < 1 || s.port > 65535) return absl::InvalidArgumentError(absl::StrCat("port ", s.port, " is not 1..65535"));
  if (s.timeout <= absl::ZeroDuration()) return absl::InvalidArgumentError("timeout must be positive");
  if (s.type != "tcp" && (s.path.empty() || s.path[0] != '/')) {
    return absl::InvalidArgumentError(absl::StrCat("path \"", s.path, "\" must start with /"));
  }
  if (s.type != "tcp") {
    // What goes into the request line and headers as is: no byte may end a
    // line or split the request line.
    auto token = [](const std::string& t) {
      return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return absl::ascii_isgraph(c) && c != ':'; });
    };
    auto printable = [](const std::string& t) {
      return std::all_of(t.begin(), t.end(), [](char c) { return c == '\t' || absl::ascii_isprint(c) || c & 0x80; });
    };
    if (!token(s.method)) return absl::InvalidArgumentError(absl::StrCat("method \"", s.method, "\" is not a word"));
    if (!std::all_of(s.path.begin(), s.path.end(), [](char c) { return absl::ascii_isgraph(c) || c & 0x80; })) {
      return absl::InvalidArgumentError(absl::StrCat("path \"", s.path, "\" has a space or a control character"));
    }
    for (const auto& [name, value] : s.headers) {
      if (!token(name)) return absl::InvalidArgumentError(absl::StrCat("header name \"", name, "\" is not a word"));
      if (!printable(value)) {
        return absl::InvalidArgumentError(absl::StrCat("header ", name, "'s value has a control character"));
      }
    }
  }
  return absl::OkStatus();
}

// The verdict on a reply: its status among the expected ones, then its body
// (the first kMaxBody bytes) against expect_body. `body_re` is the compiled
// expect_body (null when it is empty).
bool Verdict(const CheckSpec& spec, long status, const std::string& body, const std::regex* body_re,
             std::string* detail) {
  bool status_ok = false;
  for (const auto& range : spec.expect_status) status_ok |= status >= range.first && status <= range.second;
  if (!status_ok) {
    *detail = absl::StrCat("status ", status);
    return false;
  }
  if (spec.expect_body.empty()) return true;
  if (body_re != nullptr && std::regex_search(body, *body_re)) return true;
  *detail = absl::StrCat("body does not match /", spec.expect_body, "/");
  return false;
}

// The request of a plain-http check, as sent.
std::string RequestBytes(const CheckSpec& s) {
  std::string out = absl::StrCat(s.method, " ", s.path, " HTTP/1.1\r\n");
  bool host = false, accept = false;
  for (const auto& [name, value] : s.headers) {
    host |= absl::EqualsIgnoreCase(name, "Host");
    accept |= absl::EqualsIgnoreCase(name, "Accept");
    absl::StrAppend(&out, name, ": ", value, "\r\n");
  }
  if (!host) absl::StrAppend(&out, "Host: ", s.address, ":", s.port, "\r\n");
  if (!accept) out += "Accept: */*\r\n";
  out += "\r\n";
  return out;
}

absl::Status BadRegex(const char* field, const std::string& pattern) {
  return absl::InvalidArgumentError(absl::StrCat(field, " \"", pattern, "\" is not a regular expression"));
}

}  // namespace

absl::Status ValidateCheck(const CheckSpec& s) {
  if (auto st = ValidateShape(s); !st.ok()) return st;
  std::regex re;
  if (!s.expect_body.empty() && !CompileRegex(s.expect_body, &re)) return BadRegex("expect_body", s.expect_body);
  if (!s.expect.empty() && !CompileRegex(s.expect, &re)) return BadRegex("expect", s.expect);
  return absl::OkStatus();
}

class CheckEngine::Loop {
 public:
  Loop(const Clock* clock, size_t kept_connections) : clock_(clock), kept_connections_(kept_connections) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    multi_ = curl_multi_init();
    // Keep-alive: one connection cache for every check, up to
    // kept_connections (the least recently used closes first).
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(kept_connections_));
    thread_ = std::thread([this] { Run(); });
  }

  ~Loop() {
    Stop();
    curl_multi_cleanup(multi_);
  }

  // Ends the loop: checks in flight, and those their callbacks submit, end
  // with "engine stopped".
  void Stop() {
    if (!thread_.joinable()) return;
    stop_ = true;
    curl_multi_wakeup(multi_);
    thread_.join();
  }

  void Submit(CheckSpec spec, std::function<void(const CheckResult&)> done) {
    in_flight_++;
    {
      std::lock_guard<std::mutex> l(mu_);
      incoming_.push_back({std::move(spec), std::move(done)});
    }
    // A check submitted from a result's callback (on the loop thread) is
    // started at the top of the loop's next pass with no wakeup; from any
    // other thread, one wakeup per loop pass however many arrive meanwhile.
    if (std::this_thread::get_id() == loop_thread_.load()) return;
    if (!woken_.exchange(true)) curl_multi_wakeup(multi_);
  }

  size_t in_flight() const { return in_flight_.load(); }

 private:
  struct Incoming {
    CheckSpec spec;
    std::function<void(const CheckResult&)> done;
  };
  struct Http {
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    CheckSpec spec;
    std::function<void(const CheckResult&)> done;
    absl::Time start;
    std::string body;
    size_t body_read = 0;
    bool stopped_reading = false;  // we ended the transfer on purpose (more than kMaxBody)
    char error[CURL_ERROR_SIZE] = {0};
    std::list<std::unique_ptr<Http>>::iterator self;  // its place in http_
  };
  // A plain-http check: our own HTTP/1.1 on the loop (no libcurl), with the
  // target's connection kept for its next check.
  struct Plain {
    int fd = -1;
    CheckSpec spec;
    std::function<void(const CheckResult&)> done;
    absl::Time start, deadline;
    uint64_t key = 0;       // address and port, the kept connections' key (TargetKey)
    absl::Time opened;      // when its connection was opened
    bool reused = false;    // the connection served an earlier check
    enum Phase { kConnecting, kSending, kReading } phase = kConnecting;
    std::string request;
    size_t sent = 0;
    std::optional<HttpResponseReader> reply;
  };
  // A kept connection, by its fd: its target, when it was opened, and its
  // links in the list of all kept connections (most recently used first)
  // and in its target's (fds; -1 ends a list). No allocation per check.
  struct Idle {
    uint64_t key = 0;
    absl::Time opened;
    int newer = -1, older = -1;
    int newer_of_key = -1, older_of_key = -1;
  };
  struct Tcp {
    int fd = -1;
    CheckSpec spec;
    std::function<void(const CheckResult&)> done;
    absl::Time start, deadline;
    enum Phase { kConnecting, kSending, kReading } phase = kConnecting;
    size_t sent = 0;
    std::string reply;
    const std::regex* expect = nullptr;
  };

  static size_t OnBody(char* data, size_t size, size_t n, void* user) {
    auto* c = static_cast<Http*>(user);
    size_t len = size * n;
    // Read to the end (up to kMaxBody) so the connection can be used
    // again; kept only when the check matches the body.
    c->body_read += len;
    if (c->spec.expect_body.empty()) {
      if (c->body_read <= kMaxBody) return len;
      c->stopped_reading = true;
      return 0;
    }
    size_t room = kMaxBody - c->body.size();
    c->body.append(data, std::min(len, room));
    if (len >= room) {
      c->stopped_reading = true;
      return 0;
    }
    return len;
  }

  const std::regex* Regex(const std::string& pattern) {
    auto it = regexes_.find(pattern);
    if (it != regexes_.end()) return &it->second;
    std::regex re;
    if (!CompileRegex(pattern, &re)) return nullptr;
    if (regexes_.size() > 10000) regexes_.clear();
    return &regexes_.emplace(pattern, std::move(re)).first->second;
  }

  void Finish(const std::function<void(const CheckResult&)>& done, bool pass, std::string detail, absl::Time start) {
    CheckResult r{pass, std::move(detail), clock_->Now() - start};
    in_flight_--;
    done(r);
  }

  void StartHttp(Incoming in) {
    auto c = std::make_unique<Http>();
    c->spec = std::move(in.spec);
    c->done = std::move(in.done);
    c->start = clock_->Now();
    CURL* e = nullptr;
    if (idle_handles_.empty()) {
      e = curl_easy_init();
    } else {
      e = idle_handles_.back();
      idle_handles_.pop_back();
    }
    c->easy = e;
    std::string url = absl::StrCat(c->spec.type, "://", c->spec.address, ":", c->spec.port, c->spec.path);
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, c.get());
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    // A target's connection is used again (HTTP keep-alive) while it is
    // younger than kConnectionLifetime: a listener that stops accepting
    // is seen within that, a dead peer at once (libcurl connects anew when
    // a kept connection was closed).
    curl_easy_setopt(e, CURLOPT_MAXLIFETIME_CONN, static_cast<long>(absl::ToInt64Seconds(kConnectionLifetime)));
    // Straight to the instance: $http_proxy and its kind (set for a global
    // zone's downloads) are not for checks, nor read for each one.
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    long ms = static_cast<long>(absl::ToInt64Milliseconds(c->spec.timeout));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnBody);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, c.get());
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->error);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->spec.method == "HEAD") {
      curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (c->spec.method != "GET") {
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->spec.method.c_str());
    }
    for (const auto& h : c->spec.headers) c->headers = curl_slist_append(c->headers, (h.first + ": " + h.second).c_str());
    if (c->headers != nullptr) curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
    if (c->spec.tls_skip_verify) {
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    curl_multi_add_handle(multi_, e);
    Http* raw = c.get();
    http_.push_back(std::move(c));
    raw->self = std::prev(http_.end());
  }

  void EndHttp(Http* c, CURLcode rc) {
    long status = 0;
    curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
    bool pass = false;
    std::string detail;
    if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && c->stopped_reading)) {
      const std::regex* re = c->spec.expect_body.empty() ? nullptr : Regex(c->spec.expect_body);
      pass = Verdict(c->spec, status, c->body, re, &detail);
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
      detail = absl::StrCat("timed out after ", Took(c->spec.timeout));
    } else {
      detail = c->error[0] != '\0' ? c->error : curl_easy_strerror(rc);
    }
    curl_multi_remove_handle(multi_, c->easy);
    // Handles are kept for the next checks (options reset; connections
    // live in the multi handle's cache, not in the easy handle).
    if (idle_handles_.size() < kIdleHandles) {
      curl_easy_reset(c->easy);
      idle_handles_.push_back(c->easy);
    } else {
      curl_easy_cleanup(c->easy);
    }
    curl_slist_free_all(c->headers);
    Finish(c->done, pass, std::move(detail), c->start);
  }

  // A tcp or plain-http check from what was submitted, its deadline set.
  template <typename Check>
  std::unique_ptr<Check> Begin(Incoming in) {
    auto c = std::make_unique<Check>();
    c->spec = std::move(in.spec);
    c->done = std::move(in.done);
    c->start = clock_->Now();
    c->deadline = c->start + c->spec.timeout;
    return c;
  }

  // Opens a new non-blocking connection to the check's target, or returns
  // an error (the connect failed at once).
  absl::StatusOr<int> Connect(const CheckSpec& spec) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", strerror(errno)));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(spec.port));
    inet_pton(AF_INET, spec.address.c_str(), &addr.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
      std::string why = strerror(errno);
      close(fd);
      return absl::UnavailableError(why);
    }
    return fd;
  }

  static std::string ConnectFailed(const CheckSpec& spec, const std::string& why) {
    return absl::StrCat("could not connect to ", spec.address, ":", spec.port, ": ", why);
  }

  // The kept connections' key of a check's target (its address was
  // validated: an IPv4 address).
  static uint64_t TargetKey(const CheckSpec& spec) {
    in_addr a{};
    inet_pton(AF_INET, spec.address.c_str(), &a);
    return (static_cast<uint64_t>(ntohl(a.s_addr)) << 16) | static_cast<uint16_t>(spec.port);
  }

  // A kept connection to `key` young enough, or -1. Whether the target
  // closed it while it was idle is not asked (a syscall per check): a check
  // that fails on a kept connection is tried again on a new one (RetryFresh).
  int TakeIdle(uint64_t key, absl::Time now, absl::Time* opened) {
    auto it = idle_by_key_.find(key);
    while (it != idle_by_key_.end() && it->second >= 0) {
      const int fd = it->second;
      UnlinkIdle(fd);  // it->second becomes the next older
      if (now - idle_[fd].opened >= kConnectionLifetime) {
        close(fd);
        continue;
      }
      *opened = idle_[fd].opened;
      return fd;
    }
    return -1;
  }

  // Keeps a connection for the next check of its target; past
  // kept_connections_ the least recently used is closed.
  void PutIdle(int fd, uint64_t key, absl::Time opened) {
    if (static_cast<size_t>(fd) >= idle_.size()) idle_.resize(static_cast<size_t>(fd) + 64);
    Idle& c = idle_[fd];
    c = Idle{key, opened, -1, idle_newest_, -1, -1};
    if (idle_newest_ >= 0) idle_[idle_newest_].newer = fd;
    idle_newest_ = fd;
    if (idle_oldest_ < 0) idle_oldest_ = fd;
    // A target's entry stays when its last connection is taken (-1), so a
    // target checked over and over does not allocate; entries of targets
    // with none are swept once they far outnumber the connections kept.
    if (idle_by_key_.size() > 4 * kept_connections_ + 64) {
      for (auto e = idle_by_key_.begin(); e != idle_by_key_.end();) e = e->second < 0 ? idle_by_key_.erase(e) : std::next(e);
    }
    int& head = idle_by_key_.try_emplace(key, -1).first->second;
    c.older_of_key = head;
    if (head >= 0) idle_[head].newer_of_key = fd;
    head = fd;
    if (++idle_count_ <= kept_connections_) return;
    const int oldest = idle_oldest_;
    UnlinkIdle(oldest);
    close(oldest);
  }

  // Takes a kept connection out of both lists (it stays open).
  void UnlinkIdle(int fd) {
    Idle& c = idle_[fd];
    (c.newer >= 0 ? idle_[c.newer].older : idle_newest_) = c.older;
    (c.older >= 0 ? idle_[c.older].newer : idle_oldest_) = c.newer;
    if (c.newer_of_key >= 0) {
      idle_[c.newer_of_key].older_of_key = c.older_of_key;
    } else {
      idle_by_key_[c.key] = c.older_of_key;
    }
    if (c.older_of_key >= 0) idle_[c.older_of_key].newer_of_key = c.newer_of_key;
    --idle_count_;
  }

  void StartPlain(Incoming in) {
    auto c = Begin<Plain>(std::move(in));
    c->key = TargetKey(c->spec);
    c->request = RequestBytes(c->spec);
    c->fd = TakeIdle(c->key, c->start, &c->opened);
    if (c->fd >= 0) {
      c->reused = true;
      c->phase = Plain::kSending;
    } else if (!OpenPlain(c.get())) {
      return;
    }
    ResetReply(c.get());
    // A kept connection takes the request now (no wait for the next poll).
    if (c->reused && StepPlain(c.get(), POLLOUT)) return;
    plain_.push_back(std::move(c));
  }

  // A new connection for `c`; false when it failed at once (reported).
  bool OpenPlain(Plain* c) {
    absl::StatusOr<int> fd = Connect(c->spec);
    if (!fd.ok()) {
      Finish(c->done, false, ConnectFailed(c->spec, std::string(fd.status().message())), c->start);
      return false;
    }
    c->fd = *fd;
    c->opened = clock_->Now();
    c->reused = false;
    c->phase = Plain::kConnecting;
    return true;
  }

  static void ResetReply(Plain* c) {
    c->sent = 0;
    c->reply.emplace(c->spec.method == "HEAD", kMaxBody, c->spec.expect_body.empty() ? 0 : kMaxBody);
  }

  // A kept connection failed to carry the check (the target closed it while
  // it was idle, or left bytes on it that were not a reply): the check goes
  // on with a new connection, once. A reply that says the target is unwell
  // (a status, a body) is not an error and is not tried again.
  bool RetryFresh(Plain* c) {
    if (!c->reused) return false;
    close(c->fd);
    c->fd = -1;
    if (!OpenPlain(c)) return true;  // reported
    ResetReply(c);
    return true;
  }

  // Advances a plain-http check; true when it has finished (and was reported).
  bool StepPlain(Plain* c, short revents) {
    auto end = [&](bool pass, std::string detail, bool keep) {
      if (keep) {
        PutIdle(c->fd, c->key, c->opened);
      } else {
        close(c->fd);
      }
      Finish(c->done, pass, std::move(detail), c->start);
      return true;
    };
    auto failed = [&](const std::string& detail) {
      if (RetryFresh(c)) return c->fd < 0;  // the new connection failed at once: reported
      return end(false, detail, false);
    };
    if (c->phase == Plain::kConnecting) {
      if ((revents & (POLLOUT | POLLERR | POLLHUP)) == 0) return false;
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return end(false, ConnectFailed(c->spec, strerror(err)), false);
      c->phase = Plain::kSending;
    }
    if (c->phase == Plain::kSending) {
      if ((revents & (POLLOUT | POLLERR | POLLHUP)) == 0) return false;
      ssize_t n = ::send(c->fd, c->request.data() + c->sent, c->request.size() - c->sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN) return failed(absl::StrCat("sending the request: ", strerror(errno)));
      if (n > 0) c->sent += static_cast<size_t>(n);
      if (c->sent < c->request.size()) return false;
      c->phase = Plain::kReading;
      return false;
    }
    if ((revents & (POLLIN | POLLERR | POLLHUP)) == 0) return false;
    char buf[16384];
    while (true) {
      ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
      if (n < 0) return failed(absl::StrCat("reading the reply: ", strerror(errno)));
      HttpResponseReader::State st =
          n == 0 ? c->reply->Close() : c->reply->Feed(std::string_view(buf, static_cast<size_t>(n)));
      if (st == HttpResponseReader::State::kMore) continue;
      if (st == HttpResponseReader::State::kError) return failed(c->reply->error());
      const std::regex* re = c->spec.expect_body.empty() ? nullptr : Regex(c->spec.expect_body);
      std::string detail;
      bool pass = Verdict(c->spec, c->reply->status(), c->reply->body(), re, &detail);
      return end(pass, std::move(detail), n > 0 && c->reply->reusable());
    }
  }

  void StartTcp(Incoming in) {
    auto c = Begin<Tcp>(std::move(in));
    if (!c->spec.expect.empty()) c->expect = Regex(c->spec.expect);  // compiled when Run validated it
    absl::StatusOr<int> fd = Connect(c->spec);
    if (!fd.ok()) {
      Finish(c->done, false, std::string(fd.status().message()), c->start);
      return;
    }
    c->fd = *fd;
    tcp_.push_back(std::move(c));
  }

  // Advances a tcp check; true when it has finished (and was reported).
  bool StepTcp(Tcp* c, short revents) {
    auto end = [&](bool pass, std::string detail) {
      // Close with a reset, as load balancers' checkers do: no TIME_WAIT
      // left behind per check (thousands a second would pile up).
      linger nolinger{1, 0};
      setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &nolinger, sizeof(nolinger));
      close(c->fd);
      Finish(c->done, pass, std::move(detail), c->start);
      return true;
    };
    if (c->phase == Tcp::kConnecting) {
      if ((revents & (POLLOUT | POLLERR | POLLHUP)) == 0) return false;
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return end(false, strerror(err));
      if (c->spec.send.empty() && c->expect == nullptr) return end(true, "");
      c->phase = c->spec.send.empty() ? Tcp::kReading : Tcp::kSending;
      return false;
    }
    if (c->phase == Tcp::kSending) {
      if ((revents & (POLLOUT | POLLERR | POLLHUP)) == 0) return false;
      ssize_t n = ::send(c->fd, c->spec.send.data() + c->sent, c->spec.send.size() - c->sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN) return end(false, absl::StrCat("send: ", strerror(errno)));
      if (n > 0) c->sent += static_cast<size_t>(n);
      if (c->sent < c->spec.send.size()) return false;
      if (c->expect == nullptr) return end(true, "");
      c->phase = Tcp::kReading;
      return false;
    }
    if ((revents & (POLLIN | POLLERR | POLLHUP)) == 0) return false;
    char buf[16384];
    size_t room = kMaxBody - c->reply.size();
    ssize_t n = recv(c->fd, buf, std::min(sizeof(buf), room), 0);
    if (n < 0) {
      if (errno == EAGAIN) return false;
      return end(false, strerror(errno));
    }
    if (n == 0) {
      if (c->expect != nullptr && std::regex_search(c->reply, *c->expect)) return end(true, "");
      return end(false, "closed before the reply matched");
    }
    c->reply.append(buf, static_cast<size_t>(n));
    if (c->expect == nullptr || std::regex_search(c->reply, *c->expect)) return end(true, "");
    if (c->reply.size() >= kMaxBody) return end(false, absl::StrCat("reply does not match /", c->spec.expect, "/"));
    return false;
  }

  // Steps each check of `checks` whose socket is ready (its entry in `fds`
  // from *k on, in the same order) and ends those past their deadline.
  template <typename Check, typename Step>
  void Advance(std::list<std::unique_ptr<Check>>* checks, const std::vector<curl_waitfd>& fds, size_t* k,
               absl::Time now, Step step) {
    for (auto it = checks->begin(); it != checks->end(); ++*k) {
      Check* c = it->get();
      short revents = 0;
      if (*k < fds.size() && fds[*k].fd == c->fd) {
        revents = static_cast<short>((fds[*k].revents & CURL_WAIT_POLLIN ? POLLIN : 0) |
                                     (fds[*k].revents & CURL_WAIT_POLLOUT ? POLLOUT : 0));
      }
      bool finished = revents != 0 && step(c, revents);
      if (!finished && now >= c->deadline) {
        close(c->fd);
        Finish(c->done, false, absl::StrCat("timed out after ", Took(c->spec.timeout)), c->start);
        finished = true;
      }
      it = finished ? checks->erase(it) : std::next(it);
    }
  }

  void Run() {
    loop_thread_ = std::this_thread::get_id();
    std::vector<Incoming> batch;
    while (true) {
      woken_ = false;
      if (stop_) break;  // what is still submitted ends below
      // Two vectors trade places each pass, so what was submitted costs no
      // allocation once they have grown.
      batch.clear();
      {
        std::lock_guard<std::mutex> l(mu_);
        batch.swap(incoming_);
      }
      for (auto& in : batch) {
        absl::Status st = ValidateShape(in.spec);
        if (st.ok() && !in.spec.expect_body.empty() && Regex(in.spec.expect_body) == nullptr) {
          st = BadRegex("expect_body", in.spec.expect_body);
        }
        if (st.ok() && !in.spec.expect.empty() && Regex(in.spec.expect) == nullptr) st = BadRegex("expect", in.spec.expect);
        if (!st.ok()) {
          Finish(in.done, false, std::string(st.message()), clock_->Now());
        } else if (in.spec.type == "tcp") {
          StartTcp(std::move(in));
        } else if (in.spec.type == "http") {
          StartPlain(std::move(in));
        } else {
          StartHttp(std::move(in));
        }
      }
      // Wait on curl's sockets and ours, at most until the next tcp deadline.
      std::vector<curl_waitfd> fds;
      absl::Time now = clock_->Now();
      absl::Duration wait = absl::Milliseconds(100);
      for (const auto& c : tcp_) {
        short events = c->phase == Tcp::kReading ? CURL_WAIT_POLLIN : CURL_WAIT_POLLOUT;
        fds.push_back({c->fd, events, 0});
        wait = std::min(wait, std::max(absl::ZeroDuration(), c->deadline - now));
      }
      for (const auto& c : plain_) {
        short events = c->phase == Plain::kReading ? CURL_WAIT_POLLIN : CURL_WAIT_POLLOUT;
        fds.push_back({c->fd, events, 0});
        wait = std::min(wait, std::max(absl::ZeroDuration(), c->deadline - now));
      }
      int numfds = 0;
      curl_multi_poll(multi_, fds.data(), static_cast<unsigned>(fds.size()),
                      static_cast<int>(absl::ToInt64Milliseconds(wait)) + 1, &numfds);
      int running = 0;
      curl_multi_perform(multi_, &running);
      int left = 0;
      while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
        if (m->msg != CURLMSG_DONE) continue;
        Http* c = nullptr;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&c));
        CURLcode rc = m->data.result;
        auto self = c->self;
        EndHttp(c, rc);
        http_.erase(self);
      }
      // Tcp and plain-http progress, and deadlines.
      now = clock_->Now();
      size_t k = 0;
      Advance(&tcp_, fds, &k, now, [this](Tcp* c, short revents) { return StepTcp(c, revents); });
      Advance(&plain_, fds, &k, now, [this](Plain* c, short revents) { return StepPlain(c, revents); });
    }
    // Stopping: end what is still in flight.
    for (auto& c : http_) {
      curl_multi_remove_handle(multi_, c->easy);
      curl_easy_cleanup(c->easy);
      curl_slist_free_all(c->headers);
      Finish(c->done, false, "engine stopped", c->start);
    }
    http_.clear();
    for (auto& c : tcp_) {
      close(c->fd);
      Finish(c->done, false, "engine stopped", c->start);
    }
    tcp_.clear();
    for (auto& c : plain_) {
      close(c->fd);
      Finish(c->done, false, "engine stopped", c->start);
    }
    plain_.clear();
    while (idle_newest_ >= 0) {
      const int fd = idle_newest_;
      UnlinkIdle(fd);
      close(fd);
    }
    idle_by_key_.clear();
    for (CURL* e : idle_handles_) curl_easy_cleanup(e);
    idle_handles_.clear();
    // Checks submitted and not started, and those the callbacks above submitted.
    while (true) {
      std::vector<Incoming> late;
      {
        std::lock_guard<std::mutex> l(mu_);
        late.swap(incoming_);
      }
      if (late.empty()) break;
      for (auto& in : late) Finish(in.done, false, "engine stopped", clock_->Now());
    }
  }

  static constexpr size_t kIdleHandles = 1024;
  const Clock* clock_;  // check durations and tcp deadlines
  const size_t kept_connections_;
  CURLM* multi_ = nullptr;
  std::atomic<bool> woken_{false};
  std::vector<CURL*> idle_handles_;  // loop thread only
  std::thread thread_;
  std::atomic<std::thread::id> loop_thread_;  // set by the loop when it starts
  std::atomic<bool> stop_{false};
  std::atomic<size_t> in_flight_{0};
  std::mutex mu_;
  std::vector<Incoming> incoming_;  // guarded by mu_
  // Loop thread only:
  std::list<std::unique_ptr<Http>> http_;
  std::list<std::unique_ptr<Tcp>> tcp_;
  std::list<std::unique_ptr<Plain>> plain_;
  // Kept plain-http connections: each by its fd, the most and the least
  // recently used, how many, and each target's most recently used.
  std::vector<Idle> idle_;
  int idle_newest_ = -1, idle_oldest_ = -1;
  size_t idle_count_ = 0;
  std::unordered_map<uint64_t, int> idle_by_key_;
  std::map<std::string, std::regex> regexes_;
};

CheckEngine::CheckEngine(const Clock* clock, size_t kept_connections)
    : loop_(std::make_unique<Loop>(clock, kept_connections)) {}
// The loop stops while this engine is whole, so the last callbacks may still
// call Submit.
CheckEngine::~CheckEngine() { loop_->Stop(); }

void CheckEngine::Submit(CheckSpec spec, std::function<void(const CheckResult&)> done) {
  loop_->Submit(std::move(spec), std::move(done));
}

size_t CheckEngine::in_flight() const { return loop_->in_flight(); }

}  // namespace mariposa::health
