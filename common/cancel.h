// Cancellation: how long-running pure work (parsing, compiling, diffing) asks
// whether its caller still wants the answer. The gRPC adapter lives at the API
// edge (projects/projects_service.h); libraries only see this interface.
#ifndef MARIPOSA_COMMON_CANCEL_H_
#define MARIPOSA_COMMON_CANCEL_H_

#include "absl/status/status.h"

namespace mariposa {

// Thread-safe. Check() is cheap enough to call every few thousand steps.
class Cancellation {
 public:
  virtual ~Cancellation() = default;
  // OK while the work is wanted; CANCELLED or DEADLINE_EXCEEDED (with the
  // reason) once it should stop. Work that stops returns that status and
  // changes nothing.
  virtual absl::Status Check() const = 0;
};

// Never cancelled: for callers without a client (start-up, tests).
class NotCancelled : public Cancellation {
 public:
  absl::Status Check() const override { return absl::OkStatus(); }
  static const NotCancelled* Get() {
    static const NotCancelled* c = new NotCancelled();
    return c;
  }
};

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_CANCEL_H_
