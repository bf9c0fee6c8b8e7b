// tritonsim benchmarks. Starts its own tritonsim (10,000 servers, zero job
// latency) on a free loopback port and stops it at the end. Prints
// `name value unit baseline ratio` lines:
//   P2_baseline_create_poll_*: raw CreateVm + GetJob polling throughput, the
//     baseline of PERFORMANCE.md P2, with 1 and 8 clients;
//   ListVms latency by tag (1,000 of 100,000 VMs), HEAD count, a 1,000-VM page;
//   tritonsim RSS with 10,000 servers and 100,000 VMs.
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

int Main() {
  char dir[] = "/tmp/tritonsim-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  std::string seed = absl::StrCat(dir, "/seed.json"), addr_file = absl::StrCat(dir, "/addr");
  std::ofstream(seed) << R"({"images": [{"uuid": "11111111-1111-4111-8111-111111111111", "name": "base", "version": "1"}]})";
  Child sim = StartServer({"deploy/tritonsim/tritonsim", "--listen", "127.0.0.1:0", "--servers", "10000", "--seed",
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
  for (int round = 0; round < 5; ++round) {
    one.push_back(CreateAndPoll(url, 2000, 1, created));
    created += 2000;
    eight.push_back(CreateAndPoll(url, 2000, 8, created));
    created += 2000;
  }
  std::sort(one.begin(), one.end());
  std::sort(eight.begin(), eight.end());
  printf("P2_baseline_create_poll_1_client %.0f vms/s - - (min %.0f, max %.0f)\n", one[2], one[0], one[4]);
  printf("P2_baseline_create_poll_8_clients %.0f vms/s - - (min %.0f, max %.0f)\n", eight[2], eight[0], eight[4]);

  // Fill to 100,000 VMs.
  double fill = CreateAndPoll(url, 100000 - created, 8, created);
  fprintf(stderr, "filled to 100000 VMs at %.0f vms/s\n", fill);

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
    auto r = raw.Call("ListVms", "GET", "/vms?limit=1000&offset=5000");
    page.push_back(Secs(Clock::now() - t0) * 1e3);
  }
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
  return 0;
}

}  // namespace

int main() { return Main(); }
