// The manifest's data centers (issue 52): `datacenters:` and
// `datacenter_rollout:`, their rules, and the manifest as one data center
// runs it.
#include "projects/manifest_parser.h"

namespace mariposa {

std::vector<std::string> DataCenterOrder(const std::vector<DataCenterSpec>& dcs) {
  std::vector<std::string> out;
  for (const auto& dc : dcs) {
    if (dc.canary) out.push_back(dc.name);
  }
  for (const auto& dc : dcs) {
    if (!dc.canary) out.push_back(dc.name);
  }
  return out;
}

std::string DataCenterList(const std::vector<DataCenterSpec>& dcs) {
  std::vector<std::string> names;
  for (const auto& dc : dcs) names.push_back(dc.name);
  return absl::StrJoin(names, ", ");
}

bool RunsInDataCenter(const Manifest& m, absl::string_view dc) {
  if (m.datacenters.empty()) return true;
  for (const auto& d : m.datacenters) {
    if (d.name == dc) return true;
  }
  return false;
}

Manifest ForDataCenter(Manifest m, absl::string_view dc) {
  if (m.datacenters.empty()) return m;
  const DataCenterSpec* mine = nullptr;
  for (const auto& d : m.datacenters) {
    if (d.name == dc) mine = &d;
  }
  if (mine == nullptr) {
    for (auto& [name, s] : m.services) s.count = 0;
    return m;
  }
  for (const auto& [name, o] : mine->services) {
    auto it = m.services.find(name);
    if (it == m.services.end()) continue;  // refused by the parser
    ServiceSpec& s = it->second;
    if (o.count) s.count = *o.count;
    if (o.package) s.package = *o.package;
    if (o.networks) s.networks = *o.networks;
    if (o.cns) s.cns = *o.cns;
  }
  return m;
}

namespace manifest_internal {

void Parser::DataCenters(const YamlNode& n, const std::string& p) {
  constexpr size_t kMaxDataCenters = 32;
  if (!n.IsSequence() || n.size() == 0) {
    Error(n, p, absl::StrCat("must be a list of data centers (- name: us-east-1 …), not ",
                             n.IsSequence() ? "an empty list" : KindName(n),
                             "; remove datacenters: to run the project in the data center it is applied to"));
    return;
  }
  if (n.size() > kMaxDataCenters) {
    Error(n, p, absl::StrCat(n.size(), " data centers; a project may list at most ", kMaxDataCenters));
    return;
  }
  for (const auto& [name, s] : m_.services) {
    if (s.compute_type == "agent" || s.compute_type == "core") {
      Error(n, p, absl::StrCat("service ", name, " is ", s.compute_type == "agent" ? "an agent" : "a core zone",
                               ": agents and core zones belong to one data center's Triton; keep them in a project "
                               "without datacenters:"));
      return;
    }
  }
  const YamlNode* canary_at = nullptr;
  for (size_t i = 0; i < n.size(); ++i) {
    const YamlNode& e = n[i];
    std::string ep = absl::StrCat(p, "[", i, "]");
    DataCenterSpec dc;
    const YamlNode* name_node = nullptr;
    const YamlNode* canary_node = nullptr;
    Fields f;
    f["name"] = [&](const YamlNode& v, const std::string& vp) {
      name_node = &v;
      if (!Scalar(v, vp, &dc.name)) return;
      if (!IsDnsLabel(dc.name)) {
        Error(v, vp, absl::StrCat("\"", dc.name, "\" is not a data center name: a DNS label of a-z, 0-9 and '-' "
                                  "(as Triton names its data centers: us-east-1)"));
      }
    };
    f["canary"] = [&](const YamlNode& v, const std::string& vp) {
      canary_node = &v;
      Bool(v, vp, &dc.canary);
    };
    f["services"] = [&](const YamlNode& v, const std::string& vp) { DataCenterServices(v, vp, &dc); };
    ParseMap(e, ep, f);
    if (!e.IsMap()) continue;
    if (name_node == nullptr) {
      Error(e, ep, "missing name: the data center's name, as its mariposad's --datacenter gives it");
      continue;
    }
    for (const auto& other : m_.datacenters) {
      if (other.name == dc.name) Error(*name_node, Join(ep, "name"), absl::StrCat("data center ", dc.name,
                                                                               " is listed twice"));
    }
    if (dc.canary) {
      if (canary_at != nullptr) {
        YamlMark mk = canary_at->Mark();
        Error(*canary_node, Join(ep, "canary"),
              absl::StrCat("a second canary data center (the first is at line ", mk.line + 1,
                           "); one data center is rolled out to first: keep canary: true on one"));
      }
      canary_at = canary_node;
    }
    m_.datacenters.push_back(std::move(dc));
  }
}

void Parser::DataCenterServices(const YamlNode& v, const std::string& p, DataCenterSpec* dc) {
  if (!v.IsMap()) {
    Error(v, p, absl::StrCat("must be a map of service name to what differs in this data center, not ",
                             KindName(v)));
    return;
  }
  for (const auto& kv : v) {
    std::string name;
    if (!Scalar(kv.first, p, &name)) continue;
    std::string sp = Join(p, name);
    if (!m_.services.count(name)) {
      std::vector<std::string> known;
      for (const auto& s : m_.services) known.push_back(s.first);
      Error(kv.first, sp, absl::StrCat("no service \"", name, "\" in this manifest",
                                       known.empty() ? "" : absl::StrCat("; its services: ", absl::StrJoin(known, ", "))));
      continue;
    }
    if (dc->services.count(name)) {
      Error(kv.first, sp, "duplicate service");
      continue;
    }
    DataCenterOverride o;
    ServiceSpec scratch;  // the service keys' own rules read into it
    Fields f;
    f["count"] = [&](const YamlNode& x, const std::string& xp) {
      int64_t c = -1;
      Int(x, xp, &c, 0, 100000);
      if (c >= 0) o.count = c;
    };
    f["package"] = [&](const YamlNode& x, const std::string& xp) {
      std::string pkg;
      if (!Scalar(x, xp, &pkg)) return;
      if (pkg.empty()) Error(x, xp, "must name a package (its name or uuid in this data center's PAPI)");
      else o.package = pkg;
    };
    f["networks"] = [&](const YamlNode& x, const std::string& xp) {
      std::vector<std::string> nets;
      Networks(x, xp, &nets);
      if (nets.empty()) Error(x, xp, "must name at least one network (its name or uuid in this data center's NAPI)");
      else o.networks = std::move(nets);
    };
    f["cns"] = [&](const YamlNode& x, const std::string& xp) {
      Cns(x, xp, &scratch);
      o.cns = scratch.cns;
    };
    ParseMap(kv.second, sp, f);
    dc->services[name] = std::move(o);
  }
}

void Parser::DataCenterRolloutKeys(const YamlNode& n, const std::string& p) {
  DataCenterRollout r;
  Fields f;
  const YamlNode* parallel = nullptr;
  f["max_parallel"] = [&](const YamlNode& v, const std::string& vp) {
    parallel = &v;
    Int(v, vp, &r.max_parallel, 1, 32);
  };
  f["on_failure"] = [&](const YamlNode& v, const std::string& vp) { OneOf(v, vp, &r.on_failure, {"stop", "rollback"}); };
  ParseMap(n, p, f);
  if (m_.datacenters.empty()) {
    Error(n, p, "datacenter_rollout: needs datacenters: (the data centers it orders)");
    return;
  }
  if (parallel != nullptr && static_cast<size_t>(r.max_parallel) > m_.datacenters.size()) {
    Error(*parallel, Join(p, "max_parallel"),
          absl::StrCat(r.max_parallel, " is more than the ", m_.datacenters.size(), " data centers listed"));
  }
  m_.datacenter_rollout = r;
}

}  // namespace manifest_internal
}  // namespace mariposa
