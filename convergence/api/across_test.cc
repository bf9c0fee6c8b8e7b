// A project across data centers as one line (SummarizeAcross): converged
// only when every data center answered and every one that has it is
// converged at one version.
#include "convergence/api/state_service.h"

#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1800000000);

v1::ProjectInDataCenter At(const std::string& dc, bool converged, const std::string& version = "v3") {
  v1::ProjectInDataCenter d;
  d.set_datacenter(dc);
  d.set_answered(true);
  d.set_present(true);
  d.mutable_state()->set_converged(converged);
  d.mutable_state()->set_actual_known(true);
  d.mutable_state()->set_version_uuid(version);
  auto* s = d.mutable_state()->add_services();
  s->set_name("web");
  s->set_verdict(converged ? "converged" : "progressing");
  return d;
}

v1::ProjectInDataCenter Silent(const std::string& dc, int64_t seconds_ago) {
  v1::ProjectInDataCenter d;
  d.set_datacenter(dc);
  d.set_error("connection refused");
  if (seconds_ago >= 0) d.mutable_last_answer()->set_seconds(absl::ToUnixSeconds(kNow) - seconds_ago);
  return d;
}

v1::ProjectInDataCenter Absent(const std::string& dc) {
  v1::ProjectInDataCenter d;
  d.set_datacenter(dc);
  d.set_answered(true);
  return d;
}

TEST(SummarizeAcrossTest, OneLineAndOneVerdict) {
  struct Case {
    const char* name;
    std::vector<v1::ProjectInDataCenter> dcs;
    std::string summary;
    bool converged;
  };
  const Case cases[] = {
      {"all converged", {At("a", true), At("b", true)}, "converged in 2 of 2 data centers that have it", true},
      {"one behind", {At("a", true), At("b", false)},
       "converged in 1 of 2 data centers that have it; not converged: b (web progressing)", false},
      {"two versions", {At("a", true), At("b", true, "v2")},
       "converged in 2 of 2 data centers that have it; at different versions (a rollout under way or stopped: "
       "`rollouts`)",
       false},
      {"one silent", {At("a", true), Silent("b", 120)},
       "converged in 1 of 1 data center that has it; unknown: b (last answer 2m ago: connection refused)", false},
      {"never answered", {At("a", true), Silent("b", -1)},
       "converged in 1 of 1 data center that has it; unknown: b (never answered: connection refused)", false},
      {"not everywhere", {At("a", true), Absent("b")}, "converged in 1 of 1 data center that has it; not in b", true},
      {"nowhere", {Absent("a")}, "converged in 0 of 0 data centers that have it; not in a", false},
  };
  for (const Case& c : cases) {
    v1::ProjectAcrossResponse r;
    for (const auto& d : c.dcs) *r.add_datacenters() = d;
    SummarizeAcross(&r, kNow);
    EXPECT_EQ(r.summary(), c.summary) << c.name;
    EXPECT_EQ(r.converged(), c.converged) << c.name;
  }
}

}  // namespace
}  // namespace mariposa::convergence
