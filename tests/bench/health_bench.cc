// Health benchmarks (PERFORMANCE.md P5-P7), each with its same-run baseline:
//   P5 tcp checks/s through the CheckEngine vs a raw non-blocking
//      connect/close loop, same concurrency;
//   P6 http checks/s (new connection each) vs a raw HTTP GET loop;
//   P7 a HealthMonitor with N endpoints at an interval: checks per second
//      against N/interval, start lateness p99, CPU.
// The targets are a forked epoll server (one core), so the side measured
// has the other. Rates are wall-clock; "per CPU-second" divides by the
// process's CPU time over the same span. Baseline and subject alternate,
// 5 rounds, median and spread reported.
//
//   bazel run -c opt //tests/bench:health_bench [-- --quick]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "health/check_engine.h"
#include "health/monitor.h"

namespace {

using Clock = std::chrono::steady_clock;
double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int ListenOn(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 4096) != 0) {
    perror("listen");
    exit(1);
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// The target: on `tcp_fd` accept and close; on `http_fd` read a request,
// answer 200 "ok", close. One thread, epoll. Runs in a forked child.
[[noreturn]] void Serve(int tcp_fd, int http_fd) {
  int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = tcp_fd;
  epoll_ctl(ep, EPOLL_CTL_ADD, tcp_fd, &ev);
  ev.data.fd = http_fd;
  epoll_ctl(ep, EPOLL_CTL_ADD, http_fd, &ev);
  static const char kAnswer[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
  std::map<int, std::string> bufs;
  epoll_event evs[256];
  while (true) {
    int n = epoll_wait(ep, evs, 256, -1);
    for (int i = 0; i < n; ++i) {
      int fd = evs[i].data.fd;
      if (fd == tcp_fd || fd == http_fd) {
        while (true) {
          int c = accept4(fd, nullptr, nullptr, SOCK_NONBLOCK);
          if (c < 0) break;
          if (fd == tcp_fd) {
            close(c);
            continue;
          }
          epoll_event ce{};
          ce.events = EPOLLIN;
          ce.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
          bufs[c].clear();
        }
        continue;
      }
      char b[2048];
      ssize_t r = read(fd, b, sizeof(b));
      if (r > 0) {
        std::string& s = bufs[fd];
        s.append(b, r);
        if (s.find("\r\n\r\n") == std::string::npos) continue;
        (void)!write(fd, kAnswer, sizeof(kAnswer) - 1);
      } else if (r < 0 && errno == EAGAIN) {
        continue;
      }
      bufs.erase(fd);
      close(fd);
    }
  }
}

// Raw baseline: `n` connections, `conc` in flight; with `http`, a GET each,
// read to EOF, status checked. Returns failures.
int RawLoop(int port, int n, int conc, bool http) {
  int ep = epoll_create1(0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  static const char kGet[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  int started = 0, finished = 0, failed = 0;
  std::map<int, std::string> bufs;
  auto start_one = [&] {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    epoll_event ev{};
    ev.events = EPOLLOUT;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    bufs[fd].clear();
    started++;
  };
  auto end_one = [&](int fd, bool ok) {
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    bufs.erase(fd);
    finished++;
    if (!ok) failed++;
    if (started < n) start_one();
  };
  for (int i = 0; i < conc && started < n; ++i) start_one();
  epoll_event evs[256];
  while (finished < n) {
    int k = epoll_wait(ep, evs, 256, 1000);
    for (int i = 0; i < k; ++i) {
      int fd = evs[i].data.fd;
      if (evs[i].events & EPOLLOUT) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0 || !http) {
          end_one(fd, err == 0);
          continue;
        }
        (void)!write(fd, kGet, sizeof(kGet) - 1);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
        continue;
      }
      char b[4096];
      ssize_t r = read(fd, b, sizeof(b));
      if (r > 0) {
        bufs[fd].append(b, r);
        continue;
      }
      if (r < 0 && errno == EAGAIN) continue;
      end_one(fd, bufs[fd].compare(0, 12, "HTTP/1.1 200") == 0);
    }
  }
  close(ep);
  return failed;
}

// The engine: `n` checks, `conc` in flight, submitted from this thread.
int EngineLoop(mariposa::health::CheckEngine& engine, int port, int n, int conc, bool http) {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0, failed = 0;
  mariposa::health::CheckSpec spec;
  spec.type = http ? "http" : "tcp";
  spec.address = "127.0.0.1";
  spec.port = port;
  spec.timeout = absl::Seconds(5);
  for (int i = 0; i < n; ++i) {
    {
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return in_flight < conc; });
      in_flight++;
    }
    engine.Submit(spec, [&](const mariposa::health::CheckResult& r) {
      std::lock_guard<std::mutex> l(mu);
      in_flight--;
      if (!r.pass) failed++;
      cv.notify_one();
    });
  }
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return in_flight == 0; });
  return failed;
}

struct Sample {
  double rate, per_cpu;
};

template <typename F>
Sample Measure(int n, F f) {
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  int failed = f();
  double wall = Secs(Clock::now() - t0);
  double cpu = CpuSeconds() - cpu0;
  if (failed > 0) fprintf(stderr, "  (%d of %d failed)\n", failed, n);
  return {n / wall, n / std::max(cpu, 1e-6)};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void Report(const char* name, const std::vector<Sample>& base, const std::vector<Sample>& subj, double target) {
  std::vector<double> br, bc, sr, sc;
  for (const auto& s : base) br.push_back(s.rate), bc.push_back(s.per_cpu);
  for (const auto& s : subj) sr.push_back(s.rate), sc.push_back(s.per_cpu);
  auto spread = [](const std::vector<double>& v) {
    return absl::StrCat(static_cast<int>(*std::min_element(v.begin(), v.end())), "-",
                        static_cast<int>(*std::max_element(v.begin(), v.end())));
  };
  double ratio = Median(sr) / Median(br);
  double ratio_cpu = Median(sc) / Median(bc);
  printf("%s baseline %8.0f/s (%s) %8.0f per CPU-s | engine %8.0f/s (%s) %8.0f per CPU-s | ratio %.2f wall, %.2f "
         "per CPU (target >= %.1f) %s\n",
         name, Median(br), spread(br).c_str(), Median(bc), Median(sr), spread(sr).c_str(), Median(sc), ratio,
         ratio_cpu, target, std::min(ratio, ratio_cpu) >= target ? "MET" : "NOT MET");
}

void P7(int port, int endpoints, absl::Duration interval, int measure_s) {
  std::mutex mu;
  std::map<int64_t, int64_t> per_second;
  std::vector<double> late_ms;
  std::atomic<bool> recording{false};
  std::atomic<int64_t> failed{0};
  auto t0 = Clock::now();
  mariposa::health::HealthMonitor::Hooks hooks;
  hooks.on_result = [&](const std::string&, bool pass, absl::Duration) {
    if (!pass) failed++;
    if (!recording) return;
    std::lock_guard<std::mutex> l(mu);
    per_second[static_cast<int64_t>(Secs(Clock::now() - t0))]++;
  };
  hooks.on_start = [&](absl::Duration late) {
    if (!recording) return;
    std::lock_guard<std::mutex> l(mu);
    late_ms.push_back(absl::ToDoubleMilliseconds(late));
  };
  mariposa::health::HealthMonitor monitor(hooks);
  std::vector<mariposa::health::Target> targets;
  for (int i = 0; i < endpoints; ++i) {
    mariposa::health::Target t;
    t.instance = absl::StrCat("i-", i);
    t.check = "tcp";
    t.spec.type = "tcp";
    t.spec.address = "127.0.0.1";
    t.spec.port = port;
    t.spec.timeout = absl::Seconds(2);
    t.policy.interval = t.policy.unhealthy_interval = interval;
    t.policy.start_window = absl::ZeroDuration();
    t.created = absl::Now();
    targets.push_back(std::move(t));
  }
  monitor.Assign("bench", std::move(targets));
  // First runs are spread over one interval; measure after two.
  std::this_thread::sleep_for(absl::ToChronoMilliseconds(interval * 2));
  double cpu0 = CpuSeconds();
  auto m0 = Clock::now();
  int64_t first = static_cast<int64_t>(Secs(m0 - t0)) + 1;
  recording = true;
  std::this_thread::sleep_for(std::chrono::seconds(measure_s + 1));
  recording = false;
  double cpu = (CpuSeconds() - cpu0) / Secs(Clock::now() - m0);
  std::lock_guard<std::mutex> l(mu);
  double expected = endpoints / absl::ToDoubleSeconds(interval);
  double worst = 0;
  int64_t lo = INT64_MAX, hi = 0;
  for (int64_t s = first; s < first + measure_s; ++s) {
    int64_t c = per_second[s];
    lo = std::min(lo, c);
    hi = std::max(hi, c);
    worst = std::max(worst, std::abs(c - expected) / expected);
  }
  std::sort(late_ms.begin(), late_ms.end());
  double p50 = late_ms.empty() ? 0 : late_ms[late_ms.size() / 2];
  double p99 = late_ms.empty() ? 0 : late_ms[std::min(late_ms.size() - 1, late_ms.size() * 99 / 100)];
  printf("P7 %d endpoints every %s: expected %.0f/s, per-second counts %ld-%ld over %ds (worst %.1f%%, target "
         "<= 10%%), lateness p50 %.1f ms p99 %.1f ms (target < 100), CPU %.2f cores (target <= 0.5), %ld failed: %s\n",
         endpoints, absl::FormatDuration(interval).c_str(), expected, static_cast<long>(lo), static_cast<long>(hi),
         measure_s, worst * 100, p50, p99, cpu, static_cast<long>(failed.load()),
         worst <= 0.10 && p99 < 100 && cpu <= 0.5 ? "MET" : "NOT MET");
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  int tcp_port = 0, http_port = 0;
  int tcp_fd = ListenOn(&tcp_port);
  int http_fd = ListenOn(&http_port);
  // Fork the target before any thread exists.
  pid_t server = fork();
  if (server == 0) Serve(tcp_fd, http_fd);
  close(tcp_fd);
  close(http_fd);
  const int rounds = quick ? 3 : 5;
  const int n = quick ? 10000 : 30000;
  const int conc = 64;
  printf("health_bench: %d rounds of %d checks, %d in flight; target server pid %d (tcp :%d, http :%d)\n", rounds, n,
         conc, server, tcp_port, http_port);
  {
    mariposa::health::CheckEngine engine;
    for (bool http : {false, true}) {
      std::vector<Sample> base, subj;
      for (int r = 0; r < rounds; ++r) {
        int port = http ? http_port : tcp_port;
        base.push_back(Measure(n, [&] { return RawLoop(port, n, conc, http); }));
        subj.push_back(Measure(n, [&] { return EngineLoop(engine, port, n, conc, http); }));
      }
      Report(http ? "P6 http" : "P5 tcp ", base, subj, 0.7);
    }
  }
  if (quick) {
    P7(tcp_port, 20000, absl::Seconds(2), 5);
  } else {
    P7(tcp_port, 100000, absl::Seconds(10), 20);
  }
  kill(server, SIGKILL);
  waitpid(server, nullptr, 0);
  return 0;
}
