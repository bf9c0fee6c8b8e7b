#include "convergence/reconciler.h"

#include "convergence/decide/images.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>
#include <system_error>

#include <nlohmann/json.hpp>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "convergence/decide/images.h"
#include "convergence/memory_codec.h"
#include "projects/meta_drift.h"
#include "convergence/informer/observer.h"
#include "convergence/sync_helpers.h"
#include "convergence/decide/placement.h"
#include "projects/task_queue.h"
#include "projects/firewall.h"
#include "projects/interpolate.h"
#include "projects/volumes.h"

namespace mariposa::convergence {

Reconciler::Reconciler(ProjectStore* store, triton::VmapiClient* vmapi, triton::ImgapiClient* imgapi,
                       const Clock* clock, ReconcilerOptions options)
    : store_(store),
      vmapi_(vmapi),
      imgapi_(imgapi),
      clock_(clock),
      options_(std::move(options)),
      sender_(store, vmapi, imgapi, clock, &options_,
              Sender::Hooks{[this](const std::string& api, const absl::Status& st) { NoteApi(api, st); },
                            [this] { ImagesChanged(); }}),
      owned_(clock, &options_,
             OwnedObjects::Hooks{[this](const std::string& api, const absl::Status& st) { NoteApi(api, st); },
                                 [this](const ProjectRecord& p, const char* api, const OwnedObjects::ChangeOutcome& o) {
                                   return execute_.Intend(p, api, o);
                                 },
                                 [this] { return HoldsFence(store_); }}),
      queue_(clock, absl::Seconds(1), absl::Minutes(2)),
      vms_(vmapi,
           VmCacheOptions{options_.full_observe, options_.relist, options_.audit, options_.observe_parallel},
           VmCacheHooks{[this](const absl::Status& st) { NoteApi("VMAPI", st); },
                        [this](const std::string& project) {
                          {
                            absl::MutexLock l(&mu_);
                            if (auto it = projects_.find(project); it != projects_.end()) it->second.quiet = false;
                          }
                          queue_.Add(project);
                        }}),
      triton_(clock,
              TritonCatalogOptions{imgapi, options_.image_source, options_.image_source_url, options_.image_channel,
                                   options_.papi, options_.napi, options_.volapi},
              [this](const std::string& api, const absl::Status& st) { NoteApi(api, st); }),
      gather_(store, vmapi, imgapi, clock, &options_, &goals_, &vms_, &triton_, &owned_,
              Gatherer::Shared{&mu_, &projects_, &api_, &latency_mu_, &latency_},
              Gatherer::Hooks{[this](const std::string& api, const absl::Status& st) { NoteApi(api, st); }}),
      execute_(store, clock, &options_, &sender_, &owned_, &vms_, Executor::Shared{&mu_, &projects_}),
      data_center_(store, vmapi, &options_, &triton_, &gather_, &owned_,
                   [this](const std::string& api, const absl::Status& st) { NoteApi(api, st); }) {
  goals_.set_datacenter(options_.datacenter);
}

Reconciler::~Reconciler() { Stop(); }

std::string Reconciler::HealthOf(const std::string& instance) const {
  if (options_.health == nullptr) return "";
  auto h = options_.health->InstanceHealth(instance);
  return h ? health::HealthName(*h) : "";
}

std::map<std::string, std::vector<Problem>> Reconciler::LastProblems() const {
  absl::MutexLock l(&mu_);
  std::map<std::string, std::vector<Problem>> out;
  std::set<std::string> apis;
  for (const auto& kv : projects_) {
    for (const auto* list : {&kv.second.decided, &kv.second.executed}) {
      for (const Problem& pr : *list) {
        if (pr.kind != "triton-unreachable") out[kv.second.name].push_back(pr);
        else if (apis.insert(pr.error).second) out[""].push_back(pr);
      }
    }
  }
  return out;
}

std::vector<Problem> Reconciler::ExecuteProblems(const std::string& project_uuid) const {
  absl::MutexLock l(&mu_);
  auto it = projects_.find(project_uuid);
  return it == projects_.end() ? std::vector<Problem>{} : it->second.executed;
}

void Reconciler::NoteApi(const std::string& api, const absl::Status& st) {
  absl::MutexLock l(&mu_);
  if (st.ok() || absl::IsNotFound(st) || absl::IsInvalidArgument(st) || absl::IsFailedPrecondition(st) ||
      absl::IsAlreadyExists(st)) {
    api_.erase(api);  // it answered
    return;
  }
  auto it = api_.find(api);
  if (it == api_.end()) {
    auto url = options_.api_urls.find(absl::AsciiStrToLower(api));
    api_[api] = ApiProblem{api, url == options_.api_urls.end() ? "" : url->second, std::string(st.message()),
                           clock_->Now()};
  } else {
    it->second.error = std::string(st.message());
  }
}

void Reconciler::NoteLatency(const std::string& api, absl::Duration took) {
  absl::MutexLock l(&latency_mu_);
  latency_[api] = took;
}

void Reconciler::ImagesChanged() { gather_.ImagesChanged(); }

std::vector<std::string> OwnersOf(const ProjectRecord& p, const ReconcilerOptions& o) {
  std::vector<std::string> out;
  if (!TenantOf(p, o).empty()) out.push_back(TenantOf(p, o));
  // Core zones are the admin account's; only Triton's operators make VMs
  // there, so its VMs tagged for the project are the project's.
  if (!o.admin_owner_uuid.empty() && o.admin_owner_uuid != TenantOf(p, o)) {
    out.push_back(o.admin_owner_uuid);
  }
  return out;
}

absl::StatusOr<Reconciler::View> Reconciler::Inspect(const std::string& project) {
  if (options_.lease) {
    // A project another node runs: this node has no sync of its own to
    // show, so it reads VMAPI now (and writes nothing).
    ASSIGN_OR_RETURN(ProjectRecord p, store_->GetProject(project));
    if (!options_.lease(p.uuid)) {
      ASSIGN_OR_RETURN(Snapshot s, gather_.Gather(p.uuid, /*poll_jobs=*/false, nullptr, nullptr, /*last_seen=*/false,
                                          /*observe_only=*/true));
      Decision d = Decide(s, clock_->Now());
      return View{std::move(s), std::move(d), /*read_now=*/true, WatchSummary()};
    }
  }
  ASSIGN_OR_RETURN(Snapshot s, gather_.Gather(project, /*poll_jobs=*/false, nullptr, nullptr, /*last_seen=*/true));
  Decision d = Decide(s, clock_->Now());
  return View{std::move(s), std::move(d), /*read_now=*/false, WatchSummary()};
}

absl::StatusOr<SyncResult> Reconciler::SyncProject(const std::string& name) {
  absl::Time start = clock_->Now();
  // Read before anything else: a change after this point makes the
  // backlog this sync leaves stale.
  uint64_t changes = changes_.load();
  WaitRecording(name);  // the jobs of the pump's last round, in the store before they are read
  absl::Duration observe;
  absl::Time listed_at;
  ASSIGN_OR_RETURN(Snapshot s, gather_.Gather(name, /*poll_jobs=*/true, &observe, &listed_at));
  PlanCache* cache;  // one worker per project at a time uses it; map nodes do not move
  bool window_limited = false;  // the other projects (their jobs, their share) left this sync fewer slots than its own window
  int running = 0, free_slots = 0;
  {
    absl::MutexLock l(&mu_);
    ProjectState& ps = projects_[s.project.uuid];
    cache = &ps.plan;
    // The slots this sync may fill, held until it has sent (other syncs
    // run at the same time: --parallel-syncs).
    running = static_cast<int>(s.in_flight.size());
    const JobWindow slots =
        FreeJobSlots(options_.max_jobs, options_.max_jobs_per_project, projects_, s.project.uuid, running);
    ps.in_flight = running;  // as polled now
    ps.reserved = free_slots = static_cast<int>(slots.free());
    s.global_jobs_free = ps.reserved;
    window_limited = slots.held_by_others();
  }
  absl::Cleanup release = [&] {
    absl::MutexLock l(&mu_);
    auto it = projects_.find(s.project.uuid);  // gone when the sync deleted the project
    if (it != projects_.end()) it->second.reserved = 0;
  };
  Decision d = Decide(s, clock_->Now(), cache);
  int finished = static_cast<int>(s.finished.size());
  std::vector<absl::Time> ended_sent, running_sent;
  for (const FinishedJob& f : s.finished) {
    if (!f.seen_by_pump) ended_sent.push_back(f.job.sent_at);  // the pump's taught PlanJobPoll then
  }
  for (const JobRecord& j : s.in_flight) running_sent.push_back(j.sent_at);
  SyncResult r = execute_.Execute(s, std::move(d), changes);
  if (s.servers_known && r.changed > 0) gather_.ListServersAfterSend(s.project.uuid);
  r.finished = finished;
  if (s.actual_known) r.asked = start;  // else Gather asked no job (GatherJobs)
  r.ended_sent = std::move(ended_sent);
  r.running_sent = std::move(running_sent);
  r.sent = r.created + r.deleted + r.changed;
  r.observe = observe;
  r.total = clock_->Now() - start;
  {
    absl::MutexLock l(&mu_);
    auto it = projects_.find(s.project.uuid);
    if (it != projects_.end()) {
      it->second.sync_cost = r.total;
      // Waiting for the others only when it filled every slot it had and
      // still holds work: work held for other reasons (a rollout's pace,
      // a budget) is no reason to wake it when their jobs end.
      it->second.window_held = window_limited && r.held > 0 && it->second.in_flight - running >= free_slots;
      it->second.wake_sent = false;
    }
  }
  // The list this sync decided on is the next one's starting point.
  vms_.PutBack(s.project.uuid, listed_at, std::move(s.instances), s.observed_at);
  return r;
}

// Between syncs, the backlog a sync left (creates without placement rules)
// is sent as jobs end, while nothing changed and no job failed.
std::optional<SyncResult> Reconciler::PumpProject(const std::string& uuid) {
  absl::Time start = clock_->Now();
  std::optional<Pump> pump = PumpFrom(uuid, start);
  if (!pump) return std::nullopt;
  absl::Cleanup give_back = [&] { GiveBackKnown(uuid, &*pump); };
  auto jobs = store_->ListJobsExcept(uuid, pump->known);
  if (!jobs.ok()) return std::nullopt;
  // The round before's, whether or not its write has committed yet (then
  // listed as well).
  if (!pump->unrecorded.empty()) {
    absl::flat_hash_set<std::string> pending;
    for (const JobRecord& j : pump->unrecorded) pending.insert(j.job_uuid);
    jobs->erase(std::remove_if(jobs->begin(), jobs->end(), [&](const JobRecord& j) { return pending.count(j.job_uuid); }),
                jobs->end());
    for (JobRecord& j : pump->unrecorded) jobs->push_back(std::move(j));
  }
  std::vector<JobRecord> polled;
  for (JobRecord& j : *jobs) {
    if (absl::StartsWith(j.job_uuid, "create:")) ++pump->running;  // the next sync looks for its VM
    else polled.push_back(std::move(j));
  }
  SyncResult r;
  bool failed = false;
  std::vector<FinishedJob> ended;
  // What the change feed already showed done is not asked of VMAPI, nor
  // what it will show before long (AskJobNow): a mass scale's creates cost
  // one GetJob each otherwise.
  std::vector<std::string> vms;
  vms.reserve(polled.size());
  for (const JobRecord& j : polled) vms.push_back(j.instance);
  std::vector<std::string> states = vms_.FeedStates(uuid, vms);
  const bool watching = vms_.Watching();
  std::vector<JobRecord> asked;
  asked.reserve(polled.size());
  for (size_t k = 0; k < polled.size(); ++k) {
    if (StateShowsJobSucceeded(polled[k], states[k])) {
      r.ended_sent.push_back(polled[k].sent_at);
      ended.push_back(FinishedJob{std::move(polled[k]), true, ""});
    } else if (!AskJobNow(polled[k], watching, start, pump->took, options_.feed_grace)) {
      ++pump->running;
      r.running_sent.push_back(polled[k].sent_at);
    } else {
      asked.push_back(std::move(polled[k]));
    }
  }
  polled = std::move(asked);
  std::vector<std::optional<FinishedJob>> answers = gather_.PollJobs(polled);
  r.asked = start;
  for (size_t k = 0; k < answers.size(); ++k) {
    auto& a = answers[k];
    if (!a) {
      ++pump->running;
      r.running_sent.push_back(polled[k].sent_at);
      continue;
    }
    failed |= !a->ok;
    r.ended_sent.push_back(a->job.sent_at);
    ended.push_back(std::move(*a));
  }
  r.finished = static_cast<int>(ended.size());
  std::optional<std::vector<Step>> steps = TakeBacklog(uuid, std::move(ended), failed, &*pump);
  if (!steps) return std::nullopt;
  std::vector<EventRecord> events;
  std::vector<Problem> problems;
  std::vector<JobRecord> sent;
  const Snapshot& from = *pump->from;
  std::function<absl::Status()> write;
  if (!steps->empty()) sent = sender_.Send(from, *steps, {}, {}, {}, &pump->memory, &r, &events, &problems, &write);
  for (const JobRecord& j : sent) r.running_sent.push_back(j.sent_at);
  // The round before's write ran while this round sent; one write at a
  // time, in order. A round that sent nothing leaves it running.
  std::shared_ptr<Recording> recording = pump->recording;
  if (write) {
    if (recording) StoreError(from.project.name, &problems, kJobsRecord, recording->Wait());
    recording = StartRecording(std::move(write), sent);
  }
  StoreError(from.project.name, &problems, "events", store_->AppendEvents(events));
  if (r.failed > 0) execute_.KeepMemory(from.project, pump->memory, &problems);
  {
    absl::MutexLock l(&mu_);
    auto it = projects_.find(uuid);
    if (it != projects_.end()) {
      ProjectState& ps = it->second;
      ps.in_flight = pump->running + static_cast<int>(sent.size());
      ps.recording = std::move(recording);  // the latest write (any before it waited for above)
      for (Problem& pr : problems) ps.executed.push_back(std::move(pr));
      if (r.failed > 0) {  // refused: counted into memory by Send; Decide goes on from there
        ps.memory = std::move(pump->memory);
        ps.DropBacklog();
      }
    }
  }
  r.total = clock_->Now() - start;
  return r;
}

// What the pump starts from, or nullopt when the backlog is empty or must be
// dropped (a change since it was made, too long since the sync, or too many
// ended jobs not yet counted by a sync).
std::optional<Reconciler::Pump> Reconciler::PumpFrom(const std::string& uuid, absl::Time start) {
  absl::MutexLock l(&mu_);
  auto it = projects_.find(uuid);
  if (it == projects_.end()) return std::nullopt;
  ProjectState& ps = it->second;
  if (ps.backlog.empty()) return std::nullopt;
  // Syncs take at most about a tenth of the time while a backlog lasts: at
  // 100,000 instances listing them all takes seconds.
  absl::Duration pump_for = std::max(options_.full_observe, 10 * ps.sync_cost);
  // Jobs the pump saw end stay in the store until a sync counts them (the
  // pump skips them in memory): past kEndedWindowsPerSync windows, sync —
  // more when a sync costs more than a tenth of a second (at 100,000
  // instances it costs seconds). Each sync lists every instance of the
  // project, which was a quarter of mariposad's CPU in P2 at 16 windows.
  double cost = std::max(1.0, absl::FDivDuration(ps.sync_cost, absl::Milliseconds(100)));
  size_t ended_max = static_cast<size_t>(kEndedWindowsPerSync * std::max(1, options_.max_jobs_per_project) * cost);
  if (ps.backlog_changes != changes_.load() || start - ps.synced_at >= pump_for || ps.ended.size() >= ended_max) {
    ps.DropBacklog();
    return std::nullopt;
  }
  Pump p;
  p.from = ps.backlog_from;
  p.memory = ps.memory;
  p.took = ps.jobs_take;
  p.known.swap(ps.ended_ids);  // given back by GiveBackKnown
  if (ps.recording) {
    p.recording = ps.recording;
    for (const JobRecord& j : ps.recording->jobs) {
      if (!p.known.count(j.job_uuid)) p.unrecorded.push_back(j);
    }
  }
  return p;
}

void Reconciler::GiveBackKnown(const std::string& uuid, Pump* pump) {
  absl::MutexLock l(&mu_);
  auto it = projects_.find(uuid);
  if (it != projects_.end()) it->second.ended_ids.swap(pump->known);
}

std::shared_ptr<Recording> Reconciler::StartRecording(std::function<absl::Status()> write,
                                                      std::vector<JobRecord> jobs) {
  auto rec = std::make_shared<Recording>();
  rec->jobs = std::move(jobs);
  std::optional<Fence> fence;
  if (const Fence* f = ScopedFence::Current()) fence = *f;
  auto fenced_write = [write = std::move(write), fence] {
    std::optional<ScopedFence> fenced;
    if (fence) fenced.emplace(*fence);
    return write();
  };
  try {
    rec->written = std::async(std::launch::async, fenced_write);
  } catch (const std::system_error&) {  // no thread to be had: written here
    rec->status = fenced_write();
  }
  return rec;
}

void Reconciler::WaitRecording(const std::string& project) {
  std::shared_ptr<Recording> rec;
  std::string name = project;
  {
    absl::MutexLock l(&mu_);
    auto it = projects_.find(project);
    if (it == projects_.end()) {  // named (SyncProject takes either)
      it = std::find_if(projects_.begin(), projects_.end(), [&](const auto& kv) { return kv.second.name == project; });
    }
    if (it == projects_.end() || !it->second.recording) return;
    rec = std::move(it->second.recording);
    if (!it->second.name.empty()) name = it->second.name;
  }
  std::vector<Problem> logged;  // the sync's own writes report the store's state
  StoreError(name, &logged, kJobsRecord, rec->Wait());
}

// Keeps the jobs that ended for the next sync and takes as much of the
// backlog as the job window allows; nullopt (the backlog dropped) when a job
// failed — Decide counts it (backoff, crash loop) before anything more is
// sent — or anything changed since the backlog was made.
std::optional<std::vector<Step>> Reconciler::TakeBacklog(const std::string& uuid, std::vector<FinishedJob> ended,
                                                         bool failed, Pump* pump_state) {
  const Pump& pump = *pump_state;
  absl::MutexLock l(&mu_);
  auto it = projects_.find(uuid);
  if (it == projects_.end()) return std::nullopt;
  ProjectState& ps = it->second;
  for (FinishedJob& f : ended) {
    pump_state->known.insert(f.job.job_uuid);
    ps.ended[f.job.job_uuid] = std::move(f);
  }
  if (failed || ps.backlog_changes != changes_.load()) {
    ps.DropBacklog();
    return std::nullopt;
  }
  const JobWindow slots = FreeJobSlots(options_.max_jobs, options_.max_jobs_per_project, projects_, uuid, pump.running);
  int64_t free = slots.free();
  std::vector<Step> steps;
  while (free-- > 0 && !ps.backlog.empty()) {
    steps.push_back(std::move(ps.backlog.front()));
    ps.backlog.pop_front();
  }
  ps.window_held = !ps.backlog.empty() && slots.held_by_others();
  ps.wake_sent = false;
  // Counted as in flight from now (the others see them before they are sent).
  ps.in_flight = pump.running + static_cast<int>(steps.size());
  return steps;
}

void Reconciler::Start() {
  {
    absl::MutexLock l(&mu_);
    stop_ = false;
  }
  Resync();
  for (int n = 0; n < std::max(1, options_.parallel_syncs); ++n) workers_.emplace_back([this] { Worker(); });
  vms_.Start();
  ticker_ = std::thread([this] {
    absl::MutexLock l(&mu_);
    while (!stop_) {
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      if (clock_->AwaitUntil(&mu_, absl::Condition(&stopping), clock_->Now() + options_.resync)) break;
      mu_.Unlock();
      Resync();
      mu_.Lock();
    }
  });
}

void Reconciler::Resync() {
  auto projects = store_->ListProjects();
  if (!projects.ok()) {
    LogWarn("cannot list projects", {{"error", projects.status().ToString()}});
    return;
  }
  std::set<std::string> now_known;
  std::set<std::string> quiet = QuietProjects(clock_->Now());
  ScheduleAudits(*projects, clock_->Now());
  for (const ProjectRecord& p : *projects) {
    now_known.insert(p.name);
    if (!quiet.count(p.uuid)) queue_.Add(p.uuid);
  }
  std::set<std::string> gone;
  {
    absl::MutexLock l(&mu_);
    for (const std::string& n : known_projects_) {
      if (!now_known.count(n)) gone.insert(n);
    }
    known_projects_ = now_known;
  }
  if (options_.metrics != nullptr) {
    options_.metrics->Syncs("quiet", static_cast<int64_t>(quiet.size()));
    for (const std::string& n : gone) options_.metrics->ForgetProject(n);
    options_.metrics->SetWorkqueueDepth(queue_.Len());
  }
}

std::set<std::string> Reconciler::QuietProjects(absl::Time now) {
  std::set<std::string> quiet;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [uuid, ps] : projects_) {
      if (ps.quiet) quiet.insert(uuid);
    }
  }
  return vms_.Current(quiet, now);
}

void Reconciler::ScheduleAudits(const std::vector<ProjectRecord>& projects, absl::Time now) {
  std::map<std::string, std::vector<std::string>> owners;
  for (const ProjectRecord& p : projects) owners[p.uuid] = OwnersOf(p);
  vms_.ScheduleAudits(owners, now);
}

void Reconciler::Wake() {
  {
    absl::MutexLock l(&mu_);
    for (auto& kv : projects_) kv.second.quiet = false;
  }
  ++changes_;
  Resync();
}

void Reconciler::VmsChanged(std::vector<triton::Vm> vms) {
  // Items that may end a create or a delete in flight (a VM out of
  // provisioning): the project looks now, and counts them without asking
  // VMAPI (AskJobNow).
  std::set<std::string> ending;
  for (const triton::Vm& vm : vms) {
    if (vm.state == "provisioning") continue;
    if (auto tag = vm.tags.find(kTagProject); tag != vm.tags.end()) ending.insert(tag->second);
  }
  std::set<std::string> got = vms_.VmsChanged(std::move(vms));
  std::set<std::string> woken;
  {
    absl::MutexLock l(&mu_);
    for (const std::string& p : got) {
      // A project with jobs in flight is looked at again when they are due
      // anyway: a wake per item that ends none (a create's first,
      // "provisioning") would only look more often.
      auto it = projects_.find(p);
      if (it != projects_.end() && (it->second.in_flight == 0 || ending.count(p))) woken.insert(p);
    }
  }
  // Queued, not marked changed: a pump (PumpProject) goes on sending the
  // backlog and the sync it leads to applies the items.
  for (const std::string& p : woken) queue_.Add(p);
}

void Reconciler::FeedChanged(const triton::VmFeedStatus& status) {
  std::vector<EventRecord> events;
  bool turned;  // watching began or ended: every project lists (again) or polls
  {
    turned = vms_.FeedChanged(status);
    absl::MutexLock l(&mu_);
    for (const auto& [uuid, ps] : projects_) {
      if (ps.name.empty()) continue;  // not synced here yet
      EventRecord e;
      e.time = status.since;
      e.actor = "mariposad";
      e.project = ps.name;
      e.kind = status.watching ? "feed.watching" : "feed.polling";
      e.subject = "VMAPI";
      e.detail = status.watching ? absl::StrCat("watching VMAPI's change feed; listing every project again, then "
                                                "only what changes (a full listing every ",
                                                absl::FormatDuration(options_.relist), ")")
                                 : absl::StrCat("not watching VMAPI's change feed (", status.why,
                                                "): every sync lists VMAPI until it is back");
      events.push_back(std::move(e));
    }
  }
  if (status.watching) LogInfo("watching VMAPI's change feed", {});
  if (!events.empty()) {
    if (auto st = store_->AppendEvents(events); !st.ok()) {
      LogWarn("cannot record the change feed's state", {{"error", st.ToString()}});
    }
  }
  if (turned) Wake();
}

std::string Reconciler::WatchSummary() const { return vms_.WatchSummary(); }

void Reconciler::ReleaseProject(const std::string& project_uuid) {
  bool had = false;
  std::shared_ptr<Recording> writing;  // waited for outside the lock, when it goes
  {
    absl::MutexLock l(&mu_);
    auto it = projects_.find(project_uuid);
    had = it != projects_.end();
    if (had) {
      writing = std::move(it->second.recording);
      projects_.erase(it);
    }
  }
  vms_.Forget(project_uuid);
  owned_.Forget(project_uuid);
  if (had && options_.health != nullptr) options_.health->Assign(project_uuid, {});
}

void Reconciler::WakeProject(const std::string& project_uuid) {
  {
    absl::MutexLock l(&mu_);
    if (auto it = projects_.find(project_uuid); it != projects_.end()) it->second.quiet = false;
  }
  ++changes_;
  queue_.Add(project_uuid);
}

// The first look at jobs in flight after a sync that saw some end.
constexpr absl::Duration kFirstPoll = absl::Milliseconds(1);

void Reconciler::SetPaused(bool paused) {
  bool was = paused_.exchange(paused);
  if (was && !paused) Resync();
}

// Each worker takes a project off the queue, pumps its backlog or syncs it,
// and queues it again as its jobs and results say.
void Reconciler::Worker() {
  std::string key;
  while (queue_.Get(&key)) {
    std::optional<Fence> fence;
    // readonly: dropped here, queued again by SetPaused(false).
    if (paused_ || !Leased(key, &fence)) {
      queue_.Done(key);
      continue;
    }
    std::optional<ScopedFence> fenced;
    if (fence) fenced.emplace(*fence);
    // Backlog creates go out as job slots free up; the project is synced
    // (decided again) when there are none, when it changed, when a job
    // failed, and at least every full_observe.
    std::optional<SyncResult> pumped = PumpProject(key);
    absl::StatusOr<SyncResult> r = pumped ? *pumped : SyncProject(key);
    if (!pumped && options_.metrics != nullptr) options_.metrics->Syncs("synced", 1);
    if (!r.ok()) {
      if (!absl::IsNotFound(r.status())) {
        LogWarn("sync failed", {{"project", key}, {"error", r.status().ToString()}});
        queue_.AddRateLimited(key);
      }
    } else {
      queue_.Forget(key);
      if (!pumped && r->created + r->deleted + r->changed + r->failed > 0) {
        LogInfo("synced", {{"project", key}, {"created", absl::StrCat(r->created)},
                           {"deleted", absl::StrCat(r->deleted)}, {"changed", absl::StrCat(r->changed)},
                           {"failed", absl::StrCat(r->failed)}, {"held", absl::StrCat(r->held)},
                           {"observe_ms", absl::StrCat(absl::ToInt64Milliseconds(r->observe))},
                           {"total_ms", absl::StrCat(absl::ToInt64Milliseconds(r->total))}});
      }
      Requeue(key, *r);
    }
    queue_.Done(key);
  }
}

// Several nodes: only projects whose lease this node holds, each under its
// fence (the store refuses its writes once the lease moved). False (the
// project released here) when another node holds it.
bool Reconciler::Leased(const std::string& key, std::optional<Fence>* fence) {
  if (!options_.lease) return true;
  *fence = options_.lease(key);
  if (!*fence) {
    ReleaseProject(key);
    queue_.Forget(key);
    return false;
  }
  std::shared_ptr<Recording> writing;  // waited for outside the lock, when it goes
  absl::MutexLock l(&mu_);
  // Taken (again): start from the store, not from what this node remembered
  // of an earlier holding.
  if (auto it = projects_.find(key); it != projects_.end() && it->second.epoch != (*fence)->epoch) {
    writing = std::move(it->second.recording);
    projects_.erase(it);
    vms_.Forget(key);
    owned_.Forget(key);
  }
  projects_[key].epoch = (*fence)->epoch;
  return true;
}

// Jobs in flight are looked at again soon; work that went out may have more
// steps behind it. Held and failed work waits for the resync (or its
// backoff), so neither becomes a busy loop; work held only by the other
// projects' jobs (window_held) is looked at again when one of them ends.
void Reconciler::Requeue(const std::string& key, const SyncResult& r) {
  // Slots this sync or pump left free (jobs that ended, slots it held and
  // did not fill): the projects that waited for them and can use them look
  // now.
  std::vector<std::string> held;
  {
    absl::MutexLock l(&mu_);
    held = HeldProjectsToWake(options_.max_jobs, options_.max_jobs_per_project, projects_, wake_after_);
    for (const std::string& uuid : held) projects_[uuid].wake_sent = true;
    if (!held.empty()) wake_after_ = held.back();
  }
  for (const std::string& uuid : held) queue_.Add(uuid);
  int in_flight = 0;
  absl::Duration poll = options_.job_poll;
  {
    absl::MutexLock l(&mu_);
    auto it = projects_.find(key);  // gone when the sync deleted the project
    if (it != projects_.end()) {
      in_flight = it->second.in_flight;
      // Jobs that keep ending (a fast VMAPI) are looked at again at once;
      // while none ends the wait doubles up to job_poll, and never passes
      // the moment the next job in flight is due (PlanJobPoll).
      ProjectState& ps = it->second;
      JobPollInput in;
      in.prev = ps.poll_after;
      in.took = ps.jobs_take;
      in.prev_asked = ps.jobs_asked;
      in.now = clock_->Now();
      in.ended_sent = r.ended_sent;
      in.running_sent = r.running_sent;
      in.running_sent.insert(in.running_sent.end(), r.sent, in.now);  // the sync's own sends: about now
      in.first = kFirstPoll;
      in.cap = options_.job_poll;
      JobPollPlan plan = PlanJobPoll(in);
      ps.poll_after = plan.after;
      ps.jobs_take = plan.took;
      if (r.asked != absl::InfinitePast()) ps.jobs_asked = r.asked;
      poll = plan.after;
    }
  }
  if (in_flight > 0) queue_.AddAfter(key, poll);
  else if (r.failed == 0 && r.created + r.deleted + r.changed > 0) queue_.Add(key);
  // What changes by the clock (an instance ready, a drain over) is decided then.
  if (r.next_change != absl::InfiniteFuture()) {
    queue_.AddAfter(key, std::max(r.next_change - clock_->Now(), absl::Milliseconds(10)));
  }
}

void Reconciler::Stop() {
  {
    absl::MutexLock l(&mu_);
    if (stop_ && workers_.empty()) return;
    stop_ = true;
  }
  queue_.ShutDown();
  for (auto& t : workers_) t.join();
  workers_.clear();
  // The pumps' last writes, before the store may go.
  std::vector<std::string> writing;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [uuid, ps] : projects_) {
      if (ps.recording) writing.push_back(uuid);
    }
  }
  for (const std::string& uuid : writing) WaitRecording(uuid);
  if (ticker_.joinable()) ticker_.join();
  vms_.Stop();
}

}  // namespace mariposa::convergence
