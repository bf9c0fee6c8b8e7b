// What a project owns outside VMAPI: its firewall rules in FWAPI, its fabric
// VLAN and networks in NAPI, its volumes in VOLAPI. Reads them for a sync
// (while the goal wants some or the project may own some), sends the
// changes a decision makes, remembers why each item's last change failed
// and when it is tried again, and lists what the project holds (for
// `project delete`). The Reconciler owns one; the record of a change about
// to be sent (its pending event, kept with the project's memory) and the
// fence a sync runs under stay the Reconciler's, asked through hooks.
#ifndef MARIPOSA_CONVERGENCE_OWNED_OWNED_OBJECTS_H_
#define MARIPOSA_CONVERGENCE_OWNED_OWNED_OBJECTS_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "convergence/decide/decide.h"
#include "projects/store.h"

namespace mariposa::convergence {

struct ReconcilerOptions;

// What a project owns in one API (FWAPI's rules, NAPI's fabric) as the last
// sync read it: `seen` (nullopt: not read; `error` says why), whether it may
// own any (read while it may; unknown at start), and why each item's last
// change failed.
template <typename T>
struct OwnedReading {
  std::optional<T> seen;
  std::string error;
  bool may_own = true;
  std::map<std::string, std::string> failures;
  std::map<std::string, int> attempts;         // failed attempts in a row, by item
  std::map<std::string, absl::Time> retry_at;  // not tried again before (ChangeBackoff)
};

class OwnedObjects {
 public:
  // The outcome of one change sent to such an API: on success the item's
  // failure is forgotten (and, for a create, the project may own some) and
  // `done` is the event; on failure it is kept for status and `failed` is
  // the event (its detail gets ": <error>"), logged with `label` naming it.
  struct ChangeOutcome {
    std::string key;    // the failures' key: the item's name
    bool made = false;  // a create
    std::string label;  // the log field naming the item
    EventRecord done, failed;
  };
  struct Hooks {
    std::function<void(const std::string& api, const absl::Status& st)> note_api;
    // Keeps `o`'s event as pending before its change is sent to `api`
    // ("firewall", "fabric", "volumes"); an error: the change is not sent.
    std::function<absl::Status(const ProjectRecord& p, const char* api, const ChangeOutcome& o)> intend;
    // Whether this node may still act on the project.
    std::function<bool()> holds_project;
  };
  // `clock` and `options` (the Reconciler's: its FWAPI, NAPI and VOLAPI
  // clients) must outlive it.
  OwnedObjects(const Clock* clock, const ReconcilerOptions* options, Hooks hooks)
      : clock_(clock), options_(*options), hooks_(std::move(hooks)) {}

  // A sync's readings into `s` (`last_seen`: the last sync's, not read now).
  void GatherFirewall(Snapshot* s, bool last_seen);
  void GatherFabric(Snapshot* s, bool last_seen);
  void GatherVolumes(Snapshot* s, bool last_seen);
  // The decision's FWAPI, NAPI and VOLAPI changes, in that order, while this
  // node holds the project; an event for each, failures kept for status.
  void Change(const Snapshot& s, const Decision& d, std::vector<EventRecord>* events);
  // What the project holds in the three APIs, read now; an API that cannot
  // be read is named in `h->unread`.
  void AddHoldings(const ProjectRecord& p, ProjectHoldings* h);
  // Nothing kept of the project any more (deleted, or held by another node).
  void Forget(const std::string& project_uuid);

 private:
  struct Readings {
    OwnedReading<std::vector<OwnedRule>> firewall;
    OwnedReading<Snapshot::FabricSeen> fabric;
    OwnedReading<std::vector<triton::Volume>> volumes;  // named as the project's
  };
  // Recall copies the last reading into `seen`, `error`, `failures` and
  // `retry_at` and says whether to read now (not for `last_seen`, nor when
  // nothing is wanted and nothing may be owned, unless the project is being
  // deleted); Keep records a reading (`owns`: it found something of the
  // project's); Record keeps a change's outcome.
  template <typename T>
  bool Recall(const Snapshot& s, OwnedReading<T> Readings::*member, bool wanted, bool last_seen,
              std::optional<T>* seen, std::string* error, std::map<std::string, std::string>* failures,
              std::map<std::string, absl::Time>* retry_at);
  template <typename T>
  void Keep(const Snapshot& s, OwnedReading<T> Readings::*member, absl::StatusOr<T> read, bool owns,
            std::optional<T>* seen, std::string* error);
  template <typename T>
  void Record(const ProjectRecord& p, OwnedReading<T> Readings::*member, const absl::Status& st, ChangeOutcome o,
              std::vector<EventRecord>* events);
  void ChangeFirewall(const Snapshot& s, const Decision& d, std::vector<EventRecord>* events);
  // A failed VLAN create skips its networks (they wait for the next sync).
  void ChangeFabric(const Snapshot& s, const Decision& d, std::vector<EventRecord>* events);
  void ChangeVolumes(const Snapshot& s, const Decision& d, std::vector<EventRecord>* events);
  EventRecord Event(const ProjectRecord& p, std::string kind, std::string detail) const {
    return EventRecord{0, clock_->Now(), "mariposad", p.name, std::move(kind), "", std::move(detail)};
  }
  void NoteApi(const std::string& api, const absl::Status& st) const {
    if (hooks_.note_api) hooks_.note_api(api, st);
  }

  const Clock* clock_;
  const ReconcilerOptions& options_;
  Hooks hooks_;
  absl::Mutex mu_;
  std::map<std::string, Readings> projects_ ABSL_GUARDED_BY(mu_);  // by uuid
};

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_OWNED_OWNED_OBJECTS_H_
