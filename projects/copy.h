// A project's manifest as another project's (mariposa project copy / move,
// issue 52): the source's text parsed as a document, `project:` set to the
// copy's name, the caller's overrides (`--set PATH=VALUE`) applied, and the
// result written as YAML. Pure; fuzzed by fuzz/copy_fuzz.cc.
//
// PATH names a key from the document's top: keys separated by dots
// (`services.web.count`), a key with dots in brackets
// (`services.web.tags[com.example.tier]`), a list item by its index from 0
// (`services.web.cns.0`; the list's length appends). VALUE is YAML: a
// scalar (`3`, `web-staging`), or a flow map or list (`{vlan_id: 12}`,
// `[a, b]`); `null`, `~` or nothing removes the key. Maps on the way are made
// when missing; anything else in the way is an error that names the
// override and where it stopped.
#ifndef MARIPOSA_PROJECTS_COPY_H_
#define MARIPOSA_PROJECTS_COPY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/value.h"

namespace mariposa {

struct ManifestOverride {
  std::string text;               // as given, for errors
  std::vector<std::string> path;  // keys and list indexes
  Value value;                    // null: remove
};

// INVALID_ARGUMENT quoting `text` when it is not PATH=VALUE as above.
absl::StatusOr<ManifestOverride> ParseOverride(absl::string_view text);

// Applies `o` to `doc` (a map). INVALID_ARGUMENT naming the override and
// the part of its path that cannot be followed; `doc` is then unchanged.
absl::Status ApplyOverride(const ManifestOverride& o, Value* doc);

// The manifest `text` as project `target`'s, with `sets` applied in order.
// The text is parsed with the manifest's limits; the result is YAML, its
// keys in the source's order (comments and anchors are not kept: aliases
// are written out). INVALID_ARGUMENT for a text that is not a map, a bad
// override, or a result above the manifest's size limit.
absl::StatusOr<std::string> CopiedManifest(absl::string_view text, const std::string& target,
                                           const std::vector<std::string>& sets);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_COPY_H_
