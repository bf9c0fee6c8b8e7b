// Helpers for tests that start the real binaries on loopback.
#ifndef MARIPOSA_TESTS_PROCESS_H_
#define MARIPOSA_TESTS_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace mariposa::testing {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `argv` to completion with `input` on stdin.
RunResult Run(const std::vector<std::string>& argv, const std::string& input = "");

// A mariposad child process on a loopback port (or a unix socket).
class Daemon {
 public:
  // Starts bazel's daemon/mariposad on `data_dir`; waits until it serves.
  // `listen` defaults to 127.0.0.1:0.
  explicit Daemon(std::string data_dir, std::string listen = "127.0.0.1:0");
  ~Daemon();
  bool Start();
  // SIGTERM and wait; returns the exit status.
  int Stop();
  // SIGKILL and wait.
  void Kill();
  const std::string& addr() const { return addr_; }
  pid_t pid() const { return pid_; }
  std::string log() const;

 private:
  std::string data_dir_;
  std::string listen_;
  std::string addr_;
  std::string log_path_;
  pid_t pid_ = -1;
};

// Runs bazel's cli/mariposa with --addr.
RunResult Cli(const std::string& addr, const std::vector<std::string>& args, const std::string& input = "");

// A fresh directory under TEST_TMPDIR.
std::string TempDir(const std::string& name);
std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& text);

}  // namespace mariposa::testing

#endif  // MARIPOSA_TESTS_PROCESS_H_
