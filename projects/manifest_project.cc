// The manifest parser's project level: the root's keys, services by name,
// the project's name and CNS names, firewall rules, the fabric, volumes and
// their mounts, deployment groups.
#include "projects/manifest_parser.h"

namespace mariposa::manifest_internal {

void Parser::ParseRoot(const YamlNode& root) {
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
  const YamlNode* dcs_node = nullptr;
  const YamlNode* dc_rollout_node = nullptr;
  f["datacenters"] = [&](const YamlNode& n, const std::string&) { dcs_node = &n; };
  f["datacenter_rollout"] = [&](const YamlNode& n, const std::string&) { dc_rollout_node = &n; };
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
  if (dcs_node != nullptr) DataCenters(*dcs_node, "datacenters");
  if (dc_rollout_node != nullptr) DataCenterRolloutKeys(*dc_rollout_node, "datacenter_rollout");
}

void Parser::Services(const YamlNode& n, const std::string& p) {
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

void Parser::ProjectName(const YamlNode* project_node) {
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

void Parser::DefaultCnsNames() {
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

void Parser::Firewall(const YamlNode& n, const std::string& path) {
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

void Parser::FirewallRule(const std::string& name, const YamlNode& def, const std::string& rp) {
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

void Parser::Fabric(const YamlNode& n, const std::string& path) {
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

void Parser::FabricNetwork(const YamlNode& def, const std::string& np, FabricNetworkSpec* net) {
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

void Parser::Endpoints(const YamlNode& v, const std::string& p, std::vector<FirewallEndpoint>* out) {
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

void Parser::FirewallServices() {
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

void Parser::Volumes(const YamlNode& n, const std::string& path) {
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

void Parser::Mounts(const YamlNode& n, const std::string& path, ServiceSpec* s) {
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

void Parser::VolumeChecks() {
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

void Parser::Groups(const YamlNode& n, const std::string& path) {
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

}  // namespace mariposa::manifest_internal
