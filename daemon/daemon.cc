#include "daemon/daemon.h"

#include <unistd.h>

#include <future>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "auth/client.h"
#include "auth/rpc_guard.h"
#include "common/log.h"
#include "common/process_metrics.h"
#include "convergence/informer/observer.h"
#include "projects/api_edge.h"
#include "daemon/grpc_metrics.h"
#include "daemon/process.h"
#include "daemon/request_parse.h"
#include "gateway/gateway.h"
#include "health/events.h"
#include "projects/limits.h"
#include "projects/store_open.h"

namespace mariposa {
namespace {

// Apply's checks against Triton (PAPI, NAPI, IMGAPI) answer within this, or the
// apply goes on with a warning that they were not made (docs/cli.md).
constexpr absl::Duration kApplyCheckDeadline = absl::Seconds(5);

// --tls-cert, --tls-key and --tls-client-ca read into gRPC's credentials;
// the error names the file that cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerTls(const std::string& cert_path,
                                                                   const std::string& key_path,
                                                                   const std::string& client_ca_path) {
  grpc::SslServerCredentialsOptions so(client_ca_path.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                              : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  // Read, and at least PEM of the right kind: gRPC itself only says it
  // cannot listen.
  auto pem = [](const std::string& path, const std::string& what, const std::string& kind,
                std::string* out) -> absl::Status {
    auto text = auth::ReadSmallFile(path, what);
    if (!text.ok()) return text.status();
    if (!absl::StrContains(*text, "-----BEGIN ") || !absl::StrContains(*text, kind + "-----")) {
      return absl::InvalidArgumentError(absl::StrCat(what, " ", path, " is not PEM (no \"-----BEGIN …", kind,
                                                     "-----\" block)"));
    }
    *out = *std::move(text);
    return absl::OkStatus();
  };
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  if (absl::Status s = pem(cert_path, "TLS certificate", "CERTIFICATE", &pair.cert_chain); !s.ok()) return s;
  if (absl::Status s = pem(key_path, "TLS key", "PRIVATE KEY", &pair.private_key); !s.ok()) return s;
  so.pem_key_cert_pairs.push_back(std::move(pair));
  if (!client_ca_path.empty()) {
    if (absl::Status s = pem(client_ca_path, "client CA", "CERTIFICATE", &so.pem_root_certs); !s.ok()) return s;
  }
  return grpc::SslServerCredentials(so);
}

// Where the Triton APIs are, for the log: one address, or each API's.
std::string TritonSummary(const std::map<std::string, triton::ApiEndpoint>& endpoints) {
  std::set<std::string> urls;
  for (const auto& [api, e] : endpoints) {
    if (!e.url.empty()) urls.insert(e.url);  // an optional API not given
  }
  if (urls.size() == 1) return *urls.begin();
  std::vector<std::string> each;
  for (const auto& [api, e] : endpoints) each.push_back(absl::StrCat(api, "=", e.url.empty() ? "none" : e.url));
  return absl::StrJoin(each, " ");
}

// --advertise: the address a node gives the others (and the health agents
// it tells of them); the bound listener's, unless that names every host
// (then this host's name).
std::string AdvertisedAddress(const std::string& advertise, const std::string& bound, const std::string& hostname) {
  if (!advertise.empty()) return advertise;
  size_t colon = bound.rfind(':');
  std::string host = bound.substr(0, colon);
  if (host == "0.0.0.0" || host == "[::]" || host == "::" || host.empty()) return absl::StrCat(hostname, bound.substr(colon));
  return bound;
}

// The data center the Projects service checks applies against and reads
// before a delete: the engine's (EngineDataCenter), apply's checks each
// bounded by kApplyCheckDeadline.
class BoundedDataCenter : public DataCenter {
 public:
  BoundedDataCenter(DataCenter* engine, BoundedRunner* bounded) : engine_(engine), bounded_(bounded) {}
  absl::StatusOr<std::vector<ManifestDiagnostic>> CheckCatalog(const Manifest& m, const std::string& filename,
                                                               const std::string& owner) override {
    DataCenter* e = engine_;
    return bounded_->Run<std::vector<ManifestDiagnostic>>(
        [e, m, filename, owner] { return e->CheckCatalog(m, filename, owner); }, kApplyCheckDeadline,
        "PAPI, NAPI and IMGAPI (apply's check of packages, networks and images)");
  }
  absl::StatusOr<std::map<std::string, ImagePlan>> PlanImages(const std::string& project_uuid, const Manifest& m,
                                                              const std::set<std::string>& services) override {
    DataCenter* e = engine_;
    return bounded_->Run<std::map<std::string, ImagePlan>>(
        [e, project_uuid, m, services] { return e->PlanImages(project_uuid, m, services); }, kApplyCheckDeadline,
        "IMGAPI, VMAPI and CNAPI (the image plan)");
  }
  absl::StatusOr<ProjectHoldings> Holdings(const std::string& project_uuid) override {
    return engine_->Holdings(project_uuid);
  }

 private:
  DataCenter* engine_;
  BoundedRunner* bounded_;
};

}  // namespace

Daemon::Daemon(DaemonStart start)
    : config_(std::move(start.config)),
      flags_(config_.flags),
      lock_fd_(start.lock_fd),
      sigs_(start.sigs),
      started_(start.started),
      clock_(start.clock),
      hostname_(std::move(start.hostname)),
      default_socket_(start.default_socket) {}

Daemon::~Daemon() = default;

int Daemon::Run() {
  if (Exit e = Open()) return *e;
  if (Exit e = Services()) return *e;
  Health();
  if (!config_.triton_url.empty()) Triton();
  if (reconciler_) {
    if (Exit e = Wire()) return *e;
  }
  state_ = std::make_unique<convergence::StateService>(store_.get(), vmapi_.get(), reconciler_.get());
  if (across_) state_->set_across(across_);
  state_->set_controller_problems([this](v1::GetStateResponse* resp) {
    v1::Problem p;
    if (ModeProblem(controller_->Get(), &p)) *resp->add_problems() = std::move(p);
  });
  if (Exit e = Listen()) return *e;
  if (reconciler_ && config_.watch) Watch();
  StartWork();
  LogInfo("serving", {{"addr", bound_},
                      {"listeners", absl::StrJoin(listeners_, "; ")},
                      {"triton", config_.triton_url.empty() ? "none (goal state only)" : TritonSummary(config_.endpoints)},
                      {"data_dir", flags_.data_dir},
                      {"metrics", flags_.metrics_listen.empty() ? "off" : absl::StrCat(metrics_->port())},
                      {"schema", absl::StrCat(store_->SchemaVersion())},
                      {"pid", absl::StrCat(getpid())}});
  Serve();
  Stop();
  return 0;
}

// The TLS files, the store, the secrets, the controller's state: each that
// fails is an init failure, named with its Error / Reason / Fix / Impact.
Daemon::Exit Daemon::Open() {
  if (config_.tls) tls_credentials_ = ServerTls(flags_.tls_cert, flags_.tls_key, flags_.tls_client_ca);
  if (!tls_credentials_.ok()) {
    LogError("cannot read the TLS files; not serving", {{"error", tls_credentials_.status().ToString()}});
    return InitFailed(absl::StrCat("cannot serve TLS on ", flags_.listen), std::string(tls_credentials_.status().message()),
                      "make --tls-cert, --tls-key (and --tls-client-ca) readable by mariposad (docs/security.md), "
                      "or point them at the right files, then restart",
                      "mariposad does not serve on --listen; nothing is read, changed or converged; running "
                      "instances are not touched");
  }
  store_path_ = config_.postgres ? "PostgreSQL (--store)" : flags_.data_dir + "/mariposa.db";
  StoreRefusal refusal;
  auto store = config_.postgres ? OpenPostgresStore(flags_.store_spec, clock_, &refusal)
                                : OpenStore(flags_.data_dir, flags_.init, clock_, &refusal, flags_.backup_dir,
                                            flags_.accept_store_loss);
  if (!store.ok()) {
    LogError("store refused; not serving", {{"path", store_path_},
                                            {"error", refusal.error},
                                            {"reason", refusal.reason},
                                            {"fix", refusal.fix},
                                            {"impact", refusal.impact}});
    return InitFailed(refusal.error, refusal.reason, refusal.fix, refusal.impact);
  }
  store_ = *std::move(store);
  if (config_.postgres) store_path_ = store_->where();
  if (Exit e = OpenSecrets()) return e;
  controller_ = std::make_unique<ControllerState>(store_.get(), clock_);
  if (absl::Status s = controller_->Load(); !s.ok()) {
    return InitFailed("cannot read the controller's state from the store", std::string(s.message()),
                      "restore a backup (docs/operations.md, \"Backup and restore\")", "mariposad does not serve");
  }
  return std::nullopt;
}

// Secrets: sealed with the key file; anything plain or under an older key
// (an interrupted rotation) is sealed with the current key now. Nodes that
// share a PostgreSQL store must share the key.
Daemon::Exit Daemon::OpenSecrets() {
  const std::string& key = flags_.secrets_key;
  auto sealer = auth::Sealer::Open(key);
  if (!sealer.ok()) {
    LogError("cannot load the secrets key; not serving", {{"path", key}, {"error", sealer.status().ToString()}});
    return InitFailed(absl::StrCat("cannot load the secrets key ", key), std::string(sealer.status().message()),
                      "restore the key file that sealed this store's secrets (0600, owned by mariposad), or "
                      "point --secrets-key at it",
                      "mariposad does not serve: secret meta values cannot be opened, so nothing is read, "
                      "changed or converged; running instances are not touched");
  }
  sealer_ = *std::move(sealer);
  store_->SetSecretCodec(sealer_.get());
  if (config_.postgres) {
    if (absl::Status agreed = auth::AgreeOnSecretsKey(store_.get(), *sealer_); !agreed.ok()) {
      LogError("this node's secrets key is not the other nodes'; not serving", {{"error", agreed.ToString()}});
      return InitFailed("this node's secrets key is not the one the store's secrets are sealed with",
                        std::string(agreed.message()),
                        "copy --secrets-key from a node that runs (0600, owned by mariposad), then start again "
                        "(docs/operations.md, \"Several nodes\")",
                        "this node does not serve; the other nodes are not affected");
    }
  }
  auto n = auth::ResealAndFinish(store_.get(), sealer_.get());
  if (!n.ok()) {
    LogError("cannot seal the store's secrets; not serving", {{"error", n.status().ToString()}});
    return InitFailed("cannot seal the store's secrets with the current key", std::string(n.status().message()),
                      "check the key file and the store (`mariposa admin status` of a running copy, "
                      "docs/operations.md); restore a backup taken with this key",
                      "mariposad does not serve until the secrets are sealed");
  }
  if (*n > 0) {
    LogInfo("secrets sealed with the current key", {{"count", absl::StrCat(*n)}, {"key", sealer_->current_key_id()}});
  }
  return std::nullopt;
}

int Daemon::InitFailed(const std::string& error, const std::string& reason, const std::string& fix,
                       const std::string& impact) {
  std::cerr << "mariposad: cannot start\nError: " << error << "\nReason: " << reason << "\nFix: " << fix
            << "\nImpact: " << impact << "\n";
  if (flags_.on_init_failure != "serve") return 1;
  v1::Problem problem;
  problem.set_kind("initfail");
  problem.set_error(error);
  problem.set_reason(reason);
  problem.set_fix(fix);
  problem.set_impact(impact);
  LimitedState st;
  st.mode = "initfail";
  st.data_dir = flags_.data_dir;
  st.started_at = started_;
  st.describe = [problem, key = flags_.secrets_key, dir = flags_.backup_dir](v1::StatusResponse* resp) {
    *resp->add_problems() = problem;
    resp->set_secrets_key(key);
    resp->set_backup_dir(dir);
  };
  st.unavailable = [error, fix] {
    return absl::StrCat("mariposad failed to start (initfail): ", error, ". Fix: ", fix,
                        " (`mariposa admin status` says more)");
  };
  // --listen with its TLS, or not at all when the TLS files are what failed
  // (never in clear instead).
  std::vector<LimitedListener> at;
  if (!config_.tls || tls_credentials_.ok()) at.push_back({flags_.listen, config_.tls ? *tls_credentials_ : nullptr});
  if (flags_.socket_path != "none") {
    unlink(flags_.socket_path.c_str());  // a stale socket: the lock is ours
    AddSocket(&at, flags_.socket_path);
  }
  Limited limited = StartLimited(at, std::move(st), flags_.addr_file);
  if (limited.server == nullptr) {
    std::cerr << "mariposad: cannot listen in initfail either: " << limited.error << "\n";
    return 1;
  }
  LogError("initfail: not serving but `admin status`",
           {{"error", error}, {"listeners", absl::StrJoin(limited.server->addresses(), ", ")}});
  WriteLockFile(lock_fd_, limited.server->addresses());
  absl::Notification stop;
  std::thread signals = OnSignal(sigs_, [&](int) { stop.Notify(); });
  stop.WaitForNotification();
  signals.join();
  limited.server->Shutdown();
  return 1;
}

// Authorization and the services every mariposad serves, its metrics and
// its backups.
Daemon::Exit Daemon::Services() {
  aopts_.store = store_.get();
  aopts_.gate = [c = controller_.get()](const auth::MethodRule& rule) { return c->Gate(rule); };
  aopts_.clock = clock_;
  aopts_.daemon_uid = geteuid();
  if (flags_.embedded_health) aopts_.internal_token = auth::NewTokenSecret();
  if (!flags_.http_listen.empty()) aopts_.gateway_token = auth::NewTokenSecret();
  if (auto m = config_.endpoints.find("mahi"); m != config_.endpoints.end() && !m->second.url.empty()) {
    triton::HttpOptions o;
    o.base_url = m->second.url;
    o.timeout = std::min(m->second.timeout, absl::Seconds(5));  // a caller waits for it
    o.max_connections = m->second.connections;
    o.max_attempts = 2;
    mahi_ = std::make_unique<MahiClient>(std::make_unique<triton::HttpClient>("mahi", o, clock_), clock_);
    aopts_.mahi = mahi_.get();
  }
  authorizer_ = std::make_unique<auth::Authorizer>(aopts_);
  SetAccess(authorizer_.get());
  auth_service_ = std::make_unique<auth::AuthService>(store_.get(), authorizer_.get(), sealer_.get(), clock_);
  projects_ = std::make_unique<ProjectsService>(store_.get(), clock_);
  admin_ = std::make_unique<AdminService>(store_.get(), flags_.data_dir, store_path_, started_);
  admin_->set_backup_dir(flags_.backup_dir);
  admin_->set_controller(controller_.get());
  backups_ = std::make_unique<BackupScheduler>(store_.get(), clock_,
                                               BackupScheduler::Options{flags_.backup_dir, config_.backup_interval,
                                                             config_.backup_keep});
  admin_->set_backups(backups_.get());
  queue_ = std::make_unique<convergence::QueueService>(store_.get());
  metrics_ = std::make_unique<convergence::ControllerMetrics>(store_.get());
  metrics_->SetDataCenter(flags_.datacenter);
  metrics_->AddCollectable(ProcessCollector());
  metrics_->AddCollectable(BuildInfoCollector("mariposad", {{"grpc", grpc::Version()}}));
  metrics_->AddCollectable(SampleCollector([b = backups_.get(), c = controller_.get()] {
    std::vector<Sample> out = b->Metrics();
    std::string mode = c->Get().mode;
    for (const char* m : {"active", "readonly"}) {
      out.push_back({"mariposa_controller_state", "1 for the state mariposad is in (active, readonly).",
                     mode == m ? 1.0 : 0.0, {{"state", m}}});
    }
    return out;
  }));
  if (!flags_.metrics_listen.empty()) {
    if (auto st = metrics_->Serve(flags_.metrics_listen); !st.ok()) {
      LogError("cannot serve metrics", {{"listen", flags_.metrics_listen}, {"error", st.ToString()}});
      std::cerr << "mariposad: " << st.message() << "\n";
      return 1;
    }
  }
  if (Exit e = DataCenters()) return e;
  bounded_ = std::make_unique<BoundedRunner>(clock_);
  return std::nullopt;
}

// This data center's name and its peers (daemon/peers.h): asked from now on,
// shown by `mariposa datacenters`, `admin status` and /metrics.
Daemon::Exit Daemon::DataCenters() {
  if (flags_.datacenter.empty()) return std::nullopt;
  peers_ = std::make_unique<PeerProber>(flags_.datacenter, config_.peers,
                                        PeerCredentials{flags_.peer_ca, flags_.peer_cert, flags_.peer_key},
                                        config_.peer_interval, absl::Seconds(3), clock_);
  if (absl::Status st = peers_->Start(); !st.ok()) {
    std::cerr << "mariposad: " << st.message() << "\n";
    return 1;
  }
  // A copy to another data center (project copy --datacenter) is sent to
  // that data center's mariposad, which makes it.
  projects_->set_peer_copier(flags_.datacenter, [p = peers_.get()](const std::string& dc,
                                                                   const v1::ReceiveCopyRequest& req)
                                                    -> absl::StatusOr<v1::CopyProjectResponse> {
    return p->Ask<v1::Projects>(dc, &v1::Projects::Stub::ReceiveCopy, req, absl::Seconds(30));
  });
  Rollouts();
  admin_->set_datacenters([p = peers_.get(), interval = config_.peer_interval, clock = clock_] {
    return AdminService::DataCentersView{p->self(), interval, clock->Now(), p->Views()};
  });
  metrics_->AddCollectable(SampleCollector([p = peers_.get(), clock = clock_] {
    std::vector<Sample> out;
    absl::Time now = clock->Now();
    for (const PeerView& v : p->Views()) {
      out.push_back({"mariposa_datacenter_peer_up", "1 when the peer data center's mariposad answered its last question.",
                     v.reachable ? 1.0 : 0.0, {{"peer", v.name}}});
      if (v.last_ok != absl::InfinitePast()) {
        out.push_back({"mariposa_datacenter_peer_last_answer_seconds",
                       "Seconds since the peer data center's mariposad last answered well.",
                       absl::ToDoubleSeconds(now - v.last_ok), {{"peer", v.name}}});
      }
    }
    return out;
  }));
  return std::nullopt;
}

// The rollouts across data centers this mariposad drives: each data center
// reached through its peer link, this one in process.
void Daemon::Rollouts() {
  const std::string self = flags_.datacenter;
  DataCenterLink link;
  link.send = [this, self](const std::string& dc,
                           const v1::ReceiveVersionRequest& req) -> absl::StatusOr<v1::ApplyResponse> {
    if (dc == self) return projects_->ReceiveHere(req, absl::StrCat("mariposad ", self));
    return peers_->Ask<v1::Projects>(dc, &v1::Projects::Stub::ReceiveVersion, req, absl::Seconds(15));
  };
  link.state = [this, self](const std::string& dc,
                            const std::string& project) -> absl::StatusOr<v1::GetStateResponse> {
    v1::GetStateRequest req;
    req.set_project(project);
    v1::GetStateResponse resp;
    if (dc == self) {
      if (state_ == nullptr) return absl::UnavailableError("starting");
      grpc::Status st = state_->GetState(nullptr, &req, &resp);
      if (!st.ok()) return absl::Status(static_cast<absl::StatusCode>(st.error_code()), st.error_message());
      return resp;
    }
    return peers_->Ask<v1::State>(dc, &v1::State::Stub::GetState, req, absl::Seconds(10));
  };
  link.rollback = [this, self](const std::string& dc, const std::string& project, const std::string& to,
                               const std::string& why) -> absl::Status {
    if (dc == self) {
      auto now = store_->GetProjectWithCurrent(project);
      if (!now.ok()) return now.status();
      return projects_
          ->RollbackTo(project, to, now->second ? now->second->uuid : "", absl::StrCat("mariposad ", self), why)
          .status();
    }
    v1::RollbackRequest req;
    req.set_project(project);
    req.set_version(to);
    req.set_force(true);
    return peers_->Ask<v1::Projects>(dc, &v1::Projects::Stub::Rollback, req, absl::Seconds(30)).status();
  };
  rollouts_ = std::make_unique<RolloutRunner>(store_.get(), link, clock_, absl::Seconds(1),
                                              [this] { return controller_->Get().mode == "readonly"; });
  // One project in every data center, each asked now, at the same time.
  across_ = [this, self, state = link.state](const v1::ProjectAcrossRequest& req,
                                                               v1::ProjectAcrossResponse* resp) {
    const std::string& project = req.project();
    std::vector<std::string> names = {self};
    std::map<std::string, absl::Time> last_ok;
    for (const PeerView& v : peers_->Views()) {
      names.push_back(v.name);
      last_ok[v.name] = v.last_ok;
    }
    // Its newest events there (this one: its store).
    auto events = [this, self, &req](const std::string& dc) -> absl::StatusOr<v1::ListEventsResponse> {
      v1::ListEventsResponse out;
      if (req.events() == 0) return out;
      if (dc == self) {
        auto list = store_->ListNewestEvents(req.project(), 0, req.events(), {});
        if (!list.ok()) return list.status();
        for (const EventRecord& e : *list) EventToProto(e, out.add_events());
        return out;
      }
      v1::ListEventsRequest ask;
      ask.set_project(req.project());
      ask.set_limit(req.events());
      ask.set_newest(true);
      return peers_->Ask<v1::Projects>(dc, &v1::Projects::Stub::ListEvents, ask, absl::Seconds(10));
    };
    std::vector<std::future<absl::StatusOr<v1::GetStateResponse>>> asked;
    std::vector<std::future<absl::StatusOr<v1::ListEventsResponse>>> logs;
    for (const std::string& dc : names) {
      asked.push_back(std::async(std::launch::async, [&state, dc, &project] { return state(dc, project); }));
      logs.push_back(std::async(std::launch::async, [&events, dc] { return events(dc); }));
    }
    for (size_t i = 0; i < names.size(); ++i) {
      auto got = asked[i].get();
      v1::ProjectInDataCenter* d = resp->add_datacenters();
      d->set_datacenter(names[i]);
      d->set_local(names[i] == self);
      if (last_ok.count(names[i]) && last_ok[names[i]] != absl::InfinitePast()) {
        SetTimestamp(last_ok[names[i]], d->mutable_last_answer());
      }
      d->set_answered(got.ok() || absl::IsNotFound(got.status()));
      d->set_present(got.ok());
      if (got.ok()) *d->mutable_state() = *std::move(got);
      else if (!absl::IsNotFound(got.status())) d->set_error(std::string(got.status().message()));
      auto log = logs[i].get();
      if (log.ok()) *d->mutable_events() = log->events();
      else d->set_events_error(std::string(log.status().message()));
    }
    SetTimestamp(clock_->Now(), resp->mutable_as_of());
  };
  projects_->set_rollouts(link.send, [r = rollouts_.get()] { r->Poke(); });
}

// The health coordinator and the agents' service, when there is Triton to
// check and agents to check it.
void Daemon::Health() {
  if (config_.triton_url.empty() || !(flags_.embedded_health || flags_.remote_agents)) return;
  health_ = std::make_unique<health::Coordinator>(
      clock_, config_.health_lease, [st = store_.get(), this](const std::vector<health::HealthChange>& changes) {
        // Only changes are written (HEALTH.md), an agent message's in one
        // transaction, before the controller acts on them.
        if (auto w = health::WriteHealthEvents(st, changes); !w.ok()) {
          LogError("cannot write health events", {{"error", w.ToString()}});
        }
        // A health change wakes only the projects it belongs to.
        if (auto* r = wake_target_.load()) {
          std::set<std::string> projects;
          for (const auto& c : changes) projects.insert(c.group);
          for (const std::string& p : projects) r->WakeProject(p);
        }
      });
  health_agents_ =
      std::make_unique<health::HealthAgentsService>(health_.get(), config_.health_lease, clock_, config_.max_agents);
  health_metrics_.Watch(health_.get());
  metrics_->AddCollectable(health_metrics_.collectable());
}

// Each API at its own address, with its own timeout and connections; the
// reconciler over them.
void Daemon::Triton() {
  const auto& endpoints = config_.endpoints;
  auto http_for = [&endpoints](const std::string& api) {
    triton::HttpOptions o;
    o.base_url = endpoints.at(api).url;
    o.timeout = endpoints.at(api).timeout;
    o.max_connections = endpoints.at(api).connections;
    return o;
  };
  auto hook = [this](const triton::RequestRecord& r) {
    metrics_->TritonRequest(r);
    if (auto* sink = latency_sink_.load()) sink->NoteLatency(absl::AsciiStrToUpper(r.api), r.latency);
  };
  vmapi_ = std::make_unique<triton::HttpVmapiClient>(http_for("vmapi"), clock_, hook);
  imgapi_ = std::make_unique<triton::HttpImgapiClient>(http_for("imgapi"), clock_, hook, endpoints.at("wfapi").url);
  cnapi_ = std::make_unique<triton::HttpCnapiClient>(http_for("cnapi"), clock_, hook);
  papi_ = std::make_unique<triton::HttpPapiClient>(http_for("papi"), clock_, hook);
  napi_ = std::make_unique<triton::HttpNapiClient>(http_for("napi"), clock_, hook);
  if (!endpoints.at("fwapi").url.empty()) {
    fwapi_ = std::make_unique<triton::HttpFwapiClient>(http_for("fwapi"), clock_, hook);
  }
  if (!endpoints.at("volapi").url.empty()) {
    volapi_ = std::make_unique<triton::HttpVolapiClient>(http_for("volapi"), clock_, hook);
  }
  if (!flags_.image_source_url.empty()) {
    triton::HttpOptions src = http_for("imgapi");
    src.base_url = flags_.image_source_url;
    image_source_ = std::make_unique<triton::HttpImgapiClient>(src, clock_, hook);
  }
  convergence::ReconcilerOptions ropts = ReconcilerOptionsFor();
  if (config_.postgres) Leases(&ropts);
  reconciler_ = std::make_unique<convergence::Reconciler>(store_.get(), vmapi_.get(), imgapi_.get(), clock_, ropts);
  wake_target_ = reconciler_.get();
  latency_sink_.store(reconciler_.get());
}

convergence::ReconcilerOptions Daemon::ReconcilerOptionsFor() {
  convergence::ReconcilerOptions ropts;
  ropts.owner_uuid = flags_.owner;
  ropts.datacenter = flags_.datacenter;
  ropts.admin_owner_uuid = flags_.admin_owner;
  ropts.network_uuid = flags_.network;
  ropts.resync = config_.resync;
  ropts.relist = config_.relist;
  ropts.cns_ttl = config_.cns_ttl;
  ropts.audit = config_.audit;
  ropts.stale_after = 2 * config_.resync + absl::Seconds(10);
  for (const auto& [api, e] : config_.endpoints) ropts.api_urls[api] = e.url;
  ropts.max_jobs = config_.max_jobs;
  ropts.max_jobs_per_project = config_.max_jobs_per_project;
  ropts.parallel_syncs = config_.parallel_syncs;
  ropts.metrics = metrics_.get();
  ropts.cnapi = cnapi_.get();
  ropts.backoff_cap = config_.backoff_cap;
  if (image_source_) {
    ropts.image_source = image_source_.get();
    ropts.image_source_url = flags_.image_source_url;
    ropts.image_channel = flags_.image_channel;
  }
  ropts.papi = papi_.get();
  ropts.napi = napi_.get();
  ropts.fwapi = fwapi_.get();
  ropts.volapi = volapi_.get();
  ropts.health = health_.get();
  ropts.health_loopback = flags_.health_loopback;
  ropts.rollback = [p = projects_.get()](const std::string& project, const std::string& to,
                                         const std::string& expected, const std::string& message) {
    return p->RollbackTo(project, to, expected, "mariposad (auto_rollback)", message);
  };
  return ropts;
}

// Several nodes on PostgreSQL: the project leases this node holds, the
// others' changes heard, the health agents told of every live node.
void Daemon::Leases(convergence::ReconcilerOptions* ropts) {
  const absl::Duration ttl = config_.lease_ttl;
  convergence::LeaseKeeperOptions lo;
  lo.node = flags_.node_name;
  lo.policy.ttl = ttl;
  lo.policy.renew_before = ttl / 2;
  lo.policy.node_ttl = ttl;
  lo.policy.safety = ttl / 5;
  lo.tick = std::min(absl::Seconds(1), ttl / 10);
  // readonly set through another node, even when its wake-up was missed.
  lo.after_round = [c = controller_.get()] { c->Reload().IgnoreError(); };
  leases_ = std::make_unique<convergence::LeaseKeeper>(store_.get(), clock_, lo, [this](const std::string& project) {
    if (auto* r = wake_target_.load()) r->WakeProject(project);
  });
  ropts->lease = [k = leases_.get()](const std::string& project) { return k->Holds(project); };
  // An import this node saw end: the others forget their resolved images.
  ropts->images_changed = [this] {
    if (wake_bus_ != nullptr) wake_bus_->Publish(WakeBus::kImages);
  };
  admin_->set_nodes([k = leases_.get()] {
    return AdminService::NodesView{k->node(), k->policy().ttl, k->LastState(), k->LastError()};
  });
  // Health agents link to every live node (each assigns its own projects'
  // checks), learnt from whichever node they reach.
  if (health_agents_) {
    health_agents_->SetDirectory([k = leases_.get()] {
      return health::HealthAgentsService::Directory{k->node(), k->LiveAddresses()};
    });
  }
}

// What the reconciler is told (changes, the controller's state, the other
// nodes' changes) and asked (apply's checks, image plans, problems).
Daemon::Exit Daemon::Wire() {
  convergence::Reconciler* r = reconciler_.get();
  // Set before the wake-up bus can call Reload.
  controller_->set_on_change([r, this](const ControllerMode& m) {
    r->SetPaused(m.mode == "readonly");
    if (wake_bus_ != nullptr) wake_bus_->Publish();  // the other nodes read it again
  });
  if (config_.postgres) WireWakeBus();
  // Projects made before accounts were recorded are --owner's: recorded now,
  // so that a later --owner does not take them to another account.
  projects_->set_default_owner(flags_.owner);
  projects_->set_datacenter(flags_.datacenter);
  auto claimed = store_->ClaimUnownedProjects(flags_.owner);
  if (!claimed.ok()) {
    LogError("cannot record --owner as the account of older projects; not serving",
             {{"error", claimed.status().ToString()}});
    return InitFailed("cannot record --owner as the account of older projects",
                      std::string(claimed.status().message()), "check the store's disk (space, permissions)",
                      "mariposad does not serve");
  }
  if (*claimed > 0) {
    LogInfo("projects without an account recorded as --owner's",
            {{"count", absl::StrCat(*claimed)}, {"owner", flags_.owner}});
  }
  WireProjects();
  return std::nullopt;
}

// A change through this node wakes every node's reconciler at once; what
// another node changed is read again here (its readonly state too).
void Daemon::WireWakeBus() {
  wake_bus_ = std::make_unique<WakeBus>(
      flags_.store_spec, clock_,
      [r = reconciler_.get(), c = controller_.get(), store = store_.get()](const std::set<std::string>& what) {
        // Events committed on any node (or anything, after a lost
        // connection): `events -f` and the console's streams read again.
        if (WakeBus::SaysEvents(what)) {
          if (ChangeSignal* events = store->EventsSignal()) events->Notify();
        }
        if (WakeBus::OnlyEvents(what)) return;  // nothing else changed
        if (absl::Status s = c->Reload(); !s.ok()) {
          LogWarn("cannot read the controller's state", {{"error", s.ToString()}});
        }
        // An import ended on another node (or anything, after a lost
        // connection): what this node resolved may be stale.
        if (what.count(WakeBus::kImages) || what.count(WakeBus::kAnything)) r->triton_catalog().Forget();
        r->Wake();
      });
  if (absl::Status s = wake_bus_->Start(); !s.ok()) {
    LogError("cannot listen for the other nodes' changes; they are seen at each --resync", {{"error", s.ToString()}});
    wake_bus_.reset();
  }
}

// The services' hooks into the reconciler. Apply's checks against PAPI, NAPI
// and IMGAPI answer within kApplyCheckDeadline; past it the apply goes on
// with the documented "were not checked" warning instead of waiting on a
// slow Triton.
void Daemon::WireProjects() {
  convergence::Reconciler* r = reconciler_.get();
  BoundedRunner* bounded = bounded_.get();
  // A change wakes its own project only (the others, quiet, stay so); the
  // other nodes hear of it on the wake-up bus.
  auto changed = [r, bus = wake_bus_.get()](const std::string& project_uuid) {
    r->WakeProject(project_uuid);
    if (bus != nullptr) bus->Publish();
  };
  projects_->set_on_change(changed);
  queue_->set_on_change(changed);
  data_center_ = std::make_unique<BoundedDataCenter>(r->data_center(), bounded);
  projects_->set_data_center(data_center_.get());
  admin_->set_problems([r, mahi = mahi_.get()](v1::StatusResponse* resp) {
    for (const auto& [project, list] : r->LastProblems()) {
      for (const auto& p : list) {
        v1::Problem* out = resp->add_problems();
        convergence::ProblemToProto(p, out);
        out->set_project(project);
      }
    }
    if (auto o = mahi ? mahi->CurrentOutage() : std::nullopt) {
      v1::Problem* out = resp->add_problems();
      out->set_kind("triton-auth-unreachable");
      out->set_error(absl::StrCat("Triton's auth cache (mahi) at ", mahi->url(), " has not answered since ",
                                  absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", o->since, absl::UTCTimeZone())));
      out->set_reason(o->error);
      out->set_fix("check mahi (its zone, `sdcadm instances mahi`), the network to it and --mahi / MAHI_SERVICE");
      out->set_impact("calls signed by Triton accounts are answered UNAVAILABLE (try again), neither taken nor "
                      "refused; tokens, certificates and local users are not affected");
    }
  });
  convergence::ImagesServiceOptions iopts;
  iopts.imgapi = imgapi_.get();
  iopts.source = image_source_.get();
  iopts.source_url = flags_.image_source_url;
  iopts.channel = flags_.image_channel;
  iopts.resolve = [r](const std::string& ref) { return r->triton_catalog().LookUp(ref); };
  iopts.on_change = [r, bus = wake_bus_.get()] {
    r->triton_catalog().Forget();
    r->Wake();
    if (bus != nullptr) bus->Publish(WakeBus::kImages);
  };
  images_ = std::make_unique<convergence::ImagesService>(store_.get(), iopts);
}

// gRPC's listeners and services, started; --addr-file written.
Daemon::Exit Daemon::Listen() {
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  // grpc.health.v1.Health: SERVING while mariposad serves (load balancers,
  // grpc_health_probe, systemd watchdogs); like reflection it answers anyone.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  if (Exit e = ListenLocal(&builder, &port)) return e;
  if (Exit e = BuildServer(&builder, &port)) return e;
  if (Exit e = ServeHttp()) return e;
  // What `admin status` says of this node: every listener, HTTP's included.
  admin_->set_facts(listeners_, absl::StrCat(flags_.secrets_key, " (key ", sealer_->current_key_id(), ")"), standing_);
  std::vector<std::string> addrs = {bound_};
  if (!flags_.metrics_listen.empty()) {
    addrs.push_back(absl::StrCat(flags_.metrics_listen.substr(0, flags_.metrics_listen.rfind(':')), ":",
                                 metrics_->port()));
  }
  if (gateway_) addrs.push_back(gateway_->url());
  WriteAddrFile(flags_.addr_file, addrs);
  return std::nullopt;
}

// --listen (loopback: accepted here to learn the caller's uid; TLS or
// --insecure-listen: by gRPC) and the Unix socket.
Daemon::Exit Daemon::ListenLocal(grpc::ServerBuilder* builder, int* port) {
  const std::string& listen = flags_.listen;
  if (!config_.tls && auth::IsLocalAddress(listen)) {
    auto l = auth::LocalListener::Bind(listen);
    if (!l.ok()) {
      LogError("cannot listen", {{"listen", listen}, {"error", l.status().ToString()}});
      std::cerr << "mariposad: " << l.status().message() << "\n";
      return 1;
    }
    bound_ = (*l)->address();
    listeners_.push_back(absl::StrCat(bound_, absl::StartsWith(bound_, "unix:")
                                                  ? " (peer credentials)"
                                                  : " (loopback: the caller's uid, or a token)"));
    locals_.push_back(*std::move(l));
  } else if (config_.tls) {
    builder->AddListeningPort(listen, *tls_credentials_, port);
  } else {
    builder->AddListeningPort(listen, grpc::InsecureServerCredentials(), port);
    LogError("listening without TLS on a non-loopback address (--insecure-listen): tokens and secrets "
             "cross the network in clear", {{"listen", listen}});
    v1::Problem p;
    p.set_kind("insecure-listen");
    p.set_error(absl::StrCat("mariposad listens on ", listen, " without TLS (--insecure-listen)"));
    p.set_reason("tokens, manifests and secrets cross the network in clear; anyone on the path can read them");
    p.set_fix("restart with --tls-cert and --tls-key (docs/security.md), or listen on 127.0.0.1");
    p.set_impact("callers there have no identity but a token; whoever reads a token acts with its role");
    standing_.push_back(p);
  }
  if (flags_.socket_path == "none") return std::nullopt;
  auto l = auth::LocalListener::Bind("unix:" + flags_.socket_path);
  if (l.ok()) {
    listeners_.push_back(absl::StrCat((*l)->address(), " (peer credentials)"));
    locals_.push_back(*std::move(l));
  } else if (!default_socket_) {
    LogError("cannot listen", {{"socket", flags_.socket_path}, {"error", l.status().ToString()}});
    std::cerr << "mariposad: " << l.status().message() << "\n";
    return 1;
  } else {
    LogInfo("no Unix socket: the default path cannot be used; give --socket PATH",
            {{"socket", flags_.socket_path}, {"error", l.status().ToString()}});
  }
  return std::nullopt;
}

// The services registered behind the interceptors, the server started, the
// local listeners handing it their connections.
Daemon::Exit Daemon::BuildServer(grpc::ServerBuilder* builder, const int* port) {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(authorizer_->NewInterceptorFactory());
  // First, so that the metrics count what the client is told.
  interceptors.push_back(NewUnparsableRequestInterceptorFactory());
  interceptors.push_back(NewGrpcMetricsInterceptorFactory(metrics_.get(), clock_));
  builder->experimental().SetInterceptorCreators(std::move(interceptors));
  // Requests: a manifest at its limit with room for the other fields; a
  // larger one is refused by gRPC before it is buffered whole. Replies: the
  // largest the limits allow (docs/manifest.md, "Limits").
  builder->SetMaxReceiveMessageSize(Limits::kMaxRequestBytes);
  builder->SetMaxSendMessageSize(Limits::kMaxGrpcMessageBytes);
  if (images_ == nullptr) {
    images_ = std::make_unique<convergence::ImagesService>(store_.get(), convergence::ImagesServiceOptions{});
  }
  events_ = std::make_unique<EventsService>(store_.get(), clock_);
  for (grpc::Service* s : std::initializer_list<grpc::Service*>{
           projects_.get(), admin_.get(), queue_.get(), images_.get(), state_.get(), auth_service_.get(),
           events_.get(), health_agents_.get()}) {
    if (s == nullptr) continue;
    // Every RPC's access rule is checked before its handler (auth/rpc_guard.h).
    if (absl::Status guarded = auth::GuardEveryMethod(s); !guarded.ok()) {
      LogError("cannot guard the API", {{"error", guarded.ToString()}});
      return 1;
    }
    builder->RegisterService(s);
  }
  server_ = builder->BuildAndStart();
  if (!server_) {
    LogError("cannot listen", {{"listen", flags_.listen}});
    return 1;
  }
  if (bound_.empty()) {
    bound_ = absl::StrCat(flags_.listen.substr(0, flags_.listen.rfind(':')), ":", *port);
    const char* accepts = !config_.tls                      ? " (no TLS: tokens only, in clear)"
                          : flags_.tls_client_ca.empty() ? " (TLS: tokens)"
                                                         : " (TLS: client certificates or tokens)";
    listeners_.insert(listeners_.begin(), absl::StrCat(bound_, accepts));
  }
  for (auto& l : locals_) l->Start(server_.get(), authorizer_.get(), clock_);
  return std::nullopt;
}

// --http-listen: the HTTP/JSON API and console, forwarding to this
// server's own services in process (gateway/gateway.h).
Daemon::Exit Daemon::ServeHttp() {
  if (flags_.http_listen.empty()) return std::nullopt;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(Limits::kMaxGrpcMessageBytes);
  args.SetMaxSendMessageSize(Limits::kMaxRequestBytes);
  gateway::GatewayOptions o;
  o.listen = flags_.http_listen;
  o.tls_cert = flags_.tls_cert;
  o.tls_key = flags_.tls_key;
  o.tls_client_ca = flags_.tls_client_ca;
  o.insecure = flags_.insecure_listen;
  o.channel = server_->InProcessChannel(args);
  o.token = aopts_.gateway_token;
  o.clock = clock_;
  o.max_body = Limits::kMaxRequestBytes;
  o.version = kMariposaVersion;
  auto g = gateway::Gateway::Start(std::move(o));
  if (!g.ok()) {
    LogError("cannot serve HTTP", {{"listen", flags_.http_listen}, {"error", g.status().ToString()}});
    std::cerr << "mariposad: " << g.status().message() << "\n";
    return 1;
  }
  gateway_ = *std::move(g);
  listeners_.push_back(absl::StrCat(gateway_->url(), " (HTTP API and console: tokens",
                                    flags_.tls_client_ca.empty() ? "" : ", client certificates",
                                    config_.tls ? "" : ", the loopback caller's uid for non-browsers", ")"));
  return std::nullopt;
}

// VMAPI's change feed: each sync reads only what changed (vm_feed.h).
void Daemon::Watch() {
  triton::VmFeedOptions fo;
  fo.vmapi_url = config_.endpoints.at("vmapi").url;
  fo.instance = flags_.node_name;
  fo.clock = clock_;
  fo.vmapi = vmapi_.get();
  convergence::Reconciler* r = reconciler_.get();
  feed_ = std::make_unique<triton::VmFeed>(
      fo, [r](std::vector<triton::Vm> vms) { r->VmsChanged(std::move(vms)); },
      [r](const triton::VmFeedStatus& st) { r->FeedChanged(st); });
  triton::VmFeedStatus connecting;
  connecting.why = "connecting";
  connecting.since = clock_->Now();
  r->FeedChanged(connecting);
  metrics_->AddCollectable(SampleCollector([f = feed_.get()] {
    triton::VmFeedStatus st = f->status();
    return std::vector<Sample>{
        {"mariposa_vmapi_feed_watching",
         "1 while VMAPI's change feed is watched; 0 while every sync lists VMAPI instead (see status).",
         st.watching ? 1.0 : 0.0, {}},
        {"mariposa_vmapi_feed_items_total", "Change items read from VMAPI's change feed.",
         static_cast<double>(st.items), {}, /*counter=*/true},
        {"mariposa_vmapi_feed_superseded_total",
         "Change items not read whole because a later item of the same VM arrived with them.",
         static_cast<double>(st.superseded), {}, /*counter=*/true},
        {"mariposa_vmapi_feed_drops_total", "Times a watch of VMAPI's change feed ended (each is followed by a listing).",
         static_cast<double>(st.reconnects), {}, /*counter=*/true}};
  }));
}

void Daemon::StartWork() {
  if (rollouts_) rollouts_->Start();
  if (reconciler_) {
    reconciler_->SetPaused(controller_->Get().mode == "readonly");
    reconciler_->Start();
    if (feed_) feed_->Start();
    if (leases_) {
      leases_->SetAddress(AdvertisedAddress(flags_.advertise, bound_, hostname_));
      leases_->Start();
    }
  }
  backups_->Start();
  std::vector<std::string> serving;
  for (const std::string& l : listeners_) serving.push_back(l.substr(0, l.find(' ')));
  WriteLockFile(lock_fd_, serving);
  if (flags_.embedded_health && health_) StartEmbeddedAgent();
}

// The embedded agent dials this process like any agent, with a token only
// this process knows (health-agent role, agent id "embedded"). Its own node
// only: every node runs one (each named "embedded").
void Daemon::StartEmbeddedAgent() {
  health::Agent::Options o;
  o.clock = clock_;
  o.id = "embedded";
  o.seeds = {locals_.empty() ? bound_ : locals_.back()->address()};
  o.discover = false;
  o.credentials.token = aopts_.internal_token;
  o.heartbeat = std::min(absl::Seconds(2), config_.health_lease / 3);
  embedded_ = std::make_unique<health::Agent>(o, health_metrics_.Hooks());
  health_metrics_.Watch(embedded_.get());
  embedded_->Start();
}

// Until SIGTERM or SIGINT. (Freed memory goes back to the system by
// jemalloc's own thread: malloc_conf in main.cc.)
void Daemon::Serve() {
  std::thread signals = OnSignal(sigs_, [this](int sig) {
    LogInfo("shutting down", {{"signal", strsignal(sig)}});
    for (auto& l : locals_) l->Stop();
    if (gateway_) gateway_->Stop();  // its event streams end with the gRPC ones
    events_->Stop();  // open `events -f` streams end now, not at the shutdown deadline
    if (embedded_) embedded_->Stop();
    if (health_agents_) health_agents_->Stop();
    server_->Shutdown(absl::ToChronoTime(clock_->Now() + absl::Seconds(10)));
  });
  server_->Wait();
  signals.join();
}

// In order: what wakes the reconciler, the reconciler, this node's leases
// (handed to the other nodes at once), then what the callbacks write to.
void Daemon::Stop() {
  if (rollouts_) rollouts_->Stop();
  if (peers_) peers_->Stop();
  if (wake_bus_) wake_bus_->Stop();
  if (feed_) feed_->Stop();
  if (reconciler_) reconciler_->Stop();
  if (leases_) leases_->Stop();
  latency_sink_.store(nullptr);
  backups_->Stop();
  health_metrics_.Watch(static_cast<const health::Agent*>(nullptr));
  embedded_.reset();
  metrics_->StopServing();
  health_agents_.reset();
  health_.reset();  // its callbacks write to the store
  store_.reset();
  close(lock_fd_);
  LogInfo("stopped");
}

}  // namespace mariposa
