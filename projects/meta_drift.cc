#include "projects/meta_drift.h"

#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "projects/interpolate.h"

namespace mariposa {

std::set<std::string> MetaKeysOf(const ServiceSpec& spec) {
  std::set<std::string> keys;
  auto scan = [&](const std::string& text) {
    if (text.find("{{") == std::string::npos) return;
    auto vars = ParseTemplate(text);
    if (!vars.ok()) return;  // the manifest was validated: not reached
    for (const TemplateVariable& v : *vars) {
      if (v.name.rfind("meta.", 0) == 0) keys.insert(v.name.substr(5));
    }
  };
  for (const auto* values : {&spec.environment, &spec.mdata, &spec.tags}) {
    for (const auto& kv : *values) scan(kv.second);
  }
  scan(spec.command);
  return keys;
}

std::string MetaHash(const std::set<std::string>& keys, const std::map<std::string, std::string>& meta) {
  if (keys.empty()) return "";
  std::string text;
  for (const std::string& k : keys) {
    auto it = meta.find(k);
    // Length-prefixed: no value can make two different sets read the same.
    absl::StrAppend(&text, k.size(), ":", k, it == meta.end() ? std::string("-") : absl::StrCat(it->second.size(), ":", it->second), "\n");
  }
  return Sha256Hex(text).substr(0, 16);
}

}  // namespace mariposa
