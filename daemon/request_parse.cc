#include "daemon/request_parse.h"

#include <google/protobuf/descriptor.h>

#include "absl/strings/str_cat.h"

namespace mariposa {
namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::ServerRpcInfo;

class Interceptor : public grpc::experimental::Interceptor {
 public:
  explicit Interceptor(ServerRpcInfo* info) : method_(info->method() != nullptr ? info->method() : "") {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      unparsable_ = true;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) && unparsable_ &&
        methods->GetSendStatus().error_code() == grpc::StatusCode::INTERNAL) {
      methods->ModifySendStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, UnparsableRequestMessage(method_)));
    }
    methods->Proceed();
  }

 private:
  std::string method_;
  bool unparsable_ = false;
};

class Factory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(ServerRpcInfo* info) override {
    return new Interceptor(info);
  }
};

}  // namespace

std::string UnparsableRequestMessage(const std::string& method) {
  // "/mariposa.v1.Projects/Apply" -> "mariposa.v1.Projects.Apply"
  std::string dotted = method.size() > 1 ? method.substr(1) : method;
  size_t slash = dotted.rfind('/');
  if (slash != std::string::npos) dotted[slash] = '.';
  const google::protobuf::MethodDescriptor* m =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(dotted);
  std::string type = m != nullptr ? m->input_type()->full_name() : "its request message";
  return absl::StrCat("the request to ", method, " could not be read as ", type,
                      ": its bytes are not that message (garbage, truncated, a field of the wrong type, or invalid "
                      "UTF-8 in a text field); nothing was done. Send a ", type,
                      " built by the protos in proto/mariposa/v1 (the mariposa CLI does)");
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewUnparsableRequestInterceptorFactory() {
  return std::make_unique<Factory>();
}

}  // namespace mariposa
