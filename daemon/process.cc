#include "daemon/process.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "mariposa/v1/admin.pb.h"

namespace mariposa {

namespace {
// A standby that took the lock passes it on to its new image in
// MARIPOSAD_LOCK_FD (RunStandby).
constexpr char kLockFdEnv[] = "MARIPOSAD_LOCK_FD";
}  // namespace

bool WriteLockFile(int fd, const std::vector<std::string>& listeners) {
  std::string text = absl::StrCat(getpid(), "\n");
  for (const std::string& l : listeners) absl::StrAppend(&text, l, "\n");
  return ftruncate(fd, 0) == 0 && pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
}

namespace {
// The holder named by the lock file: pid, then listeners.
std::vector<std::string> ReadLockFile(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

int InheritedLock(const std::string& path) {
  const char* env = getenv(kLockFdEnv);
  if (env == nullptr) return -1;
  int fd = atoi(env);
  unsetenv(kLockFdEnv);
  struct stat a, b;
  if (fd <= 2 || fstat(fd, &a) != 0 || stat(path.c_str(), &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev ||
      flock(fd, LOCK_EX | LOCK_NB) != 0) {
    return -1;
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}
}  // namespace

int LockDataDir(const std::string& dir, std::string* err) {
  std::string path = dir + "/mariposad.lock";
  if (int fd = InheritedLock(path); fd >= 0) {
    if (!WriteLockFile(fd, {})) {
      *err = absl::StrCat("cannot write lock file ", path, ": ", std::strerror(errno));
      close(fd);
      return -1;
    }
    return fd;
  }
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *err = absl::StrCat("cannot open lock file ", path, ": ", std::strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {0};
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    std::string holder = n > 0 ? std::string(absl::StripAsciiWhitespace(std::string(buf, n))) : "unknown";
    *err = absl::StrCat("data dir ", dir, " is in use by mariposad pid ", holder, " (lock ", path,
                        "); stop that process first or use another --data-dir");
    close(fd);
    return -1;
  }
  if (!WriteLockFile(fd, {})) {
    *err = absl::StrCat("cannot write lock file ", path, ": ", std::strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

// Waits signals in `sigs` on a thread of its own and calls `f` with the first.
std::thread OnSignal(sigset_t sigs, std::function<void(int)> f) {
  return std::thread([sigs, f = std::move(f)] {
    int sig = 0;
    sigwait(&sigs, &sig);
    f(sig);
  });
}

// A Unix socket for a limited server, unless its path is too long for one
// (then the TCP address alone serves; said in the log).
void AddSocket(std::vector<LimitedListener>* at, const std::string& path) {
  if (path.empty()) return;
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    LogInfo("no Unix socket: the path is too long; the TCP address serves", {{"socket", path}});
    return;
  }
  at->push_back({"unix:" + path, nullptr});
}

namespace {
std::string WhatTheLockSays(const std::vector<std::string>& holder) {
  if (holder.empty()) return "an unknown process";
  std::vector<std::string> rest(holder.begin() + 1, holder.end());
  return absl::StrCat("pid ", holder[0], rest.empty() ? " (not serving yet)" : absl::StrCat(" at ", absl::StrJoin(rest, ", ")));
}
}  // namespace

// --addr-file: the addresses, one per line, written whole (tmp + rename) so
// that a reader never sees half of it.
void WriteAddrFile(const std::string& path, const std::vector<std::string>& lines) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    for (const std::string& l : lines) f << l << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

// The limited server, and the address file naming it.
Limited StartLimited(const std::vector<LimitedListener>& addresses, LimitedState state,
                     const std::string& addr_file) {
  Limited out;
  auto server = LimitedServer::Start(addresses, std::move(state));
  if (!server.ok()) {
    out.error = std::string(server.status().message());
    return out;
  }
  out.server = *std::move(server);
  if (!out.server->addresses().empty()) WriteAddrFile(addr_file, {out.server->addresses()[0]});
  return out;
}

// --standby: waits for the data dir's lock, answering as a standby; once it
// has it, becomes the active mariposad by executing itself again with the
// same arguments (same pid, the lock handed over in MARIPOSAD_LOCK_FD), so
// that the active starts exactly as any other. Returns only to exit.
int RunStandby(const std::string& data_dir, const std::vector<LimitedListener>& addresses,
               const std::string& addr_file,
               const sigset_t& sigs, char** original_argv, absl::Time started) {
  std::string path = data_dir + "/mariposad.lock";
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    std::cerr << "mariposad: cannot open lock file " << path << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  LimitedState st;
  st.mode = "standby";
  st.data_dir = data_dir;
  st.started_at = started;
  st.describe = [path](v1::StatusResponse* resp) {
    std::vector<std::string> holder = ReadLockFile(path);
    int64_t pid = 0;
    if (!holder.empty() && absl::SimpleAtoi(holder[0], &pid)) resp->set_active_pid(pid);
    for (size_t i = 1; i < holder.size(); ++i) resp->add_active_listeners(holder[i]);
  };
  std::string me = absl::StrCat(getpid());
  st.unavailable = [path, data_dir, me] {
    return absl::StrCat("this mariposad (pid ", me, ") is the standby for ", data_dir, "; the active one is ",
                        WhatTheLockSays(ReadLockFile(path)),
                        ": send calls there. This one takes over, on the same addresses, when it stops");
  };
  Limited limited = StartLimited(addresses, std::move(st), addr_file);
  if (limited.server == nullptr) {
    std::cerr << "mariposad: standby cannot listen: " << limited.error << "\n";
    return 1;
  }
  LogInfo("standby: another mariposad holds the data dir; waiting for its lock",
                    {{"data_dir", data_dir},
                     {"active", WhatTheLockSays(ReadLockFile(path))},
                     {"listeners", absl::StrJoin(limited.server->addresses(), ", ")},
                     {"pid", me}});
  absl::Mutex mu;
  int signal = 0;
  bool locked = false;
  std::thread waiter([&] {
    bool ok = flock(fd, LOCK_EX) == 0;
    absl::MutexLock l(&mu);
    locked = ok;
    if (!ok) signal = -1;
  });
  std::thread signals = OnSignal(sigs, [&](int sig) {
    absl::MutexLock l(&mu);
    signal = sig;
  });
  {
    absl::MutexLock l(&mu);
    auto woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return signal != 0 || locked; };
    mu.Await(absl::Condition(&woken));
  }
  limited.server->Shutdown();
  if (!locked) {
    LogInfo("standby stopped", {{"signal", signal > 0 ? strsignal(signal) : "lock wait failed"}});
    // The other threads wait on the lock and on signals: exit without them.
    std::fflush(nullptr);
    _exit(signal > 0 ? 0 : 1);
  }
  LogInfo("standby: the data dir is free; taking over", {{"data_dir", data_dir}, {"pid", me}});
  fcntl(fd, F_SETFD, 0);
  setenv(kLockFdEnv, absl::StrCat(fd).c_str(), 1);
  execv("/proc/self/exe", original_argv);
  LogError("cannot take over: exec failed", {{"error", std::strerror(errno)}});
  std::fflush(nullptr);
  _exit(1);
}

}  // namespace mariposa
