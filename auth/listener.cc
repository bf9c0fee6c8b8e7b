#include "auth/listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <grpcpp/server_posix.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/log.h"

namespace mariposa::auth {

bool IsLocalAddress(const std::string& addr) {
  if (absl::StartsWith(addr, "unix:")) return true;
  if (absl::StartsWith(addr, "127.")) return true;
  if (absl::StartsWith(addr, "[::1]") || absl::StartsWith(addr, "localhost:")) return true;
  return false;
}

int64_t LoopbackPeerUid(int client_port, int server_port) {
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, st, queues, timer, retr, uid;
      if (!(f >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid)) continue;
      auto port = [](const std::string& a) {
        int p = -1;
        size_t colon = a.rfind(':');
        if (colon != std::string::npos) p = static_cast<int>(std::strtol(a.c_str() + colon + 1, nullptr, 16));
        return p;
      };
      if (port(local) == client_port && port(remote) == server_port) {
        int64_t u = -1;
        return absl::SimpleAtoi(uid, &u) ? u : -1;
      }
    }
  }
  return -1;
}

absl::StatusOr<std::unique_ptr<LocalListener>> LocalListener::Bind(const std::string& addr) {
  std::unique_ptr<LocalListener> l(new LocalListener());
  if (absl::StartsWith(addr, "unix:")) {
    l->unix_ = true;
    l->path_ = addr.substr(5);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (l->path_.empty() || l->path_.size() >= sizeof(sa.sun_path)) {
      return absl::InvalidArgumentError(absl::StrCat("socket path \"", l->path_, "\" is empty or longer than ",
                                                     sizeof(sa.sun_path) - 1, " bytes"));
    }
    std::memcpy(sa.sun_path, l->path_.c_str(), l->path_.size());
    struct stat st;
    if (lstat(l->path_.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        return absl::FailedPreconditionError(
            absl::StrCat(l->path_, " exists and is not a socket; remove it or choose another --socket"));
      }
      unlink(l->path_.c_str());  // a stale socket: the data-dir lock says no other mariposad owns it
    }
    l->fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l->fd_ < 0 || bind(l->fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
        chmod(l->path_.c_str(), 0666) != 0 || listen(l->fd_, 256) != 0) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", addr, ": ", std::strerror(errno)));
    }
    l->address_ = addr;
    return l;
  }
  size_t colon = addr.rfind(':');
  int port = -1;
  std::string host = colon == std::string::npos ? "" : addr.substr(0, colon);
  if (colon == std::string::npos || !absl::SimpleAtoi(addr.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("\"", addr, "\" is not HOST:PORT or unix:PATH"));
  }
  if (host == "localhost") host = "127.0.0.1";
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1 || !absl::StartsWith(host, "127.")) {
    return absl::InvalidArgumentError(absl::StrCat("\"", addr, "\" is not a loopback IPv4 address"));
  }
  l->fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (l->fd_ >= 0) setsockopt(l->fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  socklen_t len = sizeof(sa);
  if (l->fd_ < 0 || bind(l->fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(l->fd_, 1024) != 0 ||
      getsockname(l->fd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", addr, ": ", std::strerror(errno)));
  }
  l->port_ = ntohs(sa.sin_port);
  l->address_ = absl::StrCat(host, ":", l->port_);
  return l;
}

LocalListener::~LocalListener() {
  Stop();
  if (fd_ >= 0) close(fd_);
  if (unix_ && !path_.empty()) unlink(path_.c_str());
}

void LocalListener::Start(grpc::Server* server, Authorizer* auth, const Clock* clock) {
  server_ = server;
  clock_ = clock;
  auth_ = auth;
  thread_ = std::thread([this] { Loop(); });
}

void LocalListener::Stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  shutdown(fd_, SHUT_RDWR);  // wakes accept()
  thread_.join();
}

LocalPeer LocalListener::PeerOf(int fd) const {
  LocalPeer p;
  if (unix_) {
    p.transport = "unix socket";
    p.address = address_;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      p.uid = cred.uid;
      p.pid = cred.pid;
    }
    return p;
  }
  p.transport = "loopback tcp";
  sockaddr_in sa{};
  socklen_t len = sizeof(sa);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
    char ip[INET_ADDRSTRLEN] = "";
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
    p.address = absl::StrCat(ip, ":", ntohs(sa.sin_port));
    p.uid = LoopbackPeerUid(ntohs(sa.sin_port), port_);
  }
  return p;
}

void LocalListener::Loop() {
  while (!stopping_) {
    int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) {
      if (stopping_) break;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        LogError("cannot accept a connection: out of file descriptors", {{"listen", address_}});
        clock_->SleepUntil(clock_->Now() + absl::Milliseconds(100));
        continue;
      }
      if (errno == EINVAL) break;  // shut down
      continue;
    }
    if (!unix_) {
      int one = 1;
      setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    auth_->AddConnection(c, PeerOf(c));
    grpc::AddInsecureChannelFromFd(server_, c);
  }
}

}  // namespace mariposa::auth
