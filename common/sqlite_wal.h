// Reading a SQLite write-ahead log as SQLite's recovery will, before SQLite
// does: recovery stops at the first frame that fails its checksum and drops
// every commit after it, silently. CheckWal finds that case so that start-up
// can refuse instead of serving an older store (docs/operations.md,
// "A damaged write-ahead log"). The format: https://sqlite.org/fileformat.html#the_write_ahead_log
#ifndef MARIPOSA_COMMON_SQLITE_WAL_H_
#define MARIPOSA_COMMON_SQLITE_WAL_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace mariposa {

struct WalReport {
  // False when recovery would drop commits that follow damage.
  bool ok = true;
  // What is wrong, for a person ("frame 1204 (offset 4935712) fails its
  // checksum; 37 commits of the same generation follow it"); empty when ok.
  std::string damage;
  int64_t page_size = 0;
  int64_t frames = 0;             // whole frames in the file
  int64_t valid_frames = 0;       // frames recovery accepts (up to the first invalid one)
  int64_t recovered_commits = 0;  // commit frames among them
  int64_t first_bad_frame = 0;    // 1-based; 0 when every frame is valid
  int64_t lost_commits = 0;       // commit frames of this generation after first_bad_frame
};

// Pure: `wal` is the whole content of DB-wal. An empty file, a header alone
// or a torn last frame with nothing committed after it is ok (a process
// killed mid-write leaves them; that commit was never acknowledged). Not ok:
// a damaged header in front of frames, or an invalid frame followed by a
// commit frame of the same generation (same salts as the header).
WalReport CheckWal(absl::string_view wal);

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_SQLITE_WAL_H_
