#include "common/sqlite_wal.h"

#include "absl/strings/str_cat.h"

namespace mariposa {
namespace {

constexpr int64_t kHeader = 32;
constexpr int64_t kFrameHeader = 24;
constexpr uint32_t kMagic = 0x377f0682;
constexpr uint32_t kVersion = 3007000;

uint32_t Be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint32_t Le32(const unsigned char* p) {
  return (uint32_t{p[3]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[1]} << 8) | uint32_t{p[0]};
}

// SQLite's walChecksumBytes: pairs of 32-bit words, big-endian words when
// the magic's low bit is set, little-endian otherwise.
void Checksum(bool big_endian, const unsigned char* data, int64_t n, uint32_t* s0, uint32_t* s1) {
  for (int64_t i = 0; i + 8 <= n; i += 8) {
    uint32_t a = big_endian ? Be32(data + i) : Le32(data + i);
    uint32_t b = big_endian ? Be32(data + i + 4) : Le32(data + i + 4);
    *s0 += a + *s1;
    *s1 += b + *s0;
  }
}

}  // namespace

WalReport CheckWal(absl::string_view wal) {
  WalReport r;
  const auto* p = reinterpret_cast<const unsigned char*>(wal.data());
  const int64_t size = static_cast<int64_t>(wal.size());
  if (size <= kHeader) return r;  // nothing recovery could replay
  uint32_t magic = Be32(p);
  uint32_t page = Be32(p + 8);
  uint32_t s0 = 0, s1 = 0;
  bool big = (magic & 1) != 0;
  bool header_ok = (magic & 0xfffffffe) == kMagic && page >= 512 && page <= 65536 && (page & (page - 1)) == 0 &&
                   Be32(p + 4) == kVersion;
  if (header_ok) {
    Checksum(big, p, 24, &s0, &s1);
    header_ok = s0 == Be32(p + 24) && s1 == Be32(p + 28);
  }
  if (!header_ok) {
    // SQLite ignores the whole log: every frame in it is dropped.
    r.ok = false;
    r.damage = absl::StrCat("the header of the write-ahead log is damaged (bad magic, version, page size or "
                            "checksum) in front of ", size - kHeader,
                            " bytes of frames; SQLite would ignore every commit in it");
    return r;
  }
  r.page_size = page;
  const int64_t frame_size = kFrameHeader + page;
  r.frames = (size - kHeader) / frame_size;
  const uint32_t salt1 = Be32(p + 16), salt2 = Be32(p + 20);
  int64_t commits_before_bad = 0;
  for (int64_t i = 0; i < r.frames; ++i) {
    const unsigned char* f = p + kHeader + i * frame_size;
    bool same_generation = Be32(f + 8) == salt1 && Be32(f + 12) == salt2;
    bool commit = Be32(f + 4) != 0;
    if (r.first_bad_frame == 0) {
      bool valid = same_generation && Be32(f) != 0;
      if (valid) {
        Checksum(big, f, 8, &s0, &s1);
        Checksum(big, f + kFrameHeader, page, &s0, &s1);
        valid = s0 == Be32(f + 16) && s1 == Be32(f + 20);
      }
      if (valid) {
        ++r.valid_frames;
        if (commit) {
          ++commits_before_bad;
          r.recovered_commits = commits_before_bad;
        }
        continue;
      }
      r.first_bad_frame = i + 1;
      continue;
    }
    // After the damage: frames of this generation that end a transaction
    // were committed, and recovery would drop them.
    if (same_generation && commit) ++r.lost_commits;
  }
  if (r.lost_commits > 0) {
    r.ok = false;
    r.damage = absl::StrCat("frame ", r.first_bad_frame, " of ", r.frames, " (offset ",
                            kHeader + (r.first_bad_frame - 1) * frame_size, ") of the write-ahead log fails its checksum, "
                            "and ", r.lost_commits, " committed transaction", r.lost_commits == 1 ? "" : "s",
                            " of the same generation follow it; SQLite's recovery would stop at the damage and drop "
                            "them silently (", r.recovered_commits, " commits before it would be kept)");
  }
  return r;
}

}  // namespace mariposa
