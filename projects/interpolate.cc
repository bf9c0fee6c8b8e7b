#include "projects/interpolate.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace mariposa {
namespace {

bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-';
}

// Maps a reference as written (without the leading '.') to its canonical name,
// or "" when unknown.
std::string Canonicalize(absl::string_view ref) {
  static const char* kFixed[] = {
      "project.name", "project.uuid", "project.version", "service.name", "scale",
      "package.ram", "package.disk", "package.cpu", "package.name",
      "placement.instance.name", "placement.instance.uuid", "placement.cn.uuid",
  };
  if (absl::ConsumePrefix(&ref, "this.")) {
    if (ref == "service") return "service.name";
    if (ref == "project") return "project.name";
    if (absl::StartsWith(ref, "meta.")) return std::string(ref);
    // `.this.scale`, `.this.project.uuid`, … read like the plain forms.
  }
  if (absl::StartsWith(ref, "meta.") && ref.size() > 5) return std::string(ref);
  for (const char* f : kFixed) {
    if (ref == f) return f;
  }
  return "";
}

}  // namespace

const std::vector<std::string>& KnownTemplateVariables() {
  static const auto* kKnown = new std::vector<std::string>{
      ".meta.KEY", ".project.name", ".project.uuid", ".project.version", ".service.name",
      ".scale", ".package.ram", ".package.disk", ".package.cpu", ".package.name",
      ".placement.instance.name", ".placement.instance.uuid", ".placement.cn.uuid",
      ".this.meta.KEY", ".this.service", ".this.project"};
  return *kKnown;
}

absl::StatusOr<std::vector<TemplateVariable>> ParseTemplate(absl::string_view tmpl) {
  std::vector<TemplateVariable> out;
  size_t pos = 0;
  while (true) {
    size_t open = tmpl.find("{{", pos);
    if (open == absl::string_view::npos) break;
    size_t close = tmpl.find("}}", open + 2);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("unterminated \"{{\" at offset ", open, ": close it with \"}}\""));
    }
    absl::string_view inner = absl::StripAsciiWhitespace(tmpl.substr(open + 2, close - open - 2));
    if (inner.empty() || inner[0] != '.') {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"{{ ", inner, " }}\" is not a variable reference: write it as {{ .name }}, e.g. {{ .meta.KEY }}"));
    }
    absl::string_view ref = inner.substr(1);
    bool ok = !ref.empty() && ref.front() != '.' && ref.back() != '.';
    for (size_t i = 0; ok && i < ref.size(); ++i) {
      char c = ref[i];
      if (c == '.') {
        if (i > 0 && ref[i - 1] == '.') ok = false;
      } else if (!IsIdentChar(c)) {
        ok = false;
      }
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"{{ ", inner, " }}\" is not a valid reference: use letters, digits, '_', '-' separated by dots"));
    }
    std::string name = Canonicalize(ref);
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown variable \"", inner, "\"; known: ",
                                                     absl::StrJoin(KnownTemplateVariables(), ", ")));
    }
    out.push_back(TemplateVariable{name, std::string(inner), open});
    pos = close + 2;
  }
  return out;
}

absl::StatusOr<std::string> Interpolate(absl::string_view tmpl, const InterpolationContext& ctx) {
  auto vars = ParseTemplate(tmpl);
  if (!vars.ok()) return vars.status();
  std::string out;
  size_t pos = 0;
  for (const TemplateVariable& v : *vars) {
    size_t close = tmpl.find("}}", v.offset + 2) + 2;
    out.append(tmpl.data() + pos, v.offset - pos);
    pos = close;
    std::optional<std::string> value;
    auto str = [&](const std::optional<std::string>& s) { value = s; };
    auto num = [&](const std::optional<int64_t>& n) {
      if (n.has_value()) value = absl::StrCat(*n);
    };
    const std::string& n = v.name;
    if (absl::StartsWith(n, "meta.")) {
      auto it = ctx.meta.find(n.substr(5));
      if (it == ctx.meta.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "meta key \"", n.substr(5), "\" is not set (referenced as {{ ", v.as_written,
            " }}); set it with `mariposa meta set ", n.substr(5), " VALUE` or add it under meta:"));
      }
      value = it->second;
    } else if (n == "project.name") { str(ctx.project_name);
    } else if (n == "project.uuid") { str(ctx.project_uuid);
    } else if (n == "project.version") { str(ctx.project_version);
    } else if (n == "service.name") { str(ctx.service_name);
    } else if (n == "scale") { num(ctx.scale);
    } else if (n == "package.name") { str(ctx.package_name);
    } else if (n == "package.ram") { num(ctx.package_ram);
    } else if (n == "package.disk") { num(ctx.package_disk);
    } else if (n == "package.cpu") { num(ctx.package_cpu);
    } else if (n == "placement.instance.name") { str(ctx.instance_name);
    } else if (n == "placement.instance.uuid") { str(ctx.instance_uuid);
    } else if (n == "placement.cn.uuid") { str(ctx.cn_uuid);
    }
    if (!value.has_value()) {
      if (ctx.leave_unknown) {
        out.append(tmpl.data() + v.offset, close - v.offset);
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat("{{ ", v.as_written, " }} has no value here (", n, " is not known yet)"));
    }
    out += *value;
  }
  out.append(tmpl.data() + pos, tmpl.size() - pos);
  return out;
}

}  // namespace mariposa
