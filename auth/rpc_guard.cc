#include "auth/rpc_guard.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/impl/service_type.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/method_handler.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "auth/rbac.h"
#include "mariposa/v1/access.pb.h"
#include "projects/access.h"
#include "projects/request_guard.h"

namespace mariposa::auth {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using grpc::internal::MethodHandler;
using grpc::internal::RpcServiceMethod;

// gRPC's synchronous server offers no public way to put a check in front of a
// handler that can refuse the call before the handler runs (an interceptor can
// only cancel it, and the handler still runs). The method table of a
// grpc::Service and the handler of each method are private; an explicit
// instantiation may name private members (C++17 [temp.explicit]/14), which is
// how the guard reaches them. Only GuardEveryMethod does.
template <typename Tag, typename Tag::type kMember>
struct Reach {
  friend typename Tag::type MemberOf(Tag) { return kMember; }
};
struct ServiceMethods {
  using type = std::vector<std::unique_ptr<RpcServiceMethod>> grpc::Service::*;
  friend type MemberOf(ServiceMethods);
};
struct MethodHandlerOf {
  using type = std::unique_ptr<MethodHandler> RpcServiceMethod::*;
  friend type MemberOf(MethodHandlerOf);
};
template struct Reach<ServiceMethods, &grpc::Service::methods_>;
template struct Reach<MethodHandlerOf, &RpcServiceMethod::handler_>;

struct Variant {
  std::string name;
  const FieldDescriptor* when = nullptr;
  std::string equals;
};

// One method's rule, its fields found once.
struct Plan {
  std::string method;  // "mariposa.v1.Projects.Apply"
  const FieldDescriptor* project = nullptr;
  const FieldDescriptor* task = nullptr;
  std::vector<Variant> variants;
};

bool IsText(const FieldDescriptor* f) {
  return f->cpp_type() == FieldDescriptor::CPPTYPE_STRING && !f->is_repeated();
}

absl::Status Field(const google::protobuf::Descriptor* request, const std::string& method, const char* what,
                   const std::string& name, bool bool_ok, const FieldDescriptor** out) {
  if (name.empty()) return absl::OkStatus();
  const FieldDescriptor* f = request == nullptr ? nullptr : request->FindFieldByName(name);
  if (f == nullptr || !(IsText(f) || (bool_ok && f->type() == FieldDescriptor::TYPE_BOOL && !f->is_repeated()))) {
    return absl::FailedPreconditionError(
        absl::StrCat(method, ": its (access) rule's ", what, " \"", name, "\" is not a ",
                     bool_ok ? "bool or text" : "text", " field of ",
                     request == nullptr ? "its request (it streams requests)" : request->full_name(),
                     "; fix the rule in its .proto (proto/mariposa/v1/access.proto)"));
  }
  *out = f;
  return absl::OkStatus();
}

absl::StatusOr<Plan> PlanOf(const std::string& grpc_name) {
  // "/mariposa.v1.Projects/Apply" -> "mariposa.v1.Projects.Apply"
  std::string dotted = grpc_name.substr(grpc_name.empty() ? 0 : 1);
  if (size_t slash = dotted.find('/'); slash != std::string::npos) dotted[slash] = '.';
  const auto* m = google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(dotted);
  if (m == nullptr) return absl::FailedPreconditionError(absl::StrCat(grpc_name, " is not in the compiled protos"));
  if (!m->options().HasExtension(v1::access)) {
    return absl::FailedPreconditionError(absl::StrCat(
        dotted, " has no access rule: give it option (access) in its .proto (proto/mariposa/v1/access.proto)"));
  }
  const v1::AccessRule& rule = m->options().GetExtension(v1::access);
  if (!ParsePermission(rule.role())) {
    return absl::FailedPreconditionError(absl::StrCat(dotted, ": its (access) rule names role \"", rule.role(),
                                                      "\"; use anyone, viewer, deployer, operator, admin or health-agent"));
  }
  const google::protobuf::Descriptor* request = m->client_streaming() ? nullptr : m->input_type();
  Plan plan;
  plan.method = dotted;
  if (absl::Status s = Field(request, dotted, "project_field", rule.project_field(), false, &plan.project); !s.ok()) {
    return s;
  }
  if (absl::Status s = Field(request, dotted, "task_field", rule.task_field(), false, &plan.task); !s.ok()) return s;
  for (const v1::AccessVariant& v : rule.variants()) {
    if (!ParsePermission(v.role())) {
      return absl::FailedPreconditionError(
          absl::StrCat(dotted, ": its (access) variant \"", v.name(), "\" names role \"", v.role(), "\""));
    }
    Variant out{v.name(), nullptr, v.equals()};
    if (absl::Status s = Field(request, dotted, "variant's when", v.when(), v.equals().empty(), &out.when); !s.ok()) {
      return s;
    }
    if (out.when != nullptr) plan.variants.push_back(std::move(out));  // the others are the handler's
  }
  return plan;
}

std::string Text(const Message& m, const FieldDescriptor* f) { return m.GetReflection()->GetString(m, f); }

bool Holds(const Message& m, const Variant& v) {
  if (v.when->type() == FieldDescriptor::TYPE_BOOL) return m.GetReflection()->GetBool(m, v.when);
  std::string value = Text(m, v.when);
  return v.equals.empty() ? !value.empty() : value == v.equals;
}

grpc::Status Check(const Plan& plan, grpc::ServerContext* ctx, const Message* request) {
  std::string project, variant;
  if (request != nullptr) {
    // A project or task named by text that breaks the text rule is not looked
    // up: the same answer the handler would give, for every caller.
    if (absl::Status text = ValidateRequestText(*request); !text.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(text.message()));
    }
    if (plan.project != nullptr) project = Text(*request, plan.project);
    if (plan.task != nullptr) project = ProjectOfTask(Text(*request, plan.task));
    for (const Variant& v : plan.variants) {
      if (Holds(*request, v)) {
        variant = v.name;
        break;
      }
    }
  }
  return Authorize(ctx, project, variant);
}

// Answers the call with `st` as gRPC answers an unknown method.
template <int... kCodes>
void Refuse(std::integer_sequence<int, kCodes...>, const MethodHandler::HandlerParameter& param,
            const grpc::Status& st) {
  bool sent = ((st.error_code() == kCodes
                    ? (grpc::internal::ErrorMethodHandler<static_cast<grpc::StatusCode>(kCodes)>(st.error_message())
                           .RunHandler(param),
                       true)
                    : false) ||
               ...);
  if (!sent) grpc::internal::ErrorMethodHandler<grpc::StatusCode::INTERNAL>(st.error_message()).RunHandler(param);
}

class GuardedHandler : public MethodHandler {
 public:
  GuardedHandler(std::unique_ptr<MethodHandler> inner, Plan plan) : inner_(std::move(inner)), plan_(std::move(plan)) {}

  void RunHandler(const HandlerParameter& param) override {
    if (!param.status.ok()) {  // an unreadable request: the handler's own answer
      inner_->RunHandler(param);
      return;
    }
    // The request, where there is one, is the method's generated message
    // (a protobuf Message; gRPC passes it as void*).
    auto* request = param.request == nullptr
                        ? nullptr
                        : dynamic_cast<Message*>(static_cast<google::protobuf::MessageLite*>(param.request));
    grpc::Status st = param.request != nullptr && request == nullptr
                          ? grpc::Status(grpc::StatusCode::INTERNAL, "the request is not a protobuf message")
                          : Check(plan_, static_cast<grpc::ServerContext*>(param.server_context), request);
    if (st.ok()) {
      inner_->RunHandler(param);
      return;
    }
    if (request != nullptr) request->~Message();  // the handler that would have is not run
    Refuse(std::make_integer_sequence<int, 17>{}, param, st);
  }

  void* Deserialize(grpc_call* call, grpc_byte_buffer* req, grpc::Status* status, void** handler_data) override {
    return inner_->Deserialize(call, req, status, handler_data);
  }

 private:
  std::unique_ptr<MethodHandler> inner_;
  const Plan plan_;
};

}  // namespace

absl::Status GuardEveryMethod(grpc::Service* service) {
  auto& methods = service->*MemberOf(ServiceMethods());
  std::vector<Plan> plans;
  for (const auto& m : methods) {
    if (m == nullptr) continue;  // a generic method: none of ours
    if (m->handler() == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(m->name(), " is served asynchronously; the guard covers "
                                                                   "synchronous methods only"));
    }
    auto plan = PlanOf(m->name());
    if (!plan.ok()) return plan.status();
    plans.push_back(*std::move(plan));
  }
  size_t i = 0;
  for (const auto& m : methods) {
    if (m == nullptr) continue;
    Plan& plan = plans[i++];
    auto& handler = (*m).*MemberOf(MethodHandlerOf());
    if (dynamic_cast<GuardedHandler*>(handler.get()) != nullptr) continue;  // guarded already
    std::unique_ptr<MethodHandler> inner = std::move(handler);
    handler = std::make_unique<GuardedHandler>(std::move(inner), std::move(plan));
  }
  return absl::OkStatus();
}

}  // namespace mariposa::auth
