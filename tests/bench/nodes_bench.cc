// Several mariposad nodes on one PostgreSQL (issue 33), against tritonsim:
//   WAKE: a scale through a node that does not run the project, until the
//         node that does has its first new VM in VMAPI (LISTEN/NOTIFY; the
//         nodes' --resync is 60 s, so a resync cannot be what starts it).
//         Measured from the Scale RPC's answer, and from its start.
//   TAKEOVER: kill -9 of the node running a project, until another node
//         holds its lease (lease TTL 10 s, the default) and until the
//         killed node's projects are all held again.
// Prints one line per figure: name value unit baseline ratio ("-" = none).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "mariposa/v1/projects.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/bench/bench_util.h"
#include "tests/pg_server.h"

namespace mariposa::bench {
namespace {

using json = nlohmann::json;

int Vms(const std::string& sim, const std::string& project_uuid) {
  httplib::Client c(sim);
  auto r = c.Get(absl::StrCat("/vms?tag.mariposa.project=", project_uuid));
  if (!r || r->status != 200) return -1;
  int n = 0;
  for (const auto& vm : json::parse(r->body)) n += vm["state"] != "destroyed" && vm["state"] != "failed";
  return n;
}

// project name -> (uuid, holder) as `mariposa nodes` says on `addr`.
std::map<std::string, std::pair<std::string, std::string>> Leases(const std::string& addr, const std::string& dir) {
  std::string out = dir + "/nodes.json";
  std::string cmd = absl::StrCat("cli/mariposa --addr ", addr, " -o json nodes > ", out, " 2>/dev/null");
  std::map<std::string, std::pair<std::string, std::string>> m;
  if (std::system(cmd.c_str()) != 0) return m;
  json j = json::parse(Slurp(out), nullptr, false);
  if (!j.contains("projects")) return m;
  for (const auto& p : j["projects"]) {
    m[p["project"]] = {p.value("projectUuid", p.value("project_uuid", "")),
                       p.value("state", "") == "held" ? p.value("holder", "") : ""};
  }
  return m;
}

int Main(bool smoke) {
  char tmpl[] = "/tmp/mariposa-nodes-bench-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string dir = tmpl;
  auto pg = testing::PgServer::Start();
  if (!pg.ok()) {
    std::fprintf(stderr, "%s\n", pg.status().ToString().c_str());
    return 1;
  }
  Child sim = StartServer({"deploy/tritonsim/tritonsim", "--listen", "127.0.0.1:0", "--addr-file", dir + "/sim.addr",
                           "--servers", "10", "--job-latency", "20", "--seed", "deploy/examples/tritonsim-seed.json"},
                          dir + "/sim.addr", "");
  if (sim.pid <= 0) return 1;
  std::map<std::string, Child> nodes;
  auto start_node = [&](const std::string& n) {
    std::vector<std::string> argv = MariposadArgv(dir + "/" + n, sim.addr);
    argv[4] = dir + "/" + n;                   // --data-dir
    argv[6] = dir + "/" + n + ".addr";         // --addr-file
    argv.back() = "60s";                       // --resync: only wake-ups count
    for (const std::string& a : {std::string("--store"), (*pg)->uri(), std::string("--node"), "node-" + n,
                                 std::string("--secrets-key"), dir + "/secrets.key"}) {
      argv.push_back(a);
    }
    nodes[n] = StartServer(argv, dir + "/" + n + ".addr", dir + "/" + n + ".log");
    return nodes[n].pid > 0;
  };
  if (!start_node("a") || !start_node("b")) return 1;
  const int kProjects = 4;
  for (int i = 0; i < kProjects; ++i) {
    std::string f = absl::StrCat(dir, "/p", i, ".yaml");
    FILE* out = fopen(f.c_str(), "w");
    std::fprintf(out, "project: p%d\nservices:\n  web:\n    image: autopilotpattern/nginx@1.4.0\n"
                      "    package: g4-highcpu-512M\n    count: 1\n", i);
    fclose(out);
    if (std::system(absl::StrCat("cli/mariposa --addr ", nodes["a"].addr, " apply --yes -f ", f, " >/dev/null").c_str()) != 0) {
      return 1;
    }
  }
  // Every project held, and which node runs which.
  std::map<std::string, std::pair<std::string, std::string>> leases;
  for (int i = 0; i < 300; ++i) {
    leases = Leases(nodes["a"].addr, dir);
    int held = 0;
    for (const auto& kv : leases) held += !kv.second.second.empty();
    if (held == kProjects) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::vector<double> from_ack, from_start;
  const int kRounds = smoke ? 3 : 30;
  std::map<std::string, int> count;
  for (const auto& kv : leases) count[kv.first] = 1;
  for (int r = 0; r < kRounds; ++r) {
    std::string project = absl::StrCat("p", r % kProjects);
    auto [uuid, holder] = leases[project];
    if (holder.empty()) {
      std::fprintf(stderr, "project %s is held by no node\n", project.c_str());
      return 1;
    }
    int have = -1;
    for (int i = 0; i < 500 && have != count[project]; ++i) {  // the last round's create has landed
      have = Vms(sim.addr, uuid);
      if (have != count[project]) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // Through the other node.
    std::string via = holder == "node-a" ? nodes["b"].addr : nodes["a"].addr;
    auto stub = v1::Projects::NewStub(grpc::CreateChannel(via, grpc::InsecureChannelCredentials()));
    v1::ScaleRequest req;
    req.set_project(project);
    req.add_changes("web=+1");
    v1::ScaleResponse resp;
    grpc::ClientContext ctx;
    auto t0 = Clock::now();
    grpc::Status s = stub->Scale(&ctx, req, &resp);
    auto t1 = Clock::now();
    if (!s.ok() || !resp.changed()) {
      std::fprintf(stderr, "scale failed: %s\n", s.error_message().c_str());
      return 1;
    }
    ++count[project];
    bool seen = false;
    for (int i = 0; i < 20000 && !seen; ++i) {  // up to 10 s
      seen = Vms(sim.addr, uuid) >= count[project];
      if (!seen) std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    auto t2 = Clock::now();
    if (!seen) {
      std::fprintf(stderr, "round %d: no new VM within 10 s\n", r);
      return 1;
    }
    from_ack.push_back(Secs(t2 - t1));
    from_start.push_back(Secs(t2 - t0));
  }
  std::printf("WAKE_scale_to_first_create_p50 %.1f ms - -\n", 1e3 * Pct(from_ack, 0.5));
  std::printf("WAKE_scale_to_first_create_p99 %.1f ms - -\n", 1e3 * Pct(from_ack, 0.99));
  std::printf("# from the Scale call's start: p50 %.1f ms, p99 %.1f ms (%zu rounds; VMAPI polled every 0.5 ms)\n",
              1e3 * Pct(from_start, 0.5), 1e3 * Pct(from_start, 0.99), from_ack.size());

  // Takeover: kill -9 the node running p0.
  std::string victim = leases["p0"].second == "node-a" ? "a" : "b";
  std::string witness = victim == "a" ? "b" : "a";
  int victims_projects = 0;
  for (const auto& kv : leases) victims_projects += kv.second.second == "node-" + victim;
  StopChild(&nodes[victim], SIGKILL);
  auto killed = Clock::now();
  double first = -1, all = -1;
  for (int i = 0; i < 600 && all < 0; ++i) {
    auto now_leases = Leases(nodes[witness].addr, dir);
    int taken = 0;
    for (const auto& kv : now_leases) {
      if (leases[kv.first].second == "node-" + victim && kv.second.second == "node-" + witness) ++taken;
    }
    double t = Secs(Clock::now() - killed);
    if (taken > 0 && first < 0) first = t;
    if (taken == victims_projects) all = t;
    if (all < 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::printf("TAKEOVER_after_kill9_s %.2f s 10 %.2f\n", all, all / 10.0);
  std::printf("# takeover: first project after %.2f s, all %d after %.2f s (lease TTL 10 s; `mariposa nodes` "
              "polled every 50 ms)\n",
              first, victims_projects, all);
  for (auto& kv : nodes) StopChild(&kv.second);
  StopChild(&sim);
  std::system(absl::StrCat("rm -rf ", dir).c_str());
  return all < 0 ? 1 : 0;
}

}  // namespace
}  // namespace mariposa::bench

int main(int argc, char** argv) {
  bool smoke = argc > 1 && std::string(argv[1]) == "--smoke";
  return mariposa::bench::Main(smoke);
}
