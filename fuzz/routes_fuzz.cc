// A verb and a path matched against the routes (gateway/routes.h): the first
// byte picks the verb. A match's route takes that verb, and its parameters
// are the template's.
#include <cstdint>
#include <string>

#include "gateway/routes.h"

using namespace mariposa::gateway;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Routes* routes = new Routes(*Routes::Read(Routes::Served()));
  static const char* kVerbs[] = {"GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
  if (size < 1) return 0;
  std::string verb = kVerbs[data[0] % 6];
  std::string path(reinterpret_cast<const char*>(data + 1), size - 1);
  bool known = false;
  auto m = routes->Find(verb, path, &known);
  if (m) {
    if (m->route->verb != verb) __builtin_trap();
    if (m->params.size() != m->route->Params().size()) __builtin_trap();
  }
  (void)PercentDecode(path);
  return 0;
}
