#include "projects/request_guard.h"


#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "absl/strings/str_cat.h"
#include "projects/limits.h"

namespace mariposa {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

size_t MaxBytesFor(const FieldDescriptor& f) {
  if (f.name() == "value") return Limits::kMaxValueBytes;  // meta values, map entries
  return Limits::kMaxTextBytes;
}

absl::Status CheckMessage(const Message& m, const std::string& prefix) {
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    std::string name = prefix.empty() ? absl::StrCat(m.GetDescriptor()->name(), ".", f->name())
                                      : absl::StrCat(prefix, ".", f->name());
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(m, f); ++i) {
          std::string at = absl::StrCat(name, "[", i, "]");
          if (absl::Status s = CheckMessage(r->GetRepeatedMessage(m, f, i), at); !s.ok()) return s;
        }
      } else if (absl::Status s = CheckMessage(r->GetMessage(m, f), name); !s.ok()) {
        return s;
      }
      continue;
    }
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_STRING || f->name() == "manifest") continue;
    std::string scratch;
    if (f->is_repeated()) {
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        const std::string& v = r->GetRepeatedStringReference(m, f, i, &scratch);
        if (absl::Status s = CheckText(absl::StrCat(name, "[", i, "]"), v, MaxBytesFor(*f)); !s.ok()) return s;
      }
    } else {
      const std::string& v = r->GetStringReference(m, f, &scratch);
      if (absl::Status s = CheckText(name, v, MaxBytesFor(*f)); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRequestText(const Message& request) { return CheckMessage(request, ""); }

RequestGuard::RequestGuard(const grpc::ServerContext* ctx, const Clock* clock, const Message& request)
    : ctx_(ctx), clock_(clock), give_up_(clock->Now() + Limits::kMaxRequestWork),
      next_poll_ns_(absl::ToUnixNanos(give_up_ - Limits::kMaxRequestWork + kFirstCancelPoll)),
      status_(ValidateRequestText(request)) {}

absl::Status RequestGuard::Check() const {
  absl::Time now = clock_->Now();
  int64_t due = next_poll_ns_.load(std::memory_order_relaxed);
  if (ctx_ != nullptr && !cancelled_.load() && absl::ToUnixNanos(now) >= due &&
      next_poll_ns_.compare_exchange_strong(due, absl::ToUnixNanos(now + kCancelPollEvery)) && ctx_->IsCancelled()) {
    cancelled_.store(true);  // every later Check says so too
  }
  if (cancelled_.load()) {
    return absl::CancelledError("the client cancelled the request or its deadline passed; nothing was changed");
  }
  if (now > give_up_) {
    return absl::DeadlineExceededError(absl::StrCat("the request took more than ",
                                                    absl::FormatDuration(Limits::kMaxRequestWork),
                                                    " of server work and was stopped; nothing was changed"));
  }
  return absl::OkStatus();
}

}  // namespace mariposa
