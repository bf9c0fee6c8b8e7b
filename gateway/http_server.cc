#include "gateway/http_server.h"

#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <deque>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace mariposa::gateway {

std::string HttpRequest::header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (absl::EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

bool HttpRequest::has_header(const std::string& name) const {
  for (const auto& kv : headers) {
    if (absl::EqualsIgnoreCase(kv.first, name)) return true;
  }
  return false;
}

void HttpResponse::set_header(std::string name, std::string value) {
  for (auto& kv : headers) {
    if (absl::EqualsIgnoreCase(kv.first, name)) {
      kv.second = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

namespace {

bool ControlByte(const std::string& s) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return true;
  }
  return false;
}

bool MayHaveBody(const std::string& method) {
  return method != "GET" && method != "HEAD" && method != "DELETE" && method != "OPTIONS";
}

}  // namespace

HeadCheck CheckHead(const std::string& method, const std::vector<std::pair<std::string, std::string>>& headers,
                    int64_t content_length, bool chunked, const HttpLimits& limits) {
  if (static_cast<int64_t>(headers.size()) > limits.max_headers) {
    return {431, absl::StrCat("the request has ", headers.size(), " header fields; at most ", limits.max_headers,
                              " are read")};
  }
  int content_lengths = 0, encodings = 0;
  for (const auto& [name, value] : headers) {
    if (ControlByte(name) || ControlByte(value)) {
      return {400, absl::StrCat("header ", absl::CHexEscape(name.substr(0, 64)),
                                " holds a control byte (NUL, CR, LF or another below 0x20); send printable text")};
    }
    if (absl::EqualsIgnoreCase(name, "Content-Length")) ++content_lengths;
    if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
      ++encodings;
      if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(value), "chunked")) {
        return {501, absl::StrCat("Transfer-Encoding: ", value.substr(0, 64),
                                  " is not served; send the body with Content-Length or Transfer-Encoding: chunked")};
      }
    }
    if (absl::EqualsIgnoreCase(name, "Expect") && !absl::EqualsIgnoreCase(value, "100-continue")) {
      return {417, absl::StrCat("Expect: ", value.substr(0, 64), " is not served; only 100-continue is")};
    }
  }
  if (content_lengths > 0 && encodings > 0) {
    return {400, "the request has both Content-Length and Transfer-Encoding; send one of them"};
  }
  if (content_lengths > 1) return {400, "the request has more than one Content-Length; send one"};
  if (encodings > 1) return {400, "the request has more than one Transfer-Encoding; send one"};
  bool body = chunked || content_length > 0;
  if (body && !MayHaveBody(method)) {
    return {400, absl::StrCat(method, " takes no body; give the fields as query parameters")};
  }
  if (content_length > 0 && static_cast<uint64_t>(content_length) > limits.max_body) {
    return {413, absl::StrCat("the body is ", content_length, " bytes; at most ", limits.max_body, " are read")};
  }
  return {};
}

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

std::chrono::steady_clock::duration Chrono(absl::Duration d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(absl::ToChronoNanoseconds(d));
}

using Parser = http::request_parser<http::string_body>;

void Configure(Parser* p, const HttpLimits& limits) {
  p->header_limit(static_cast<uint32_t>(limits.max_header_bytes));
  p->body_limit(limits.max_body);
}

// The answer to a parse error of a request head or body; 0: none (the
// connection just ends: the client left, or a deadline passed).
HeadCheck ParseRefusal(const beast::error_code& ec, const HttpLimits& limits) {
  if (ec == http::error::header_limit) {
    return {431, absl::StrCat("the request head is over ", limits.max_header_bytes,
                              " bytes (request line and header fields together)")};
  }
  if (ec == http::error::body_limit) {
    return {413, absl::StrCat("the body is over ", limits.max_body,
                              " bytes; at most that many are read (docs/http-api.md, \"Limits\")")};
  }
  if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == net::error::operation_aborted ||
      ec == beast::error::timeout || ec == net::error::eof || ec == net::error::connection_reset) {
    return {};
  }
  if (ec == http::error::bad_content_length || ec == http::error::bad_transfer_encoding) {
    return {400, absl::StrCat("the request's body framing is invalid (", ec.message(),
                              "): send one Content-Length, or Transfer-Encoding: chunked, not both")};
  }
  return {400, absl::StrCat("the request is not HTTP/1.1 this server reads: ", ec.message())};
}

// The request's head from the parser, then CheckHead.
HeadCheck FillHead(const Parser& p, const HttpLimits& limits, HttpRequest* req) {
  const auto& msg = p.get();
  *req = HttpRequest();
  req->method = std::string(msg.method_string());
  req->target = std::string(msg.target());
  size_t q = req->target.find('?');
  req->path = req->target.substr(0, q);
  if (q != std::string::npos) req->query = req->target.substr(q + 1);
  for (const auto& f : msg) {
    req->headers.emplace_back(absl::AsciiStrToLower(std::string(f.name_string())), std::string(f.value()));
  }
  int64_t length = p.content_length() ? static_cast<int64_t>(*p.content_length()) : -1;
  return CheckHead(req->method, req->headers, length, p.chunked(), limits);
}

struct Shared {
  HttpServerOptions o;
  HttpHandler handler;
  net::io_context ioc;
  std::optional<ssl::context> tls;
  std::atomic<int> connections{0};

  std::string ErrorBody(int status, const std::string& why) const {
    if (o.error_body) return o.error_body(status, why);
    return absl::StrCat("{\"code\": ", status, ", \"error\": \"", absl::CEscape(why), "\"}\n");
  }
  std::atomic<int64_t> body_bytes{0};

  bool TakeBody(int64_t n) {
    int64_t cur = body_bytes.load();
    do {
      if (cur + n > static_cast<int64_t>(o.limits.max_body_in_flight)) return false;
    } while (!body_bytes.compare_exchange_weak(cur, cur + n));
    return true;
  }
  void GiveBody(int64_t n) { body_bytes -= n; }

  // Live sessions, so that Stop can close them.
  absl::Mutex mu;
  std::set<class SessionBase*> sessions ABSL_GUARDED_BY(mu);
};

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void CloseSoon() = 0;
};

template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(std::shared_ptr<Shared> shared, Stream stream) : shared_(std::move(shared)), stream_(std::move(stream)) {
    ++shared_->connections;
    absl::MutexLock l(&shared_->mu);
    shared_->sessions.insert(this);
  }
  ~Session() override {
    ReleaseBody();
    --shared_->connections;
    absl::MutexLock l(&shared_->mu);
    shared_->sessions.erase(this);
  }

  void Run(tcp::endpoint peer) {
    peer_ = std::move(peer);
    if constexpr (kTls) {
      Lowest().expires_after(Chrono(shared_->o.limits.header_timeout));
      stream_.async_handshake(ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
        if (ec) return self->CloseNow();
        self->ReadHead();
      });
    } else {
      ReadHead();
    }
  }

  void CloseSoon() override {
    net::post(stream_.get_executor(), [w = this->weak_from_this()] {
      if (auto self = w.lock()) self->CloseNow();
    });
  }

  // --- called by the exchange, from any thread ---
  void PostReply(HttpResponse res) {
    net::post(stream_.get_executor(),
              [self = this->shared_from_this(), res = std::move(res)]() mutable { self->Write(std::move(res)); });
  }
  void PostOpen(HttpResponse head, std::string comment, std::function<void()> on_gone) {
    net::post(stream_.get_executor(), [self = this->shared_from_this(), head = std::move(head),
                                       comment = std::move(comment), on_gone = std::move(on_gone)]() mutable {
      self->Open(std::move(head), std::move(comment), std::move(on_gone));
    });
  }
  void PostSend(std::string chunk, std::function<void(bool)> written) {
    net::post(stream_.get_executor(), [self = this->shared_from_this(), chunk = std::move(chunk),
                                       written = std::move(written)]() mutable {
      self->Queue(std::move(chunk), std::move(written));
    });
  }
  void PostEnd(std::string last) {
    net::post(stream_.get_executor(), [self = this->shared_from_this(), last = std::move(last)]() mutable {
      if (!last.empty()) self->Queue(std::move(last), nullptr);
      self->ending_ = true;
      self->on_gone_ = nullptr;  // an ended stream is not a client gone
      self->Pump();
    });
  }
  const HttpRequest& request() const { return req_; }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void ReadHead() {
    ReleaseBody();
    parser_.emplace();
    Configure(&*parser_, shared_->o.limits);
    Lowest().expires_after(Chrono(shared_->o.limits.header_timeout));
    http::async_read_header(stream_, buf_, *parser_,
                            [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHead(ec); });
  }

  void OnHead(beast::error_code ec) {
    const HttpLimits& limits = shared_->o.limits;
    if (ec) {
      HeadCheck refusal = ParseRefusal(ec, limits);
      return refusal.status != 0 ? Refuse(refusal.status, refusal.why) : CloseNow();
    }
    HeadCheck check = FillHead(*parser_, limits, &req_);
    req_.remote_addr = peer_.address().to_string();
    req_.remote_port = peer_.port();
    if constexpr (kTls) req_.ssl = stream_.native_handle();
    if (check.status != 0) return Refuse(check.status, check.why);
    int64_t length = parser_->content_length() ? static_cast<int64_t>(*parser_->content_length()) : -1;
    if (parser_->is_done()) return Dispatch();
    int64_t want = parser_->chunked() ? static_cast<int64_t>(shared_->o.limits.max_body) : length;
    if (!shared_->TakeBody(want)) {
      return Refuse(503, absl::StrCat("too many request bodies are being read at once (",
                                      shared_->o.limits.max_body_in_flight, " bytes); retry in a moment"));
    }
    body_reserved_ = want;
    if (absl::EqualsIgnoreCase(req_.header("expect"), "100-continue")) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      Lowest().expires_after(Chrono(shared_->o.limits.write_timeout));
      return net::async_write(stream_, net::buffer(kContinue),
                              [self = this->shared_from_this()](beast::error_code e, size_t) {
                                if (e) return self->CloseNow();
                                self->ReadBody();
                              });
    }
    ReadBody();
  }

  void ReadBody() {
    Lowest().expires_after(Chrono(shared_->o.limits.body_timeout));
    http::async_read(stream_, buf_, *parser_, [self = this->shared_from_this()](beast::error_code ec, size_t) {
      if (ec == http::error::body_limit) {
        HeadCheck refusal = ParseRefusal(ec, self->shared_->o.limits);
        return self->Refuse(refusal.status, refusal.why);
      }
      if (ec == beast::error::timeout) {
        return self->Refuse(408, absl::StrCat("the body did not arrive within ",
                                              absl::FormatDuration(self->shared_->o.limits.body_timeout)));
      }
      if (ec) return self->CloseNow();
      self->Dispatch();
    });
  }

  class Exchange : public HttpExchange {
   public:
    explicit Exchange(std::shared_ptr<Session> s) : s_(std::move(s)) {}
    ~Exchange() override {
      if (!answered_.exchange(true)) {
        HttpResponse res;
        res.status = 500;
        res.body = s_->shared_->ErrorBody(500, "the request was dropped without an answer");
        s_->PostReply(std::move(res));
      }
    }
    const HttpRequest& request() const override { return s_->request(); }
    void Reply(HttpResponse res) override {
      if (answered_.exchange(true)) return;
      s_->PostReply(std::move(res));
    }
    void Open(HttpResponse head, std::string comment, std::function<void()> on_gone) override {
      if (answered_.exchange(true)) return;
      s_->PostOpen(std::move(head), std::move(comment), std::move(on_gone));
    }
    void Send(std::string chunk, std::function<void(bool)> written) override {
      s_->PostSend(std::move(chunk), std::move(written));
    }
    void End(std::string last) override { s_->PostEnd(std::move(last)); }

   private:
    std::shared_ptr<Session> s_;
    std::atomic<bool> answered_{false};
  };

  void Dispatch() {
    Lowest().expires_never();
    req_.body = std::move(parser_->get().body());
    keep_alive_ = parser_->get().keep_alive();
    shared_->handler(std::make_shared<Exchange>(this->shared_from_this()));
  }

  void Refuse(int status, const std::string& why) {
    keep_alive_ = false;
    unread_ = parser_ && !parser_->is_done();
    HttpResponse res;
    res.status = status;
    res.set_header("Content-Type", "application/json; charset=utf-8");
    res.body = shared_->ErrorBody(status, why);
    Write(std::move(res));
  }

  void Write(HttpResponse r) {
    if (closed_) return;
    auto res = std::make_shared<http::response<http::string_body>>();
    res->result(static_cast<unsigned>(r.status));
    res->version(11);
    for (auto& [k, v] : r.headers) res->set(k, v);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    Lowest().expires_after(Chrono(shared_->o.limits.write_timeout));
    http::async_write(stream_, *res, [self = this->shared_from_this(), res](beast::error_code ec, size_t) {
      self->ReleaseBody();
      if (ec) return self->CloseNow();
      if (self->unread_) return self->LingerClose();
      if (!self->keep_alive_) return self->CloseNow();
      self->ReadHead();
    });
  }

  // --- chunked streams ---
  struct Pending {
    std::string data;
    std::function<void(bool)> written;
  };

  void Open(HttpResponse head, std::string comment, std::function<void()> on_gone) {
    ReleaseBody();
    comment_ = std::move(comment);
    on_gone_ = std::move(on_gone);
    streaming_ = true;
    if (closed_) return Gone();
    auto res = std::make_shared<http::response<http::empty_body>>();
    res->result(static_cast<unsigned>(head.status));
    res->version(11);
    for (auto& [k, v] : head.headers) res->set(k, v);
    res->chunked(true);
    res->keep_alive(false);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    writing_ = true;
    Lowest().expires_after(Chrono(shared_->o.limits.write_timeout));
    http::async_write_header(stream_, *sr, [self = this->shared_from_this(), res, sr](beast::error_code ec, size_t) {
      self->writing_ = false;
      self->Lowest().expires_never();
      if (ec) return self->Gone();
      self->Watch();
      self->ArmKeepalive();
      self->Pump();
    });
  }

  // A read on the socket of a stream: the client sends nothing more, so its
  // end (or an error) means it left.
  void Watch() {
    stream_.async_read_some(net::buffer(scratch_), [self = this->shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Gone();
      self->Watch();
    });
  }

  void ArmKeepalive() {
    if (!timer_) timer_.emplace(stream_.get_executor());
    timer_->expires_after(Chrono(shared_->o.limits.keepalive));
    timer_->async_wait([self = this->shared_from_this()](beast::error_code ec) {
      if (ec || self->closed_) return;
      if (!self->writing_ && self->pending_.empty()) self->Queue(self->comment_, nullptr);
      self->ArmKeepalive();
    });
  }

  void Queue(std::string data, std::function<void(bool)> written) {
    if (closed_ || ending_) {
      if (written) written(false);
      return;
    }
    pending_.push_back({std::move(data), std::move(written)});
    Pump();
  }

  void Pump() {
    if (!streaming_ || writing_ || closed_) return;
    if (pending_.empty()) {
      if (ending_) Finish();
      return;
    }
    auto p = std::make_shared<Pending>(std::move(pending_.front()));
    pending_.pop_front();
    writing_ = true;
    Lowest().expires_after(Chrono(shared_->o.limits.write_timeout));
    net::async_write(stream_, http::make_chunk(net::buffer(p->data)),
                     [self = this->shared_from_this(), p](beast::error_code ec, size_t) {
                       self->writing_ = false;
                       self->Lowest().expires_never();
                       if (ec) {
                         if (p->written) p->written(false);
                         return self->Gone();
                       }
                       if (p->written) p->written(true);
                       self->Pump();
                     });
  }

  void Finish() {
    writing_ = true;
    Lowest().expires_after(Chrono(shared_->o.limits.write_timeout));
    net::async_write(stream_, http::make_chunk_last(), [self = this->shared_from_this()](beast::error_code, size_t) {
      self->writing_ = false;
      self->CloseNow();
    });
  }

  // The stream's client left, or a write failed: pending writes fail and
  // `on_gone` runs, once.
  void Gone() {
    CloseSocket();
    for (Pending& p : pending_) {
      if (p.written) p.written(false);
    }
    pending_.clear();
    if (auto f = std::exchange(on_gone_, nullptr)) f();
  }

  void CloseNow() {
    CloseSocket();
    if (streaming_) Gone();
  }

  void CloseSocket() {
    if (closed_) return;
    closed_ = true;
    if (timer_) timer_->cancel();
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    Lowest().close();
    ReleaseBody();
  }

  // After a refusal whose request was not read to its end: the answer is
  // sent, then what the client still sends is read and dropped for a while
  // (at most 2 s and 8 MiB), so that closing does not reset the connection
  // before the client has read the answer.
  void LingerClose() {
    if (kTls || closed_) return CloseNow();
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    Lowest().expires_after(std::chrono::seconds(2));
    Drop();
  }

  void Drop() {
    stream_.async_read_some(net::buffer(scratch_), [self = this->shared_from_this()](beast::error_code ec, size_t n) {
      self->dropped_ += n;
      if (ec || self->dropped_ > (8 << 20)) return self->CloseNow();
      self->Drop();
    });
  }

  void ReleaseBody() {
    if (body_reserved_ > 0) shared_->GiveBody(body_reserved_);
    body_reserved_ = 0;
  }

  std::shared_ptr<Shared> shared_;
  Stream stream_;
  tcp::endpoint peer_;
  beast::flat_buffer buf_;
  std::optional<Parser> parser_;
  HttpRequest req_;
  bool keep_alive_ = false;
  int64_t body_reserved_ = 0;
  bool closed_ = false;
  bool unread_ = false;  // a refused request's body was not read
  size_t dropped_ = 0;
  // a stream
  bool streaming_ = false, writing_ = false, ending_ = false;
  std::string comment_;
  std::function<void()> on_gone_;
  std::deque<Pending> pending_;
  std::optional<net::steady_timer> timer_;
  char scratch_[512];
};

class ServerImpl : public HttpServer {
 public:
  explicit ServerImpl(std::shared_ptr<Shared> shared) : shared_(std::move(shared)), acceptor_(net::make_strand(shared_->ioc)) {}
  ~ServerImpl() override { Stop(); }

  absl::Status Bind() {
    beast::error_code ec;
    auto addr = net::ip::make_address(shared_->o.host, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat(shared_->o.host, " is not an IP address"));
    tcp::endpoint ep(addr, static_cast<unsigned short>(shared_->o.port));
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", shared_->o.host, ":", shared_->o.port, ": ", ec.message()));
    }
    port_ = acceptor_.local_endpoint().port();
    return absl::OkStatus();
  }

  void Serve() {
    Accept();
    for (int i = 0; i < std::max(1, shared_->o.limits.io_threads); ++i) {
      threads_.emplace_back([s = shared_] { s->ioc.run(); });
    }
  }

  int port() const override { return port_; }

  void Stop() override {
    if (stopped_.exchange(true)) return;
    net::post(acceptor_.get_executor(), [this] {
      beast::error_code ec;
      acceptor_.close(ec);
    });
    {
      absl::MutexLock l(&shared_->mu);
      for (SessionBase* s : shared_->sessions) s->CloseSoon();
    }
    // After the closes queued above; a connection accepted meanwhile is
    // dropped with the context.
    net::post(shared_->ioc, [s = shared_] { s->ioc.stop(); });
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Accept() {
    acceptor_.async_accept(net::make_strand(shared_->ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
      if (!ec) Admit(std::move(socket));
      Accept();
    });
  }

  void Admit(tcp::socket socket) {
    beast::error_code ec;
    tcp::endpoint peer = socket.remote_endpoint(ec);
    if (ec) return;
    if (shared_->connections.load() >= shared_->o.limits.max_connections) {
      // Answered and closed at once: a full server takes no more clients.
      std::string body = shared_->ErrorBody(503, absl::StrCat("the server holds ", shared_->o.limits.max_connections,
                                                     " connections, its most; retry in a moment"));
      std::string res = absl::StrCat("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n",
                                     "Content-Length: ", body.size(), "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n",
                                     body);
      socket.non_blocking(true, ec);
      socket.write_some(net::buffer(res), ec);
      socket.shutdown(tcp::socket::shutdown_both, ec);
      socket.close(ec);
      return;
    }
    if (shared_->tls) {
      auto s = std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
          shared_, beast::ssl_stream<beast::tcp_stream>(beast::tcp_stream(std::move(socket)), *shared_->tls));
      s->Run(peer);
    } else {
      auto s = std::make_shared<Session<beast::tcp_stream>>(shared_, beast::tcp_stream(std::move(socket)));
      s->Run(peer);
    }
  }

  std::shared_ptr<Shared> shared_;
  tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
  int port_ = 0;
  std::atomic<bool> stopped_{false};
};

absl::Status SetUpTls(const HttpServerOptions& o, ssl::context* ctx) {
  SSL_CTX* c = ctx->native_handle();
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(c, o.tls_cert.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(c, o.tls_key.c_str(), SSL_FILETYPE_PEM) != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot serve HTTPS with ", o.tls_cert, " and ", o.tls_key, ": the files cannot be used"));
  }
  if (!o.tls_client_ca.empty()) {
    if (SSL_CTX_load_verify_locations(c, o.tls_client_ca.c_str(), nullptr) != 1) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot read client CA ", o.tls_client_ca, " for HTTPS client certificates"));
    }
    // Asked for, not required: a caller may present a token instead; the
    // verification result is read per request.
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, [](int, X509_STORE_CTX*) { return 1; });
  }
  return absl::OkStatus();
}

}  // namespace

HeadCheck ReadRequest(absl::string_view bytes, const HttpLimits& limits, HttpRequest* out) {
  Parser p;
  Configure(&p, limits);
  p.eager(true);
  net::const_buffer in(bytes.data(), bytes.size());
  bool checked = false;
  for (;;) {
    beast::error_code ec;
    size_t used = p.put(in, ec);
    in += used;
    // The parser wants what it was shown plus more; there is no more (and
    // showing it the same bytes again breaks its assumptions).
    if (ec == http::error::need_more) return {-1, "the bytes end before the request does"};
    if (ec) {
      HeadCheck refusal = ParseRefusal(ec, limits);
      return refusal.status != 0 ? refusal : HeadCheck{-1, "the bytes end before the request does"};
    }
    if (p.is_header_done() && !checked) {
      checked = true;
      HeadCheck check = FillHead(p, limits, out);
      if (check.status != 0) return check;
    }
    if (p.is_done()) break;
    if (in.size() == 0 || used == 0) return {-1, "the bytes end before the request does"};
  }
  out->body = p.get().body();
  return {};
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions o, HttpHandler handler) {
  auto shared = std::make_shared<Shared>();
  if (!o.tls_cert.empty()) {
    shared->tls.emplace(ssl::context::tls_server);
    if (absl::Status st = SetUpTls(o, &*shared->tls); !st.ok()) return st;
  }
  shared->o = std::move(o);
  shared->handler = std::move(handler);
  auto server = std::make_unique<ServerImpl>(shared);
  if (absl::Status st = server->Bind(); !st.ok()) return st;
  server->Serve();
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace mariposa::gateway
