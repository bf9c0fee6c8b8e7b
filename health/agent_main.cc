// mariposa-health: a health agent. Registers with mariposad, runs the checks
// it is assigned (its share, by rendezvous hashing over the live agents),
// streams state changes back, serves /metrics and HealthAgent.ListChecks.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/flags.h"
#include "common/log.h"
#include "health/agent.h"
#include "health/metrics.h"
#include "health/wire.h"
#include "mariposa/v1/health.grpc.pb.h"

namespace {

constexpr char kUsage[] = R"(usage: mariposa-health --mariposad ADDR[,ADDR…] [--id ID] [--network NET[,NET…]]...
                       [--listen ADDR] [--metrics-listen ADDR] [--addr-file FILE] [--heartbeat DUR]
                       [--token-file FILE] [--ca FILE [--cert FILE --key FILE]]

Runs the health checks mariposad assigns to this agent.

  --mariposad ADDR,…   mariposad's gRPC address (host:port or unix:PATH). With
                       several nodes on one PostgreSQL store any node's will do
                       (or a few, in case one is down): the agent learns the
                       live nodes from it and keeps a stream to each, since
                       each node assigns the checks of the projects it runs
  --id ID              this agent's stable id (default: the host name); an agent
                       that comes back with the same id gets its checks back
  --network UUID,…     networks (uuids) this agent can reach; default: all
  --listen ADDR        gRPC HealthAgent.ListChecks (default 127.0.0.1:0)
  --metrics-listen ADDR  /metrics (default: off)
  --addr-file FILE     write the bound gRPC address (and the metrics address on
                       a second line) once serving
  --heartbeat DUR      counters/heartbeat period (default 2s; at most a third of
                       mariposad's lease)
  --token-file FILE    the agent's token (role health-agent, named after --id:
                       `mariposa admin token create --name ID --role health-agent`);
                       $MARIPOSA_TOKEN is read when this is not given. Never on
                       the command line, where `ps` shows it
  --ca FILE            mariposad's CA (PEM): connect with TLS
  --cert FILE, --key FILE
                       a client certificate (CN = the agent's id) instead of a token

mariposad refuses an agent without a credential with the health-agent role, and
an agent whose --id is not its credential's name. On mariposad's own Unix socket
an agent run by root or mariposad's user needs neither.

Stops gracefully on SIGTERM or SIGINT.
)";

int Usage(const std::string& err) {
  std::cerr << "mariposa-health: " << err << "\n\n" << kUsage;
  return 2;
}

class ListChecksService final : public mariposa::v1::HealthAgent::Service {
 public:
  explicit ListChecksService(const mariposa::health::Agent* agent) : agent_(agent) {}
  grpc::Status ListChecks(grpc::ServerContext*, const mariposa::v1::ListChecksRequest* req,
                          mariposa::v1::ListChecksResponse* resp) override {
    resp->set_agent_id(agent_->id());
    for (const auto& c : agent_->monitor().Checks(req->group())) {
      mariposa::v1::AgentCheck* out = resp->add_checks();
      out->mutable_key()->set_group(c.group);
      out->mutable_key()->set_instance(c.instance);
      out->mutable_key()->set_check(c.check);
      out->set_type(c.type);
      out->set_target(absl::StrCat(c.address, ":", c.port));
      out->set_state(mariposa::health::HealthName(c.state));
      out->set_last_failure(c.last_detail);
      if (c.last_run != absl::InfinitePast()) {
        out->mutable_last_run()->set_seconds(absl::ToUnixSeconds(c.last_run));
      }
      out->set_runs(c.runs);
    }
    return grpc::Status::OK;
  }

 private:
  const mariposa::health::Agent* agent_;
};

// mariposa-health's own flags, beside the agent's options.
struct Flags {
  std::string listen = "127.0.0.1:0", metrics_listen, addr_file;
};

// Fills `options_out` and `flags` from the command line: -1 to go on, or the
// exit code (0 after --help, 2 after a usage error, said on stderr).
int ParseFlags(int argc, char** argv, mariposa::health::Agent::Options* options_out, Flags* flags) {
  std::string& listen = flags->listen;
  std::string& metrics_listen = flags->metrics_listen;
  std::string& addr_file = flags->addr_file;
  std::string heartbeat = "2s", token_file;
  mariposa::health::Agent::Options& options = *options_out;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  options.id = host;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string& flag, std::string* out) { return mariposa::FlagValue(argc, argv, &i, flag, out); };
    std::string net;
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (value("--network", &net)) {
      for (absl::string_view n : absl::StrSplit(net, ',', absl::SkipEmpty())) options.networks.emplace_back(n);
      continue;
    }
    std::string seeds;
    if (value("--mariposad", &seeds)) {
      for (absl::string_view n : absl::StrSplit(seeds, ',', absl::SkipEmpty())) options.seeds.emplace_back(n);
      continue;
    }
    if (value("--id", &options.id) || value("--listen", &listen) ||
        value("--metrics-listen", &metrics_listen) || value("--addr-file", &addr_file) ||
        value("--heartbeat", &heartbeat) || value("--ca", &options.credentials.ca_file) ||
        value("--cert", &options.credentials.cert_file) || value("--key", &options.credentials.key_file) ||
        value("--token-file", &token_file)) {
      continue;
    }
    return Usage(absl::StrCat("unknown or incomplete argument \"", a, "\""));
  }
  if (options.seeds.empty()) return Usage("--mariposad ADDR is required (mariposad's gRPC address)");
  if (!token_file.empty()) {
    auto t = mariposa::auth::ReadTokenFile(token_file);
    if (!t.ok()) return Usage(std::string(t.status().message()));
    options.credentials.token = *t;
  } else if (const char* t = std::getenv("MARIPOSA_TOKEN"); t != nullptr) {
    if (absl::Status s = mariposa::auth::CheckToken(t, "$MARIPOSA_TOKEN"); !s.ok()) return Usage(std::string(s.message()));
    options.credentials.token = t;
  }
  for (const std::string& seed : options.seeds) {
    if (auto ch = mariposa::auth::Dial(seed, options.credentials); !ch.ok()) {
      return Usage(std::string(ch.status().message()));
    }
  }
  if (options.id.empty()) return Usage("--id is empty and the host has no name; give --id");
  if (!absl::ParseDuration(heartbeat, &options.heartbeat) || options.heartbeat <= absl::ZeroDuration()) {
    return Usage(absl::StrCat("--heartbeat \"", heartbeat, "\" is not a positive duration (e.g. 2s)"));
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  mariposa::health::Agent::Options options;
  options.clock = mariposa::RealClock::Get();
  mariposa::SetLogClock(options.clock);
  Flags flags;
  if (int exit = ParseFlags(argc, argv, &options, &flags); exit >= 0) return exit;
  const std::string &listen = flags.listen, &metrics_listen = flags.metrics_listen, &addr_file = flags.addr_file;

  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  mariposa::health::HealthMetrics metrics;
  if (!metrics_listen.empty()) {
    if (auto st = metrics.Serve(metrics_listen); !st.ok()) {
      std::cerr << "mariposa-health: " << st.message() << "\n";
      return 1;
    }
    options.metrics_addr = absl::StrCat(metrics_listen.substr(0, metrics_listen.rfind(':')), ":", metrics.port());
  }
  // The agent is built before the server so ListChecks can answer; it
  // starts after, once its advertised address is known.
  auto agent = std::make_unique<mariposa::health::Agent>(options, metrics.Hooks());
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  ListChecksService list(agent.get());
  builder.RegisterService(&list);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::cerr << "mariposa-health: cannot listen on " << listen << "\n";
    return 1;
  }
  std::string bound = absl::StartsWith(listen, "unix:") ? listen
                                                         : absl::StrCat(listen.substr(0, listen.rfind(':')), ":", port);
  agent->Advertise(bound);
  metrics.Watch(agent.get());
  if (!addr_file.empty()) {
    std::string tmp = addr_file + ".tmp";
    {
      std::ofstream f(tmp);
      f << bound << "\n";
      if (!options.metrics_addr.empty()) f << options.metrics_addr << "\n";
    }
    std::rename(tmp.c_str(), addr_file.c_str());
  }
  agent->Start();
  mariposa::LogInfo("health agent serving", {{"id", options.id},
                                             {"mariposad", absl::StrJoin(options.seeds, ",")},
                                             {"listen", bound},
                                             {"metrics", options.metrics_addr.empty() ? "off" : options.metrics_addr},
                                             {"pid", absl::StrCat(getpid())}});
  int sig = 0;
  sigwait(&sigs, &sig);
  mariposa::LogInfo("shutting down", {{"signal", strsignal(sig)}});
  agent->Stop();
  server->Shutdown(absl::ToChronoTime(options.clock->Now() + absl::Seconds(5)));
  metrics.Watch(static_cast<const mariposa::health::Agent*>(nullptr));
  metrics.StopServing();
  return 0;
}
