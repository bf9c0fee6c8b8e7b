// The process around mariposad: the data dir's lock, signals, the address
// file, and the limited servers of a standby or a failed start.
#ifndef MARIPOSA_DAEMON_PROCESS_H_
#define MARIPOSA_DAEMON_PROCESS_H_

#include <signal.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "daemon/limited_server.h"

namespace mariposa {

// Takes an exclusive lock on DIR/mariposad.lock (or the one a standby handed
// over) and records our pid in it. Returns the fd (kept open for the life of
// the process) or -1 with a message in `err`.
int LockDataDir(const std::string& dir, std::string* err);

// Rewrites the lock file: our pid, then what we serve (for a standby's
// `admin status` and refusals).
bool WriteLockFile(int fd, const std::vector<std::string>& listeners);

// Waits for a signal in `sigs` on a thread of its own and calls `f` with it.
std::thread OnSignal(sigset_t sigs, std::function<void(int)> f);

// A Unix socket for a limited server, unless its path is too long for one.
void AddSocket(std::vector<LimitedListener>* at, const std::string& path);

// --addr-file: the addresses, one per line, written whole.
void WriteAddrFile(const std::string& path, const std::vector<std::string>& lines);

// A mariposad serving only `admin status` and ping (standby, initfail).
struct Limited {
  std::unique_ptr<LimitedServer> server;
  std::string error;
};
Limited StartLimited(const std::vector<LimitedListener>& addresses, LimitedState state, const std::string& addr_file);

// --standby: waits for the data dir's lock, answering as a standby, then
// becomes the active mariposad by executing itself again. Returns only to
// exit.
int RunStandby(const std::string& data_dir, const std::vector<LimitedListener>& addresses,
               const std::string& addr_file, const sigset_t& sigs, char** original_argv, absl::Time started);

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_PROCESS_H_
