// The informer: each project's VMs as VMAPI last showed them, kept current
// by VMAPI's change feed while it is watched (client-go's Reflector and
// Store have the same job). The reconciler's syncs take a project's kept
// listing, decide on it and put it back; `status` reads a copy of the last
// one put back; the change feed's items wait here until the project's next
// sync applies them. While the feed is watched, the safety nets run here
// too, one at a time on their own thread: a full listing every `relist`,
// which replaces the kept one when it is done, and a digest (uuid, state,
// last_modified) every `audit`, which names the VMs the feed missed so the
// next sync reads them again.
//
// Every VMAPI read the cache makes is reported through Hooks::note_vmapi;
// the cache never decides anything and never writes to Triton or the store.
// Thread-safe; hooks are called without the cache's lock held.
#ifndef MARIPOSA_CONVERGENCE_VM_CACHE_H_
#define MARIPOSA_CONVERGENCE_VM_CACHE_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "convergence/decide/planner.h"
#include "convergence/triton/clients.h"
#include "convergence/triton/vm_feed.h"

namespace mariposa::convergence {

struct VmCacheOptions {
  // A kept listing is used for this long; then the project is listed again.
  absl::Duration full_observe = absl::Seconds(1);
  // While the feed is watched: a full listing this often (the safety net).
  absl::Duration relist = absl::Minutes(5);
  // While the feed is watched: each project's digest check this often
  // (zero: never).
  absl::Duration audit = absl::Seconds(10);
  int observe_parallel = 4;  // VMAPI listings per project read at the same time
};

struct VmCacheHooks {
  // The outcome of every VMAPI read the cache makes (listings, digests,
  // suspects re-read); OK for a sync served by the watched listing.
  std::function<void(const absl::Status&)> note_vmapi;
  // A digest found changes the feed did not bring: the project needs a
  // sync (which reads them again).
  std::function<void(const std::string& project_uuid)> missed;
};

// What one project's listing covers.
struct VmScope {
  std::string project_uuid;
  std::string project_name;           // for logs
  std::vector<std::string> owners;    // the accounts its VMs may belong to
  std::vector<std::string> services;  // its services that are not agents
  std::map<std::string, int64_t> version_numbers;
};

class VmCache {
 public:
  // `vmapi` must outlive the cache.
  VmCache(triton::VmapiClient* vmapi, VmCacheOptions options, VmCacheHooks hooks);
  ~VmCache();

  // Starts and stops the thread of the safety-net listings.
  void Start();
  void Stop();
  // Blocks until no safety-net read is queued or under way (tests).
  void WaitIdle();

  // A sync's start. When the project's kept listing may be used at `now`
  // (younger than full_observe; watched: younger than relist, or any age
  // while a full listing is read beside it), it is moved into *instances
  // (a sync puts it back with PutBack), with the VMs a digest found the
  // feed missed read again (*unreadable set when they could not be). The
  // listing's time, or nullopt when there is none to use: the caller lists.
  struct Taken {
    absl::Time listed_at;
    bool watched = false;  // the listing is kept current by the feed
  };
  std::optional<Taken> Take(const VmScope& scope, absl::Time now, std::vector<InstanceState>* instances,
                            bool* unreadable);
  // A full listing of the project's VMs (a sync with no kept listing, or
  // one whose refresh failed).
  absl::Status List(const VmScope& scope, std::vector<InstanceState>* instances);
  // The feed's items for the project since the last call, applied to
  // `instances` (the latest of each VM; older than what a listing read:
  // skipped).
  void ApplyFeed(const VmScope& scope, std::vector<InstanceState>* instances);
  // A sync's end: its list (`listed_at`: when it was listed; InfinitePast:
  // VMAPI could not be read, so nothing is kept) becomes the next sync's
  // starting point and what `status` shows from `observed_at`.
  void PutBack(const std::string& project_uuid, absl::Time listed_at, std::vector<InstanceState> instances,
               absl::Time observed_at);

  // `status`: a copy of the last listing a sync put back, with the feed's
  // items since applied. False when there is none, or `vmapi_failing`
  // (the last read failed: nothing is claimed).
  bool LastObservation(const VmScope& scope, bool vmapi_failing, std::vector<InstanceState>* instances,
                       absl::Time* observed_at);

  // The state the change feed last showed each of `vms` in, among the
  // project's items not yet applied by a sync ("" when none came): what a
  // pump round reads before asking VMAPI about its jobs.
  std::vector<std::string> FeedStates(const std::string& project_uuid, const std::vector<std::string>& vms) const;

  // The change feed (triton/vm_feed.h): changed VMs, in the order
  // published. Returns the projects (known here) that got items.
  std::set<std::string> VmsChanged(std::vector<triton::Vm> vms);
  // The watch began or ended; true when that changed whether it is watched.
  bool FeedChanged(const triton::VmFeedStatus& status);
  // Whether the feed is watched now.
  bool Watching() const;
  // What `status` says of how VMs are read ("" = no feed configured).
  std::string WatchSummary() const;

  // Of `candidates`, the projects whose watched listing is current at
  // `now` (no item waiting, no full listing waiting to replace it, younger
  // than relist): their observation is as of `now`.
  std::set<std::string> Current(const std::set<std::string>& candidates, absl::Time now);
  // Queues the digest check of each project (uuid → owners) whose watched
  // listing was not checked for `audit`.
  void ScheduleAudits(const std::map<std::string, std::vector<std::string>>& projects, absl::Time now);
  // Drops what is kept of a project (another node runs it now, or it is
  // gone); safety-net reads under way for it are dropped when they end.
  void Forget(const std::string& project_uuid);

 private:
  struct Kept;
  struct Job {
    VmScope scope;
    uint64_t incarnation = 0;
    bool digest = false;  // the digest check, not a full listing
    absl::Time started;
  };
  Kept& Entry(const std::string& project_uuid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run();
  // A full listing done replaces the kept one, with the items since applied.
  void TakeRelisted(const VmScope& scope, Kept* k) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A digest done: compared now, or kept for the sync holding the listing.
  // True when it found VMs the feed missed.
  bool TakeDigest(const Job& job, std::vector<triton::Vm> digest) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The suspects read again and applied to `instances`; false when VMAPI
  // could not be read.
  bool ReadSuspects(const VmScope& scope, std::vector<std::string> suspects, std::vector<InstanceState>* instances);
  void CopyView(Kept* k) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool WatchedSince(absl::Time listed_at) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Note(const absl::Status& st) const {
    if (hooks_.note_vmapi) hooks_.note_vmapi(st);
  }

  triton::VmapiClient* vmapi_;
  const VmCacheOptions options_;
  const VmCacheHooks hooks_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Kept>> kept_ ABSL_GUARDED_BY(mu_);
  uint64_t incarnations_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<triton::VmFeedStatus> feed_ ABSL_GUARDED_BY(mu_);  // none: no feed configured
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;  // a job taken off jobs_ is being read
  std::thread runner_;
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_VM_CACHE_H_
