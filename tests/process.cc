#include "tests/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "absl/strings/str_split.h"

namespace mariposa::testing {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

namespace {
std::string Openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = RunProcess(argv);
  return r.exit_code == 0 ? "" : "openssl failed: " + r.err;
}
}  // namespace

std::string MakeCa(const std::string& dir, const std::string& ca) {
  return Openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                  dir + "/" + ca + ".key", "-out", dir + "/" + ca + ".pem", "-days", "2", "-subj", "/CN=" + ca});
}

std::string MakeCert(const std::string& dir, const std::string& ca, const std::string& name) {
  std::string base = dir + "/" + name;
  std::string err = Openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                             base + ".key", "-out", base + ".csr", "-subj", "/CN=" + name});
  if (!err.empty()) return err;
  WriteFile(base + ".ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  return Openssl({"x509", "-req", "-in", base + ".csr", "-CA", dir + "/" + ca + ".pem", "-CAkey",
                  dir + "/" + ca + ".key", "-CAcreateserial", "-out", base + ".pem", "-days", "2", "-extfile",
                  base + ".ext"});
}

std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/" + name + ".XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

void Pause(absl::Duration d) { RealClock::Get()->SleepFor(d); }

bool Eventually(const std::function<bool()>& f, absl::Duration limit) {
  absl::Time end = RealClock::Get()->Now() + limit;
  while (RealClock::Get()->Now() < end) {
    if (f()) return true;
    Pause(absl::Milliseconds(100));
  }
  return f();
}

namespace {

// In a forked child: replaces the process with `argv`; never returns.
[[noreturn]] void Exec(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

}  // namespace

RunResult RunProcess(const std::vector<std::string>& argv, const std::string& input) {
  std::string dir = TempDir("run");
  std::string in = dir + "/in", out = dir + "/out", err = dir + "/err";
  WriteFile(in, input);
  pid_t pid = fork();
  if (pid == 0) {
    int i = open(in.c_str(), O_RDONLY), o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600),
        e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(i, 0);
    dup2(o, 1);
    dup2(e, 2);
    Exec(argv);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

RunResult Cli(const std::string& addr, const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv = {"cli/mariposa", "--addr", addr};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, input);
}

ServerProcess::ServerProcess(std::vector<std::string> argv, std::string state_path)
    : argv_(std::move(argv)), state_path_(std::move(state_path)) {}

ServerProcess::ServerProcess(std::vector<std::string> argv, std::string state_path, std::string addr)
    : argv_(std::move(argv)), state_path_(std::move(state_path)), addr_(std::move(addr)), fixed_addr_(true) {}

namespace {

bool Accepts(const std::string& addr) {
  size_t colon = addr.rfind(':');
  if (colon == std::string::npos) return false;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(addr.substr(colon + 1))));
  if (inet_pton(AF_INET, addr.substr(0, colon).c_str(), &sa.sin_addr) != 1) return false;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  close(fd);
  return ok;
}

}  // namespace

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = 0;
  socklen_t len = sizeof(sa);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
    port = ntohs(sa.sin_port);
  }
  close(fd);
  return port;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Kill();
}

bool ServerProcess::Start() {
  std::string addr_file = state_path_ + ".addr";
  std::string log_path = state_path_ + ".log";
  unlink(addr_file.c_str());
  std::vector<std::string> argv = argv_;
  if (!fixed_addr_) {
    argv.push_back("--addr-file");
    argv.push_back(addr_file);
  }
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test, even if it crashes
    int e = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fixed_addr_) dup2(e, 1);
    dup2(e, 2);
    Exec(argv);
  }
  for (int i = 0; i < 300; ++i) {
    if (fixed_addr_ && Accepts(addr_)) return true;
    std::string a = fixed_addr_ ? "" : ReadFile(addr_file);
    if (!a.empty() && a.back() == '\n') {
      // First line: the address; more lines: other endpoints (e.g. /metrics).
      std::vector<std::string> lines = absl::StrSplit(a.substr(0, a.size() - 1), '\n');
      addr_ = lines[0];
      extra_ = std::vector<std::string>(lines.begin() + 1, lines.end());
      return true;
    }
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    Pause(absl::Milliseconds(20));
  }
  return false;
}

int ServerProcess::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string ServerProcess::log() const { return ReadFile(state_path_ + ".log"); }

Tritonsim::Tritonsim(std::vector<std::string> args)
    : ServerProcess(
          [&] {
            std::vector<std::string> argv = {"deploy/tritonsim/tritonsim", "--listen", "127.0.0.1:0"};
            argv.insert(argv.end(), args.begin(), args.end());
            return argv;
          }(),
          TempDir("tritonsim") + "/sim") {}

std::map<std::string, int> RunningPerService(const std::string& sim_addr) {
  httplib::Client c(sim_addr);
  auto r = c.Get("/vms?state=running&tag.mariposa.service=*");
  std::map<std::string, int> out;
  if (!r || r->status != 200) return out;
  for (const auto& vm : nlohmann::json::parse(r->body)) out[vm["tags"]["mariposa.service"].get<std::string>()]++;
  return out;
}

}  // namespace mariposa::testing
