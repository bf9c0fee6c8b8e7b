#include "projects/events_service.h"

#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "projects/limits.h"
#include "projects/request_guard.h"
#include "projects/access.h"
#include "projects/api_edge.h"

namespace mariposa {

grpc::Status EventsService::Watch(grpc::ServerContext* ctx, const v1::WatchEventsRequest* req,
                                  grpc::ServerWriter<v1::Event>* writer) {
  if (absl::Status text = ValidateRequestText(*req); !text.ok()) return ToGrpc(text);
  if (!req->project().empty()) {
    auto p = store_->GetProject(req->project());
    if (!p.ok()) return ToGrpc(p.status());
  }
  if (absl::Status s = CheckRange("after_index", req->after_index(), 0, std::numeric_limits<int64_t>::max(),
                                  "0 = from the first event");
      !s.ok()) {
    return ToGrpc(s);
  }
  auto wanted = [&](const std::string& kind) {
    if (req->kinds().empty()) return true;
    for (const std::string& k : req->kinds()) {
      if (kind == k || (absl::EndsWith(k, ".") && absl::StartsWith(kind, k))) return true;
    }
    return false;
  };
  int64_t after = req->after_index();
  if (req->tail()) {
    auto last = store_->LastEventIndex();
    if (!last.ok()) return ToGrpc(last.status());
    after = *last;
  }
  // Accepted: said at once, before any event (the HTTP gateway answers a
  // refusal as an HTTP error, an open stream as Server-Sent Events).
  ctx->AddInitialMetadata("x-mariposa-stream", "open");
  writer->SendInitialMetadata();
  ChangeSignal* signal = store_->EventsSignal();
  while (!ctx->IsCancelled()) {
    int64_t seen = signal != nullptr ? signal->generation() : 0;  // before reading: no commit slept through
    if (stopping_.load()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("mariposad is stopping; resume after event ", after, " when it is back"));
    }
    auto list = store_->ListEvents(req->project(), after, 500);
    if (!list.ok()) return ToGrpc(list.status());
    for (const EventRecord& e : *list) {
      after = e.index;
      if (!CanSee(ctx, e.project) || !wanted(e.kind)) continue;
      v1::Event out;
      EventToProto(e, &out);
      if (!writer->Write(out)) return grpc::Status::OK;  // the client went away
    }
    if (list->size() >= 500 || stopping_.load()) continue;
    // A store without a signal is read every poll_; with one, poll_ only
    // bounds the wait (a client gone is noticed within it).
    if (signal != nullptr) signal->AwaitChange(seen, clock_->Now() + poll_, clock_);
    else clock_->SleepFor(poll_);
  }
  return grpc::Status::OK;
}

}  // namespace mariposa
