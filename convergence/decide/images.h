// Image versions and sources (RFD 40, sdcadm): comparing versions, the
// nearest versions to one that does not exist, the newer versions a source
// offers, and what changed between two. Pure functions; thread-safe.
#ifndef MARIPOSA_CONVERGENCE_IMAGES_H_
#define MARIPOSA_CONVERGENCE_IMAGES_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "convergence/triton/clients.h"

namespace mariposa::convergence {

// <0, 0, >0 as `a` is older than, the same as or newer than `b`. Versions
// are compared by their dot-, dash- or plus-separated parts, numbers as
// numbers (2.9 < 2.10), other parts as text; a pre-release ("1.2.0-rc1")
// is older than its release ("1.2.0"); a leading "v" is ignored.
int CompareVersions(absl::string_view a, absl::string_view b);

// The order of images of one name: by version, then by publication.
bool OlderImage(const triton::Image& a, const triton::Image& b);

// Up to `max` of `versions` nearest to `want`: the closest older and newer
// ones, alternately, nearest first; each once.
std::vector<std::string> NearestVersions(absl::string_view want, std::vector<std::string> versions, size_t max = 3);

// Of `candidates` (images of one name, in any order), those newer than
// `current`, newest first; only the newest when !all.
std::vector<triton::Image> NewerImages(const std::string& current, const std::vector<triton::Image>& candidates,
                                       bool all);

// Of `candidates`, those after `from` up to and including `to` (by version),
// oldest first: the change log from one version to another.
std::vector<triton::Image> ImagesBetween(const std::string& from, const std::string& to,
                                         const std::vector<triton::Image>& candidates);

// "69 MiB" (binary units, rounded; bytes below 1 KiB).
std::string HumanBytes(int64_t bytes);

// The first 8 characters of an image uuid, as sdcadm prints them.
std::string ShortUuid(const std::string& uuid);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_IMAGES_H_
