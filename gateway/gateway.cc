#include "gateway/gateway.h"

#include <arpa/inet.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <zlib.h>

#include <functional>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "auth/authorizer.h"
#include "auth/http_signature.h"
#include "auth/listener.h"
#include "common/ids.h"
#include "common/log.h"
#include "gateway/console_assets.h"
#include "gateway/errors.h"
#include "gateway/http_server.h"
#include "gateway/json_mapping.h"
#include "gateway/openapi.h"
#include "gateway/routes.h"

namespace mariposa::gateway {
namespace {

using google::protobuf::Message;

std::unique_ptr<Message> New(const google::protobuf::Descriptor* d) {
  return std::unique_ptr<Message>(google::protobuf::MessageFactory::generated_factory()->GetPrototype(d)->New());
}

grpc::ByteBuffer Serialize(const Message& m) {
  std::string bytes = m.SerializeAsString();
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

bool Parse(const grpc::ByteBuffer& buf, Message* m) {
  std::vector<grpc::Slice> slices;
  if (!buf.Dump(&slices).ok()) return false;
  std::string bytes;
  for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return m->ParseFromString(bytes);
}

// A step of an in-process call: the completion queue's threads run `then`
// with the step's outcome.
struct Op {
  std::function<void(bool ok)> then;
};
void* Then(std::function<void(bool ok)> f) { return new Op{std::move(f)}; }

// A browser sends these; curl, scripts and the CLI do not.
bool FromBrowser(const HttpRequest& req) {
  return req.has_header("Origin") || req.has_header("Sec-Fetch-Mode") || req.has_header("Sec-Fetch-Site");
}

// Loopback listeners answer only to loopback names: a page whose name was
// pointed at 127.0.0.1 (DNS rebinding) is refused.
bool LoopbackHost(std::string host) {
  if (absl::StartsWith(host, "[")) return absl::StartsWith(host, "[::1]");
  host = host.substr(0, host.find(':'));
  if (host == "localhost") return true;
  in_addr a;
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

bool Printable(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

std::string CertCommonName(const SSL* ssl) {
  if (ssl == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return "";
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  char cn[256] = {0};
  int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
  X509_free(cert);
  return n > 0 ? std::string(cn, n) : "";
}

void SecurityHeaders(HttpResponse* res) {
  res->set_header("X-Content-Type-Options", "nosniff");
  res->set_header("X-Frame-Options", "DENY");
  res->set_header("Referrer-Policy", "no-referrer");
}

// gzip at zlib's fastest level; "" if zlib fails.
std::string Gzip(const std::string& in) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return "";
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : "";
}

// A JSON answer. Large ones are gzipped here, fast, when the client takes
// gzip (brotli at its slowest setting took 7 s for a 10,000-instance state).
HttpResponse Json(int status, std::string body, bool gzip = false) {
  HttpResponse res;
  SecurityHeaders(&res);
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_header("Content-Type", "application/json; charset=utf-8");
  if (gzip && body.size() > 8192) {
    std::string packed = Gzip(body);
    if (!packed.empty()) {
      res.set_header("Content-Encoding", "gzip");
      res.set_header("Vary", "Accept-Encoding");
      res.body = std::move(packed);
      return res;
    }
  }
  res.body = std::move(body);
  return res;
}

HttpResponse Error(grpc::StatusCode code, const std::string& message) {
  return Json(HttpStatus(code), ErrorBody(code, message));
}

// The gRPC code whose RFD 40 reason fits a refusal the HTTP server makes
// itself (http_server.h).
int CodeOfStatus(int status) {
  switch (status) {
    case 408: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case 413:
    case 431: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case 501: return grpc::StatusCode::UNIMPLEMENTED;
    case 503: return grpc::StatusCode::UNAVAILABLE;
    case 500: return grpc::StatusCode::INTERNAL;
    default: return grpc::StatusCode::INVALID_ARGUMENT;
  }
}

// One Server-Sent Event: `id:` when the message has an `index`.
std::string SseEvent(const Message& m) {
  std::string out;
  const auto* index = m.GetDescriptor()->FindFieldByName("index");
  if (index != nullptr && index->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_INT64) {
    absl::StrAppend(&out, "id: ", m.GetReflection()->GetInt64(m, index), "\n");
  }
  absl::StrAppend(&out, "data: ", ToJson(m), "\n\n");
  return out;
}

}  // namespace

struct Gateway::Impl {
  GatewayOptions o;
  Routes routes;
  std::string openapi;
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<grpc::GenericStub> stub;
  grpc::CompletionQueue cq;
  std::vector<std::thread> cq_threads;
  std::string host;
  int port = 0;
  bool tls = false, loopback = false;
  absl::Mutex mu;
  std::set<grpc::ClientContext*> calls ABSL_GUARDED_BY(mu);  // in flight, cancelled at Stop
  std::map<std::string, int> streams_of ABSL_GUARDED_BY(mu);  // open event streams by caller
  int streams ABSL_GUARDED_BY(mu) = 0;
  bool stopping ABSL_GUARDED_BY(mu) = false;

  void Handle(const std::shared_ptr<HttpExchange>& ex);
  HttpResponse Static(const HttpRequest& req);
  // The caller as the gRPC listeners would identify it, for the Authorizer;
  // `caller` is who it is for the stream limit. false: refused (`refusal`).
  bool Identify(const HttpRequest& req, grpc::ClientContext* ctx, std::string* caller, HttpResponse* refusal);
  void Unary(const std::shared_ptr<HttpExchange>& ex, const Route& r, const Message& in,
             std::shared_ptr<grpc::ClientContext> ctx);
  void Stream(const std::shared_ptr<HttpExchange>& ex, const Route& r, const Message& in,
              std::shared_ptr<grpc::ClientContext> ctx, const std::string& caller);
  // A call begins (false when stopping) and ends.
  bool Track(grpc::ClientContext* ctx);
  void Untrack(grpc::ClientContext* ctx);
};

Gateway::Gateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gateway::~Gateway() { Stop(); }

std::string Gateway::url() const {
  std::string host = impl_->host.find(':') != std::string::npos ? "[" + impl_->host + "]" : impl_->host;
  return absl::StrCat(impl_->tls ? "https://" : "http://", host, ":", impl_->port);
}


void Gateway::Stop() {
  {
    absl::MutexLock l(&impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
    for (grpc::ClientContext* c : impl_->calls) c->TryCancel();
  }
  impl_->server->Stop();
  {
    absl::MutexLock l(&impl_->mu);
    impl_->mu.Await(absl::Condition(
        +[](std::set<grpc::ClientContext*>* calls) { return calls->empty(); }, &impl_->calls));
  }
  impl_->cq.Shutdown();
  for (std::thread& t : impl_->cq_threads) t.join();
}

bool Gateway::Impl::Track(grpc::ClientContext* ctx) {
  absl::MutexLock l(&mu);
  if (stopping) return false;
  calls.insert(ctx);
  return true;
}

void Gateway::Impl::Untrack(grpc::ClientContext* ctx) {
  absl::MutexLock l(&mu);
  calls.erase(ctx);
}

absl::StatusOr<std::unique_ptr<Gateway>> Gateway::Start(GatewayOptions o) {
  auto impl = std::make_unique<Impl>();
  absl::StatusOr<Routes> routes = Routes::Read(Routes::Served());
  if (!routes.ok()) return routes.status();
  impl->routes = *std::move(routes);
  impl->openapi = OpenApi(impl->routes, o.version);
  size_t colon = o.listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("--http-listen ", o.listen, " is not HOST:PORT"));
  }
  impl->host = o.listen.substr(0, colon);
  if (absl::StartsWith(impl->host, "[")) impl->host = impl->host.substr(1, impl->host.size() - 2);
  int want_port = 0;
  if (!absl::SimpleAtoi(o.listen.substr(colon + 1), &want_port)) {
    return absl::InvalidArgumentError(absl::StrCat("--http-listen ", o.listen, ": the port is not a number"));
  }
  impl->tls = !o.tls_cert.empty();
  impl->loopback = auth::IsLocalAddress(o.listen);
  if (!impl->tls && !impl->loopback && !o.insecure) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--http-listen ", o.listen,
        " is not a loopback address and mariposad has no TLS certificate: tokens would "
        "cross the network in clear; give --tls-cert and --tls-key, listen on 127.0.0.1, or pass --insecure-listen"));
  }
  impl->stub = std::make_unique<grpc::GenericStub>(o.channel);
  Impl* p = impl.get();
  // Two threads finish the in-process calls (replies are turned into JSON
  // there); the HTTP server's own I/O threads read and write the sockets.
  for (int i = 0; i < 2; ++i) {
    impl->cq_threads.emplace_back([p] {
      void* tag;
      bool ok;
      while (p->cq.Next(&tag, &ok)) {
        std::unique_ptr<Op> op(static_cast<Op*>(tag));
        op->then(ok);
      }
    });
  }
  HttpServerOptions so;
  so.host = impl->host;
  so.port = want_port;
  so.limits = o.limits;
  if (o.max_body > 0) so.limits.max_body = o.max_body;
  so.tls_cert = o.tls_cert;
  so.tls_key = o.tls_key;
  so.tls_client_ca = o.tls_client_ca;
  so.error_body = [](int status, const std::string& why) { return ErrorBody(CodeOfStatus(status), why); };
  impl->o = std::move(o);
  auto server = HttpServer::Start(std::move(so), [p](std::shared_ptr<HttpExchange> ex) { p->Handle(ex); });
  if (!server.ok()) {
    impl->cq.Shutdown();
    for (std::thread& t : impl->cq_threads) t.join();
    if (absl::IsFailedPrecondition(server.status())) return server.status();
    return absl::UnavailableError(
        absl::StrCat("cannot listen for HTTP on ", impl->o.listen, ": ", server.status().message()));
  }
  impl->server = *std::move(server);
  impl->port = impl->server->port();
  return std::unique_ptr<Gateway>(new Gateway(std::move(impl)));
}

void Gateway::Impl::Handle(const std::shared_ptr<HttpExchange>& ex) {
  const HttpRequest& req = ex->request();
  if (loopback && !LoopbackHost(req.header("Host"))) {
    return ex->Reply(Error(grpc::StatusCode::PERMISSION_DENIED,
                           absl::StrCat("Host ", absl::CHexEscape(req.header("Host").substr(0, 256)),
                                        " is not a loopback name; this listener answers only to "
                                        "127.0.0.1, [::1] or localhost (a name pointed at it by another site is "
                                        "refused)")));
  }
  if (req.method == "GET" && (req.path == "/" || absl::StartsWith(req.path, "/console"))) {
    return ex->Reply(Static(req));
  }
  bool gzip = absl::StrContains(req.header("Accept-Encoding"), "gzip");
  if (req.method == "GET" && req.path == "/v1/openapi.json") return ex->Reply(Json(200, openapi, gzip));
  bool path_known = false;
  std::optional<Routes::Match> m = routes.Find(req.method, req.path, &path_known);
  if (!m) {
    std::string shown = absl::CHexEscape(req.path.substr(0, 512));
    if (path_known) {
      return ex->Reply(
          Error(grpc::StatusCode::UNIMPLEMENTED,
                absl::StrCat(req.method, " is not served on ", shown, "; /v1/openapi.json lists each path's verbs")));
    }
    return ex->Reply(Error(grpc::StatusCode::NOT_FOUND, absl::StrCat("no route ", absl::CHexEscape(req.method), " ",
                                                                     shown, "; /v1/openapi.json lists the routes")));
  }
  const Route& r = *m->route;
  if (!req.body.empty() && !absl::StartsWith(absl::AsciiStrToLower(req.header("Content-Type")), "application/json")) {
    return ex->Reply(Json(415, ErrorBody(3, "the body must be JSON: send Content-Type: application/json")));
  }
  absl::StatusOr<std::multimap<std::string, std::string>> query = ParseQuery(req.query);
  if (!query.ok()) return ex->Reply(Error(grpc::StatusCode::INVALID_ARGUMENT, std::string(query.status().message())));
  if (r.Streaming() && req.has_header("Last-Event-ID") &&
      r.method->input_type()->FindFieldByName("after_index") != nullptr) {
    // Where to resume: the event after the last one the client saw.
    absl::StatusOr<int64_t> last = ParseLastEventId(req.header("Last-Event-ID"));
    if (!last.ok()) return ex->Reply(Error(grpc::StatusCode::INVALID_ARGUMENT, std::string(last.status().message())));
    query->erase("after_index");
    query->emplace("after_index", absl::StrCat(*last));
  }
  std::unique_ptr<Message> in = New(r.method->input_type());
  if (absl::Status st = BuildRequest(r, req.body, *query, m->params, in.get()); !st.ok()) {
    return ex->Reply(Error(grpc::StatusCode::INVALID_ARGUMENT, std::string(st.message())));
  }
  auto ctx = std::make_shared<grpc::ClientContext>();
  std::string caller;
  HttpResponse refusal;
  if (!Identify(req, ctx.get(), &caller, &refusal)) return ex->Reply(std::move(refusal));
  if (r.Streaming()) return Stream(ex, r, *in, std::move(ctx), caller);
  ctx->set_deadline(absl::ToChronoTime(o.clock->Now() + absl::Minutes(5)));
  Unary(ex, r, *in, std::move(ctx));
}

// An HTTP Signature signs some of the request's headers and its target; the
// Authorizer, which checks it, sees only gRPC metadata: the gateway builds
// the signing string from what it received and forwards it (or why not).
static void ForwardSigningString(const HttpRequest& req, const std::string& authorization, grpc::ClientContext* ctx) {
  auto params = auth::ParseSignatureAuthorization(authorization);
  if (!params.ok()) return;  // the Authorizer refuses the header itself
  auto signing = auth::SigningString(*params, absl::StrCat(absl::AsciiStrToLower(req.method), " ", req.target),
                                     [&](absl::string_view h) -> std::optional<std::string> {
                                       if (!req.has_header(std::string(h))) return std::nullopt;
                                       return req.header(std::string(h));
                                     });
  if (signing.ok()) ctx->AddMetadata(auth::kGatewaySigning, *signing);
  else ctx->AddMetadata(auth::kGatewaySigningError, std::string(signing.status().message()));
  ctx->AddMetadata(auth::kGatewayRequestDigest, Sha256Hex(absl::StrCat(req.method, " ", req.target, "\n", req.body)));
}

bool Gateway::Impl::Identify(const HttpRequest& req, grpc::ClientContext* ctx, std::string* caller,
                             HttpResponse* refusal) {
  ctx->AddMetadata(auth::kGatewayToken, o.token);
  ctx->AddMetadata(auth::kGatewayPeer, absl::StrCat(req.remote_addr, ":", req.remote_port));
  ctx->AddMetadata(auth::kGatewayTransport, tls ? "https" : loopback ? "loopback http" : "http");
  *caller = absl::StrCat("address ", req.remote_addr);
  if (req.has_header("Authorization")) {
    std::string value = req.header("Authorization");
    if (!Printable(value)) {
      *refusal =
          Error(grpc::StatusCode::UNAUTHENTICATED, "the Authorization header is not \"Bearer TOKEN\" in ASCII");
      return false;
    }
    ctx->AddMetadata("authorization", value);
    if (auth::IsSignatureScheme(value)) ForwardSigningString(req, value, ctx);
  }
  if (tls && !o.tls_client_ca.empty()) {  // certificates are asked for (and verified) only then
    std::string cn = CertCommonName(req.ssl);
    if (!cn.empty() && Printable(cn)) {
      ctx->AddMetadata(auth::kGatewayCert, cn);
      *caller = "cert:" + cn;
    }
  } else if (loopback && !FromBrowser(req)) {
    int64_t uid = auth::LoopbackPeerUid(req.remote_port, port);
    if (uid >= 0) {
      ctx->AddMetadata(auth::kGatewayUid, absl::StrCat(uid));
      *caller = absl::StrCat("uid ", uid);
    }
  }
  // A token names the caller (the Authorizer prefers it too); counted for
  // the stream limit without keeping the secret itself.
  if (req.has_header("Authorization")) {
    *caller = absl::StrCat("credential #", std::hash<std::string>()(req.header("Authorization")) % 1000000);
  }
  return true;
}

// One unary call, in process; the answer is written when it finishes.
struct UnaryCall {
  std::shared_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call;
  grpc::ByteBuffer out;
  grpc::Status st;
};

void Gateway::Impl::Unary(const std::shared_ptr<HttpExchange>& ex, const Route& r, const Message& in,
                          std::shared_ptr<grpc::ClientContext> ctx) {
  if (!Track(ctx.get())) return ex->Reply(Error(grpc::StatusCode::UNAVAILABLE, "mariposad is stopping"));
  auto c = std::make_shared<UnaryCall>();
  c->ctx = std::move(ctx);
  c->call = stub->PrepareUnaryCall(c->ctx.get(), r.GrpcName(), Serialize(in), &cq);
  c->call->StartCall();
  bool gzip = absl::StrContains(ex->request().header("Accept-Encoding"), "gzip");
  const google::protobuf::Descriptor* type = r.method->output_type();
  c->call->Finish(&c->out, &c->st, Then([this, c, ex, gzip, type](bool) {
    Untrack(c->ctx.get());
    if (!c->st.ok()) return ex->Reply(Error(c->st.error_code(), c->st.error_message()));
    std::unique_ptr<Message> reply = New(type);
    if (!Parse(c->out, reply.get())) return ex->Reply(Error(grpc::StatusCode::INTERNAL, "the reply could not be read"));
    ex->Reply(Json(200, ToJson(*reply), gzip));
  }));
}

// One server-streaming call relayed as Server-Sent Events. A refusal before
// the server says the stream is open (its initial metadata,
// x-mariposa-stream) is an HTTP error; after it, each message is an event,
// with a comment on a quiet stream. A client that leaves cancels the call at
// once; the next message is read only when the last one was written, so a
// slow reader slows the stream, not mariposad's memory.
struct StreamCall : std::enable_shared_from_this<StreamCall> {
  std::shared_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call;
  std::shared_ptr<HttpExchange> ex;
  const google::protobuf::Descriptor* type = nullptr;
  std::function<void()> done;  // the call has ended
  grpc::ByteBuffer buf;
  grpc::Status st;
  bool open = false;
  std::atomic<bool> gone{false};

  void Begin(const Message& in) {
    auto self = shared_from_this();
    call->StartCall(Then([self, bytes = Serialize(in)](bool ok) mutable {
      if (!ok) return self->Finish();
      self->call->Write(bytes, Then([self](bool ok) {
        if (!ok) return self->Finish();
        self->call->WritesDone(Then([self](bool ok) {
          if (!ok) return self->Finish();
          self->call->ReadInitialMetadata(Then([self](bool ok) {
            if (!ok || self->ctx->GetServerInitialMetadata().count("x-mariposa-stream") == 0) return self->Finish();
            self->Opened();
          }));
        }));
      }));
    }));
  }

  void Opened() {
    open = true;
    HttpResponse head;
    SecurityHeaders(&head);
    head.set_header("Content-Type", "text/event-stream");
    head.set_header("Cache-Control", "no-store");
    head.set_header("X-Accel-Buffering", "no");
    auto self = shared_from_this();
    ex->Open(std::move(head), ": keepalive\n\n", [self] {
      self->gone = true;
      self->ctx->TryCancel();
    });
    ex->Send(": open\n\n", [self](bool) { self->Read(); });
  }

  void Read() {
    auto self = shared_from_this();
    call->Read(&buf, Then([self](bool ok) {
      std::unique_ptr<Message> m = New(self->type);
      if (!ok || !Parse(self->buf, m.get())) return self->Finish();
      self->ex->Send(SseEvent(*m), [self](bool written) {
        if (!written) self->ctx->TryCancel();  // the next Read then ends the call
        self->Read();
      });
    }));
  }

  void Finish() {
    auto self = shared_from_this();
    call->Finish(&st, Then([self](bool) {
      self->done();
      if (!self->open) {
        return self->ex->Reply(Error(self->st.ok() ? grpc::StatusCode::UNAVAILABLE : self->st.error_code(),
                                     self->st.ok() ? "the stream ended before it began" : self->st.error_message()));
      }
      std::string last;
      if (!self->gone && !self->st.ok()) {
        last = absl::StrCat("event: error\ndata: ", ErrorBody(self->st.error_code(), self->st.error_message()), "\n\n");
      }
      self->ex->End(std::move(last));
    }));
  }
};

void Gateway::Impl::Stream(const std::shared_ptr<HttpExchange>& ex, const Route& r, const Message& in,
                           std::shared_ptr<grpc::ClientContext> ctx, const std::string& caller) {
  {
    absl::MutexLock l(&mu);
    if (stopping) return ex->Reply(Error(grpc::StatusCode::UNAVAILABLE, "mariposad is stopping"));
    if (streams_of[caller] >= o.max_streams_per_caller) {
      return ex->Reply(Error(grpc::StatusCode::RESOURCE_EXHAUSTED,
                             absl::StrCat(caller, " has ", streams_of[caller],
                                          " event streams open over HTTP, the most one caller may; close one "
                                          "(each tab of the console holds one) and retry")));
    }
    if (streams >= o.max_streams) {
      return ex->Reply(Error(grpc::StatusCode::UNAVAILABLE,
                             absl::StrCat("this listener has ", streams,
                                          " event streams open, its most; retry in a moment")));
    }
    ++streams_of[caller];
    ++streams;
    calls.insert(ctx.get());
  }
  auto s = std::make_shared<StreamCall>();
  s->ctx = std::move(ctx);
  s->ex = ex;
  s->type = r.method->output_type();
  s->call = stub->PrepareCall(s->ctx.get(), r.GrpcName(), &cq);
  grpc::ClientContext* key = s->ctx.get();
  s->done = [this, key, caller] {
    absl::MutexLock l(&mu);
    if (--streams_of[caller] <= 0) streams_of.erase(caller);
    --streams;
    calls.erase(key);
  };
  s->Begin(in);
}

HttpResponse Gateway::Impl::Static(const HttpRequest& req) {
  HttpResponse res;
  SecurityHeaders(&res);
  if (req.path == "/" || req.path == "/console") {
    res.status = 302;
    res.set_header("Location", "/console/");
    return res;
  }
  std::string path = req.path == "/console/" ? "/console/index.html" : req.path;
  const Asset* a = FindAsset(path);
  if (a == nullptr) {
    return Error(grpc::StatusCode::NOT_FOUND,
                 absl::StrCat("no file ", absl::CHexEscape(req.path.substr(0, 512)), " in the console"));
  }
  res.set_header(
      "Content-Security-Policy",
      "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Content-Type", a->type);
  res.body.assign(reinterpret_cast<const char*>(a->data), a->size);
  return res;
}

}  // namespace mariposa::gateway
