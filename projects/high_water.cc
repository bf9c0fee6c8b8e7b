#include "projects/high_water.h"

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace mariposa {
namespace {

constexpr char kPrefix[] = "mariposa-store-high-water v1";

uint32_t Fnv1a(absl::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string Body(const HighWater& m) {
  return absl::StrFormat("%s commits=%020d last_event=%020d", kPrefix, m.commits, m.last_event);
}

}  // namespace

std::string FormatHighWater(const HighWater& m) {
  std::string body = Body(m);
  return absl::StrFormat("%s check=%08x\n", body, Fnv1a(body));
}

std::optional<HighWater> ParseHighWater(absl::string_view text) {
  if (!absl::ConsumeSuffix(&text, "\n")) return std::nullopt;
  std::vector<absl::string_view> parts = absl::StrSplit(text, ' ');
  if (parts.size() != 5) return std::nullopt;
  HighWater m;
  if (!absl::ConsumePrefix(&parts[2], "commits=") || !absl::SimpleAtoi(parts[2], &m.commits)) return std::nullopt;
  if (!absl::ConsumePrefix(&parts[3], "last_event=") || !absl::SimpleAtoi(parts[3], &m.last_event)) return std::nullopt;
  if (m.commits < 0 || m.last_event < 0) return std::nullopt;
  if (FormatHighWater(m) != absl::StrCat(text, "\n")) return std::nullopt;  // prefix, widths and check
  return m;
}

std::string HighWaterLoss(const HighWater& mark, const HighWater& store) {
  std::vector<std::string> lost;
  if (store.commits < mark.commits) {
    lost.push_back(absl::StrCat(mark.commits - store.commits, " of ", mark.commits, " committed transactions (it has ",
                                store.commits, ")"));
  }
  if (store.last_event < mark.last_event) {
    lost.push_back(absl::StrCat("events ", store.last_event + 1, "..", mark.last_event, " (its newest event is ",
                                store.last_event, ", the mark says ", mark.last_event, ")"));
  }
  if (lost.empty()) return "";
  return absl::StrCat("the store is missing ", absl::StrJoin(lost, " and "));
}

}  // namespace mariposa
