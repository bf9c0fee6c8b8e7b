// tritonsim: a stand-in Triton data center (VMAPI, CNAPI, IMGAPI over HTTP on
// loopback) for local runs, demos, tests and benchmarks; and `tritonsim ctl`
// to inject faults into a running one. See docs/tritonsim.md.
#include <httplib.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <iostream>
#include <sstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "deploy/tritonsim/changefeed.h"
#include "deploy/tritonsim/cns.h"
#include "deploy/tritonsim/datacenter.h"
#include "deploy/tritonsim/http_api.h"
#include "deploy/tritonsim/vm_listeners.h"

namespace {

constexpr char kUsage[] = R"(usage: tritonsim [options]
       tritonsim ctl [--addr URL] COMMAND ...

Serves VMAPI, CNAPI, IMGAPI, PAPI, NAPI and workflow jobs on one loopback HTTP port
(and each on a port of its own with --api-ports).

  --listen HOST:PORT       address (default 127.0.0.1:8580; port 0 picks a free one)
  --addr-file FILE         write the base URL (http://HOST:PORT) to FILE once serving
  --servers N              simulated compute nodes, the first one the headnode (default 10)
  --server-ram MIB         RAM of each generated server (default 262144)
  --seed FILE              JSON {"servers": [...], "images": [...], "remote_images": [...]}
  --job-latency MS         mean duration of a workflow job or CNAPI task (default 0)
  --job-jitter F           +/- fraction of the latency (default 0)
  --job-failure-rate F     0..1, fraction of jobs and tasks that fail (default 0)
  --api-latency MS         delay before every API answer (default 0)
  --rng-seed N             seed for uuids, jitter and failures (default 1)
  --api-ports              besides --listen (every API and the control API), serve each API
                           on a port of its own on the same host, answering only that API's
                           routes (others 404, as a real service would): vmapi, cnapi, imgapi
                           (with the updates source), papi, napi, fwapi, volapi, mahi and wfapi (workflow jobs,
                           named in job replies' workflow-api header); --addr-file gets a
                           line "API=http://HOST:PORT" for each after the base URL
  --threads N              HTTP worker threads (default 512); each keep-alive connection
                           holds one while it lasts (up to 5 s idle), as many as clients keep open
  --feed-flush-ms N        a feed session sends again no sooner than N ms after it sent (default
                           10): items of a mass change go out together instead of a write and a
                           wake each on the cores the listener is measured on; 0: each at once,
                           as VMAPI sends them
  --no-changefeed          no change feed: GET /changefeeds answers 404, as a VMAPI older than
                           the feed would (by default VMAPI publishes every VM change on its
                           websocket, as sdc-vmapi does; see docs/tritonsim.md)
  --cns-listen HOST:PORT   serve CNS's records over DNS (UDP; port 0 picks a free one): the
                           service and instance names triton-cns builds from VMAPI (tags
                           triton.cns.services, triton.cns.disable, metadata
                           triton.cns.status); --addr-file gets "cns=udp://HOST:PORT"
  --cns-ttl S              the TTL of every record (default 30, as triton-cns)
  --cns-delay-ms N         the records are rebuilt from VMAPI this often (default 1000)
  --cns-zone ZONE          the zone (default dc1.cns.tritonsim.test): names are
                           SERVICE.svc.ACCOUNT.ZONE, UUID.inst.ACCOUNT.ZONE, ALIAS.inst.ACCOUNT.ZONE
  --listen-vms             each running VM answers HTTP on 127.a.b.c (its nic 10.a.b.c) on
                           the ports in its `ports` tag or metadata, as its health says;
                           addresses start in a random 10.a.b.0/24 block then

ctl commands (URL from --addr or $TRITONSIM_URL):
  server-down SERVER | server-up SERVER      SERVER is a uuid or hostname
  server-delete SERVER                       the server leaves CNAPI (its VMs are destroyed)
  kill-vm VM | destroy-vm VM                 the VM stops, or vanishes (destroyed)
  exit-vm VM STATUS                          the VM's process exits with STATUS (0-255): it stops,
                                             with exit_status (a job's end)
  vm-health VM healthy|unhealthy|refuse|hang what its listeners answer
  cns-account ACCOUNT on|off                 the account's CNS (UFDS triton_cns_enabled; on by default)
  cns-records                                the records CNS serves now (JSON)
  write-file VM PATH TEXT                    a file in the guest: under /zones/VM/data/ on its
                                             delegate dataset (kept by reprovision), else on its root
  files VM                                   the guest's files and how often it was reprovisioned
  fail OP N [STATUS]                         the next N calls of OP answer STATUS (503);
                                             replaces an earlier `fail OP`: N = 0 ends it
  slow OP N MS                               the next N calls of OP wait MS first
  changefeed on|off|drop                     off: the feed ends and /changefeeds answers 404 (an
                                             older VMAPI) until on; drop: every listener is disconnected
  changefeed skip N                          the next N changes are not published (lost items)
  account-add LOGIN [--uuid UUID] [--key FILE]...
                                             a Triton account in mahi (made, or its keys added to);
                                             FILE holds an OpenSSH public key line (id_ed25519.pub)
  user-add ACCOUNT LOGIN [--uuid UUID] [--key FILE]... [--role NAME]... [--default-role NAME]...
                                             a sub-user; roles by name (default roles: all of them)
  key-delete ACCOUNT[/USER] FINGERPRINT      the key leaves mahi (MD5 or SHA256 fingerprint)
  accounts                                   mahi's accounts, users, keys and roles (JSON)
  knobs [--job-latency MS] [--job-jitter F] [--job-failure-rate F] [--api-latency MS]
  stats
OP names: ListVms GetVm CreateVm VmAction DeleteVm VmTags ListJobs GetJob WaitJob
  ListServers GetServer ServerUpdate InstallAgent UninstallAgents GetTask WaitTask
  ListImages GetImage ImageAction CreateImage ListPackages GetPackage ListNetworks GetNetwork
  ListNetworkPools Ping ChangeFeeds ChangeFeedsStats GetAccount GetAccountByUuid GetUser GetUserByUuid
)";

int Usage(const std::string& err) {
  std::cerr << "tritonsim: " << err << "\n\n" << kUsage;
  return 2;
}

int Ctl(std::vector<std::string> args) {
  std::string url = getenv("TRITONSIM_URL") ? getenv("TRITONSIM_URL") : "http://127.0.0.1:8580";
  if (args.size() >= 2 && args[0] == "--addr") {
    url = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.empty()) return Usage("ctl needs a command");
  httplib::Client cli(url);
  cli.set_connection_timeout(5);
  cli.set_read_timeout(30);
  std::string path;
  tritonsim::json body = tritonsim::json::object();
  const std::string& cmd = args[0];
  auto need = [&](size_t n) { return args.size() == n + 1; };
  // A read of the control API, printed (JSON indented when `pretty`).
  auto show = [&](const std::string& get, bool pretty) {
    auto res = cli.Get(get);
    if (!res) {
      std::cerr << "tritonsim ctl: cannot reach " << url << "\n";
      return 1;
    }
    std::cout << (pretty ? tritonsim::json::parse(res->body).dump(2) : res->body) << "\n";
    return res->status == 200 ? 0 : 1;
  };
  if ((cmd == "server-down" || cmd == "server-up") && need(1)) {
    path = "/_sim/servers/" + args[1] + (cmd == "server-up" ? "/up" : "/down");
  } else if (cmd == "server-delete" && need(1)) {
    path = "/_sim/servers/" + args[1] + "/delete";
  } else if ((cmd == "kill-vm" || cmd == "destroy-vm") && need(1)) {
    path = "/_sim/vms/" + args[1] + (cmd == "kill-vm" ? "/kill" : "/destroy");
  } else if (cmd == "exit-vm" && need(2)) {
    path = "/_sim/vms/" + args[1] + "/exit/" + args[2];
  } else if (cmd == "cns-account" && need(2) && (args[2] == "on" || args[2] == "off")) {
    path = "/_sim/cns/accounts/" + args[1] + "/" + args[2];
  } else if (cmd == "cns-records" && need(0)) {
    return show("/_sim/cns/records", false);
  } else if (cmd == "vm-health" && need(2)) {
    path = "/_sim/vms/" + args[1] + "/health/" + args[2];
  } else if (cmd == "write-file" && need(3)) {
    path = "/_sim/vms/" + args[1] + "/files";
    body = {{"path", args[2]}, {"content", args[3]}};
  } else if (cmd == "files" && need(1)) {
    return show("/_sim/vms/" + args[1] + "/files", false);
  } else if (cmd == "fail" && (need(2) || need(3))) {
    path = "/_sim/fail";
    body = {{"op", args[1]}, {"count", atoi(args[2].c_str())}, {"status", args.size() > 3 ? atoi(args[3].c_str()) : 503}};
  } else if (cmd == "slow" && need(3)) {
    path = "/_sim/fail";
    body = {{"op", args[1]}, {"count", atoi(args[2].c_str())}, {"hang_ms", atoi(args[3].c_str())}};
  } else if (cmd == "changefeed" && need(1) && (args[1] == "on" || args[1] == "off" || args[1] == "drop")) {
    path = "/_sim/changefeed/" + args[1];
  } else if (cmd == "changefeed" && need(2) && args[1] == "skip") {
    path = "/_sim/changefeed/skip?n=" + std::to_string(atoi(args[2].c_str()));
  } else if ((cmd == "account-add" && args.size() >= 2) || (cmd == "user-add" && args.size() >= 3)) {
    bool user = cmd == "user-add";
    path = user ? "/_sim/mahi/users" : "/_sim/mahi/accounts";
    body = {{"login", args[user ? 2 : 1]}, {"keys", tritonsim::json::array()}};
    if (user) body["account"] = args[1];
    for (size_t i = user ? 3 : 2; i < args.size(); i += 2) {
      if (i + 1 >= args.size()) return Usage(args[i] + " needs a value");
      const std::string& v = args[i + 1];
      if (args[i] == "--uuid") {
        body["uuid"] = v;
      } else if (args[i] == "--key") {
        std::ifstream in(v);
        std::stringstream text;
        text << in.rdbuf();
        if (!in) return Usage("cannot read the key file " + v);
        // One key a line (an authorized_keys file holds several).
        std::string line;
        for (std::istringstream lines(text.str()); std::getline(lines, line);) {
          if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
          body["keys"].push_back(line);
        }
      } else if (user && (args[i] == "--role" || args[i] == "--default-role")) {
        body[args[i] == "--role" ? "roles" : "default_roles"].push_back(v);
      } else {
        return Usage("unknown option " + args[i] + " of " + cmd);
      }
    }
  } else if (cmd == "key-delete" && need(2)) {
    path = "/_sim/mahi/keys/delete";
    size_t slash = args[1].find('/');
    body = {{"account", args[1].substr(0, slash)},
            {"user", slash == std::string::npos ? "" : args[1].substr(slash + 1)},
            {"fingerprint", args[2]}};
  } else if (cmd == "accounts" && need(0)) {
    return show("/_sim/mahi/accounts", true);
  } else if (cmd == "knobs") {
    path = "/_sim/knobs";
    for (size_t i = 1; i + 1 < args.size(); i += 2) {
      if (args[i] == "--job-latency") body["job_latency_ms"] = atof(args[i + 1].c_str());
      else if (args[i] == "--job-jitter") body["job_jitter"] = atof(args[i + 1].c_str());
      else if (args[i] == "--job-failure-rate") body["job_failure_rate"] = atof(args[i + 1].c_str());
      else if (args[i] == "--api-latency") body["api_latency_ms"] = atoi(args[i + 1].c_str());
      else return Usage("unknown knob " + args[i]);
    }
  } else if (cmd == "stats" && need(0)) {
    return show("/_sim/stats", true);
  } else {
    return Usage("bad ctl command: " + cmd);
  }
  auto res = cli.Post(path, body.dump(), "application/json");
  if (!res) {
    std::cerr << "tritonsim ctl: cannot reach " << url << "\n";
    return 1;
  }
  if (res->status >= 300) {
    std::cerr << "tritonsim ctl: " << res->status << " " << res->body << "\n";
    return 1;
  }
  std::cout << res->body << "\n";
  return 0;
}

}  // namespace

// Sets up `server` and binds it to host:port (0: a free one); the port, or
// -1 when it cannot listen.
static int Bind(httplib::Server* server, const std::string& host, int port, int threads) {
  server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server->set_keep_alive_max_count(100000);
  server->set_tcp_nodelay(true);  // no Nagle + delayed-ACK stalls between header and body writes
  // A keep-alive connection holds a worker thread until it has been idle
  // this long (Node's http server, VMAPI's, closes idle ones after 5 s):
  // clients holding more connections than there are threads would wait.
  server->set_keep_alive_timeout(5);
  // httplib listens with a backlog of 5: a burst of new connections (a
  // client opening 16 at once) overflows it, the kernel drops the SYNs and
  // the client retries them a second later. Node's VMAPI listens with 511;
  // the listening socket is taken here and its backlog raised after bind.
  int listen_fd = -1;
  server->set_socket_options([&listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;  // the last one made is the one bound
  });
  if (port == 0) {
    port = server->bind_to_any_port(host);
  } else if (!server->bind_to_port(host, port)) {
    port = -1;
  }
  if (port > 0 && listen_fd >= 0 && ::listen(listen_fd, 1024) != 0) {
    std::cerr << "tritonsim: cannot raise the listen backlog: " << std::strerror(errno) << "\n";
  }
  server->set_socket_options(httplib::default_socket_options);
  return port;
}

// tritonsim's flags, beside the data center's options.
struct Flags {
  std::string listen = "127.0.0.1:8580", addr_file, seed_file;
  int api_latency = 0, threads = 512, feed_flush_ms = 10;
  bool listen_vms = false, api_ports = false, changefeed = true;
  std::string cns_listen;  // --cns-listen HOST:PORT ("" = no CNS)
  tritonsim::CnsOptions cns;
};

// Fills `opts_out` and `f`: -1 to go on, or the exit code (0 after --help,
// 2 after a usage error).
static int ParseFlags(const std::vector<std::string>& args, tritonsim::Options* opts_out, Flags* f) {
  tritonsim::Options& opts = *opts_out;
  std::string &listen = f->listen, &addr_file = f->addr_file, &seed_file = f->seed_file;
  int &api_latency = f->api_latency, &threads = f->threads, &feed_flush_ms = f->feed_flush_ms;
  bool &listen_vms = f->listen_vms, &api_ports = f->api_ports, &changefeed = f->changefeed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (a == "--listen-vms") {
      listen_vms = true;
      continue;
    }
    if (a == "--api-ports") {
      api_ports = true;
      continue;
    }
    if (a == "--no-changefeed") {
      changefeed = false;
      continue;
    }
    if (i + 1 >= args.size()) return Usage("unknown argument or missing value: " + a);
    const std::string& v = args[++i];
    if (a == "--listen") listen = v;
    else if (a == "--addr-file") addr_file = v;
    else if (a == "--servers") opts.servers = atoi(v.c_str());
    else if (a == "--server-ram") opts.server_ram_mb = atoll(v.c_str());
    else if (a == "--seed") seed_file = v;
    else if (a == "--job-latency") opts.job_latency_ms = atof(v.c_str());
    else if (a == "--job-jitter") opts.job_jitter = atof(v.c_str());
    else if (a == "--job-failure-rate") opts.job_failure_rate = atof(v.c_str());
    else if (a == "--api-latency") api_latency = atoi(v.c_str());
    else if (a == "--rng-seed") opts.seed = strtoull(v.c_str(), nullptr, 10);
    else if (a == "--threads") threads = atoi(v.c_str());
    else if (a == "--feed-flush-ms") feed_flush_ms = atoi(v.c_str());
    else if (a == "--cns-listen") f->cns_listen = v;
    else if (a == "--cns-ttl") f->cns.ttl_s = atoi(v.c_str());
    else if (a == "--cns-delay-ms") f->cns.delay_ms = atoi(v.c_str());
    else if (a == "--cns-zone") f->cns.zone = v;
    else return Usage("unknown argument " + a);
  }
  if (f->cns.ttl_s < 0 || f->cns.delay_ms < 0) return Usage("--cns-ttl and --cns-delay-ms must be >= 0");
  return -1;
}

// --cns-listen: CNS's DNS on UDP, its records seen through the control API
// (GET /_sim/cns/records) and an account's CNS turned off and on
// (POST /_sim/cns/accounts/ACCOUNT/off|on). The URL line for --addr-file,
// or "" when it cannot listen (said).
static std::string StartCns(const Flags& flags, tritonsim::DataCenter* dc, httplib::Server* server,
                            std::unique_ptr<tritonsim::CnsServer>* cns) {
  size_t colon = flags.cns_listen.rfind(':');
  if (colon == std::string::npos) {
    std::cerr << "tritonsim: --cns-listen must be HOST:PORT\n";
    return "";
  }
  std::string host = flags.cns_listen.substr(0, colon);
  *cns = std::make_unique<tritonsim::CnsServer>(dc, flags.cns);
  int port = (*cns)->Bind(host, atoi(flags.cns_listen.substr(colon + 1).c_str()));
  if (port <= 0) {
    std::cerr << "tritonsim: cannot listen for CNS on udp " << flags.cns_listen << "\n";
    return "";
  }
  (*cns)->Start();
  tritonsim::CnsServer* c = cns->get();
  server->Get("/_sim/cns/records", [c](const httplib::Request&, httplib::Response& res) {
    tritonsim::json out = tritonsim::json::object();
    for (const auto& [name, ips] : c->Records()) out[name] = ips;
    tritonsim::json body = {{"zone", c->options().zone}, {"ttl", c->options().ttl_s},
                            {"delay_ms", c->options().delay_ms}, {"records", out},
                            {"answered", c->answered()}, {"dropped", c->dropped()}};
    res.set_content(body.dump(), "application/json");
  });
  server->Post(R"(/_sim/cns/accounts/([^/]+)/(on|off))", [dc](const httplib::Request& req, httplib::Response& res) {
    dc->SetCnsEnabled(req.matches[1], req.matches[2] == "on");
    res.set_content("{}", "application/json");
  });
  return "cns=udp://" + host + ":" + std::to_string(port);
}

// --seed FILE: the data center's starting contents; false (said) when the
// file cannot be read or is refused.
static bool LoadSeedFile(const std::string& seed_file, tritonsim::DataCenter* dc) {
  std::ifstream f(seed_file);
  std::stringstream ss;
  ss << f.rdbuf();
  auto seed = tritonsim::json::parse(ss.str(), nullptr, false);
  std::string err = seed.is_discarded() ? "not valid JSON" : dc->LoadSeed(seed);
  if (!f || !err.empty()) {
    std::cerr << "tritonsim: seed " << seed_file << ": " << (f ? err : "cannot read") << "\n";
    return false;
  }
  return true;
}

// --api-ports: each API also on a port of its own, answering only its
// routes; false (said) when one cannot listen.
static bool BindApiPorts(const std::string& host, int threads,
                         std::vector<std::pair<std::string, std::unique_ptr<httplib::Server>>>* servers,
                         std::vector<std::string>* urls) {
  for (const char* api : {"vmapi", "cnapi", "imgapi", "papi", "napi", "fwapi", "volapi", "mahi", "wfapi"}) {
    auto s = std::make_unique<httplib::Server>();
    int p = Bind(s.get(), host, 0, threads);
    if (p <= 0) {
      std::cerr << "tritonsim: cannot listen for " << api << " on " << host << "\n";
      return false;
    }
    urls->push_back(std::string(api) + "=http://" + host + ":" + std::to_string(p));
    servers->emplace_back(api, std::move(s));
  }
  return true;
}

int main(int argc, char** argv) {
  // Large answers (a 1,000-VM page is ~1 MB) would otherwise get fresh pages
  // from mmap on every call; first-touch page faults then cost more than the
  // work itself, badly so on virtualized hosts. Keep freed memory for reuse.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "ctl") return Ctl(std::vector<std::string>(args.begin() + 1, args.end()));
  tritonsim::Options opts;
  opts.clock = mariposa::RealClock::Get();
  Flags flags;
  if (int exit = ParseFlags(args, &opts, &flags); exit >= 0) return exit;
  const std::string &listen = flags.listen, &addr_file = flags.addr_file, &seed_file = flags.seed_file;
  const int api_latency = flags.api_latency, threads = flags.threads, feed_flush_ms = flags.feed_flush_ms;
  const bool listen_vms = flags.listen_vms, api_ports = flags.api_ports, changefeed = flags.changefeed;
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return Usage("--listen must be HOST:PORT");
  std::string host = listen.substr(0, colon);
  int port = atoi(listen.substr(colon + 1).c_str());
  if (opts.servers < 0 || opts.job_failure_rate < 0 || opts.job_failure_rate > 1) {
    return Usage("--servers must be >= 0 and --job-failure-rate within 0..1");
  }

  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  httplib::Server server;
  port = Bind(&server, host, port, threads);
  if (port <= 0) {
    std::cerr << "tritonsim: cannot listen on " << listen << "\n";
    return 1;
  }
  // --api-ports: each API also on a port of its own, answering only its routes.
  std::vector<std::pair<std::string, std::unique_ptr<httplib::Server>>> api_servers;
  std::vector<std::string> api_urls;
  if (api_ports && !BindApiPorts(host, threads, &api_servers, &api_urls)) return 1;
  std::string base = "http://" + host + ":" + std::to_string(port);
  // Where job replies say their workflow API is (the workflow-api header).
  opts.base_url = api_ports ? api_urls.back().substr(std::string("wfapi=").size()) : base;
  tritonsim::DataCenter dc(opts);
  if (!seed_file.empty() && !LoadSeedFile(seed_file, &dc)) return 1;
  std::atomic<int> latency(api_latency);
  std::unique_ptr<tritonsim::VmListeners> listeners;
  if (listen_vms) {
    // One descriptor per (VM, port): lift the soft limit to the hard one.
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    // A random /24 block per process: concurrent tritonsims (parallel tests)
    // must not bind each other's 127.a.b.c addresses.
    dc.StartAddressesAtBlock(1 + static_cast<uint32_t>(std::random_device{}() % 65000));
    listeners = std::make_unique<tritonsim::VmListeners>(&dc);
  }
  tritonsim::ChangeFeed feed;
  feed.SetFlushMs(feed_flush_ms);
  if (changefeed) dc.SetChangeFeed(&feed);
  tritonsim::InstallRoutes(&server, &dc, &latency);
  std::unique_ptr<tritonsim::CnsServer> cns;
  if (!flags.cns_listen.empty()) {
    std::string line = StartCns(flags, &dc, &server, &cns);
    if (line.empty()) return 1;
    api_urls.insert(api_urls.begin(), line);
  }
  std::vector<std::thread> serving;
  for (auto& [api, s] : api_servers) {
    tritonsim::InstallRoutes(s.get(), &dc, &latency, api);
    serving.emplace_back([srv = s.get()] { srv->listen_after_bind(); });
  }
  if (!addr_file.empty()) {
    {
      std::ofstream f(addr_file + ".tmp");
      f << base << "\n";
      for (const std::string& u : api_urls) f << u << "\n";
    }
    std::rename((addr_file + ".tmp").c_str(), addr_file.c_str());
  }
  std::string each;
  for (const std::string& u : api_urls) each += (each.empty() ? "" : " ") + u;
  fprintf(stderr, "{\"msg\":\"serving\",\"url\":\"%s\",\"apis\":\"%s\",\"servers\":%d}\n", base.c_str(),
          each.c_str(), opts.servers);
  std::thread signals([&] {
    int sig = 0;
    sigwait(&sigs, &sig);
    feed.DropAll();  // a listener's session holds a server thread until it ends
    server.stop();
    for (auto& [api, s] : api_servers) s->stop();
  });
  server.listen_after_bind();
  signals.join();
  for (std::thread& t : serving) t.join();
  fprintf(stderr, "{\"msg\":\"stopped\"}\n");
  return 0;
}
