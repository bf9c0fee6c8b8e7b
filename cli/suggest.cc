#include "cli/suggest.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace mariposa::cli {
namespace {

// Edits (insert, delete, substitute, swap two neighbours) from a to b.
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string DidYouMean(const std::string& word, const std::set<std::string>& candidates) {
  std::string best;
  size_t best_d = word.size() <= 4 ? 1 : 2;
  for (const std::string& c : candidates) {
    size_t d = Distance(word, c);
    if (d < best_d || (d == best_d && best.empty() && d > 0)) {
      best = c;
      best_d = d;
    }
  }
  if (best.empty() && word.size() >= 2) {
    for (const std::string& c : candidates) {
      if (absl::StartsWith(c, word)) return c;
    }
  }
  return best;
}

}  // namespace mariposa::cli
