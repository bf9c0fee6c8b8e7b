#include "health/target.h"

namespace mariposa::health {

bool SameTarget(const Target& a, const Target& b) {
  const CheckSpec& x = a.spec;
  const CheckSpec& y = b.spec;
  return a.created == b.created && a.network == b.network && x.type == y.type && x.address == y.address &&
         x.port == y.port && x.path == y.path && x.method == y.method && x.headers == y.headers &&
         x.expect_status == y.expect_status && x.expect_body == y.expect_body &&
         x.tls_skip_verify == y.tls_skip_verify && x.send == y.send && x.expect == y.expect &&
         x.timeout == y.timeout && a.policy.interval == b.policy.interval &&
         a.policy.unhealthy_interval == b.policy.unhealthy_interval && a.policy.retries == b.policy.retries &&
         a.policy.successes == b.policy.successes && a.policy.start_window == b.policy.start_window &&
         a.policy.flap_limit == b.policy.flap_limit && a.policy.flap_window == b.policy.flap_window;
}

}  // namespace mariposa::health
