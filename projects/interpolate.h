// The manifest's interpolation language: `{{ .meta.KEY }}`, `{{ .project.name }}`
// and the other variables of MANIFEST.md, with the later `{{ .this.… }}`
// forms accepted as synonyms. Pure functions; thread-safe.
#ifndef MARIPOSA_PROJECTS_INTERPOLATE_H_
#define MARIPOSA_PROJECTS_INTERPOLATE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace mariposa {

// One `{{ … }}` occurrence, resolved to its canonical variable name.
struct TemplateVariable {
  std::string name;    // canonical: "meta.db.password", "project.name", "scale", …
  std::string as_written;  // e.g. ".this.meta.db.password"
  size_t offset = 0;   // byte offset of "{{" in the template
};

// Parses every `{{ … }}` in `tmpl`. INVALID_ARGUMENT for an unterminated
// `{{`, an empty or malformed reference, or an unknown variable (the message
// lists the known ones).
absl::StatusOr<std::vector<TemplateVariable>> ParseTemplate(absl::string_view tmpl);

// Values for interpolation. Unset optionals are values not known yet (for
// example `placement.cn.uuid` before the instance is placed).
struct InterpolationContext {
  std::map<std::string, std::string> meta;  // effective meta: store over manifest defaults
  std::optional<std::string> project_name;
  std::optional<std::string> project_uuid;
  std::optional<std::string> project_version;
  std::optional<std::string> service_name;
  std::optional<int64_t> scale;
  std::optional<std::string> package_name;
  std::optional<int64_t> package_ram;   // MiB
  std::optional<int64_t> package_disk;  // MiB
  std::optional<int64_t> package_cpu;   // cpu_cap percent
  std::optional<std::string> instance_name;
  std::optional<std::string> instance_uuid;
  std::optional<std::string> cn_uuid;
  // When true, variables whose value is not known yet are left in place
  // (`{{ .placement.cn.uuid }}`) instead of failing; missing meta keys
  // still fail.
  bool leave_unknown = false;
};

// Replaces every variable of `tmpl`. INVALID_ARGUMENT naming the variable when
// a meta key is missing or a value is not known (unless leave_unknown).
absl::StatusOr<std::string> Interpolate(absl::string_view tmpl, const InterpolationContext& ctx);

// The canonical variable names that exist, for help and error messages.
const std::vector<std::string>& KnownTemplateVariables();

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_INTERPOLATE_H_
