#include "gateway/gateway.h"

#include <arpa/inet.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <zlib.h>

#include <functional>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "auth/authorizer.h"
#include "auth/listener.h"
#include "common/log.h"
#include "gateway/console_assets.h"
#include "gateway/errors.h"
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

void* Tag(intptr_t n) { return reinterpret_cast<void*>(n); }

// Waits for the one operation outstanding on `cq`.
bool Await(grpc::CompletionQueue* cq) {
  void* tag;
  bool ok = false;
  return cq->Next(&tag, &ok) && ok;
}

void Drain(grpc::CompletionQueue* cq) {
  cq->Shutdown();
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) {
  }
}

// A browser sends these; curl, scripts and the CLI do not.
bool FromBrowser(const httplib::Request& req) {
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

void SecurityHeaders(httplib::Response* res) {
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

// The type carries a charset, so httplib does not compress it itself: it
// would pick brotli at its slowest setting, 7 s for a 10,000-instance
// state. Large answers are gzipped here, fast, when the client takes gzip.
void Json(httplib::Response* res, int status, const std::string& body, const httplib::Request* req = nullptr) {
  res->status = status;
  res->set_header("Cache-Control", "no-store");
  if (req != nullptr && body.size() > 8192 && absl::StrContains(req->get_header_value("Accept-Encoding"), "gzip")) {
    std::string packed = Gzip(body);
    if (!packed.empty()) {
      res->set_header("Content-Encoding", "gzip");
      res->set_header("Vary", "Accept-Encoding");
      res->set_content(packed, "application/json; charset=utf-8");
      return;
    }
  }
  res->set_content(body, "application/json; charset=utf-8");
}

void Error(httplib::Response* res, grpc::StatusCode code, const std::string& message) {
  Json(res, HttpStatus(code), ErrorBody(code, message));
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
  std::unique_ptr<httplib::Server> server;
  std::unique_ptr<grpc::GenericStub> stub;
  std::thread thread;
  std::string host;
  int port = 0;
  bool tls = false, loopback = false;
  absl::Mutex mu;
  std::set<grpc::ClientContext*> streams ABSL_GUARDED_BY(mu);
  bool stopping ABSL_GUARDED_BY(mu) = false;

  void Handle(const httplib::Request& req, httplib::Response& res);
  void Static(const httplib::Request& req, httplib::Response& res);
  // The caller as the gRPC listeners would identify it, for the Authorizer.
  bool Identify(const httplib::Request& req, grpc::ClientContext* ctx, httplib::Response* res);
  void Unary(const httplib::Request& req, const Route& r, const Message& in, grpc::ClientContext* ctx,
             httplib::Response* res);
  void Stream(const Route& r, const Message& in, std::shared_ptr<grpc::ClientContext> ctx, httplib::Response* res);
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
    for (grpc::ClientContext* c : impl_->streams) c->TryCancel();
  }
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
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
  if (impl->tls) {
    std::string cert = o.tls_cert, key = o.tls_key, ca = o.tls_client_ca;
    impl->server = std::make_unique<httplib::SSLServer>([cert, key, ca](SSL_CTX& ctx) {
      SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
      if (SSL_CTX_use_certificate_chain_file(&ctx, cert.c_str()) != 1) return false;
      if (SSL_CTX_use_PrivateKey_file(&ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) return false;
      if (!ca.empty()) {
        if (SSL_CTX_load_verify_locations(&ctx, ca.c_str(), nullptr) != 1) return false;
        // Asked for, not required: a caller may present a token instead.
        SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, [](int, X509_STORE_CTX*) { return 1; });
      }
      return true;
    });
  } else {
    impl->server = std::make_unique<httplib::Server>();
  }
  if (!impl->server->is_valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot serve HTTPS with ", o.tls_cert, " and ", o.tls_key, ": the files cannot be used"));
  }
  impl->stub = std::make_unique<grpc::GenericStub>(o.channel);
  int threads = o.threads;
  impl->server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  if (o.max_body > 0) impl->server->set_payload_max_length(o.max_body);
  impl->server->set_keep_alive_timeout(30);
  Impl* p = impl.get();
  auto handler = [p](const httplib::Request& req, httplib::Response& res) { p->Handle(req, res); };
  impl->server->Get(".*", handler);
  impl->server->Post(".*", handler);
  impl->server->Put(".*", handler);
  impl->server->Delete(".*", handler);
  impl->server->Patch(".*", handler);
  impl->server->Options(".*", handler);
  impl->o = std::move(o);
  if (want_port == 0) {
    impl->port = impl->server->bind_to_any_port(impl->host);
  } else {
    impl->port = impl->server->bind_to_port(impl->host, want_port) ? want_port : -1;
  }
  if (impl->port <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", impl->o.listen, ": ", strerror(errno)));
  }
  impl->thread = std::thread([p] { p->server->listen_after_bind(); });
  return std::unique_ptr<Gateway>(new Gateway(std::move(impl)));
}

void Gateway::Impl::Handle(const httplib::Request& req, httplib::Response& res) {
  SecurityHeaders(&res);
  if (loopback && !LoopbackHost(req.get_header_value("Host"))) {
    Error(&res, grpc::StatusCode::PERMISSION_DENIED,
          absl::StrCat("Host ", req.get_header_value("Host"),
                       " is not a loopback name; this listener answers only to "
                       "127.0.0.1, [::1] or localhost (a name pointed at it by another site is refused)"));
    return;
  }
  if (req.method == "GET" && (req.path == "/" || absl::StartsWith(req.path, "/console"))) return Static(req, res);
  if (req.method == "GET" && req.path == "/v1/openapi.json") return Json(&res, 200, openapi, &req);
  bool path_known = false;
  std::optional<Routes::Match> m = routes.Find(req.method, req.path, &path_known);
  if (!m) {
    if (path_known) {
      return Error(
          &res, grpc::StatusCode::UNIMPLEMENTED,
          absl::StrCat(req.method, " is not served on ", req.path, "; /v1/openapi.json lists each path's verbs"));
    }
    return Error(&res, grpc::StatusCode::NOT_FOUND,
                 absl::StrCat("no route ", req.method, " ", req.path, "; /v1/openapi.json lists the routes"));
  }
  const Route& r = *m->route;
  if (!req.body.empty() &&
      !absl::StartsWith(absl::AsciiStrToLower(req.get_header_value("Content-Type")), "application/json")) {
    return Json(&res, 415, ErrorBody(3, "the body must be JSON: send Content-Type: application/json"));
  }
  std::unique_ptr<Message> in = New(r.method->input_type());
  std::multimap<std::string, std::string> query(req.params.begin(), req.params.end());
  if (r.Streaming()) {
    // Where to resume: the event after the last one the client saw.
    std::string last = req.get_header_value("Last-Event-ID");
    if (!last.empty() && r.method->input_type()->FindFieldByName("after_index") != nullptr) {
      query.erase("after_index");
      query.emplace("after_index", last);
    }
  }
  if (absl::Status st = BuildRequest(r, req.body, query, m->params, in.get()); !st.ok()) {
    return Error(&res, grpc::StatusCode::INVALID_ARGUMENT, std::string(st.message()));
  }
  auto ctx = std::make_shared<grpc::ClientContext>();
  if (!Identify(req, ctx.get(), &res)) return;
  if (r.Streaming()) return Stream(r, *in, std::move(ctx), &res);
  ctx->set_deadline(absl::ToChronoTime(o.clock->Now() + absl::Minutes(5)));
  Unary(req, r, *in, ctx.get(), &res);
}

bool Gateway::Impl::Identify(const httplib::Request& req, grpc::ClientContext* ctx, httplib::Response* res) {
  ctx->AddMetadata(auth::kGatewayToken, o.token);
  ctx->AddMetadata(auth::kGatewayPeer, absl::StrCat(req.remote_addr, ":", req.remote_port));
  ctx->AddMetadata(auth::kGatewayTransport, tls ? "https" : loopback ? "loopback http" : "http");
  if (req.has_header("Authorization")) {
    std::string value = req.get_header_value("Authorization");
    if (!Printable(value)) {
      Error(res, grpc::StatusCode::UNAUTHENTICATED, "the Authorization header is not \"Bearer TOKEN\" in ASCII");
      return false;
    }
    ctx->AddMetadata("authorization", value);
  }
  if (tls && !o.tls_client_ca.empty()) {  // certificates are asked for (and verified) only then
    std::string cn = CertCommonName(req.ssl);
    if (!cn.empty() && Printable(cn)) ctx->AddMetadata(auth::kGatewayCert, cn);
  } else if (loopback && !FromBrowser(req)) {
    int64_t uid = auth::LoopbackPeerUid(req.remote_port, port);
    if (uid >= 0) ctx->AddMetadata(auth::kGatewayUid, absl::StrCat(uid));
  }
  return true;
}

void Gateway::Impl::Unary(const httplib::Request& req, const Route& r, const Message& in, grpc::ClientContext* ctx,
                          httplib::Response* res) {
  grpc::CompletionQueue cq;
  auto call = stub->PrepareUnaryCall(ctx, r.GrpcName(), Serialize(in), &cq);
  call->StartCall();
  grpc::ByteBuffer out;
  grpc::Status st;
  call->Finish(&out, &st, Tag(1));
  Await(&cq);
  Drain(&cq);
  if (!st.ok()) return Error(res, st.error_code(), st.error_message());
  std::unique_ptr<Message> reply = New(r.method->output_type());
  if (!Parse(out, reply.get())) return Error(res, grpc::StatusCode::INTERNAL, "the reply could not be read");
  Json(res, 200, ToJson(*reply), &req);
}

// One server-streaming call relayed as Server-Sent Events. Opened in the
// request's handler (Open), so that a refusal (a bad token, a missing role,
// an unknown project) is an HTTP error; once the server says it is open (its
// initial metadata, x-mariposa-stream), Relay writes each message as an
// event, with a comment every 15 s so that a client that went away is
// noticed. `done` runs once, when the call has ended.
struct EventStream {
  std::shared_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call;
  grpc::CompletionQueue cq;
  const google::protobuf::Descriptor* type = nullptr;
  const Clock* clock = nullptr;
  std::function<void()> done;
  bool relayed = false;  // Relay ran (it ends the call itself)

  bool Open(const Message& in) {
    call->StartCall(Tag(1));
    bool open = Await(&cq);
    call->Write(Serialize(in), Tag(2));
    open = open && Await(&cq);
    call->WritesDone(Tag(3));
    open = open && Await(&cq);
    call->ReadInitialMetadata(Tag(4));
    return open && Await(&cq) && ctx->GetServerInitialMetadata().count("x-mariposa-stream") > 0;
  }

  grpc::Status Finish() {
    grpc::Status st;
    call->Finish(&st, Tag(9));
    Await(&cq);
    Drain(&cq);
    done();
    return st;
  }

  // The next message, or nullptr when the call ended; keepalives meanwhile.
  std::unique_ptr<Message> Next(httplib::DataSink& sink, bool* client_gone) {
    grpc::ByteBuffer buf;
    call->Read(&buf, Tag(5));
    void* tag;
    bool ok = false;
    grpc::CompletionQueue::NextStatus next;
    while ((next = cq.AsyncNext(&tag, &ok, absl::ToChronoTime(clock->Now() + absl::Seconds(15)))) ==
           grpc::CompletionQueue::TIMEOUT) {
      if (!sink.write(": keepalive\n\n", 13)) Gone(client_gone);  // the Read then ends
    }
    std::unique_ptr<Message> m = New(type);
    if (next != grpc::CompletionQueue::GOT_EVENT || !ok || !Parse(buf, m.get())) return nullptr;
    return m;
  }

  void Gone(bool* client_gone) {
    *client_gone = true;
    ctx->TryCancel();
  }

  void Relay(httplib::DataSink& sink) {
    bool client_gone = !sink.write(": open\n\n", 8);
    while (!client_gone) {
      std::unique_ptr<Message> m = Next(sink, &client_gone);
      if (m == nullptr) break;
      std::string event = SseEvent(*m);
      if (!sink.write(event.data(), event.size())) Gone(&client_gone);
    }
    grpc::Status st = Finish();
    if (!client_gone && !st.ok()) {
      std::string event = absl::StrCat("event: error\ndata: ", ErrorBody(st.error_code(), st.error_message()), "\n\n");
      sink.write(event.data(), event.size());
    }
    sink.done();
  }
};

void Gateway::Impl::Stream(const Route& r, const Message& in, std::shared_ptr<grpc::ClientContext> ctx,
                           httplib::Response* res) {
  {
    absl::MutexLock l(&mu);
    if (stopping) return Error(res, grpc::StatusCode::UNAVAILABLE, "mariposad is stopping");
    streams.insert(ctx.get());
  }
  auto stream = std::make_shared<EventStream>();
  stream->ctx = ctx;
  stream->call = stub->PrepareCall(ctx.get(), r.GrpcName(), &stream->cq);
  stream->type = r.method->output_type();
  stream->clock = o.clock;
  stream->done = [this, ctx] {
    absl::MutexLock l(&mu);
    streams.erase(ctx.get());
  };
  if (!stream->Open(in)) {
    grpc::Status st = stream->Finish();
    return Error(res, st.ok() ? grpc::StatusCode::UNAVAILABLE : st.error_code(),
                 st.ok() ? "the stream ended before it began" : st.error_message());
  }
  res->set_header("Cache-Control", "no-store");
  res->set_header("X-Accel-Buffering", "no");
  res->set_chunked_content_provider(
      "text/event-stream",
      [stream](size_t, httplib::DataSink& sink) {
        stream->relayed = true;
        stream->Relay(sink);
        return true;
      },
      [stream](bool) {
        // A client gone before the first write: the call is ended here.
        if (stream->relayed) return;
        stream->ctx->TryCancel();
        stream->Finish();
      });
}

void Gateway::Impl::Static(const httplib::Request& req, httplib::Response& res) {
  if (req.path == "/" || req.path == "/console") {
    res.status = 302;
    res.set_header("Location", "/console/");
    return;
  }
  std::string path = req.path == "/console/" ? "/console/index.html" : req.path;
  const Asset* a = FindAsset(path);
  if (a == nullptr)
    return Error(&res, grpc::StatusCode::NOT_FOUND, absl::StrCat("no file ", req.path, " in the console"));
  res.set_header(
      "Content-Security-Policy",
      "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  res.set_header("Cache-Control", "no-cache");
  res.set_content(reinterpret_cast<const char*>(a->data), a->size, a->type);
}

}  // namespace mariposa::gateway
