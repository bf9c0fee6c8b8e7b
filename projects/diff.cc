#include "projects/diff.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"

namespace mariposa {
namespace {

std::string Render(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString: return v.str();
    case Value::Kind::kNull: return "";
    default: return v.ToJson();
  }
}

void AddChange(const std::string& path, const std::string& from, const std::string& to,
               google::protobuf::RepeatedPtrField<v1::FieldChange>* out) {
  if (from == to) return;
  v1::FieldChange* c = out->Add();
  c->set_path(path);
  c->set_from(from);
  c->set_to(to);
}

bool Same(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kNull: return true;
    case Value::Kind::kString: return a.str() == b.str();
    case Value::Kind::kInt: return a.int_value() == b.int_value();
    case Value::Kind::kDouble: return a.double_value() == b.double_value();
    case Value::Kind::kBool: return a.bool_value() == b.bool_value();
    case Value::Kind::kMap:
      if (a.entries().size() != b.entries().size()) return false;
      for (size_t k = 0; k < a.entries().size(); ++k) {
        if (a.entries()[k].first != b.entries()[k].first || !Same(a.entries()[k].second, b.entries()[k].second)) {
          return false;
        }
      }
      return true;
    case Value::Kind::kList:
      if (a.items().size() != b.items().size()) return false;
      for (size_t k = 0; k < a.items().size(); ++k) {
        if (!Same(a.items()[k], b.items()[k])) return false;
      }
      return true;
  }
  return false;
}

using Entry = std::pair<std::string, Value>;

std::vector<const Entry*> SortedEntries(const Value& v) {
  std::vector<const Entry*> out;
  out.reserve(v.entries().size());
  for (const Entry& e : v.entries()) out.push_back(&e);
  if (!std::is_sorted(out.begin(), out.end(), [](const Entry* x, const Entry* y) { return x->first < y->first; })) {
    std::sort(out.begin(), out.end(), [](const Entry* x, const Entry* y) { return x->first < y->first; });
  }
  return out;
}

// Field-by-field changes of two maps, in key order; map-valued fields go one
// level deeper (environment.A, tags.role, healthchecks.http). Equal fields
// are skipped before they are rendered.
void DiffMaps(const std::string& prefix, const Value& a, const Value& b, int depth,
              google::protobuf::RepeatedPtrField<v1::FieldChange>* out) {
  std::vector<const Entry*> am = SortedEntries(a), bm = SortedEntries(b);
  size_t i = 0, j = 0;
  while (i < am.size() || j < bm.size()) {
    const Value* x = nullptr;
    const Value* y = nullptr;
    const std::string* k;
    if (j == bm.size() || (i < am.size() && am[i]->first < bm[j]->first)) {
      k = &am[i]->first;
      x = &am[i++]->second;
    } else if (i == am.size() || bm[j]->first < am[i]->first) {
      k = &bm[j]->first;
      y = &bm[j++]->second;
    } else {
      k = &am[i]->first;
      x = &am[i++]->second;
      y = &bm[j++]->second;
      if (Same(*x, *y)) continue;
    }
    std::string path = prefix.empty() ? *k : absl::StrCat(prefix, ".", *k);
    if (depth > 0 && x && y && x->kind() == Value::Kind::kMap && y->kind() == Value::Kind::kMap) {
      DiffMaps(path, *x, *y, depth - 1, out);
    } else {
      AddChange(path, x ? Render(*x) : "", y ? Render(*y) : "", out);
    }
  }
}

Value GroupsValue(const Manifest& m) {
  Value v = Value::Map();
  for (const auto& kv : m.deployment_groups) {
    Value l = Value::List();
    for (const auto& s : kv.second) l.Add(Value::Str(s));
    v.Set(kv.first, l);
  }
  return v;
}

Value MetaValue(const Manifest& m) {
  Value v = Value::Map();
  for (const auto& kv : m.meta) v.Set(kv.first, Value::Str(kv.second));
  return v;
}

Value FirewallValue(const Manifest& m) {
  Value v = Value::Map();
  for (const auto& [name, r] : m.firewall) {
    v.Set(name, Value::Str(absl::StrCat(FirewallRuleSummary(r), r.enabled ? "" : " (disabled)",
                                        r.description.empty() ? "" : absl::StrCat(": ", r.description))));
  }
  return v;
}

v1::Diff DiffOne(const CompiledManifest* before_c, const CompiledManifest& after_c, const Value* after_tree) {
  v1::Diff d;
  static const CompiledManifest* kEmpty = new CompiledManifest();
  const CompiledManifest& bc = before_c ? *before_c : *kEmpty;
  const Manifest& b = bc.manifest;
  const Manifest& after = after_c.manifest;
  d.set_empty(before_c != nullptr && bc.hash == after_c.hash);
  // Both maps in name order, walked together: each service once.
  for (auto bn = b.services.begin(), an = after.services.begin();
       bn != b.services.end() || an != after.services.end();) {
    bool in_b = an == after.services.end() || (bn != b.services.end() && bn->first <= an->first);
    bool in_after = bn == b.services.end() || (an != after.services.end() && an->first <= bn->first);
    const std::string& name = in_b ? bn->first : an->first;
    auto bi = in_b ? bn++ : b.services.end();
    auto ai = in_after ? an++ : after.services.end();
    v1::ServiceChange* c = d.add_services();
    c->set_service(name);
    if (ai != after.services.end() && RunsToCompletion(ai->second)) {
      const ServiceSpec& r = ai->second;
      c->set_runs(r.service_type == "event" ? "event"
                                            : absl::StrCat("scheduled \"", r.schedule, "\" (", r.time_zone, ")"));
    }
    if (bi == b.services.end()) {
      c->set_action(v1::ServiceChange::CREATE);
      c->set_to_count(ai->second.count);
      c->set_to_image(ai->second.image);
      continue;
    }
    if (ai == after.services.end()) {
      c->set_action(v1::ServiceChange::DELETE);
      c->set_from_count(bi->second.count);
      c->set_from_image(bi->second.image);
      continue;
    }
    const ServiceSpec& x = bi->second;
    const ServiceSpec& y = ai->second;
    c->set_from_count(x.count);
    c->set_to_count(y.count);
    c->set_from_image(x.image);
    c->set_to_image(y.image);
    // Equal canonical specs: nothing to compare field by field.
    if (bc.spec_json.at(name) == after_c.spec_json.at(name)) {
      c->set_action(v1::ServiceChange::UNCHANGED);
      continue;
    }
    // The new spec's tree as Compile built it, when the caller kept it.
    const Value* yt = after_tree != nullptr ? ServiceSpecTree(*after_tree, name) : nullptr;
    Value built = yt == nullptr ? ServiceSpecValue(y) : Value();
    DiffMaps("", ServiceSpecValue(x), yt != nullptr ? *yt : built, 1, c->mutable_fields());
    // A changed health check rolls out like a changed instance spec: the
    // running instances keep the checks they were created with
    // (convergence::HealthSpecFor), as Kubernetes probes belong to the pod
    // template.
    bool spec = bc.instance_hash.at(name) != after_c.instance_hash.at(name) ||
                !SameChecks(x.healthchecks, y.healthchecks);
    c->set_spec_changed(spec);
    // A scheduled or event service's next run is made of the new spec;
    // nothing running is replaced.
    if (RunsToCompletion(y)) spec = false;
    if (spec) c->set_instances_replaced(std::min(x.count, y.count));
    c->set_rolls_out(spec && y.update_on_change == "rollout" && y.compute_type != "agent" && x.count > 0 &&
                     y.count > 0);
    c->set_in_place(spec && y.update_strategy == "reprovision" && x.delegate_dataset);
    c->set_action(c->fields().empty() ? v1::ServiceChange::UNCHANGED : v1::ServiceChange::UPDATE);
  }
  AddChange("description", b.description, after.description, d.mutable_project_fields());
  auto cns = [](const Manifest& m) { return m.cns ? (m.cns->empty() ? std::string("false") : *m.cns) : std::string(); };
  AddChange("cns", cns(b), cns(after), d.mutable_project_fields());
  DiffMaps("deployment_groups", GroupsValue(b), GroupsValue(after), 0, d.mutable_project_fields());
  DiffMaps("meta", MetaValue(b), MetaValue(after), 0, d.mutable_project_fields());
  DiffMaps("firewall", FirewallValue(b), FirewallValue(after), 0, d.mutable_project_fields());
  DiffMaps("fabric", b.fabric ? FabricValue(*b.fabric) : Value::Map(), after.fabric ? FabricValue(*after.fabric) : Value::Map(),
           2, d.mutable_project_fields());
  DiffMaps("volumes", VolumesValue(b.volumes), VolumesValue(after.volumes), 1, d.mutable_project_fields());
  return d;
}

// Each data center's plan when the new manifest lists data centers: its
// services as its entry makes them, against what it ran before (the old
// document's entry for it; a manifest without data centers ran only in the
// local one).
void AddDataCenterPlans(const CompiledManifest* before, const CompiledManifest& after, v1::Diff* d) {
  if (!after.document) return;
  const Manifest* bdoc = before && before->document ? before->document.get() : nullptr;
  std::vector<std::string> order = DataCenterOrder(after.document->datacenters);
  if (bdoc != nullptr) {
    for (const auto& dc : DataCenterOrder(bdoc->datacenters)) {
      if (std::find(order.begin(), order.end(), dc) == order.end()) order.push_back(dc);
    }
  }
  for (const std::string& dc : order) {
    v1::DataCenterPlan* plan = d->add_datacenters();
    plan->set_name(dc);
    plan->set_local(dc == after.datacenter);
    plan->set_listed_after(RunsInDataCenter(*after.document, dc));
    for (const auto& e : after.document->datacenters) plan->set_canary(plan->canary() || (e.name == dc && e.canary));
    std::optional<CompiledManifest> was;
    if (bdoc != nullptr) {
      plan->set_listed_before(RunsInDataCenter(*bdoc, dc));
      if (plan->listed_before()) was = Compile(*bdoc, dc);
    } else if (before != nullptr && dc == after.datacenter) {
      plan->set_listed_before(true);  // it ran here, and only here
    }
    const CompiledManifest* from = was ? &*was : plan->listed_before() ? before : nullptr;
    CompiledManifest to = dc == after.datacenter ? CompiledManifest() : Compile(*after.document, dc);
    v1::Diff one = DiffOne(from, dc == after.datacenter ? after : to, nullptr);
    plan->mutable_services()->Swap(one.mutable_services());
  }
}

}  // namespace

v1::Diff DiffManifests(const CompiledManifest* before_c, const CompiledManifest& after_c, bool per_datacenter,
                       const Value* after_tree) {
  v1::Diff d = DiffOne(before_c, after_c, after_tree);
  if (per_datacenter) AddDataCenterPlans(before_c, after_c, &d);
  return d;
}

}  // namespace mariposa
