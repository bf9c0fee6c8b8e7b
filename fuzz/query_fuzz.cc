// A query string (gateway/json_mapping.h ParseQuery) and, when it parses,
// the request of a GET route filled from it.
#include <cstdint>
#include <string>

#include "gateway/json_mapping.h"
#include "gateway/routes.h"
#include "google/protobuf/message.h"

using namespace mariposa::gateway;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Routes* routes = new Routes(*Routes::Read(Routes::Served()));
  static std::vector<const Route*>* gets = [] {
    auto* v = new std::vector<const Route*>();
    for (const Route& r : routes->all()) {
      if (r.verb == "GET") v->push_back(&r);
    }
    return v;
  }();
  if (size < 1) return 0;
  const Route& r = *(*gets)[data[0] % gets->size()];
  auto query = ParseQuery(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  if (!query.ok()) return 0;
  if (query->size() > 100) __builtin_trap();
  std::unique_ptr<google::protobuf::Message> in(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(r.method->input_type())->New());
  std::map<std::string, std::string> params;
  for (const std::string& p : r.Params()) params[p] = "x";
  (void)BuildRequest(r, "", *query, params, in.get());
  return 0;
}
