// Agent rollout benchmark (issue 12): cn-agent updated on 1,000 servers with
// update.rolling 20 through mariposad, against tritonsim whose CNAPI tasks
// take L. Compared in the same run with (a) the ideal, 1,000 / 20 × L, and
// (b) a baseline that drives CNAPI directly in the same batches of 20 (each
// batch: 20 InstallAgent calls, then WaitTask on each), installing vm-agent.
//
//   bazel run -c opt //tests/bench:agents_bench [-- LATENCY_MS]   (default 1000; ~2 min)
//   agents_bench --smoke: 40 servers, 20 ms tasks, in the default test run;
//   exits 1 when the rollout or the baseline could not do its work.
#include <cstdlib>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "tests/bench/bench_util.h"

namespace mariposa::bench {
namespace {

int kServers = 1000;  // compute nodes; the headnode is excluded (40 with --smoke)
constexpr int kRolling = 20;

// Servers running `name` at `version`, from CNAPI.
int AtVersion(triton::HttpCnapiClient* cnapi, const std::string& name, const std::string& version) {
  auto servers = cnapi->ListServers();
  if (!servers.ok()) return -1;
  int n = 0;
  for (const auto& s : *servers) {
    for (const auto& a : s.agents) n += a.name == name && a.version == version;
  }
  return n;
}

int Main(int latency_ms) {
  char tmpl[] = "/tmp/agents-bench-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string dir = tmpl;
  Child sim = StartServer({"deploy/tritonsim/tritonsim", "--listen", "127.0.0.1:0", "--servers",
                           absl::StrCat(kServers + 1), "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency",
                           absl::StrCat(latency_ms), "--addr-file", dir + "/sim.addr"},
                          dir + "/sim.addr", "");
  if (sim.pid < 0) {
    fprintf(stderr, "tritonsim did not start\n");
    return 1;
  }
  Child d = StartServer(MariposadArgv(dir, sim.addr), dir + "/d.addr", dir + "/mariposad.log");
  if (d.pid < 0) {
    fprintf(stderr, "mariposad did not start\n");
    StopChild(&sim);
    return 1;
  }
  triton::HttpOptions o;
  o.base_url = sim.addr;
  triton::HttpCnapiClient cnapi(o, RealClock::Get());

  // Mariposa: cn-agent 2.13.0 -> 2.14.1 on the 1,000 compute nodes.
  std::ofstream(dir + "/core.yaml") << "project: core\nservices:\n  cn-agent:\n    compute_type: agent\n"
                                       "    image: cn-agent@2.14.1\n    servers: {select: all, exclude: [headnode]}\n"
                                       "    update: {rolling: "
                                    << kRolling << "}\n";
  auto t0 = Clock::now();
  int rc = std::system(absl::StrCat("cli/mariposa --addr ", d.addr, " apply -f ", dir, "/core.yaml --yes >/dev/null").c_str());
  double mariposa_s = -1;
  while (rc == 0 && Secs(Clock::now() - t0) < 50.0 * kServers / kRolling * latency_ms / 1000 + 120) {
    // Listing 1,000 servers every 20 ms took tritonsim's CPU from the
    // rollout it measured (the baseline is not watched so): CountPause.
    auto asked = Clock::now();
    int n = AtVersion(&cnapi, "cn-agent", "2.14.1");
    if (n == kServers) {
      mariposa_s = Secs(Clock::now() - t0);
      break;
    }
    std::this_thread::sleep_for(CountPause(n, kServers, Clock::now() - asked));
  }

  // Baseline: the same batches driven by hand, vm-agent 1.8.0 -> 1.9.0.
  std::string image;
  {
    triton::HttpImgapiClient imgapi(o, RealClock::Get());
    triton::ImageFilter f;
    f.name = "vm-agent";
    f.version = "1.9.0";
    auto list = imgapi.ListImages(f);
    if (list.ok() && !list->empty()) image = (*list)[0].uuid;
  }
  auto servers = cnapi.ListServers();
  std::vector<std::string> cns;
  if (servers.ok()) {
    for (const auto& s : *servers) {
      if (!s.headnode) cns.push_back(s.uuid);
    }
  }
  auto b0 = Clock::now();
  int failed = 0;
  for (size_t at = 0; at < cns.size(); at += kRolling) {
    std::vector<std::string> tasks;
    for (size_t k = at; k < std::min(cns.size(), at + kRolling); ++k) {
      auto t = cnapi.InstallAgent(cns[k], image);
      if (t.ok()) tasks.push_back(*t);
      else ++failed;
    }
    for (const std::string& t : tasks) {
      auto done = cnapi.WaitTask(t, absl::Seconds(60));
      failed += !done.ok() || done->status != "complete";
    }
  }
  double baseline_s = Secs(Clock::now() - b0);
  double ideal_s = static_cast<double>(kServers) / kRolling * latency_ms / 1000;
  printf("agent rollout: %d servers, rolling %d, CNAPI task latency %d ms\n", kServers, kRolling, latency_ms);
  printf("  ideal (servers / rolling x L)        %7.2f s\n", ideal_s);
  printf("  baseline (CNAPI by hand, same batches) %5.2f s (%d failed)\n", baseline_s, failed);
  if (failed > 0 || cns.empty() || image.empty()) {
    fprintf(stderr, "FAIL: the baseline did not run (%d installs failed, %zu servers, image %s)\n", failed, cns.size(),
            image.empty() ? "not found" : image.c_str());
    mariposa_s = -1;
  }
  printf("  mariposad (apply -> all at 2.14.1)   %7.2f s\n", mariposa_s);
  if (mariposa_s > 0) {
    printf("AGENTS_ideal_over_elapsed %.2f (target >= 0.8)\n", ideal_s / mariposa_s);
    printf("AGENTS_baseline_over_elapsed %.2f\n", baseline_s / mariposa_s);
  } else {
    printf("AGENTS_ideal_over_elapsed FAILED: the rollout did not finish (see %s/mariposad.log)\n", dir.c_str());
  }
  StopChild(&d);
  StopChild(&sim);
  if (mariposa_s > 0 && std::system(absl::StrCat("rm -rf ", dir).c_str()) != 0) {
    fprintf(stderr, "could not remove %s\n", dir.c_str());
  }
  return mariposa_s > 0 ? 0 : 1;
}

}  // namespace
}  // namespace mariposa::bench

int main(int argc, char** argv) {
  int latency = 1000;
  if (argc > 1 && std::string(argv[1]) == "--smoke") {
    mariposa::bench::kServers = 40;
    latency = 20;
  } else if (argc > 1 && (!absl::SimpleAtoi(argv[1], &latency) || latency < 1)) {
    fprintf(stderr, "usage: agents_bench [LATENCY_MS | --smoke]\n");
    return 2;
  }
  return mariposa::bench::Main(latency);
}
