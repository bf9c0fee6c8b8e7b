// Rendezvous (highest random weight) hashing: the weight of a member (a
// health agent, a mariposad node) for an item (an instance to check, a
// project to run). The member with the highest weight wins; when members
// come and go only the items they win or held move. Stable across processes
// and builds (absl::Hash is seeded per process), so every node computes
// the same winner from the same list.
#ifndef MARIPOSA_COMMON_RENDEZVOUS_H_
#define MARIPOSA_COMMON_RENDEZVOUS_H_

#include <cstdint>
#include <string>

namespace mariposa {

uint64_t RendezvousScore(const std::string& member, const std::string& item);

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_RENDEZVOUS_H_
