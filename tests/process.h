// Helpers for tests that start the real binaries on loopback.
#ifndef MARIPOSA_TESTS_PROCESS_H_
#define MARIPOSA_TESTS_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace mariposa::testing {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Test helpers wait for real processes, so they wait in real time, through
// the one clock interface (common/clock.h).
void Pause(absl::Duration d);
// Calls `f` every 100 ms until it returns true (true) or `limit` passes (false).
bool Eventually(const std::function<bool()>& f, absl::Duration limit);

// Runs `argv` to completion with `input` on stdin.
RunResult RunProcess(const std::vector<std::string>& argv, const std::string& input = "");

// A server child process that writes its address to an --addr-file once it
// serves; stderr goes to a log file.
class ServerProcess {
 public:
  // `argv` without --addr-file; `state_path` names the log and address files.
  ServerProcess(std::vector<std::string> argv, std::string state_path);
  // A server told its address in `argv` (no --addr-file): Start waits until
  // `addr` (host:port) accepts connections; its stdout and stderr are logged.
  ServerProcess(std::vector<std::string> argv, std::string state_path, std::string addr);
  ~ServerProcess();
  // Starts the process and waits (up to 6 s) until it serves.
  bool Start();
  // SIGTERM and wait; returns the exit status.
  int Stop();
  // SIGKILL and wait.
  void Kill();
  const std::string& addr() const { return addr_; }
  // Further lines of the address file (mariposad: the /metrics address).
  const std::vector<std::string>& extra_addrs() const { return extra_; }
  pid_t pid() const { return pid_; }
  std::string log() const;

 private:
  std::vector<std::string> argv_;
  std::string state_path_;
  std::string addr_;
  std::vector<std::string> extra_;
  bool fixed_addr_ = false;
  pid_t pid_ = -1;
};

// A loopback TCP port free now (bound to port 0, then released).
int FreeLoopbackPort();

// bazel's daemon/mariposad on `data_dir`; `listen` defaults to 127.0.0.1:0.
class Daemon : public ServerProcess {
 public:
  explicit Daemon(const std::string& data_dir, const std::string& listen = "127.0.0.1:0")
      : ServerProcess({"daemon/mariposad", "--listen", listen, "--data-dir", data_dir}, data_dir) {}
};

// bazel's deploy/tritonsim/tritonsim on a free loopback port, with `args`.
class Tritonsim : public ServerProcess {
 public:
  explicit Tritonsim(std::vector<std::string> args = {});
};

// tritonsim for health tests: 5 servers, the example seed, 20 ms jobs, and
// --listen-vms (each VM answers on 127.a.b.c).
inline std::unique_ptr<Tritonsim> ListeningTritonsim() {
  return std::make_unique<Tritonsim>(std::vector<std::string>{
      "--servers", "5", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "20", "--listen-vms"});
}

// Running VMs of every Mariposa service in tritonsim at `sim_addr`, by
// service name (VMAPI's view; empty when it cannot be read).
std::map<std::string, int> RunningPerService(const std::string& sim_addr);

// Runs bazel's cli/mariposa with --addr.
RunResult Cli(const std::string& addr, const std::vector<std::string>& args, const std::string& input = "");

// A fresh directory under TEST_TMPDIR.
std::string TempDir(const std::string& name);
std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& text);

// With the openssl command, in `dir`: a CA `ca` (ca.pem, ca.key), and a
// certificate `name` (CN, SANs 127.0.0.1 and localhost) signed by it
// (name.pem, name.key). Empty on success, else openssl's stderr.
std::string MakeCa(const std::string& dir, const std::string& ca);
std::string MakeCert(const std::string& dir, const std::string& ca, const std::string& name);

}  // namespace mariposa::testing

#endif  // MARIPOSA_TESTS_PROCESS_H_
