// What the Reconciler keeps of each project between its syncs: the
// controller's memory, the pending changes, the last sync's problems, the
// plan cache, the pump's backlog and the instances' clocks. Shared by the
// Reconciler and its Gatherer under the Reconciler's lock.
#ifndef MARIPOSA_CONVERGENCE_PROJECT_STATE_H_
#define MARIPOSA_CONVERGENCE_PROJECT_STATE_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "convergence/decide/decide.h"
#include "convergence/decide/planner.h"
#include "convergence/memory_codec.h"
#include "convergence/triton/clients.h"

namespace mariposa::convergence {

// A pump round's jobs, sent, and their write to the store (the jobs, their
// tasks' steps and their events in one commit), made on a thread of its own
// while the pump sends its next round: a mass scale's rounds no longer
// leave VMAPI idle for a commit each. Destroying the last reference waits
// for the write (std::async).
struct Recording {
  std::vector<JobRecord> jobs;
  std::future<absl::Status> written;
  std::optional<absl::Status> status;  // once waited for
  // The write's status, waiting for it the first time. Only the project's
  // worker calls it (one at a time), or Stop once the workers are gone.
  const absl::Status& Wait() {
    if (!status) status = written.get();
    return *status;
  }
};

// What is kept of a project (by uuid) between its syncs.
struct ProjectState {
  std::set<std::string> adopted;  // core zones whose adoption was announced
  std::string name;
  std::map<std::string, ServiceMemory> memory;  // by service
  // `memory` is read from the store at the project's first sync after
  // mariposad starts, and written back when it changes (memory_kept:
  // what the store holds).
  bool memory_recalled = false;
  bool times_recalled = false;  // `tracked` was filled from the store (InstanceTimes)
  int64_t epoch = 0;  // several nodes: the lease epoch this state was built under
  std::string memory_kept;
  // Changes sent to FWAPI, NAPI or VOLAPI whose events are not yet in the
  // log (memory_codec.h), kept with `memory`; `intended`: the keys of
  // those this sync sent (their events are in its batch).
  std::vector<PendingChange> pending;
  std::set<std::string> intended;
  int in_flight = 0;                            // jobs in flight after the last sync
  // Job slots a sync in progress holds for what it may send (the window it
  // hands Decide), counted by the others until it has sent: two syncs at
  // once never both take the same free slots of --max-jobs.
  int reserved = 0;
  // Its last sync or pump held work because the other projects had every
  // free slot of --max-jobs: woken when one of their jobs ends, not left to
  // the resync. Kept until its next sync or pump looks again (it counts
  // as wanting slots in FairJobShare meanwhile); wake_sent: woken since.
  bool window_held = false;
  bool wake_sent = false;
  std::vector<Problem> decided, executed;       // the last sync's problems: Decide's, Execute's
  PlanCache plan;                               // used by the one worker syncing the project
  absl::Duration poll_after;                    // how soon its jobs in flight are looked at again
  // How long its jobs take, at least (JobPollPlan::took), and when its jobs
  // in flight were last asked.
  absl::Duration jobs_take;
  absl::Time jobs_asked = absl::InfinitePast();
  std::vector<triton::Server> servers;  // CNAPI's, as the last sync read them
  bool servers_known = false;
  absl::Time servers_listed = absl::InfinitePast();  // when all of them were last listed
  // The pump's: creates the last sync's job window held (tasks resolved),
  // what they were decided on, changes_ then, when that sync ended, and
  // the jobs the pump saw end (the next sync counts them).
  std::deque<Step> backlog;
  std::shared_ptr<const Snapshot> backlog_from;
  uint64_t backlog_changes = 0;
  absl::Time synced_at;
  absl::Duration sync_cost;  // how long the last sync took
  // The last sync found the project Quiet (decide.h) and nothing woke it
  // since: while the feed is watched, Resync skips it.
  bool quiet = false;
  std::map<std::string, FinishedJob> ended;
  // Their job uuids, as the store's ListJobsExcept takes them: kept as they
  // end, not built again by each pump round (thousands in a scale). Lent
  // to the pump round that runs (Pump::known) and given back after it.
  absl::flat_hash_set<std::string> ended_ids;
  // The pump's last round while its write may still run: the next round
  // counts its jobs from here (not yet in the store, perhaps) and waits for
  // the write before starting its own; a sync waits for it before reading
  // the jobs in flight.
  std::shared_ptr<Recording> recording;
  // Per instance: since when it runs at its spec and image, and is healthy
  // (update.min_healthy_time, the deadlines). Instances first seen so
  // count from their creation.
  struct Tracked {
    std::string spec_hash, image_uuid;  // what it ran when the times below started
    absl::Time up_since = absl::InfiniteFuture(), healthy_since = absl::InfiniteFuture();
    std::string health;  // as the last sync saw it ("" = not checked), kept for other nodes' status
    uint64_t seen = 0;  // the sync that saw it last (those not seen are dropped)
  };
  absl::flat_hash_map<std::string, Tracked> tracked;
  uint64_t track_round = 0;
  // Snapshot::removed_agents of the version in force (versions are
  // immutable: read from the store once per version).
  std::string removed_for;
  std::map<std::string, Snapshot::RemovedAgent> removed;
  void DropBacklog() {
    backlog.clear();
    backlog_from = nullptr;
  }
};

// The jobs every project but `uuid` has in flight or holds (reserved).
inline int JobsHeldByOthers(const std::map<std::string, ProjectState>& projects, const std::string& uuid) {
  int held = 0;
  for (const auto& [other, ps] : projects) held += other == uuid ? 0 : ps.in_flight + ps.reserved;
  return held;
}

// Project `uuid`'s share of --max-jobs: max-min fair among the projects
// that want slots. One that waits for the others (window_held) and this
// one want up to --max-jobs-per-project; one that only has jobs in flight
// wants what it holds. A project wanting less than an equal share leaves
// the rest to the others, so a share is never left unused while another
// project waits, and one project's scale no longer holds every other
// project's work until it is done.
inline int64_t FairJobShare(int max_jobs, int max_jobs_per_project,
                            const std::map<std::string, ProjectState>& projects, const std::string& uuid) {
  const int64_t most = std::max(1, max_jobs_per_project);
  std::vector<int64_t> wants;
  for (const auto& [other, ps] : projects) {
    if (other == uuid) continue;
    if (ps.window_held) wants.push_back(most);
    else if (ps.in_flight + ps.reserved > 0) wants.push_back(ps.in_flight + ps.reserved);
  }
  wants.push_back(most);  // this project's
  std::sort(wants.begin(), wants.end());
  int64_t left = std::max(0, max_jobs);
  int64_t n = static_cast<int64_t>(wants.size());
  for (int64_t w : wants) {
    const int64_t level = (left + n - 1) / n;  // rounded up: --max-jobs itself still bounds the sum
    if (w >= level) return std::min(level, most);
    left -= w;
    --n;
  }
  return most;
}

// The job slots project `uuid` may fill with `running` of its jobs in
// flight: its own window (--max-jobs-per-project), what the other projects
// leave of --max-jobs, and its fair share of --max-jobs (FairJobShare). A
// sync and the pump both ask it.
struct JobWindow {
  int64_t own = 0, global = 0, share = 0;
  int64_t free() const { return std::max<int64_t>(0, std::min({own, global, share})); }
  // The other projects' jobs (or their share), not this project's, are
  // what holds the rest.
  bool held_by_others() const { return own > 0 && std::min(global, share) < own; }
};
inline JobWindow FreeJobSlots(int max_jobs, int max_jobs_per_project,
                              const std::map<std::string, ProjectState>& projects, const std::string& uuid,
                              int64_t running) {
  return {std::max(1, max_jobs_per_project) - running, max_jobs - JobsHeldByOthers(projects, uuid) - running,
          FairJobShare(max_jobs, max_jobs_per_project, projects, uuid) - running};
}

// The projects waiting for the others' slots (window_held, not yet woken)
// that have free slots now, to wake: in turn from the one after `after`
// (the last woken), and no more than --max-jobs has free slots — a job's
// end wakes the projects that can use what it freed, not every waiting
// project to find none (each wake is a sync that lists the project).
inline std::vector<std::string> HeldProjectsToWake(int max_jobs, int max_jobs_per_project,
                                                   const std::map<std::string, ProjectState>& projects,
                                                   const std::string& after) {
  std::vector<std::string> wake;
  int64_t budget = max_jobs;
  for (const auto& kv : projects) budget -= kv.second.in_flight + kv.second.reserved;
  auto it = projects.upper_bound(after);
  for (size_t k = 0; k < projects.size() && budget > 0; ++k) {
    if (it == projects.end()) it = projects.begin();
    const auto& [uuid, ps] = *it++;
    if (!ps.window_held || ps.wake_sent) continue;
    const int64_t free = FreeJobSlots(max_jobs, max_jobs_per_project, projects, uuid, ps.in_flight).free();
    if (free <= 0) continue;
    wake.push_back(uuid);
    budget -= free;
  }
  return wake;
}

// When a project's jobs in flight are asked again, decided at `now` after a
// sync or pump that asked them (the project's ask before: `prev_asked`).
struct JobPollInput {
  absl::Duration prev;          // the wait chosen after the previous ask
  absl::Duration took;          // what the project's jobs took, at least, as learned so far (0: unknown)
  absl::Time prev_asked = absl::InfinitePast();
  absl::Time now;
  std::vector<absl::Time> ended_sent;    // sent times of the jobs this ask saw end
  std::vector<absl::Time> running_sent;  // sent times of the jobs still in flight (those just sent included)
  absl::Duration first = absl::Milliseconds(1);  // the first wait after a job ended
  absl::Duration late = absl::Milliseconds(5);   // the least wait for a job past its expected end
  absl::Duration cap = absl::Milliseconds(250);  // the longest wait (job_poll)
};
struct JobPollPlan {
  absl::Duration after;  // ask again this long after `now`
  absl::Duration took;   // what the project's jobs take, at least, learned so far
};
// The wait doubles from `first` up to `cap` while no job ends, and starts at
// `first` again once one ended (a fast API is followed closely, a slow one
// is not asked in vain). Jobs of one project tend to take as long as its
// last ones did (an agent's install, a VM's create): a job that ended was
// still running at the ask before, so it took at least prev_asked - sent
// (a lower bound, never an overestimate). The wait never passes the moment
// the next job in flight reaches that age, and a job past it is asked again
// after as long as it is late (at least `late`): a rollout's batch is seen
// ending within milliseconds instead of up to `cap` later, and the doubling
// wait is only ever shortened, never lengthened.
inline JobPollPlan PlanJobPoll(const JobPollInput& in) {
  JobPollPlan out;
  out.took = in.took;
  absl::Duration learned = absl::ZeroDuration();
  for (absl::Time sent : in.ended_sent) {
    if (in.prev_asked > sent && in.prev_asked != absl::InfinitePast()) learned = std::max(learned, in.prev_asked - sent);
  }
  if (learned > absl::ZeroDuration()) out.took = learned;
  out.after = in.ended_sent.empty() ? std::min(std::max(in.prev * 2, in.first), in.cap) : in.first;
  if (out.took <= absl::ZeroDuration()) return out;
  for (absl::Time sent : in.running_sent) {
    absl::Time due = sent + out.took;
    absl::Duration wait = due > in.now ? due - in.now : std::max(in.late, in.now - due);
    out.after = std::min(out.after, std::max(wait, in.first));
  }
  return out;
}

// Whether an agent project's servers are listed in full now (CNAPI's
// ListServers) rather than keeping the last listing and reading again only
// the servers whose CNAPI tasks ended (GetServer). In full when there is no
// good listing (none yet, or CNAPI failing) and, as the safety net that sees
// servers added and agents changed by hand, once the listing is
// `full_observe` old — except while a rollout's batch is `busy` (its tasks
// ended in this sync, which sends the next batch, or are still running),
// until the listing is kServersListingDeferral × full_observe old. A
// listing of 1,000 servers (a megabyte of JSON) takes 150–250 ms here;
// taken in the sync that sends a batch or in a poll just before the batch
// ends, it held the next batch that long about once a second (issue 49: the
// agent rollout at 200 ms tasks). The sync that sent a batch lists them
// after sending, while the batch runs (Gatherer::ListServersAfterSend, not
// busy).
inline constexpr int kServersListingDeferral = 3;
inline bool ListServersInFull(bool listed, bool cnapi_failing, absl::Duration age, absl::Duration full_observe,
                              bool busy) {
  if (!listed || cnapi_failing) return true;
  if (age < full_observe) return false;
  return !busy || age >= kServersListingDeferral * full_observe;
}

// The jobs whose end their VM's state shows: a VMAPI create or delete with
// a job and a VM (StateShowsJobSucceeded says which state; AskJobNow).
inline bool FeedShowsJobEnd(const JobRecord& job) {
  return job.api == "vmapi" && !job.instance.empty() && !absl::StartsWith(job.job_uuid, "create:") &&
         (job.kind == "create" || job.kind == "delete");
}

// While VMAPI's change feed is watched, a create's or a delete's end is
// shown by its VM's item (StateShowsJobSucceeded: running, destroyed), which
// wakes the project; such a job is asked of VMAPI only once it is overdue —
// `feed_grace` past the time the project's jobs take (`took`, zero while
// unknown) — for its item was lost or late, or the job failed (a failed
// create's VM shows "failed", and its error is the job's). Asking sooner
// races the item (tritonsim ends a job and publishes its VM at once) and
// costs a GetJob per create in a mass scale (issue 49). Polled, or any
// other job: asked at every look.
inline bool AskJobNow(const JobRecord& job, bool watching, absl::Time now, absl::Duration took,
                      absl::Duration feed_grace) {
  if (!watching || !FeedShowsJobEnd(job)) return true;
  return now - job.sent_at >= std::max(took, absl::ZeroDuration()) + feed_grace;
}

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_PROJECT_STATE_H_
