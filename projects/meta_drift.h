// Meta drift: instances keep the meta values they were created with. Each
// records (tag mariposa.meta) a hash of the meta values its service's
// templates use; an instance whose hash differs from the current values'
// is stale. Pure functions; thread-safe.
#ifndef MARIPOSA_PROJECTS_META_DRIFT_H_
#define MARIPOSA_PROJECTS_META_DRIFT_H_

#include <map>
#include <set>
#include <string>

#include "projects/manifest.h"

namespace mariposa {

inline constexpr char kTagMeta[] = "mariposa.meta";

// The meta keys a service's instances use: `{{ .meta.KEY }}` in its
// environment, mdata, tags and command.
std::set<std::string> MetaKeysOf(const ServiceSpec& spec);

// A hash of the values of `keys` (a service's MetaKeysOf) in `meta` (""
// when there are none; a missing key hashes as missing).
std::string MetaHash(const std::set<std::string>& keys, const std::map<std::string, std::string>& meta);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_META_DRIFT_H_
