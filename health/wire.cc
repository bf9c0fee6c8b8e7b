#include "health/wire.h"

namespace mariposa::health {
namespace {

int64_t Ms(absl::Duration d) { return absl::ToInt64Milliseconds(d); }

}  // namespace

void ToProto(const std::string& group, const Target& t, v1::CheckTarget* out) {
  out->set_group(group);
  out->set_instance(t.instance);
  out->set_check(t.check);
  out->set_network(t.network);
  const CheckSpec& s = t.spec;
  out->set_type(s.type);
  out->set_address(s.address);
  out->set_port(s.port);
  out->set_path(s.path);
  out->set_method(s.method);
  for (const auto& kv : s.headers) (*out->mutable_headers())[kv.first] = kv.second;
  for (const auto& r : s.expect_status) {
    v1::StatusRange* m = out->add_expect_status();
    m->set_low(r.first);
    m->set_high(r.second);
  }
  out->set_expect_body(s.expect_body);
  out->set_tls_skip_verify(s.tls_skip_verify);
  out->set_send(s.send);
  out->set_expect(s.expect);
  out->set_timeout_ms(Ms(s.timeout));
  const CheckPolicy& p = t.policy;
  out->set_interval_ms(Ms(p.interval));
  out->set_unhealthy_interval_ms(Ms(p.unhealthy_interval));
  out->set_retries(p.retries);
  out->set_successes(p.successes);
  out->set_start_window_ms(Ms(p.start_window));
  out->set_flap_limit(p.flap_limit);
  out->set_flap_window_ms(Ms(p.flap_window));
  out->set_created_unix_ms(absl::ToUnixMillis(t.created));
}

Target FromProto(const v1::CheckTarget& m) {
  Target t;
  t.instance = m.instance();
  t.check = m.check();
  t.network = m.network();
  CheckSpec& s = t.spec;
  s.type = m.type();
  s.address = m.address();
  s.port = m.port();
  s.path = m.path();
  s.method = m.method();
  for (const auto& kv : m.headers()) s.headers[kv.first] = kv.second;
  s.expect_status.clear();
  for (const auto& r : m.expect_status()) s.expect_status.push_back({r.low(), r.high()});
  s.expect_body = m.expect_body();
  s.tls_skip_verify = m.tls_skip_verify();
  s.send = m.send();
  s.expect = m.expect();
  s.timeout = absl::Milliseconds(m.timeout_ms());
  CheckPolicy& p = t.policy;
  p.interval = absl::Milliseconds(m.interval_ms());
  p.unhealthy_interval = absl::Milliseconds(m.unhealthy_interval_ms());
  p.retries = m.retries();
  p.successes = m.successes();
  p.start_window = absl::Milliseconds(m.start_window_ms());
  p.flap_limit = m.flap_limit();
  p.flap_window = absl::Milliseconds(m.flap_window_ms());
  t.created = absl::FromUnixMillis(m.created_unix_ms());
  return t;
}

void ToProto(const HealthChange& c, v1::HealthStateChange* out) {
  out->set_group(c.group);
  out->set_instance(c.instance);
  out->set_check(c.check);
  out->set_from(HealthName(c.from));
  out->set_to(HealthName(c.to));
  out->set_flapping(c.flapping);
  out->set_detail(c.detail);
}

HealthChange FromProto(const v1::HealthStateChange& m) {
  return {m.group(), m.instance(), m.check(), ParseHealth(m.from()), ParseHealth(m.to()), m.flapping(), m.detail()};
}

Health ParseHealth(const std::string& name) {
  for (Health h : {Health::kStarting, Health::kHealthy, Health::kUnhealthy}) {
    if (name == HealthName(h)) return h;
  }
  return Health::kUnknown;
}

}  // namespace mariposa::health
