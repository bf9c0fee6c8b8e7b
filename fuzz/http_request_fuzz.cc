// Raw bytes as a request to the HTTP listener: the parser with the
// listener's limits and CheckHead, then the path against the routes, the
// query string, the Last-Event-ID header and the body's mapping to the
// request message (gateway/http_server.h, routes.h, json_mapping.h).
#include <cstdint>
#include <string>

#include "gateway/http_server.h"
#include "gateway/json_mapping.h"
#include "gateway/routes.h"
#include "google/protobuf/message.h"

using namespace mariposa::gateway;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Routes* routes = new Routes(*Routes::Read(Routes::Served()));
  HttpLimits limits;
  limits.max_body = 64 << 10;
  HttpRequest req;
  HeadCheck check = ReadRequest(std::string(reinterpret_cast<const char*>(data), size), limits, &req);
  if (check.status != 0) {
    if (check.status > 0 && check.why.empty()) __builtin_trap();  // every refusal says why
    return 0;
  }
  if (req.body.size() > limits.max_body) __builtin_trap();
  bool known = false;
  auto m = routes->Find(req.method, req.path, &known);
  auto query = ParseQuery(req.query);
  if (req.has_header("Last-Event-ID")) (void)ParseLastEventId(req.header("Last-Event-ID"));
  if (!m || !query.ok()) return 0;
  std::unique_ptr<google::protobuf::Message> in(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(m->route->method->input_type())->New());
  if (BuildRequest(*m->route, req.body, *query, m->params, in.get()).ok()) (void)ToJson(*in);
  return 0;
}
