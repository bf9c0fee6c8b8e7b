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

 private:
  PgServer() = default;
  absl::Status Ctl(const std::string& action);
  std::string bindir_;
  std::string dir_;
  int port_ = 0;
  bool running_ = false;
};

}  // namespace mariposa::testing

#endif  // MARIPOSA_TESTS_PG_SERVER_H_
