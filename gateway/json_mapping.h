// Requests and replies of the HTTP/JSON API in protobuf's own JSON mapping
// (field names as in the .proto; lowerCamelCase is accepted too), with one
// difference: `bytes` fields, which these protos use for text the server
// validates itself (names, manifests), are plain JSON strings, not base64.
#ifndef MARIPOSA_GATEWAY_JSON_MAPPING_H_
#define MARIPOSA_GATEWAY_JSON_MAPPING_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "gateway/routes.h"

namespace google::protobuf {
class Message;
}

namespace mariposa::gateway {

// Fills `out` (route.method's request) from the JSON body (routes with
// body "*"), the query parameters, then the path's fields. INVALID_ARGUMENT
// says which part does not fit and how.
absl::Status BuildRequest(const Route& route, const std::string& body,
                          const std::multimap<std::string, std::string>& query,
                          const std::map<std::string, std::string>& params, google::protobuf::Message* out);

// The JSON of a reply: every field, defaults included.
std::string ToJson(const google::protobuf::Message& m);

}  // namespace mariposa::gateway

#endif  // MARIPOSA_GATEWAY_JSON_MAPPING_H_
