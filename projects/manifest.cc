#include "projects/manifest.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <regex>
#include <set>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/ids.h"
#include "common/value.h"
#include "projects/cron.h"
#include "projects/interpolate.h"
#include "projects/limits.h"
#include "projects/yaml_document.h"

namespace mariposa {

std::string ManifestDiagnostic::ToString() const {
  // Checks against the data center have no line: the path locates them.
  std::string loc = line > 0 ? absl::StrCat(file, ":", line, ":", column, ": ") : absl::StrCat(file, ": ");
  if (path.empty()) return loc + message;
  return absl::StrCat(loc, path, ": ", message);
}

std::string PlacementRule::ToString() const {
  return absl::StrCat(key, equal ? "==" : "!=", soft ? "~" : "", value);
}

absl::Status DiagnosticsToStatus(const std::vector<ManifestDiagnostic>& errors, int64_t total) {
  if (errors.empty()) return absl::OkStatus();
  total = std::max<int64_t>(total, static_cast<int64_t>(errors.size()));
  std::string body;
  size_t shown = 0;
  for (const auto& e : errors) {
    std::string line = e.ToString();
    if (shown > 0 && body.size() + line.size() + 1 > Limits::kMaxErrorMessageBytes - 200) break;
    absl::StrAppend(&body, "\n", line);
    ++shown;
  }
  std::string head = total == 1 ? "1 error" : absl::StrCat(total, " errors");
  if (static_cast<int64_t>(shown) < total) {
    head = absl::StrCat("first ", shown, " of ", total, " errors");
    absl::StrAppend(&body, "\n… ", total - static_cast<int64_t>(shown),
                    " more not shown; fix these and apply again (`mariposa diff -f FILE` checks without storing)");
  }
  return absl::InvalidArgumentError(absl::StrCat(head, " in manifest, nothing was changed:", body));
}

absl::StatusOr<absl::Duration> ParseManifestDuration(absl::string_view s) {
  s = absl::StripAsciiWhitespace(s);
  absl::Duration d;
  int64_t secs;
  if (absl::SimpleAtoi(s, &secs)) {
    if (secs < 0) return absl::InvalidArgumentError("must not be negative");
    d = absl::Seconds(secs);
  } else if (s.empty() || !absl::ascii_isdigit(s[0]) || !absl::ParseDuration(s, &d) ||
             d == absl::InfiniteDuration() || d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", s.substr(0, 40), "\" is not a duration (write e.g. 500ms, 10s, 5m, 1h)"));
  }
  if (d > Limits::kMaxDuration) {
    return absl::InvalidArgumentError(absl::StrCat("\"", s.substr(0, 40), "\" is longer than the longest duration allowed, ",
                                                   absl::FormatDuration(Limits::kMaxDuration), " (30 days)"));
  }
  return d;
}

std::string FormatManifestDuration(absl::Duration d) { return absl::FormatDuration(d); }

std::string FormatManifestSize(int64_t bytes) {
  static const std::pair<char, int> kUnits[] = {{'t', 40}, {'g', 30}, {'m', 20}, {'k', 10}};
  for (const auto& u : kUnits) {
    int64_t unit = int64_t{1} << u.second;
    if (bytes != 0 && bytes % unit == 0) return absl::StrCat(bytes / unit, std::string(1, u.first));
  }
  return absl::StrCat(bytes / 1024, "k");
}

absl::StatusOr<int64_t> ParseManifestSize(absl::string_view s) {
  std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(s));
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", s, "\" is not a size (write e.g. 512m, 4g; binary units)"));
  };
  if (absl::EndsWith(t, "ib")) t.resize(t.size() - 2);
  else if (absl::EndsWith(t, "b") && t.size() > 1 && !absl::ascii_isdigit(t[t.size() - 2])) t.resize(t.size() - 1);
  int64_t mult = 1 << 20;  // bare integers are MiB
  if (!t.empty() && absl::ascii_isalpha(t.back())) {
    switch (t.back()) {
      case 'k': mult = int64_t{1} << 10; break;
      case 'm': mult = int64_t{1} << 20; break;
      case 'g': mult = int64_t{1} << 30; break;
      case 't': mult = int64_t{1} << 40; break;
      default: return bad();
    }
    t.pop_back();
  }
  int64_t n;
  if (!absl::SimpleAtoi(t, &n) || n < 0 || n > (int64_t{1} << 62) / mult) return bad();
  return n * mult;
}

namespace {

const std::set<std::string>& ReservedKeys() {
  static const auto* k = new std::set<std::string>{"triggers", "autoscale",
                                                  "webhooks", "containerpilot"};
  return *k;
}

std::string KindName(const YamlNode& n) {
  if (n.IsMap()) return "a map";
  if (n.IsSequence()) return "a list";
  if (n.IsNull()) return "empty";
  return absl::StrCat("\"", n.Scalar(), "\"");
}

// Walks the YAML tree, filling a Manifest and collecting every error.
class Parser {
 public:
  explicit Parser(const ParseOptions& opts) : opts_(opts) {}

  ParseResult Run(absl::string_view text) {
    ParseResult result;
    YamlMark mark;
    YamlLimits limits = YamlLimits::Manifest();
    if (opts_.stored) {
      // Canonical forms write defaults out: more bytes and nodes than the
      // manifest they came from, within the canonical limit.
      limits.max_bytes = Limits::kMaxCanonicalBytes;
      limits.max_nodes = 2 * Limits::kMaxNodes;
    }
    auto doc = YamlDocument::Parse(text, &mark, limits, opts_.cancel);
    if (!doc.ok()) {
      if (absl::IsResourceExhausted(doc.status()) || absl::IsInvalidArgument(doc.status())) {
        Error(mark.line + 1, mark.column + 1, "", std::string(doc.status().message()));
      } else {
        result.interrupted = doc.status();
        return result;
      }
    } else {
      ParseRoot((*doc)->root());
      result.interrupted = interrupted_;
    }
    if (error_count_ == 0 && result.interrupted.ok()) {
      m_.warnings = warnings_;
      result.manifest = std::move(m_);
    }
    result.errors = std::move(errors_);
    result.total_errors = error_count_;
    return result;
  }

 private:
  using Fields = std::map<std::string, std::function<void(const YamlNode&, const std::string&)>>;

  // Keeps the first Limits::kMaxErrorsShown errors and counts the rest; long
  // echoes of user text are cut so one reply stays small.
  void Error(int line, int col, const std::string& path, const std::string& msg) {
    ++error_count_;
    if (errors_.size() >= static_cast<size_t>(Limits::kMaxErrorsShown)) return;
    errors_.push_back(ManifestDiagnostic{opts_.filename, line, col, Cut(path, 200), Cut(msg, 400)});
  }
  static std::string Cut(const std::string& s, size_t max) {
    if (s.size() <= max) return s;
    size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // a UTF-8 boundary
    return absl::StrCat(s.substr(0, n), "…");
  }
  // False once the caller gave up (the status is kept for Run).
  bool Wanted() {
    if (opts_.cancel == nullptr || !interrupted_.ok()) return interrupted_.ok();
    interrupted_ = opts_.cancel->Check();
    return interrupted_.ok();
  }
  // Keys of any map: at most Limits::kMaxKeyBytes.
  bool KeyOk(const YamlNode& k, const std::string& path, const std::string& key) {
    if (key.size() <= Limits::kMaxKeyBytes) return true;
    Error(k, path, absl::StrCat("a key of ", key.size(), " bytes is over the limit of ", Limits::kMaxKeyBytes,
                                " bytes"));
    return false;
  }
  void Error(const YamlNode& n, const std::string& path, const std::string& msg) {
    YamlMark mk = n.Mark();
    Error(mk.line >= 0 ? mk.line + 1 : 1, mk.column >= 0 ? mk.column + 1 : 1, path, msg);
  }
  void Warn(const YamlNode& n, const std::string& path, const std::string& msg) {
    YamlMark mk = n.Mark();
    warnings_.push_back(ManifestDiagnostic{opts_.filename, mk.line >= 0 ? mk.line + 1 : 1,
                                           mk.column >= 0 ? mk.column + 1 : 1, path, msg});
  }
  static std::string Join(const std::string& path, const std::string& key) {
    return path.empty() ? key : absl::StrCat(path, ".", key);
  }

  // Dispatches each key of map `n` to its handler; unknown keys are errors,
  // RFD 36 keys not run yet are stored with a warning, duplicates are errors.
  // `aliases` maps an alias to its key; using both is an error.
  void ParseMap(const YamlNode& n, const std::string& path, const Fields& fields,
                const std::map<std::string, std::string>& aliases = {},
                std::map<std::string, Value>* reserved = nullptr) {
    if (!n.IsMap()) {
      Error(n, path, absl::StrCat("must be a map, not ", KindName(n)));
      return;
    }
    std::map<std::string, std::string> seen;  // canonical key -> as written
    for (const auto& kv : n) {
      const YamlNode& k = kv.first;
      if (!k.IsScalar()) {
        Error(k, path, "keys must be plain strings");
        continue;
      }
      std::string key = k.Scalar();
      if (!KeyOk(k, path, key)) continue;
      std::string canon = key;
      auto al = aliases.find(key);
      if (al != aliases.end()) canon = al->second;
      std::string p = Join(path, key);
      auto prev = seen.find(canon);
      if (prev != seen.end()) {
        if (prev->second == key) {
          Error(k, p, "duplicate key");
        } else {
          Error(k, p, absl::StrCat("\"", key, "\" and \"", prev->second,
                                   "\" mean the same; keep one"));
        }
        continue;
      }
      seen[canon] = key;
      auto f = fields.find(canon);
      if (f != fields.end()) {
        f->second(kv.second, p);
      } else if (reserved != nullptr && ReservedKeys().count(key)) {
        (*reserved)[key] = kv.second.ToValue();
        Warn(k, p, absl::StrCat("accepted and stored, but Mariposa does not act on \"", key, "\" yet"));
      } else {
        std::vector<std::string> known;
        for (const auto& kv : fields) known.push_back(kv.first);
        for (const auto& kv : aliases) known.push_back(kv.first);
        std::sort(known.begin(), known.end());
        Error(k, p, absl::StrCat("unknown key \"", key, "\"; expected one of: ", absl::StrJoin(known, ", ")));
      }
    }
  }

  bool Scalar(const YamlNode& n, const std::string& path, std::string* out) {
    if (!n.IsScalar()) {
      Error(n, path, absl::StrCat("must be a single value, not ", KindName(n)));
      return false;
    }
    *out = n.Scalar();
    return true;
  }

  void String(const YamlNode& n, const std::string& path, std::string* out, bool templated = false) {
    if (Scalar(n, path, out) && templated) Template(n, path, *out);
  }

  void Template(const YamlNode& n, const std::string& path, const std::string& text) {
    if (text.find("{{") == std::string::npos && text.find("}}") == std::string::npos) return;
    auto vars = ParseTemplate(text);
    if (!vars.ok()) {
      Error(n, path, std::string(vars.status().message()));
      return;
    }
    YamlMark mk = n.Mark();
    m_.templates.push_back(TemplateUse{path, mk.line + 1, mk.column + 1, text});
  }

  void Int(const YamlNode& n, const std::string& path, int64_t* out, int64_t min, int64_t max) {
    std::string s;
    if (!Scalar(n, path, &s)) return;
    int64_t v;
    if (!absl::SimpleAtoi(s, &v)) {
      Error(n, path, absl::StrCat("\"", s, "\" is not a whole number"));
      return;
    }
    if (v < min || v > max) {
      Error(n, path, absl::StrCat(v, " is out of range ", min, "..", max));
      return;
    }
    *out = v;
  }
  void Int(const YamlNode& n, const std::string& path, int* out, int64_t min, int64_t max) {
    int64_t v = *out;
    Int(n, path, &v, min, max);
    *out = static_cast<int>(v);
  }

  void Bool(const YamlNode& n, const std::string& path, bool* out) {
    std::string s;
    if (!Scalar(n, path, &s)) return;
    std::string l = absl::AsciiStrToLower(s);
    if (l == "true" || l == "yes" || l == "on") *out = true;
    else if (l == "false" || l == "no" || l == "off") *out = false;
    else Error(n, path, absl::StrCat("\"", s, "\" is not true or false"));
  }

  void Duration(const YamlNode& n, const std::string& path, absl::Duration* out, bool positive = true) {
    std::string s;
    if (!Scalar(n, path, &s)) return;
    auto d = ParseManifestDuration(s);
    if (!d.ok()) {
      Error(n, path, std::string(d.status().message()));
    } else if (positive && *d <= absl::ZeroDuration()) {
      Error(n, path, "must be longer than 0s");
    } else {
      *out = *d;
    }
  }

  void Size(const YamlNode& n, const std::string& path, std::optional<int64_t>* out) {
    std::string s;
    if (!Scalar(n, path, &s)) return;
    auto v = ParseManifestSize(s);
    if (!v.ok()) Error(n, path, std::string(v.status().message()));
    else *out = *v;
  }

  void OneOf(const YamlNode& n, const std::string& path, std::string* out,
             const std::vector<std::string>& allowed) {
    std::string s;
    if (!Scalar(n, path, &s)) return;
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
      Error(n, path, absl::StrCat("\"", s, "\" is not one of: ", absl::StrJoin(allowed, ", ")));
      return;
    }
    *out = s;
  }

  // A map of strings, or a list of "K=V" strings.
  void StringMap(const YamlNode& n, const std::string& path, std::map<std::string, std::string>* out,
                 bool templated) {
    if (n.IsNull()) return;
    if (n.IsSequence()) {
      for (size_t i = 0; i < n.size(); ++i) {
        const YamlNode& item = n[i];
        std::string p = absl::StrCat(path, "[", i, "]");
        std::string s;
        if (!Scalar(item, p, &s)) continue;
        size_t eq = s.find('=');
        if (eq == std::string::npos || eq == 0) {
          Error(item, p, absl::StrCat("\"", s, "\" is not KEY=VALUE"));
          continue;
        }
        std::string key = s.substr(0, eq);
        if (!KeyOk(item, p, key)) continue;
        if (out->count(key)) {
          Error(item, p, absl::StrCat("\"", key, "\" is given twice"));
          continue;
        }
        (*out)[key] = s.substr(eq + 1);
        if (templated) Template(item, Join(path, key), (*out)[key]);
      }
      return;
    }
    if (!n.IsMap()) {
      Error(n, path, absl::StrCat("must be a map or a list of KEY=VALUE, not ", KindName(n)));
      return;
    }
    for (const auto& kv : n) {
      std::string key;
      if (!Scalar(kv.first, path, &key) || !KeyOk(kv.first, path, key)) continue;
      std::string p = Join(path, key);
      if (out->count(key)) {
        Error(kv.first, p, "duplicate key");
        continue;
      }
      std::string v;
      if (kv.second.IsNull()) {
        v = "";
      } else if (!Scalar(kv.second, p, &v)) {
        continue;
      }
      (*out)[key] = v;
      if (templated) Template(kv.second, p, v);
    }
  }

  // networks: names or uuids of NAPI networks or pools, one NIC each, the
  // first primary.
  void Networks(const YamlNode& n, const std::string& path, std::vector<std::string>* out) {
    StringList(n, path, out);
    constexpr size_t kMaxNics = 8;
    if (out->size() > kMaxNics) {
      Error(n, path, absl::StrCat(out->size(), " networks; an instance has at most ", kMaxNics, " NICs"));
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < out->size(); ++i) {
      const std::string& name = (*out)[i];
      if (name.empty() || name.find_first_of(" \t") != std::string::npos) {
        Error(n, absl::StrCat(path, "[", i, "]"), "must be a network or pool name or uuid, without spaces");
      } else if (!seen.insert(name).second) {
        Error(n, absl::StrCat(path, "[", i, "]"), absl::StrCat("network \"", name, "\" is listed twice (one NIC per network)"));
      }
    }
  }

  // A list of strings; a single scalar counts as a one-item list.
  void StringList(const YamlNode& n, const std::string& path, std::vector<std::string>* out) {
    out->clear();
    if (n.IsNull()) return;
    if (n.IsScalar()) {
      out->push_back(n.Scalar());
      return;
    }
    if (!n.IsSequence()) {
      Error(n, path, absl::StrCat("must be a list, not ", KindName(n)));
      return;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      std::string s;
      if (Scalar(n[i], absl::StrCat(path, "[", i, "]"), &s)) out->push_back(s);
    }
  }

  // Meta defaults: scalars, nested maps flattened to dotted keys.
  void Meta(const YamlNode& n, const std::string& path, const std::string& prefix) {
    if (n.IsNull()) return;
    if (!n.IsMap()) {
      Error(n, path, absl::StrCat("must be a map, not ", KindName(n)));
      return;
    }
    for (const auto& kv : n) {
      std::string key;
      if (!Scalar(kv.first, path, &key)) continue;
      std::string full = prefix.empty() ? key : absl::StrCat(prefix, ".", key);
      std::string p = Join(path, key);
      if (absl::Status ks = CheckMetaKey(full); !ks.ok()) {
        Error(kv.first, p, std::string(ks.message()));
        continue;
      }
      if (kv.second.IsMap()) {
        Meta(kv.second, p, full);
      } else if (kv.second.IsSequence()) {
        Error(kv.second, p, "meta values must be strings, numbers, booleans or maps, not a list");
      } else {
        if (m_.meta.count(full)) {
          Error(kv.first, p, absl::StrCat("meta key \"", full, "\" is given twice"));
          continue;
        }
        if (m_.meta.size() >= static_cast<size_t>(Limits::kMaxManifestMeta)) {
          Error(kv.first, p, absl::StrCat("more than ", Limits::kMaxManifestMeta,
                                          " meta defaults; keep large sets in the store (`mariposa meta import`)"));
          return;
        }
        m_.meta[full] = kv.second.IsNull() ? "" : kv.second.Scalar();
      }
    }
  }

  void ParseRoot(const YamlNode& root) {
    if (!root.IsMap()) {
      Error(root, "", absl::StrCat("a manifest must be a map with project:, services: …; got ", KindName(root)));
      return;
    }
    const YamlNode* project_node = nullptr;
    const YamlNode* groups_node = nullptr;
    std::string groups_path;
    Fields f;
    f["project"] = [&](const YamlNode& n, const std::string& p) {
      project_node = &n;
      String(n, p, &m_.project);
    };
    f["description"] = [&](const YamlNode& n, const std::string& p) { String(n, p, &m_.description); };
    f["meta"] = [&](const YamlNode& n, const std::string& p) { Meta(n, p, ""); };
    f["networks"] = [&](const YamlNode& n, const std::string& p) { Networks(n, p, &m_.networks); };
    f["deployment_groups"] = [&](const YamlNode& n, const std::string& p) {
      groups_node = &n;
      groups_path = p;
    };
    const YamlNode* firewall_node = nullptr;
    f["firewall"] = [&](const YamlNode& n, const std::string& p) {
      firewall_node = &n;
      Firewall(n, p);
    };
    f["fabric"] = [&](const YamlNode& n, const std::string& p) { Fabric(n, p); };
    f["volumes"] = [&](const YamlNode& n, const std::string& p) { Volumes(n, p); };
    f["cns"] = [&](const YamlNode& n, const std::string& p) { ProjectCns(n, p); };
    f["services"] = [&](const YamlNode& n, const std::string& p) { Services(n, p); };
    ParseMap(root, "", f, {}, &m_.reserved);
    // The project's networks are the default of every service naming none.
    for (auto& kv : m_.services) {
      if (kv.second.networks.empty() && kv.second.compute_type != "agent") kv.second.networks = m_.networks;
    }

    ProjectName(project_node);
    if (groups_node != nullptr) Groups(*groups_node, groups_path);
    if (firewall_node != nullptr) FirewallServices();
    VolumeChecks();
    DefaultCnsNames();
  }

  // services: NAME -> definition.
  void Services(const YamlNode& n, const std::string& p) {
    if (n.IsNull()) return;
    if (!n.IsMap()) {
      Error(n, p, absl::StrCat("must be a map of service name to definition, not ", KindName(n)));
      return;
    }
    if (n.size() > static_cast<size_t>(Limits::kMaxServices)) {
      Error(n, p, absl::StrCat(n.size(), " services; a project may have at most ", Limits::kMaxServices,
                               ": split it into several projects"));
      return;
    }
    for (const auto& kv : n) {
      if (!Wanted()) return;
      std::string name;
      if (!Scalar(kv.first, p, &name)) continue;
      std::string sp = Join(p, name);
      if (!IsDnsLabel(name)) {
        Error(kv.first, sp, absl::StrCat("service name \"", name,
                                          "\" is not a DNS label (lower-case letters, digits and '-', at most 63)"));
        continue;
      }
      if (m_.services.count(name)) {
        Error(kv.first, sp, "duplicate service");
        continue;
      }
      ServiceSpec svc;
      svc.name = name;
      ParseService(kv.second, sp, &svc);
      m_.services[name] = std::move(svc);
    }
  }

  // The project's name: the manifest's `project:`, or -j's, which must not
  // retarget a manifest written for another project.
  void ProjectName(const YamlNode* project_node) {
    if (!opts_.project_override.empty() && project_node != nullptr && m_.project != opts_.project_override) {
      // An exported MARIPOSA_PROJECT must not retarget a manifest written
      // for another project (and plan to delete that project's services).
      Error(*project_node, "project",
            absl::StrCat("the manifest is for project \"", m_.project, "\" but -j (or $MARIPOSA_PROJECT) names \"",
                         opts_.project_override, "\"; fix `project:` or drop -j / unset MARIPOSA_PROJECT"));
    } else if (!opts_.project_override.empty()) {
      m_.project = opts_.project_override;
      if (!IsDnsLabel(m_.project)) {
        Error(1, 1, "project", absl::StrCat("project name \"", m_.project, "\" (from -j) is not a DNS label"));
      }
    } else if (project_node == nullptr) {
      Error(1, 1, "project", "missing: add `project: NAME` or pass -j NAME");
    } else if (!IsDnsLabel(m_.project)) {
      Error(*project_node, "project", absl::StrCat("project name \"", m_.project,
                                                   "\" is not a DNS label (lower-case letters, digits and '-', at most 63)"));
    }
  }

  // cns: (the project's) gives each service without its own a name; a
  // default name longer than a DNS label is warned of.
  void DefaultCnsNames() {
    for (auto& [name, svc] : m_.services) {
      if (svc.cns || svc.compute_type == "agent" || svc.compute_type == "core" || !m_.cns) continue;
      svc.cns = m_.cns->empty() ? std::vector<std::string>{} : std::vector<std::string>{*m_.cns + "-" + name};
      if (!svc.cns->empty()) {
        if (std::string why = CnsNameProblem(svc.cns->front()); !why.empty()) {
          Error(1, 1, "cns", absl::StrCat("service ", name, "'s default name: ", why, "; shorten cns: or name the "
                                          "service's own with its cns:"));
        }
      }
    }
    for (const auto& [name, svc] : m_.services) {
      std::string cns = absl::StrCat(m_.project, "-", name);
      if (!svc.cns && svc.compute_type != "agent" && svc.compute_type != "core" && cns.size() > 63) {
        warnings_.push_back(ManifestDiagnostic{
            opts_.filename, 1, 1, absl::StrCat("services.", name, ".cns"),
            absl::StrCat("the default CNS name \"", cns.substr(0, 70), "…\" is longer than a DNS label (63): its "
                         "instances get no CNS name; name one with cns:")});
      }
    }
  }

  // firewall: NAME -> {from, to, protocol, ports, action, enabled,
  // description} (docs/manifest.md "Firewall rules").
  void Firewall(const YamlNode& n, const std::string& path) {
    Named(n, path, "rule", [&](const std::string& name) { return m_.firewall.count(name) > 0; },
          [&](const std::string& name, const YamlNode& key, const YamlNode& def, const std::string& rp) {
            if (m_.firewall.size() >= static_cast<size_t>(Limits::kMaxServices)) {
              Error(key, rp, absl::StrCat("more than ", Limits::kMaxServices, " firewall rules"));
              return false;
            }
            FirewallRule(name, def, rp);
            return true;
          });
  }

  void FirewallRule(const std::string& name, const YamlNode& def, const std::string& rp) {
    FirewallRuleSpec r;
    const YamlNode* ports_node = nullptr;
    Fields f;
    f["from"] = [&](const YamlNode& v, const std::string& p) {
      sides_[name].first = &v;
      Endpoints(v, p, &r.from);
    };
    f["to"] = [&](const YamlNode& v, const std::string& p) {
      sides_[name].second = &v;
      Endpoints(v, p, &r.to);
    };
    f["protocol"] = [&](const YamlNode& v, const std::string& p) {
      OneOf(v, p, &r.protocol, {"tcp", "udp", "icmp", "icmp6"});
    };
    f["ports"] = [&](const YamlNode& v, const std::string& p) {
      ports_node = &v;
      if (v.IsScalar() && absl::AsciiStrToLower(v.Scalar()) == "all") return;
      StringList(v, p, &r.ports);
    };
    f["action"] = [&](const YamlNode& v, const std::string& p) { OneOf(v, p, &r.action, {"allow", "block"}); };
    f["enabled"] = [&](const YamlNode& v, const std::string& p) { Bool(v, p, &r.enabled); };
    f["priority"] = [&](const YamlNode& v, const std::string& p) { Int(v, p, &r.priority, 0, 100); };
    f["log"] = [&](const YamlNode& v, const std::string& p) { Bool(v, p, &r.log); };
    f["description"] = [&](const YamlNode& v, const std::string& p) { String(v, p, &r.description); };
    int64_t errors = error_count_;
    ParseMap(def, rp, f);
    if (error_count_ != errors) return;
    if (r.from.empty() || r.to.empty()) {
      Error(def, rp, absl::StrCat("a rule needs both from: and to: (", r.from.empty() ? "from" : "to",
                                  " is missing); each is a service of this project, any, ip ADDRESS or "
                                  "subnet CIDR, or a list of them"));
      return;
    }
    for (size_t i = 0; i < r.ports.size(); ++i) {
      if (std::string why = CheckFirewallPort(r.protocol, r.ports[i]); !why.empty()) {
        Error(*ports_node, absl::StrCat(rp, ".ports[", i, "]"), why);
      }
    }
    m_.firewall[name] = std::move(r);
  }

  // fabric: {vlan, networks: NAME -> {subnet, gateway, provision_start,
  // provision_end, resolvers, routes, internet_nat, description}}
  // (docs/manifest.md "Fabric networks").
  void Fabric(const YamlNode& n, const std::string& path) {
    if (n.IsNull()) return;
    FabricSpec fabric;
    const YamlNode* vlan_node = nullptr;
    Fields f;
    f["vlan"] = [&](const YamlNode& v, const std::string& p) {
      vlan_node = &v;
      Int(v, p, &fabric.vlan, 2, 4094);
    };
    f["networks"] = [&](const YamlNode& v, const std::string& p) {
      Named(v, p, "network", [&](const std::string& name) { return fabric.networks.count(name) > 0; },
            [&](const std::string& name, const YamlNode&, const YamlNode& def, const std::string& np) {
              FabricNetwork(def, np, &fabric.networks[name]);
              return true;
            });
    };
    ParseMap(n, path, f);
    if (vlan_node == nullptr) Error(n, path, "vlan: is required: the account's VLAN id (2..4094) the networks go on");
    if (fabric.networks.empty()) Error(n, path, "networks: names none; a fabric holds at least one network");
    for (auto a = fabric.networks.begin(); a != fabric.networks.end(); ++a) {
      for (auto b = std::next(a); b != fabric.networks.end(); ++b) {
        if (SubnetsOverlap(a->second.subnet, b->second.subnet)) {
          Error(n, Join(path, "networks." + b->first + ".subnet"),
                absl::StrCat(b->second.subnet, " overlaps network ", a->first, "'s ", a->second.subnet,
                             ": the networks of one VLAN need subnets of their own"));
        }
      }
    }
    m_.fabric = std::move(fabric);
  }

  void FabricNetwork(const YamlNode& def, const std::string& np, FabricNetworkSpec* net) {
    Fields f;
    for (auto [key, out] : {std::pair{"subnet", &net->subnet}, {"gateway", &net->gateway},
                            {"provision_start", &net->provision_start}, {"provision_end", &net->provision_end},
                            {"description", &net->description}}) {
      f[key] = [this, out = out](const YamlNode& v, const std::string& p) { String(v, p, out); };
    }
    f["resolvers"] = [&](const YamlNode& v, const std::string& p) { StringList(v, p, &net->resolvers); };
    f["routes"] = [&](const YamlNode& v, const std::string& p) { StringMap(v, p, &net->routes, false); };
    f["internet_nat"] = [&](const YamlNode& v, const std::string& p) { Bool(v, p, &net->internet_nat); };
    int64_t errors = error_count_;
    ParseMap(def, np, f);
    if (error_count_ != errors) return;
    if (net->subnet.empty()) {
      Error(def, np, "subnet: is required (e.g. subnet: 10.0.1.0/24)");
    } else if (std::string why = CheckFabricNetwork(*net); !why.empty()) {
      size_t colon = why.find(": ");
      Error(def, Join(np, why.substr(0, colon)), why.substr(colon + 2));
    }
  }

  // One side of a rule: one endpoint or a list of them.
  void Endpoints(const YamlNode& v, const std::string& p, std::vector<FirewallEndpoint>* out) {
    std::vector<std::string> texts;
    StringList(v, p, &texts);
    for (size_t i = 0; i < texts.size(); ++i) {
      std::string ip = v.IsSequence() ? absl::StrCat(p, "[", i, "]") : p;
      std::string why;
      auto e = ParseFirewallEndpoint(texts[i], &why);
      if (!e) {
        Error(v.IsSequence() ? v[i] : v, ip, why);
      } else if (std::find(out->begin(), out->end(), *e) != out->end()) {
        Error(v.IsSequence() ? v[i] : v, ip, absl::StrCat("\"", texts[i], "\" is listed twice"));
      } else {
        out->push_back(*e);
      }
    }
  }

  // The services a rule names are the manifest's own instances: not agents
  // or core zones (their firewall is Triton's business), and each rule names
  // at least one (a rule of `any` to `any` would reach the account's every
  // instance).
  void FirewallServices() {
    for (const auto& [name, r] : m_.firewall) {
      std::string rp = Join("firewall", name);
      bool names_one = false;
      for (const auto* side : {&r.from, &r.to}) {
        const YamlNode* at = side == &r.from ? sides_[name].first : sides_[name].second;
        for (const auto& e : *side) {
          if (e.kind != FirewallEndpoint::Kind::kService) continue;
          names_one = true;
          auto s = m_.services.find(e.value);
          std::string sp = Join(rp, side == &r.from ? "from" : "to");
          if (s == m_.services.end()) {
            Error(*at, sp, absl::StrCat("\"", e.value, "\" is not a service of this manifest, nor any, ip ADDRESS or "
                                      "subnet CIDR"));
          } else if (s->second.compute_type == "agent" || s->second.compute_type == "core") {
            Error(*at, sp, absl::StrCat("service \"", e.value, "\" is ", s->second.compute_type == "agent" ? "an agent" : "a core service",
                                      ": firewall rules name the project's own instances only"));
          }
        }
      }
      if (!names_one) {
        Error(*sides_[name].first, rp, "the rule names none of this project's services: it would reach every instance of the account; "
                     "name a service in from: or to:");
      }
    }
  }

  // volumes: NAME -> {size, network, deletion_policy, remove}
  // (docs/manifest.md "Volumes").
  void Volumes(const YamlNode& n, const std::string& path) {
    Named(n, path, "volume", [&](const std::string& name) { return m_.volumes.count(name) > 0; },
          [&](const std::string& name, const YamlNode&, const YamlNode& def, const std::string& vp) {
            VolumeSpec& v = m_.volumes[name];
            volume_nodes_[name] = &def;
            Fields f;
            f["size"] = [&](const YamlNode& x, const std::string& p) {
              std::optional<int64_t> bytes;
              Size(x, p, &bytes);
              if (bytes && (*bytes <= 0 || *bytes % (int64_t{1} << 30) != 0)) {
                Error(x, p, "VOLAPI makes volumes of whole GiB (write e.g. 10g, 20g, 100g)");
              } else if (bytes) {
                v.size_mib = *bytes >> 20;
              }
            };
            f["network"] = [&](const YamlNode& x, const std::string& p) { String(x, p, &v.network); };
            f["deletion_policy"] = [&](const YamlNode& x, const std::string& p) {
              OneOf(x, p, &v.deletion_policy, {"retain", "delete"});
            };
            f["remove"] = [&](const YamlNode& x, const std::string& p) { Bool(x, p, &v.remove); };
            if (!def.IsNull()) ParseMap(def, vp, f);  // `data:` alone: every default
            return true;
          });
  }

  // A service's volumes: a list of {name, mountpoint, mode} or
  // "NAME:MOUNTPOINT[:ro]".
  void Mounts(const YamlNode& n, const std::string& path, ServiceSpec* s) {
    if (n.IsNull()) return;
    if (!n.IsSequence()) {
      Error(n, path, absl::StrCat("must be a list of {name, mountpoint, mode} or NAME:MOUNTPOINT, not ", KindName(n)));
      return;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      const YamlNode& item = n[i];
      std::string ip = absl::StrCat(path, "[", i, "]");
      VolumeMount m;
      if (item.IsScalar()) {
        std::string why;
        auto parsed = ParseVolumeMount(item.Scalar(), &why);
        if (!parsed) {
          Error(item, ip, why);
          continue;
        }
        m = *parsed;
      } else {
        Fields f;
        f["name"] = [&](const YamlNode& v, const std::string& p) { String(v, p, &m.volume); };
        f["mountpoint"] = [&](const YamlNode& v, const std::string& p) { String(v, p, &m.mountpoint); };
        f["mode"] = [&](const YamlNode& v, const std::string& p) { OneOf(v, p, &m.mode, {"rw", "ro"}); };
        int64_t errors = error_count_;
        ParseMap(item, ip, f);
        if (error_count_ != errors) continue;
      }
      if (!IsDnsLabel(m.volume)) {
        Error(item, ip, absl::StrCat("volume name \"", m.volume, "\" is not a DNS label (a name under the manifest's volumes:)"));
      } else if (m.mountpoint.size() < 2 || m.mountpoint[0] != '/' || m.mountpoint.find_first_of(" \t:") != std::string::npos) {
        Error(item, ip, absl::StrCat("mountpoint \"", m.mountpoint, "\" must be an absolute path other than /, without spaces"));
      } else if (std::any_of(s->volumes.begin(), s->volumes.end(),
                             [&](const VolumeMount& o) { return o.mountpoint == m.mountpoint; })) {
        Error(item, ip, absl::StrCat("mountpoint ", m.mountpoint, " is used twice"));
      } else {
        s->volumes.push_back(m);
      }
    }
  }

  // Ties volumes to the fabric and the services that mount them.
  void VolumeChecks() {
    for (auto& [name, v] : m_.volumes) {
      std::string vp = Join("volumes", name);
      const YamlNode& at = *volume_nodes_[name];
      bool fabric_has = m_.fabric && m_.fabric->networks.count(v.network);
      // Left out with no fabric of one network: the account's default
      // fabric network, found in NAPI as CloudAPI does (catalog.h).
      if (v.network.empty() && m_.fabric && m_.fabric->networks.size() == 1) {
        v.network = m_.fabric->networks.begin()->first;
      } else if (!v.network.empty() && !fabric_has && !IsUuid(v.network)) {
        Error(at, Join(vp, "network"), absl::StrCat("\"", v.network, "\" is neither a network of the manifest's "
                                                    "fabric nor a uuid; volumes are served on fabric networks"));
      }
    }
    for (const auto& [sname, s] : m_.services) {
      for (size_t i = 0; i < s.volumes.size(); ++i) {
        const VolumeMount& m = s.volumes[i];
        const YamlNode& list = *mounts_[sname];
        const YamlNode& at = list.size() == s.volumes.size() ? list[i] : list;
        std::string ip = absl::StrCat("services.", sname, ".volumes[", i, "]");
        auto v = m_.volumes.find(m.volume);
        if (s.compute_type == "agent" || s.compute_type == "core") {
          Error(at, ip, "agents and core zones mount no volumes of the project; remove volumes:");
        } else if (v == m_.volumes.end()) {
          Error(at, ip, absl::StrCat("volume \"", m.volume, "\" is not declared in the manifest's volumes:"));
        } else if (v->second.remove) {
          Error(at, ip, absl::StrCat("volume ", m.volume, " has remove: true (it is to be deleted); stop mounting "
                                     "it, or drop remove: to keep it"));
        } else if (m_.fabric && m_.fabric->networks.count(v->second.network) &&
                   std::find(s.networks.begin(), s.networks.end(), v->second.network) == s.networks.end()) {
          Error(at, ip, absl::StrCat("service ", sname, " is not on network ", v->second.network, ", which volume ",
                                     m.volume, " is served on; add ", v->second.network, " to its networks"));
        }
      }
    }
  }

  std::map<std::string, const YamlNode*> volume_nodes_;  // volume -> its definition
  std::map<std::string, const YamlNode*> mounts_;        // service -> its volumes: node

  // Each firewall rule's from: and to: nodes (FirewallServices locates its
  // errors there).
  std::map<std::string, std::pair<const YamlNode*, const YamlNode*>> sides_;

  void Groups(const YamlNode& n, const std::string& path) {
    if (n.IsNull()) return;
    if (!n.IsMap()) {
      Error(n, path, absl::StrCat("must be a map of group name to a list of services, not ", KindName(n)));
      return;
    }
    std::map<std::string, std::string> member_of;
    for (const auto& kv : n) {
      std::string name;
      if (!Scalar(kv.first, path, &name)) continue;
      std::string gp = Join(path, name);
      if (!IsDnsLabel(name)) {
        Error(kv.first, gp, absl::StrCat("group name \"", name, "\" is not a DNS label"));
        continue;
      }
      if (m_.deployment_groups.count(name)) {
        Error(kv.first, gp, "duplicate group");
        continue;
      }
      if (m_.services.count(name)) {
        Error(kv.first, gp, absl::StrCat("\"", name, "\" is already a service name; groups and services share a namespace"));
        continue;
      }
      std::vector<std::string> members;
      StringList(kv.second, gp, &members);
      std::vector<std::string> ok;
      for (size_t i = 0; i < members.size(); ++i) {
        const std::string& s = members[i];
        const YamlNode& at = kv.second.IsSequence() ? kv.second[i] : kv.second;
        std::string ip = absl::StrCat(gp, "[", i, "]");
        if (!m_.services.count(s)) {
          Error(at, ip, absl::StrCat("no service named \"", s, "\" in this manifest"));
        } else if (member_of.count(s)) {
          Error(at, ip, absl::StrCat("service \"", s, "\" is already in group \"", member_of[s],
                                     "\"; a service belongs to at most one group"));
        } else if (std::find(ok.begin(), ok.end(), s) == ok.end()) {
          member_of[s] = name;
          ok.push_back(s);
        }
      }
      if (members.empty()) Error(kv.second, gp, "a deployment group needs at least one service");
      std::sort(ok.begin(), ok.end());
      m_.deployment_groups[name] = ok;
    }
  }

  // The nodes of a service's keys that its cross-checks (ServiceRules)
  // point at; null when not given.
  struct ServiceNodes {
    const YamlNode* image = nullptr;
    const YamlNode* count = nullptr;
    const YamlNode* strategy = nullptr;
    const YamlNode* servers = nullptr;
    const YamlNode* delegate = nullptr;
    const YamlNode* schedule = nullptr;
    const YamlNode* run = nullptr;
    const YamlNode* service_type = nullptr;
    const YamlNode* healthchecks = nullptr;
    const YamlNode* restart = nullptr;
    bool restart_given = false;
  };

  // A service: one small parser per key (its section below), then the
  // rules that tie keys together.
  void ParseService(const YamlNode& n, const std::string& path, ServiceSpec* s) {
    ServiceNodes at;
    Fields f;
    f["service_type"] = [&](const YamlNode& v, const std::string& p) {
      at.service_type = &v;
      ServiceType(v, p, s);
    };
    f["compute_type"] = [&](const YamlNode& v, const std::string& p) { ComputeType(v, p, s); };
    f["image"] = [&](const YamlNode& v, const std::string& p) {
      at.image = &v;
      String(v, p, &s->image);
      if (v.IsScalar() && (s->image.empty() || s->image.find_first_of(" \t") != std::string::npos)) {
        Error(v, p, "must be name[@version], an image uuid or a docker reference, without spaces");
      }
    };
    f["package"] = [&](const YamlNode& v, const std::string& p) { Package(v, p, "resources.package", s); };
    f["resources"] = [&](const YamlNode& v, const std::string& p) { Resources(v, p, s); };
    f["count"] = [&](const YamlNode& v, const std::string& p) {
      at.count = &v;
      Int(v, p, &s->count, 0, 100000);
    };
    f["tags"] = [&](const YamlNode& v, const std::string& p) { Tags(v, p, s); };
    f["placement"] = [&](const YamlNode& v, const std::string& p) { Placement(v, p, s); };
    f["networks"] = [&](const YamlNode& v, const std::string& p) { Networks(v, p, &s->networks); };
    f["ports"] = [&](const YamlNode& v, const std::string& p) { Ports(v, p, s); };
    f["environment"] = [&](const YamlNode& v, const std::string& p) { StringMap(v, p, &s->environment, true); };
    f["mdata"] = [&](const YamlNode& v, const std::string& p) { StringMap(v, p, &s->mdata, true); };
    f["command"] = [&](const YamlNode& v, const std::string& p) { Command(v, p, s); };
    f["healthchecks"] = [&](const YamlNode& v, const std::string& p) {
      at.healthchecks = &v;
      HealthChecks(v, p, s);
    };
    f["start"] = [&](const YamlNode& v, const std::string& p) { StartKeys(v, p, s); };
    f["restart"] = [&](const YamlNode& v, const std::string& p) {
      at.restart = &v;
      at.restart_given |= RestartKeys(v, p, s);
    };
    f["stop"] = [&](const YamlNode& v, const std::string& p) { StopKeys(v, p, s); };
    f["update"] = [&](const YamlNode& v, const std::string& p) { at.strategy = UpdateKeys(v, p, s); };
    f["delegate_dataset"] = [&](const YamlNode& v, const std::string& p) {
      at.delegate = &v;
      Bool(v, p, &s->delegate_dataset);
    };
    f["servers"] = [&](const YamlNode& v, const std::string& p) {
      at.servers = &v;
      Servers(v, p, s);
    };
    f["cns"] = [&](const YamlNode& v, const std::string& p) { Cns(v, p, s); };
    f["schedule"] = [&](const YamlNode& v, const std::string& p) {
      at.schedule = &v;
      Schedule(v, p, s);
    };
    f["run"] = [&](const YamlNode& v, const std::string& p) {
      at.run = &v;
      RunKeys(v, p, s);
    };
    f["volumes"] = [&](const YamlNode& v, const std::string& p) {
      mounts_[s->name] = &v;
      Mounts(v, p, s);
    };
    ParseMap(n, path, f, {{"scale", "count"}, {"labels", "tags"}, {"affinity", "placement"}}, &s->reserved);
    if (n.IsMap()) ServiceRules(n, path, at, s);
    if (n.IsMap()) RunRules(n, path, at, s);
  }

  void ServiceType(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    std::string t;
    if (!Scalar(v, p, &t)) return;
    if (t != "continuous" && t != "scheduled" && t != "event") {
      Error(v, p, absl::StrCat("\"", t, "\" is not one of: continuous, scheduled, event"));
    } else {
      s->service_type = t;
    }
  }

  // schedule: "CRON", or {cron, time_zone}.
  void Schedule(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    const YamlNode* cron_node = &v;
    if (v.IsMap()) {
      Fields f;
      f["cron"] = [&](const YamlNode& x, const std::string& xp) {
        cron_node = &x;
        String(x, xp, &s->schedule);
      };
      f["time_zone"] = [&](const YamlNode& x, const std::string& xp) {
        String(x, xp, &s->time_zone);
        absl::TimeZone tz;
        if (x.IsScalar() && !absl::LoadTimeZone(s->time_zone, &tz)) {
          Error(x, xp, absl::StrCat("\"", s->time_zone, "\" is not a time zone of the tz database (e.g. UTC, "
                                    "Europe/Berlin, America/New_York)"));
        }
      };
      ParseMap(v, p, f);
      if (s->schedule.empty()) Error(v, p, "cron: is required (e.g. cron: \"0 3 * * *\")");
    } else {
      String(v, p, &s->schedule);
    }
    if (s->schedule.empty()) return;
    if (auto spec = ParseCron(s->schedule); !spec.ok()) Error(*cron_node, p, std::string(spec.status().message()));
  }

  // run: {concurrency, starting_deadline, deadline, history: {succeeded, failed}}.
  void RunKeys(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    Fields f;
    f["concurrency"] = [&](const YamlNode& x, const std::string& xp) {
      OneOf(x, xp, &s->run_concurrency, {"forbid", "replace", "allow"});
    };
    f["starting_deadline"] = [&](const YamlNode& x, const std::string& xp) {
      Duration(x, xp, &s->run_starting_deadline);
    };
    f["deadline"] = [&](const YamlNode& x, const std::string& xp) { Duration(x, xp, &s->run_deadline); };
    f["history"] = [&](const YamlNode& x, const std::string& xp) {
      Fields h;
      h["succeeded"] = [&](const YamlNode& y, const std::string& yp) { Int(y, yp, &s->run_keep_succeeded, 0, 100); };
      h["failed"] = [&](const YamlNode& y, const std::string& yp) { Int(y, yp, &s->run_keep_failed, 0, 100); };
      ParseMap(x, xp, h);
    };
    ParseMap(v, p, f);
  }

  // What runs to completion takes and what it does not.
  void RunRules(const YamlNode& n, const std::string& path, const ServiceNodes& at, const ServiceSpec* s) {
    const bool runs = RunsToCompletion(*s);
    if (!runs) {
      for (auto [node, key] : {std::pair{at.schedule, "schedule"}, {at.run, "run"}}) {
        if (node != nullptr) {
          Error(*node, Join(path, key), absl::StrCat(key, ": is for service_type scheduled or event; this service is ",
                                                     s->service_type));
        }
      }
      return;
    }
    if (s->compute_type == "agent" || s->compute_type == "core") {
      Error(*at.service_type, Join(path, "service_type"),
            absl::StrCat("agents and core zones run continuously; ", s->service_type, " is for the project's own jobs"));
    }
    if (s->service_type == "scheduled" && s->schedule.empty() && at.schedule == nullptr) {
      Error(n, Join(path, "schedule"), "missing: a scheduled service needs schedule: (e.g. schedule: \"0 3 * * *\", "
                                       "or {cron: \"0 3 * * *\", time_zone: Europe/Berlin})");
    }
    if (s->service_type == "event" && at.schedule != nullptr) {
      Error(*at.schedule, Join(path, "schedule"), "an event service runs on `mariposa run`, not on a schedule; use "
                                                 "service_type: scheduled, or remove schedule:");
    }
    if (at.healthchecks != nullptr) {
      Error(*at.healthchecks, Join(path, "healthchecks"),
            "a run's instances end by design: health checks are for continuous services; remove healthchecks:");
    }
    if (at.restart != nullptr) {
      Error(*at.restart, Join(path, "restart"),
            "a run's instances are not restarted: a run ends when they do (run.deadline stops a run that hangs); "
            "remove restart:");
    }
  }

  void ComputeType(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    std::string t;
    if (!Scalar(v, p, &t)) return;
    static const std::map<std::string, std::pair<std::string, std::string>> kTypes = {
        {"docker", {"docker", ""}},         {"infrastructure", {"infrastructure", ""}},
        {"lx", {"infrastructure", "lx"}},   {"smartmachine", {"infrastructure", "joyent"}},
        {"kvm", {"kvm", "kvm"}},            {"bhyve", {"kvm", "bhyve"}},
        {"vm", {"kvm", ""}},                {"hvm", {"kvm", ""}},
        {"agent", {"agent", ""}},           {"core", {"core", ""}}};
    auto ty = kTypes.find(t);
    if (ty == kTypes.end()) {
      Error(v, p, absl::StrCat("\"", t, "\" is not one of: docker, infrastructure (lx, smartmachine), kvm (bhyve, vm, hvm), agent, core"));
      return;
    }
    s->compute_type = ty->second.first;
    s->brand = ty->second.second;
  }

  // package: or resources.package: (`other` names the one not given here).
  void Package(const YamlNode& v, const std::string& p, const std::string& other, ServiceSpec* s) {
    if (!s->package.empty()) {
      Error(v, p, absl::StrCat("package is given twice (here and in ", other, "); keep one"));
      return;
    }
    String(v, p, &s->package);
  }

  void Resources(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    Fields rf;
    rf["package"] = [&](const YamlNode& x, const std::string& xp) { Package(x, xp, "package:", s); };
    rf["memory"] = [&](const YamlNode& x, const std::string& xp) { Size(x, xp, &s->memory_bytes); };
    rf["disk"] = [&](const YamlNode& x, const std::string& xp) { Size(x, xp, &s->disk_bytes); };
    rf["cpu"] = [&](const YamlNode& x, const std::string& xp) {
      std::string t;
      if (!Scalar(x, xp, &t)) return;
      double d;
      if (!absl::SimpleAtod(t, &d) || !std::isfinite(d) || d <= 0 || d > 1024) {
        Error(x, xp, absl::StrCat("\"", t, "\" is not a cpu count between 0 and 1024"));
        return;
      }
      s->cpu = d;
    };
    ParseMap(v, p, rf);
  }

  void Tags(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    StringMap(v, p, &s->tags, true);
    for (const auto& kv : s->tags) {
      if (absl::StartsWith(kv.first, "mariposa.")) {
        Error(v, Join(p, kv.first), "tags starting with \"mariposa.\" are reserved for ownership tags");
      }
    }
  }

  // KEY==VALUE, KEY!=VALUE (hard), KEY==~VALUE, KEY!=~VALUE (soft); a value
  // /between slashes/ is a regular expression.
  void Placement(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    std::vector<std::string> rules;
    StringList(v, p, &rules);
    static const std::regex kRule(R"(^([A-Za-z0-9_.\-]+)(==|!=)(~?)(.+)$)");
    for (size_t i = 0; i < rules.size(); ++i) {
      const YamlNode& at = v.IsSequence() ? v[i] : v;
      std::string ip = absl::StrCat(p, "[", i, "]");
      std::smatch mt;
      std::string r(absl::StripAsciiWhitespace(rules[i]));
      if (!std::regex_match(r, mt, kRule)) {
        Error(at, ip, absl::StrCat("\"", rules[i], "\" is not a placement rule; write KEY==VALUE, KEY!=VALUE (hard) or KEY==~VALUE, KEY!=~VALUE (soft)"));
        continue;
      }
      PlacementRule rule{mt[1], mt[2] == "==", mt[3] == "~", std::string(absl::StripAsciiWhitespace(std::string(mt[4])))};
      if (rule.value.size() > 1 && rule.value.front() == '/' && rule.value.back() == '/') {
        try {
          std::regex re(rule.value.substr(1, rule.value.size() - 2));
        } catch (const std::regex_error&) {
          Error(at, ip, absl::StrCat("\"", rule.value, "\" is not a valid regular expression"));
          continue;
        }
      }
      Template(at, ip, rule.value);
      s->placement.push_back(rule);
    }
  }

  void Ports(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    if (!v.IsSequence()) {
      Error(v, p, absl::StrCat("must be a list of port numbers, not ", KindName(v)));
      return;
    }
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t port = 0;
      int64_t before = error_count_;
      Int(v[i], absl::StrCat(p, "[", i, "]"), &port, 1, 65535);
      if (error_count_ != before) continue;
      if (std::find(s->ports.begin(), s->ports.end(), port) != s->ports.end()) {
        Error(v[i], absl::StrCat(p, "[", i, "]"), absl::StrCat("port ", port, " is listed twice"));
        continue;
      }
      s->ports.push_back(static_cast<int>(port));
    }
    std::sort(s->ports.begin(), s->ports.end());
  }

  // A string, or a list joined with spaces.
  void Command(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    if (v.IsSequence()) {
      std::vector<std::string> parts;
      StringList(v, p, &parts);
      s->command = absl::StrJoin(parts, " ");
      Template(v, p, s->command);
    } else {
      String(v, p, &s->command, true);
    }
  }

  void HealthChecks(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    Named(v, p, "check", [&](const std::string& name) { return s->healthchecks.count(name) > 0; },
          [&](const std::string& name, const YamlNode&, const YamlNode& def, const std::string& cp) {
            HealthCheckSpec hc;
            hc.name = name;
            Check(def, cp, &hc);
            s->healthchecks[name] = hc;
            return true;
          });
  }

  // Each entry NAME -> definition of map `n` whose name is a DNS label not
  // taken yet (`taken`), given to `each` with its path; `what` names the
  // entries in errors ("check", "rule"). `each` returns false to stop.
  void Named(const YamlNode& n, const std::string& path, const std::string& what,
             const std::function<bool(const std::string&)>& taken,
             const std::function<bool(const std::string&, const YamlNode&, const YamlNode&, const std::string&)>& each) {
    if (n.IsNull()) return;
    if (!n.IsMap()) {
      Error(n, path, absl::StrCat("must be a map of ", what, " name to ", what, ", not ", KindName(n)));
      return;
    }
    for (const auto& kv : n) {
      std::string name;
      if (!Scalar(kv.first, path, &name)) continue;
      std::string np = Join(path, name);
      if (!IsDnsLabel(name)) {
        Error(kv.first, np, absl::StrCat(what, " name \"", name, "\" is not a DNS label"));
      } else if (taken(name)) {
        Error(kv.first, np, absl::StrCat("duplicate ", what));
      } else if (!each(name, kv.first, kv.second, np)) {
        return;
      }
    }
  }

  void StartKeys(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    Fields sf;
    sf["parallelism"] = [&](const YamlNode& x, const std::string& xp) { Int(x, xp, &s->start_parallelism, 1, 10000); };
    sf["window"] = [&](const YamlNode& x, const std::string& xp) { Duration(x, xp, &s->start_window, false); };
    ParseMap(v, p, sf);
  }

  // True when restart.condition was given.
  bool RestartKeys(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    bool given = false;
    Fields rf;
    rf["condition"] = [&](const YamlNode& x, const std::string& xp) {
      given = true;
      RestartCondition(x, xp, s);
    };
    rf["max_attempts"] = [&](const YamlNode& x, const std::string& xp) { Int(x, xp, &s->restart_max_attempts, 0, 1000); };
    rf["window"] = [&](const YamlNode& x, const std::string& xp) { Duration(x, xp, &s->restart_window); };
    ParseMap(v, p, rf);
    return given;
  }

  void RestartCondition(const YamlNode& x, const std::string& xp, ServiceSpec* s) {
    std::vector<std::string> c;
    StringList(x, xp, &c);
    static const std::set<std::string> kOk = {"on-failure", "on-cn-restart", "always", "never"};
    std::vector<std::string> good;
    for (const auto& cond : c) {
      if (!kOk.count(cond)) {
        Error(x, xp, absl::StrCat("\"", cond, "\" is not one of: on-failure, on-cn-restart, always, never"));
      } else if (std::find(good.begin(), good.end(), cond) == good.end()) {
        good.push_back(cond);
      }
    }
    if ((std::find(good.begin(), good.end(), "never") != good.end()) && good.size() > 1) {
      Error(x, xp, "\"never\" cannot be combined with other conditions");
    }
    std::sort(good.begin(), good.end());
    s->restart_condition = good;
  }

  void StopKeys(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    Fields sf;
    sf["timeout"] = [&](const YamlNode& x, const std::string& xp) { Duration(x, xp, &s->stop_timeout); };
    sf["preserve_stopped"] = [&](const YamlNode& x, const std::string& xp) {
      OneOf(x, xp, &s->preserve_stopped, {"never", "on-failure", "always"});
    };
    ParseMap(v, p, sf);
  }

  // Returns the node of update.strategy when it is given.
  const YamlNode* UpdateKeys(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    const YamlNode* strategy = nullptr;
    Fields uf;
    uf["rolling"] = [&](const YamlNode& x, const std::string& xp) { Int(x, xp, &s->update_rolling, 1, 10000); };
    uf["canary"] = [&](const YamlNode& x, const std::string& xp) { Int(x, xp, &s->update_canary, 0, 100000); };
    uf["max_surge"] = [&](const YamlNode& x, const std::string& xp) { Int(x, xp, &s->update_max_surge, 0, 10000); };
    uf["auto_rollback"] = [&](const YamlNode& x, const std::string& xp) { Bool(x, xp, &s->update_auto_rollback); };
    uf["on_change"] = [&](const YamlNode& x, const std::string& xp) {
      OneOf(x, xp, &s->update_on_change, {"rollout", "manual"});
    };
    uf["on_meta_change"] = [&](const YamlNode& x, const std::string& xp) {
      OneOf(x, xp, &s->update_on_meta_change, {"rollout", "manual"});
    };
    uf["strategy"] = [&](const YamlNode& x, const std::string& xp) {
      strategy = &x;
      OneOf(x, xp, &s->update_strategy, {"replace", "reprovision"});
    };
    uf["min_healthy_time"] = [&](const YamlNode& x, const std::string& xp) {
      Duration(x, xp, &s->update_min_healthy_time, false);
    };
    uf["healthy_deadline"] = [&](const YamlNode& x, const std::string& xp) {
      Duration(x, xp, &s->update_healthy_deadline, false);
    };
    uf["progress_deadline"] = [&](const YamlNode& x, const std::string& xp) {
      Duration(x, xp, &s->update_progress_deadline, false);
    };
    ParseMap(v, p, uf);
    return strategy;
  }

  // cns: false (no names), a name, or a list of names; each a lowercase DNS
  // label with an optional :port.
  // The top-level cns: false (no default CNS names), or a DNS label that
  // replaces the project's name in the default names (<NAME>-<service>).
  void ProjectCns(const YamlNode& v, const std::string& p) {
    std::string t;
    if (!v.IsScalar()) {
      Error(v, p, absl::StrCat("must be false or a name (the default CNS names become NAME-SERVICE), not ",
                               KindName(v)));
      return;
    }
    t = v.Scalar();
    std::string lower = absl::AsciiStrToLower(t);
    if (lower == "false" || lower == "no" || lower == "off") {
      m_.cns = "";
    } else if (lower == "true" || lower == "yes" || lower == "on") {
      m_.cns.reset();  // the default: <project>-<service>
    } else if (!IsDnsLabel(t)) {
      Error(v, p, absl::StrCat("\"", t, "\" is not a DNS label (lower-case letters, digits and '-', at most 63)"));
    } else {
      m_.cns = t;
    }
  }

  void Cns(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    std::vector<std::string> names;
    if (v.IsScalar()) {
      std::string t = absl::AsciiStrToLower(v.Scalar());
      if (t == "false" || t == "no" || t == "off") {
        s->cns = names;
        return;
      }
      if (t == "true" || t == "yes" || t == "on") return;  // the default names
    }
    if (!v.IsScalar() && !v.IsSequence()) {
      Error(v, p, absl::StrCat("must be false, a CNS service name or a list of them, not ", KindName(v)));
      return;
    }
    StringList(v, p, &names);
    std::vector<std::string> good;
    for (size_t i = 0; i < names.size(); ++i) {
      const YamlNode& at = v.IsSequence() ? v[i] : v;
      std::string ip = v.IsSequence() ? absl::StrCat(p, "[", i, "]") : p;
      if (std::string why = CnsNameProblem(names[i]); !why.empty()) {
        Error(at, ip, why);
      } else if (std::find(good.begin(), good.end(), names[i]) != good.end()) {
        Error(at, ip, absl::StrCat("CNS name \"", names[i], "\" is listed twice"));
      } else {
        good.push_back(names[i]);
      }
    }
    if (good.empty() && names.empty()) Error(v, p, "an empty list names nothing; write `cns: false` for no names");
    std::sort(good.begin(), good.end());
    s->cns = good;
  }

  static std::string CnsNameProblem(const std::string& name) {
    std::string label = name, port;
    if (size_t colon = name.find(':'); colon != std::string::npos) {
      label = name.substr(0, colon);
      port = name.substr(colon + 1);
    }
    int n = 0;
    if (!port.empty() && (!absl::SimpleAtoi(port, &n) || n < 1 || n > 65535)) {
      return absl::StrCat("\"", name, "\": the port after ':' must be 1 to 65535");
    }
    bool ok = !label.empty() && label.size() <= 63 && label.front() != '-' && label.back() != '-';
    for (char c : label) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
    if (!ok) {
      return absl::StrCat("\"", name, "\" is not a CNS service name: write a DNS label (a-z, 0-9 and '-', at most 63, "
                          "not starting or ending with '-'), optionally NAME:PORT");
    }
    return "";
  }

  // Agents' servers: all, headnode, or a list; minus exclude.
  void Servers(const YamlNode& v, const std::string& p, ServiceSpec* s) {
    ServerSelector sel;
    Fields sf;
    sf["select"] = [&](const YamlNode& x, const std::string& xp) {
      if (x.IsScalar()) {
        OneOf(x, xp, &sel.select, {"all", "headnode"});
      } else {
        StringList(x, xp, &sel.servers);
        sel.select = "list";
        if (sel.servers.empty()) Error(x, xp, "an empty server list selects nothing; use all, headnode or a list");
        std::sort(sel.servers.begin(), sel.servers.end());
      }
    };
    sf["exclude"] = [&](const YamlNode& x, const std::string& xp) {
      StringList(x, xp, &sel.exclude);
      std::sort(sel.exclude.begin(), sel.exclude.end());
    };
    ParseMap(v, p, sf);
    s->servers = sel;
  }

  // The rules that tie a service's keys together: an image, agents and core
  // zones, reprovision's needs, the canary.
  void ServiceRules(const YamlNode& n, const std::string& path, const ServiceNodes& at, ServiceSpec* s) {
    if (at.image == nullptr) {
      Error(n, Join(path, "image"), "missing: every service needs an image (name[@version], uuid or docker reference)");
    }
    if (s->compute_type == "agent") {
      if (at.count != nullptr) {
        Error(*at.count, Join(path, "count"), "agents run one instance per selected server; use servers: instead of count");
      }
      s->count = 0;
      if (!s->servers) s->servers = ServerSelector{};
    } else if (s->servers) {
      Error(*at.servers, Join(path, "servers"), "servers: is only for compute_type: agent; use placement: for other services");
    }
    if (s->tags.count(kCnsServicesTag)) {
      Error(n, Join(path, absl::StrCat("tags.", kCnsServicesTag)),
            "CNS service names are set with the service's cns: key (the tag is Mariposa's); move them there");
    }
    if (s->cns && (s->compute_type == "agent" || s->compute_type == "core")) {
      Error(n, Join(path, "cns"), "agents and core zones get no CNS names from Mariposa; remove cns:");
    }
    if (s->compute_type == "core") CoreRules(path, at, s);
    if (at.strategy != nullptr && s->update_strategy == "reprovision") ReprovisionRules(path, *at.strategy, s);
    if (s->delegate_dataset && (s->compute_type == "kvm" || s->brand == "kvm" || s->brand == "bhyve")) {
      Error(n, Join(path, "delegate_dataset"), "a hardware VM (kvm, bhyve) cannot have a delegate dataset");
    }
    if (s->update_canary > 0 && s->compute_type != "agent" && s->update_canary > s->count && s->count > 0) {
      Warn(n, Join(path, "update.canary"), absl::StrCat("canary ", s->update_canary, " is larger than count ", s->count));
    }
  }

  // A core zone (imgapi0, vmapi0 ...) keeps its state on its delegate dataset
  // and is updated in place, as sdcadm updates it; a broken one is reported,
  // not replaced (sdcadm never does).
  void CoreRules(const std::string& path, const ServiceNodes& at, ServiceSpec* s) {
    if (at.delegate == nullptr) s->delegate_dataset = true;
    if (!at.restart_given) s->restart_condition = {"never"};
    if (at.strategy == nullptr) {
      s->update_strategy = "reprovision";
    } else if (s->update_strategy != "reprovision") {
      Error(*at.strategy, Join(path, "update.strategy"),
            "core zones are updated in place (VMAPI reprovision, their delegate dataset kept), as sdcadm does; "
            "use strategy: reprovision or leave it out");
    }
    if (at.delegate != nullptr && !s->delegate_dataset) {
      Error(*at.delegate, Join(path, "delegate_dataset"),
            "a core zone keeps its data on its delegate dataset; remove `delegate_dataset: false`");
    }
  }

  void ReprovisionRules(const std::string& path, const YamlNode& strategy, const ServiceSpec* s) {
    std::string sp = Join(path, "update.strategy");
    if (s->compute_type == "agent") {
      Error(strategy, sp, "agents are updated by CNAPI installs; remove update.strategy");
    } else if (s->compute_type == "kvm" || s->brand == "kvm" || s->brand == "bhyve") {
      Error(strategy, sp,
            "VMAPI cannot reprovision a hardware VM (kvm, bhyve); use strategy: replace and keep state off the VM");
    } else if (!s->delegate_dataset) {
      Error(strategy, sp,
            "reprovision rewrites the instance's root; only a delegate dataset survives it. Add "
            "`delegate_dataset: true` to the service (and keep the data under /zones/<uuid>/data), or use "
            "strategy: replace");
    }
  }

  void Check(const YamlNode& n, const std::string& path, HealthCheckSpec* c) {
    bool has_port = false, has_unhealthy = false;
    std::vector<std::pair<std::string, const YamlNode*>> http_only, tcp_only, https_only;
    Fields f;
    f["type"] = [&](const YamlNode& v, const std::string& p) { OneOf(v, p, &c->type, {"http", "https", "tcp"}); };
    f["port"] = [&](const YamlNode& v, const std::string& p) {
      has_port = true;
      Int(v, p, &c->port, 1, 65535);
    };
    f["network"] = [&](const YamlNode& v, const std::string& p) { String(v, p, &c->network); };
    f["path"] = [&](const YamlNode& v, const std::string& p) {
      http_only.emplace_back("path", &v);
      String(v, p, &c->path);
      if (v.IsScalar() && (c->path.empty() || c->path[0] != '/')) Error(v, p, "must start with /");
    };
    f["method"] = [&](const YamlNode& v, const std::string& p) {
      http_only.emplace_back("method", &v);
      OneOf(v, p, &c->method, {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"});
    };
    f["headers"] = [&](const YamlNode& v, const std::string& p) {
      http_only.emplace_back("headers", &v);
      StringMap(v, p, &c->headers, false);
    };
    f["expect_status"] = [&](const YamlNode& v, const std::string& p) {
      http_only.emplace_back("expect_status", &v);
      ExpectStatus(v, p, &c->expect_status);
    };
    auto regex_field = [&](std::string* out) {
      return [this, out](const YamlNode& v, const std::string& p) {
        String(v, p, out);
        try {
          std::regex re(*out);
        } catch (const std::regex_error&) {
          Error(v, p, absl::StrCat("\"", *out, "\" is not a valid regular expression"));
        }
      };
    };
    f["expect_body"] = [&, rf = regex_field(&c->expect_body)](const YamlNode& v, const std::string& p) {
      http_only.emplace_back("expect_body", &v);
      rf(v, p);
    };
    f["tls_skip_verify"] = [&](const YamlNode& v, const std::string& p) {
      https_only.emplace_back("tls_skip_verify", &v);
      Bool(v, p, &c->tls_skip_verify);
    };
    f["send"] = [&](const YamlNode& v, const std::string& p) {
      tcp_only.emplace_back("send", &v);
      String(v, p, &c->send);
    };
    f["expect"] = [&, rf = regex_field(&c->expect)](const YamlNode& v, const std::string& p) {
      tcp_only.emplace_back("expect", &v);
      rf(v, p);
    };
    f["interval"] = [&](const YamlNode& v, const std::string& p) { Duration(v, p, &c->interval); };
    f["unhealthy_interval"] = [&](const YamlNode& v, const std::string& p) {
      has_unhealthy = true;
      Duration(v, p, &c->unhealthy_interval);
    };
    f["timeout"] = [&](const YamlNode& v, const std::string& p) { Duration(v, p, &c->timeout); };
    f["retries"] = [&](const YamlNode& v, const std::string& p) { Int(v, p, &c->retries, 1, 100); };
    f["successes"] = [&](const YamlNode& v, const std::string& p) { Int(v, p, &c->successes, 1, 100); };
    ParseMap(n, path, f);
    if (!n.IsMap()) return;
    if (c->type.empty()) {
      if (n.Find("type") == nullptr) Error(n, Join(path, "type"), "missing: http, https or tcp");
      return;
    }
    if (!has_unhealthy) c->unhealthy_interval = c->interval;
    if (!has_port) {
      if (c->type == "tcp") Error(n, Join(path, "port"), "missing: a tcp check needs a port");
      c->port = c->type == "https" ? 443 : 80;
    }
    CheckFieldsFitType(path, c->type, http_only, tcp_only, https_only);
    if (c->expect_status.empty() && c->type != "tcp") c->expect_status = {{200, 399}};
    if (c->timeout > c->interval) {
      Error(n, Join(path, "timeout"), absl::StrCat("timeout ", FormatManifestDuration(c->timeout),
                                                   " is longer than interval ", FormatManifestDuration(c->interval),
                                                   "; shorten the timeout or lengthen the interval"));
    }
  }

  // expect_status: codes and ranges ("200", "200-299"), 100..599, sorted.
  void ExpectStatus(const YamlNode& v, const std::string& p, std::vector<std::pair<int, int>>* out) {
    std::vector<std::string> items;
    StringList(v, p, &items);
    for (size_t i = 0; i < items.size(); ++i) {
      const YamlNode& at = v.IsSequence() ? v[i] : v;
      std::vector<std::string> parts = absl::StrSplit(items[i], '-');
      int lo = 0, hi = 0;
      bool ok = parts.size() <= 2 && absl::SimpleAtoi(parts[0], &lo) &&
                absl::SimpleAtoi(parts.size() == 2 ? parts[1] : parts[0], &hi) && lo >= 100 && hi <= 599 && lo <= hi;
      if (!ok) {
        Error(at, absl::StrCat(p, "[", i, "]"),
              absl::StrCat("\"", items[i], "\" is not a status code or range like 200-299 (100..599)"));
        continue;
      }
      out->emplace_back(lo, hi);
    }
    std::sort(out->begin(), out->end());
  }

  // A check's fields that only another type of check takes, named.
  using FieldsSeen = std::vector<std::pair<std::string, const YamlNode*>>;
  void CheckFieldsFitType(const std::string& path, const std::string& type, const FieldsSeen& http_only,
                          const FieldsSeen& tcp_only, const FieldsSeen& https_only) {
    if (type == "tcp") {
      for (auto& kv : http_only) Error(*kv.second, Join(path, kv.first), "only for http and https checks");
    } else {
      for (auto& kv : tcp_only) Error(*kv.second, Join(path, kv.first), "only for tcp checks");
    }
    if (type != "https") {
      for (auto& kv : https_only) Error(*kv.second, Join(path, kv.first), "only for https checks");
    }
  }

  ParseOptions opts_;
  Manifest m_;
  std::vector<ManifestDiagnostic> errors_;
  int64_t error_count_ = 0;
  absl::Status interrupted_;
  std::vector<ManifestDiagnostic> warnings_;
};

Value StrMap(const std::map<std::string, std::string>& m) {
  Value v = Value::Map();
  for (const auto& kv : m) v.Append(kv.first, Value::Str(kv.second));
  return v;
}

Value StrList(const std::vector<std::string>& l) {
  Value v = Value::List();
  for (const auto& s : l) v.Add(Value::Str(s));
  return v;
}

Value Dur(absl::Duration d) { return Value::Str(FormatManifestDuration(d)); }

Value CheckValue(const HealthCheckSpec& c) {
  Value v = Value::Map();
  v.Set("type", Value::Str(c.type)).Set("port", Value::Int(c.port));
  if (!c.network.empty()) v.Set("network", Value::Str(c.network));
  if (c.type != "tcp") {
    v.Set("path", Value::Str(c.path)).Set("method", Value::Str(c.method));
    if (!c.headers.empty()) v.Set("headers", StrMap(c.headers));
    Value st = Value::List();
    for (const auto& r : c.expect_status) {
      st.Add(Value::Str(r.first == r.second ? absl::StrCat(r.first) : absl::StrCat(r.first, "-", r.second)));
    }
    v.Set("expect_status", st);
    if (!c.expect_body.empty()) v.Set("expect_body", Value::Str(c.expect_body));
    if (c.type == "https") v.Set("tls_skip_verify", Value::Bool(c.tls_skip_verify));
  } else {
    if (!c.send.empty()) v.Set("send", Value::Str(c.send));
    if (!c.expect.empty()) v.Set("expect", Value::Str(c.expect));
  }
  v.Set("interval", Dur(c.interval)).Set("unhealthy_interval", Dur(c.unhealthy_interval));
  v.Set("timeout", Dur(c.timeout)).Set("retries", Value::Int(c.retries)).Set("successes", Value::Int(c.successes));
  return v;
}

// The part of a service that goes into each instance, added to `all`.
void InstanceFields(const ServiceSpec& s, std::map<std::string, Value>* all) {
  // The brand, when one was named, is kept through the alias that names it,
  // so the canonical form reads back as the same manifest.
  static const auto* kBrandAlias = new std::map<std::string, std::string>{
      {"lx", "lx"}, {"joyent", "smartmachine"}, {"kvm", "kvm"}, {"bhyve", "bhyve"}};
  auto alias = kBrandAlias->find(s.brand);
  (*all)["compute_type"] = Value::Str(alias == kBrandAlias->end() ? s.compute_type : alias->second);
  (*all)["image"] = Value::Str(s.image);
  if (!s.package.empty()) (*all)["package"] = Value::Str(s.package);
  if (s.memory_bytes || s.disk_bytes || s.cpu) {
    Value r = Value::Map();
    if (s.cpu) r.Append("cpu", Value::Double(*s.cpu));
    if (s.disk_bytes) r.Append("disk", Value::Str(FormatManifestSize(*s.disk_bytes)));
    if (s.memory_bytes) r.Append("memory", Value::Str(FormatManifestSize(*s.memory_bytes)));
    (*all)["resources"] = std::move(r);
  }
  if (!s.command.empty()) (*all)["command"] = Value::Str(s.command);
  if (s.delegate_dataset) (*all)["delegate_dataset"] = Value::Bool(true);
  if (!s.environment.empty()) (*all)["environment"] = StrMap(s.environment);
  if (!s.mdata.empty()) (*all)["mdata"] = StrMap(s.mdata);
  if (!s.ports.empty()) {
    Value p = Value::List();
    for (int port : s.ports) p.Add(Value::Int(port));
    (*all)["ports"] = std::move(p);
  }
  if (!s.tags.empty()) (*all)["tags"] = StrMap(s.tags);
  if (!s.networks.empty()) (*all)["networks"] = StrList(s.networks);
  if (!s.volumes.empty()) {
    std::vector<std::string> mounts;
    for (const VolumeMount& m : s.volumes) {
      mounts.push_back(absl::StrCat(m.volume, ":", m.mountpoint, m.mode == "ro" ? ":ro" : ""));
    }
    (*all)["volumes"] = StrList(mounts);
  }
}

Value InstanceValue(const ServiceSpec& s) {
  std::map<std::string, Value> all;
  InstanceFields(s, &all);
  return Value::FromMap(std::move(all));
}

}  // namespace

Value ServiceSpecValue(const ServiceSpec& s, std::string* instance_json);

Value ServiceSpecValue(const ServiceSpec& s) { return ServiceSpecValue(s, nullptr); }

// With `instance_json`, also InstanceValue(s).ToJson() from the same fields.
Value ServiceSpecValue(const ServiceSpec& s, std::string* instance_json) {
  std::map<std::string, Value> all;  // sorted key order
  InstanceFields(s, &all);
  if (instance_json != nullptr) {
    // As Value::FromMap(all).ToJson() writes it (never empty: the image).
    instance_json->push_back('{');
    for (const auto& [key, value] : all) {
      if (instance_json->size() > 1) instance_json->push_back(',');
      AppendJsonQuoted(key, instance_json);
      instance_json->push_back(':');
      instance_json->append(value.ToJson());
    }
    instance_json->push_back('}');
  }
  all["service_type"] = Value::Str(s.service_type);
  if (s.compute_type != "agent") all["count"] = Value::Int(s.count);  // agents: one per server
  if (!s.placement.empty()) {
    Value p = Value::List();
    for (const auto& r : s.placement) p.Add(Value::Str(r.ToString()));
    all["placement"] = std::move(p);
  }
  if (!s.healthchecks.empty()) {
    Value h = Value::Map();
    for (const auto& kv : s.healthchecks) h.Append(kv.first, CheckValue(kv.second));
    all["healthchecks"] = std::move(h);
  }
  Value start = Value::Map();
  start.Append("parallelism", Value::Int(s.start_parallelism)).Append("window", Dur(s.start_window));
  all["start"] = std::move(start);
  Value restart = Value::Map();
  restart.Append("condition", StrList(s.restart_condition))
      .Append("max_attempts", Value::Int(s.restart_max_attempts))
      .Append("window", Dur(s.restart_window));
  if (!RunsToCompletion(s)) all["restart"] = std::move(restart);  // a run's instances are never restarted
  Value stop = Value::Map();
  stop.Append("preserve_stopped", Value::Str(s.preserve_stopped)).Append("timeout", Dur(s.stop_timeout));
  all["stop"] = std::move(stop);
  // Fields added later are written only when not the default, so versions
  // stored before they existed keep their canonical form.
  std::map<std::string, Value> u;  // sorted key order
  u["auto_rollback"] = Value::Bool(s.update_auto_rollback);
  u["canary"] = Value::Int(s.update_canary);
  u["max_surge"] = Value::Int(s.update_max_surge);
  u["on_change"] = Value::Str(s.update_on_change);
  u["rolling"] = Value::Int(s.update_rolling);
  if (s.update_on_meta_change != "manual") u["on_meta_change"] = Value::Str(s.update_on_meta_change);
  if (s.update_strategy != "replace") u["strategy"] = Value::Str(s.update_strategy);
  if (s.update_healthy_deadline > absl::ZeroDuration()) u["healthy_deadline"] = Dur(s.update_healthy_deadline);
  if (s.update_min_healthy_time > absl::ZeroDuration()) u["min_healthy_time"] = Dur(s.update_min_healthy_time);
  if (s.update_progress_deadline > absl::ZeroDuration()) u["progress_deadline"] = Dur(s.update_progress_deadline);
  Value update = Value::FromMap(std::move(u));
  all["update"] = std::move(update);
  if (s.servers) {
    Value sv = Value::Map();
    if (!s.servers->exclude.empty()) sv.Append("exclude", StrList(s.servers->exclude));
    if (s.servers->select == "list") sv.Append("select", StrList(s.servers->servers));
    else sv.Append("select", Value::Str(s.servers->select));
    all["servers"] = std::move(sv);
  }
  // Not in the instance's spec hash: new names are set on the instances in
  // place (a tag), not rolled out.
  if (s.cns) all["cns"] = s.cns->empty() ? Value::Bool(false) : StrList(*s.cns);
  if (!s.schedule.empty()) {
    Value sched = Value::Map();
    sched.Append("cron", Value::Str(s.schedule));
    sched.Append("time_zone", Value::Str(s.time_zone));
    all["schedule"] = std::move(sched);
  }
  if (RunsToCompletion(s)) {
    Value run = Value::Map();
    run.Append("concurrency", Value::Str(s.run_concurrency));
    if (s.run_deadline > absl::ZeroDuration()) run.Append("deadline", Dur(s.run_deadline));
    Value history = Value::Map();
    history.Append("failed", Value::Int(s.run_keep_failed));
    history.Append("succeeded", Value::Int(s.run_keep_succeeded));
    run.Append("history", std::move(history));
    if (s.run_starting_deadline > absl::ZeroDuration()) run.Append("starting_deadline", Dur(s.run_starting_deadline));
    all["run"] = std::move(run);
  }
  for (const auto& kv : s.reserved) all[kv.first] = kv.second;
  return Value::FromMap(std::move(all));
}

namespace {

std::string EndpointText(const FirewallEndpoint& e) {
  switch (e.kind) {
    case FirewallEndpoint::Kind::kAny: return "any";
    case FirewallEndpoint::Kind::kIp: return absl::StrCat("ip ", e.value);
    case FirewallEndpoint::Kind::kSubnet: return absl::StrCat("subnet ", e.value);
    case FirewallEndpoint::Kind::kService: return e.value;
  }
  return "";
}

}  // namespace

Value FirewallRuleValue(const FirewallRuleSpec& r) {
  std::map<std::string, Value> v;
  for (const auto& [key, side] : {std::pair{"from", &r.from}, std::pair{"to", &r.to}}) {
    std::vector<std::string> texts;
    for (const auto& e : *side) texts.push_back(EndpointText(e));
    v[key] = StrList(texts);
  }
  if (r.protocol != "tcp") v["protocol"] = Value::Str(r.protocol);
  if (!r.ports.empty()) v["ports"] = StrList(r.ports);
  if (r.action != "allow") v["action"] = Value::Str(r.action);
  if (!r.enabled) v["enabled"] = Value::Bool(false);
  if (r.priority > 0) v["priority"] = Value::Int(r.priority);
  if (r.log) v["log"] = Value::Bool(true);
  if (!r.description.empty()) v["description"] = Value::Str(r.description);
  return Value::FromMap(std::move(v));
}

Value FabricValue(const FabricSpec& f) {
  Value networks = Value::Map();
  for (const auto& [name, n] : f.networks) {
    std::map<std::string, Value> v;
    v["subnet"] = Value::Str(n.subnet);
    for (auto [key, text] : {std::pair{"gateway", &n.gateway}, {"provision_start", &n.provision_start},
                             {"provision_end", &n.provision_end}, {"description", &n.description}}) {
      if (!text->empty()) v[key] = Value::Str(*text);
    }
    if (!n.resolvers.empty()) v["resolvers"] = StrList(n.resolvers);
    if (!n.routes.empty()) v["routes"] = StrMap(n.routes);
    if (!n.internet_nat) v["internet_nat"] = Value::Bool(false);
    networks.Append(name, Value::FromMap(std::move(v)));
  }
  Value out = Value::Map();
  out.Append("networks", std::move(networks));
  out.Append("vlan", Value::Int(f.vlan));
  return out;
}

bool RunsToCompletion(const ServiceSpec& s) { return s.service_type == "scheduled" || s.service_type == "event"; }

Value VolumesValue(const std::map<std::string, VolumeSpec>& volumes) {
  Value out = Value::Map();
  for (const auto& [name, v] : volumes) {
    std::map<std::string, Value> x;
    if (v.size_mib > 0) x["size"] = Value::Str(FormatManifestSize(v.size_mib << 20));
    x["network"] = Value::Str(v.network);
    if (v.deletion_policy != "retain") x["deletion_policy"] = Value::Str(v.deletion_policy);
    if (v.remove) x["remove"] = Value::Bool(true);
    out.Append(name, Value::FromMap(std::move(x)));
  }
  return out;
}

std::vector<std::string> CnsNames(const std::string& project, const std::string& service, const ServiceSpec& s) {
  if (s.compute_type == "agent" || s.compute_type == "core") return {};
  if (s.cns) return *s.cns;
  std::string name = absl::AsciiStrToLower(absl::StrCat(project, "-", service));
  if (name.size() > 63) return {};  // not a DNS label (a warning at apply)
  return {name};
}

std::string CnsTagValue(const std::string& project, const std::string& service, const ServiceSpec& s) {
  return absl::StrJoin(CnsNames(project, service, s), ",");
}

ParseResult ParseManifest(absl::string_view text, const ParseOptions& options) {
  return Parser(options).Run(text);
}

std::vector<ManifestDiagnostic> CheckMetaReferences(const Manifest& m,
                                                    const std::map<std::string, std::string>& meta,
                                                    absl::string_view filename) {
  std::vector<ManifestDiagnostic> out;
  for (const TemplateUse& t : m.templates) {
    auto vars = ParseTemplate(t.text);
    if (!vars.ok()) continue;  // reported by the parser already
    for (const auto& v : *vars) {
      if (!absl::StartsWith(v.name, "meta.")) continue;
      std::string key = v.name.substr(5);
      if (meta.count(key) || m.meta.count(key)) continue;
      out.push_back(ManifestDiagnostic{
          std::string(filename), t.line, t.column, t.path,
          absl::StrCat("meta key \"", key, "\" is not set (referenced as {{ ", v.as_written,
                       " }}); set it with `mariposa meta set ", key, " VALUE` or add it under meta:")});
    }
  }
  return out;
}

namespace {

// The canonical document. With `c`, also fills its per-service forms from the
// same trees (each service's spec is built once).
std::string BuildCanonical(const Manifest& m, CompiledManifest* c) {
  std::map<std::string, Value> root;  // sorted key order
  if (!m.deployment_groups.empty()) {
    Value g = Value::Map();
    for (const auto& kv : m.deployment_groups) g.Append(kv.first, StrList(kv.second));
    root["deployment_groups"] = std::move(g);
  }
  if (!m.description.empty()) root["description"] = Value::Str(m.description);
  if (!m.meta.empty()) root["meta"] = StrMap(m.meta);
  if (!m.networks.empty()) root["networks"] = StrList(m.networks);
  root["project"] = Value::Str(m.project);
  for (const auto& kv : m.reserved) root[kv.first] = kv.second;
  if (!m.firewall.empty()) {
    Value rules = Value::Map();
    for (const auto& [name, r] : m.firewall) rules.Append(name, FirewallRuleValue(r));
    root["firewall"] = std::move(rules);
  }
  if (m.fabric) root["fabric"] = FabricValue(*m.fabric);
  if (!m.volumes.empty()) root["volumes"] = VolumesValue(m.volumes);
  if (m.cns) root["cns"] = m.cns->empty() ? Value::Bool(false) : Value::Str(*m.cns);
  Value services = Value::Map();
  std::string instance_json;
  for (const auto& kv : m.services) {
    instance_json.clear();
    Value spec = ServiceSpecValue(kv.second, c != nullptr ? &instance_json : nullptr);
    if (c != nullptr) {
      c->spec_json.emplace_hint(c->spec_json.end(), kv.first, spec.ToJson());
      c->instance_hash.emplace_hint(c->instance_hash.end(), kv.first, Sha256Hex(instance_json));
    }
    services.Append(kv.first, std::move(spec));
  }
  root["services"] = std::move(services);
  return Value::FromMap(std::move(root)).ToYaml();
}

}  // namespace

bool SameChecks(const std::map<std::string, HealthCheckSpec>& a, const std::map<std::string, HealthCheckSpec>& b) {
  auto fields = [](const HealthCheckSpec& c) {
    return std::tie(c.type, c.port, c.network, c.path, c.method, c.headers, c.expect_status, c.expect_body,
                    c.tls_skip_verify, c.send, c.expect, c.interval, c.unhealthy_interval, c.timeout, c.retries,
                    c.successes);
  };
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
    if (i->first != j->first || fields(i->second) != fields(j->second)) return false;
  }
  return true;
}

std::string CanonicalYaml(const Manifest& m) { return BuildCanonical(m, nullptr); }

std::string CanonicalHash(const Manifest& m) { return Sha256Hex(CanonicalYaml(m)); }

std::string ServiceSpecJson(const ServiceSpec& s) { return ServiceSpecValue(s).ToJson(); }

std::string InstanceSpecHash(const ServiceSpec& s) { return Sha256Hex(InstanceValue(s).ToJson()); }

CompiledManifest Compile(Manifest m) {
  CompiledManifest c;
  c.canonical = BuildCanonical(m, &c);
  c.hash = Sha256Hex(c.canonical);
  c.manifest = std::move(m);
  return c;
}

}  // namespace mariposa
