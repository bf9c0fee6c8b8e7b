// mariposad: the Mariposa controller. Serves the gRPC API on a loopback
// address by default, keeps its state in SQLite under --data-dir, and holds an
// exclusive lock on that directory.
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <atomic>
#include <fstream>
#include <sstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <google/protobuf/stubs/logging.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "absl/strings/ascii.h"
#include "common/bounded.h"
#include "common/clock.h"
#include "common/config_file.h"
#include "common/log.h"
#include "common/process_metrics.h"
#include "daemon/grpc_metrics.h"
#include "daemon/request_parse.h"
#include "common/ids.h"
#include "convergence/metrics.h"
#include "convergence/observer.h"
#include "health/agent.h"
#include "health/agents_service.h"
#include "health/coordinator.h"
#include "health/events.h"
#include "health/metrics.h"
#include "projects/events_service.h"
#include "convergence/images_service.h"
#include "convergence/queue_service.h"
#include "convergence/reconciler.h"
#include "convergence/state_service.h"
#include "convergence/triton/http_clients.h"
#include "convergence/triton/vm_feed.h"
#include "auth/auth_service.h"
#include "auth/authorizer.h"
#include "auth/client.h"
#include "auth/listener.h"
#include "auth/sealer.h"
#include "daemon/admin_service.h"
#include "daemon/backups.h"
#include "daemon/controller_state.h"
#include "daemon/limited_server.h"
#include "mariposa/v1/admin.pb.h"
#include "projects/limits.h"
#include "projects/projects_service.h"
#include "projects/sql_store.h"
#include "projects/store_open.h"
#include "convergence/lease_keeper.h"
#include "convergence/triton/endpoints.h"
#include "daemon/config.h"
#include "daemon/wake_bus.h"

namespace {

// Apply's checks against Triton (PAPI, NAPI, IMGAPI) answer within this, or the
// apply goes on with a warning that they were not made (docs/cli.md).
constexpr absl::Duration kApplyCheckDeadline = absl::Seconds(5);


int Usage(const std::string& err) {
  std::cerr << "mariposad: " << err << "\n\n" << mariposa::DaemonUsage();
  return 2;
}

// Takes an exclusive lock on DIR/mariposad.lock and records our pid in it.
// Returns the fd (kept open for the life of the process) or -1 with a message.
// A standby that took the lock passes it on to its new image in
// MARIPOSAD_LOCK_FD (daemon/main.cc's RunStandby).
constexpr char kLockFdEnv[] = "MARIPOSAD_LOCK_FD";

// Rewrites the lock file: our pid, then what we serve (for a standby's
// `admin status` and refusals).
bool WriteLockFile(int fd, const std::vector<std::string>& listeners) {
  std::string text = absl::StrCat(getpid(), "\n");
  for (const std::string& l : listeners) absl::StrAppend(&text, l, "\n");
  return ftruncate(fd, 0) == 0 && pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
}

// The holder named by the lock file: pid, then listeners.
std::vector<std::string> ReadLockFile(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

int InheritedLock(const std::string& path) {
  const char* env = getenv(kLockFdEnv);
  if (env == nullptr) return -1;
  int fd = atoi(env);
  unsetenv(kLockFdEnv);
  struct stat a, b;
  if (fd <= 2 || fstat(fd, &a) != 0 || stat(path.c_str(), &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev ||
      flock(fd, LOCK_EX | LOCK_NB) != 0) {
    return -1;
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}

int LockDataDir(const std::string& dir, std::string* err) {
  std::string path = dir + "/mariposad.lock";
  if (int fd = InheritedLock(path); fd >= 0) {
    if (!WriteLockFile(fd, {})) {
      *err = absl::StrCat("cannot write lock file ", path, ": ", std::strerror(errno));
      close(fd);
      return -1;
    }
    return fd;
  }
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *err = absl::StrCat("cannot open lock file ", path, ": ", std::strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {0};
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    std::string holder = n > 0 ? std::string(absl::StripAsciiWhitespace(std::string(buf, n))) : "unknown";
    *err = absl::StrCat("data dir ", dir, " is in use by mariposad pid ", holder, " (lock ", path,
                        "); stop that process first or use another --data-dir");
    close(fd);
    return -1;
  }
  if (!WriteLockFile(fd, {})) {
    *err = absl::StrCat("cannot write lock file ", path, ": ", std::strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

// Waits signals in `sigs` on a thread of its own and calls `f` with the first.
std::thread OnSignal(sigset_t sigs, std::function<void(int)> f) {
  return std::thread([sigs, f = std::move(f)] {
    int sig = 0;
    sigwait(&sigs, &sig);
    f(sig);
  });
}

// A Unix socket for a limited server, unless its path is too long for one
// (then the TCP address alone serves; said in the log).
void AddSocket(std::vector<mariposa::LimitedListener>* at, const std::string& path) {
  if (path.empty()) return;
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    mariposa::LogInfo("no Unix socket: the path is too long; the TCP address serves", {{"socket", path}});
    return;
  }
  at->push_back({"unix:" + path, nullptr});
}

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
    auto text = mariposa::auth::ReadSmallFile(path, what);
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

std::string WhatTheLockSays(const std::vector<std::string>& holder) {
  if (holder.empty()) return "an unknown process";
  std::vector<std::string> rest(holder.begin() + 1, holder.end());
  return absl::StrCat("pid ", holder[0], rest.empty() ? " (not serving yet)" : absl::StrCat(" at ", absl::StrJoin(rest, ", ")));
}

// Where the Triton APIs are, for the log: one address, or each API's.
std::string TritonSummary(const std::map<std::string, mariposa::triton::ApiEndpoint>& endpoints) {
  std::set<std::string> urls;
  for (const auto& [api, e] : endpoints) urls.insert(e.url);
  if (urls.size() == 1) return *urls.begin();
  std::vector<std::string> each;
  for (const auto& [api, e] : endpoints) each.push_back(absl::StrCat(api, "=", e.url));
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

// --addr-file: the addresses, one per line, written whole (tmp + rename) so
// that a reader never sees half of it.
void WriteAddrFile(const std::string& path, const std::vector<std::string>& lines) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    for (const std::string& l : lines) f << l << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

// A mariposad serving only `admin status` and ping (standby, initfail) on
// `addresses` until a signal in `sigs` (returns) or `done` is notified.
struct Limited {
  std::unique_ptr<mariposa::LimitedServer> server;
  std::string error;
};
Limited StartLimited(const std::vector<mariposa::LimitedListener>& addresses, mariposa::LimitedState state,
                     const std::string& addr_file) {
  Limited out;
  auto server = mariposa::LimitedServer::Start(addresses, std::move(state));
  if (!server.ok()) {
    out.error = std::string(server.status().message());
    return out;
  }
  out.server = *std::move(server);
  if (!out.server->addresses().empty()) WriteAddrFile(addr_file, {out.server->addresses()[0]});
  return out;
}

// --standby: waits for the data dir's lock, answering as a standby; once it
// has it, becomes the active mariposad by executing itself again with the
// same arguments (same pid, the lock handed over in MARIPOSAD_LOCK_FD), so
// that the active starts exactly as any other. Returns only to exit.
int RunStandby(const std::string& data_dir, const std::vector<mariposa::LimitedListener>& addresses,
               const std::string& addr_file,
               const sigset_t& sigs, char** original_argv, absl::Time started) {
  std::string path = data_dir + "/mariposad.lock";
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    std::cerr << "mariposad: cannot open lock file " << path << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  mariposa::LimitedState st;
  st.mode = "standby";
  st.data_dir = data_dir;
  st.started_at = started;
  st.describe = [path](mariposa::v1::StatusResponse* resp) {
    std::vector<std::string> holder = ReadLockFile(path);
    int64_t pid = 0;
    if (!holder.empty() && absl::SimpleAtoi(holder[0], &pid)) resp->set_active_pid(pid);
    for (size_t i = 1; i < holder.size(); ++i) resp->add_active_listeners(holder[i]);
  };
  std::string me = absl::StrCat(getpid());
  st.unavailable = [path, data_dir, me] {
    return absl::StrCat("this mariposad (pid ", me, ") is the standby for ", data_dir, "; the active one is ",
                        WhatTheLockSays(ReadLockFile(path)),
                        ": send calls there. This one takes over, on the same addresses, when it stops");
  };
  Limited limited = StartLimited(addresses, std::move(st), addr_file);
  if (limited.server == nullptr) {
    std::cerr << "mariposad: standby cannot listen: " << limited.error << "\n";
    return 1;
  }
  mariposa::LogInfo("standby: another mariposad holds the data dir; waiting for its lock",
                    {{"data_dir", data_dir},
                     {"active", WhatTheLockSays(ReadLockFile(path))},
                     {"listeners", absl::StrJoin(limited.server->addresses(), ", ")},
                     {"pid", me}});
  absl::Mutex mu;
  int signal = 0;
  bool locked = false;
  std::thread waiter([&] {
    bool ok = flock(fd, LOCK_EX) == 0;
    absl::MutexLock l(&mu);
    locked = ok;
    if (!ok) signal = -1;
  });
  std::thread signals = OnSignal(sigs, [&](int sig) {
    absl::MutexLock l(&mu);
    signal = sig;
  });
  {
    absl::MutexLock l(&mu);
    auto woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return signal != 0 || locked; };
    mu.Await(absl::Condition(&woken));
  }
  limited.server->Shutdown();
  if (!locked) {
    mariposa::LogInfo("standby stopped", {{"signal", signal > 0 ? strsignal(signal) : "lock wait failed"}});
    // The other threads wait on the lock and on signals: exit without them.
    std::fflush(nullptr);
    _exit(signal > 0 ? 0 : 1);
  }
  mariposa::LogInfo("standby: the data dir is free; taking over", {{"data_dir", data_dir}, {"pid", me}});
  fcntl(fd, F_SETFD, 0);
  setenv(kLockFdEnv, absl::StrCat(fd).c_str(), 1);
  execv("/proc/self/exe", original_argv);
  mariposa::LogError("cannot take over: exec failed", {{"error", std::strerror(errno)}});
  std::fflush(nullptr);
  _exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  // libprotobuf's own messages (a request it could not parse) go to the
  // JSON log like every other line.
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel level, const char* file, int line,
                                     const std::string& message) {
    std::string msg = absl::StrCat("libprotobuf: ", message), source = absl::StrCat(file, ":", line);
    if (level >= google::protobuf::LOGLEVEL_ERROR) mariposa::LogError(msg, {{"source", source}});
    else mariposa::LogWarn(msg, {{"source", source}});
  });
  char** original_argv = argv;
  // Blocks of 1 MiB and more (request buffers, manifest texts) are mapped on
  // their own and go back to the system when freed; up to 32 MiB of freed
  // heap is kept for reuse, and requests above 64 KiB trim the rest when they
  // end (projects/request_guard.h), so memory taken by a large request is
  // returned. Threads keep their own arenas (fewer arenas halved the
  // create rate, P2); what the arenas hold free is given back once a second
  // (below).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 32 << 20);
  // Every flag once (daemon/config.h): the command line and the --config
  // file say the same, --help is written from the same table, and the
  // values are checked by one pure function.
  std::set<std::string> switch_names, valued_names;
  for (const mariposa::FlagSpec& s : mariposa::DaemonFlagSpecs()) {
    if (s.on) switch_names.insert(s.name);
    if (s.value) valued_names.insert(s.name);
  }
  int from_file = 0;
  auto expanded = mariposa::ExpandConfigFlag(argc, argv, switch_names, valued_names, &from_file);
  if (!expanded.ok()) return Usage(std::string(expanded.status().message()));
  auto parsed = mariposa::ParseDaemonArgs(std::vector<std::string>(expanded->begin() + 1, expanded->end()), from_file);
  if (!parsed.ok()) return Usage(std::string(parsed.status().message()));
  if (parsed->help) {
    std::cout << mariposa::DaemonUsage();
    return 0;
  }
  std::map<std::string, std::string> sapi;
  if (!parsed->api.sapi_metadata_file.empty()) {
    std::ifstream f(parsed->api.sapi_metadata_file);
    if (!f) return Usage(absl::StrCat("--sapi-metadata ", parsed->api.sapi_metadata_file, " cannot be read"));
    std::stringstream text;
    text << f.rdbuf();
    auto read = mariposa::triton::ParseSapiMetadata(text.str(), parsed->api.sapi_metadata_file);
    if (!read.ok()) return Usage(std::string(read.status().message()));
    sapi = *std::move(read);
  }
  char hostname[256] = {};
  gethostname(hostname, sizeof(hostname) - 1);
  auto checked = mariposa::CheckDaemonFlags(*std::move(parsed), sapi, hostname);
  if (!checked.ok()) return Usage(std::string(checked.status().message()));
  mariposa::DaemonConfig config = *std::move(checked);
  // The names the rest of main() reads.
  mariposa::DaemonFlags& flags = config.flags;
  std::string &listen = flags.listen, &data_dir = flags.data_dir, &addr_file = flags.addr_file;
  std::string &owner = flags.owner, &admin_owner = flags.admin_owner, &network = flags.network;
  std::string &metrics_listen = flags.metrics_listen, &standby_listen = flags.standby_listen;
  std::string &on_init_failure = flags.on_init_failure, &socket_path = flags.socket_path;
  std::string &tls_cert = flags.tls_cert, &tls_key = flags.tls_key, &tls_client_ca = flags.tls_client_ca;
  std::string &secrets_key = flags.secrets_key, &backup_dir = flags.backup_dir;
  std::string &image_source_url = flags.image_source_url, &image_channel = flags.image_channel;
  std::string &store_spec = flags.store_spec, &node_name = flags.node_name, &advertise = flags.advertise;
  const bool embedded_health = flags.embedded_health, health_loopback = flags.health_loopback;
  const bool remote_agents = flags.remote_agents, init = flags.init, standby = flags.standby;
  const bool accept_store_loss = flags.accept_store_loss;
  const absl::Duration resync_every = config.resync, health_lease = config.health_lease;
  const absl::Duration backoff_cap = config.backoff_cap, backup_interval = config.backup_interval;
  const absl::Duration lease_ttl = config.lease_ttl;
  const int max_jobs_n = config.max_jobs, max_jobs_project_n = config.max_jobs_per_project;
  const int max_agents = config.max_agents, backup_keep = config.backup_keep;
  const std::map<std::string, mariposa::triton::ApiEndpoint>& endpoints = config.endpoints;
  const std::string& triton_url = config.triton_url;
  const bool tls = config.tls, postgres = config.postgres;

  // Signals are taken by one thread with sigwait; block them everywhere first.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  // Everything mariposad creates is its own alone: the store and its WAL,
  // the secrets key, backups, the lock.
  umask(077);
  if (mkdir(data_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    mariposa::LogError("cannot create data dir", {{"data_dir", data_dir}, {"error", std::strerror(errno)}});
    return 1;
  }
  // A data dir from before: tighten what others could read.
  chmod(data_dir.c_str(), 0700);
  for (const char* f : {"/mariposa.db", "/mariposa.db-wal", "/mariposa.db-shm", "/mariposad.lock"}) {
    chmod((data_dir + f).c_str(), 0600);
  }
  if (secrets_key.empty()) secrets_key = data_dir + "/secrets.key";
  if (backup_dir.empty()) backup_dir = data_dir + "/backups";
  bool default_socket = socket_path == "default";
  if (default_socket) socket_path = data_dir + "/mariposad.sock";
  mariposa::RealClock* clock = mariposa::RealClock::Get();
  mariposa::SetLogClock(clock);
  absl::Time started = clock->Now();
  std::string lock_err;
  int lock_fd = LockDataDir(data_dir, &lock_err);
  if (lock_fd < 0 && standby) {
    std::vector<mariposa::LimitedListener> at;
    if (!standby_listen.empty()) at.push_back({standby_listen, nullptr});
    AddSocket(&at, socket_path == "none" ? "" : data_dir + "/mariposad-standby.sock");
    return RunStandby(data_dir, at, addr_file, sigs, original_argv, started);
  }
  if (lock_fd < 0) {
    mariposa::LogError(lock_err, {{"data_dir", data_dir}});
    std::cerr << "mariposad: " << lock_err << "\n";
    return 1;
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> tls_credentials = nullptr;
  if (tls) tls_credentials = ServerTls(tls_cert, tls_key, tls_client_ca);
  // A failure to start: exit 1, or (--on-init-failure serve) stay up in
  // state initfail, answering `admin status` with it on --listen and the
  // socket until stopped.
  auto init_failed = [&](const std::string& error, const std::string& reason, const std::string& fix,
                         const std::string& impact) {
    std::cerr << "mariposad: cannot start\nError: " << error << "\nReason: " << reason << "\nFix: " << fix
              << "\nImpact: " << impact << "\n";
    if (on_init_failure != "serve") return 1;
    mariposa::v1::Problem problem;
    problem.set_kind("initfail");
    problem.set_error(error);
    problem.set_reason(reason);
    problem.set_fix(fix);
    problem.set_impact(impact);
    mariposa::LimitedState st;
    st.mode = "initfail";
    st.data_dir = data_dir;
    st.started_at = started;
    st.describe = [problem, secrets_key, backup_dir](mariposa::v1::StatusResponse* resp) {
      *resp->add_problems() = problem;
      resp->set_secrets_key(secrets_key);
      resp->set_backup_dir(backup_dir);
    };
    st.unavailable = [error, fix] {
      return absl::StrCat("mariposad failed to start (initfail): ", error, ". Fix: ", fix,
                          " (`mariposa admin status` says more)");
    };
    // --listen with its TLS, or not at all when the TLS files are what
    // failed (never in clear instead).
    std::vector<mariposa::LimitedListener> at;
    if (!tls || tls_credentials.ok()) at.push_back({listen, tls ? *tls_credentials : nullptr});
    if (socket_path != "none") {
      unlink(socket_path.c_str());  // a stale socket: the lock is ours
      AddSocket(&at, socket_path);
    }
    Limited limited = StartLimited(at, std::move(st), addr_file);
    if (limited.server == nullptr) {
      std::cerr << "mariposad: cannot listen in initfail either: " << limited.error << "\n";
      return 1;
    }
    mariposa::LogError("initfail: not serving but `admin status`", {{"error", error},
                                                                   {"listeners", absl::StrJoin(limited.server->addresses(), ", ")}});
    WriteLockFile(lock_fd, limited.server->addresses());
    absl::Notification stop;
    std::thread signals = OnSignal(sigs, [&](int) { stop.Notify(); });
    stop.WaitForNotification();
    signals.join();
    limited.server->Shutdown();
    return 1;
  };
  if (!tls_credentials.ok()) {
    mariposa::LogError("cannot read the TLS files; not serving", {{"error", tls_credentials.status().ToString()}});
    return init_failed(absl::StrCat("cannot serve TLS on ", listen), std::string(tls_credentials.status().message()),
                       "make --tls-cert, --tls-key (and --tls-client-ca) readable by mariposad (docs/security.md), "
                       "or point them at the right files, then restart",
                       "mariposad does not serve on --listen; nothing is read, changed or converged; running "
                       "instances are not touched");
  }
  // Named in logs and `admin status`: the file, or the database once connected.
  std::string store_path = postgres ? "PostgreSQL (--store)" : data_dir + "/mariposa.db";
  mariposa::StoreRefusal refusal;
  auto store = postgres ? mariposa::OpenPostgresStore(store_spec, clock, &refusal)
                        : mariposa::OpenStore(data_dir, init, clock, &refusal, backup_dir, accept_store_loss);
  if (store.ok() && postgres) store_path = (*store)->where();
  if (!store.ok()) {
    mariposa::LogError("store refused; not serving", {{"path", store_path},
                                                      {"error", refusal.error},
                                                      {"reason", refusal.reason},
                                                      {"fix", refusal.fix},
                                                      {"impact", refusal.impact}});
    return init_failed(refusal.error, refusal.reason, refusal.fix, refusal.impact);
  }

  // Secrets: sealed with the key file; anything plain or under an older key
  // (an interrupted rotation) is sealed with the current key now.
  auto sealer = mariposa::auth::Sealer::Open(secrets_key);
  if (!sealer.ok()) {
    mariposa::LogError("cannot load the secrets key; not serving", {{"path", secrets_key},
                                                                  {"error", sealer.status().ToString()}});
    return init_failed(absl::StrCat("cannot load the secrets key ", secrets_key), std::string(sealer.status().message()),
                       "restore the key file that sealed this store's secrets (0600, owned by mariposad), or "
                       "point --secrets-key at it",
                       "mariposad does not serve: secret meta values cannot be opened, so nothing is read, "
                       "changed or converged; running instances are not touched");
  }
  (*store)->SetSecretCodec(sealer->get());
  if (postgres) {
    // Nodes that share the store must share the key.
    if (absl::Status agreed = mariposa::auth::AgreeOnSecretsKey(store->get(), **sealer); !agreed.ok()) {
      mariposa::LogError("this node's secrets key is not the other nodes'; not serving",
                         {{"error", agreed.ToString()}});
      return init_failed("this node's secrets key is not the one the store's secrets are sealed with",
                         std::string(agreed.message()),
                         "copy --secrets-key from a node that runs (0600, owned by mariposad), then start again "
                         "(docs/operations.md, \"Several nodes\")",
                         "this node does not serve; the other nodes are not affected");
    }
  }
  if (auto n = mariposa::auth::ResealAndFinish(store->get(), sealer->get()); !n.ok()) {
    mariposa::LogError("cannot seal the store's secrets; not serving", {{"error", n.status().ToString()}});
    return init_failed("cannot seal the store's secrets with the current key", std::string(n.status().message()),
                       "check the key file and the store (`mariposa admin status` of a running copy, "
                       "docs/operations.md); restore a backup taken with this key",
                       "mariposad does not serve until the secrets are sealed");
  } else if (*n > 0) {
    mariposa::LogInfo("secrets sealed with the current key", {{"count", absl::StrCat(*n)},
                                                              {"key", (*sealer)->current_key_id()}});
  }
  // active or readonly (set by an operator, kept in the store).
  mariposa::ControllerState controller(store->get(), clock);
  if (absl::Status s = controller.Load(); !s.ok()) {
    return init_failed("cannot read the controller's state from the store", std::string(s.message()),
                       "restore a backup (docs/operations.md, \"Backup and restore\")",
                       "mariposad does not serve");
  }
  mariposa::auth::Authorizer::Options aopts;
  aopts.store = store->get();
  aopts.gate = [&controller](const mariposa::auth::MethodRule& rule) { return controller.Gate(rule); };
  aopts.clock = clock;
  aopts.daemon_uid = geteuid();
  if (embedded_health) aopts.internal_token = mariposa::auth::NewTokenSecret();
  mariposa::auth::Authorizer authorizer(aopts);
  mariposa::SetAccess(&authorizer);
  mariposa::auth::AuthService auth_service(store->get(), &authorizer, sealer->get(), clock);

  mariposa::ProjectsService projects(store->get(), clock);
  mariposa::AdminService admin(store->get(), data_dir, store_path, started);
  admin.set_backup_dir(backup_dir);
  admin.set_controller(&controller);
  mariposa::BackupScheduler backups(store->get(), clock, {backup_dir, backup_interval, backup_keep});
  admin.set_backups(&backups);
  mariposa::convergence::QueueService queue(store->get());
  mariposa::convergence::ControllerMetrics metrics(store->get());
  metrics.AddCollectable(mariposa::ProcessCollector());
  metrics.AddCollectable(mariposa::BuildInfoCollector("mariposad", {{"grpc", grpc::Version()}}));
  metrics.AddCollectable(mariposa::SampleCollector([&backups, &controller] {
    std::vector<mariposa::Sample> out = backups.Metrics();
    std::string mode = controller.Get().mode;
    for (const char* m : {"active", "readonly"}) {
      out.push_back({"mariposa_controller_state", "1 for the state mariposad is in (active, readonly).",
                     mode == m ? 1.0 : 0.0, {{"state", m}}});
    }
    return out;
  }));
  if (!metrics_listen.empty()) {
    if (auto st = metrics.Serve(metrics_listen); !st.ok()) {
      mariposa::LogError("cannot serve metrics", {{"listen", metrics_listen}, {"error", st.ToString()}});
      std::cerr << "mariposad: " << st.message() << "\n";
      return 1;
    }
  }
  // Every Triton call's latency also reaches the reconciler (once it is
  // made): a stale `status` names the API that is slow.
  std::atomic<mariposa::convergence::Reconciler*> latency_sink{nullptr};
  auto hook = [&metrics, &latency_sink](const mariposa::triton::RequestRecord& r) {
    metrics.TritonRequest(r);
    if (auto* sink = latency_sink.load()) sink->NoteLatency(absl::AsciiStrToUpper(r.api), r.latency);
  };
  std::unique_ptr<mariposa::triton::HttpVmapiClient> vmapi;
  std::unique_ptr<mariposa::triton::HttpImgapiClient> imgapi, image_source;
  std::unique_ptr<mariposa::convergence::ImagesService> images;
  std::unique_ptr<mariposa::triton::HttpCnapiClient> cnapi;
  std::unique_ptr<mariposa::triton::HttpPapiClient> papi;
  std::unique_ptr<mariposa::triton::HttpNapiClient> napi;
  std::unique_ptr<mariposa::convergence::Reconciler> reconciler;
  // Several nodes on PostgreSQL: the project leases this node holds.
  std::unique_ptr<mariposa::convergence::LeaseKeeper> leases;
  std::unique_ptr<mariposa::WakeBus> wake_bus;
  // After the reconciler: its functions still running are waited for first.
  mariposa::BoundedRunner bounded(clock);
  // Health: the coordinator shards the services' checks over the agents that
  // connect (mariposa-health, or the embedded one) and turns their reports
  // into events; the reconciler reads instance health from it.
  std::unique_ptr<mariposa::health::Coordinator> health;
  std::unique_ptr<mariposa::health::HealthAgentsService> health_agents;
  mariposa::health::HealthMetrics health_metrics;
  std::atomic<mariposa::convergence::Reconciler*> wake_target{nullptr};
  if (!triton_url.empty() && (embedded_health || remote_agents)) {
    auto* st = store->get();
    health = std::make_unique<mariposa::health::Coordinator>(
        clock, health_lease, [st, &wake_target](const std::vector<mariposa::health::HealthChange>& changes) {
          // Only changes are written (HEALTH.md), an agent message's in one
          // transaction, before the controller acts on them.
          if (auto w = mariposa::health::WriteHealthEvents(st, changes); !w.ok()) {
            mariposa::LogError("cannot write health events", {{"error", w.ToString()}});
          }
          // A health change wakes only the projects it belongs to.
          if (auto* r = wake_target.load()) {
            std::set<std::string> projects;
            for (const auto& c : changes) projects.insert(c.group);
            for (const std::string& p : projects) r->WakeProject(p);
          }
        });
    health_agents =
        std::make_unique<mariposa::health::HealthAgentsService>(health.get(), health_lease, clock, max_agents);
    health_metrics.Watch(health.get());
    metrics.AddCollectable(health_metrics.collectable());
  }
  if (!triton_url.empty()) {
    // Each API at its own address, with its own timeout and connections.
    auto http_for = [&endpoints](const std::string& api) {
      mariposa::triton::HttpOptions o;
      o.base_url = endpoints.at(api).url;
      o.timeout = endpoints.at(api).timeout;
      o.max_connections = endpoints.at(api).connections;
      return o;
    };
    mariposa::triton::HttpOptions http = http_for("imgapi");
    vmapi = std::make_unique<mariposa::triton::HttpVmapiClient>(http_for("vmapi"), clock, hook);
    imgapi = std::make_unique<mariposa::triton::HttpImgapiClient>(http, clock, hook, endpoints.at("wfapi").url);
    cnapi = std::make_unique<mariposa::triton::HttpCnapiClient>(http_for("cnapi"), clock, hook);
    papi = std::make_unique<mariposa::triton::HttpPapiClient>(http_for("papi"), clock, hook);
    napi = std::make_unique<mariposa::triton::HttpNapiClient>(http_for("napi"), clock, hook);
    mariposa::convergence::ReconcilerOptions ropts;
    ropts.owner_uuid = owner;
    ropts.admin_owner_uuid = admin_owner;
    ropts.network_uuid = network;
    ropts.resync = resync_every;
    ropts.relist = config.relist;
    ropts.stale_after = 2 * resync_every + absl::Seconds(10);
    for (const auto& [api, e] : endpoints) ropts.api_urls[api] = e.url;
    ropts.max_jobs = max_jobs_n;
    ropts.max_jobs_per_project = max_jobs_project_n;
    ropts.metrics = &metrics;
    ropts.cnapi = cnapi.get();
    ropts.backoff_cap = backoff_cap;
    if (!image_source_url.empty()) {
      mariposa::triton::HttpOptions src = http;
      src.base_url = image_source_url;
      image_source = std::make_unique<mariposa::triton::HttpImgapiClient>(src, clock, hook);
      ropts.image_source = image_source.get();
      ropts.image_source_url = image_source_url;
      ropts.image_channel = image_channel;
    }
    ropts.papi = papi.get();
    ropts.napi = napi.get();
    ropts.health = health.get();
    ropts.health_loopback = health_loopback;
    if (postgres) {
      mariposa::convergence::LeaseKeeperOptions lo;
      lo.node = node_name;
      lo.policy.ttl = lease_ttl;
      lo.policy.renew_before = lease_ttl / 2;
      lo.policy.node_ttl = lease_ttl;
      lo.policy.safety = lease_ttl / 5;
      lo.tick = std::min(absl::Seconds(1), lease_ttl / 10);
      // readonly set through another node, even when its wake-up was missed.
      lo.after_round = [&controller] { controller.Reload().IgnoreError(); };
      leases = std::make_unique<mariposa::convergence::LeaseKeeper>(
          store->get(), clock, lo, [&wake_target](const std::string& project) {
            if (auto* r = wake_target.load()) r->WakeProject(project);
          });
      ropts.lease = [k = leases.get()](const std::string& project) { return k->Holds(project); };
      // An import this node saw end: the others forget their resolved images.
      ropts.images_changed = [&wake_bus] {
        if (wake_bus != nullptr) wake_bus->Publish(mariposa::WakeBus::kImages);
      };
      admin.set_nodes([k = leases.get()] {
        return mariposa::AdminService::NodesView{k->node(), k->policy().ttl, k->LastState(), k->LastError()};
      });
      // Health agents link to every live node (each assigns its own
      // projects' checks), learnt from whichever node they reach.
      if (health_agents) {
        health_agents->SetDirectory([k = leases.get()] {
          return mariposa::health::HealthAgentsService::Directory{k->node(), k->LiveAddresses()};
        });
      }
    }
    ropts.rollback = [&projects](const std::string& project, const std::string& to, const std::string& expected,
                                 const std::string& message) {
      return projects.RollbackTo(project, to, expected, "mariposad (auto_rollback)", message);
    };
    reconciler = std::make_unique<mariposa::convergence::Reconciler>(store->get(), vmapi.get(), imgapi.get(), clock,
                                                                    ropts);
    wake_target = reconciler.get();
    latency_sink.store(reconciler.get());
    // Set before the wake-up bus can call Reload.
    controller.set_on_change([r = reconciler.get(), &wake_bus](const mariposa::ControllerMode& m) {
      r->SetPaused(m.mode == "readonly");
      if (wake_bus != nullptr) wake_bus->Publish();  // the other nodes read it again
    });
    if (postgres) {
      // A change through this node wakes every node's reconciler at once.
      // What another node changed: its readonly state too.
      wake_bus = std::make_unique<mariposa::WakeBus>(
          store_spec, clock, [r = reconciler.get(), &controller](const std::set<std::string>& what) {
            if (absl::Status s = controller.Reload(); !s.ok()) {
              mariposa::LogWarn("cannot read the controller's state", {{"error", s.ToString()}});
            }
            // An import ended on another node (or anything, after a lost
            // connection): what this node resolved may be stale.
            if (what.count(mariposa::WakeBus::kImages) || what.count(mariposa::WakeBus::kAnything)) {
              r->ForgetImages();
            }
            r->Wake();
          });
      if (absl::Status s = wake_bus->Start(); !s.ok()) {
        mariposa::LogError("cannot listen for the other nodes' changes; they are seen at each --resync",
                           {{"error", s.ToString()}});
        wake_bus.reset();
      }
    }
    auto changed = [r = reconciler.get(), bus = wake_bus.get()] {
      r->Wake();
      if (bus != nullptr) bus->Publish();
    };
    projects.set_on_change(changed);
    // Apply's checks against PAPI, NAPI and IMGAPI answer within
    // kApplyCheckDeadline; past it the apply goes on with the documented
    // "were not checked" warning instead of waiting on a slow Triton.
    projects.set_catalog_check([r = reconciler.get(), &bounded](const mariposa::Manifest& m,
                                                                 const std::string& filename,
                                                                 const std::string& owner) {
      return bounded.Run<std::vector<mariposa::ManifestDiagnostic>>(
          [r, m, filename, owner] { return r->CheckManifest(m, filename, owner); }, kApplyCheckDeadline,
          "PAPI, NAPI and IMGAPI (apply's check of packages, networks and images)");
    });
    // Projects made before accounts were recorded are --owner's: recorded
    // now, so that a later --owner does not take them to another account.
    projects.set_default_owner(owner);
    auto claimed = (*store)->ClaimUnownedProjects(owner);
    if (!claimed.ok()) {
      mariposa::LogError("cannot record --owner as the account of older projects; not serving",
                         {{"error", claimed.status().ToString()}});
      return init_failed("cannot record --owner as the account of older projects",
                         std::string(claimed.status().message()), "check the store's disk (space, permissions)",
                         "mariposad does not serve");
    }
    if (*claimed > 0) {
      mariposa::LogInfo("projects without an account recorded as --owner's",
                        {{"count", absl::StrCat(*claimed)}, {"owner", owner}});
    }
    projects.set_image_planner([r = reconciler.get(), &bounded](const std::string& project_uuid,
                                                                 const mariposa::Manifest& m,
                                                                 const std::set<std::string>& services) {
      return bounded.Run<std::map<std::string, mariposa::ImagePlan>>(
          [r, project_uuid, m, services] { return r->PlanImages(project_uuid, m, services); }, kApplyCheckDeadline,
          "IMGAPI, VMAPI and CNAPI (the image plan)");
    });
    admin.set_problems([r = reconciler.get()](mariposa::v1::StatusResponse* resp) {
      for (const auto& [project, list] : r->LastProblems()) {
        for (const auto& p : list) {
          mariposa::v1::Problem* out = resp->add_problems();
          mariposa::convergence::ProblemToProto(p, out);
          out->set_project(project);
        }
      }
    });
    projects.set_instance_counter([r = reconciler.get()](const std::string& project_uuid) {
      return r->CountInstances(project_uuid);
    });
    queue.set_on_change(changed);
    mariposa::convergence::ImagesServiceOptions iopts;
    iopts.imgapi = imgapi.get();
    iopts.source = image_source.get();
    iopts.source_url = image_source_url;
    iopts.channel = image_channel;
    iopts.resolve = [r = reconciler.get()](const std::string& ref) { return r->LookUpImage(ref); };
    iopts.on_change = [r = reconciler.get(), bus = wake_bus.get()] {
      r->ForgetImages();
      r->Wake();
      if (bus != nullptr) bus->Publish(mariposa::WakeBus::kImages);
    };
    images = std::make_unique<mariposa::convergence::ImagesService>(store->get(), iopts);
  }
  mariposa::convergence::StateService state(store->get(), vmapi.get(), reconciler.get());
  state.set_controller_problems([&controller](mariposa::v1::GetStateResponse* resp) {
    mariposa::v1::Problem p;
    if (mariposa::ModeProblem(controller.Get(), &p)) *resp->add_problems() = std::move(p);
  });
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  // grpc.health.v1.Health: SERVING while mariposad serves (load balancers,
  // grpc_health_probe, systemd watchdogs); like reflection it answers anyone.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  // Local addresses are accepted by mariposad itself (to learn the caller's
  // uid) and handed to gRPC; TLS and --insecure-listen ones by gRPC.
  std::vector<std::unique_ptr<mariposa::auth::LocalListener>> locals;
  std::vector<std::string> listeners;
  std::vector<mariposa::v1::Problem> standing;
  std::string bound;
  if (!tls && mariposa::auth::IsLocalAddress(listen)) {
    auto l = mariposa::auth::LocalListener::Bind(listen);
    if (!l.ok()) {
      mariposa::LogError("cannot listen", {{"listen", listen}, {"error", l.status().ToString()}});
      std::cerr << "mariposad: " << l.status().message() << "\n";
      return 1;
    }
    bound = (*l)->address();
    listeners.push_back(absl::StrCat(bound, absl::StartsWith(bound, "unix:") ? " (peer credentials)"
                                                                              : " (loopback: the caller's uid, or a token)"));
    locals.push_back(*std::move(l));
  } else if (tls) {
    builder.AddListeningPort(listen, *tls_credentials, &port);
  } else {
    builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
    mariposa::LogError("listening without TLS on a non-loopback address (--insecure-listen): tokens and secrets "
                       "cross the network in clear", {{"listen", listen}});
    mariposa::v1::Problem p;
    p.set_kind("insecure-listen");
    p.set_error(absl::StrCat("mariposad listens on ", listen, " without TLS (--insecure-listen)"));
    p.set_reason("tokens, manifests and secrets cross the network in clear; anyone on the path can read them");
    p.set_fix("restart with --tls-cert and --tls-key (docs/security.md), or listen on 127.0.0.1");
    p.set_impact("callers there have no identity but a token; whoever reads a token acts with its role");
    standing.push_back(p);
  }
  if (socket_path != "none") {
    auto l = mariposa::auth::LocalListener::Bind("unix:" + socket_path);
    if (!l.ok()) {
      if (!default_socket) {
        mariposa::LogError("cannot listen", {{"socket", socket_path}, {"error", l.status().ToString()}});
        std::cerr << "mariposad: " << l.status().message() << "\n";
        return 1;
      }
      mariposa::LogInfo("no Unix socket: the default path cannot be used; give --socket PATH",
                        {{"socket", socket_path}, {"error", l.status().ToString()}});
    } else {
      listeners.push_back(absl::StrCat((*l)->address(), " (peer credentials)"));
      locals.push_back(*std::move(l));
    }
  }
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(authorizer.NewInterceptorFactory());
  // First, so that the metrics count what the client is told.
  interceptors.push_back(mariposa::NewUnparsableRequestInterceptorFactory());
  interceptors.push_back(mariposa::NewGrpcMetricsInterceptorFactory(&metrics, clock));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  // Requests: a manifest at its limit with room for the other fields; a
  // larger one is refused by gRPC before it is buffered whole. Replies: the
  // largest the limits allow (docs/manifest.md, "Limits").
  builder.SetMaxReceiveMessageSize(mariposa::Limits::kMaxRequestBytes);
  builder.SetMaxSendMessageSize(mariposa::Limits::kMaxGrpcMessageBytes);
  builder.RegisterService(&projects);
  builder.RegisterService(&admin);
  builder.RegisterService(&queue);
  if (images == nullptr) images = std::make_unique<mariposa::convergence::ImagesService>(store->get(), mariposa::convergence::ImagesServiceOptions{});
  builder.RegisterService(images.get());
  builder.RegisterService(&state);
  builder.RegisterService(&auth_service);
  mariposa::EventsService events(store->get(), clock);
  builder.RegisterService(&events);
  if (health_agents) builder.RegisterService(health_agents.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    mariposa::LogError("cannot listen", {{"listen", listen}});
    return 1;
  }
  if (bound.empty()) {
    bound = absl::StrCat(listen.substr(0, listen.rfind(':')), ":", port);
    listeners.insert(listeners.begin(), absl::StrCat(bound, tls ? (tls_client_ca.empty() ? " (TLS: tokens)"
                                                                                         : " (TLS: client certificates or tokens)")
                                                                : " (no TLS: tokens only, in clear)"));
  }
  for (auto& l : locals) l->Start(server.get(), &authorizer, clock);
  admin.set_facts(listeners, absl::StrCat(secrets_key, " (key ", (*sealer)->current_key_id(), ")"), standing);
  {
    std::vector<std::string> addrs = {bound};
    if (!metrics_listen.empty()) {
      addrs.push_back(absl::StrCat(metrics_listen.substr(0, metrics_listen.rfind(':')), ":", metrics.port()));
    }
    WriteAddrFile(addr_file, addrs);
  }
  std::unique_ptr<mariposa::triton::VmFeed> feed;
  if (reconciler && config.watch) {
    // VMAPI's change feed: each sync reads only what changed (vm_feed.h).
    mariposa::triton::VmFeedOptions fo;
    fo.vmapi_url = config.endpoints.at("vmapi").url;
    fo.instance = node_name;
    fo.clock = clock;
    fo.vmapi = vmapi.get();
    auto* r = reconciler.get();
    feed = std::make_unique<mariposa::triton::VmFeed>(
        fo, [r](std::vector<mariposa::triton::Vm> vms) { r->VmsChanged(std::move(vms)); },
        [r](const mariposa::triton::VmFeedStatus& st) { r->FeedChanged(st); });
    mariposa::triton::VmFeedStatus connecting;
    connecting.why = "connecting";
    connecting.since = clock->Now();
    reconciler->FeedChanged(connecting);
    metrics.AddCollectable(mariposa::SampleCollector([f = feed.get()] {
      mariposa::triton::VmFeedStatus st = f->status();
      return std::vector<mariposa::Sample>{
          {"mariposa_vmapi_feed_watching",
           "1 while VMAPI's change feed is watched; 0 while every sync lists VMAPI instead (see status).",
           st.watching ? 1.0 : 0.0, {}},
          {"mariposa_vmapi_feed_items_total", "Change items read from VMAPI's change feed.",
           static_cast<double>(st.items), {}, /*counter=*/true},
          {"mariposa_vmapi_feed_drops_total", "Times a watch of VMAPI's change feed ended (each is followed by a listing).",
           static_cast<double>(st.reconnects), {}, /*counter=*/true}};
    }));
  }
  if (reconciler) {
    reconciler->SetPaused(controller.Get().mode == "readonly");
    reconciler->Start();
    if (feed) feed->Start();
    if (leases) {
      leases->SetAddress(AdvertisedAddress(advertise, bound, hostname));
      leases->Start();
    }
  }
  backups.Start();
  {
    std::vector<std::string> serving;
    for (const std::string& l : listeners) serving.push_back(l.substr(0, l.find(' ')));
    WriteLockFile(lock_fd, serving);
  }
  std::unique_ptr<mariposa::health::Agent> embedded;
  if (embedded_health && health) {
    mariposa::health::Agent::Options o;
    o.clock = clock;
    o.id = "embedded";
    // The embedded agent dials this process like any agent, with a token
    // only this process knows (health-agent role, agent id "embedded").
    // Its own node only: every node runs one (each named "embedded").
    o.seeds = {locals.empty() ? bound : locals.back()->address()};
    o.discover = false;
    o.credentials.token = aopts.internal_token;
    o.heartbeat = std::min(absl::Seconds(2), health_lease / 3);
    embedded = std::make_unique<mariposa::health::Agent>(o, health_metrics.Hooks());
    health_metrics.Watch(embedded.get());
    embedded->Start();
  }
  mariposa::LogInfo("serving", {{"addr", bound},
                                {"listeners", absl::StrJoin(listeners, "; ")},
                                {"triton", triton_url.empty() ? "none (goal state only)" : TritonSummary(endpoints)},
                                {"data_dir", data_dir},
                                {"metrics", metrics_listen.empty() ? "off" : absl::StrCat(metrics.port())},
                                {"schema", absl::StrCat((*store)->SchemaVersion())},
                                {"pid", absl::StrCat(getpid())}});

  // glibc keeps the pages a thread's arena used at its peak: with 20,000
  // instances that held 270 MiB resident for 60 MiB of live heap, and
  // 500 MiB at 100,000 (P9). Trimming every second returns them.
  absl::Notification stopping;
  std::thread trimmer([&] {
    while (!stopping.WaitForNotificationWithTimeout(absl::Seconds(1))) malloc_trim(0);
  });
  std::thread signals = OnSignal(sigs, [&](int sig) {
    mariposa::LogInfo("shutting down", {{"signal", strsignal(sig)}});
    for (auto& l : locals) l->Stop();
    events.Stop();  // open `events -f` streams end now, not at the shutdown deadline
    if (embedded) embedded->Stop();
    if (health_agents) health_agents->Stop();
    server->Shutdown(absl::ToChronoTime(clock->Now() + absl::Seconds(10)));
  });
  server->Wait();
  signals.join();
  stopping.Notify();
  trimmer.join();
  if (wake_bus) wake_bus->Stop();
  if (feed) feed->Stop();
  if (reconciler) reconciler->Stop();
  if (leases) leases->Stop();  // hands its projects to the other nodes at once
  latency_sink.store(nullptr);
  backups.Stop();
  health_metrics.Watch(static_cast<const mariposa::health::Agent*>(nullptr));
  embedded.reset();
  metrics.StopServing();
  health_agents.reset();
  health.reset();  // its callbacks write to the store
  store->reset();
  close(lock_fd);
  mariposa::LogInfo("stopped");
  return 0;
}
