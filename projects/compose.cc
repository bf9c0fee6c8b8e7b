#include "projects/compose.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/value.h"
#include "projects/manifest.h"
#include "projects/yaml_document.h"

namespace mariposa {
namespace {

int Line(const YamlNode& n) { return n.Mark().line + 1; }

// A scalar's text, a list of scalars joined, or "".
std::string Text(const YamlNode& n) {
  if (n.IsScalar()) return n.Scalar();
  return "";
}

// What one Compose file becomes.
class Importer {
 public:
  Importer(const YamlNode& root, const ComposeOptions& o) : root_(root), o_(o) {}
  ComposeImport Run();

 private:
  void Note(const YamlNode& at, const std::string& path, const std::string& why) {
    out_.notes.push_back({Line(at), path, why});
  }
  void TopLevel();
  void Networks(const YamlNode& networks);
  void Service(const YamlNode& key, const YamlNode& spec);
  // Each key of a service, into `svc`.
  void Key(const std::string& path, const std::string& key, const YamlNode& v, Value* svc, Value* env,
           Value* tags);
  void Environment(const std::string& path, const YamlNode& v, Value* env);
  void EnvFile(const std::string& path, const YamlNode& v, Value* env);
  void Ports(const std::string& path, const YamlNode& v, Value* svc);
  void Deploy(const std::string& path, const YamlNode& v, Value* svc, Value* tags);
  void Restart(const std::string& path, const YamlNode& v, Value* svc);
  void Health(const std::string& path, const YamlNode& v, Value* svc);
  void Volumes(const std::string& path, const YamlNode& v, Value* svc);
  void ServiceNetworks(const std::string& path, const YamlNode& v, Value* svc);
  void Map(const std::string& path, const YamlNode& v, Value* into);  // map or KEY=VALUE list
  std::string Image(const std::string& path, const YamlNode& v);
  // Compose's ${VAR}, ${VAR:-default} and $VAR in a value become meta
  // references ({{ .meta.VAR }}), with the default as the manifest's meta.
  std::string Variables(const std::string& path, const YamlNode& at, const std::string& value);
  static Value* Sub(Value* parent, const std::string& key) {
    if (Value* v = parent->Find(key)) return v;
    parent->Set(key, Value::Map());
    return parent->Find(key);
  }

  const YamlNode& root_;
  const ComposeOptions& o_;
  ComposeImport out_;
  Value services_ = Value::Map();
  Value volumes_ = Value::Map();
  Value fabric_networks_ = Value::Map();
  Value meta_ = Value::Map();
  std::set<std::string> declared_volumes_, fabric_names_, services_names_;
};

// Compose's "512M", "1g", "2GB", or bytes -> a manifest SIZE ("512m").
std::optional<std::string> Size(const std::string& s) {
  std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(s));
  if (absl::EndsWith(t, "b") && t.size() > 1 && !absl::ascii_isdigit(t[t.size() - 2])) t.pop_back();
  int64_t n;
  if (absl::SimpleAtoi(t, &n) && n > 0) return absl::StrCat((n + (1 << 20) - 1) >> 20, "m");  // bytes
  if (t.size() < 2) return std::nullopt;
  char unit = t.back();
  double x;
  if (!absl::SimpleAtod(t.substr(0, t.size() - 1), &x) || !(x > 0) || x > 1e9) return std::nullopt;
  double mib = unit == 'k' ? x / 1024 : unit == 'm' ? x : unit == 'g' ? x * 1024 : unit == 't' ? x * 1024 * 1024 : -1;
  if (mib <= 0) return std::nullopt;
  int64_t whole = static_cast<int64_t>(mib);
  if (static_cast<double>(whole) < mib) ++whole;  // up to a whole MiB
  return whole % 1024 == 0 ? absl::StrCat(whole / 1024, "g") : absl::StrCat(whole, "m");
}

// Compose durations ("1m30s", "10s", "500ms") as the manifest writes them.
std::optional<std::string> Duration(const std::string& s) {
  absl::Duration d;
  if (!absl::ParseDuration(s, &d) || d <= absl::ZeroDuration()) return std::nullopt;
  return FormatManifestDuration(d);
}

ComposeImport Importer::Run() {
  TopLevel();
  Value doc = Value::Map();
  doc.Set("project", Value::Str(o_.project));
  if (!fabric_networks_.empty()) {
    Value fabric = Value::Map();
    fabric.Set("vlan", Value::Int(o_.vlan));
    fabric.Set("networks", std::move(fabric_networks_));
    doc.Set("fabric", std::move(fabric));
  }
  if (!meta_.empty()) doc.Set("meta", std::move(meta_));
  if (!volumes_.empty()) doc.Set("volumes", std::move(volumes_));
  doc.Set("services", std::move(services_));
  out_.manifest = doc.ToYaml();
  std::stable_sort(out_.notes.begin(), out_.notes.end(),
                   [](const ComposeNote& a, const ComposeNote& b) { return a.line < b.line; });
  return std::move(out_);
}

void Importer::TopLevel() {
  for (const YamlPair& p : root_) {
    const std::string key = p.first.Scalar();
    if (key == "services" || key == "name") continue;
    if (key == "version") {
      Note(p.first, key, "obsolete in Compose and not needed: ignored");
    } else if (key == "volumes") {
      for (const YamlPair& v : p.second) {
        declared_volumes_.insert(v.first.Scalar());
        if (v.second.IsMap() && v.second.size() > 0) {
          Note(v.first, "volumes." + v.first.Scalar(),
               "its driver and options are not kept: it becomes a Triton NFS volume (RFD 26) of VOLAPI's default size");
        }
      }
    } else if (key == "networks") {
      Networks(p.second);
    } else if (key == "secrets" || key == "configs") {
      Note(p.first, key, "not translated: keep secrets with `mariposa meta set --secret KEY` and use {{ .meta.KEY }}");
    } else if (absl::StartsWith(key, "x-")) {
      Note(p.first, key, "an extension field: its anchors were followed where used; nothing else is translated");
    } else {
      Note(p.first, key, "not translated: a manifest has no such top-level key");
    }
  }
  const YamlNode* services = root_.Find("services");
  for (const YamlPair& s : *services) services_names_.insert(s.first.Scalar());
  for (const YamlPair& s : *services) Service(s.first, s.second);
}

void Importer::Networks(const YamlNode& networks) {
  int k = 0;
  for (const YamlPair& n : networks) {
    const std::string name = n.first.Scalar();
    const std::string path = "networks." + name;
    const YamlNode* ipam = n.second.IsMap() ? n.second.Find("ipam") : nullptr;
    const YamlNode* config = ipam != nullptr && ipam->IsMap() ? ipam->Find("config") : nullptr;
    std::string subnet;
    if (config != nullptr && config->IsSequence() && config->size() > 0 && config->items()[0]->IsMap()) {
      if (const YamlNode* s = config->items()[0]->Find("subnet")) subnet = Text(*s);
    }
    if (name == "default" && subnet.empty()) continue;  // every instance joins the default network anyway
    if (o_.vlan == 0) {
      Note(n.first, path, "not translated: give --vlan N (the account's fabric VLAN) to make it a fabric network");
      continue;
    }
    if (subnet.empty()) {
      subnet = absl::StrCat("10.", 200 + (k % 50), ".", o_.vlan % 256, ".0/24");
      Note(n.first, path, absl::StrCat("no ipam subnet: made a fabric network on ", subnet, "; change it if it clashes"));
    }
    ++k;
    Value net = Value::Map();
    net.Set("subnet", Value::Str(subnet));
    fabric_networks_.Set(name, std::move(net));
    fabric_names_.insert(name);
  }
}

void Importer::Service(const YamlNode& key, const YamlNode& spec) {
  const std::string compose_name = key.Scalar();
  std::string name = absl::AsciiStrToLower(compose_name);
  std::replace(name.begin(), name.end(), '_', '-');
  std::replace(name.begin(), name.end(), '.', '-');
  const std::string path = "services." + compose_name;
  if (!spec.IsMap()) {
    Note(key, path, "not a map: left out");
    return;
  }
  const YamlNode* image = spec.Find("image");
  if (image == nullptr || Text(*image).empty()) {
    Note(key, path,
         "no image: left out; Mariposa runs images from the data center's IMGAPI: build and push it, then give "
         "image:");
    return;
  }
  if (name != compose_name) Note(key, path, absl::StrCat("named ", name, " (service names are DNS labels)"));
  Value svc = Value::Map();
  Value env = Value::Map(), tags = Value::Map();
  for (const YamlPair& p : spec) Key(path, p.first.Scalar(), p.second, &svc, &env, &tags);
  if (!env.empty()) svc.Set("environment", std::move(env));
  if (!tags.empty()) svc.Set("tags", std::move(tags));
  services_.Set(name, std::move(svc));
  ++out_.services;
}

void Importer::Key(const std::string& path, const std::string& key, const YamlNode& v, Value* svc, Value* env,
                   Value* tags) {
  const std::string at = path + "." + key;
  if (key == "image") {
    svc->Set("image", Value::Str(Image(at, v)));
  } else if (key == "command") {
    std::vector<std::string> words;
    if (v.IsScalar()) words.push_back(v.Scalar());
    for (const YamlNode* i : v.items()) words.push_back(Text(*i));
    bool spaced = v.IsSequence() && std::any_of(words.begin(), words.end(), [](const std::string& w) {
                    return w.find(' ') != std::string::npos;
                  });
    if (spaced) Note(v, at, "a list item holds a space: the words are joined with spaces, so check the command");
    svc->Set("command", Value::Str(Variables(at, v, absl::StrJoin(words, " "))));
  } else if (key == "environment") {
    Environment(at, v, env);
  } else if (key == "env_file") {
    EnvFile(at, v, env);
  } else if (key == "ports" || key == "expose") {
    Ports(at, v, svc);
  } else if (key == "labels") {
    Map(at, v, tags);
  } else if (key == "deploy") {
    Deploy(at, v, svc, tags);
  } else if (key == "scale") {
    int64_t n;
    if (absl::SimpleAtoi(Text(v), &n)) svc->Set("count", Value::Int(n));
    else Note(v, at, "not a number: not translated");
  } else if (key == "restart") {
    Restart(at, v, svc);
  } else if (key == "healthcheck") {
    Health(at, v, svc);
  } else if (key == "volumes") {
    Volumes(at, v, svc);
  } else if (key == "networks") {
    ServiceNetworks(at, v, svc);
  } else if (key == "stop_grace_period") {
    if (auto d = Duration(Text(v))) Sub(svc, "stop")->Set("timeout", Value::Str(*d));
    else Note(v, at, "not a duration: not translated");
  } else if (key == "mem_limit") {
    if (auto s = Size(Text(v))) Sub(svc, "resources")->Set("memory", Value::Str(*s));
    else Note(v, at, "not a size: not translated");
  } else if (key == "cpus") {
    double cpus;
    if (absl::SimpleAtod(Text(v), &cpus) && cpus > 0) Sub(svc, "resources")->Set("cpu", Value::Double(cpus));
    else Note(v, at, "not a number: not translated");
  } else if (key == "build") {
    Note(v, at, "not translated: Mariposa runs images; build and push it, the service runs its image:");
  } else if (key == "container_name" || key == "hostname") {
    Note(v, at, "not translated: instances are named PROJECT-SERVICE-N, and reach each other by CNS names");
  } else if (key == "depends_on" || key == "links") {
    Note(v, at,
         "not translated: services start independently; a readiness check on what it needs holds its rollouts "
         "(docs/health.md), and restart retries it");
  } else {
    Note(v, at, "not translated: a manifest's service has no such key");
  }
}

void Importer::Map(const std::string& path, const YamlNode& v, Value* into) {
  if (v.IsMap()) {
    for (const YamlPair& p : v) {
      if (p.second.IsNull()) {
        Note(p.first, path + "." + p.first.Scalar(), "no value (Compose takes the host's): not translated");
      } else {
        into->Set(p.first.Scalar(), Value::Str(Variables(path, p.second, Text(p.second))));
      }
    }
    return;
  }
  for (const YamlNode* i : v.items()) {
    std::string kv = Text(*i);
    size_t eq = kv.find('=');
    if (eq == std::string::npos) {
      Note(*i, path, absl::StrCat(kv, ": no value (Compose takes the host's): not translated"));
      continue;
    }
    into->Set(kv.substr(0, eq), Value::Str(Variables(path, *i, kv.substr(eq + 1))));
  }
}

std::string Importer::Image(const std::string& path, const YamlNode& v) {
  std::string ref = Text(v);
  if (ref.find('$') != std::string::npos) {
    Note(v, path, "holds a Compose variable: give the image itself");
  }
  size_t digest = ref.find('@');
  if (digest != std::string::npos) {
    Note(v, path, "a digest is not kept: the image is looked up by name and version in IMGAPI");
    ref = ref.substr(0, digest);
  }
  // registry/name:tag -> name@tag (IMGAPI's name and version).
  size_t slash = ref.rfind('/');
  size_t colon = ref.rfind(':');
  std::string name = ref, tag;
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    name = ref.substr(0, colon);
    tag = ref.substr(colon + 1);
  }
  for (const char* prefix : {"docker.io/library/", "docker.io/", "library/"}) {
    if (absl::StartsWith(name, prefix)) {
      name = name.substr(strlen(prefix));
      break;
    }
  }
  return tag.empty() || tag == "latest" ? name : absl::StrCat(name, "@", tag);
}

std::string Importer::Variables(const std::string& path, const YamlNode& at, const std::string& value) {
  if (value.find('$') == std::string::npos) return value;
  std::string out;
  for (size_t i = 0; i < value.size();) {
    if (value[i] != '$') {
      out.push_back(value[i++]);
      continue;
    }
    if (i + 1 < value.size() && value[i + 1] == '$') {  // $$: a literal $
      out.push_back('$');
      i += 2;
      continue;
    }
    std::string name, fallback;
    bool braced = i + 1 < value.size() && value[i + 1] == '{';
    size_t j = i + (braced ? 2 : 1);
    while (j < value.size() && (absl::ascii_isalnum(value[j]) || value[j] == '_')) name.push_back(value[j++]);
    if (name.empty()) {
      out.push_back(value[i++]);
      continue;
    }
    if (braced) {
      size_t close = value.find('}', j);
      if (close == std::string::npos) {
        out.push_back(value[i++]);
        continue;
      }
      std::string rest = value.substr(j, close - j);
      if (absl::StartsWith(rest, ":-") || absl::StartsWith(rest, "-")) fallback = rest.substr(rest[0] == ':' ? 2 : 1);
      j = close + 1;
    }
    absl::StrAppend(&out, "{{ .meta.", name, " }}");
    if (meta_.Find(name) == nullptr) {
      meta_.Set(name, Value::Str(fallback));
      Note(at, path, absl::StrCat("${", name, "} is {{ .meta.", name, " }}", fallback.empty() ? ", empty by default" :
                                  absl::StrCat(", ", fallback, " by default"),
                                  ": set it with `mariposa -j PROJECT meta set ", name, " VALUE`"));
    }
    i = j;
  }
  return out;
}

void Importer::Environment(const std::string& path, const YamlNode& v, Value* env) {
  Map(path, v, env);
  // Compose resolves a service's name to it; on Triton, CNS does, by the
  // service's CNS name.
  auto check = [&](const YamlNode& at, const std::string& value) {
    std::string host = value.substr(0, value.find(':'));
    if (services_names_.count(host)) {
      std::string dns = absl::StrCat(o_.project, "-", absl::AsciiStrToLower(host));
      std::replace(dns.begin(), dns.end(), '_', '-');
      Note(at, path, absl::StrCat("\"", value, "\" names the Compose service ", host, ": on Triton it is reached by its CNS "
                                  "name ", dns, ".svc.ACCOUNT.DATACENTER.cns… (`mariposa -j ", o_.project,
                                  " status` lists them); change the value"));
    }
  };
  if (v.IsMap()) {
    for (const YamlPair& p : v) check(p.second, Text(p.second));
  }
  for (const YamlNode* i : v.items()) {
    std::string kv = Text(*i);
    if (size_t eq = kv.find('='); eq != std::string::npos) check(*i, kv.substr(eq + 1));
  }
}

void Importer::EnvFile(const std::string& path, const YamlNode& v, Value* env) {
  std::vector<const YamlNode*> files;
  if (v.IsScalar()) files.push_back(&v);
  for (const YamlNode* i : v.items()) files.push_back(i->IsMap() && i->Find("path") ? i->Find("path") : i);
  for (const YamlNode* f : files) {
    auto it = o_.env_files.find(Text(*f));
    if (it == o_.env_files.end()) {
      Note(*f, path, absl::StrCat(Text(*f), " could not be read: its variables are not in the manifest"));
      continue;
    }
    for (absl::string_view line : absl::StrSplit(it->second, '\n')) {
      line = absl::StripAsciiWhitespace(line);
      absl::ConsumePrefix(&line, "export ");
      if (line.empty() || line.front() == '#') continue;
      size_t eq = line.find('=');
      if (eq == absl::string_view::npos) continue;
      std::string value(absl::StripAsciiWhitespace(line.substr(eq + 1)));
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
        value = value.substr(1, value.size() - 2);
      }
      std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
      if (env->Find(key) == nullptr) env->Set(key, Value::Str(value));  // environment: wins over the file
    }
  }
}

void Importer::Ports(const std::string& path, const YamlNode& v, Value* svc) {
  Value* ports = svc->Find("ports");
  if (ports == nullptr) {
    svc->Set("ports", Value::List());
    ports = svc->Find("ports");
  }
  auto add = [&](const YamlNode& at, const std::string& target, const std::string& published) {
    int n;
    if (!absl::SimpleAtoi(target, &n) || n < 1 || n > 65535) {
      Note(at, path, absl::StrCat("\"", target, "\" is not one port (a range is not translated)"));
      return;
    }
    for (const Value& p : ports->items()) {
      if (p.kind() == Value::Kind::kInt && p.int_value() == n) return;
    }
    if (!published.empty() && published != target) {
      Note(at, path, absl::StrCat("published port ", published, " is not kept: each instance has its own address on "
                                  "Triton, and serves on ", target));
    }
    ports->mutable_items().push_back(Value::Int(n));
  };
  for (const YamlNode* i : v.items()) {
    if (i->IsMap()) {
      const YamlNode* t = i->Find("target");
      const YamlNode* pub = i->Find("published");
      if (t == nullptr) {
        Note(*i, path, "no target: not translated");
        continue;
      }
      add(*i, Text(*t), pub ? Text(*pub) : "");
      continue;
    }
    std::string spec = Text(*i);
    if (absl::EndsWith(spec, "/udp")) Note(*i, path, absl::StrCat(spec, ": udp; the port is listed, checks are tcp"));
    spec = spec.substr(0, spec.find('/'));
    std::vector<std::string> parts = absl::StrSplit(spec, ':');
    add(*i, parts.back(), parts.size() >= 2 ? parts[parts.size() - 2] : "");
  }
  if (ports->items().empty()) svc->Remove("ports");
}

void Importer::Deploy(const std::string& path, const YamlNode& v, Value* svc, Value* tags) {
  for (const YamlPair& p : v) {
    const std::string key = p.first.Scalar();
    const std::string at = path + "." + key;
    if (key == "replicas") {
      int64_t n;
      if (absl::SimpleAtoi(Text(p.second), &n)) svc->Set("count", Value::Int(n));
      else Note(p.second, at, "not a number: not translated");
    } else if (key == "labels") {
      Map(at, p.second, tags);
    } else if (key == "resources") {
      for (const YamlPair& r : p.second) {
        if (r.first.Scalar() != "limits") {
          Note(r.first, at + "." + r.first.Scalar(), "not translated: an instance gets its package's whole size");
          continue;
        }
        for (const YamlPair& l : r.second) {
          const std::string lk = l.first.Scalar();
          if (lk == "memory" && Size(Text(l.second))) {
            Sub(svc, "resources")->Set("memory", Value::Str(*Size(Text(l.second))));
          } else if (double cpus; lk == "cpus" && absl::SimpleAtod(Text(l.second), &cpus) && cpus > 0) {
            Sub(svc, "resources")->Set("cpu", Value::Double(cpus));
          } else {
            Note(l.first, at + ".limits." + lk, "not translated");
          }
        }
      }
    } else if (key == "restart_policy") {
      for (const YamlPair& r : p.second) {
        const std::string rk = r.first.Scalar();
        Value* restart = Sub(svc, "restart");
        if (rk == "condition") {
          std::string c = Text(r.second);
          restart->Set("condition", Value::Str(c == "any" ? "always" : c == "none" ? "never" : "on-failure"));
        } else if (int64_t n; rk == "max_attempts" && absl::SimpleAtoi(Text(r.second), &n) && n > 0) {
          restart->Set("max_attempts", Value::Int(n));
        } else if (auto d = Duration(Text(r.second)); rk == "window" && d) {
          restart->Set("window", Value::Str(*d));
        } else {
          Note(r.first, at + "." + rk, "not translated (Mariposa backs off by itself: docs/manifest.md, restart)");
        }
      }
    } else if (key == "update_config") {
      for (const YamlPair& u : p.second) {
        int64_t n;
        if (u.first.Scalar() == "parallelism" && absl::SimpleAtoi(Text(u.second), &n) && n > 0) {
          Sub(svc, "update")->Set("rolling", Value::Int(n));
        } else {
          Note(u.first, at + "." + u.first.Scalar(), "not translated");
        }
      }
    } else {
      Note(p.first, at, "not translated: a manifest's service has no such key");
    }
  }
}

void Importer::Restart(const std::string& path, const YamlNode& v, Value* svc) {
  std::string r = Text(v);
  Value* restart = Sub(svc, "restart");
  if (r == "no") {
    restart->Set("condition", Value::Str("never"));
  } else if (r == "always" || r == "unless-stopped") {
    restart->Set("condition", Value::Str("always"));
  } else if (absl::StartsWith(r, "on-failure")) {
    restart->Set("condition", Value::Str("on-failure"));
    int64_t n;
    if (size_t colon = r.find(':'); colon != std::string::npos && absl::SimpleAtoi(r.substr(colon + 1), &n) && n > 0) {
      restart->Set("max_attempts", Value::Int(n));
    }
  } else {
    svc->Remove("restart");
    Note(v, path, absl::StrCat("\"", r, "\" is not a Compose restart policy: not translated"));
  }
}

void Importer::Health(const std::string& path, const YamlNode& v, Value* svc) {
  if (!v.IsMap()) return Note(v, path, "not a map: not translated");
  const YamlNode* test = v.Find("test");
  const YamlNode* disable = v.Find("disable");
  if (disable != nullptr && Text(*disable) == "true") return;
  std::string cmd;
  if (test != nullptr && test->IsScalar()) cmd = test->Scalar();
  if (test != nullptr) {
    for (const YamlNode* i : test->items()) absl::StrAppend(&cmd, cmd.empty() ? "" : " ", Text(*i));
  }
  if (absl::StartsWith(cmd, "NONE")) return;
  // An HTTP probe of the container itself is what an agent's check does
  // from outside: curl or wget of http://localhost[:PORT][/PATH].
  size_t url = std::string::npos;
  for (const char* host : {"http://localhost", "http://127.0.0.1", " localhost", " 127.0.0.1"}) {
    if (url == std::string::npos) {
      url = cmd.find(host);
      if (url != std::string::npos && host[0] == ' ') ++url;
    }
  }
  bool fetches = cmd.find("curl") != std::string::npos || cmd.find("wget") != std::string::npos;
  if (url == std::string::npos || !fetches || cmd.find("https://") != std::string::npos) {
    return Note(test != nullptr ? *test : v, path,
                "not translated: it runs a command inside the container; Mariposa's checks reach the instance over "
                "the network: give an http or tcp check (docs/manifest.md, Health checks)");
  }
  std::string rest = cmd.substr(url);
  if (absl::StartsWith(rest, "http://")) rest = rest.substr(7);
  size_t end = rest.find_first_of(" '\"|;&");
  rest = rest.substr(0, end);
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash), check_path = slash == std::string::npos ? "/" : rest.substr(slash);
  int port = 80;
  if (size_t colon = hostport.find(':'); colon != std::string::npos && !absl::SimpleAtoi(hostport.substr(colon + 1), &port)) {
    return Note(*test, path, "its URL's port is not a number: not translated");
  }
  Value check = Value::Map();
  check.Set("type", Value::Str("http"));
  check.Set("port", Value::Int(port));
  check.Set("path", Value::Str(check_path));
  for (const char* k : {"interval", "timeout"}) {
    if (const YamlNode* d = v.Find(k)) {
      if (auto parsed = Duration(Text(*d))) check.Set(k, Value::Str(*parsed));
      else Note(*d, path + "." + k, "not a duration: not translated");
    }
  }
  if (const YamlNode* r = v.Find("retries")) {
    int64_t n;
    if (absl::SimpleAtoi(Text(*r), &n) && n >= 1 && n <= 100) check.Set("retries", Value::Int(n));
  }
  if (const YamlNode* sp = v.Find("start_period")) {
    if (auto d = Duration(Text(*sp))) Sub(svc, "start")->Set("window", Value::Str(*d));
  }
  Value checks = Value::Map();
  checks.Set("http", std::move(check));
  svc->Set("healthchecks", std::move(checks));
}

void Importer::Volumes(const std::string& path, const YamlNode& v, Value* svc) {
  Value mounts = Value::List();
  for (const YamlNode* i : v.items()) {
    std::string source, target;
    bool ro = false;
    if (i->IsMap()) {
      const YamlNode* type = i->Find("type");
      const YamlNode* src = i->Find("source");
      const YamlNode* tgt = i->Find("target");
      const YamlNode* read_only = i->Find("read_only");
      if ((type != nullptr && Text(*type) != "volume") || src == nullptr || tgt == nullptr) {
        Note(*i, path, "not a named volume: not translated (Triton containers have no host path to bind)");
        continue;
      }
      source = Text(*src);
      target = Text(*tgt);
      ro = read_only != nullptr && Text(*read_only) == "true";
    } else {
      std::vector<std::string> parts = absl::StrSplit(Text(*i), ':');
      if (parts.size() < 2) {
        Note(*i, path, absl::StrCat(Text(*i), ": an anonymous volume: not translated (name it to keep its data)"));
        continue;
      }
      source = parts[0];
      target = parts[1];
      ro = parts.size() >= 3 && absl::StrContains(parts[2], "ro");
    }
    if (source.empty() || source[0] == '/' || source[0] == '.' || source[0] == '~' || source[0] == '$') {
      Note(*i, path, absl::StrCat(source, ": a bind mount of the host's files: not translated (Triton containers have "
                                  "no host path; use a named volume, or put the files in the image)"));
      continue;
    }
    std::string name = absl::AsciiStrToLower(source);
    std::replace(name.begin(), name.end(), '_', '-');
    if (!declared_volumes_.count(source)) Note(*i, path, absl::StrCat(source, ": not declared at the top level; made anyway"));
    if (volumes_.Find(name) == nullptr) volumes_.Set(name, Value::Map());
    mounts.Add(Value::Str(absl::StrCat(name, ":", target, ro ? ":ro" : "")));
  }
  if (!mounts.items().empty()) svc->Set("volumes", std::move(mounts));
}

void Importer::ServiceNetworks(const std::string& path, const YamlNode& v, Value* svc) {
  Value nets = Value::List();
  auto one = [&](const YamlNode& at, const std::string& name) {
    if (name == "default" && !fabric_names_.count(name)) return;
    if (!fabric_names_.count(name)) {
      Note(at, path, absl::StrCat(name, ": not a translated network (see the top-level networks): not joined"));
      return;
    }
    nets.Add(Value::Str(name));
  };
  if (v.IsMap()) {
    for (const YamlPair& p : v) {
      one(p.first, p.first.Scalar());
      if (p.second.IsMap() && p.second.size() > 0) {
        Note(p.second, path + "." + p.first.Scalar(), "its settings (a fixed address, aliases) are not translated: "
                                                      "NAPI gives addresses, CNS names instances");
      }
    }
  }
  for (const YamlNode* i : v.items()) one(*i, Text(*i));
  if (!nets.items().empty()) svc->Set("networks", std::move(nets));
}

}  // namespace

absl::StatusOr<ComposeImport> ImportCompose(absl::string_view text, const ComposeOptions& options) {
  YamlMark mark;
  auto doc = YamlDocument::Parse(text, &mark);
  if (!doc.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("line ", mark.line + 1, ", column ", mark.column + 1, ": ",
                                                   doc.status().message()));
  }
  const YamlNode& root = (*doc)->root();
  const YamlNode* services = root.IsMap() ? root.Find("services") : nullptr;
  if (services == nullptr || !services->IsMap()) {
    return absl::InvalidArgumentError("no `services:` map: not a Compose file (version 2 and later, or the Compose "
                                      "Specification)");
  }
  ComposeOptions o = options;
  if (o.project.empty()) {
    const YamlNode* name = root.Find("name");
    o.project = name != nullptr ? Text(*name) : "";
  }
  if (o.project.empty()) return absl::InvalidArgumentError("give the project's name (-j PROJECT or --project NAME)");
  ComposeImport out = Importer(root, o).Run();
  // What was written must be a manifest Mariposa takes.
  ParseResult parsed = ParseManifest(out.manifest, ParseOptions{});
  for (const ManifestDiagnostic& d : parsed.errors) {
    out.notes.push_back({0, d.path, absl::StrCat("the manifest written is refused here: ", d.message,
                                                  "; fix it by hand before applying")});
  }
  return out;
}

std::vector<std::string> ComposeEnvFiles(absl::string_view text) {
  std::vector<std::string> out;
  YamlMark mark;
  auto doc = YamlDocument::Parse(text, &mark);
  if (!doc.ok()) return out;
  const YamlNode* services = (*doc)->root().IsMap() ? (*doc)->root().Find("services") : nullptr;
  if (services == nullptr || !services->IsMap()) return out;
  for (const YamlPair& s : *services) {
    const YamlNode* f = s.second.IsMap() ? s.second.Find("env_file") : nullptr;
    if (f == nullptr) continue;
    if (f->IsScalar()) out.push_back(f->Scalar());
    for (const YamlNode* i : f->items()) {
      const YamlNode* p = i->IsMap() ? i->Find("path") : i;
      if (p != nullptr && p->IsScalar()) out.push_back(p->Scalar());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace mariposa
