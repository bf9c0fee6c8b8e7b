// The check engine against real loopback servers, including bad ones: each
// bad target must cost no more than the check's timeout and a bounded buffer.
#include "health/check_engine.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::health {
namespace {

// A raw TCP server on 127.0.0.1 that treats every connection with `serve`
// on its own thread; stops (and joins) on destruction.
class RawServer {
 public:
  explicit RawServer(std::function<void(int fd, const std::atomic<bool>& stop)> serve) : serve_(std::move(serve)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(fd_, 1024);
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accept_ = std::thread([this] {
      while (!stop_) {
        int c = accept(fd_, nullptr, nullptr);
        if (c < 0) break;
        std::lock_guard<std::mutex> l(mu_);
        workers_.emplace_back([this, c] {
          serve_(c, stop_);
          close(c);
        });
      }
    });
  }
  ~RawServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    accept_.join();
    std::lock_guard<std::mutex> l(mu_);
    for (auto& t : workers_) t.join();
  }
  int port() const { return port_; }

 private:
  std::function<void(int, const std::atomic<bool>&)> serve_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

// Reads the request head (up to a blank line or 8 KiB); "" when the peer
// closed before a whole head came.
std::string ReadRequest(int fd) {
  std::string got;
  char buf[1024];
  while (got.find("\r\n\r\n") == std::string::npos && got.size() < 8192) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return "";
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

void SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// Waits until stop or `d` passed.
void Idle(const std::atomic<bool>& stop, absl::Duration d) {
  absl::Time end = absl::Now() + d;
  while (!stop && absl::Now() < end) absl::SleepFor(absl::Milliseconds(20));
}

RawServer Http(int status, const std::string& body) {
  return RawServer([status, body](int fd, const std::atomic<bool>&) {
    ReadRequest(fd);
    SendAll(fd, absl::StrCat("HTTP/1.1 ", status, " X\r\nContent-Length: ", body.size(),
                             "\r\nConnection: close\r\n\r\n", body));
  });
}

CheckResult Check(CheckEngine& engine, CheckSpec spec) {
  std::promise<CheckResult> p;
  auto f = p.get_future();
  engine.Submit(std::move(spec), [&p](const CheckResult& r) { p.set_value(r); });
  return f.get();
}

CheckSpec HttpCheck(int port, absl::Duration timeout = absl::Seconds(2)) {
  CheckSpec s;
  s.type = "http";
  s.address = "127.0.0.1";
  s.port = port;
  s.path = "/healthz";
  s.timeout = timeout;
  return s;
}

TEST(CheckEngineTest, HttpPassAndWrongStatusAndBody) {
  CheckEngine engine(RealClock::Get());
  RawServer ok = Http(200, "all good");
  auto r = Check(engine, HttpCheck(ok.port()));
  EXPECT_TRUE(r.pass) << r.detail;
  CheckSpec body = HttpCheck(ok.port());
  body.expect_body = "good$";
  EXPECT_TRUE(Check(engine, body).pass);
  body.expect_body = "^bad";
  r = Check(engine, body);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.detail, "body does not match /^bad/");

  RawServer down = Http(503, "no");
  r = Check(engine, HttpCheck(down.port()));
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.detail, "status 503");
  CheckSpec accept503 = HttpCheck(down.port());
  accept503.expect_status = {{200, 299}, {503, 503}};
  EXPECT_TRUE(Check(engine, accept503).pass);
}

TEST(CheckEngineTest, RefusedAndReset) {
  CheckEngine engine(RealClock::Get());
  int port = 0;
  {
    RawServer gone([](int, const std::atomic<bool>&) {});
    port = gone.port();
  }  // closed: nothing listens there now
  auto r = Check(engine, HttpCheck(port));
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("onnect"), std::string::npos) << r.detail;
  CheckSpec tcp;
  tcp.type = "tcp";
  tcp.address = "127.0.0.1";
  tcp.port = port;
  r = Check(engine, tcp);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.detail, "Connection refused");

  RawServer reset([](int fd, const std::atomic<bool>&) {
    ReadRequest(fd);
    linger l{1, 0};  // close with RST
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  });
  r = Check(engine, HttpCheck(reset.port()));
  EXPECT_FALSE(r.pass);
  EXPECT_FALSE(r.detail.empty());
}

TEST(CheckEngineTest, BadTargetsCostTheirTimeoutAndABoundedBuffer) {
  CheckEngine engine(RealClock::Get());
  RawServer hang([](int fd, const std::atomic<bool>& stop) {
    ReadRequest(fd);
    Idle(stop, absl::Seconds(30));  // accepts and never answers
  });
  RawServer drip([](int fd, const std::atomic<bool>& stop) {
    ReadRequest(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
    for (int i = 0; i < 1000 && !stop; ++i) {
      SendAll(fd, "x");
      Idle(stop, absl::Seconds(1));  // a byte per second
    }
  });
  RawServer huge([](int fd, const std::atomic<bool>& stop) {
    ReadRequest(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n");  // 10 GiB
    std::string chunk(1 << 16, 'z');
    for (int i = 0; i < 163840 && !stop; ++i) {
      if (send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) <= 0) return;
    }
  });
  const absl::Duration timeout = absl::Milliseconds(700);
  auto r = Check(engine, HttpCheck(hang.port(), timeout));
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.detail, "timed out after 700ms");
  EXPECT_LT(r.took, timeout + absl::Milliseconds(400));

  CheckSpec dripping = HttpCheck(drip.port(), timeout);
  dripping.expect_body = "never";
  r = Check(engine, dripping);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.detail, "timed out after 700ms");
  EXPECT_LT(r.took, timeout + absl::Milliseconds(400));

  // 10 GiB: the status alone decides (the body is not read) …
  r = Check(engine, HttpCheck(huge.port(), timeout));
  EXPECT_TRUE(r.pass) << r.detail;
  EXPECT_LT(r.took, timeout);
  // … and with expect_body only the first 64 KiB are read.
  CheckSpec body = HttpCheck(huge.port(), timeout);
  body.expect_body = "^z+$";
  r = Check(engine, body);
  EXPECT_TRUE(r.pass) << r.detail;
  EXPECT_LT(r.took, timeout);
  body.expect_body = "y";
  r = Check(engine, body);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.detail, "body does not match /y/");

  // tcp: a server that accepts and never answers the expected banner.
  CheckSpec tcp;
  tcp.type = "tcp";
  tcp.address = "127.0.0.1";
  tcp.port = hang.port();
  tcp.send = "PING\r\n";
  tcp.expect = "^\\+PONG";
  tcp.timeout = timeout;
  r = Check(engine, tcp);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.detail, "timed out after 700ms");
  EXPECT_LT(r.took, timeout + absl::Milliseconds(400));
}

TEST(CheckEngineTest, TcpSendExpect) {
  CheckEngine engine(RealClock::Get());
  RawServer pong([](int fd, const std::atomic<bool>&) {
    char buf[64];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0 && std::string(buf, static_cast<size_t>(n)).rfind("PING", 0) == 0) SendAll(fd, "+PONG\r\n");
  });
  CheckSpec tcp;
  tcp.type = "tcp";
  tcp.address = "127.0.0.1";
  tcp.port = pong.port();
  EXPECT_TRUE(Check(engine, tcp).pass);  // connecting is enough
  tcp.send = "PING\r\n";
  tcp.expect = "^\\+PONG";
  EXPECT_TRUE(Check(engine, tcp).pass);
  tcp.expect = "^-ERR";
  auto r = Check(engine, tcp);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.detail, "closed before the reply matched");
}

TEST(CheckEngineTest, HttpsWithASelfSignedCertificate) {
  std::string dir = testing::TempDir("tls");
  auto gen = testing::RunProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                                  dir + "/key.pem", "-out", dir + "/cert.pem", "-days", "1", "-subj", "/CN=localhost"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  httplib::SSLServer server((dir + "/cert.pem").c_str(), (dir + "/key.pem").c_str());
  ASSERT_TRUE(server.is_valid());
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok", "text/plain"); });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  CheckEngine engine(RealClock::Get());
  CheckSpec s = HttpCheck(port);
  s.type = "https";
  auto r = Check(engine, s);
  EXPECT_FALSE(r.pass);  // not trusted
  EXPECT_FALSE(r.detail.empty());
  s.tls_skip_verify = true;
  r = Check(engine, s);
  EXPECT_TRUE(r.pass) << r.detail;
  server.stop();
  t.join();
}

// Issue 49, 2: checks of one target use one connection while it keeps it
// open (keep-alive); a target that closes it (Connection: close) gets a new
// one each time, and a kept connection the target closed is not a failure.
TEST(CheckEngineTest, HttpChecksKeepTheirConnection) {
  std::atomic<int> connections{0};
  RawServer keep([&connections](int fd, const std::atomic<bool>& stop) {
    connections++;
    while (!stop) {
      if (ReadRequest(fd).empty()) return;
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + std::string(1000, 'x'));
    }
  });
  CheckEngine engine(RealClock::Get());
  for (int i = 0; i < 10; ++i) {
    auto r = Check(engine, HttpCheck(keep.port()));
    ASSERT_TRUE(r.pass) << r.detail;
  }
  EXPECT_EQ(connections.load(), 1) << "10 checks of one target opened " << connections.load() << " connections";

  std::atomic<int> closed{0};
  RawServer close_each([&closed](int fd, const std::atomic<bool>&) {
    closed++;
    ReadRequest(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  });
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(Check(engine, HttpCheck(close_each.port())).pass);
  EXPECT_EQ(closed.load(), 5);

  // A server that answers once and closes without saying so: the next
  // check finds the kept connection dead and connects again.
  std::atomic<int> quiet{0};
  RawServer quiet_close([&quiet](int fd, const std::atomic<bool>&) {
    quiet++;
    ReadRequest(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  for (int i = 0; i < 4; ++i) {
    auto r = Check(engine, HttpCheck(quiet_close.port()));
    EXPECT_TRUE(r.pass) << i << ": " << r.detail;
  }
  EXPECT_EQ(quiet.load(), 4);
}

// A kept connection is not trusted blindly: bytes the target left on it
// that are not a reply, a body longer than the engine reads, a connection
// older than kConnectionLifetime — each makes the next check connect anew,
// and none of them fails a check of a healthy target.
TEST(CheckEngineTest, AKeptConnectionIsUsedOnlyWhileItCanBeTrusted) {
  std::atomic<int> junk_connections{0};
  RawServer junk([&junk_connections](int fd, const std::atomic<bool>& stop) {
    junk_connections++;
    while (!stop) {
      if (ReadRequest(fd).empty()) return;
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      Idle(stop, absl::Milliseconds(50));
      SendAll(fd, "garbage after the reply\r\n");  // arrives after the check ended
    }
  });
  CheckEngine engine(RealClock::Get());
  for (int i = 0; i < 3; ++i) {
    auto r = Check(engine, HttpCheck(junk.port()));
    EXPECT_TRUE(r.pass) << i << ": " << r.detail;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(junk_connections.load(), 3);

  std::atomic<int> big_connections{0};
  RawServer big([&big_connections](int fd, const std::atomic<bool>& stop) {
    big_connections++;
    while (!stop) {
      if (ReadRequest(fd).empty()) return;
      std::string body(kMaxBody + 1000, 'b');
      SendAll(fd, absl::StrCat("HTTP/1.1 200 OK\r\nContent-Length: ", body.size(), "\r\n\r\n", body));
    }
  });
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Check(engine, HttpCheck(big.port())).pass) << i;
  EXPECT_EQ(big_connections.load(), 3) << "a body read only in part left its connection kept";

  std::atomic<int> connections{0};
  RawServer keep([&connections](int fd, const std::atomic<bool>& stop) {
    connections++;
    while (!stop) {
      if (ReadRequest(fd).empty()) return;
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
  });
  SimulatedClock clock(absl::Now());
  CheckEngine simulated(&clock);
  EXPECT_TRUE(Check(simulated, HttpCheck(keep.port())).pass);
  clock.Advance(kConnectionLifetime - absl::Seconds(1));
  EXPECT_TRUE(Check(simulated, HttpCheck(keep.port())).pass);
  EXPECT_EQ(connections.load(), 1);
  clock.Advance(absl::Seconds(2));
  EXPECT_TRUE(Check(simulated, HttpCheck(keep.port())).pass);
  EXPECT_EQ(connections.load(), 2) << "a connection older than " << kConnectionLifetime << " was used again";
}

// Past the engine's limit the least recently used kept connection is
// closed; a target checked by several checks at once keeps each of their
// connections for its next checks.
TEST(CheckEngineTest, KeptConnectionsAreTheMostRecentlyUsed) {
  auto keep_alive = [](std::atomic<int>* opened, absl::Duration answer_after) {
    return std::make_unique<RawServer>([opened, answer_after](int fd, const std::atomic<bool>& stop) {
      ++*opened;
      while (!stop) {
        if (ReadRequest(fd).empty()) return;
        Idle(stop, answer_after);
        SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      }
    });
  };
  std::atomic<int> opened[4] = {0, 0, 0, 0};
  std::vector<std::unique_ptr<RawServer>> targets;
  for (auto& o : opened) targets.push_back(keep_alive(&o, absl::ZeroDuration()));
  CheckEngine engine(RealClock::Get(), 3);
  auto check = [&](int t) {
    CheckResult r = Check(engine, HttpCheck(targets[t]->port()));
    EXPECT_TRUE(r.pass) << "target " << t << ": " << r.detail;
  };
  auto counts = [&] {
    return std::vector<int>{opened[0].load(), opened[1].load(), opened[2].load(), opened[3].load()};
  };
  for (int t : {0, 1, 2, 3}) check(t);  // 0's connection is the least recently used past 3
  EXPECT_THAT(counts(), ::testing::ElementsAre(1, 1, 1, 1));
  for (int t : {1, 2, 3}) check(t);  // kept: no new connection
  EXPECT_THAT(counts(), ::testing::ElementsAre(1, 1, 1, 1));
  check(0);  // closed when 3's was kept: connects anew; 1's (now the oldest) is closed
  EXPECT_THAT(counts(), ::testing::ElementsAre(2, 1, 1, 1));
  for (int t : {2, 3, 0}) check(t);
  EXPECT_THAT(counts(), ::testing::ElementsAre(2, 1, 1, 1));
  check(1);
  EXPECT_THAT(counts(), ::testing::ElementsAre(2, 2, 1, 1));

  // Three checks of one slow target at once: three connections, each kept
  // and used again by the next three.
  std::atomic<int> slow_opened{0};
  auto slow = keep_alive(&slow_opened, absl::Milliseconds(100));
  CheckEngine wide(RealClock::Get(), 8);
  for (int round = 0; round < 2; ++round) {
    std::vector<std::promise<CheckResult>> results(3);
    for (auto& p : results) wide.Submit(HttpCheck(slow->port()), [&p](const CheckResult& r) { p.set_value(r); });
    for (auto& p : results) EXPECT_TRUE(p.get_future().get().pass) << "round " << round;
  }
  EXPECT_EQ(slow_opened.load(), 3) << "three checks at once, twice, opened " << slow_opened.load() << " connections";
}

// A target gone since its connection was kept: the check tries a new
// connection and reports why that failed.
TEST(CheckEngineTest, AKeptConnectionToATargetNowGoneFailsAsRefused) {
  CheckEngine engine(RealClock::Get());
  int port = 0;
  {
    RawServer once([](int fd, const std::atomic<bool>& stop) {
      if (ReadRequest(fd).empty()) return;
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      Idle(stop, absl::Seconds(30));  // the connection stays open until the server stops
    });
    port = once.port();
    EXPECT_TRUE(Check(engine, HttpCheck(port)).pass);
  }
  auto r = Check(engine, HttpCheck(port));
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.detail, absl::StrCat("could not connect to 127.0.0.1:", port, ": Connection refused"));
}

TEST(CheckEngineTest, RequestBytesCannotBeInjected) {
  CheckSpec s = HttpCheck(80);
  s.headers = {{"X-A", "1\r\nX-Injected: yes"}};
  EXPECT_EQ(ValidateCheck(s).message(), "header X-A's value has a control character");
  s.headers = {{"X A", "1"}};
  EXPECT_EQ(ValidateCheck(s).message(), "header name \"X A\" is not a word");
  s.headers = {};
  s.method = "GET / HTTP/1.0\r\n";
  EXPECT_EQ(ValidateCheck(s).message(), "method \"GET / HTTP/1.0\r\n\" is not a word");
  s.method = "GET";
  s.path = "/a b";
  EXPECT_EQ(ValidateCheck(s).message(), "path \"/a b\" has a space or a control character");
}

// A handle set up for one check is used again only by checks set up the
// same way: a check's headers and method are its own.
TEST(CheckEngineTest, ChecksOfOneTargetKeepTheirOwnHeadersAndMethod) {
  RawServer server([](int fd, const std::atomic<bool>&) {
    std::string got = ReadRequest(fd);
    int status = got.find("X-Probe: 1") != std::string::npos ? 200 : got.rfind("HEAD ", 0) == 0 ? 204 : 403;
    SendAll(fd, absl::StrCat("HTTP/1.1 ", status, " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
  });
  CheckEngine engine(RealClock::Get());
  CheckSpec with = HttpCheck(server.port());
  with.headers = {{"X-Probe", "1"}};
  CheckSpec head = HttpCheck(server.port());
  head.method = "HEAD";
  head.expect_status = {{204, 204}};
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(Check(engine, with).pass) << i;
    auto r = Check(engine, HttpCheck(server.port()));
    EXPECT_FALSE(r.pass) << i;
    EXPECT_EQ(r.detail, "status 403");
    EXPECT_TRUE(Check(engine, head).pass) << i;
  }
}

// A proxy set for the agent's downloads is not used for checks: they go
// straight to the instance.
TEST(CheckEngineTest, ChecksIgnoreTheProxyEnvironment) {
  RawServer ok = Http(200, "ok");
  setenv("http_proxy", "http://127.0.0.1:1", 1);  // nothing listens there
  setenv("all_proxy", "http://127.0.0.1:1", 1);
  CheckEngine engine(RealClock::Get());
  auto r = Check(engine, HttpCheck(ok.port()));
  unsetenv("http_proxy");
  unsetenv("all_proxy");
  EXPECT_TRUE(r.pass) << r.detail;
}

TEST(CheckEngineTest, ManyAtOnceOnOneThread) {
  CheckEngine engine(RealClock::Get());
  RawServer ok = Http(200, "ok");
  RawServer hang([](int fd, const std::atomic<bool>& stop) {
    ReadRequest(fd);
    Idle(stop, absl::Seconds(5));
  });
  constexpr int kChecks = 300;
  std::atomic<int> passed{0}, failed{0};
  std::promise<void> all;
  std::atomic<int> left{kChecks};
  absl::Time start = absl::Now();
  for (int i = 0; i < kChecks; ++i) {
    bool hanging = i % 3 == 0;
    CheckSpec s = HttpCheck(hanging ? hang.port() : ok.port(), hanging ? absl::Seconds(1) : absl::Seconds(5));
    if (i % 2 == 0) {
      s.type = "tcp";
      s.port = ok.port();
    }
    engine.Submit(s, [&](const CheckResult& r) {
      (r.pass ? passed : failed)++;
      if (--left == 0) all.set_value();
    });
  }
  all.get_future().wait();
  // The hanging third (odd ones among them are http) time out together,
  // not one after another.
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  EXPECT_EQ(passed + failed, kChecks);
  EXPECT_EQ(failed.load(), kChecks / 6);
  EXPECT_EQ(engine.in_flight(), 0u);
}

// A result's callback may submit the next check (as a feeder on the loop
// thread does): it starts on the loop's next pass, not after a poll's
// timeout, and one submitted while the engine stops still gets its answer.
TEST(CheckEngineTest, ChecksSubmittedFromACallbackRunAndEndOnStop) {
  RawServer ok = Http(200, "ok");
  {
    CheckEngine engine(RealClock::Get());
    constexpr int kChain = 100;
    std::promise<int> last;
    std::function<void(int)> next = [&](int i) {
      CheckSpec s = HttpCheck(ok.port());
      s.type = "tcp";
      engine.Submit(s, [&, i](const CheckResult& r) {
        if (!r.pass || i + 1 == kChain) {
          last.set_value(r.pass ? i + 1 : -i);
          return;
        }
        next(i + 1);
      });
    };
    absl::Time start = absl::Now();
    next(0);
    EXPECT_EQ(last.get_future().get(), kChain);
    // A check waiting for the loop's 100 ms poll each would take 10 s.
    EXPECT_LT(absl::Now() - start, absl::Seconds(5));
    EXPECT_EQ(engine.in_flight(), 0u);
  }
  RawServer hang([](int fd, const std::atomic<bool>& stop) {
    ReadRequest(fd);
    Idle(stop, absl::Seconds(5));
  });
  auto engine = std::make_unique<CheckEngine>(RealClock::Get());
  std::vector<std::string> details;  // written on the loop thread, read after it ended
  CheckEngine* e = engine.get();  // the callbacks run while `engine` is being reset
  e->Submit(HttpCheck(hang.port(), absl::Seconds(30)), [&](const CheckResult& r) {
    details.push_back(r.detail);
    e->Submit(HttpCheck(ok.port()), [&](const CheckResult& r2) { details.push_back(r2.detail); });
  });
  // The first check is on its way (the server holds its request) before the engine stops.
  while (engine->in_flight() == 0) absl::SleepFor(absl::Milliseconds(5));
  absl::SleepFor(absl::Milliseconds(100));
  engine.reset();
  EXPECT_EQ(details, (std::vector<std::string>{"engine stopped", "engine stopped"}));
}

TEST(CheckEngineTest, InvalidSpecsAreRefused) {
  CheckSpec s;
  s.address = "not-an-ip";
  EXPECT_FALSE(ValidateCheck(s).ok());
  s.address = "127.0.0.1";
  s.expect_body = "(";
  EXPECT_EQ(ValidateCheck(s).message(), "expect_body \"(\" is not a regular expression");
  CheckEngine engine(RealClock::Get());
  auto r = Check(engine, s);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("expect_body"), std::string::npos);
}

}  // namespace
}  // namespace mariposa::health
