#include "projects/manifest.h"
#include "projects/manifest_parser.h"

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

using manifest_internal::Parser;


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
  // Written only when not the default, so versions stored before they
  // existed keep their canonical form.
  if (!c.readiness) v.Set("readiness", Value::Bool(false));
  if (!c.liveness) v.Set("liveness", Value::Bool(false));
  return v;
}

// A map's entries in the order they are made, sorted once at the end
// (Value::FromEntries): no map nodes per field of every service.
using Entries = std::vector<std::pair<std::string, Value>>;

// The part of a service that goes into each instance, added to `all` in key
// order.
void InstanceFields(const ServiceSpec& s, Entries* all) {
  // The brand, when one was named, is kept through the alias that names it,
  // so the canonical form reads back as the same manifest.
  static const auto* kBrandAlias = new std::map<std::string, std::string>{
      {"lx", "lx"}, {"joyent", "smartmachine"}, {"kvm", "kvm"}, {"bhyve", "bhyve"}};
  if (!s.command.empty()) all->emplace_back("command", Value::Str(s.command));
  auto alias = kBrandAlias->find(s.brand);
  all->emplace_back("compute_type", Value::Str(alias == kBrandAlias->end() ? s.compute_type : alias->second));
  if (s.delegate_dataset) all->emplace_back("delegate_dataset", Value::Bool(true));
  if (!s.environment.empty()) all->emplace_back("environment", StrMap(s.environment));
  all->emplace_back("image", Value::Str(s.image));
  if (!s.mdata.empty()) all->emplace_back("mdata", StrMap(s.mdata));
  if (!s.networks.empty()) all->emplace_back("networks", StrList(s.networks));
  if (!s.package.empty()) all->emplace_back("package", Value::Str(s.package));
  if (!s.ports.empty()) {
    Value p = Value::List();
    for (int port : s.ports) p.Add(Value::Int(port));
    all->emplace_back("ports", std::move(p));
  }
  if (s.memory_bytes || s.disk_bytes || s.cpu) {
    Value r = Value::Map();
    if (s.cpu) r.Append("cpu", Value::Double(*s.cpu));
    if (s.disk_bytes) r.Append("disk", Value::Str(FormatManifestSize(*s.disk_bytes)));
    if (s.memory_bytes) r.Append("memory", Value::Str(FormatManifestSize(*s.memory_bytes)));
    all->emplace_back("resources", std::move(r));
  }
  if (!s.tags.empty()) all->emplace_back("tags", StrMap(s.tags));
  if (!s.volumes.empty()) {
    std::vector<std::string> mounts;
    for (const VolumeMount& m : s.volumes) {
      mounts.push_back(absl::StrCat(m.volume, ":", m.mountpoint, m.mode == "ro" ? ":ro" : ""));
    }
    all->emplace_back("volumes", StrList(mounts));
  }
}

Value InstanceValue(const ServiceSpec& s) {
  Entries all;
  InstanceFields(s, &all);
  return Value::FromEntries(std::move(all));
}

}  // namespace

Value ServiceSpecValue(const ServiceSpec& s, std::string* instance_json);

Value ServiceSpecValue(const ServiceSpec& s) { return ServiceSpecValue(s, nullptr); }

// With `instance_json`, also InstanceValue(s).ToJson() from the same fields.
Value ServiceSpecValue(const ServiceSpec& s, std::string* instance_json) {
  Entries all;
  all.reserve(32);
  InstanceFields(s, &all);
  if (instance_json != nullptr) {
    // As InstanceValue(s).ToJson() writes it (never empty: the image).
    instance_json->push_back('{');
    for (const auto& [key, value] : all) {
      if (instance_json->size() > 1) instance_json->push_back(',');
      AppendJsonQuoted(key, instance_json);
      instance_json->push_back(':');
      value.AppendJson(instance_json);
    }
    instance_json->push_back('}');
  }
  all.emplace_back("service_type", Value::Str(s.service_type));
  if (s.compute_type != "agent") all.emplace_back("count", Value::Int(s.count));  // agents: one per server
  if (!s.placement.empty()) {
    Value p = Value::List();
    for (const auto& r : s.placement) p.Add(Value::Str(r.ToString()));
    all.emplace_back("placement", std::move(p));
  }
  if (!s.healthchecks.empty()) {
    Value h = Value::Map();
    for (const auto& kv : s.healthchecks) h.Append(kv.first, CheckValue(kv.second));
    all.emplace_back("healthchecks", std::move(h));
  }
  Value start = Value::Map();
  start.Append("parallelism", Value::Int(s.start_parallelism)).Append("window", Dur(s.start_window));
  all.emplace_back("start", std::move(start));
  Value restart = Value::Map();
  restart.Append("condition", StrList(s.restart_condition))
      .Append("max_attempts", Value::Int(s.restart_max_attempts))
      .Append("window", Dur(s.restart_window));
  if (!RunsToCompletion(s)) all.emplace_back("restart", std::move(restart));  // a run's instances are never restarted
  Value stop = Value::Map();
  if (s.stop_drain) stop.Append("drain", Dur(*s.stop_drain));  // added later: written only when set
  stop.Append("preserve_stopped", Value::Str(s.preserve_stopped)).Append("timeout", Dur(s.stop_timeout));
  all.emplace_back("stop", std::move(stop));
  // Fields added later are written only when not the default, so versions
  // stored before they existed keep their canonical form.
  Entries u;
  u.emplace_back("auto_rollback", Value::Bool(s.update_auto_rollback));
  u.emplace_back("canary", Value::Int(s.update_canary));
  u.emplace_back("max_surge", Value::Int(s.update_max_surge));
  u.emplace_back("on_change", Value::Str(s.update_on_change));
  u.emplace_back("rolling", Value::Int(s.update_rolling));
  if (s.update_on_meta_change != "manual") u.emplace_back("on_meta_change", Value::Str(s.update_on_meta_change));
  if (s.update_strategy != "replace") u.emplace_back("strategy", Value::Str(s.update_strategy));
  if (s.update_healthy_deadline > absl::ZeroDuration()) u.emplace_back("healthy_deadline", Dur(s.update_healthy_deadline));
  if (s.update_min_healthy_time > absl::ZeroDuration()) u.emplace_back("min_healthy_time", Dur(s.update_min_healthy_time));
  if (s.update_progress_deadline > absl::ZeroDuration()) u.emplace_back("progress_deadline", Dur(s.update_progress_deadline));
  Value update = Value::FromEntries(std::move(u));
  all.emplace_back("update", std::move(update));
  if (s.servers) {
    Value sv = Value::Map();
    if (!s.servers->exclude.empty()) sv.Append("exclude", StrList(s.servers->exclude));
    if (s.servers->select == "list") sv.Append("select", StrList(s.servers->servers));
    else sv.Append("select", Value::Str(s.servers->select));
    all.emplace_back("servers", std::move(sv));
  }
  // Not in the instance's spec hash: new names are set on the instances in
  // place (a tag), not rolled out.
  if (s.cns) all.emplace_back("cns", s.cns->empty() ? Value::Bool(false) : StrList(*s.cns));
  if (!s.schedule.empty()) {
    Value sched = Value::Map();
    sched.Append("cron", Value::Str(s.schedule));
    sched.Append("time_zone", Value::Str(s.time_zone));
    all.emplace_back("schedule", std::move(sched));
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
    all.emplace_back("run", std::move(run));
  }
  for (const auto& kv : s.reserved) all.emplace_back(kv.first, kv.second);
  return Value::FromEntries(std::move(all));
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

Value DataCentersValue(const std::vector<DataCenterSpec>& dcs) {
  Value out = Value::List();
  for (const DataCenterSpec& dc : dcs) {
    Value d = Value::Map();
    if (dc.canary) d.Append("canary", Value::Bool(true));
    d.Append("name", Value::Str(dc.name));
    if (!dc.services.empty()) {
      Value services = Value::Map();
      for (const auto& [name, o] : dc.services) {
        Value x = Value::Map();  // keys in sorted order
        if (o.cns) x.Append("cns", o.cns->empty() ? Value::Bool(false) : StrList(*o.cns));
        if (o.count) x.Append("count", Value::Int(*o.count));
        if (o.networks) x.Append("networks", StrList(*o.networks));
        if (o.package) x.Append("package", Value::Str(*o.package));
        services.Append(name, std::move(x));
      }
      d.Append("services", std::move(services));
    }
    out.Add(std::move(d));
  }
  return out;
}

Value DataCenterRolloutValue(const DataCenterRollout& r) {
  Value out = Value::Map();
  out.Append("max_parallel", Value::Int(r.max_parallel));
  out.Append("on_failure", Value::Str(r.on_failure));
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
std::string BuildCanonical(const Manifest& m, CompiledManifest* c, Value* tree_out = nullptr) {
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
  if (!m.datacenters.empty()) root["datacenters"] = DataCentersValue(m.datacenters);
  if (m.datacenter_rollout) root["datacenter_rollout"] = DataCenterRolloutValue(*m.datacenter_rollout);
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
  Value tree = Value::FromMap(std::move(root));
  std::string text = tree.ToYaml();
  if (tree_out != nullptr) *tree_out = std::move(tree);
  return text;
}

}  // namespace

bool SameChecks(const std::map<std::string, HealthCheckSpec>& a, const std::map<std::string, HealthCheckSpec>& b) {
  auto fields = [](const HealthCheckSpec& c) {
    return std::tie(c.type, c.port, c.network, c.path, c.method, c.headers, c.expect_status, c.expect_body,
                    c.tls_skip_verify, c.send, c.expect, c.interval, c.unhealthy_interval, c.timeout, c.retries,
                    c.successes, c.readiness, c.liveness);
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

const Value* ServiceSpecTree(const Value& tree, absl::string_view service) {
  const Value* services = nullptr;
  for (const auto& [key, v] : tree.entries()) {
    if (key == "services") services = &v;
  }
  if (services == nullptr) return nullptr;
  const auto& e = services->entries();  // appended in name order
  auto it = std::lower_bound(e.begin(), e.end(), service,
                             [](const std::pair<std::string, Value>& x, absl::string_view k) { return x.first < k; });
  return it != e.end() && it->first == service ? &it->second : nullptr;
}

CompiledManifest Compile(Manifest m, absl::string_view datacenter, Value* tree) {
  CompiledManifest c;
  if (m.datacenters.empty()) {
    c.canonical = BuildCanonical(m, &c, tree);
    c.hash = Sha256Hex(c.canonical);
    c.manifest = std::move(m);
    return c;
  }
  // The whole document's text and hash; the services' forms as this data
  // center runs them.
  c.canonical = BuildCanonical(m, nullptr);
  c.hash = Sha256Hex(c.canonical);
  Manifest local = ForDataCenter(m, datacenter);
  BuildCanonical(local, &c, tree);
  c.document = std::make_shared<const Manifest>(std::move(m));
  c.manifest = std::move(local);
  c.datacenter = std::string(datacenter);
  return c;
}

}  // namespace mariposa
