// A JSON body mapped to a route's request message: the first byte picks the
// route, the rest is the body (gateway/json_mapping.h). An accepted body's
// message prints back to JSON.
#include <cstdint>
#include <string>

#include "gateway/json_mapping.h"
#include "gateway/routes.h"
#include "google/protobuf/message.h"

using namespace mariposa::gateway;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Routes* routes = new Routes(*Routes::Read(Routes::Served()));
  if (size < 1) return 0;
  const Route& r = routes->all()[data[0] % routes->all().size()];
  std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  std::unique_ptr<google::protobuf::Message> in(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(r.method->input_type())->New());
  std::map<std::string, std::string> params;
  for (const std::string& p : r.Params()) params[p] = "x";
  if (BuildRequest(r, body, {}, params, in.get()).ok()) (void)ToJson(*in);
  (void)CheckJsonDepth(body, kMaxJsonDepth);
  return 0;
}
