// FWAPI: firewall rules (/rules), as sdc-fwapi serves them
// (docs/index.md there): create with an optional client-chosen uuid (a retry
// finds it taken), list with filters, get, update (a new version), delete.
// Rules are checked against the fwrule grammar (CheckFwRule) the way
// sdc-fwapi's Rule does before it stores one. Applying them to VMs (the
// firewaller agents) is not simulated: FWAPI itself only stores and
// publishes them.
#ifndef MARIPOSA_DEPLOY_TRITONSIM_FWAPI_H_
#define MARIPOSA_DEPLOY_TRITONSIM_FWAPI_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "deploy/tritonsim/datacenter.h"

namespace tritonsim {

// "" when `rule` is a rule of the fwrule language (FROM targets TO targets
// ALLOW|BLOCK protocol ports-or-types [PRIORITY n]); else what is wrong.
std::string CheckFwRule(const std::string& rule);

class Firewall {
 public:
  // `now_ms`: the clock (versions, timestamps); `new_uuid`: a fresh uuid.
  Firewall(std::function<int64_t()> now_ms, std::function<std::string()> new_uuid)
      : now_ms_(std::move(now_ms)), new_uuid_(std::move(new_uuid)) {}

  Reply List(const Params& q);
  Reply Create(const json& body);
  Reply Get(const std::string& uuid, const Params& q);
  Reply Update(const std::string& uuid, const json& body);
  Reply Delete(const std::string& uuid, const Params& q);
  size_t size() const;

 private:
  struct Rule {
    std::string uuid, rule, owner_uuid, description, version;
    bool enabled = false, global = false, log = false;
  };
  static json RuleJson(const Rule& r);
  // Fills `r` from a create or update body; "" or the 422 to answer.
  Reply Fill(const json& body, Rule* r) const;
  std::string Version() const;
  Reply Accepted(const Rule& rule) const;

  std::function<int64_t()> now_ms_;
  std::function<std::string()> new_uuid_;
  mutable absl::Mutex mu_;
  std::map<std::string, Rule> rules_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tritonsim

#endif  // MARIPOSA_DEPLOY_TRITONSIM_FWAPI_H_
