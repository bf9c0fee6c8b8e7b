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

namespace {

using namespace mariposa::triton;  // NOLINT
using Clock = std::chrono::steady_clock;

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

long RssKiB(pid_t pid) {
  std::string s = Slurp(absl::StrCat("/proc/", pid, "/status"));
  size_t at = s.find("VmRSS:");
  return at == std::string::npos ? -1 : atol(s.c_str() + at + 6);
}

double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

CreateVmRequest Req(int i) {
  CreateVmRequest r;
  r.owner_uuid = "930896af-bf8c-48d4-885c-6573a94b1853";
  r.brand = "joyent";
  r.image_uuid = "11111111-1111-4111-8111-111111111111";
  r.ram = 64;
  r.networks = {"aaaaaaaa-0000-4000-8000-000000000001"};
  r.tags = {{"group", absl::StrCat("g", i % 100)}, {"mariposa.service", "bench"}};
  return r;
}

// Creates `n` VMs with `clients` threads, each create followed by GetJob polls
// until the job ends. Returns VMs per second.
double CreateAndPoll(const std::string& url, int n, int clients, int offset) {
  std::atomic<int> next(0), failures(0);
  auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      HttpOptions o;
      o.base_url = url;
      HttpVmapiClient vmapi(o);
      while (true) {
        int i = next++;
        if (i >= n) break;
        auto ref = vmapi.CreateVm(Req(offset + i));
        if (!ref.ok()) {
          failures++;
          continue;
        }
        while (true) {
          auto job = vmapi.GetJob(ref->job_uuid);
          if (!job.ok() || job->done()) break;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  double rate = n / Secs(Clock::now() - start);
  if (failures > 0) fprintf(stderr, "%d creates failed\n", failures.load());
  return rate;
}

int Main() {
  char dir[] = "/tmp/tritonsim-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  std::string seed = absl::StrCat(dir, "/seed.json"), addr_file = absl::StrCat(dir, "/addr");
  std::ofstream(seed) << R"({"images": [{"uuid": "11111111-1111-4111-8111-111111111111", "name": "base", "version": "1"}]})";
  pid_t pid = fork();
  if (pid == 0) {
    if (freopen("/dev/null", "w", stderr) == nullptr) _exit(126);
    execl("deploy/tritonsim/tritonsim", "tritonsim", "--listen", "127.0.0.1:0", "--servers", "10000", "--seed",
          seed.c_str(), "--addr-file", addr_file.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string url;
  for (int i = 0; i < 500 && url.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::string a = Slurp(addr_file);
    if (!a.empty() && a.back() == '\n') url = a.substr(0, a.size() - 1);
  }
  if (url.empty()) {
    fprintf(stderr, "tritonsim did not start\n");
    kill(pid, SIGKILL);
    return 1;
  }
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
  HttpVmapiClient vmapi(o);
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
  HttpClient raw("vmapi", o);
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
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  unlink(seed.c_str());
  unlink(addr_file.c_str());
  rmdir(dir);
  return 0;
}

}  // namespace

int main() { return Main(); }
