// A failed call as the HTTP/JSON API answers it: the HTTP status for the
// gRPC code, and a JSON body with the code, the message and RFD 40's
// Error / Reason / Fix / Impact.
#ifndef MARIPOSA_GATEWAY_ERRORS_H_
#define MARIPOSA_GATEWAY_ERRORS_H_

#include <string>

namespace mariposa::gateway {

// grpc-gateway's table (400 for INVALID_ARGUMENT, FAILED_PRECONDITION and
// OUT_OF_RANGE, 401, 403, 404, 409 for ALREADY_EXISTS and ABORTED, 429, 499,
// 500, 501, 503, 504).
int HttpStatus(int grpc_code);
// {"code", "status", "message", "error", "reason", "fix", "impact"}.
// A message in RFD 40's form ("Error: …\nReason: …\nFix: …\nImpact: …")
// gives its four parts; otherwise the error is the message up to its first
// "; " and the fix what follows it. The reason says what the code means;
// the impact is "nothing was changed" for a refusal and says to read back
// for an outcome the code leaves unknown (UNAVAILABLE, DEADLINE_EXCEEDED,
// INTERNAL, UNKNOWN, CANCELLED).
std::string ErrorBody(int grpc_code, const std::string& message);

}  // namespace mariposa::gateway

#endif  // MARIPOSA_GATEWAY_ERRORS_H_
