#include "deploy/tritonsim/vm_listeners.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

namespace tritonsim {

std::string LoopbackFor(const std::string& nic_ip) {
  size_t dot = nic_ip.find('.');
  if (dot == std::string::npos || dot == 0) return "";
  return "127" + nic_ip.substr(dot);
}

namespace {

constexpr size_t kMaxRequest = 16384;  // bytes read from a client before answering anyway
constexpr int64_t kHangCloseMs = 120000;


int Listen(const std::string& ip, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1 ||
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 128) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

struct Conn {
  std::string vm;
  std::string buf;
  int64_t opened_ms = 0;
  bool hanging = false;
};

}  // namespace

VmListeners::VmListeners(DataCenter* dc) : dc_(dc), thread_([this] { Loop(); }) {}

VmListeners::~VmListeners() {
  stop_ = true;
  thread_.join();
}

namespace {

// The listeners' event loop's state: one epoll set over the listening
// sockets ((ip, port) -> fd, fd -> its VM) and the connections.
struct Sockets {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  std::map<std::pair<std::string, int>, int> listeners;  // (ip, port) -> fd
  std::map<int, std::string> listener_vm;                // fd -> vm
  std::map<int, Conn> conns;

  void Add(int fd, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
  void Close(int fd) {
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
  }
  ~Sockets() {
    for (auto& kv : conns) close(kv.first);
    for (auto& kv : listeners) close(kv.second);
    close(ep);
  }

  // Listeners for the running VMs whose health is not "refuse", on their
  // loopback twins; hung connections are dropped eventually.
  void Sync(DataCenter* dc, int64_t now) {
    std::map<std::pair<std::string, int>, std::string> want;
    for (const auto& e : dc->RunningEndpoints()) {
      std::string ip = LoopbackFor(e.ip);
      if (ip.empty() || e.health == VmHealth::kRefuse) continue;
      for (int p : e.ports) {
        if (p > 0 && p < 65536) want[{ip, p}] = e.vm_uuid;
      }
    }
    for (auto it = listeners.begin(); it != listeners.end();) {
      if (!want.count(it->first)) {
        listener_vm.erase(it->second);
        Close(it->second);
        it = listeners.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& w : want) {
      if (listeners.count(w.first)) continue;
      int fd = Listen(w.first.first, w.first.second);
      if (fd < 0) continue;  // retried at the next sync
      Add(fd, EPOLLIN);
      listeners[w.first] = fd;
      listener_vm[fd] = w.second;
    }
    for (auto it = conns.begin(); it != conns.end();) {
      if (now - it->second.opened_ms > kHangCloseMs) {
        Close(it->first);
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
  }

  // A connection's bytes: once a request's head is in, the VM's health
  // answers it (200 or 503 and close), or it hangs.
  void Read(DataCenter* dc, int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn& conn = it->second;
    char buf[4096];
    ssize_t got = read(fd, buf, sizeof(buf));
    if (got <= 0) {
      Close(fd);
      conns.erase(it);
      return;
    }
    // A hang-up with data still in: the data is answered first.
    if (conn.hanging) return;  // swallow whatever arrives
    conn.buf.append(buf, static_cast<size_t>(got));
    if (conn.buf.find("\r\n\r\n") == std::string::npos && conn.buf.find("\n\n") == std::string::npos &&
        conn.buf.size() < kMaxRequest) {
      return;
    }
    VmHealth h = dc->HealthOf(conn.vm);
    if (h == VmHealth::kHang) {
      conn.hanging = true;
      return;
    }
    bool ok = h == VmHealth::kHealthy;
    std::string body = std::string(ok ? "OK " : "unhealthy ") + conn.vm + "\n";
    char head[256];
    snprintf(head, sizeof(head),
             "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
             ok ? "200 OK" : "503 Service Unavailable", body.size());
    std::string out = std::string(head) + body;
    ssize_t ignored = write(fd, out.data(), out.size());
    (void)ignored;
    Close(fd);
    conns.erase(it);
  }
};

}  // namespace

void VmListeners::Loop() {
  Sockets s;
  int64_t next_sync = 0;
  while (!stop_) {
    int64_t now = absl::ToUnixMillis(dc_->clock()->Now());
    if (now >= next_sync) {
      next_sync = now + 100;
      s.Sync(dc_, now);
      open_ = static_cast<int>(s.listeners.size());
    }
    epoll_event events[64];
    int n = epoll_wait(s.ep, events, 64, 50);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      auto lv = s.listener_vm.find(fd);
      if (lv == s.listener_vm.end()) {
        s.Read(dc_, fd);
        continue;
      }
      while (true) {
        int c = accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) break;
        s.Add(c, EPOLLIN | EPOLLRDHUP);
        s.conns[c] = Conn{lv->second, "", absl::ToUnixMillis(dc_->clock()->Now()), false};
      }
    }
  }
}

}  // namespace tritonsim
