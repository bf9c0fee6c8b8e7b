// Every bound Mariposa puts on what a user sends: manifest size, YAML nesting
// and alias expansion, services, meta keys, key and value lengths, durations,
// error lists and per-request work. One place defines them all;
// docs/manifest.md ("Limits") lists them for users. Everything here is pure
// and thread-safe.
#ifndef MARIPOSA_PROJECTS_LIMITS_H_
#define MARIPOSA_PROJECTS_LIMITS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace mariposa {

struct Limits {
  // A manifest's text, as sent (YAML or JSON).
  static constexpr size_t kMaxManifestBytes = 4 << 20;
  // Nesting of maps and lists, counting the root as level 1.
  static constexpr int kMaxDepth = 64;
  // Nodes of the document with every alias expanded (a billion-laughs file
  // stops here, after a few thousand nodes of work).
  static constexpr int64_t kMaxNodes = 250000;
  // One scalar (a value, an environment variable, a user-script).
  static constexpr size_t kMaxValueBytes = 64 << 10;
  // Any key: meta keys, environment names, tags, headers.
  static constexpr size_t kMaxKeyBytes = 256;
  static constexpr int kMaxServices = 1000;
  // Meta defaults in one manifest; entries in one project's store.
  static constexpr int kMaxManifestMeta = 1000;
  static constexpr int kMaxStoredMeta = 1000;
  // The canonical form of a version (defaults written out), so that every
  // stored version fits in one reply.
  static constexpr size_t kMaxCanonicalBytes = 8 << 20;
  // Durations in a manifest.
  static constexpr absl::Duration kMaxDuration = absl::Hours(24 * 30);
  // Errors listed in one reply ("first 100 of 50,000 errors").
  static constexpr int kMaxErrorsShown = 100;
  // Bytes of one error reply's message: gRPC carries it in a header, and
  // clients refuse headers above 8 KiB by default.
  static constexpr size_t kMaxErrorMessageBytes = 6 << 10;
  // Free text fields of requests (description, version message, reason).
  static constexpr size_t kMaxTextBytes = 4096;
  // Server work for one request when the client set a longer (or no)
  // deadline.
  static constexpr absl::Duration kMaxRequestWork = absl::Seconds(30);
  // One request message: a manifest at its limit plus room for the other
  // fields. gRPC refuses larger ones before our code sees them.
  static constexpr int kMaxRequestBytes = kMaxManifestBytes + (1 << 20);
  // Replies, server and CLI: above the largest reply the limits allow
  // (ListMeta with kMaxStoredMeta values at kMaxValueBytes; a version with
  // its manifest, canonical form and service specs).
  static constexpr int kMaxGrpcMessageBytes = 96 << 20;
  // Instances of one service (count, scale).
  static constexpr int64_t kMaxCount = 100000;
  // The longest a token lives (`admin token create --expires`): ten years.
  static constexpr int64_t kMaxTokenSeconds = int64_t{10} * 365 * 24 * 3600;
  // Events in one ListEvents reply (a larger limit gives this many).
  static constexpr int64_t kMaxListLimit = 1000;
};

// INVALID_ARGUMENT "FIELD N is outside LO..HI" (and `hint` after a "; ")
// unless lo <= value <= hi: the one range check of request fields.
absl::Status CheckRange(absl::string_view field, int64_t value, int64_t lo, int64_t hi, absl::string_view hint = "");

// The one text rule for everything a user sends: valid UTF-8, no control
// characters except tab, newline and carriage return (a tcp check's send
// needs \r\n), at most `max_bytes`. INVALID_ARGUMENT naming `field` and the
// byte offset of the first offending byte.
absl::Status CheckText(absl::string_view field, absl::string_view value, size_t max_bytes);

// Byte offset of the first byte that breaks the text rule (invalid UTF-8, a
// control character other than \t \n \r, or DEL), or npos; `why` says what it
// is.
size_t FindBadText(absl::string_view value, std::string* why);

// The one rule for meta keys, whether set in a manifest or by `meta set`:
// 1..256 bytes of the text rule, without spaces, '=' or braces.
absl::Status CheckMetaKey(absl::string_view key);

// `value` with invalid UTF-8 replaced by U+FFFD, for text read back from a
// store that may be damaged (protobuf refuses invalid UTF-8 in strings).
std::string ValidUtf8(absl::string_view value);

// Adds with overflow detection: OUT_OF_RANGE naming `what` instead of a
// wrap-around.
absl::Status CheckedAdd(int64_t a, int64_t b, absl::string_view what, int64_t* out);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_LIMITS_H_
