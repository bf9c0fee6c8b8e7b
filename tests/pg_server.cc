#include "tests/pg_server.h"

#include <glob.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

// The newest installed PostgreSQL's programs (Debian: /usr/lib/postgresql/N/bin).
std::string FindBindir() {
  glob_t g{};
  std::string found;
  if (glob("/usr/lib/postgresql/*/bin/pg_ctl", 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) found = g.gl_pathv[i];  // sorted: the last is the newest
  }
  globfree(&g);
  return found.empty() ? "" : found.substr(0, found.size() - std::string("/pg_ctl").size());
}

// argv run as `postgres` when we are root (PostgreSQL refuses root).
std::vector<std::string> AsServerUser(std::vector<std::string> argv) {
  if (geteuid() != 0) return argv;
  std::vector<std::string> out = {"/usr/sbin/runuser", "-u", "postgres", "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PgServer>> PgServer::Start() {
  std::unique_ptr<PgServer> pg(new PgServer());
  pg->bindir_ = FindBindir();
  if (pg->bindir_.empty()) {
    return absl::FailedPreconditionError(
        "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/pg_ctl); `bash scripts/install-deps.sh` installs "
        "the postgresql package");
  }
  if (absl::Status s = pg->MakeDir(); !s.ok()) return s;
  RunResult init = RunProcess(AsServerUser({pg->bindir_ + "/initdb", "-D", pg->dir_ + "/data", "-U", "postgres",
                                            "-A", "trust", "--no-sync", "-E", "UTF8", "--locale", "C"}));
  if (init.exit_code != 0) return absl::InternalError(absl::StrCat("initdb failed: ", init.out, init.err));
  pg->port_ = FreeLoopbackPort();
  if (absl::Status s = pg->Ctl("start"); !s.ok()) return s;
  return pg;
}

absl::Status PgServer::MakeDir() {
  // Under /tmp, not TEST_TMPDIR: the server's user must reach it (bazel's
  // temporary directory is under /root).
  char tmpl[] = "/tmp/mariposa-pg.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp failed");
  dir_ = tmpl;
  if (geteuid() == 0) {
    passwd* pw = getpwnam("postgres");
    if (pw == nullptr) return absl::FailedPreconditionError("running as root and there is no `postgres` user");
    if (chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) return absl::InternalError("chown failed");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> PgServer::Psql(const std::string& sql) {
  RunResult r = RunProcess(AsServerUser({bindir_ + "/psql", "-h", "127.0.0.1", "-p", std::to_string(port_), "-U",
                                         "postgres", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql}));
  if (r.exit_code != 0) return absl::InternalError(absl::StrCat("psql failed: ", r.out, r.err));
  return r.out;
}

absl::StatusOr<std::unique_ptr<PgServer>> PgServer::StartReplica(bool synchronous) {
  std::unique_ptr<PgServer> r(new PgServer());
  r->bindir_ = bindir_;
  if (absl::Status s = r->MakeDir(); !s.ok()) return s;
  // -R: standby.signal and primary_conninfo; the application name lets
  // synchronous_standby_names match it.
  RunResult base = RunProcess(AsServerUser(
      {bindir_ + "/pg_basebackup", "-d",
       absl::StrCat("host=127.0.0.1 port=", port_, " user=postgres application_name=replica"), "-D",
       r->dir_ + "/data", "-R", "-X", "stream", "--no-sync"}));
  if (base.exit_code != 0) return absl::InternalError(absl::StrCat("pg_basebackup failed: ", base.out, base.err));
  r->port_ = FreeLoopbackPort();
  if (absl::Status s = r->Ctl("start"); !s.ok()) return s;
  if (synchronous) {
    if (auto a = Psql("ALTER SYSTEM SET synchronous_standby_names = '*'"); !a.ok()) return a.status();
    if (auto a = Psql("SELECT pg_reload_conf()"); !a.ok()) return a.status();
  }
  return r;
}

absl::Status PgServer::Crash() {
  RunResult r = RunProcess(AsServerUser({bindir_ + "/pg_ctl", "-D", dir_ + "/data", "-m", "immediate", "-w", "stop"}));
  if (r.exit_code != 0) return absl::InternalError(absl::StrCat("pg_ctl stop -m immediate failed: ", r.out, r.err));
  running_ = false;
  return absl::OkStatus();
}

absl::Status PgServer::Promote() {
  RunResult r = RunProcess(AsServerUser({bindir_ + "/pg_ctl", "-D", dir_ + "/data", "-w", "promote"}));
  if (r.exit_code != 0) return absl::InternalError(absl::StrCat("pg_ctl promote failed: ", r.out, r.err, log()));
  return absl::OkStatus();
}

absl::Status PgServer::Ctl(const std::string& action) {
  std::vector<std::string> argv = {bindir_ + "/pg_ctl", "-D", dir_ + "/data", "-l", dir_ + "/log", "-w", "-t", "60"};
  if (action == "start") {
    argv.push_back("-o");
    argv.push_back(absl::StrCat("-p ", port_, " -k ", dir_, " -c listen_addresses=127.0.0.1"));
  } else {
    argv.push_back("-m");
    argv.push_back("fast");
  }
  argv.push_back(action);
  RunResult r = RunProcess(AsServerUser(argv));
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat("pg_ctl ", action, " failed: ", r.out, r.err, "\n", log()));
  }
  running_ = action == "start";
  return absl::OkStatus();
}

absl::Status PgServer::Stop() { return Ctl("stop"); }

absl::Status PgServer::Restart() { return Ctl("start"); }

std::string PgServer::uri() const {
  return absl::StrCat("postgresql://postgres@127.0.0.1:", port_, "/postgres");
}

std::string PgServer::log() const {
  std::ifstream in(dir_ + "/log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

PgServer::~PgServer() {
  if (running_) {
    RunProcess(AsServerUser({bindir_ + "/pg_ctl", "-D", dir_ + "/data", "-m", "immediate", "-w", "stop"}));
  }
  if (!dir_.empty()) RunProcess({"/bin/rm", "-rf", dir_});
}

}  // namespace mariposa::testing
