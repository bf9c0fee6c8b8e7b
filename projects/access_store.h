// Who may call: tokens and grants (auth/). One part of ProjectStore
// (store.h); SqlProjectStore implements it on SQLite and PostgreSQL
// (sql_access.cc).
#ifndef MARIPOSA_PROJECTS_ACCESS_STORE_H_
#define MARIPOSA_PROJECTS_ACCESS_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "projects/store_records.h"

namespace mariposa {

class AccessStore {
 public:
  virtual ~AccessStore() = default;

  // Tokens and grants (auth). Names of live tokens are unique.
  virtual absl::StatusOr<TokenRecord> CreateToken(const TokenRecord& t) = 0;
  virtual absl::StatusOr<std::vector<TokenRecord>> ListTokens() = 0;
  // NOT_FOUND when no token has this hash.
  virtual absl::StatusOr<TokenRecord> FindTokenByHash(const std::string& hash) = 0;
  // By id or name (a live one); NOT_FOUND when there is none.
  virtual absl::StatusOr<TokenRecord> RevokeToken(const std::string& id_or_name, const std::string& actor) = 0;
  virtual absl::StatusOr<GrantRecord> SetGrant(const GrantRecord& g) = 0;
  virtual absl::StatusOr<std::vector<GrantRecord>> ListGrants() = 0;
  virtual absl::Status DeleteGrant(const std::string& subject, const std::string& project,
                                   const std::string& actor) = 0;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_ACCESS_STORE_H_
