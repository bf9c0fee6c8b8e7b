// What the controller remembers of a project's services between syncs
// (decide.h's ServiceMemory: backoff, crash loops, the replacement budget,
// agent install failures and a reinstall task's progress, image import
// failures; not the last installs' durations, which refill), as text kept
// in the store, so that a restart of mariposad or
// a standby's takeover goes on from it instead of starting over: a
// crash-looping service stays paused, a backoff keeps its length, a forced
// agent reinstall does not reinstall the servers it already did.
//
// JSON, versioned ("v": 1). Decoding refuses text of another version or
// shape (the caller then starts with no memory, and says so).
#ifndef MARIPOSA_CONVERGENCE_MEMORY_CODEC_H_
#define MARIPOSA_CONVERGENCE_MEMORY_CODEC_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "convergence/decide/decide.h"
#include "projects/store.h"

namespace mariposa::convergence {

// A change to FWAPI, NAPI or VOLAPI that is sent (or about to be) and
// whose event is not yet in the log. It is kept before the call, so that a
// kill -9 between the call and the event does not lose the event: the sync
// after the restart writes it once the API's reading (`api`: "firewall",
// "fabric", "volumes") shows nothing left to do, or drops it when it sends
// the same change again (`key`: the event's kind and the item).
struct PendingChange {
  std::string api, key;
  EventRecord done;
};

// By service, with the pending changes. Deterministic: the same memory
// encodes to the same text (the reconciler writes only when it changes).
std::string EncodeMemory(const std::map<std::string, ServiceMemory>& memory,
                         const std::vector<PendingChange>& pending = {});
absl::StatusOr<std::map<std::string, ServiceMemory>> DecodeMemory(const std::string& text,
                                                                  std::vector<PendingChange>* pending = nullptr);

}  // namespace mariposa::convergence

#endif  // MARIPOSA_CONVERGENCE_MEMORY_CODEC_H_
