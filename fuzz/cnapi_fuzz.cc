// CNAPI's answers: servers, a server, a task and a task's id.
#include "convergence/triton/triton_json.h"
#include "fuzz/triton_json_fuzz.h"

namespace {
void Read(const std::string& body) {
  using namespace mariposa::triton;
  (void)ParseServers(body, "ListServers");
  (void)ParseServer(body, "GetServer");
  (void)ParseTask(body, "GetTask");
  auto id = ParseTaskId(body, "InstallAgent");
  if (id.ok() && id->empty()) __builtin_trap();
}
}  // namespace

TRITON_FUZZ(Read)
