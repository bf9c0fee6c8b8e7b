// The observer: rebuilds a project's actual state from VMAPI, using only the
// VMs Mariposa created (tag mariposa.project = project uuid); everything
// else is ignored. Owns no decisions. Thread-safe if the client is.
//
// Instances only: servers and agents are read by the reconciler from CNAPI
// (agent services), images resolved through IMGAPI when needed.
#ifndef MARIPOSA_CONVERGENCE_OBSERVER_H_
#define MARIPOSA_CONVERGENCE_OBSERVER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "convergence/decide/planner.h"
#include "convergence/triton/clients.h"

namespace mariposa::convergence {

// Ownership tags every VM created by Mariposa carries (DESIGN.md).
inline constexpr char kTagProject[] = "mariposa.project";
inline constexpr char kTagService[] = "mariposa.service";
inline constexpr char kTagVersion[] = "mariposa.version";
inline constexpr char kTagSpec[] = "mariposa.spec";
// The run (task uuid) an instance of a scheduled or event service belongs to.
inline constexpr char kTagRun[] = "mariposa.run";
// stop.preserve_stopped: "<RFC 3339 time> <reason>" on an instance taken out
// of service and kept; it reads as state "preserved" and counts nowhere.
inline constexpr char kTagPreserved[] = "mariposa.preserved";
// Triton's own tags of a core zone (imgapi0 ...): its role and type.
inline constexpr char kTagCoreRole[] = "smartdc_role";
inline constexpr char kTagCoreType[] = "smartdc_type";
// What Mariposa made an instance with, for noticing changes made by hand in
// VMAPI: "<P|R><package>.<tags>.<metadata>", each part a 12-hex-digit hash
// (MadeFingerprint). Set at create and by every put-back (a retag).
inline constexpr char kTagMade[] = "mariposa.made";
// The customer_metadata key users set to take an instance out of CNS's
// service records by hand (`triton.cns.status: down`): never drift.
inline constexpr char kCnsStatusKey[] = "triton.cns.status";
// Mariposa's own hold on an instance's discovery, in its internal_metadata
// (which the instance cannot change): "<RFC 3339 time> <why>" while
// Mariposa keeps it out of CNS (triton.cns.status down) since that time
// (decide.h's DiscoveryHold).
inline constexpr char kDiscoveryKey[] = "mariposa:discovery";

// The fingerprint of what an instance carries that Mariposa set and nothing
// else changes: its package (billing_id and ram; ram alone when created
// without a billing_id: VMAPI may fill one in), its tags but Mariposa's own
// (mariposa.*, and triton.cns.services, set in place apart), and its
// customer_metadata but triton.cns.status. The same function reads what a
// create asks and what VMAPI shows, so they match until someone edits it.
std::string MadeFingerprint(const std::string& billing_id, int64_t ram,
                            const std::map<std::string, std::string>& tags,
                            const std::map<std::string, std::string>& customer_metadata, bool with_billing_id);
// What differs between two fingerprints: "package", "tags", "metadata"
// joined by '+'; "" when they agree or `made` is empty or malformed (an
// instance made before fingerprints: nothing to compare with).
std::string MadeDifference(const std::string& made, const std::string& now);

class Observer {
 public:
  // `vmapi` must outlive the observer. `owners`: the Triton accounts whose
  // VMs may be the project's (its account, and Triton's admin account for
  // core zones); every listing names one (VMAPI's owner_uuid), so a VM of
  // another account that carries the project's tags is never seen. Empty:
  // listings name no owner.
  explicit Observer(triton::VmapiClient* vmapi, std::vector<std::string> owners = {})
      : vmapi_(vmapi), owners_(std::move(owners)) {}

  // The project's instances (destroyed ones excluded). `version_numbers`
  // maps project version uuids to their numbers; an unknown uuid reads as 0
  // (older than every known version). Health is "unknown" until health
  // results are wired in.
  absl::StatusOr<std::vector<InstanceState>> ObserveProject(const std::string& project_uuid,
                                                            const std::map<std::string, int64_t>& version_numbers);

  // The same, read service by service on up to `parallel` threads (VMAPI
  // pages are parsed concurrently; each owner's apart), then checked against
  // a count of all the project's VMs: if VMs of other services exist (a service left the
  // manifest) or the counts disagree, everything is read in one listing.
  absl::StatusOr<std::vector<InstanceState>> ObserveProject(const std::string& project_uuid,
                                                            const std::map<std::string, int64_t>& version_numbers,
                                                            const std::vector<std::string>& services, int parallel);

 // One VM as an instance of the project, or nullopt when it is not one of
  // the project's (ownership tags) or is destroyed.
  static std::optional<InstanceState> FromVm(const triton::Vm& vm, const std::string& project_uuid,
                                             const std::map<std::string, int64_t>& version_numbers);

 private:
  absl::StatusOr<std::vector<InstanceState>> List(const triton::VmFilter& filter, const std::string& project_uuid,
                                                  const std::map<std::string, int64_t>& version_numbers,
                                                  int64_t* listed);

  // One filter per owner (one with none when there are no owners).
  std::vector<triton::VmFilter> Scoped(const triton::VmFilter& filter) const;

  triton::VmapiClient* vmapi_;
  std::vector<std::string> owners_;
};

// A core zone (compute_type: core) found by its role: the tags that make it
// an instance of `service` of the project, added to the ones it has; empty
// when it is destroyed or already claimed by a project. It counts as current
// (spec tag = `spec_hash`) when it runs `goal_image_uuid`, since sdcadm
// compares images only; otherwise it reads as outdated and is reprovisioned.
std::map<std::string, std::string> AdoptionTags(const triton::Vm& vm, const std::string& project_uuid,
                                                const std::string& service, const std::string& version_uuid,
                                                const std::string& spec_hash, const std::string& goal_image_uuid);

// Changed VMs (VMAPI's change feed, in the order published) applied to a
// project's instances: a VM of the project (FromVm, of one of `owners`;
// empty: any) replaces or joins its instance; one that is destroyed, of
// another account or no longer the project's leaves. A VM whose
// last_modified is older than the instance's is skipped (the listing read
// a newer state). Pure.
void ApplyVmChanges(const std::vector<triton::Vm>& changed, const std::string& project_uuid,
                    const std::map<std::string, int64_t>& version_numbers, const std::vector<std::string>& owners,
                    std::vector<InstanceState>* instances);

// The change feed's check (Reconciler's audit): `digest` is VMAPI's
// listing of the project's VMs that are not destroyed, with only uuid,
// state and last_modified, read from `read_at`. The uuids whose kept
// instance is older than the digest's, missing from `kept`, or in `kept`
// made before `read_at` but not in the digest (destroyed): what the feed
// did not bring. Sorted. Pure.
std::vector<std::string> DigestSuspects(const std::vector<InstanceState>& kept, const std::vector<triton::Vm>& digest,
                                        absl::Time read_at);

// "2026-11-22T12:00:00.123Z" -> absl::Time; InfinitePast when unreadable.
absl::Time ParseTimestamp(const std::string& iso);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_OBSERVER_H_
