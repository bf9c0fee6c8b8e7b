// tritonsim benchmarks. Starts its own tritonsim (10,000 servers, zero job
// latency) on a free loopback port and stops it at the end. Prints
// `name value unit baseline ratio` lines:
//   P2_baseline_create_poll_*: raw CreateVm + GetJob polling throughput, the
//     baseline of PERFORMANCE.md P2, with 1 and 8 clients;
//   ListVms latency by tag (1,000 of 100,000 VMs), HEAD count, a 1,000-VM page;
//   tritonsim RSS with 10,000 servers and 100,000 VMs.
// `--smoke` (the default test run): 100 servers, 2,000 VMs; exits 1 when a
// create failed or a listing came back empty — never on timing.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "convergence/triton/http_clients.h"
#include "tests/bench/bench_util.h"

namespace {

using namespace mariposa::triton;  // NOLINT
using namespace mariposa::bench;   // NOLINT

int Main(bool smoke) {
  const int kVms = smoke ? 2000 : 100000, kRound = smoke ? 100 : 2000, kRounds = smoke ? 1 : 5;
  char dir[] = "/tmp/tritonsim-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  std::string seed = absl::StrCat(dir, "/seed.json"), addr_file = absl::StrCat(dir, "/addr");
  std::ofstream(seed) << R"({"images": [{"uuid": "11111111-1111-4111-8111-111111111111", "name": "base", "version": "1"}]})";
  Child sim = StartServer({"deploy/tritonsim/tritonsim", "--listen", "127.0.0.1:0", "--servers", smoke ? "100" : "10000", "--seed",
                           seed, "--addr-file", addr_file},
                          addr_file, "");
  if (sim.pid < 0) {
    fprintf(stderr, "tritonsim did not start\n");
    return 1;
  }
  pid_t pid = sim.pid;
  std::string url = sim.addr;
  long rss_empty = RssKiB(pid);

  // P2 baseline: 5 alternating rounds of 1 and 8 clients, 2,000 VMs each.
  std::vector<double> one, eight;
  int created = 0;
  for (int round = 0; round < kRounds; ++round) {
    one.push_back(CreateAndPoll(url, kRound, 1, created));
    created += kRound;
    eight.push_back(CreateAndPoll(url, kRound, 8, created));
    created += kRound;
  }
  std::sort(one.begin(), one.end());
  std::sort(eight.begin(), eight.end());
  printf("P2_baseline_create_poll_1_client %.0f vms/s - - (min %.0f, max %.0f)\n", Pct(one, 0.5), one.front(),
         one.back());
  printf("P2_baseline_create_poll_8_clients %.0f vms/s - - (min %.0f, max %.0f)\n", Pct(eight, 0.5), eight.front(),
         eight.back());

  // Fill to 100,000 VMs.
  double fill = CreateAndPoll(url, kVms - created, 8, created);
  fprintf(stderr, "filled to %d VMs at %.0f vms/s\n", kVms, fill);
  bool broken = one.front() <= 0 || eight.front() <= 0 || fill <= 0;

  HttpOptions o;
  o.base_url = url;
  HttpVmapiClient vmapi(o, mariposa::RealClock::Get());
  std::vector<double> by_tag, head, page;
  size_t got = 0;
  for (int i = 0; i < 50; ++i) {
    VmFilter f;
    f.tags = {{"group", absl::StrCat("g", i % 100)}};
    auto t0 = Clock::now();
    auto vms = vmapi.ListVms(f);
    by_tag.push_back(Secs(Clock::now() - t0) * 1e3);
    if (vms.ok()) got = vms->size();
    t0 = Clock::now();
    auto n = vmapi.CountVms(f);
    head.push_back(Secs(Clock::now() - t0) * 1e3);
    (void)n;
  }
  HttpClient raw("vmapi", o, mariposa::RealClock::Get());
  std::vector<double> raw_tag;
  for (int i = 0; i < 50; ++i) {
    auto t0 = Clock::now();
    auto r = raw.Call("ListVms", "GET", absl::StrCat("/vms?limit=1000&tag.group=g", i % 100));
    raw_tag.push_back(Secs(Clock::now() - t0) * 1e3);
  }
  for (int i = 0; i < 10; ++i) {
    auto t0 = Clock::now();
    auto r = raw.Call("ListVms", "GET", absl::StrCat("/vms?limit=1000&offset=", kVms / 20));
    page.push_back(Secs(Clock::now() - t0) * 1e3);
    broken |= !r.ok() || r->status != 200;
  }
  broken |= got == 0;
  printf("ListVms_by_tag_1000_of_100k_p50 %.2f ms - - (p99 %.2f ms, %zu VMs returned)\n", Pct(by_tag, 0.5),
         Pct(by_tag, 0.99), got);
  printf("ListVms_raw_http_by_tag_1000_of_100k_p50 %.2f ms - - (p99 %.2f ms; one request, no client parsing)\n",
         Pct(raw_tag, 0.5), Pct(raw_tag, 0.99));
  printf("HeadVms_by_tag_100k_p50 %.2f ms - -\n", Pct(head, 0.5));
  printf("ListVms_unfiltered_page_1000_of_100k_p50 %.1f ms - -\n", Pct(page, 0.5));
  printf("tritonsim_rss_10k_servers_100k_vms %.0f MiB - - (empty with 10k servers: %.0f MiB)\n", RssKiB(pid) / 1024.0,
         rss_empty / 1024.0);
  StopChild(&sim);
  unlink(seed.c_str());
  unlink(addr_file.c_str());
  rmdir(dir);
  if (broken) fprintf(stderr, "FAIL: a create failed or a listing came back empty\n");
  return broken ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc > 1 && std::string(argv[1]) == "--smoke"); }
