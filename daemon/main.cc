// mariposad: the Mariposa controller. Serves the gRPC API on a loopback
// address by default, keeps its state in SQLite under --data-dir, and holds an
// exclusive lock on that directory.
//
// main() reads the flags (daemon/config.h), makes the data dir its own and
// locks it (or waits as a standby: daemon/process.h), then hands over to the
// Daemon (daemon/daemon.h), which runs until a signal.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/config_file.h"
#include "common/log.h"
#include "convergence/triton/endpoints.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/process.h"

namespace {

int Usage(const std::string& err) {
  std::cerr << "mariposad: " << err << "\n\n" << mariposa::DaemonUsage();
  return 2;
}

// Every flag once (daemon/config.h): the command line and the --config file
// say the same, --help is written from the same table, and the values are
// checked by one pure function. An exit code when mariposad stops here
// (--help, a refusal).
std::optional<int> ReadConfig(int argc, char** argv, const std::string& hostname, mariposa::DaemonConfig* config) {
  std::set<std::string> switch_names, valued_names;
  for (const mariposa::FlagSpec& s : mariposa::DaemonFlagSpecs()) {
    if (s.on) switch_names.insert(s.name);
    if (s.value) valued_names.insert(s.name);
  }
  int from_file = 0;
  auto expanded = mariposa::ExpandConfigFlag(argc, argv, switch_names, valued_names, &from_file);
  if (!expanded.ok()) return Usage(std::string(expanded.status().message()));
  auto parsed = mariposa::ParseDaemonArgs(std::vector<std::string>(expanded->begin() + 1, expanded->end()), from_file);
  if (!parsed.ok()) return Usage(std::string(parsed.status().message()));
  if (parsed->help) {
    std::cout << mariposa::DaemonUsage();
    return 0;
  }
  std::map<std::string, std::string> sapi;
  if (const std::string& file = parsed->api.sapi_metadata_file; !file.empty()) {
    std::ifstream f(file);
    if (!f) return Usage(absl::StrCat("--sapi-metadata ", file, " cannot be read"));
    std::stringstream text;
    text << f.rdbuf();
    auto read = mariposa::triton::ParseSapiMetadata(text.str(), file);
    if (!read.ok()) return Usage(std::string(read.status().message()));
    sapi = *std::move(read);
  }
  auto checked = mariposa::CheckDaemonFlags(*std::move(parsed), sapi, hostname);
  if (!checked.ok()) return Usage(std::string(checked.status().message()));
  *config = *std::move(checked);
  return std::nullopt;
}

// Everything mariposad creates is its own alone: the store and its WAL, the
// secrets key, backups, the lock. A data dir from before is tightened.
bool PrepareDataDir(mariposa::DaemonFlags* flags) {
  const std::string& data_dir = flags->data_dir;
  umask(077);
  if (mkdir(data_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    mariposa::LogError("cannot create data dir", {{"data_dir", data_dir}, {"error", std::strerror(errno)}});
    return false;
  }
  chmod(data_dir.c_str(), 0700);
  for (const char* f : {"/mariposa.db", "/mariposa.db-wal", "/mariposa.db-shm", "/mariposad.lock"}) {
    chmod((data_dir + f).c_str(), 0600);
  }
  if (flags->secrets_key.empty()) flags->secrets_key = data_dir + "/secrets.key";
  if (flags->backup_dir.empty()) flags->backup_dir = data_dir + "/backups";
  return true;
}

}  // namespace

// mariposad's allocator is jemalloc (daemon/BUILD.bazel; glibc's malloc
// cost it about a sixth of its CPU in a mass scale: docs/development.md),
// which reads these settings at its start. Freed pages go back to the
// system within about a second, by jemalloc's own thread, idle or not: a
// large request's memory is returned (tests/hostile_input_test), and RSS
// follows what is tracked (P9), as glibc's once-a-second trim did before.
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";
}

int main(int argc, char** argv) {
  // libprotobuf's own messages (a request it could not parse) go to the
  // JSON log like every other line.
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel level, const char* file, int line,
                                     const std::string& message) {
    std::string msg = absl::StrCat("libprotobuf: ", message), source = absl::StrCat(file, ":", line);
    if (level >= google::protobuf::LOGLEVEL_ERROR) mariposa::LogError(msg, {{"source", source}});
    else mariposa::LogWarn(msg, {{"source", source}});
  });
  mariposa::DaemonStart start;
  char hostname[256] = {};
  gethostname(hostname, sizeof(hostname) - 1);
  start.hostname = hostname;
  if (std::optional<int> exit = ReadConfig(argc, argv, start.hostname, &start.config)) return *exit;
  mariposa::DaemonFlags& flags = start.config.flags;

  // Signals are taken by one thread with sigwait; block them everywhere first.
  sigemptyset(&start.sigs);
  sigaddset(&start.sigs, SIGTERM);
  sigaddset(&start.sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &start.sigs, nullptr);

  if (!PrepareDataDir(&flags)) return 1;
  start.default_socket = flags.socket_path == "default";
  if (start.default_socket) flags.socket_path = flags.data_dir + "/mariposad.sock";
  start.clock = mariposa::RealClock::Get();
  mariposa::SetLogClock(start.clock);
  start.started = start.clock->Now();
  std::string lock_err;
  start.lock_fd = mariposa::LockDataDir(flags.data_dir, &lock_err);
  if (start.lock_fd < 0 && flags.standby) {
    std::vector<mariposa::LimitedListener> at;
    if (!flags.standby_listen.empty()) at.push_back({flags.standby_listen, nullptr});
    mariposa::AddSocket(&at, flags.socket_path == "none" ? "" : flags.data_dir + "/mariposad-standby.sock");
    return mariposa::RunStandby(flags.data_dir, at, flags.addr_file, start.sigs, argv, start.started);
  }
  if (start.lock_fd < 0) {
    mariposa::LogError(lock_err, {{"data_dir", flags.data_dir}});
    std::cerr << "mariposad: " << lock_err << "\n";
    return 1;
  }
  mariposa::Daemon daemon(std::move(start));
  return daemon.Run();
}
