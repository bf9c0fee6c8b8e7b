// Small status helpers: Debian's Abseil (20220623) ships no status macros.
#ifndef MARIPOSA_COMMON_STATUS_MACROS_H_
#define MARIPOSA_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define MARIPOSA_CONCAT_INNER_(a, b) a##b
#define MARIPOSA_CONCAT_(a, b) MARIPOSA_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (an absl::Status) is not ok.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status _st = (expr);               \
    if (!_st.ok()) return _st;                 \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                           \
  if (!tmp.ok()) return tmp.status();           \
  lhs = std::move(*tmp)

// `ASSIGN_OR_RETURN(auto x, F());` binds x to F()'s value or returns its status.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  ASSIGN_OR_RETURN_IMPL_(MARIPOSA_CONCAT_(_statusor_, __LINE__), lhs, rexpr)

namespace mariposa {

// Prefixes a status message with context, keeping the code.
inline absl::Status Annotate(const absl::Status& s, absl::string_view context) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
}

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_STATUS_MACROS_H_
