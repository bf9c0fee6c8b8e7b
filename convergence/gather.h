// The Gatherer: everything one sync (or `status`) needs, read into an
// immutable Snapshot (gather.cc, one step per function): the goal, the
// project's VMs from the informer, the jobs, health, the instances' clocks,
// what each service is made of, the servers of agent services, and what the
// project owns outside VMAPI (through OwnedObjects). It reads Triton and the
// store and writes only what it keeps of the project (ProjectState, under
// the Reconciler's lock), the instances' clocks and the adoption of core
// zones.
#ifndef MARIPOSA_CONVERGENCE_GATHER_H_
#define MARIPOSA_CONVERGENCE_GATHER_H_

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "convergence/decide/catalog.h"
#include "convergence/decide/decide.h"
#include "convergence/decide/goal.h"
#include "convergence/informer/triton_catalog.h"
#include "convergence/informer/vm_cache.h"
#include "convergence/owned/owned_objects.h"
#include "convergence/project_state.h"
#include "convergence/triton/clients.h"
#include "projects/store.h"

namespace mariposa::convergence {

struct ReconcilerOptions;

class Gatherer {
 public:
  // What the Reconciler shares with it, under the Reconciler's locks.
  struct Shared {
    absl::Mutex* mu;                                    // guards projects and api
    std::map<std::string, ProjectState>* projects;      // by uuid
    const std::map<std::string, ApiProblem>* api;       // failing APIs
    absl::Mutex* latency_mu;                            // guards latency
    const std::map<std::string, absl::Duration>* latency;
  };
  struct Hooks {
    std::function<void(const std::string& api, const absl::Status& st)> note_api;
  };
  // All collaborators must outlive it.
  Gatherer(ProjectStore* store, triton::VmapiClient* vmapi, triton::ImgapiClient* imgapi, const Clock* clock,
           const ReconcilerOptions* options, GoalCache* goals, VmCache* vms, TritonCatalog* triton,
           OwnedObjects* owned, Shared shared, Hooks hooks);

  // `listed`, when given, is set to when the snapshot's instances were
  // listed (InfinitePast: VMAPI could not be read; keep nothing).
  // `last_seen` (Inspect): nothing is asked of Triton (see Reconciler::Inspect).
  // `observe_only` (Inspect of a project another node runs): VMAPI is read,
  // nothing is written to Triton or the store.
  absl::StatusOr<Snapshot> Gather(const std::string& project, bool poll_jobs, absl::Duration* observe,
                                  absl::Time* listed, bool last_seen = false, bool observe_only = false);
  // The states of `jobs`: how each ended, or nullopt while it runs.
  std::vector<std::optional<FinishedJob>> PollJobs(const std::vector<JobRecord>& jobs);
  // Forgets the resolved images, and tells the other nodes
  // (options.images_changed).
  void ImagesChanged();
  // The admin account's core zones (tagged smartdc_role), by role.
  absl::StatusOr<std::map<std::string, std::vector<triton::Vm>>> CoreZones();
  // After a sync of an agent project that sent work: the full listing of
  // the servers, when one is due (ListServersInFull) — taken while the batch
  // just sent runs, not in the sync that sees it end and sends the next.
  void ListServersAfterSend(const std::string& project_uuid);
  // The failing APIs, as the Snapshot carries them.
  std::vector<ApiProblem> ApiProblems() const;

  // Finished tasks read by a sync of a project with scheduled or event
  // services (their runs' outcomes and history).
  static constexpr int kFinishedRunsRead = 200;

 private:
  // Gather's steps (gather.cc, in this order).
  struct Observation {
    absl::Time listed_at;      // of the instances read
    bool incremental = false;  // the kept listing (RefreshEnded follows)
  };
  absl::StatusOr<Snapshot> GatherGoal(const std::string& project);
  // The kept memory (memory_codec.h) of project `p`: recalled from the
  // store once, before its first sync.
  void RecallMemory(const ProjectRecord& p);
  Observation ObserveInstances(Snapshot* s, bool poll_jobs, bool last_seen, absl::Time now);
  // The informer's scope for the snapshot's project.
  VmScope ScopeOf(const Snapshot& s) const;
  void ListInstances(Snapshot* s);
  absl::Status GatherJobs(Snapshot* s, bool poll_jobs, absl::Time now);
  // Updates `instances` (the last listing) with the VMs of the jobs that
  // ended (read kEndedReadBatch to a ListVms by uuid); false when one could
  // not be read.
  static constexpr size_t kEndedReadBatch = 200;
  bool RefreshEnded(const ProjectRecord& project, const std::map<std::string, int64_t>& version_numbers,
                    const std::vector<FinishedJob>& finished, std::vector<InstanceState>* instances);
  // Takes the core zones of the goal's core services that no project
  // claims yet (AdoptionTags) into `s`'s instances.
  void AdoptCoreZones(Snapshot* s);
  void MarkStaleChecks(Snapshot* s);
  void ReadHealth(Snapshot* s);
  void RecallStoredTimes(Snapshot* s);
  void ShowTrackedTimes(Snapshot* s);
  void TrackTimes(Snapshot* s, absl::Time now);
  std::optional<std::vector<InstanceTimes>> TimesToRecall(const ProjectRecord& project);
  absl::Status GatherRecipes(Snapshot* s, bool last_seen, std::set<std::string>* label_keys);
  void BuildRecipe(Snapshot* s, const std::string& service, const ServiceGoalSpec& g,
                   const absl::StatusOr<std::shared_ptr<const Catalog>>& catalog);
  void GatherLabelledVms(Snapshot* s, const std::set<std::string>& label_keys);
  void GatherRemovedAgents(Snapshot* s);
  // The agent services the version before `s.goal` had and it does not
  // (Snapshot::removed_agents); reads the store.
  absl::StatusOr<std::map<std::string, Snapshot::RemovedAgent>> RemovedAgents(const Snapshot& s);
  void GatherServers(Snapshot* s, bool last_seen);
  bool RefreshServers(Snapshot* s);
  // ListServersInFull for a project's kept listing, now (mu_ held).
  bool ServersListingDue(const ProjectState& ps, bool busy) const;
  // Lists every server (CNAPI) and keeps the listing for `uuid`'s syncs.
  absl::StatusOr<std::vector<triton::Server>> ListServers(const std::string& uuid);
  void NoteApi(const std::string& api, const absl::Status& st) { hooks_.note_api(api, st); }

  ProjectStore* store_;
  triton::VmapiClient* vmapi_;
  triton::ImgapiClient* imgapi_;
  const Clock* clock_;
  const ReconcilerOptions& options_;
  GoalCache& goals_;
  VmCache& vms_;
  TritonCatalog& triton_;
  OwnedObjects& owned_;
  absl::Mutex& mu_;
  std::map<std::string, ProjectState>& projects_;
  const std::map<std::string, ApiProblem>& api_;
  absl::Mutex& latency_mu_;
  const std::map<std::string, absl::Duration>& latency_;
  Hooks hooks_;
};

// Since when each instance runs at its spec and image, and is healthy: one
// sync's clocks carried on, restarted (a new spec or image) or begun in
// `ps`, and written into `instances`; `changed` and `gone` are what the
// store must learn.
void TrackClocks(ProjectState* ps, std::vector<InstanceState>* instances, absl::Time now,
                 std::vector<InstanceTimes>* changed, std::vector<std::string>* gone);
// Instances that mount a copy of a volume deleted outside Mariposa are
// outdated (stale_mount).
void MarkLostMounts(Snapshot* s);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_GATHER_H_
