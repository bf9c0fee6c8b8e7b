#include "common/rendezvous.h"

namespace mariposa {

uint64_t RendezvousScore(const std::string& member, const std::string& item) {
  // FNV-1a over member, a separator and item, then a splitmix64 finalizer
  // so that similar ids still spread evenly.
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  };
  mix(member);
  h = (h ^ 0xff) * 1099511628211ULL;
  mix(item);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

}  // namespace mariposa
