#include "projects/api_edge.h"

#include <string>

#include "projects/limits.h"

namespace mariposa {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

void SetTimestamp(absl::Time t, google::protobuf::Timestamp* ts) {
  if (t == absl::InfinitePast()) return;
  int64_t us = absl::ToUnixMicros(t);
  ts->set_seconds(us / 1000000);
  ts->set_nanos(static_cast<int>((us % 1000000) * 1000));
}

void EventToProto(const EventRecord& e, v1::Event* out) {
  out->set_index(e.index);
  SetTimestamp(e.time, out->mutable_time());
  out->set_actor(ValidUtf8(e.actor));
  out->set_project(ValidUtf8(e.project));
  out->set_kind(ValidUtf8(e.kind));
  out->set_subject(ValidUtf8(e.subject));
  out->set_detail(ValidUtf8(e.detail));
}

}  // namespace mariposa
