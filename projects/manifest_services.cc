// The manifest parser's services: one small parser per key of a service,
// then the rules that tie keys together, and its health checks.
#include "projects/manifest_parser.h"

namespace mariposa::manifest_internal {

void Parser::ParseService(const YamlNode& n, const std::string& path, ServiceSpec* s) {
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

void Parser::ServiceType(const YamlNode& v, const std::string& p, ServiceSpec* s) {
  std::string t;
  if (!Scalar(v, p, &t)) return;
  if (t != "continuous" && t != "scheduled" && t != "event") {
    Error(v, p, absl::StrCat("\"", t, "\" is not one of: continuous, scheduled, event"));
  } else {
    s->service_type = t;
  }
}

void Parser::Schedule(const YamlNode& v, const std::string& p, ServiceSpec* s) {
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

void Parser::RunKeys(const YamlNode& v, const std::string& p, ServiceSpec* s) {
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

void Parser::RunRules(const YamlNode& n, const std::string& path, const ServiceNodes& at, const ServiceSpec* s) {
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

void Parser::ComputeType(const YamlNode& v, const std::string& p, ServiceSpec* s) {
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

void Parser::Package(const YamlNode& v, const std::string& p, const std::string& other, ServiceSpec* s) {
  if (!s->package.empty()) {
    Error(v, p, absl::StrCat("package is given twice (here and in ", other, "); keep one"));
    return;
  }
  String(v, p, &s->package);
}

void Parser::Resources(const YamlNode& v, const std::string& p, ServiceSpec* s) {
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

void Parser::Tags(const YamlNode& v, const std::string& p, ServiceSpec* s) {
  StringMap(v, p, &s->tags, true);
  for (const auto& kv : s->tags) {
    if (absl::StartsWith(kv.first, "mariposa.")) {
      Error(v, Join(p, kv.first), "tags starting with \"mariposa.\" are reserved for ownership tags");
    }
  }
}

void Parser::Placement(const YamlNode& v, const std::string& p, ServiceSpec* s) {
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

void Parser::Ports(const YamlNode& v, const std::string& p, ServiceSpec* s) {
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

void Parser::Command(const YamlNode& v, const std::string& p, ServiceSpec* s) {
  if (v.IsSequence()) {
    std::vector<std::string> parts;
    StringList(v, p, &parts);
    s->command = absl::StrJoin(parts, " ");
    Template(v, p, s->command);
  } else {
    String(v, p, &s->command, true);
  }
}

void Parser::HealthChecks(const YamlNode& v, const std::string& p, ServiceSpec* s) {
  Named(v, p, "check", [&](const std::string& name) { return s->healthchecks.count(name) > 0; },
        [&](const std::string& name, const YamlNode&, const YamlNode& def, const std::string& cp) {
          HealthCheckSpec hc;
          hc.name = name;
          Check(def, cp, &hc);
          s->healthchecks[name] = hc;
          return true;
        });
}

void Parser::Named(const YamlNode& n, const std::string& path, const std::string& what,
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

void Parser::StartKeys(const YamlNode& v, const std::string& p, ServiceSpec* s) {
  Fields sf;
  sf["parallelism"] = [&](const YamlNode& x, const std::string& xp) { Int(x, xp, &s->start_parallelism, 1, 10000); };
  sf["window"] = [&](const YamlNode& x, const std::string& xp) { Duration(x, xp, &s->start_window, false); };
  ParseMap(v, p, sf);
}

bool Parser::RestartKeys(const YamlNode& v, const std::string& p, ServiceSpec* s) {
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

void Parser::RestartCondition(const YamlNode& x, const std::string& xp, ServiceSpec* s) {
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

void Parser::StopKeys(const YamlNode& v, const std::string& p, ServiceSpec* s) {
  Fields sf;
  sf["timeout"] = [&](const YamlNode& x, const std::string& xp) { Duration(x, xp, &s->stop_timeout); };
  sf["drain"] = [&](const YamlNode& x, const std::string& xp) {
    absl::Duration d;
    Duration(x, xp, &d, /*positive=*/false);  // 0s: no drain
    s->stop_drain = d;
  };
  sf["preserve_stopped"] = [&](const YamlNode& x, const std::string& xp) {
    OneOf(x, xp, &s->preserve_stopped, {"never", "on-failure", "always"});
  };
  ParseMap(v, p, sf);
}

const YamlNode* Parser::UpdateKeys(const YamlNode& v, const std::string& p, ServiceSpec* s) {
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

void Parser::ProjectCns(const YamlNode& v, const std::string& p) {
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

void Parser::Cns(const YamlNode& v, const std::string& p, ServiceSpec* s) {
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

std::string Parser::CnsNameProblem(const std::string& name) {
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

void Parser::Servers(const YamlNode& v, const std::string& p, ServiceSpec* s) {
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

void Parser::ServiceRules(const YamlNode& n, const std::string& path, const ServiceNodes& at, ServiceSpec* s) {
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

void Parser::CoreRules(const std::string& path, const ServiceNodes& at, ServiceSpec* s) {
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

void Parser::ReprovisionRules(const std::string& path, const YamlNode& strategy, const ServiceSpec* s) {
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

void Parser::Check(const YamlNode& n, const std::string& path, HealthCheckSpec* c) {
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
  f["readiness"] = [&](const YamlNode& v, const std::string& p) { Bool(v, p, &c->readiness); };
  f["liveness"] = [&](const YamlNode& v, const std::string& p) { Bool(v, p, &c->liveness); };
  ParseMap(n, path, f);
  if (!n.IsMap()) return;
  if (c->type.empty()) {
    if (n.Find("type") == nullptr) Error(n, Join(path, "type"), "missing: http, https or tcp");
    return;
  }
  if (!has_unhealthy) c->unhealthy_interval = c->interval;
  if (!c->readiness && !c->liveness) {
    Error(n, Join(path, "readiness"),
          "a check that is neither for readiness nor for liveness does nothing: leave one of them true (the "
          "default is both), or remove the check");
  }
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

void Parser::ExpectStatus(const YamlNode& v, const std::string& p, std::vector<std::pair<int, int>>* out) {
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

void Parser::CheckFieldsFitType(const std::string& path, const std::string& type, const FieldsSeen& http_only,
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

}  // namespace mariposa::manifest_internal
