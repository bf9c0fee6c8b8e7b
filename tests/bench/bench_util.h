// Shared pieces of the benchmarks: timing, percentiles, RSS, and the P2
// baseline (raw CreateVm + GetJob polling against tritonsim).
#ifndef MARIPOSA_TESTS_BENCH_BENCH_UTIL_H_
#define MARIPOSA_TESTS_BENCH_BENCH_UTIL_H_

#include <signal.h>
#include <sys/types.h>
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
#include "absl/strings/str_split.h"
#include "convergence/triton/http_clients.h"

namespace mariposa::bench {

using Clock = std::chrono::steady_clock;

inline double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

inline std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline long RssKiB(pid_t pid) {
  std::string s = Slurp(absl::StrCat("/proc/", pid, "/status"));
  size_t at = s.find("VmRSS:");
  return at == std::string::npos ? -1 : atol(s.c_str() + at + 6);
}

// CPU seconds (user + system) of a process so far.
inline double CpuSeconds(pid_t pid) {
  std::string stat = Slurp(absl::StrCat("/proc/", pid, "/stat"));
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::vector<std::string> f = absl::StrSplit(stat.substr(close + 2), ' ');
  if (f.size() < 13) return -1;
  return (std::stod(f[11]) + std::stod(f[12])) / sysconf(_SC_CLK_TCK);
}

// CPU seconds the whole machine spent busy so far (every core: user, nice,
// system, irq, softirq, steal from /proc/stat; idle and iowait left out).
inline double MachineBusySeconds() {
  std::string stat = Slurp("/proc/stat");
  if (stat.compare(0, 4, "cpu ") != 0) return -1;
  std::vector<std::string> f = absl::StrSplit(stat.substr(4, stat.find('\n') - 4), ' ', absl::SkipEmpty());
  if (f.size() < 8) return -1;
  double busy = 0;
  for (int i : {0, 1, 2, 5, 6, 7}) busy += std::stod(f[i]);
  return busy / sysconf(_SC_CLK_TCK);
}

inline double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

inline triton::CreateVmRequest Req(int i) {
  triton::CreateVmRequest r;
  r.owner_uuid = "930896af-bf8c-48d4-885c-6573a94b1853";
  r.brand = "joyent";
  r.image_uuid = "11111111-1111-4111-8111-111111111111";
  r.dim.ram = 64;
  r.networks = {"aaaaaaaa-0000-4000-8000-000000000001"};
  r.tags = {{"group", absl::StrCat("g", i % 100)}, {"mariposa.service", "bench"}};
  return r;
}

// Creates `n` VMs with `clients` threads, each create followed by GetJob polls
// until the job ends. Returns VMs per second.
inline double CreateAndPoll(const std::string& url, int n, int clients, int offset) {
  std::atomic<int> next(0), failures(0);
  auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      triton::HttpOptions o;
      o.base_url = url;
      triton::HttpVmapiClient vmapi(o, mariposa::RealClock::Get());
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
  if (failures > 0) {
    // Not a figure: a baseline whose creates failed measured nothing.
    fprintf(stderr, "%d of %d baseline creates failed\n", failures.load(), n);
    return -1;
  }
  return rate;
}

// A server child started for a benchmark: it writes its address (first line)
// to `addr_file` once serving; stderr goes to `log` ("" = /dev/null).
struct Child {
  pid_t pid = -1;
  std::string addr;                 // first line of the address file
  std::vector<std::string> extra;   // further lines
};

inline Child StartServer(const std::vector<std::string>& argv, const std::string& addr_file, const std::string& log) {
  Child c;
  unlink(addr_file.c_str());
  c.pid = fork();
  if (c.pid == 0) {
    if (freopen(log.empty() ? "/dev/null" : log.c_str(), "a", stderr) == nullptr) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  for (int i = 0; i < 1500; ++i) {
    std::string a = Slurp(addr_file);
    if (!a.empty() && a.back() == '\n') {
      std::stringstream ss(a);
      std::string line;
      while (std::getline(ss, line)) (c.addr.empty() ? c.addr : c.extra.emplace_back()) = line;
      return c;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(c.pid, SIGKILL);
  waitpid(c.pid, nullptr, 0);
  c.pid = -1;
  return c;
}

// mariposad on a data dir under `dir` against tritonsim at `triton`, with
// the demo's owner and network, writing its address to dir/d.addr.
inline std::vector<std::string> MariposadArgv(const std::string& dir, const std::string& triton) {
  return {"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir + "/data", "--addr-file", dir + "/d.addr",
          "--triton", triton, "--owner", "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
          "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "1s"};
}

inline void StopChild(Child* c, int sig = SIGTERM) {
  if (c->pid <= 0) return;
  kill(c->pid, sig);
  waitpid(c->pid, nullptr, 0);
  c->pid = -1;
}

// ------------------------------------------------- P2's workload and progress

// `services` services of `count` infrastructure containers of tritonsim's
// base@1 (give it a seed with that image: P2Seed), rolled 20 at a time.
inline std::string Manifest(const std::string& project, int services, int count, const std::string& tag) {
  std::string m = absl::StrCat("project: ", project, "\nservices:\n");
  for (int s = 0; s < services; ++s) {
    // The seed's image is a zone dataset: an infrastructure container
    // (the default compute_type, docker, is refused for it at apply).
    absl::StrAppend(&m, "  s", s, ":\n    compute_type: infrastructure\n    image: base@1\n    count: ", count,
                    "\n    resources: {memory: 64m}\n    start: {window: 1s}\n    update: {rolling: 20, max_surge: 20}\n",
                    tag.empty() ? "" : absl::StrCat("    tags: {rev: ", tag, "}\n"));
  }
  return m;
}

// tritonsim's --seed for Manifest's image.
inline const char* P2Seed() {
  return R"({"images": [{"uuid": "11111111-1111-4111-8111-111111111111", "name": "base", "version": "1"}]})";
}

// The CLI's exit status; its output goes to `out` ("" = dropped).
inline int Cli(const std::string& addr, const std::string& args, const std::string& out = "") {
  return std::system(
      absl::StrCat("cli/mariposa --addr ", addr, " ", args, " >", out.empty() ? "/dev/null" : out, " 2>&1").c_str());
}

inline int64_t Running(triton::HttpVmapiClient* vmapi, const std::string& project_tag) {
  triton::VmFilter f;
  f.state = "running";
  f.tags = {{"mariposa.project", project_tag}};
  auto n = vmapi->CountVms(f);
  return n.ok() ? *n : -1;
}

inline std::string ProjectUuid(const std::string& addr, const std::string& name, const std::string& dir) {
  std::string out = absl::StrCat(dir, "/project.json");
  if (std::system(absl::StrCat("cli/mariposa --addr ", addr, " -o json project get ", name, " > ", out).c_str()) != 0) {
    return "";
  }
  std::string j = Slurp(out);
  size_t at = j.find("\"uuid\": \"");
  return at == std::string::npos ? "" : j.substr(at + 9, 36);
}

// How long a benchmark waits before counting its progress again, having
// counted `n` of `want` in `took`. Counting scans every VM of the project
// (or every server) in tritonsim, which shares the two cores with mariposad:
// asked every 20 ms it took a fifth of tritonsim's CPU away from the run it
// measures. Far from the end, ask every 250 ms; within the last tenth,
// every 10 ms (the end is still seen within 10 ms) — but never more often
// than 4 counts' time, so that counting takes at most a fifth of a core
// however many VMs there are (at 30,000 a count every 10 ms took all of
// tritonsim's: issue 49, 4).
inline Clock::duration CountPause(int64_t n, int64_t want, Clock::duration took) {
  auto pause = std::chrono::milliseconds(n < want - want / 10 ? 250 : 10);
  return std::max<Clock::duration>(pause, 4 * took);
}

// Waits until `want` instances of the projects run, together; returns the
// seconds since `start` it took (-1: not within `limit_s`).
inline double WaitRunning(triton::HttpVmapiClient* vmapi, const std::vector<std::string>& project_uuids, int64_t want,
                          double limit_s, Clock::time_point start) {
  while (Secs(Clock::now() - start) < limit_s) {
    int64_t n = 0;
    auto asked = Clock::now();
    for (const std::string& p : project_uuids) n += std::max<int64_t>(0, Running(vmapi, p));
    if (n == want) return Secs(Clock::now() - start);
    std::this_thread::sleep_for(CountPause(n, want, Clock::now() - asked));
  }
  return -1;
}

// tritonsim's /_sim/stats (the calls it answered, by operation), or "".
inline std::string SimStats(const std::string& sim) {
  triton::HttpOptions o;
  o.base_url = sim;
  triton::HttpClient c("tritonsim", o, mariposa::RealClock::Get());
  auto r = c.Call("Stats", "GET", "/_sim/stats");
  return r.ok() ? r->body : "";
}

// How many `op` calls tritonsim answered so far, or -1.
inline int64_t SimCalls(const std::string& sim, const std::string& op) {
  std::string stats = SimStats(sim);
  if (stats.empty()) return -1;
  size_t at = stats.find(absl::StrCat("\"", op, "\":"));
  return at == std::string::npos ? 0 : std::atoll(stats.c_str() + at + op.size() + 3);
}

// Seconds from `start` until tritonsim has answered `want` `op` calls, or -1
// past `limit_s`.
inline double WaitSimCalls(const std::string& sim, const std::string& op, int64_t want, double limit_s,
                           Clock::time_point start) {
  while (Secs(Clock::now() - start) < limit_s) {
    if (SimCalls(sim, op) >= want) return Secs(Clock::now() - start);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return -1;
}

}  // namespace mariposa::bench

#endif  // MARIPOSA_TESTS_BENCH_BENCH_UTIL_H_
