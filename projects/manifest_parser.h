// The manifest parser (projects/manifest.cc, manifest_services.cc): internal
// to the manifest library; users call ParseManifest (projects/manifest.h).
#ifndef MARIPOSA_PROJECTS_MANIFEST_PARSER_H_
#define MARIPOSA_PROJECTS_MANIFEST_PARSER_H_

#include "projects/manifest.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <new>
#include <type_traits>
#include <regex>
#include <set>
#include <tuple>
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
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

namespace mariposa::manifest_internal {


inline const std::set<std::string>& ReservedKeys() {
  static const auto* k = new std::set<std::string>{"triggers", "autoscale",
                                                  "webhooks", "containerpilot"};
  return *k;
}

inline std::string KindName(const YamlNode& n) {
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
  // The handlers of a map's keys: `f["key"] = [&](node, path) {...};`, keys
  // string literals. The parser makes one set per map it reads (one per
  // service), so handlers are kept inline: no allocation per key.
  class Fields {
   public:
    class Handler {
     public:
      template <typename F>
      Handler& operator=(F f) {
        static_assert(sizeof(F) <= sizeof(buf_) && alignof(F) <= alignof(void*) &&
                          std::is_trivially_copyable_v<F> && std::is_trivially_destructible_v<F>,
                      "a key's handler captures references or pointers only, at most six");
        new (buf_) F(f);
        call_ = [](const void* fn, const YamlNode& v, const std::string& p) { (*static_cast<const F*>(fn))(v, p); };
        return *this;
      }
      void operator()(const YamlNode& v, const std::string& p) const { call_(buf_, v, p); }

     private:
      alignas(void*) unsigned char buf_[6 * sizeof(void*)];
      void (*call_)(const void*, const YamlNode&, const std::string&) = nullptr;
    };
    Handler& operator[](absl::string_view key) {
      for (auto& e : entries_) {
        if (e.first == key) return e.second;
      }
      entries_.emplace_back(key, Handler());
      return entries_.back().second;
    }
    const Handler* Find(absl::string_view key) const {
      for (const auto& e : entries_) {
        if (e.first == key) return &e.second;
      }
      return nullptr;
    }
    std::vector<std::string> Keys() const {
      std::vector<std::string> out;
      for (const auto& e : entries_) out.emplace_back(e.first);
      return out;
    }

   private:
    std::vector<std::pair<absl::string_view, Handler>> entries_;
  };
  // Other spellings of a map's keys: {as written, the key it means}.
  using Aliases = std::initializer_list<std::pair<absl::string_view, absl::string_view>>;

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
  void ParseMap(const YamlNode& n, const std::string& path, const Fields& fields, Aliases aliases = {},
                std::map<std::string, Value>* reserved = nullptr) {
    if (!n.IsMap()) {
      Error(n, path, absl::StrCat("must be a map, not ", KindName(n)));
      return;
    }
    SeenKeys seen;  // canonical key -> as written
    for (const auto& kv : n) {
      const YamlNode& k = kv.first;
      if (!k.IsScalar()) {
        Error(k, path, "keys must be plain strings");
        continue;
      }
      const std::string& key = k.Scalar();
      if (!KeyOk(k, path, key)) continue;
      absl::string_view canon = key;
      for (const auto& al : aliases) {
        if (al.first == key) canon = al.second;
      }
      std::string p = Join(path, key);
      if (const absl::string_view* prev = seen.Insert(canon, key)) {
        if (*prev == key) {
          Error(k, p, "duplicate key");
        } else {
          Error(k, p, absl::StrCat("\"", key, "\" and \"", *prev, "\" mean the same; keep one"));
        }
        continue;
      }
      if (const Fields::Handler* f = fields.Find(canon)) {
        (*f)(kv.second, p);
      } else if (reserved != nullptr && ReservedKeys().count(key)) {
        (*reserved)[key] = kv.second.ToValue();
        Warn(k, p, absl::StrCat("accepted and stored, but Mariposa does not act on \"", key, "\" yet"));
      } else {
        std::vector<std::string> known = fields.Keys();
        for (const auto& al : aliases) known.emplace_back(al.first);
        std::sort(known.begin(), known.end());
        Error(k, p, absl::StrCat("unknown key \"", key, "\"; expected one of: ", absl::StrJoin(known, ", ")));
      }
    }
  }

  // The keys of one map seen so far (the views point into the document and
  // the parser's literals): a short list, and past it a hash table, so a
  // map of many keys costs no more per key than a short one.
  class SeenKeys {
   public:
    // Records `canon` as written `as`; the earlier spelling when it was seen.
    const absl::string_view* Insert(absl::string_view canon, absl::string_view as) {
      if (many_.empty()) {
        for (const auto& e : few_) {
          if (e.first == canon) return &e.second;
        }
        if (few_.size() < kFew) {
          few_.emplace_back(canon, as);
          return nullptr;
        }
        for (const auto& e : few_) many_.emplace(e.first, e.second);
      }
      auto [it, added] = many_.emplace(canon, as);
      return added ? nullptr : &it->second;
    }

   private:
    static constexpr size_t kFew = 32;
    absl::InlinedVector<std::pair<absl::string_view, absl::string_view>, kFew> few_;
    absl::flat_hash_map<absl::string_view, absl::string_view> many_;
  };

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

  void ParseRoot(const YamlNode& root);

  // services: NAME -> definition.
  void Services(const YamlNode& n, const std::string& p);

  // The project's name: the manifest's `project:`, or -j's, which must not
  // retarget a manifest written for another project.
  void ProjectName(const YamlNode* project_node);

  // cns: (the project's) gives each service without its own a name; a
  // default name longer than a DNS label is warned of.
  void DefaultCnsNames();

  // firewall: NAME -> {from, to, protocol, ports, action, enabled,
  // description} (docs/manifest.md "Firewall rules").
  void Firewall(const YamlNode& n, const std::string& path);

  void FirewallRule(const std::string& name, const YamlNode& def, const std::string& rp);

  // fabric: {vlan, networks: NAME -> {subnet, gateway, provision_start,
  // provision_end, resolvers, routes, internet_nat, description}}
  // (docs/manifest.md "Fabric networks").
  void Fabric(const YamlNode& n, const std::string& path);

  void FabricNetwork(const YamlNode& def, const std::string& np, FabricNetworkSpec* net);

  // One side of a rule: one endpoint or a list of them.
  void Endpoints(const YamlNode& v, const std::string& p, std::vector<FirewallEndpoint>* out);

  // The services a rule names are the manifest's own instances: not agents
  // or core zones (their firewall is Triton's business), and each rule names
  // at least one (a rule of `any` to `any` would reach the account's every
  // instance).
  void FirewallServices();

  // volumes: NAME -> {size, network, deletion_policy, remove}
  // (docs/manifest.md "Volumes").
  void Volumes(const YamlNode& n, const std::string& path);

  // A service's volumes: a list of {name, mountpoint, mode} or
  // "NAME:MOUNTPOINT[:ro]".
  void Mounts(const YamlNode& n, const std::string& path, ServiceSpec* s);

  // Ties volumes to the fabric and the services that mount them.
  void VolumeChecks();

  std::map<std::string, const YamlNode*> volume_nodes_;  // volume -> its definition
  std::map<std::string, const YamlNode*> mounts_;        // service -> its volumes: node

  // Each firewall rule's from: and to: nodes (FirewallServices locates its
  // errors there).
  std::map<std::string, std::pair<const YamlNode*, const YamlNode*>> sides_;

  void Groups(const YamlNode& n, const std::string& path);

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
  void ParseService(const YamlNode& n, const std::string& path, ServiceSpec* s);

  void ServiceType(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // schedule: "CRON", or {cron, time_zone}.
  void Schedule(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // run: {concurrency, starting_deadline, deadline, history: {succeeded, failed}}.
  void RunKeys(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // What runs to completion takes and what it does not.
  void RunRules(const YamlNode& n, const std::string& path, const ServiceNodes& at, const ServiceSpec* s);

  void ComputeType(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // package: or resources.package: (`other` names the one not given here).
  void Package(const YamlNode& v, const std::string& p, const std::string& other, ServiceSpec* s);

  void Resources(const YamlNode& v, const std::string& p, ServiceSpec* s);

  void Tags(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // KEY==VALUE, KEY!=VALUE (hard), KEY==~VALUE, KEY!=~VALUE (soft); a value
  // /between slashes/ is a regular expression.
  void Placement(const YamlNode& v, const std::string& p, ServiceSpec* s);

  void Ports(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // A string, or a list joined with spaces.
  void Command(const YamlNode& v, const std::string& p, ServiceSpec* s);

  void HealthChecks(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // Each entry NAME -> definition of map `n` whose name is a DNS label not
  // taken yet (`taken`), given to `each` with its path; `what` names the
  // entries in errors ("check", "rule"). `each` returns false to stop.
  void Named(const YamlNode& n, const std::string& path, const std::string& what,
             const std::function<bool(const std::string&)>& taken,
             const std::function<bool(const std::string&, const YamlNode&, const YamlNode&, const std::string&)>& each);

  void StartKeys(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // True when restart.condition was given.
  bool RestartKeys(const YamlNode& v, const std::string& p, ServiceSpec* s);

  void RestartCondition(const YamlNode& x, const std::string& xp, ServiceSpec* s);

  void StopKeys(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // Returns the node of update.strategy when it is given.
  const YamlNode* UpdateKeys(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // cns: false (no names), a name, or a list of names; each a lowercase DNS
  // label with an optional :port.
  // The top-level cns: false (no default CNS names), or a DNS label that
  // replaces the project's name in the default names (<NAME>-<service>).
  void ProjectCns(const YamlNode& v, const std::string& p);

  void Cns(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // datacenters: and datacenter_rollout: (manifest_datacenters.cc), read
  // once the services are: an entry names the services it changes.
  void DataCenters(const YamlNode& n, const std::string& p);
  void DataCenterServices(const YamlNode& v, const std::string& p, DataCenterSpec* dc);
  void DataCenterRolloutKeys(const YamlNode& n, const std::string& p);

  static std::string CnsNameProblem(const std::string& name);

  // Agents' servers: all, headnode, or a list; minus exclude.
  void Servers(const YamlNode& v, const std::string& p, ServiceSpec* s);

  // The rules that tie a service's keys together: an image, agents and core
  // zones, reprovision's needs, the canary.
  void ServiceRules(const YamlNode& n, const std::string& path, const ServiceNodes& at, ServiceSpec* s);

  // A core zone (imgapi0, vmapi0 ...) keeps its state on its delegate dataset
  // and is updated in place, as sdcadm updates it; a broken one is reported,
  // not replaced (sdcadm never does).
  void CoreRules(const std::string& path, const ServiceNodes& at, ServiceSpec* s);

  void ReprovisionRules(const std::string& path, const YamlNode& strategy, const ServiceSpec* s);

  void Check(const YamlNode& n, const std::string& path, HealthCheckSpec* c);

  // expect_status: codes and ranges ("200", "200-299"), 100..599, sorted.
  void ExpectStatus(const YamlNode& v, const std::string& p, std::vector<std::pair<int, int>>* out);

  // A check's fields that only another type of check takes, named.
  using FieldsSeen = std::vector<std::pair<std::string, const YamlNode*>>;
  void CheckFieldsFitType(const std::string& path, const std::string& type, const FieldsSeen& http_only,
                          const FieldsSeen& tcp_only, const FieldsSeen& https_only);

  ParseOptions opts_;
  Manifest m_;
  std::vector<ManifestDiagnostic> errors_;
  int64_t error_count_ = 0;
  absl::Status interrupted_;
  std::vector<ManifestDiagnostic> warnings_;
};

}  // namespace mariposa::manifest_internal

#endif  // MARIPOSA_PROJECTS_MANIFEST_PARSER_H_
