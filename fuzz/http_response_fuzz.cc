// Raw bytes as a reply to a plain-http health check (health/http_response.h):
// the first byte picks HEAD or not, a small body limit or the engine's, and
// where the rest is cut in two. Beyond "no crash": the outcome does not
// depend on the cut; an error says why and only an error does; a finished
// reply has a status; the body kept is within its bound; a reply read only
// in part is never reusable.
#include <cstdint>
#include <string>
#include <string_view>

#include "health/http_response.h"

using mariposa::health::HttpResponseReader;

namespace {

struct Outcome {
  HttpResponseReader::State state;
  int status;
  std::string body, error;
  bool reusable, truncated;
  bool operator==(const Outcome& o) const {
    return state == o.state && status == o.status && body == o.body && error == o.error && reusable == o.reusable &&
           truncated == o.truncated;
  }
};

Outcome Read(std::string_view in, size_t cut, bool head, size_t limit, bool close) {
  HttpResponseReader r(head, limit, limit / 2);
  r.Feed(in.substr(0, cut));
  r.Feed(in.substr(cut));
  if (close) r.Close();
  return {r.state(), r.status(), r.body(), r.error(), r.reusable(), r.truncated()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  uint8_t mode = data[0], at = data[1];
  std::string_view in(reinterpret_cast<const char*>(data + 2), size - 2);
  bool head = mode & 1, close = mode & 2;
  size_t limit = mode & 4 ? 16 : 64 * 1024;
  size_t cut = in.empty() ? 0 : at % (in.size() + 1);
  Outcome whole = Read(in, in.size(), head, limit, close);
  Outcome split = Read(in, cut, head, limit, close);
  if (!(whole == split)) __builtin_trap();  // the reply read differently when cut
  bool error = whole.state == HttpResponseReader::State::kError;
  if (error == whole.error.empty()) __builtin_trap();  // an error says why, and only an error
  if (whole.state == HttpResponseReader::State::kDone && whole.status < 100) __builtin_trap();
  if (whole.body.size() > limit / 2) __builtin_trap();
  if (whole.reusable && (whole.truncated || whole.state != HttpResponseReader::State::kDone)) __builtin_trap();
  return 0;
}
