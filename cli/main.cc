// mariposa: the command-line client, a thin gRPC client of mariposad.
// Exit codes: 0 ok, 1 error, 2 usage. The commands are the cli library
// (cli/cli.h); this is only the process's entry.
#include "cli/cli.h"
#include "common/clock.h"

int main(int argc, char** argv) { return mariposa::cmd::Main(argc, argv, mariposa::RealClock::Get()); }
