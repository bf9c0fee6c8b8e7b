// The store's high-water mark: how many transactions the store has committed
// and the index of its newest event, written after every commit to a small
// file beside the store (DATA_DIR/store-high-water). A loss inside SQLite's
// own files (a damaged or deleted write-ahead log, an older copy put in
// place) cannot take it along, so start-up refuses a store that comes up
// below it (docs/operations.md, "A store older than it was").
#ifndef MARIPOSA_PROJECTS_HIGH_WATER_H_
#define MARIPOSA_PROJECTS_HIGH_WATER_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace mariposa {

constexpr char kHighWaterFile[] = "store-high-water";

struct HighWater {
  int64_t commits = 0;
  int64_t last_event = 0;
  bool operator==(const HighWater& o) const { return commits == o.commits && last_event == o.last_event; }
};

// One line of fixed length (rewritten in place), with a check value so that
// a torn or edited file is recognised.
std::string FormatHighWater(const HighWater& m);
// nullopt for anything FormatHighWater did not write.
std::optional<HighWater> ParseHighWater(absl::string_view text);

// What a store that came up as `store` lost against the `mark` it had
// written: empty when it has everything (store >= mark on both counts).
std::string HighWaterLoss(const HighWater& mark, const HighWater& store);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_HIGH_WATER_H_
