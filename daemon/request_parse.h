// A gRPC server interceptor for requests that cannot be parsed (garbage or
// truncated bytes, a field of the wrong wire type, invalid UTF-8 in a
// `string` field): gRPC answers those INTERNAL with an empty message; this
// makes it INVALID_ARGUMENT saying which message could not be read and that
// nothing was done. Fields a user fills in are `bytes` in the protos and
// checked by ValidateRequestText, which names the field.
#ifndef MARIPOSA_DAEMON_REQUEST_PARSE_H_
#define MARIPOSA_DAEMON_REQUEST_PARSE_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>

namespace mariposa {

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewUnparsableRequestInterceptorFactory();

// Pure: the reply for an unparsable request to `method` ("/pkg.Service/Method").
std::string UnparsableRequestMessage(const std::string& method);

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_REQUEST_PARSE_H_
