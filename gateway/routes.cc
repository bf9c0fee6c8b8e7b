#include "gateway/routes.h"

#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "mariposa/v1/http.pb.h"

namespace mariposa::gateway {
namespace {

using google::protobuf::MethodDescriptor;

std::vector<Route::Segment> Parse(const std::string& path) {
  std::vector<Route::Segment> out;
  for (absl::string_view part : absl::StrSplit(absl::string_view(path).substr(1), '/')) {
    Route::Segment s;
    if (absl::StartsWith(part, "{")) {
      size_t close = part.find('}');
      s.field = std::string(part.substr(1, close - 1));
      s.suffix = std::string(part.substr(close + 1));
    } else {
      s.literal = std::string(part);
    }
    out.push_back(std::move(s));
  }
  return out;
}

void Add(const MethodDescriptor* m, const v1::HttpRule& r, std::vector<Route>* out) {
  Route route;
  route.method = m;
  route.body = r.body() == "*";
  switch (r.pattern_case()) {
    case v1::HttpRule::kGet:
      route.verb = "GET", route.path = r.get();
      break;
    case v1::HttpRule::kPost:
      route.verb = "POST", route.path = r.post();
      break;
    case v1::HttpRule::kPut:
      route.verb = "PUT", route.path = r.put();
      break;
    case v1::HttpRule::kDelete:
      route.verb = "DELETE", route.path = r.delete_();
      break;
    case v1::HttpRule::kPatch:
      route.verb = "PATCH", route.path = r.patch();
      break;
    default:
      return;
  }
  route.segments = Parse(route.path);
  out->push_back(std::move(route));
  for (const v1::HttpRule& more : r.additional_bindings()) Add(m, more, out);
}

}  // namespace

std::string Route::GrpcName() const { return absl::StrCat("/", method->service()->full_name(), "/", method->name()); }

std::vector<std::string> Route::Params() const {
  std::vector<std::string> out;
  for (const Segment& s : segments) {
    if (!s.field.empty()) out.push_back(s.field);
  }
  return out;
}

bool Route::Streaming() const { return method->server_streaming(); }

const std::vector<std::string>& Routes::Served() {
  static const auto* kServed = new std::vector<std::string>{
      "mariposa.v1.Projects", "mariposa.v1.Queue", "mariposa.v1.State", "mariposa.v1.Events",
      "mariposa.v1.Images",   "mariposa.v1.Admin", "mariposa.v1.Auth"};
  return *kServed;
}

absl::StatusOr<Routes> Routes::Read(const std::vector<std::string>& services) {
  Routes out;
  const auto* pool = google::protobuf::DescriptorPool::generated_pool();
  for (const std::string& name : services) {
    const google::protobuf::ServiceDescriptor* s = pool->FindServiceByName(name);
    if (s == nullptr) return absl::NotFoundError(absl::StrCat("no service ", name, " in the compiled protos"));
    for (int i = 0; i < s->method_count(); ++i) {
      const MethodDescriptor* m = s->method(i);
      if (!m->options().HasExtension(v1::http)) {
        return absl::FailedPreconditionError(absl::StrCat(
            m->full_name(), " has no route: give it option (http) in its .proto (proto/mariposa/v1/http.proto)"));
      }
      if (m->client_streaming()) {
        return absl::FailedPreconditionError(
            absl::StrCat(m->full_name(), " streams requests; HTTP routes take one request"));
      }
      Add(m, m->options().GetExtension(v1::http), &out.routes_);
    }
  }
  std::set<std::string> seen;
  for (const Route& r : out.routes_) {
    for (const std::string& f : r.Params()) {
      if (r.method->input_type()->FindFieldByName(f) == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(r.method->full_name(), "'s route ", r.path, " names {", f,
                                                          "}, which ", r.method->input_type()->name(), " has not"));
      }
    }
    // The same verb and shape twice: one of them would never be reached.
    std::string shape = r.verb;
    for (const Route::Segment& s : r.segments)
      absl::StrAppend(&shape, "/", s.field.empty() ? s.literal : "*" + s.suffix);
    if (!seen.insert(shape).second) {
      return absl::FailedPreconditionError(
          absl::StrCat(r.verb, " ", r.path, " (", r.method->full_name(), ") takes the same requests as another route"));
    }
  }
  return out;
}

std::optional<Routes::Match> Routes::Find(const std::string& verb, const std::string& path, bool* path_known) const {
  *path_known = false;
  if (path.empty() || path[0] != '/') return std::nullopt;
  std::vector<std::string> parts = absl::StrSplit(path.substr(1), '/');
  std::optional<Match> best;
  int best_score = -1;
  for (const Route& r : routes_) {
    const std::vector<Route::Segment>& t = r.segments;
    if (t.size() != parts.size()) continue;
    Match m{&r, {}};
    int score = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < t.size(); ++i) {
      const Route::Segment& s = t[i];
      if (s.field.empty()) {
        ok = parts[i] == s.literal;
        score += 2;
        continue;
      }
      std::string value = parts[i];
      if (!s.suffix.empty()) {
        ok = absl::EndsWith(value, s.suffix) && value.size() > s.suffix.size();
        value.resize(value.size() - std::min(value.size(), s.suffix.size()));
        score += 1;
      }
      std::optional<std::string> decoded = PercentDecode(value);
      ok = ok && !value.empty() && decoded.has_value();
      if (ok) m.params[s.field] = *decoded;
    }
    if (!ok) continue;
    if (r.verb != verb) {
      *path_known = true;
      continue;
    }
    if (score > best_score) {
      best = std::move(m);
      best_score = score;
    }
  }
  return best;
}

std::optional<std::string> PercentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace mariposa::gateway
