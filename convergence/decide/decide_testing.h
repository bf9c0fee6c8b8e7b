// Test helpers for Decide: a goal from manifest text, instances, tasks.
#ifndef MARIPOSA_CONVERGENCE_DECIDE_TESTING_H_
#define MARIPOSA_CONVERGENCE_DECIDE_TESTING_H_

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convergence/decide/decide.h"
#include "projects/meta_drift.h"
#include "projects/manifest.h"

namespace mariposa::convergence::testing {

inline const absl::Time kT0 = absl::FromUnixSeconds(1800000000);

// The goal of a manifest, as version `number` (uuid "v<number>").
inline std::shared_ptr<const ProjectGoal> GoalOf(const std::string& text, int64_t number = 1) {
  ParseResult r = ParseManifest(text, ParseOptions{});
  if (!r.manifest) {
    std::string why;
    for (const auto& e : r.errors) absl::StrAppend(&why, e.path, ": ", e.message, "\n");
    std::fprintf(stderr, "GoalOf: manifest does not parse:\n%s", why.c_str());
    std::abort();
  }
  CompiledManifest c = Compile(*r.manifest);
  auto g = std::make_shared<ProjectGoal>();
  g->version_uuid = absl::StrCat("v", number);
  g->number = number;
  g->meta_defaults = c.manifest.meta;
  g->firewall = c.manifest.firewall;
  g->fabric = c.manifest.fabric;
  g->volumes = c.manifest.volumes;
  for (const auto& kv : c.manifest.services) {
    const ServiceSpec& s = kv.second;
    ServiceRecord rec{s.name, s.service_type, s.compute_type, s.brand, s.image, s.package, s.count,
                      c.instance_hash.at(s.name), c.spec_json.at(s.name), ""};
    g->services[s.name] = ServiceGoalSpec{rec, s, MetaKeysOf(s)};
  }
  return g;
}

inline Snapshot SnapshotOf(std::shared_ptr<const ProjectGoal> goal) {
  Snapshot s;
  s.project.uuid = "p-uuid";
  s.project.name = "p";
  s.project.current_version = goal->version_uuid;
  s.project.current_number = goal->number;
  for (int64_t n = 1; n <= goal->number; ++n) s.version_numbers[absl::StrCat("v", n)] = n;
  for (const auto& kv : goal->services) s.images[kv.first] = triton::Image{"img-" + kv.first, kv.first, "1", "active"};
  s.goal = std::move(goal);
  return s;
}

// A job of `kind` (create delete start stop on VMAPI; install on CNAPI) for
// `instance` of `service`.
inline JobRecord JobOf(const std::string& job_uuid, const std::string& kind, const std::string& service,
                       const std::string& instance = "") {
  JobRecord j;
  j.job_uuid = job_uuid;
  j.api = kind == "install" ? "cnapi" : "vmapi";
  j.kind = kind;
  j.service = service;
  j.instance = instance;
  j.sent_at = kT0;
  return j;
}

inline InstanceState Instance(const Snapshot& s, const std::string& service, int ordinal,
                              const std::string& state = "running", absl::Duration age = absl::Minutes(10)) {
  InstanceState i;
  i.uuid = absl::StrCat(service, "-uuid-", ordinal);
  i.service = service;
  i.alias = absl::StrCat(s.project.name, "-", service, "-", ordinal);
  i.state = state;
  i.health = "unknown";
  i.spec_hash = s.goal->services.at(service).record.spec_hash;
  // Created with the service's CNS names (the tag; DecideRetags).
  i.cns = CnsTagValue(s.project.name, service, s.goal->services.at(service).spec);
  i.version = s.goal->number;
  i.version_uuid = s.goal->version_uuid;
  i.created = kT0 - age;
  i.server_uuid = "server-1";
  // As Mariposa made it and its discovery jobs left it: out of CNS's
  // records until it was ready (decide_discovery.cc).
  if (DiscoveredThroughCns(s, service) && (state != "running" || !InstanceReady(i, kT0, s.goal->services.at(service).spec.start_window))) {
    i.cns_down = true;
    i.discovery = DiscoveryHoldValue(i.created, "not ready: created");
  }
  return i;
}

inline TaskRecord Task(const std::string& uuid, const std::string& kind, const std::string& state,
                       std::vector<std::string> services = {}) {
  TaskRecord t;
  t.uuid = uuid;
  t.project_uuid = "p-uuid";
  t.kind = kind;
  t.state = state;
  t.services = std::move(services);
  t.created_at = kT0 - absl::Minutes(1);
  t.actor = "alice";
  return t;
}

// How many of the decision's steps are of `kind` (and `reason`, if given).
inline int Count(const Decision& d, ActionKind kind, const std::string& reason = "") {
  int n = 0;
  for (const Step& s : d.steps) n += s.action.kind == kind && (reason.empty() || s.action.reason == reason);
  return n;
}

// Whether the decision has a problem of `kind`, said whole (error, reason,
// fix, impact).
inline bool HasProblem(const Decision& d, const std::string& kind) {
  for (const Problem& p : d.problems) {
    if (p.kind == kind) return !p.error.empty() && !p.reason.empty() && !p.fix.empty() && !p.impact.empty();
  }
  return false;
}

}  // namespace mariposa::convergence::testing

#endif  // MARIPOSA_CONVERGENCE_DECIDE_TESTING_H_
