// The gRPC Projects service: validation, diffs and versioning on top of a
// ProjectStore. Thread-safe (the store serializes writes).
#ifndef MARIPOSA_PROJECTS_PROJECTS_SERVICE_H_
#define MARIPOSA_PROJECTS_PROJECTS_SERVICE_H_

#include <functional>
#include <map>
#include <memory>
#include <set>

#include "absl/synchronization/mutex.h"
#include "common/cancel.h"
#include "common/clock.h"
#include "mariposa/v1/projects.grpc.pb.h"
#include "projects/access.h"
#include "projects/api_edge.h"
#include "projects/data_center.h"
#include "projects/image_plan.h"
#include "projects/manifest.h"
#include "projects/store.h"

namespace mariposa {

class ProjectsService final : public v1::Projects::Service {
 public:
  // `store` and `clock` must outlive the service. The clock times the server
  // work of each request (Limits::kMaxRequestWork).
  ProjectsService(ProjectStore* store, const Clock* clock) : store_(store), clock_(clock) {}
  // Called after every stored change of goal state (apply, rollback, meta):
  // the controller's wake-up. Set before serving.
  // Called with the project whose goal, meta or state changed.
  void set_on_change(std::function<void(const std::string& project_uuid)> f) { on_change_ = std::move(f); }
  // Rolls `project` back to `to_version` (uuid, number or tag) as `author`,
  // only if the version in force is still `expected_current`; the new
  // version's number. Used by the controller's auto_rollback.
  absl::StatusOr<int64_t> RollbackTo(const std::string& project, const std::string& to_version,
                                     const std::string& expected_current, const std::string& author,
                                     const std::string& message);
  // The data center an apply is checked against and a delete reads (see
  // projects/data_center.h); set before serving, when mariposad converges
  // against Triton. None: nothing is checked against a data center.
  void set_data_center(DataCenter* dc) { data_center_ = dc; }
  // The account recorded for a project that is created without one named
  // (mariposad's --owner; "" without Triton).
  void set_default_owner(std::string owner) { default_owner_ = std::move(owner); }
  // This data center's name (mariposad's --datacenter; "" without one): a
  // manifest that lists data centers is compiled as this one runs it.
  void set_datacenter(std::string name) { datacenter_ = std::move(name); }

  grpc::Status CreateProject(grpc::ServerContext*, const v1::CreateProjectRequest*, v1::CreateProjectResponse*) override;
  grpc::Status ListProjects(grpc::ServerContext*, const v1::ListProjectsRequest*, v1::ListProjectsResponse*) override;
  grpc::Status GetProject(grpc::ServerContext*, const v1::GetProjectRequest*, v1::GetProjectResponse*) override;
  grpc::Status CopyProject(grpc::ServerContext*, const v1::CopyProjectRequest*, v1::CopyProjectResponse*) override;
  grpc::Status ReceiveCopy(grpc::ServerContext*, const v1::ReceiveCopyRequest*, v1::CopyProjectResponse*) override;
  // Sends a copy to peer data center `datacenter` (its ReceiveCopy) and
  // returns its answer; `self` is this data center's name. Unset: no peers.
  using PeerCopier = std::function<absl::StatusOr<v1::CopyProjectResponse>(const std::string& datacenter,
                                                                            const v1::ReceiveCopyRequest& req)>;
  void set_peer_copier(std::string self, PeerCopier f) {
    peer_self_ = std::move(self);
    peer_copier_ = std::move(f);
  }
  grpc::Status DeleteProject(grpc::ServerContext*, const v1::DeleteProjectRequest*, v1::DeleteProjectResponse*) override;
  // Rollouts across data centers (projects_datacenters.cc).
  grpc::Status ReceiveVersion(grpc::ServerContext*, const v1::ReceiveVersionRequest*, v1::ApplyResponse*) override;
  grpc::Status ListRollouts(grpc::ServerContext*, const v1::ListRolloutsRequest*, v1::ListRolloutsResponse*) override;
  grpc::Status CancelRollout(grpc::ServerContext*, const v1::CancelRolloutRequest*, v1::CancelRolloutResponse*) override;
  // A version sent by a rollout, stored here on behalf of `author` (the
  // daemon's link to its own data center; ReceiveVersion's work).
  absl::StatusOr<v1::ApplyResponse> ReceiveHere(const v1::ReceiveVersionRequest& req, const std::string& author);
  // How an apply reaches the other data centers a manifest lists (the
  // daemon's peers): their checks and plans before a rollout starts, and
  // `started` once one is stored (the runner looks at once). Unset: a
  // manifest that lists another data center is refused.
  using VersionSender = std::function<absl::StatusOr<v1::ApplyResponse>(const std::string& datacenter,
                                                                       const v1::ReceiveVersionRequest& req)>;
  void set_rollouts(VersionSender send, std::function<void()> started) {
    send_version_ = std::move(send);
    rollout_started_ = std::move(started);
  }
  grpc::Status Apply(grpc::ServerContext*, const v1::ApplyRequest*, v1::ApplyResponse*) override;
  grpc::Status ListVersions(grpc::ServerContext*, const v1::ListVersionsRequest*, v1::ListVersionsResponse*) override;
  grpc::Status GetVersion(grpc::ServerContext*, const v1::GetVersionRequest*, v1::GetVersionResponse*) override;
  grpc::Status TagVersion(grpc::ServerContext*, const v1::TagVersionRequest*, v1::TagVersionResponse*) override;
  grpc::Status Rollback(grpc::ServerContext*, const v1::RollbackRequest*, v1::RollbackResponse*) override;
  grpc::Status Scale(grpc::ServerContext*, const v1::ScaleRequest*, v1::ScaleResponse*) override;
  grpc::Status ListMeta(grpc::ServerContext*, const v1::ListMetaRequest*, v1::ListMetaResponse*) override;
  grpc::Status GetMeta(grpc::ServerContext*, const v1::GetMetaRequest*, v1::GetMetaResponse*) override;
  grpc::Status SetMeta(grpc::ServerContext*, const v1::SetMetaRequest*, v1::SetMetaResponse*) override;
  grpc::Status DeleteMeta(grpc::ServerContext*, const v1::DeleteMetaRequest*, v1::DeleteMetaResponse*) override;
  grpc::Status IncrMeta(grpc::ServerContext*, const v1::IncrMetaRequest*, v1::IncrMetaResponse*) override;
  grpc::Status ImportMeta(grpc::ServerContext*, const v1::ImportMetaRequest*, v1::ImportMetaResponse*) override;
  grpc::Status ListEvents(grpc::ServerContext*, const v1::ListEventsRequest*, v1::ListEventsResponse*) override;

 private:
  struct Outcome;
  // What one ApplyText is asked to do, and on whose behalf. ApplyText is the
  // one path from manifest text to a stored version, shared by Apply,
  // Rollback and Scale.
  struct ApplyRequest {
    std::string project;   // overrides the manifest's `project:` when set
    std::string text;      // the manifest
    std::string filename;  // for located errors ("manifest" when empty)
    std::string previous;  // the version the writer started from ("" = any)
    bool force = false;
    bool dry_run = false;
    std::string origin;  // "apply", "rollback", "scale"
    int64_t rolled_back_to = 0;
    std::string message, author;
    // The Triton account a project this apply creates belongs to ("" =
    // mariposad's --owner): a Triton caller's own (auth/mahi.h).
    std::string owner;
    const Cancellation* cancel = nullptr;  // never null when called
    bool stored_text = false;             // a text this store accepted before
    std::optional<bool> thaw;             // user commands only: --thaw given or not
    bool allow_downgrade = true;
    std::function<absl::Status(const Manifest&)> admit;  // may the caller change this manifest's project
    // A new project's meta, to check the manifest's templates against (a
    // copy's, before it is stored); nullptr: what the store holds.
    const std::map<std::string, std::string>* new_meta = nullptr;
    // A version another data center's rollout sends (ReceiveVersion): stored
    // under this id (a second send finds it and stores nothing), and never
    // sent on from here.
    std::string version_uuid;
    bool received = false;
    // Apply's own: a manifest for other data centers goes to them through a
    // rollout (StartRollout). Rollback, scale and copies act here alone.
    bool may_roll_out = false;
  };
  absl::StatusOr<Outcome> ApplyText(const ApplyRequest& a);
  // A copy to make here (projects_copy.cc): from this data center's
  // CopyProject or another's ReceiveCopy.
  struct Copy {
    std::string target, text, origin, owner;
    std::map<std::string, std::string> plain, secrets;
    int overrides = 0;
    bool dry_run = false;
  };
  absl::Status MakeCopy(grpc::ServerContext* ctx, const Cancellation* cancel, const Copy& c,
                        v1::CopyProjectResponse* resp);
  // ApplyText's steps (projects_service.cc).
  struct Base;
  struct Checked;
  // `tree`: Compile's document tree, for this apply's diff (never cached).
  absl::StatusOr<std::shared_ptr<const CompiledManifest>> Compiled(const ApplyRequest& a, const ParseOptions& opts,
                                                                   Value* tree);
  absl::StatusOr<Base> ReadBase(const Manifest& m, const std::string& filename,
                                const std::map<std::string, std::string>* new_meta);
  absl::StatusOr<Checked> CheckDataCenter(const ApplyRequest& a, const Base& b, const Manifest& m,
                                          const std::string& filename, const v1::Diff& diff);
  absl::StatusOr<std::vector<std::string>> FreezesToThaw(const ApplyRequest& a, const Base& b,
                                                         const CompiledManifest& compiled, Outcome* out);
  absl::StatusOr<ProjectRecord> Project(const std::string& name);
  // Fills the image plans of `out->diff` for the services whose image
  // changes; a downgrade without `allow_downgrade` is refused (a warning
  // on a dry run). The planner failing leaves the plans out, with a warning.
  absl::Status PlanImages(const absl::StatusOr<std::map<std::string, ImagePlan>>& plans, bool allow_downgrade,
                          bool dry_run, Outcome* out);
  // Queues the reprovision task that rolls out the services an apply or
  // rollback changed (update.on_change: rollout); its uuid, or "" (a
  // refusal is added to `warnings`).
  std::string QueueRollout(const Outcome& out, const std::string& trigger, const std::string& author,
                           std::vector<std::string>* warnings);
  std::string QueueReprovision(const std::string& project_uuid, const std::vector<std::string>& services,
                               int64_t canary,
                               const std::string& version_uuid, const std::string& trigger, const std::string& author,
                               std::vector<std::string>* warnings);
  // After a meta change: queues the rollout of the services that use a
  // changed key and say update.on_meta_change: rollout.
  void MetaChanged(const ProjectRecord& p, const std::set<std::string>& keys, const std::string& author);
  // The parsed manifest of a stored version. Versions never change, so
  // parsed copies are cached by version uuid, up to kCacheBytes of canonical
  // text (a few large versions must not pin gigabytes).
  absl::StatusOr<std::shared_ptr<const CompiledManifest>> StoredManifest(const ProjectRecord& p, const std::string& version);
  void Remember(const std::string& version, std::shared_ptr<const CompiledManifest> m);

  static constexpr size_t kCacheBytes = 16 << 20;
  std::string datacenter_;
  VersionSender send_version_;
  std::function<void()> rollout_started_;
  // Apply's answer from ApplyText's outcome (Apply and ReceiveVersion). It
  // takes out.diff (moved into the answer, not copied): read it before.
  void Answer(Outcome& out, bool dry_run, const std::string& author, v1::ApplyResponse* resp);
  // The checks and plans of the other data centers, then (unless a dry
  // run) the rollout (projects_datacenters.cc).
  absl::Status StartRollout(const ApplyRequest& a, Outcome& out, bool dry_run, v1::ApplyResponse* resp);
  absl::StatusOr<v1::ApplyResponse> Receive(const v1::ReceiveVersionRequest& req, const std::string& author,
                                            const Cancellation* cancel,
                                            std::function<absl::Status(const Manifest&)> admit);
  ProjectStore* store_;
  const Clock* clock_;
  std::function<void(const std::string&)> on_change_;
  DataCenter* data_center_ = nullptr;
  std::string default_owner_;
  std::string peer_self_;
  PeerCopier peer_copier_;
  absl::Mutex cache_mu_;
  std::map<std::string, std::shared_ptr<const CompiledManifest>> parsed_ ABSL_GUARDED_BY(cache_mu_);
  size_t parsed_bytes_ ABSL_GUARDED_BY(cache_mu_) = 0;
};

// The core services (compute_type: core) of `before` that `after` lacks or
// makes something else: applying it would destroy their zones.
// One `scale` change: "web=5" sets, "web=+2" adds, "web=-1" removes.
struct ScaleChange {
  std::string service;
  char op = '=';  // '=', '+' or '-'
  int64_t n = 0;
};
// Pure: INVALID_ARGUMENT quoting the change when it is not exactly
// SERVICE=N, SERVICE=+N or SERVICE=-N (digits only: no spaces, signs
// elsewhere or numbers beyond Limits::kMaxCount).
absl::StatusOr<ScaleChange> ParseScaleChange(absl::string_view change);
// The count a change gives a service of `count`, or INVALID_ARGUMENT
// naming what it would give and the range 0..Limits::kMaxCount.
absl::StatusOr<int64_t> ScaledCount(const ScaleChange& c, int64_t count);

std::vector<std::string> DroppedCoreServices(const Manifest& before, const Manifest& after);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_PROJECTS_SERVICE_H_
