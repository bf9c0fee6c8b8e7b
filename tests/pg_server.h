// A throwaway PostgreSQL for tests (issue 33): initdb in a temporary
// directory, started with pg_ctl on a free loopback port with its Unix
// socket in that directory, stopped and removed when destroyed. PostgreSQL
// refuses to run as root, so as root the server runs as the unprivileged
// `postgres` user (runuser), which owns the directory.
#ifndef MARIPOSA_TESTS_PG_SERVER_H_
#define MARIPOSA_TESTS_PG_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace mariposa::testing {

class PgServer {
 public:
  // FAILED_PRECONDITION naming the missing package when PostgreSQL's
  // programs are not installed; otherwise the server's initdb or start
  // error with its log.
  static absl::StatusOr<std::unique_ptr<PgServer>> Start();
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // A libpq URI for the `postgres` database as the `postgres` superuser
  // (trust authentication on loopback).
  std::string uri() const;
  int port() const { return port_; }
  // Stops the server (fast shutdown) and starts it again on the same port:
  // what a failover or a restart looks like to a client.
  absl::Status Stop();
  absl::Status Restart();
  std::string log() const;

  // Streaming replication (docs/operations.md, "Database failover"): a hot
  // standby of this server made with pg_basebackup, on its own port, and
  // started. `synchronous`: this server's commits wait for the standby's
  // flush (synchronous_standby_names = '*'), so a failover loses nothing
  // acknowledged.
  absl::StatusOr<std::unique_ptr<PgServer>> StartReplica(bool synchronous);
  // Stops at once (immediate shutdown: what a crash looks like to clients).
  absl::Status Crash();
  // Makes a standby the primary (pg_ctl promote, waiting for it).
  absl::Status Promote();
  // Runs a SQL statement with psql as the superuser.
  absl::StatusOr<std::string> Psql(const std::string& sql);

 private:
  PgServer() = default;
  // A new, empty temporary directory owned by the server's user.
  absl::Status MakeDir();
  absl::Status Ctl(const std::string& action);
  std::string bindir_;
  std::string dir_;
  int port_ = 0;
  bool running_ = false;
};

}  // namespace mariposa::testing

#endif  // MARIPOSA_TESTS_PG_SERVER_H_
