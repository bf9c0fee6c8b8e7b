#include "deploy/tritonsim/sim_util.h"

#include <time.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace tritonsim {

std::string Iso(int64_t ms) {
  time_t secs = ms / 1000;
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[40];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

const std::string* Get(const Params& q, const std::string& key) {
  auto it = q.find(key);
  return it == q.end() ? nullptr : &it->second;
}

bool IsUuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < 36; ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  long long v = strtoll(s.c_str(), &end, 10);
  if (*end != '\0') return false;
  *out = v;
  return true;
}

int64_t ParseIsoMs(const std::string& s) {
  struct tm tm {};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return 0;
  int64_t ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  if (*rest == '.') ms += atoi(rest + 1);
  return ms;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t p = s.find(sep, start);
    if (p == std::string::npos) p = s.size();
    if (p > start) out.push_back(s.substr(start, p - start));
    start = p + 1;
  }
  return out;
}

Reply Validation(int status, const std::string& field, const std::string& code, const std::string& message) {
  Reply r = DataCenter::Error(status, status == 422 ? "InvalidParameter" : "ValidationFailed",
                              "Invalid Parameters");
  r.body["errors"] = json::array({{{"field", field}, {"code", code}, {"message", message}}});
  return r;
}

bool CheckParams(const Params& q, const std::set<std::string>& allowed, bool tags, int status, Reply* r) {
  for (const auto& kv : q) {
    if (allowed.count(kv.first)) continue;
    if (tags && kv.first.rfind("tag.", 0) == 0 && kv.first.size() > 4) continue;
    *r = Validation(status, kv.first, "Invalid", "unsupported parameter");
    return false;
  }
  return true;
}


// IPv4 addresses as numbers.
std::string Dotted(uint32_t a) {
  char buf[20];
  snprintf(buf, sizeof(buf), "%u.%u.%u.%u", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
  return buf;
}

bool ParseDotted(const std::string& s, uint32_t* out) {
  unsigned a, b, c, d;
  char tail;
  if (sscanf(s.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 || b > 255 || c > 255 || d > 255) {
    return false;
  }
  *out = (a << 24) | (b << 16) | (c << 8) | d;
  return true;
}

uint32_t Mask(uint32_t prefix) { return prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix); }

}  // namespace tritonsim
