// Zero downtime, measured (issue 51): a client resolves a service through
// tritonsim's CNS (honouring the records' TTL) and sends requests to its
// instances without pause (tritonsim --listen-vms answers for each VM on
// 127.a.b.c) while Mariposa rolls a 10-instance service, scales it 10 -> 4,
// replaces a broken instance, and is killed (SIGKILL) in the middle of a
// rollout (about 1,000 requests a second, one at a time, a new connection
// each). For each, the requests sent and failed and the longest gap
// between two answered requests are printed (ZERO_DOWNTIME lines) and
// checked: none fails where Mariposa removes an instance; a broken one fails
// the requests that reach it until CNS drops it (the client does not retry).
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kOwner[] = "930896af-bf8c-48d4-885c-6573a94b1853";
constexpr int kTtl = 1;  // tritonsim's CNS TTL (s); mariposad --cns-ttl the same: drains of 2 s

// The baseline `bash scripts/bench.sh` measures beside the test (issue 51):
// ZERO_DOWNTIME_BASELINE=no-drain runs the same changes with mariposad's
// --cns-ttl 0s (each removal at once), prints ZERO_DOWNTIME_NODRAIN lines
// and expects nothing of the failures.
bool NoDrain() {
  const char* v = std::getenv("ZERO_DOWNTIME_BASELINE");
  return v != nullptr && std::string(v) == "no-drain";
}

// A resolver as a client library is one: asks CNS over UDP, keeps the
// answer for its TTL.
class Resolver {
 public:
  explicit Resolver(const std::string& hostport) {
    size_t colon = hostport.rfind(':');
    to_.sin_family = AF_INET;
    to_.sin_port = htons(static_cast<uint16_t>(std::stoi(hostport.substr(colon + 1))));
    inet_pton(AF_INET, hostport.substr(0, colon).c_str(), &to_.sin_addr);
    fd_ = socket(AF_INET, SOCK_DGRAM, 0);
    timeval tv{0, 500000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~Resolver() { close(fd_); }
  // The addresses of `name`, from the cache while its TTL lasts.
  std::vector<std::string> Resolve(const std::string& name) {
    if (Clock::now() < expires_ && !cached_.empty()) return cached_;
    std::string q = {static_cast<char>(id_ >> 8), static_cast<char>(id_ & 0xff), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    size_t start = 0;
    while (start <= name.size()) {
      size_t dot = name.find('.', start);
      if (dot == std::string::npos) dot = name.size();
      q.push_back(static_cast<char>(dot - start));
      q.append(name, start, dot - start);
      start = dot + 1;
    }
    q += std::string("\0\0\x01\0\x01", 5);
    sendto(fd_, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to_), sizeof(to_));
    unsigned char buf[1500];
    ssize_t got = recv(fd_, buf, sizeof(buf), 0);
    ++id_;
    if (got < static_cast<ssize_t>(q.size())) return cached_;  // no answer: keep the last
    int answers = buf[6] << 8 | buf[7];
    size_t i = q.size();
    std::vector<std::string> out;
    uint32_t ttl = 0;
    for (int a = 0; a < answers && i + 16 <= static_cast<size_t>(got); ++a, i += 16) {
      ttl = static_cast<uint32_t>(buf[i + 6] << 24 | buf[i + 7] << 16 | buf[i + 8] << 8 | buf[i + 9]);
      char ip[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, buf + i + 12, ip, sizeof(ip));
      out.push_back(ip);
    }
    cached_ = out;
    expires_ = Clock::now() + std::chrono::seconds(ttl);
    return cached_;
  }

 private:
  int fd_ = -1;
  sockaddr_in to_{};
  uint16_t id_ = 1;
  std::vector<std::string> cached_;
  Clock::time_point expires_;
};

// Requests without pause, to the resolved instances in turn.
class Client {
 public:
  Client(const std::string& cns, std::string name) : resolver_(cns), name_(std::move(name)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Client() {
    stop_ = true;
    thread_.join();
  }
  struct Counts {
    int64_t sent = 0, failed = 0;
    double longest_gap_s = 0;
    std::vector<std::string> failures;  // the first few: address and why
  };
  // Counts since the last Take.
  Counts Take() {
    std::lock_guard<std::mutex> l(mu_);
    Counts c = counts_;
    counts_ = Counts{};
    return c;
  }

 private:
  void Loop() {
    size_t next = 0;
    Clock::time_point last_ok = Clock::now();
    while (!stop_) {
      std::vector<std::string> ips = resolver_.Resolve(name_);
      if (ips.empty()) {
        Count(false, "no address", &last_ok);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      std::string ip = ips[next++ % ips.size()];
      std::string twin = "127" + ip.substr(ip.find('.'));  // --listen-vms: 10.a.b.c answers on 127.a.b.c
      httplib::Client c(twin, 8080);
      c.set_connection_timeout(1);
      c.set_read_timeout(1);
      auto r = c.Get("/");
      Count(r && r->status == 200, r ? absl::StrCat(ip, " status ", r->status) : absl::StrCat(ip, " ", httplib::to_string(r.error())),
            &last_ok);
      // About 1,000 requests a second: steady traffic, not a flood that
      // would starve mariposad and the CLI of the machine's two cores.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  void Count(bool ok, const std::string& why, Clock::time_point* last_ok) {
    std::lock_guard<std::mutex> l(mu_);
    ++counts_.sent;
    if (!ok) {
      ++counts_.failed;
      if (counts_.failures.size() < 5) counts_.failures.push_back(why);
      return;
    }
    Clock::time_point now = Clock::now();
    counts_.longest_gap_s = std::max(counts_.longest_gap_s, std::chrono::duration<double>(now - *last_ok).count());
    *last_ok = now;
  }

  Resolver resolver_;
  std::string name_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  Counts counts_;
  std::thread thread_;
};

class ZeroDowntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("zero-downtime");
    sim_ = std::make_unique<Tritonsim>(std::vector<std::string>{
        "--servers", "10", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "50", "--listen-vms",
        "--cns-listen", "127.0.0.1:0", "--cns-ttl", std::to_string(kTtl), "--cns-delay-ms", "200"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    for (const std::string& line : sim_->extra_addrs()) {
      if (line.rfind("cns=udp://", 0) == 0) cns_ = line.substr(10);
    }
    ASSERT_FALSE(cns_.empty()) << "tritonsim names no CNS address";
    StartDaemon();
  }
  void StartDaemon() {
    daemon_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/data",
                                 "--triton", sim_->addr(), "--owner", kOwner, "--network",
                                 "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms", "--embedded-health",
                                 "--health-loopback", "--cns-ttl", NoDrain() ? "0s" : absl::StrCat(kTtl, "s")},
        dir_ + "/data");
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  }
  RunResult M(const std::vector<std::string>& args) { return Cli(daemon_->addr(), args); }
  std::string Manifest(int count, int rev) {
    return absl::StrCat(R"(project: zd
services:
  web:
    image: autopilotpattern/nginx@1.4.0
    count: )", count, R"(
    ports: [8080]
    tags: {rev: ")", rev, R"("}
    start: {window: 1s}
    update: {rolling: 2, max_surge: 2}
    healthchecks:
      http: {type: http, port: 8080, path: /, interval: 200ms, timeout: 150ms, retries: 2}
)");
  }
  void Apply(int count, int rev, bool wait = true) {
    WriteFile(dir_ + "/m.yaml", Manifest(count, rev));
    std::vector<std::string> args{"apply", "-f", dir_ + "/m.yaml", "--yes"};
    if (wait) args.insert(args.end(), {"--wait", "--timeout", "180s"});
    RunResult r = M(args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << daemon_->log();
  }
  // Converged, and every instance back in discovery.
  bool Settled(int count) {
    return Eventually(
        [&] {
          json st = json::parse(M({"-o", "json", "-j", "zd", "status", "-v"}).out, nullptr, false);
          if (!st.is_object() || !st.contains("services")) return false;
          int in = 0;
          for (const auto& i : st["services"][0]["instances"]) in += i.value("discovery", "") == "in";
          return st["services"][0].value("verdict", "") == "converged" && in == count;
        },
        absl::Seconds(180));
  }
  void Report(const std::string& what, const Client::Counts& c) {
    std::printf("%s %s sent %lld failed %lld longest_gap_s %.2f%s%s\n",
                NoDrain() ? "ZERO_DOWNTIME_NODRAIN" : "ZERO_DOWNTIME", what.c_str(),
                static_cast<long long>(c.sent), static_cast<long long>(c.failed), c.longest_gap_s,
                c.failures.empty() ? "" : " first_failures: ", c.failures.empty() ? "" : c.failures[0].c_str());
  }
  std::string Name() const { return absl::StrCat("zd-web.svc.", kOwner, ".dc1.cns.tritonsim.test"); }

  std::string dir_, cns_;
  std::unique_ptr<Tritonsim> sim_;
  std::unique_ptr<ServerProcess> daemon_;
};

TEST_F(ZeroDowntimeTest, NoRequestIsLostWhileMariposaChangesTheService) {
  Apply(10, 1);
  ASSERT_TRUE(Settled(10)) << M({"-j", "zd", "status", "-v"}).out;
  Client client(cns_, Name());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  Client::Counts warm = client.Take();
  Report("steady", warm);
  ASSERT_GT(warm.sent, 20) << "the client reaches the service";
  EXPECT_EQ(warm.failed, 0);

  Apply(10, 2);  // a rollout of all 10
  ASSERT_TRUE(Settled(10)) << M({"-j", "zd", "status", "-v"}).out;
  Client::Counts rollout = client.Take();
  Report("rollout-10", rollout);

  ASSERT_EQ(M({"-j", "zd", "scale", "web=4"}).exit_code, 0);
  ASSERT_TRUE(Settled(4)) << M({"-j", "zd", "status", "-v"}).out;
  Client::Counts scale = client.Take();
  Report("scale-10-to-4", scale);

  httplib::Client sim(sim_->addr());
  json running = json::parse(sim.Get("/vms?state=running&tag.mariposa.service=web")->body);
  ASSERT_FALSE(running.empty());
  std::string victim = running[0]["uuid"];
  RunResult marked = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "vm-health", victim,
                                 "unhealthy"});
  ASSERT_EQ(marked.exit_code, 0) << marked.err;
  ASSERT_TRUE(Eventually(  // replaced: gone from VMAPI
      [&] {
        json active = json::parse(sim.Get("/vms?state=active&tag.mariposa.service=web")->body);
        for (const json& vm : active) {
          if (vm["uuid"] == victim) return false;
        }
        return true;
      },
      absl::Seconds(60)))
      << M({"-j", "zd", "status", "-v"}).out;
  ASSERT_TRUE(Settled(4)) << M({"-j", "zd", "status", "-v"}).out;
  Client::Counts broken = client.Take();
  Report("replace-broken", broken);

  Apply(4, 3, /*wait=*/false);  // a rollout, and mariposad killed in its middle
  std::this_thread::sleep_for(std::chrono::seconds(3));
  daemon_->Kill();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  StartDaemon();
  ASSERT_TRUE(Settled(4)) << M({"-j", "zd", "status", "-v"}).out << daemon_->log();
  Client::Counts killed = client.Take();
  Report("rollout-killed", killed);

  for (const auto* c : {&rollout, &scale, &broken, &killed}) EXPECT_GT(c->sent, 50);
  if (NoDrain()) return;  // the baseline: removals without a drain fail requests
  EXPECT_EQ(rollout.failed, 0) << rollout.failures[0];
  EXPECT_EQ(scale.failed, 0) << scale.failures[0];
  EXPECT_EQ(killed.failed, 0) << killed.failures[0];
  // A broken instance answers 503 until it is out of CNS (two failed checks,
  // the job, CNS's delay and the client's TTL): a few seconds at most.
  EXPECT_LE(broken.longest_gap_s, 1.0);
}

}  // namespace
}  // namespace mariposa::testing
