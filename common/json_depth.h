// How deep a JSON text nests objects and arrays, found by a scan of its
// bytes that does not recurse (strings skipped, escapes honoured), so that
// input too deep for a recursive parser or printer is refused before one
// sees it: the HTTP API's bodies (gateway/json_mapping.h) and Triton's
// answers (convergence/triton/triton_json.h).
#ifndef MARIPOSA_COMMON_JSON_DEPTH_H_
#define MARIPOSA_COMMON_JSON_DEPTH_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace mariposa {

// The offset of the first '[' or '{' that opens level `max_depth + 1`, or
// absl::string_view::npos when the text never nests deeper than `max_depth`.
inline size_t JsonTooDeepAt(absl::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return absl::string_view::npos;
}

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_JSON_DEPTH_H_
