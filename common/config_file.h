// A daemon's configuration file: a YAML map of its command-line flags
// without the leading "--" (`listen: 127.0.0.1:7740`, `embedded-health:
// true`). Read into flags that go before the command line's, so a flag given
// on the command line wins.
#ifndef MARIPOSA_COMMON_CONFIG_FILE_H_
#define MARIPOSA_COMMON_CONFIG_FILE_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mariposa {

// "--key VALUE" pairs, and "--key" alone for the keys in `switches` set to
// true (false leaves them out). Errors name the file, the key and the fix:
// not a map, a value that is a list or map, a switch that is not true or
// false, a key in `switches` or `valued` neither (unknown).
absl::StatusOr<std::vector<std::string>> ConfigFileArgs(const std::string& path, const std::set<std::string>& switches,
                                                        const std::set<std::string>& valued);

// `argv` with `--config FILE` (or `--config=FILE`) taken out and the file's
// flags put first; `*from_file` = how many of the result's arguments (after
// argv[0]) came from the file.
absl::StatusOr<std::vector<std::string>> ExpandConfigFlag(int argc, char** argv, const std::set<std::string>& switches,
                                                          const std::set<std::string>& valued, int* from_file);

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_CONFIG_FILE_H_
