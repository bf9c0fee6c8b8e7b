#include "projects/volumes.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/ids.h"

namespace mariposa {

std::string VolapiVolumeName(const std::string& project, const std::string& volume) {
  return absl::StrCat(project, ".", volume);
}

std::optional<std::string> ProjectVolumeName(const std::string& project, const std::string& volapi_name) {
  std::string prefix = project + ".";
  if (!absl::StartsWith(volapi_name, prefix)) return std::nullopt;
  std::string name = volapi_name.substr(prefix.size());
  if (!IsDnsLabel(name)) return std::nullopt;
  return name;
}

std::optional<VolumeMount> ParseVolumeMount(const std::string& text, std::string* why) {
  std::vector<std::string> p = absl::StrSplit(text, ':');
  if (p.size() < 2 || p.size() > 3) {
    *why = absl::StrCat("\"", text, "\" is not NAME:MOUNTPOINT[:ro] (or a map {name, mountpoint, mode})");
    return std::nullopt;
  }
  VolumeMount m{p[0], p[1], p.size() == 3 ? p[2] : "rw"};
  if (m.mode != "rw" && m.mode != "ro") {
    *why = absl::StrCat("\"", text, "\": the mode after the mountpoint is ro or rw, not \"", m.mode, "\"");
    return std::nullopt;
  }
  return m;
}

std::string FixedVolumeChange(const std::map<std::string, VolumeSpec>& before,
                              const std::map<std::string, VolumeSpec>& after) {
  for (const auto& [name, b] : before) {
    auto a = after.find(name);
    if (a == after.end() || b.remove || a->second.remove) continue;
    std::string field;
    if (a->second.size_mib != b.size_mib) field = "size";
    else if (a->second.network != b.network) field = "network";
    if (field.empty()) continue;
    return absl::StrCat("volumes.", name, ".", field, ": VOLAPI cannot change a volume's ", field,
                        "; nothing was changed. Give the volume a new name (and move its data), or keep its ", field);
  }
  return "";
}

}  // namespace mariposa
