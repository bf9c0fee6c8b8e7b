#include "common/config_file.h"

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mariposa {

absl::StatusOr<std::vector<std::string>> ConfigFileArgs(const std::string& path, const std::set<std::string>& switches,
                                                        const std::set<std::string>& valued) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::NotFoundError(absl::StrCat("cannot read the config file ", path));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", e.mark.line + 1, ": not YAML: ", e.msg));
  }
  std::vector<std::string> out;
  if (root.IsNull()) return out;  // an empty file
  if (!root.IsMap()) return absl::InvalidArgumentError(absl::StrCat(path, ": must be a map of flag: value"));
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const int line = kv.first.Mark().line + 1;
    if (!kv.second.IsScalar()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", key, " must be a single value"));
    }
    const std::string value = kv.second.as<std::string>();
    if (switches.count(key)) {
      if (value == "true") out.push_back("--" + key);
      else if (value != "false") {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", key, " is true or false, not \"", value, "\""));
      }
    } else if (valued.count(key)) {
      out.push_back("--" + key);
      out.push_back(value);
    } else {
      std::set<std::string> all = switches;
      all.insert(valued.begin(), valued.end());
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": unknown setting \"", key,
                                                     "\"; the settings are the flags without --: ",
                                                     absl::StrJoin(all, ", ")));
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ExpandConfigFlag(int argc, char** argv, const std::set<std::string>& switches,
                                                          const std::set<std::string>& valued, int* from_file) {
  std::vector<std::string> rest;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) {
      path = argv[++i];
    } else if (a.rfind("--config=", 0) == 0) {
      path = a.substr(9);
    } else {
      rest.push_back(a);
    }
  }
  std::vector<std::string> out = {argc > 0 ? argv[0] : ""};
  *from_file = 0;
  if (!path.empty()) {
    auto file = ConfigFileArgs(path, switches, valued);
    if (!file.ok()) return file.status();
    *from_file = static_cast<int>(file->size());
    out.insert(out.end(), file->begin(), file->end());
  }
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace mariposa
