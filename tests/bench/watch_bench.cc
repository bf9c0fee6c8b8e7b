// Watching VMAPI's change feed against polling it (issue 34), both measured
// in the same run on the same data center: tritonsim with 100,000 instances
// in 10 projects (10 services x 1,000 each), mariposad at its defaults
// (--resync 5s, --relist 5m), first watching, then restarted with
// --watch off on the same store and instances.
//
//   WATCH_kill_p99_ms   a VM destroyed with the control API (tritonsim ctl
//                       destroy-vm) until its replacement's CreateVm, p50/p99
//                       over the trials (target p99 <= 1000 ms)
//   WATCH_apply_ms      `mariposa apply` raising one service's count by one
//                       (one of the 10,000-instance projects, the CLI's
//                       start included) until the first CreateVm (target
//                       <= 100 ms)
//   WATCH_idle_cores    mariposad's CPU while nothing changes (target <= 0.02)
//   WATCH_idle_vmapi_per_min  the requests tritonsim answered for it
//
// Each beside its POLL_ twin (--watch off). A replacement's CreateVm is seen
// on the feed itself: the benchmark listens with mariposad's own VmFeed
// (a VM of the project not seen before), which tritonsim publishes the
// moment it answers CreateVm.
//
// `-- --quick`: 2 projects x 10 services x 500 (10,000 instances), 40 kill
// trials. `-- --smoke`: 2 projects x 2 services x 10, a few trials; fails
// when a step could not be done, never on timing.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "convergence/triton/http_clients.h"
#include "convergence/triton/vm_feed.h"
#include "tests/bench/bench_util.h"

namespace mariposa::bench {
namespace {

struct Sizes {
  int projects = 10, services = 10, count = 1000;
  int kill_trials = 40, poll_kill_trials = 8;
  int idle_s = 60;
  int servers = 200;  // 256 GiB each: 100,000 instances of 128 MiB (the smallest package) fit
};

// Requests tritonsim answered (every operation), from its stats.
int64_t Requests(const std::string& sim) {
  std::string stats = SimStats(sim);
  int64_t n = 0;
  size_t at = stats.find("\"calls\"");
  if (at == std::string::npos) return -1;
  size_t end = stats.find('}', at);
  for (size_t p = stats.find(':', at + 7); p != std::string::npos && p < end; p = stats.find(':', p + 1)) {
    n += std::atoll(stats.c_str() + p + 1);
  }
  return n;
}

// What the feed shows: every VM uuid seen, and new VMs as they appear.
class FeedWatch {
 public:
  explicit FeedWatch(const std::string& vmapi) {
    triton::VmFeedOptions o;
    o.vmapi_url = vmapi;
    o.instance = "watch-bench";
    o.clock = RealClock::Get();
    feed_ = std::make_unique<triton::VmFeed>(
        o,
        [this](std::vector<triton::Vm> vms) {
          auto now = Clock::now();
          std::lock_guard<std::mutex> l(mu_);
          for (const triton::Vm& vm : vms) {
            // A VM not known before is a create (its provisioning item, or
            // the running one that superseded it in the same batch).
            if (known_.insert(vm.uuid).second && vm.state != "destroyed") {
              auto p = vm.tags.find("mariposa.project");
              created_.push_back({p == vm.tags.end() ? "" : p->second, now});
            }
          }
          cv_.notify_all();
        },
        [this](const triton::VmFeedStatus& st) {
          std::lock_guard<std::mutex> l(mu_);
          watching_ = st.watching;
          cv_.notify_all();
        });
    feed_->Start();
  }
  ~FeedWatch() { feed_->Stop(); }
  bool WaitWatching(int seconds) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(seconds), [&] { return watching_; });
  }
  void Know(const std::string& uuid) {
    std::lock_guard<std::mutex> l(mu_);
    known_.insert(uuid);
  }
  size_t Created() {
    std::lock_guard<std::mutex> l(mu_);
    return created_.size();
  }
  // When the first VM of `project` created after index `from` appeared.
  bool WaitCreated(size_t from, const std::string& project, int seconds, Clock::time_point* at) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(seconds), [&] {
      for (size_t k = from; k < created_.size(); ++k) {
        if (created_[k].first == project) {
          *at = created_[k].second;
          return true;
        }
      }
      return false;
    });
  }

 private:
  std::unique_ptr<triton::VmFeed> feed_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool watching_ = false;
  std::set<std::string> known_;
  std::vector<std::pair<std::string, Clock::time_point>> created_;
};

struct ModeResult {
  std::vector<double> kill_ms;
  double apply_ms = -1, apply_cli_ms = -1, idle_cores = -1, idle_per_min = -1;
  bool ok = true;
};

// Destroys running instances one by one and times their replacements; then
// one apply; then idle. `mode` names the run in messages.
ModeResult Measure(const std::string& mode, const Sizes& z, const std::string& dir, const Child& sim, const Child& d,
                   FeedWatch* watch, const std::vector<std::string>& uuids, int trials, int round) {
  ModeResult r;
  triton::HttpOptions o;
  o.base_url = sim.addr;
  triton::HttpClient ctl("tritonsim", o, RealClock::Get());
  std::mt19937 rng(7 + round);
  for (int t = 0; t < trials; ++t) {
    const std::string& project = uuids[t % uuids.size()];
    // One page of the project's running VMs at a random offset (one
    // request: the benchmark must not load tritonsim while it measures).
    int per_project = z.services * z.count;
    auto page = ctl.Call("ListVms", "GET",
                         absl::StrCat("/vms?state=running&limit=20&tag.mariposa.project=", project,
                                      "&offset=", rng() % std::max(1, per_project - 40)));
    std::vector<std::string> running;
    for (size_t at = page.ok() ? page->body.find("\"uuid\":\"") : std::string::npos; at != std::string::npos;
         at = page->body.find("\"uuid\":\"", at + 1)) {
      running.push_back(page->body.substr(at + 8, 36));
    }
    if (running.empty()) {
      fprintf(stderr, "FAIL %s: no running VM of project %s to destroy\n", mode.c_str(), project.c_str());
      r.ok = false;
      break;
    }
    const std::string victim = running[rng() % running.size()];
    size_t from = watch->Created();
    auto t0 = Clock::now();
    if (!ctl.Call("DestroyVm", "POST", "/_sim/vms/" + victim + "/destroy", "{}").ok()) {
      r.ok = false;
      break;
    }
    Clock::time_point at;
    if (!watch->WaitCreated(from, project, 30, &at)) {
      fprintf(stderr, "FAIL %s: %s was not replaced within 30 s\n", mode.c_str(), victim.c_str());
      r.ok = false;
      break;
    }
    r.kill_ms.push_back(Secs(at - t0) * 1000);
    if (r.kill_ms.back() > 1000) {
      fprintf(stderr, "%s: %s (project %s) replaced after %.0f ms\n", mode.c_str(), victim.c_str(), project.c_str(),
              r.kill_ms.back());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the replacement settles
  }
  // One apply: project 0's service s0 gets one more instance.
  std::ofstream(dir + "/more.yaml") << Manifest("p0", z.services, z.count, "").replace(
      Manifest("p0", z.services, z.count, "").find(absl::StrCat("count: ", z.count)),
      absl::StrCat("count: ", z.count).size(), absl::StrCat("count: ", z.count + 1 + round));
  size_t from = watch->Created();
  auto t0 = Clock::now();
  int applied = Cli(d.addr, absl::StrCat("apply -f ", dir, "/more.yaml --yes"));
  r.apply_cli_ms = Secs(Clock::now() - t0) * 1000;  // the CLI's own run: start, plan, commit, exit
  Clock::time_point at;
  if (applied != 0 || !watch->WaitCreated(from, uuids[0], 60, &at)) {
    fprintf(stderr, "FAIL %s: the apply (exit %d) brought no CreateVm within 60 s\n", mode.c_str(), applied);
    r.ok = false;
  } else {
    r.apply_ms = Secs(at - t0) * 1000;
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // the new instance runs; nothing is left to do
  double cpu0 = CpuSeconds(d.pid);
  int64_t req0 = Requests(sim.addr);
  auto i0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(z.idle_s));
  double wall = Secs(Clock::now() - i0);
  double cpu1 = CpuSeconds(d.pid);
  int64_t req1 = Requests(sim.addr);
  r.idle_cores = (cpu1 - cpu0) / wall;
  // The control API (the stats asked here) is not counted by tritonsim.
  r.idle_per_min = (req1 - req0) * 60.0 / wall;
  if (cpu0 < 0 || cpu1 < 0 || req0 < 0 || req1 < 0) r.ok = false;
  return r;
}

int Main(bool smoke, bool quick) {
  Sizes z;
  if (smoke) z = Sizes{2, 2, 10, 3, 2, 2, 5};
  if (quick) z = Sizes{2, 10, 500, 40, 4, 10, 50};
  char tmpl[] = "/tmp/watch-bench-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string dir = tmpl;
  std::ofstream(dir + "/seed.json") << P2Seed();
  Child sim = StartServer({"deploy/tritonsim/tritonsim", "--listen", "127.0.0.1:0", "--servers",
                           absl::StrCat(z.servers), "--seed", dir + "/seed.json", "--addr-file", dir + "/sim.addr"},
                          dir + "/sim.addr", "");
  if (sim.pid < 0) return 1;
  auto daemon = [&](bool watch) {
    std::vector<std::string> argv = MariposadArgv(dir, sim.addr);
    argv.back() = "5s";  // --resync at its default
    for (const char* a : {"--max-jobs", "64", "--max-jobs-per-project", "64"}) argv.push_back(a);
    argv.push_back("--watch");
    argv.push_back(watch ? "on" : "off");
    return StartServer(argv, dir + "/d.addr", dir + "/mariposad.log");
  };
  Child d = daemon(true);
  bool ok = d.pid > 0;
  FeedWatch watch(sim.addr);
  ok = ok && watch.WaitWatching(10);
  triton::HttpOptions o;
  o.base_url = sim.addr;
  triton::HttpVmapiClient vmapi(o, RealClock::Get());

  // The data center: every project applied, all running.
  std::vector<std::string> uuids;
  auto t0 = Clock::now();
  for (int p = 0; ok && p < z.projects; ++p) {
    std::string name = absl::StrCat("p", p);
    std::ofstream(dir + "/" + name + ".yaml") << Manifest(name, z.services, z.count, "");
    ok = Cli(d.addr, absl::StrCat("apply -f ", dir, "/", name, ".yaml --yes")) == 0;
    uuids.push_back(ProjectUuid(d.addr, name, dir));
  }
  int64_t total = int64_t{z.projects} * z.services * z.count;
  double took = ok ? WaitRunning(&vmapi, uuids, total, smoke ? 120 : 900, t0) : -1;
  if (took < 0) {
    fprintf(stderr, "FAIL: the %lld instances never all ran (see %s/mariposad.log)\n", static_cast<long long>(total),
            dir.c_str());
    ok = false;
  } else {
    printf("# %lld instances in %d projects created and running in %.1f s\n", static_cast<long long>(total),
           z.projects, took);
  }
  std::this_thread::sleep_for(std::chrono::seconds(smoke ? 2 : 10));  // every project synced since

  ModeResult watched, polled;
  if (ok) watched = Measure("watching", z, dir, sim, d, &watch, uuids, z.kill_trials, 0);
  // The same data center polled: mariposad restarted with --watch off.
  StopChild(&d);
  if (ok) {
    d = daemon(false);
    ok = d.pid > 0;
    std::this_thread::sleep_for(std::chrono::seconds(smoke ? 3 : 15));  // settled: every project listed
  }
  if (ok) polled = Measure("polling", z, dir, sim, d, &watch, uuids, z.poll_kill_trials, 1);
  ok = ok && watched.ok && polled.ok && !watched.kill_ms.empty() && !polled.kill_ms.empty();
  if (ok) {
    printf("WATCH_kill_p99_ms %.0f ms %.0f %.3fx (p50 %.0f ms over %zu; polling p50 %.0f ms over %zu; target <= 1000 ms)\n",
           Pct(watched.kill_ms, 0.99), Pct(polled.kill_ms, 0.99),
           Pct(watched.kill_ms, 0.99) / Pct(polled.kill_ms, 0.99), Pct(watched.kill_ms, 0.5), watched.kill_ms.size(),
           Pct(polled.kill_ms, 0.5), polled.kill_ms.size());
    printf("WATCH_apply_ms %.0f ms %.0f %.3fx (apply to the first CreateVm, %d-instance project; the `mariposa apply` "
           "process itself ran %.0f ms; target <= 100 ms)\n",
           watched.apply_ms, polled.apply_ms, watched.apply_ms / polled.apply_ms, z.services * z.count,
           watched.apply_cli_ms);
    printf("WATCH_idle_cores %.4f cores %.4f %.3fx (mariposad idle at %lld instances; target <= 0.02)\n",
           watched.idle_cores, polled.idle_cores, watched.idle_cores / std::max(polled.idle_cores, 1e-9),
           static_cast<long long>(total));
    printf("WATCH_idle_vmapi_per_min %.0f req/min %.0f %.3fx (tritonsim requests while idle)\n",
           watched.idle_per_min, polled.idle_per_min, watched.idle_per_min / std::max(polled.idle_per_min, 1e-9));
  }
  StopChild(&d);
  StopChild(&sim);
  if (ok && std::system(absl::StrCat("rm -rf ", dir).c_str()) != 0) fprintf(stderr, "could not remove %s\n", dir.c_str());
  if (smoke) printf(ok ? "smoke: watching and polling did their work\n" : "smoke: FAILED\n");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace mariposa::bench

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as soon as it is measured
  bool smoke = false, quick = false;
  for (int i = 1; i < argc; ++i) {
    smoke |= std::strcmp(argv[i], "--smoke") == 0;
    quick |= std::strcmp(argv[i], "--quick") == 0;
  }
  return mariposa::bench::Main(smoke, quick);
}
