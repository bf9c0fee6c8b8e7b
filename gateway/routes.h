// The HTTP/JSON API's routes, read from the RPCs' (mariposa.v1.http)
// options (proto/mariposa/v1/http.proto): which RPC a verb and path call,
// and which request fields the path's {segments} fill.
#ifndef MARIPOSA_GATEWAY_ROUTES_H_
#define MARIPOSA_GATEWAY_ROUTES_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace google::protobuf {
class MethodDescriptor;
}

namespace mariposa::gateway {

struct Route {
  std::string verb;   // GET POST PUT DELETE PATCH
  std::string path;   // the template: "/v1/projects/{project}:apply"
  bool body = false;  // the JSON body is the request ("*")
  const google::protobuf::MethodDescriptor* method = nullptr;
  // `path` by segment, parsed once: a literal, or {field} with an optional
  // ":verb" after it.
  struct Segment {
    std::string literal, field, suffix;
  };
  std::vector<Segment> segments;
  // "/mariposa.v1.Projects/Apply", as gRPC names it.
  std::string GrpcName() const;
  // The {field} names of the path, in order.
  std::vector<std::string> Params() const;
  bool Streaming() const;  // server streaming: answered as Server-Sent Events
};

class Routes {
 public:
  // Every method of `services` (full names, "mariposa.v1.Projects"); an
  // error names a method without a route, a template naming no field of
  // its request, or two routes that take the same verb and path.
  static absl::StatusOr<Routes> Read(const std::vector<std::string>& services);
  // The services mariposad's HTTP API serves (not the health agents' own:
  // HealthAgents/Connect is a two-way stream agents hold over gRPC).
  static const std::vector<std::string>& Served();

  struct Match {
    const Route* route = nullptr;
    std::map<std::string, std::string> params;  // URL-decoded
  };
  // The route for `verb` and `path` (no query string). nullopt: none; then
  // `path_known` says whether another verb takes the path (405, not 404).
  std::optional<Match> Find(const std::string& verb, const std::string& path, bool* path_known) const;
  const std::vector<Route>& all() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

// "%2F" and the like decoded; nullopt for a malformed escape.
std::optional<std::string> PercentDecode(const std::string& s);

}  // namespace mariposa::gateway

#endif  // MARIPOSA_GATEWAY_ROUTES_H_
