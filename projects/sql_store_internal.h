// Helpers the files of SqlProjectStore share (sql_store.cc, sql_goal.cc,
// sql_events.cc, sql_tasks.cc, sql_access.cc, sql_controller.cc). Not for
// other code.
#ifndef MARIPOSA_PROJECTS_SQL_STORE_INTERNAL_H_
#define MARIPOSA_PROJECTS_SQL_STORE_INTERNAL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace mariposa::sql_internal {

// The last item of each key, in order: the rows of one multi-row upsert,
// which may not name a key twice.
template <typename T, typename Key>
std::vector<const T*> LastOfEach(const std::vector<T>& items, Key key) {
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < items.size(); ++i) last[key(items[i])] = i;
  std::vector<const T*> out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (last[key(items[i])] == i) out.push_back(&items[i]);
  }
  return out;
}


inline absl::Time FromMicros(int64_t us) { return absl::FromUnixMicros(us); }

}  // namespace mariposa::sql_internal

#endif  // MARIPOSA_PROJECTS_SQL_STORE_INTERNAL_H_
