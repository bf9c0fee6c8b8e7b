// The HTTP/JSON API's OpenAPI 3.0 document, generated from the routes and
// the protos' descriptors (never written by hand): every route, its path
// and query parameters, its request and reply schemas in the JSON mapping
// of gateway/json_mapping.h, streams as text/event-stream.
#ifndef MARIPOSA_GATEWAY_OPENAPI_H_
#define MARIPOSA_GATEWAY_OPENAPI_H_

#include <string>

#include "gateway/routes.h"

namespace mariposa::gateway {

std::string OpenApi(const Routes& routes, const std::string& version);

}  // namespace mariposa::gateway

#endif  // MARIPOSA_GATEWAY_OPENAPI_H_
