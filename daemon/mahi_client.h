// mahi over HTTP (Triton's auth cache, --mahi): the Authorizer's
// TritonDirectory in mariposad. Answers, found or not, are kept `ttl` (a
// key removed in Triton stops working within it); mahi not answering is
// UNAVAILABLE and kept for nothing. docs/security.md, "Triton accounts".
#ifndef MARIPOSA_DAEMON_MAHI_CLIENT_H_
#define MARIPOSA_DAEMON_MAHI_CLIENT_H_

#include <map>
#include <optional>
#include <memory>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "auth/mahi.h"
#include "common/clock.h"
#include "convergence/triton/http.h"

namespace mariposa {

class MahiClient : public auth::TritonDirectory {
 public:
  MahiClient(std::unique_ptr<triton::HttpClient> http, const Clock* clock, absl::Duration ttl = absl::Seconds(5));
  absl::StatusOr<auth::TritonPrincipal> Lookup(const std::string& account, const std::string& user) override;

  // When the last lookup found mahi not answering (none answered since):
  // since when and why, for `admin status`.
  struct Outage {
    absl::Time since;
    std::string error;
  };
  std::optional<Outage> CurrentOutage() const;
  const std::string& url() const { return http_->base_url(); }

 private:
  std::unique_ptr<triton::HttpClient> http_;
  const Clock* clock_;
  absl::Duration ttl_;
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, std::pair<absl::Time, absl::StatusOr<auth::TritonPrincipal>>> cache_
      ABSL_GUARDED_BY(mu_);
  std::optional<Outage> outage_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_MAHI_CLIENT_H_
