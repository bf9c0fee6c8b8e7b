// Send: one sync's requests to Triton, in four steps —
//   build      VmRequests (one per step: create, delete, stop, start,
//              reprovision, preserve) and OtherRequests (CNAPI agent
//              installs and uninstalls, IMGAPI imports)
//   send       SendWaves: in parallel, a create whose locality names a
//              create of this step in a later wave, each wave only while
//              this node holds the project's lease
//   count      CountSent: jobs to follow, events, refusals
//   record     the jobs, each task's step, and refusals counted like failed
//              jobs (CountRefused)
#include <algorithm>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/ids.h"
#include "common/log.h"
#include "convergence/decide/images.h"
#include "convergence/informer/observer.h"
#include "convergence/sync_helpers.h"
#include "convergence/decide/placement.h"
#include "convergence/execute/sender.h"
#include "convergence/reconciler.h"
#include "projects/meta_drift.h"
#include "projects/volumes.h"
#include "projects/interpolate.h"

namespace mariposa::convergence {

namespace {

// Triton brand for a service's compute type.
std::string BrandFor(const ServiceGoalSpec& g) {
  if (!g.record.brand.empty()) return g.record.brand;
  if (g.spec.compute_type == "docker") return "lx";
  if (g.spec.compute_type == "kvm") return "bhyve";
  if (g.spec.compute_type == "core") return "joyent-minimal";
  return "joyent";
}

// Where a service's environment and command (interpolated) go: a Docker container as sdc-docker makes one (`docker: true`,
// internal_metadata docker:env as a JSON list of K=V, docker:cmd as
// ["/bin/sh", "-c", command], like a Dockerfile's shell-form CMD); any other
// instance gets customer_metadata `mariposa:env` (a JSON object) and, when
// there is a command, a `user-script` that exports the environment and runs
// it (the guest runs user-script at every boot).
void Runtime(const ServiceSpec& spec, const std::map<std::string, std::string>& environment, const std::string& command,
             triton::CreateVmRequest* req) {
  if (spec.compute_type == "docker") {
    req->docker = true;
    nlohmann::json env = nlohmann::json::array();
    for (const auto& kv : environment) env.push_back(kv.first + "=" + kv.second);
    req->internal_metadata["docker:env"] = env.dump();
    if (!command.empty()) req->internal_metadata["docker:cmd"] = nlohmann::json({"/bin/sh", "-c", command}).dump();
    return;
  }
  if (!environment.empty()) req->customer_metadata["mariposa:env"] = nlohmann::json(environment).dump();
  if (command.empty()) return;
  std::string script = "#!/bin/sh\n";
  for (const auto& kv : environment) {
    absl::StrAppend(&script, "export ", kv.first, "='", absl::StrReplaceAll(kv.second, {{"'", "'\\''"}}), "'\n");
  }
  absl::StrAppend(&script, command, "\n");
  req->customer_metadata["user-script"] = script;
}

// The dimensions of an instance when there is no PAPI: resources as given
// (memory 1 GiB when unset), no billing_id.
triton::Dimensions RawDimensions(const ServiceSpec& spec) {
  triton::Dimensions d;
  d.ram = 1024;
  ApplyResources(spec, &d);
  return d;
}

}  // namespace

// What VMAPI is asked to make of one instance of `g` (a create, or the
// update before an in-place reprovision): image, package, networks, tags,
// metadata with {{ }} filled in, and the placement rules' values.
absl::Status Sender::InstanceRequest(const Snapshot& s, const ServiceGoalSpec& g, const std::string& alias,
                                         const std::string& uuid, triton::CreateVmRequest* req,
                                         std::vector<PlacementRuleText>* rules) const {
  const ProjectRecord& p = s.project;
  req->uuid = uuid;  // chosen by the caller: a retried create cannot make a second VM
  req->owner_uuid = OwnerOf(p, g.spec, options_);
  req->alias = alias;
  static const Snapshot::Recipe kNone;
  auto found = s.recipes.find(g.record.name);  // Gather makes one for every non-agent service
  const Snapshot::Recipe& recipe = found != s.recipes.end() ? found->second : kNone;
  req->brand = recipe.brand.empty() ? BrandFor(g) : recipe.brand;
  req->image_uuid = s.images.at(g.record.name).uuid;
  req->delegate_dataset = g.spec.delegate_dataset;
  for (const VolumeMount& m : g.spec.volumes) {
    req->volumes.push_back({VolapiVolumeName(p.name, m.volume), m.mountpoint, m.mode});
  }
  const Sized sized = recipe.sized ? *recipe.sized : Sized{"", RawDimensions(g.spec)};
  const triton::Dimensions& dim = sized.dim;
  req->dim = sized.dim;
  req->networks = recipe.networks.empty() ? std::vector<std::string>{options_.network_uuid} : recipe.networks;
  req->tags = g.spec.tags;
  req->tags[kTagProject] = p.uuid;
  req->tags[kTagService] = g.record.name;
  InPlaceSettings in_place = InPlaceFor(s, std::nullopt, g.record.name);
  if (!in_place.cns.empty()) req->tags[kCnsServicesTag] = in_place.cns;
  if (!in_place.firewall.empty()) req->tags[kTagFirewall] = in_place.firewall;
  req->firewall_enabled = in_place.firewall_enabled.value_or(false);
  req->tags[kTagVersion] = p.current_version;
  req->tags[kTagSpec] = g.record.spec_hash;
  if (!recipe.meta_hash.empty()) req->tags[kTagMeta] = recipe.meta_hash;
  if (g.spec.compute_type == "core") {  // what sdcadm and Triton's tools find core zones by
    req->tags[kTagCoreRole] = g.record.name;
    req->tags[kTagCoreType] = "core";
  }
  if (!g.spec.ports.empty()) {
    std::string ports;
    for (int port : g.spec.ports) absl::StrAppend(&ports, ports.empty() ? "" : ",", port);
    req->tags["ports"] = ports;
  }
  req->customer_metadata = g.spec.mdata;
  // {{ }} values are filled in now that the instance has a name and uuid.
  InterpolationContext ctx;
  ctx.meta = s.meta;
  ctx.project_name = p.name;
  ctx.project_uuid = p.uuid;
  ctx.project_version = absl::StrCat(p.current_number);
  ctx.service_name = g.record.name;
  ctx.scale = g.record.count;
  ctx.package_name = sized.package_name.empty() ? g.record.package : sized.package_name;
  ctx.package_ram = dim.ram;
  if (dim.quota > 0) ctx.package_disk = dim.quota * 1024;
  if (dim.cpu_cap > 0) ctx.package_cpu = dim.cpu_cap;
  ctx.instance_name = req->alias;
  ctx.instance_uuid = req->uuid;
  ctx.leave_unknown = true;  // the server is not known before placement
  absl::Status prepared = absl::OkStatus();
  auto fill = [&](std::string* value) {  // the first failure is kept; later values are left alone
    if (!prepared.ok()) return;
    auto v = Interpolate(*value, ctx);
    if (v.ok()) *value = *v;
    else prepared = v.status();
  };
  std::map<std::string, std::string> environment = g.spec.environment;
  std::string command = g.spec.command;
  for (auto* values : {&req->customer_metadata, &req->tags, &environment}) {
    for (auto& kv : *values) {
      if (kv.first.rfind("mariposa.", 0) != 0) fill(&kv.second);
    }
  }
  fill(&command);
  for (const PlacementRule& rule : g.spec.placement) {
    std::string value = rule.value;
    fill(&value);
    rules->push_back({rule.key, rule.equal, rule.soft, value});
  }
  Runtime(g.spec, environment, command, req);
  // What it is made with, to notice a change by hand (observer.h).
  req->tags[kTagMade] =
      MadeFingerprint(req->dim.billing_id, req->dim.ram, req->tags, req->customer_metadata, !req->dim.billing_id.empty());
  return prepared;
}

namespace {

// A request refused outright (no job): counted at once (CountFinished).
FinishedJob Refused(const JobRecord& j, const absl::Status& st) {
  return FinishedJob{j, false, std::string(st.message())};
}

// Waits for a job that must be done before the next call (only the last
// job of a request is followed): an error unless it succeeded.
absl::Status Finished(triton::VmapiClient* vmapi, const absl::StatusOr<triton::JobRef>& job, const char* what) {
  if (!job.ok()) return job.status();
  if (job->job_uuid.empty()) return absl::OkStatus();  // done at once (no job)
  auto j = vmapi->WaitJob(job->job_uuid, absl::Minutes(1));
  if (!j.ok()) return j.status();
  if (j->execution != "succeeded") {
    return absl::AbortedError(absl::StrCat(what, " job ", j->uuid, " ", j->execution, j->error.empty() ? "" : ": ",
                                           j->error));
  }
  return absl::OkStatus();
}

// The VMAPI update that brings `current` to what `want` would create, before
// an in-place reprovision: metadata replaced (keys no longer wanted
// removed; of internal_metadata only sdc-docker's docker:* keys, which are
// Mariposa's), the package's values set.
triton::UpdateVmRequest InPlaceUpdate(const triton::CreateVmRequest& want, const triton::Vm& current) {
  triton::UpdateVmRequest u;
  u.customer_metadata = want.customer_metadata;
  u.internal_metadata = want.internal_metadata;
  for (const auto& kv : current.customer_metadata) {
    if (!want.customer_metadata.count(kv.first)) u.remove_customer_metadata.push_back(kv.first);
  }
  for (const auto& kv : current.internal_metadata) {
    if (!want.internal_metadata.count(kv.first) && kv.first.rfind("docker:", 0) == 0) {
      u.remove_internal_metadata.push_back(kv.first);
    }
  }
  u.dim = want.dim;
  return u;
}

// What a retag sets and removes in place: CNS names, the firewall tag,
// firewall_enabled; `said` for the job's reason.
struct Retag {
  std::map<std::string, std::string> set;
  std::vector<std::string> remove, said;
  std::optional<bool> enable;
};

Retag RetagOf(const InstanceState& now, const InPlaceSettings& want) {
  Retag r;
  for (const auto& [tag, is, to, what] :
       {std::tuple{kCnsServicesTag, now.cns, want.cns, "cns-names"}, {kTagFirewall, now.firewall, want.firewall, "firewall tag"}}) {
    if (is == to) continue;
    if (to.empty()) r.remove.push_back(tag);
    else r.set[tag] = to;
    r.said.push_back(absl::StrCat(what, ": ", to.empty() ? "none" : to));
  }
  if (want.firewall_enabled && *want.firewall_enabled != now.firewall_enabled) {
    r.enable = want.firewall_enabled;
    r.said.push_back(absl::StrCat("firewall ", *r.enable ? "on" : "off"));
  }
  return r;
}

using Call = std::function<absl::StatusOr<triton::JobRef>()>;

// In place (update.strategy reprovision): the new tags and metadata first,
// then VMAPI reprovision to the new image.
Call ReprovisionCall(triton::VmapiClient* vmapi, triton::VmRef id, triton::CreateVmRequest want) {
  return [vmapi, id, want = std::move(want)]() -> absl::StatusOr<triton::JobRef> {
    auto vm = vmapi->GetVm(id);
    if (!vm.ok()) return vm.status();
    triton::UpdateVmRequest u = InPlaceUpdate(want, *vm);
    auto updated = vmapi->Update(id, u);
    if (!updated.ok()) return updated.status();
    auto tagged = vmapi->SetTags(id, want.tags, /*replace=*/true);
    if (!tagged.ok()) return tagged.status();
    return vmapi->Reprovision(id, want.image_uuid);
  };
}

// An instance changed by hand put back as a create would make it now: its
// metadata and package set back, its tags replaced.
Call PutBackCall(triton::VmapiClient* vmapi, triton::VmRef id, std::shared_ptr<triton::CreateVmRequest> want,
                 std::optional<bool> enable) {
  return [vmapi, id, want, enable]() -> absl::StatusOr<triton::JobRef> {
    auto vm = vmapi->GetVm(id);
    if (!vm.ok()) return vm.status();
    triton::UpdateVmRequest u = InPlaceUpdate(*want, *vm);
    // A user's drain (triton.cns.status) is theirs.
    u.remove_customer_metadata.erase(std::remove(u.remove_customer_metadata.begin(), u.remove_customer_metadata.end(),
                                                 std::string(kCnsStatusKey)),
                                     u.remove_customer_metadata.end());
    u.firewall_enabled = enable;
    // Done before the tags (followed) are set: the next sync must not see
    // the metadata still changed.
    if (absl::Status st = Finished(vmapi, vmapi->Update(id, u), "update"); !st.ok()) return st;
    return vmapi->SetTags(id, want->tags, /*replace=*/true);
  };
}

// The retag's tags removed and set, then firewall_enabled; the job followed
// is the last one.
Call RetagCall(triton::VmapiClient* vmapi, triton::VmRef id, Retag change) {
  return [vmapi, id, change = std::move(change)]() -> absl::StatusOr<triton::JobRef> {
    absl::StatusOr<triton::JobRef> last = absl::FailedPreconditionError("nothing to set in place");
    for (const std::string& tag : change.remove) {
      if (!(last = vmapi->DeleteTag(id, tag)).ok()) return last;
    }
    if (!change.set.empty() && !(last = vmapi->SetTags(id, change.set, false)).ok()) return last;
    if (change.enable) {
      triton::UpdateVmRequest u;
      u.firewall_enabled = change.enable;
      last = vmapi->Update(id, u);
    }
    return last;
  };
}

// stop.preserve_stopped: tagged first (it stops counting at once), then
// stopped when it still runs; the job followed is the last one.
Call PreserveCall(triton::VmapiClient* vmapi, triton::VmRef id, bool running, absl::Duration timeout,
                  std::string mark) {
  return [vmapi, id, running, timeout, mark = std::move(mark)]() -> absl::StatusOr<triton::JobRef> {
    auto tagged = vmapi->SetTags(id, {{kTagPreserved, mark}}, false);
    if (!tagged.ok() || !running) return tagged;
    // Tagged before it stops: a stopped instance without the tag would read
    // as broken and be preserved again (the same event twice).
    if (absl::Status st = Finished(vmapi, tagged, "tag"); !st.ok()) return st;
    return vmapi->Act(id, triton::VmAction::kStop, timeout);
  };
}

}  // namespace

std::vector<JobRecord> Sender::Send(const Snapshot& s, const std::vector<Step>& steps,
                                        const std::vector<AgentInstall>& installs,
                                        const std::vector<ImageImport>& imports,
                                        const std::vector<AgentUninstall>& uninstalls,
                                        std::map<std::string, ServiceMemory>* memory, SyncResult* r,
                                        std::vector<EventRecord>* events, std::vector<Problem>* problems,
                                        std::function<absl::Status()>* record_later) {
  const ProjectRecord& p = s.project;
  Outbox out;
  VmRequests(s, steps, &out, r);
  OtherRequests(p, installs, uninstalls, imports, &out);
  SendWaves(p, &out, problems);
  std::vector<JobRecord> sent = CountSent(p, &out, r, events);
  if (!sent.empty()) {
    // A step of a task: one sync that sent it work, recorded in the jobs'
    // transaction with the events so far (the caller's, then instance.create
    // ... of what was sent, in that order): one commit per round, not one
    // more per task and one more for the events.
    std::set<std::string> stepped;
    for (const JobRecord& j : sent) {
      if (!j.task_uuid.empty()) stepped.insert(j.task_uuid);
    }
    std::vector<std::pair<std::string, TaskProgress>> steps_taken;
    for (const std::string& t : stepped) steps_taken.emplace_back(t, TaskProgress{}).second.steps_done = 1;
    if (record_later != nullptr) {
      *record_later = [store = store_, jobs = sent, steps_taken = std::move(steps_taken), told = std::move(*events)] {
        absl::Status recorded = store->RecordJobs(jobs, steps_taken, told);
        if (!recorded.ok()) (void)store->AppendEvents(told);  // the events at least, as the caller's own append would
        return recorded;
      };
      events->clear();
    } else {
      absl::Status recorded = store_->RecordJobs(sent, steps_taken, *events);
      // Written, or left to the caller's own append (the requests went out
      // all the same; a store that refused this may take that write).
      if (recorded.ok()) events->clear();
      StoreError(p.name, problems, kJobsRecord, recorded);
    }
  }
  CountRefused(s, std::move(out.refused), memory, events, problems);
  return sent;
}

// Requests: built in order (placement sees the creates before it).
void Sender::VmRequests(const Snapshot& s, const std::vector<Step>& steps, Outbox* out, SyncResult* r) {
  // Placement candidates (only when a create has rules) and the instances
  // the steps name.
  bool rules = false;
  for (const Step& st : steps) {
    if (st.action.kind != ActionKind::kCreate) out->by_uuid[st.action.instance] = nullptr;
    else rules |= !s.goal->services.at(st.action.service).spec.placement.empty();
  }
  if (rules) out->candidates = s.labelled_vms;
  for (const InstanceState& i : s.instances) {
    auto named = out->by_uuid.find(i.uuid);
    if (named != out->by_uuid.end()) named->second = &i;
    if (rules && i.state != "destroyed") out->candidates.push_back({i.uuid, i.alias, i.service, {}});
  }
  for (const Step& st : steps) {
    if (st.action.kind == ActionKind::kCreate) CreateRequest(s, st, out, r);
    else VmActionRequest(s, st, out, r);
  }
}

JobRecord Sender::StepJob(const Snapshot& s, const Step& st) const {
  JobRecord j;
  j.project_uuid = s.project.uuid;
  j.api = "vmapi";
  j.task_uuid = st.task;
  j.service = st.action.service;
  j.reason = st.action.reason;
  j.sent_at = clock_->Now();
  return j;
}

// A step on an existing instance: delete, reprovision, preserve, stop, start.
void Sender::VmActionRequest(const Snapshot& s, const Step& st, Outbox* out, SyncResult* r) {
  JobRecord j = StepJob(s, st);
  j.instance = st.action.instance;
  auto inst = out->by_uuid.find(j.instance);
  j.alias = inst != out->by_uuid.end() && inst->second != nullptr && !inst->second->alias.empty() ? inst->second->alias
            : !st.alias.empty()                                                                 ? st.alias
                                                                                                : j.service;
  absl::Duration timeout;  // stop.timeout of the service
  std::string owner = TenantOf(s.project, options_);  // every call names the account the VM must belong to
  if (s.goal) {
    auto g = s.goal->services.find(j.service);
    if (g != s.goal->services.end()) {
      timeout = g->second.spec.stop_timeout;
      owner = OwnerOf(s.project, g->second.spec, options_);
    }
  }
  if (inst != out->by_uuid.end() && inst->second != nullptr && !inst->second->owner_uuid.empty()) {
    owner = inst->second->owner_uuid;  // as listed (under one of the project's accounts)
  }
  const triton::VmRef id(j.instance, owner);
  if (st.action.kind == ActionKind::kDelete) {
    j.kind = "delete";
    out->requests.push_back({j, [this, id] { return vmapi_->DeleteVm(id); }});
  } else if (st.action.kind == ActionKind::kReprovision) {
    // In place (update.strategy reprovision): the new tags and metadata
    // first, then VMAPI reprovision to the new image; an instance left on
    // its old image by a failed reprovision reads as outdated (GoalFor).
    j.kind = "reprovision";
    const ServiceGoalSpec* g = s.goal ? &s.goal->services.at(j.service) : nullptr;
    if (g == nullptr || !s.images.count(j.service)) return;  // Decide held it
    triton::CreateVmRequest want;
    std::vector<PlacementRuleText> ignored;
    absl::Status prepared = InstanceRequest(s, *g, j.alias, id.uuid, &want, &ignored);
    if (!prepared.ok()) {
      out->refused.push_back(Refused(j, prepared));
      ++r->failed;
      return;
    }
    out->requests.push_back({j, ReprovisionCall(vmapi_, id, std::move(want))});
  } else if (st.action.kind == ActionKind::kRetag) {
    // In place (DecideRetags): CNS names and the firewall tag set or
    // removed, firewall_enabled turned on or off; the job followed is the
    // last one.
    j.kind = "retag";
    InstanceState now = inst != out->by_uuid.end() && inst->second != nullptr ? *inst->second : InstanceState{};
    Retag change = RetagOf(now, InPlaceFor(s, std::nullopt, j.service));
    std::vector<std::string>& said = change.said;
    if (!now.hand_changed.empty()) {
      // Changed by hand in VMAPI: what a create would make of it now (its
      // metadata and package set back, its tags replaced, its version tag
      // kept), as before an in-place reprovision.
      const ServiceGoalSpec* g = s.goal ? &s.goal->services.at(j.service) : nullptr;
      if (g == nullptr || !s.images.count(j.service)) return;  // Decide held it
      auto want = std::make_shared<triton::CreateVmRequest>();
      std::vector<PlacementRuleText> ignored;
      absl::Status prepared = InstanceRequest(s, *g, j.alias, id.uuid, want.get(), &ignored);
      if (!now.version_uuid.empty()) want->tags[kTagVersion] = now.version_uuid;
      said.push_back(absl::StrCat(kPutBack, absl::StrReplaceAll(now.hand_changed, {{"+", ", "}})));
      j.reason = absl::StrJoin(said, "; ");
      if (!prepared.ok()) {
        out->refused.push_back(Refused(j, prepared));
        ++r->failed;
        return;
      }
      out->requests.push_back({j, PutBackCall(vmapi_, id, want, change.enable)});
      return;
    }
    j.reason = absl::StrJoin(said, "; ");
    out->requests.push_back({j, RetagCall(vmapi_, id, std::move(change))});
  } else if (st.action.kind == ActionKind::kDiscovery) {
    // In place (decide_discovery.cc): out of CNS's records with Mariposa's
    // hold beside it, or back in; one VMAPI update.
    j.kind = "discovery";
    triton::UpdateVmRequest u;
    if (DiscoveryChange c = ParseDiscoveryReason(st.action.reason); c.down) {
      u.customer_metadata[kCnsStatusKey] = "down";
      u.internal_metadata[kDiscoveryKey] = DiscoveryHoldValue(j.sent_at, c.why);
    } else {
      u.remove_customer_metadata = {kCnsStatusKey};
      u.remove_internal_metadata = {kDiscoveryKey};
    }
    out->requests.push_back({j, [this, id, u] { return vmapi_->Update(id, u); }});
  } else if (st.action.kind == ActionKind::kPreserve) {
    // stop.preserve_stopped: tagged first (it stops counting at once),
    // then stopped when it still runs; the job followed is the last one.
    j.kind = "preserve";
    bool running = inst != out->by_uuid.end() && inst->second != nullptr && inst->second->state == "running";
    std::string mark = absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", clock_->Now(), absl::UTCTimeZone()), " ", j.reason);
    out->requests.push_back({j, PreserveCall(vmapi_, id, running, timeout, mark)});
  } else {
    bool stop = st.action.kind == ActionKind::kStop;
    j.kind = stop ? "stop" : "start";
    out->requests.push_back({j, [this, id, stop, timeout] {
                          return stop ? vmapi_->Act(id, triton::VmAction::kStop, timeout)
                                      : vmapi_->Act(id, triton::VmAction::kStart);
                        }});
  }
}

void Sender::CreateRequest(const Snapshot& s, const Step& st, Outbox* out, SyncResult* r) {
  JobRecord j = StepJob(s, st);
  const ServiceGoalSpec& g = s.goal->services.at(st.action.service);
  if (!s.images.count(g.record.name)) return;  // Decide held it
  auto req = std::make_shared<triton::CreateVmRequest>();
  std::vector<PlacementRuleText> rules;
  absl::Status prepared = InstanceRequest(s, g, st.alias, NewUuid(), req.get(), &rules);
  if (!st.action.run.empty()) req->tags[kTagRun] = st.action.run;  // the run it belongs to (decide_runs.cc)
  if (MadeOutOfDiscovery(s, g.record.name, options_.health != nullptr)) {
    // Out of CNS's records until its readiness checks pass (decide_discovery.cc).
    req->customer_metadata[kCnsStatusKey] = "down";
    req->internal_metadata[kDiscoveryKey] = DiscoveryHoldValue(clock_->Now(), "not ready: created");
  }
  j.kind = "create";
  j.instance = req->uuid;
  j.alias = req->alias;
  if (!prepared.ok()) {
    out->refused.push_back(Refused(j, prepared));
    ++r->failed;
    return;
  }
  req->locality = LocalityFor(rules, out->candidates);
  // VMAPI places a create against the VMs it knows: one whose locality
  // names a create of this step is sent after that one was accepted (a
  // wave later), so a hard rule between siblings holds.
  int wave = 0;
  if (req->locality) {
    for (const auto* list : {&req->locality->near, &req->locality->far}) {
      for (const std::string& u : *list) {
        auto w = out->this_step.find(u);
        if (w != out->this_step.end()) wave = std::max(wave, w->second + 1);
      }
    }
  }
  out->candidates.push_back({req->uuid, req->alias, g.record.name, req->tags});  // siblings of later creates
  out->this_step[req->uuid] = wave;
  out->waves = std::max(out->waves, wave + 1);
  out->requests.push_back({j, [this, req] { return vmapi_->CreateVm(*req); }, wave});
}

void Sender::OtherRequests(const ProjectRecord& project, const std::vector<AgentInstall>& installs,
                               const std::vector<AgentUninstall>& uninstalls, const std::vector<ImageImport>& imports,
                               Outbox* out) {
  // The non-VM jobs: CNAPI agent installs and uninstalls, IMGAPI imports.
  auto record = [&](const char* api, const char* kind, const std::string& service, const std::string& instance,
                    const std::string& alias, std::string reason, const std::string& task) {
    JobRecord j;
    j.project_uuid = project.uuid;
    j.api = api;
    j.task_uuid = task;
    j.service = service;
    j.instance = instance;
    j.alias = alias;
    j.kind = kind;
    j.reason = std::move(reason);
    j.sent_at = clock_->Now();
    return j;
  };
  auto task_ref = [](absl::StatusOr<std::string> id) -> absl::StatusOr<triton::JobRef> {
    if (!id.ok()) return id.status();
    triton::JobRef ref;
    ref.job_uuid = *id;
    return ref;
  };
  triton::CnapiClient* cnapi = options_.cnapi;
  for (const AgentInstall& a : cnapi != nullptr ? installs : std::vector<AgentInstall>{}) {
    std::string server = a.server, image = a.image_uuid;
    out->requests.push_back({record("cnapi", "install", a.service, a.server, a.label, "agent-rollout", a.task),
                        [=] { return task_ref(cnapi->InstallAgent(server, image)); }});
  }
  for (const AgentUninstall& u : cnapi != nullptr ? uninstalls : std::vector<AgentUninstall>{}) {
    std::string server = u.server, name = u.name;
    out->requests.push_back({record("cnapi", "uninstall", u.service, u.server, u.name, "service removed", ""),
                        [=] { return task_ref(cnapi->UninstallAgents(server, {name})); }});
  }
  for (const ImageImport& im : imports) {
    triton::ImgapiClient* imgapi = imgapi_;
    std::string uuid = im.image_uuid, source = im.source;
    out->requests.push_back({record("imgapi", "import", im.service, im.image_uuid, im.label,
                               absl::StrCat(HumanBytes(im.size), " from ", im.source), im.task),
                        [=] { return imgapi->ImportRemote(uuid, source); }});
  }
}

void Sender::SendWaves(const ProjectRecord& project, Outbox* out, std::vector<Problem>* problems) {
  for (int wave = 0; wave < out->waves; ++wave) {
    // Several nodes: a wave goes out only while this node still holds the
    // project's lease, by the database's clock, with time to act.
    if (const Fence* f = ScopedFence::Current(); f != nullptr && !out->requests.empty()) {
      if (absl::Status held = store_->CheckFence(*f); !held.ok()) {
        LogWarn("lease lost; nothing more is sent", {{"project", project.name}, {"error", held.ToString()}});
        problems->push_back({"lease", "", "this node no longer holds the project's lease", held.ToString(),
                             "none: the node holding it carries on (`mariposa nodes`)",
                             "requests not sent by this node are decided again by the holder"});
        break;
      }
    }
    std::vector<Request*> batch;
    for (Request& q : out->requests) {
      if (q.wave == wave) {
        batch.push_back(&q);
        q.attempted = true;
      }
    }
    std::vector<std::function<void()>> sends;
    for (Request* q : batch) sends.push_back([q] { q->result = q->call(); });
    RunParallel(&sends, options_.send_parallel);
  }
}

// The answers: jobs to follow (and events), or refusals to count.
std::vector<JobRecord> Sender::CountSent(const ProjectRecord& project, Outbox* out, SyncResult* r,
                                             std::vector<EventRecord>* events) {
  std::vector<JobRecord> sent;
  for (Request& q : out->requests) {
    if (!q.attempted) continue;
    JobRecord& j = q.job;
    if (q.result.ok()) {
      j.job_uuid = q.result->job_uuid;
      sent.push_back(j);
      if (j.kind == "create") ++r->created;
      else if (j.kind == "delete" || j.kind == "preserve") ++r->deleted;
      else ++r->changed;
      events->push_back(EventRecord{0, clock_->Now(), "mariposad", project.name,
                                    j.kind == "install"    ? "agent.install-started"
                                    : j.kind == "uninstall" ? "agent.uninstall-started"
                                    : j.kind == "import"    ? "image.import-started"
                                                         : absl::StrCat("instance.", j.kind),
                                    j.instance,
                                    j.api == "cnapi" ? absl::StrCat(j.alias, " on server ", j.instance, " (", j.reason, ")")
                                                     : absl::StrCat(j.alias, " (", j.reason, ")")});
      continue;
    }
    const absl::Status& st = q.result.status();
    NoteApi(j.api == "cnapi" ? "CNAPI" : j.api == "imgapi" ? "IMGAPI" : "VMAPI", st);
    if (j.kind == "delete" && absl::IsNotFound(st)) continue;  // gone already
    if (j.kind == "import" && absl::IsAlreadyExists(st)) {
      // Imported already (by hand, or a lost reply) — if IMGAPI has it active.
      auto there = imgapi_->GetImage(j.instance);
      if (there.ok() && there->state == "active") {
        ImagesChanged();
        continue;
      }
      ++r->failed;
      out->refused.push_back(Refused(j, absl::FailedPreconditionError(absl::StrCat(
                                       "IMGAPI holds image ", j.alias, " (", j.instance, ") in state ",
                                       there.ok() ? there->state : std::string(there.status().message()),
                                       "; delete it there and the import is tried again"))));
      continue;
    }
    if (j.kind == "create" && absl::IsDeadlineExceeded(st)) {
      // The reply was lost; the VM may still come: wait for it (Gather).
      j.job_uuid = absl::StrCat("create:", j.instance);
      sent.push_back(j);
      continue;
    }
    LogWarn("request failed", {{"project", project.name}, {"what", absl::StrCat(j.kind, " ", j.alias)},
                               {"error", st.ToString()}});
    ++r->failed;
    out->refused.push_back(Refused(j, st));
  }
  return sent;
}

// Requests refused outright, counted now by the same accounting as a job
// that fails later, so the backoff and the crash loop start from them.
void Sender::CountRefused(const Snapshot& s, std::vector<FinishedJob> refused,
                              std::map<std::string, ServiceMemory>* memory, std::vector<EventRecord>* events,
                              std::vector<Problem>* problems) {
  const ProjectRecord& p = s.project;
  if (refused.empty()) return;
  // Counted now, by the same accounting as a job that fails later, so the
  // backoff and the crash loop start from this refusal.
  Snapshot r_snap;
  r_snap.project = p;
  r_snap.goal = s.goal;
  r_snap.policy = s.policy;
  r_snap.jitter = s.jitter;
  r_snap.memory = *memory;
  r_snap.finished = std::move(refused);
  Decision counted = CountFinished(r_snap, clock_->Now());
  *memory = std::move(counted.memory);
  for (EventRecord& e : counted.events) events->push_back(std::move(e));
  for (size_t k = 0; k < r_snap.finished.size(); ++k) {
    const JobRecord& j = r_snap.finished[k].job;
    if (!j.task_uuid.empty()) {
      StoreError(p.name, problems, "a task's progress", store_->AddTaskProgress(j.task_uuid, counted.job_progress[k].second));
    }
  }
}

}  // namespace mariposa::convergence
