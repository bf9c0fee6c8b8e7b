#include "daemon/mahi_client.h"

#include "absl/strings/str_cat.h"

namespace mariposa {

MahiClient::MahiClient(std::unique_ptr<triton::HttpClient> http, const Clock* clock, absl::Duration ttl)
    : http_(std::move(http)), clock_(clock), ttl_(ttl) {}

absl::StatusOr<auth::TritonPrincipal> MahiClient::Lookup(const std::string& account, const std::string& user) {
  auto key = std::make_pair(account, user);
  absl::Time now = clock_->Now();
  {
    absl::MutexLock l(&mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && now - it->second.first < ttl_) return it->second.second;
    if (cache_.size() > 10000) cache_.clear();
  }
  std::string path = user.empty() ? absl::StrCat("/accounts?login=", triton::UrlEncode(account))
                                  : absl::StrCat("/users?account=", triton::UrlEncode(account),
                                                 "&login=", triton::UrlEncode(user), "&fallback=false");
  auto res = http_->Call(user.empty() ? "GetAccount" : "GetUser", "GET", path);
  absl::StatusOr<auth::TritonPrincipal> out;
  if (!res.ok()) {
    if (res.status().code() == absl::StatusCode::kNotFound) {
      out = absl::NotFoundError(user.empty() ? absl::StrCat("Triton has no account ", account)
                                             : absl::StrCat("Triton account ", account, " has no user ", user));
    } else {
      // Not kept: the next call asks again.
      absl::MutexLock l(&mu_);
      if (!outage_) outage_ = Outage{now, std::string(res.status().message())};
      else outage_->error = std::string(res.status().message());
      return absl::UnavailableError(absl::StrCat("Triton's auth cache (mahi) at ", http_->base_url(),
                                                 " did not answer: ", res.status().message()));
    }
  } else {
    out = auth::ParseMahiAnswer(res->body, user);
    if (!out.ok() && out.status().code() == absl::StatusCode::kInvalidArgument) {
      return absl::UnavailableError(absl::StrCat("Triton's auth cache (mahi) at ", http_->base_url(),
                                                 " answered something else than mahi's shape: ", out.status().message()));
    }
  }
  absl::MutexLock l(&mu_);
  outage_.reset();  // it answered
  cache_[key] = {now, out};
  return out;
}

std::optional<MahiClient::Outage> MahiClient::CurrentOutage() const {
  absl::MutexLock l(&mu_);
  return outage_;
}

}  // namespace mariposa
