// Identifiers and digests.
#ifndef MARIPOSA_COMMON_IDS_H_
#define MARIPOSA_COMMON_IDS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace mariposa {

// A random RFC 4122 version-4 uuid, lower case. Thread-safe.
std::string NewUuid();

// True for the canonical 8-4-4-4-12 lower- or upper-case hex form.
bool IsUuid(absl::string_view s);

// Lower-case hex sha256 of `data`.
std::string Sha256Hex(absl::string_view data);

// True for an RFC 1123 DNS label: 1-63 of [a-z0-9-], not starting or ending
// with '-'.
bool IsDnsLabel(absl::string_view s);

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_IDS_H_
