#include "convergence/decide/images.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace mariposa::convergence {
namespace {

struct Parsed {
  std::vector<std::string> release;  // parts before the first '-' (build metadata after '+' dropped)
  std::vector<std::string> pre;      // pre-release parts
};

Parsed Parse(absl::string_view v) {
  if (!v.empty() && (v[0] == 'v' || v[0] == 'V') && v.size() > 1 && std::isdigit(static_cast<unsigned char>(v[1]))) {
    v.remove_prefix(1);
  }
  v = v.substr(0, v.find('+'));
  Parsed p;
  size_t dash = v.find('-');
  for (absl::string_view s : absl::StrSplit(v.substr(0, dash), '.')) p.release.emplace_back(s);
  if (dash != absl::string_view::npos) {
    for (absl::string_view s : absl::StrSplit(v.substr(dash + 1), absl::ByAnyChar(".-"))) p.pre.emplace_back(s);
  }
  return p;
}

int ComparePart(const std::string& a, const std::string& b) {
  uint64_t x = 0, y = 0;
  bool xa = absl::SimpleAtoi(a, &x), yb = absl::SimpleAtoi(b, &y);
  if (xa && yb) return x < y ? -1 : x > y ? 1 : 0;
  if (xa != yb) return xa ? -1 : 1;  // numbers sort before text
  return a < b ? -1 : a > b ? 1 : 0;
}

int CompareParts(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    // A missing part is 0 ("1.2" == "1.2.0").
    const std::string& x = i < a.size() ? a[i] : "0";
    const std::string& y = i < b.size() ? b[i] : "0";
    if (int c = ComparePart(x, y); c != 0) return c;
  }
  return 0;
}

}  // namespace

int CompareVersions(absl::string_view a, absl::string_view b) {
  Parsed x = Parse(a), y = Parse(b);
  if (int c = CompareParts(x.release, y.release); c != 0) return c;
  if (x.pre.empty() != y.pre.empty()) return x.pre.empty() ? 1 : -1;
  if (int c = CompareParts(x.pre, y.pre); c != 0) return c;
  // Equal by value but spelled differently: order by text, so the order is total.
  return a < b ? -1 : a > b ? 1 : 0;
}

bool OlderImage(const triton::Image& a, const triton::Image& b) {
  int c = CompareVersions(a.version, b.version);
  return c != 0 ? c < 0 : a.published_at < b.published_at;
}

std::vector<std::string> NearestVersions(absl::string_view want, std::vector<std::string> versions, size_t max) {
  std::sort(versions.begin(), versions.end(),
            [](const std::string& a, const std::string& b) { return CompareVersions(a, b) < 0; });
  versions.erase(std::unique(versions.begin(), versions.end()), versions.end());
  auto at = std::lower_bound(versions.begin(), versions.end(), want,
                             [](const std::string& v, absl::string_view w) { return CompareVersions(v, w) < 0; });
  std::vector<std::string> out;
  auto below = at, above = at;
  while (out.size() < max && (below != versions.begin() || above != versions.end())) {
    if (below != versions.begin()) out.push_back(*--below);
    if (out.size() < max && above != versions.end()) out.push_back(*above++);
  }
  return out;
}

std::vector<triton::Image> NewerImages(const std::string& current, const std::vector<triton::Image>& candidates,
                                       bool all) {
  std::vector<triton::Image> out;
  std::set<std::string> seen;
  for (const triton::Image& i : candidates) {
    if (CompareVersions(i.version, current) > 0 && seen.insert(i.uuid).second) out.push_back(i);
  }
  std::sort(out.begin(), out.end(), [](const triton::Image& a, const triton::Image& b) { return OlderImage(b, a); });
  if (!all && out.size() > 1) out.resize(1);
  return out;
}

std::vector<triton::Image> ImagesBetween(const std::string& from, const std::string& to,
                                         const std::vector<triton::Image>& candidates) {
  std::vector<triton::Image> out;
  for (const triton::Image& i : candidates) {
    if (CompareVersions(i.version, from) > 0 && CompareVersions(i.version, to) <= 0) out.push_back(i);
  }
  std::sort(out.begin(), out.end(), OlderImage);
  return out;
}

std::string HumanBytes(int64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return absl::StrCat(static_cast<int64_t>(v + 0.5), " ", units[u]);
}

std::string ShortUuid(const std::string& uuid) { return uuid.substr(0, 8); }

}  // namespace mariposa::convergence
