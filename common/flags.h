// Command-line flags of the form `--flag VALUE` or `--flag=VALUE`, shared by
// the daemons' hand-written argument loops.
#ifndef MARIPOSA_COMMON_FLAGS_H_
#define MARIPOSA_COMMON_FLAGS_H_

#include <string>

namespace mariposa {

// If argv[*i] is `flag` (then the value is argv[*i + 1], and *i moves past
// it) or `flag=VALUE`, stores the value and returns true. A bare `flag` at
// the end of argv returns false, so the caller reports it as incomplete.
inline bool FlagValue(int argc, char** argv, int* i, const std::string& flag, std::string* out) {
  std::string a = argv[*i];
  if (a == flag) {
    if (*i + 1 >= argc) return false;
    *out = argv[++*i];
    return true;
  }
  if (a.size() > flag.size() + 1 && a.compare(0, flag.size() + 1, flag + "=") == 0) {
    *out = a.substr(flag.size() + 1);
    return true;
  }
  return false;
}

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_FLAGS_H_
