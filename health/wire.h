// Health targets and state changes to and from their gRPC messages
// (proto/mariposa/v1/health.proto).
#ifndef MARIPOSA_HEALTH_WIRE_H_
#define MARIPOSA_HEALTH_WIRE_H_

#include <string>

#include "health/target.h"
#include "mariposa/v1/health.pb.h"

namespace mariposa::health {

void ToProto(const std::string& group, const Target& t, v1::CheckTarget* out);
Target FromProto(const v1::CheckTarget& m);
void ToProto(const HealthChange& c, v1::HealthStateChange* out);
HealthChange FromProto(const v1::HealthStateChange& m);
// "healthy" -> kHealthy; anything unknown -> kUnknown.
Health ParseHealth(const std::string& name);

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_WIRE_H_
