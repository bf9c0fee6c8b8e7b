#include "convergence/informer/vm_cache.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "convergence/informer/observer.h"

namespace mariposa::convergence {

// What is kept of one project.
struct VmCache::Kept {
  uint64_t incarnation = 0;  // which Forget-to-Forget life of the entry (safety-net reads carry it)
  // The last full listing of its VMs and when it was made (updated by the
  // syncs since); taken by a sync (Take) and put back when it ends
  // (PutBack); none until a sync put one back.
  absl::Time listed_at;
  std::optional<std::vector<InstanceState>> listed;
  // Changed VMs from the feed, not yet applied to `listed` (the latest of
  // each; the next sync applies them).
  std::map<std::string, triton::Vm> feed_pending;
  // The VMs a running sync took (feed items, VMs re-read after the digest)
  // until it puts its listing back: `status` shows them on the last
  // observation meanwhile, as it shows feed_pending.
  std::vector<triton::Vm> in_sync;
  // A full listing read beside the syncs: asked for at `relist_started`,
  // done (`relisted`) until a sync takes it in place of `listed`, with the
  // feed's items since it was asked (relist_pending).
  bool relisting = false;
  absl::Time relist_started;
  std::optional<std::vector<InstanceState>> relisted;
  std::map<std::string, triton::Vm> relist_pending;
  // The digest check: one in flight; the last one done (read from then);
  // VMs it found the feed did not bring, read again by the next sync; a
  // digest a sync compares (the listing was taken when it came); VMs read
  // again that are not the project's (not read again).
  bool auditing = false;
  absl::Time audited_at = absl::InfinitePast();
  std::set<std::string> audit_suspects;
  std::optional<std::vector<triton::Vm>> audit_digest;
  std::set<std::string> audit_ignored;
  // For readers (LastObservation): when the sync that put `listed` back
  // observed it, a counter of those puts, and a copy made on a reader's
  // demand (kept while a sync holds `listed`). A reader that found
  // `listed` taken sets view_wanted: the sync copies its list when it puts
  // it back, so back-to-back syncs (a slow Triton) never leave readers on a
  // view older than the last sync.
  absl::Time observed_at = absl::InfinitePast();
  uint64_t listed_gen = 0, view_gen = 0;
  bool view_wanted = false;
  std::shared_ptr<const std::vector<InstanceState>> view;
  absl::Time view_observed_at = absl::InfinitePast();
};

namespace {

// `f` listed once per owner (once naming none when there are none), together.
absl::StatusOr<std::vector<triton::Vm>> ListForOwners(triton::VmapiClient* vmapi, const std::vector<std::string>& owners,
                                                      triton::VmFilter f) {
  std::vector<triton::Vm> out;
  for (const std::string& owner : owners.empty() ? std::vector<std::string>{""} : owners) {
    f.owner_uuid = owner;
    auto vms = vmapi->ListVms(f);
    if (!vms.ok()) return vms.status();
    out.insert(out.end(), std::make_move_iterator(vms->begin()), std::make_move_iterator(vms->end()));
  }
  return out;
}

// The latest of `vm` kept in `pending` (by last_modified).
void KeepLatest(triton::Vm vm, std::map<std::string, triton::Vm>* pending) {
  triton::Vm& kept = (*pending)[vm.uuid];
  if (kept.uuid.empty() || ParseTimestamp(vm.last_modified) >= ParseTimestamp(kept.last_modified)) kept = std::move(vm);
}

}  // namespace

VmCache::VmCache(triton::VmapiClient* vmapi, VmCacheOptions options, VmCacheHooks hooks)
    : vmapi_(vmapi), options_(options), hooks_(std::move(hooks)) {}

VmCache::~VmCache() { Stop(); }

void VmCache::Start() {
  absl::MutexLock l(&mu_);
  if (runner_.joinable()) return;
  stop_ = false;
  runner_ = std::thread([this] { Run(); });
}

void VmCache::Stop() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (runner_.joinable()) runner_.join();
}

void VmCache::WaitIdle() {
  absl::MutexLock l(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || (jobs_.empty() && !running_); };
  mu_.Await(absl::Condition(&idle));
}

VmCache::Kept& VmCache::Entry(const std::string& project_uuid) {
  std::unique_ptr<Kept>& k = kept_[project_uuid];
  if (k == nullptr) {
    k = std::make_unique<Kept>();
    k->incarnation = ++incarnations_;
  }
  return *k;
}

bool VmCache::WatchedSince(absl::Time listed_at) const {
  return feed_ && feed_->watching && listed_at >= feed_->since;
}

std::optional<VmCache::Taken> VmCache::Take(const VmScope& scope, absl::Time now,
                                            std::vector<InstanceState>* instances, bool* unreadable) {
  Taken t;
  std::vector<std::string> suspects;
  {
    absl::MutexLock l(&mu_);
    Kept& k = Entry(scope.project_uuid);
    // Watching the feed, a listing read after the watch began is kept
    // current by its items (ApplyFeed); every `relist` a full one is read
    // beside the syncs and takes its place when done.
    absl::Duration keep = options_.full_observe;
    if (WatchedSince(k.listed_at)) {
      keep = std::max(options_.relist, options_.full_observe);
      t.watched = true;
      TakeRelisted(scope, &k);
    }
    bool aged = now - k.listed_at >= keep;
    if (!k.listed || (aged && !t.watched)) return std::nullopt;
    if (aged && !k.relisting && !k.relisted) {
      k.relisting = true;
      k.relist_started = now;
      jobs_.push_back({scope, k.incarnation, false, now});
    }
    // Taken, not copied (100,000 instances are ~60 MiB): the sync puts its
    // list back when it ends (PutBack); a sync that fails leaves none and
    // the next one lists.
    t.listed_at = k.listed_at;
    *instances = std::move(*k.listed);
    k.listed.reset();
    if (k.audit_digest) {
      for (std::string& u : DigestSuspects(*instances, *k.audit_digest, k.audited_at)) {
        if (!k.audit_ignored.count(u) && !k.feed_pending.count(u)) k.audit_suspects.insert(std::move(u));
      }
      k.audit_digest.reset();
    }
    suspects.assign(k.audit_suspects.begin(), k.audit_suspects.end());
    k.audit_suspects.clear();
  }
  if (!ReadSuspects(scope, std::move(suspects), instances)) *unreadable = true;
  // Read through the live feed: VMAPI answers (an error an earlier call
  // met, such as a failed CreateVm, is not an unreadable actual state).
  if (t.watched) Note(absl::OkStatus());
  return t;
}

absl::Status VmCache::List(const VmScope& scope, std::vector<InstanceState>* instances) {
  auto listed = Observer(vmapi_, scope.owners)
                    .ObserveProject(scope.project_uuid, scope.version_numbers, scope.services, options_.observe_parallel);
  Note(listed.status());
  if (!listed.ok()) return listed.status();
  *instances = std::move(*listed);
  return absl::OkStatus();
}

// A full listing the runner finished replaces the kept one, with every
// feed item since it was asked for applied (some the syncs in between
// applied to the old listing only).
void VmCache::TakeRelisted(const VmScope& scope, Kept* k) {
  if (!k->relisted || k->relisting) return;
  std::vector<triton::Vm> since;
  for (auto& kv : k->relist_pending) since.push_back(std::move(kv.second));
  k->relist_pending.clear();
  ApplyVmChanges(since, scope.project_uuid, scope.version_numbers, scope.owners, &*k->relisted);
  k->listed = std::move(k->relisted);
  k->relisted.reset();
  k->listed_at = k->relist_started;
}

void VmCache::ApplyFeed(const VmScope& scope, std::vector<InstanceState>* instances) {
  std::vector<triton::Vm> changed;
  {
    absl::MutexLock l(&mu_);
    auto it = kept_.find(scope.project_uuid);
    if (it != kept_.end()) {
      Kept& k = *it->second;
      for (auto& kv : k.feed_pending) changed.push_back(std::move(kv.second));
      k.feed_pending.clear();
      k.in_sync.insert(k.in_sync.end(), changed.begin(), changed.end());
    }
  }
  ApplyVmChanges(changed, scope.project_uuid, scope.version_numbers, scope.owners, instances);
}

void VmCache::PutBack(const std::string& project_uuid, absl::Time listed_at, std::vector<InstanceState> instances,
                      absl::Time observed_at) {
  absl::MutexLock l(&mu_);
  auto it = kept_.find(project_uuid);
  if (it == kept_.end()) return;  // forgotten meanwhile
  Kept& k = *it->second;
  k.in_sync.clear();
  if (listed_at == absl::InfinitePast()) {
    k.listed.reset();
    return;
  }
  k.listed_at = listed_at;
  k.listed = std::move(instances);
  k.observed_at = observed_at;
  ++k.listed_gen;
  if (k.view_wanted) CopyView(&k);
}

void VmCache::CopyView(Kept* k) {
  k->view = std::make_shared<const std::vector<InstanceState>>(*k->listed);
  k->view_gen = k->listed_gen;
  k->view_observed_at = k->observed_at;
  k->view_wanted = false;
}

bool VmCache::LastObservation(const VmScope& scope, bool vmapi_failing, std::vector<InstanceState>* instances,
                              absl::Time* observed_at) {
  absl::MutexLock l(&mu_);
  Kept& k = Entry(scope.project_uuid);
  // The last sync's observation, copied once per sync that made one, on a
  // reader's demand; while a sync holds the list, the copy before.
  if (k.listed && k.view_gen != k.listed_gen) {
    CopyView(&k);
  } else if (!k.listed) {
    k.view_wanted = true;  // a sync holds it: it copies it when done
  }
  if (vmapi_failing || !k.view) return false;
  *instances = *k.view;
  *observed_at = k.view_observed_at;
  // What came since: the items a running sync took and those waiting for
  // the next one (a sync held up sending must not leave `status` on the
  // state before them).
  std::vector<triton::Vm> since = k.in_sync;
  for (const auto& kv : k.feed_pending) since.push_back(kv.second);
  ApplyVmChanges(since, scope.project_uuid, scope.version_numbers, scope.owners, instances);
  return true;
}

std::vector<std::string> VmCache::FeedStates(const std::string& project_uuid,
                                             const std::vector<std::string>& vms) const {
  std::vector<std::string> out(vms.size());
  absl::MutexLock l(&mu_);
  auto it = kept_.find(project_uuid);
  if (it == kept_.end() || it->second->feed_pending.empty()) return out;
  const std::map<std::string, triton::Vm>& pending = it->second->feed_pending;
  for (size_t k = 0; k < vms.size(); ++k) {
    if (auto vm = pending.find(vms[k]); vm != pending.end()) out[k] = vm->second.state;
  }
  return out;
}

std::set<std::string> VmCache::VmsChanged(std::vector<triton::Vm> vms) {
  std::set<std::string> got;
  absl::MutexLock l(&mu_);
  for (triton::Vm& vm : vms) {
    auto tag = vm.tags.find(kTagProject);
    if (tag == vm.tags.end()) continue;
    auto it = kept_.find(tag->second);  // a project not synced here yet is listed in full by its first sync
    if (it == kept_.end()) continue;
    got.insert(tag->second);
    Kept& k = *it->second;
    if (k.relisting || k.relisted) KeepLatest(vm, &k.relist_pending);
    KeepLatest(std::move(vm), &k.feed_pending);
  }
  return got;
}

bool VmCache::FeedChanged(const triton::VmFeedStatus& status) {
  absl::MutexLock l(&mu_);
  bool turned = (feed_ && feed_->watching) != status.watching;
  feed_ = status;
  return turned;
}

bool VmCache::Watching() const {
  absl::MutexLock l(&mu_);
  return feed_ && feed_->watching;
}

std::string VmCache::WatchSummary() const {
  absl::MutexLock l(&mu_);
  if (!feed_) return "";
  if (feed_->watching) {
    return absl::StrCat("watching VMAPI's change feed since ", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", feed_->since,
                                                                                absl::UTCTimeZone()),
                        options_.audit > absl::ZeroDuration()
                            ? absl::StrCat(": a change it misses is found within ", absl::FormatDuration(options_.audit),
                                           " (each project checked against a digest of its VMs)")
                            : ": a change it misses is found only by the full listing",
                        "; a full listing every ", absl::FormatDuration(options_.relist));
  }
  return absl::StrCat("polling VMAPI: every sync lists it (the change feed is not watched: ", feed_->why, ")");
}

std::set<std::string> VmCache::Current(const std::set<std::string>& candidates, absl::Time now) {
  std::set<std::string> out;
  absl::MutexLock l(&mu_);
  if (!feed_ || !feed_->watching) return out;
  absl::Duration keep = std::max(options_.relist, options_.full_observe);
  for (const std::string& uuid : candidates) {
    auto it = kept_.find(uuid);
    if (it == kept_.end()) continue;
    Kept& k = *it->second;
    if (!k.feed_pending.empty() || k.relisted || k.listed_at < feed_->since || now - k.listed_at >= keep) continue;
    k.observed_at = now;  // the watched listing, current as of now
    k.view_observed_at = now;
    out.insert(uuid);
  }
  return out;
}

void VmCache::ScheduleAudits(const std::map<std::string, std::vector<std::string>>& projects, absl::Time now) {
  absl::MutexLock l(&mu_);
  if (!feed_ || !feed_->watching || options_.audit <= absl::ZeroDuration()) return;
  for (const auto& [uuid, owners] : projects) {
    auto it = kept_.find(uuid);
    if (it == kept_.end()) continue;
    Kept& k = *it->second;
    // Only a watched listing is checked (a polled one is read in full).
    if (k.auditing || k.listed_at < feed_->since || now - k.audited_at < options_.audit) continue;
    if (k.audited_at == absl::InfinitePast() && now - k.listed_at < options_.audit) continue;  // just listed
    k.auditing = true;
    VmScope scope;
    scope.project_uuid = uuid;
    scope.owners = owners;
    jobs_.push_back({std::move(scope), k.incarnation, true, now});
  }
}

void VmCache::Forget(const std::string& project_uuid) {
  absl::MutexLock l(&mu_);
  kept_.erase(project_uuid);
}

// The safety-net listings, one at a time, beside the syncs.
void VmCache::Run() {
  for (;;) {
    Job job;
    {
      absl::MutexLock l(&mu_);
      running_ = false;
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !jobs_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      running_ = true;
    }
    const std::string& uuid = job.scope.project_uuid;
    if (job.digest) {
      triton::VmFilter f;
      f.tags[kTagProject] = uuid;
      f.state = "active";
      f.fields = {"uuid", "state", "last_modified"};
      auto digest = ListForOwners(vmapi_, job.scope.owners, f);
      Note(digest.status());
      bool missed = false;
      {
        absl::MutexLock l(&mu_);
        auto it = kept_.find(uuid);
        if (it == kept_.end() || it->second->incarnation != job.incarnation) continue;
        it->second->auditing = false;
        if (digest.ok()) missed = TakeDigest(job, *std::move(digest));
      }
      if (missed && hooks_.missed) hooks_.missed(uuid);
      continue;
    }
    auto instances = Observer(vmapi_, job.scope.owners)
                         .ObserveProject(uuid, job.scope.version_numbers, job.scope.services, options_.observe_parallel);
    Note(instances.status());
    absl::MutexLock l(&mu_);
    auto it = kept_.find(uuid);
    if (it == kept_.end() || it->second->incarnation != job.incarnation || !it->second->relisting) continue;
    Kept& k = *it->second;
    k.relisting = false;
    if (instances.ok()) {
      k.relisted = std::move(*instances);
    } else {
      k.relist_pending.clear();  // asked again by the next sync
    }
  }
}

bool VmCache::TakeDigest(const Job& job, std::vector<triton::Vm> digest) {
  Kept& k = *kept_.at(job.scope.project_uuid);
  k.audited_at = job.started;
  if (!k.listed) {  // a sync holds it: that sync's end or the next one compares
    k.audit_digest = std::move(digest);
    return false;
  }
  bool missed = false;
  for (std::string& u : DigestSuspects(*k.listed, digest, job.started)) {
    if (k.audit_ignored.count(u) || k.feed_pending.count(u)) continue;  // not the project's; or an item waits
    k.audit_suspects.insert(std::move(u));
    missed = true;
  }
  return missed;
}

bool VmCache::ReadSuspects(const VmScope& scope, std::vector<std::string> suspects,
                           std::vector<InstanceState>* instances) {
  if (suspects.empty()) return true;
  LogWarn("VMAPI's change feed missed changes: the digest found them; reading them again",
          {{"project", scope.project_name}, {"vms", absl::StrJoin(suspects, ",")}});
  std::vector<triton::Vm> read;
  for (size_t at = 0; at < suspects.size(); at += 100) {
    triton::VmFilter f;
    f.uuids.assign(suspects.begin() + at, suspects.begin() + std::min(suspects.size(), at + 100));
    auto vms = ListForOwners(vmapi_, scope.owners, f);
    Note(vms.status());
    if (!vms.ok()) return false;  // what the feed missed cannot be read: nothing is claimed
    read.insert(read.end(), std::make_move_iterator(vms->begin()), std::make_move_iterator(vms->end()));
  }
  std::set<std::string> found;
  for (const triton::Vm& vm : read) found.insert(vm.uuid);
  ApplyVmChanges(read, scope.project_uuid, scope.version_numbers, scope.owners, instances);
  std::set<std::string> have;
  for (const InstanceState& i : *instances) have.insert(i.uuid);
  absl::MutexLock l(&mu_);
  Kept& k = Entry(scope.project_uuid);
  k.in_sync.insert(k.in_sync.end(), read.begin(), read.end());
  for (const std::string& u : suspects) {
    if (!found.count(u)) {  // VMAPI no longer has it at all
      instances->erase(std::remove_if(instances->begin(), instances->end(),
                                      [&](const InstanceState& i) { return i.uuid == u; }),
                       instances->end());
    } else if (!have.count(u)) {
      k.audit_ignored.insert(u);  // not one of the project's instances: not read again
    }
  }
  return true;
}

}  // namespace mariposa::convergence
