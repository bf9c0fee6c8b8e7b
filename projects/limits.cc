#include "projects/limits.h"

#include "absl/strings/str_cat.h"

namespace mariposa {
namespace {

// Length of the UTF-8 sequence starting at s[i], or 0 when it is invalid
// (overlong forms, surrogates and code points above U+10FFFF included).
size_t Utf8Length(absl::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

size_t FindBadText(absl::string_view value, std::string* why) {
  for (size_t i = 0; i < value.size();) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      if (why) *why = c == 0 ? "a NUL byte" : absl::StrCat("control character 0x", absl::Hex(c, absl::kZeroPad2));
      return i;
    }
    if (c == 0x7F) {
      if (why) *why = "control character 0x7f (DEL)";
      return i;
    }
    size_t n = Utf8Length(value, i);
    if (n == 0) {
      if (why) *why = "invalid UTF-8";
      return i;
    }
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(value[i + 1]) < 0xA0) {
      if (why) *why = "a C1 control character";
      return i;
    }
    i += n;
  }
  return absl::string_view::npos;
}

absl::Status CheckText(absl::string_view field, absl::string_view value, size_t max_bytes) {
  if (value.size() > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", value.size(), " bytes is over the limit of ", max_bytes, " bytes"));
  }
  std::string why;
  size_t at = FindBadText(value, &why);
  if (at != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", why, " at byte ", at,
                                                   "; only UTF-8 text with tabs and newlines is accepted"));
  }
  return absl::OkStatus();
}

absl::Status CheckMetaKey(absl::string_view key) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "meta key \"", key.substr(0, 64), key.size() > 64 ? "…" : "", "\" must be 1-", Limits::kMaxKeyBytes,
        " bytes without spaces, '=' or braces (dots nest: db.password)"));
  };
  if (key.empty() || key.size() > Limits::kMaxKeyBytes || key.find_first_of(" \t\n\r{}=") != absl::string_view::npos) {
    return bad();
  }
  if (FindBadText(key, nullptr) != absl::string_view::npos) return bad();
  return absl::OkStatus();
}

std::string ValidUtf8(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size();) {
    size_t n = Utf8Length(value, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(value.data() + i, n);
      i += n;
    }
  }
  return out;
}

absl::Status CheckedAdd(int64_t a, int64_t b, absl::string_view what, int64_t* out) {
  if (__builtin_add_overflow(a, b, out)) {
    return absl::OutOfRangeError(
        absl::StrCat(what, ": ", a, " + ", b, " is outside the 64-bit range (", INT64_MIN, "..", INT64_MAX, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t lo, int64_t hi, absl::string_view hint) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " ", value, " is outside ", lo, "..", hi, hint.empty() ? "" : "; ", hint));
}

}  // namespace mariposa
