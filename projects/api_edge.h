// Conversions at the gRPC API's edge that every service shares: status
// codes, timestamps and events as the API shows them. Thread-safe.
#ifndef MARIPOSA_PROJECTS_API_EDGE_H_
#define MARIPOSA_PROJECTS_API_EDGE_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "google/protobuf/timestamp.pb.h"
#include "mariposa/v1/projects.pb.h"
#include "projects/store.h"

namespace mariposa {

// Converts at the API edge: absl codes and gRPC codes share their numbers.
grpc::Status ToGrpc(const absl::Status& s);

// Sets `ts` from `t`; leaves it unset for InfinitePast (never happened).
void SetTimestamp(absl::Time t, google::protobuf::Timestamp* ts);

// An event of the store as the API shows it.
void EventToProto(const EventRecord& e, v1::Event* out);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_API_EDGE_H_
