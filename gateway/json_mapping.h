// Requests and replies of the HTTP/JSON API in protobuf's own JSON mapping
// (field names as in the .proto; lowerCamelCase is accepted too), with one
// difference: `bytes` fields, which these protos use for text the server
// validates itself (names, manifests), are plain JSON strings, not base64.
#ifndef MARIPOSA_GATEWAY_JSON_MAPPING_H_
#define MARIPOSA_GATEWAY_JSON_MAPPING_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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

// The deepest nesting of objects and arrays a request body may have. The
// mapping and protobuf's parser recurse on it, so it is checked first, by a
// scan that does not recurse (CheckJsonDepth).
inline constexpr int kMaxJsonDepth = 64;
// INVALID_ARGUMENT when `text` nests objects and arrays deeper than
// `max_depth` (a scan of the bytes, without recursion, strings skipped).
absl::Status CheckJsonDepth(absl::string_view text, int max_depth);

// A query string ("a=1&b=x%20y&flag") as decoded pairs; '+' is a space.
// INVALID_ARGUMENT for a bad %-escape, an empty name or more than 100
// parameters.
absl::StatusOr<std::multimap<std::string, std::string>> ParseQuery(absl::string_view query);

// The Last-Event-ID header of an event stream: the index of the last event
// the client saw, a non-negative decimal number.
absl::StatusOr<int64_t> ParseLastEventId(absl::string_view text);

// The JSON of a reply: every field, defaults included.
std::string ToJson(const google::protobuf::Message& m);

}  // namespace mariposa::gateway

#endif  // MARIPOSA_GATEWAY_JSON_MAPPING_H_
