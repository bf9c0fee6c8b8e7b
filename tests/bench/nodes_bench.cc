// Several mariposad nodes on one PostgreSQL (issue 33), against tritonsim:
//   WAKE: a scale through a node that does not run the project, until the
//         node that does has its first new VM in VMAPI (LISTEN/NOTIFY; the
//         nodes' --resync is 60 s, so a resync cannot be what starts it).
//         Measured from the Scale RPC's answer, and from its start.
//   TAKEOVER: kill -9 of the node running a project, until another node
//         holds its lease (lease TTL 10 s, the default) and until the
//         killed node's projects are all held again.
//   P2 with 1 and 3 nodes (PERFORMANCE.md P2): the same scale-up, 10
//         projects of 1,000 instances applied through the nodes in turn,
//         from the first apply until VMAPI runs them all, with 1 node and
//         with 3 on one PostgreSQL; a fresh database and tritonsim (zero job
//         latency) each round, rounds alternating 1, 3, 1, 3. 3 nodes should
//         reach 1.5x of 1 (PERFORMANCE.md). Each round prints where the
//         machine's CPU went over the scale. Each round also runs one node on SQLite
//         (`--store` left at its default), the same work: P2 on
//         PostgreSQL must reach 0.8x of it in the same run.
// `--takeover-projects=N`: TAKEOVER alone with N projects (how it grows).
// Prints one line per figure: name value unit baseline ratio ("-" = none).
#include <filesystem>
#include <signal.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include <cstdlib>

#include <cstdio>
#include <fstream>
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

// Live nodes as `mariposa nodes` on `addr` lists them.
int LiveNodes(const std::string& addr, const std::string& dir) {
  std::string out = dir + "/nodes.json";
  if (std::system(absl::StrCat("cli/mariposa --addr ", addr, " -o json nodes > ", out, " 2>/dev/null").c_str()) != 0) {
    return -1;
  }
  json j = json::parse(Slurp(out), nullptr, false);
  int live = 0;
  if (j.is_object() && j.contains("nodes")) {
    for (const auto& n : j["nodes"]) live += n.value("live", false) ? 1 : 0;
  }
  return live;
}

// One P2 round on `n` nodes (0: one node on SQLite); instances per second
// (-1: failed, said why).
double ScaleUpOnNodes(testing::PgServer* pg, const std::string& dir, int n, int round, int projects, int services,
                      int count) {
  std::string rdir = absl::StrCat(dir, "/p2-", n, "-", round);
  std::string db = absl::StrCat("p2_", n, "_", round);
  const bool sqlite = n == 0;
  n = std::max(n, 1);
  if (mkdir(rdir.c_str(), 0700) != 0 || (!sqlite && !pg->Psql("CREATE DATABASE " + db).ok())) {
    std::fprintf(stderr, "P2 round %d: cannot make %s or database %s\n", round, rdir.c_str(), db.c_str());
    return -1;
  }
  std::string uri = pg->uri();
  uri = uri.substr(0, uri.rfind('/') + 1) + db;
  std::ofstream(rdir + "/seed.json") << P2Seed();
  Child sim = StartServer({"deploy/tritonsim/tritonsim", "--listen", "127.0.0.1:0", "--addr-file", rdir + "/sim.addr",
                           "--servers", "10", "--seed", rdir + "/seed.json"},
                          rdir + "/sim.addr", "");
  if (sim.pid <= 0) return -1;
  std::vector<Child> nodes;
  double rate = -1;
  [&] {
    for (int i = 0; i < n; ++i) {
      std::string name = absl::StrCat("n", i);
      std::vector<std::string> argv = MariposadArgv(rdir + "/" + name, sim.addr);
      argv[4] = rdir + "/" + name;            // --data-dir
      argv[6] = rdir + "/" + name + ".addr";  // --addr-file
      for (const std::string& a : {std::string("--node"), name, std::string("--secrets-key"), rdir + "/secrets.key",
                                   std::string("--max-jobs"), std::string("64"), std::string("--max-jobs-per-project"),
                                   std::string("64")}) {
        argv.push_back(a);
      }
      if (!sqlite) {
        argv.push_back("--store");
        argv.push_back(uri);
      }
      nodes.push_back(StartServer(argv, rdir + "/" + name + ".addr", rdir + "/" + name + ".log"));
      if (nodes.back().pid <= 0) {
        std::fprintf(stderr, "P2 round %d: node %s did not start (%s)\n", round, name.c_str(),
                     Slurp(rdir + "/" + name + ".log").c_str());
        return;
      }
    }
    // Every node live before the first apply, so no project moves mid-run.
    for (int i = 0; i < 200 && LiveNodes(nodes[0].addr, rdir) != n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (int p = 0; p < projects; ++p) {
      std::ofstream(absl::StrCat(rdir, "/p", p, ".yaml")) << Manifest(absl::StrCat("p", p), services, count, "");
    }
    // Where the machine's CPU went over the scale: the nodes, tritonsim,
    // and the rest (PostgreSQL, this benchmark, anything else running).
    auto cpu = [&] {
      double nodes_cpu = 0;
      for (const Child& c : nodes) nodes_cpu += CpuSeconds(c.pid);
      return std::array<double, 3>{nodes_cpu, CpuSeconds(sim.pid), MachineBusySeconds()};
    };
    const std::array<double, 3> cpu0 = cpu();
    auto t0 = Clock::now();
    std::vector<std::string> uuids;
    for (int p = 0; p < projects; ++p) {
      const std::string& via = nodes[p % n].addr;
      if (Cli(via, absl::StrCat("apply --yes -f ", rdir, "/p", p, ".yaml"), rdir + "/apply.out") != 0) {
        std::fprintf(stderr, "P2 round %d: apply refused: %s\n", round, Slurp(rdir + "/apply.out").c_str());
        return;
      }
      uuids.push_back(ProjectUuid(via, absl::StrCat("p", p), rdir));
    }
    triton::HttpOptions o;
    o.base_url = sim.addr;
    triton::HttpVmapiClient vmapi(o, RealClock::Get());
    const int total = projects * services * count;
    double took = WaitRunning(&vmapi, uuids, total, 300, t0);
    if (took <= 0) {
      std::fprintf(stderr, "P2 round %d on %d nodes: the %d instances never all ran (logs in %s)\n", round, n, total,
                   rdir.c_str());
      return;
    }
    rate = total / took;
    const std::array<double, 3> cpu1 = cpu();
    const double busy = cpu1[2] - cpu0[2], cores = std::thread::hardware_concurrency();
    std::printf("# P2 round %d, %d node(s) on %s: %.0f instances/s; CPU over the scale (%.1f s): mariposad %.2f s, "
                "tritonsim %.2f s, the rest (%s, this benchmark) %.2f s; the machine %.0f %% busy on %.0f cores\n",
                round, n, sqlite ? "SQLite" : "PostgreSQL", rate, took, cpu1[0] - cpu0[0], cpu1[1] - cpu0[1],
                sqlite ? "SQLite is in mariposad" : "PostgreSQL", busy - (cpu1[0] - cpu0[0]) - (cpu1[1] - cpu0[1]),
                100 * busy / (took * cores), cores);
  }();
  for (Child& c : nodes) StopChild(&c);
  StopChild(&sim);
  return rate;
}

// `takeover_projects` > 0 (scripts/bench.py --growth): that many projects
// on the two nodes, TAKEOVER alone.
int Main(bool smoke, int takeover_projects = 0) {
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
  const int kProjects = takeover_projects > 0 ? takeover_projects : 4;
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
  for (int i = 0; i < 300 + kProjects; ++i) {
    leases = Leases(nodes["a"].addr, dir);
    int held = 0;
    for (const auto& kv : leases) held += !kv.second.second.empty();
    if (held == kProjects) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::vector<double> from_ack, from_start;
  const int kRounds = takeover_projects > 0 ? 0 : smoke ? 3 : 30;
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
  if (kRounds > 0) {
    std::printf("WAKE_scale_to_first_create_p50 %.1f ms - -\n", 1e3 * Pct(from_ack, 0.5));
    std::printf("WAKE_scale_to_first_create_p99 %.1f ms - -\n", 1e3 * Pct(from_ack, 0.99));
    std::printf("# from the Scale call's start: p50 %.1f ms, p99 %.1f ms (%zu rounds; VMAPI polled every 0.5 ms)\n",
                1e3 * Pct(from_start, 0.5), 1e3 * Pct(from_start, 0.99), from_ack.size());
  }

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
  if (all < 0) return 1;
  if (takeover_projects > 0) {
    std::printf("GROWTH_TAKEOVER %d projects %d taken all %.2f s first %.2f s\n", kProjects, victims_projects, all,
                first);
    std::error_code gone;
    std::filesystem::remove_all(dir, gone);
    return 0;
  }

  // P2 with 1 and 3 nodes.
  const int projects = smoke ? 3 : 10, services = smoke ? 1 : 2, per_service = smoke ? 20 : 500;
  std::map<int, std::vector<double>> rates;
  int round = 0;
  for (int r = 0; r < (smoke ? 1 : 2); ++r) {
    for (int n : {0, 1, 3}) {
      double rate = ScaleUpOnNodes(pg->get(), dir, n, round++, projects, services, per_service);
      if (rate <= 0) return 1;
      rates[n].push_back(rate);
    }
  }
  double one = Pct(rates[1], 0.5), three = Pct(rates[3], 0.5);
  std::printf("P2_nodes_1_postgres %.0f instances/s - - (%d projects x %d; rounds:", one, projects, services * per_service);
  for (double v : rates[1]) std::printf(" %.0f", v);
  std::printf(")\nP2_nodes_3_postgres %.0f instances/s %.0f %.2fx (vs 1 node; target >= 1.5x, PERFORMANCE.md; rounds:",
              three, one, three / one);
  for (double v : rates[3]) std::printf(" %.0f", v);
  std::printf(")\n");
  double lite = Pct(rates[0], 0.5);
  std::printf("P2_nodes_1_sqlite %.0f instances/s - - (the same work on one node on SQLite; rounds:", lite);
  for (double v : rates[0]) std::printf(" %.0f", v);
  std::printf(")\nP2_postgres_over_sqlite %.2f x %.0f %.2f (1 node: PostgreSQL / SQLite, same run; target >= 0.8)\n",
              one / lite, lite, one / lite);
  std::error_code gone;
  std::filesystem::remove_all(dir, gone);
  return 0;
}

}  // namespace
}  // namespace mariposa::bench

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode.rfind("--takeover-projects=", 0) == 0 && std::atoi(mode.c_str() + 20) > 0) {
    return mariposa::bench::Main(false, std::atoi(mode.c_str() + 20));
  }
  if (!mode.empty() && mode != "--smoke") {
    std::fprintf(stderr, "unknown argument %s; use --smoke or --takeover-projects=N\n", mode.c_str());
    return 2;
  }
  return mariposa::bench::Main(mode == "--smoke");
}
