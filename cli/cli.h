// The mariposa CLI as a library. Run() is the whole program: global
// options, the command the registry finds, its options, the connection,
// the exit code. cli/main.cc calls Main with the process's streams,
// environment and dialer; tests call Run with their own (in-process, against
// a real mariposad or fake services: tests/cli_inprocess_test.cc).
#ifndef MARIPOSA_CLI_CLI_H_
#define MARIPOSA_CLI_CLI_H_

#include <istream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/registry.h"
#include "common/clock.h"

namespace mariposa::cmd {

struct Io {
  std::ostream* out;
  std::ostream* err;
  std::istream* in;
  bool in_tty = false;
  bool out_tty = false;
  const Clock* clock;
  // HOME, MARIPOSA_* and NO_COLOR, as the process has them.
  std::map<std::string, std::string> env;
  // How to reach mariposad (auth::Dial in the binary).
  cli::Dialer dial;
};

// Every command, with its help; built once.
const cli::Registry& Commands();

// `args` without the program name. Exit code: 0 ok, 1 error (or what the
// command says: diff 1 = changes), 2 usage.
int Run(const std::vector<std::string>& args, const Io& io);

// The binary's entry: std::cin/cout/cerr, the environment, auth::Dial.
int Main(int argc, char** argv, const Clock* clock);

}  // namespace mariposa::cmd

#endif  // MARIPOSA_CLI_CLI_H_
