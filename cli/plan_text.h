// The text of a plan (`mariposa diff` and `apply`): a service's image change
// in sdcadm's shape, and the images to download first. Pure functions of
// the diff; golden-tested in plan_text_test.cc.
#ifndef MARIPOSA_CLI_PLAN_TEXT_H_
#define MARIPOSA_CLI_PLAN_TEXT_H_

#include <string>

#include "mariposa/v1/projects.pb.h"

namespace mariposa::cli {

// "2 instances", "1 server".
std::string Plural(int64_t n, const std::string& what);

// "0b3f3c1e (cn-agent@2.15.0)".
std::string ImageRef(const std::string& uuid, const std::string& label);

// For a created or updated service with an image plan:
//   update "vm-agent" service (300 instances) to image 6261c204 (vm-agent@1.9.0):
//       289 instances will be updated from image 1a2b3c4d (vm-agent@1.8.0)
//       10 instances already at image 6261c204
// "" when the change has no image plan.
std::string ImagePlanText(const v1::ServiceChange& c);

// "download 1 image (69 MiB):" and one line per image; "" when none.
std::string DownloadsText(const v1::Diff& d);

// The first line of a plan: which project, on which mariposad.
//   plan for project "jupiter" on mariposad 127.0.0.1:7740:
std::string PlanHeader(const std::string& project, const std::string& daemon);

// The last line of a plan, counted in instances from the manifests:
//   3 to create, 2 to replace, 0 to delete
// (", 1 to reprovision in place" when update.strategy reprovision would).
// Agents are counted by their rollout, not here.
std::string PlanSummary(const v1::Diff& d);

// "69 MiB" (binary units, rounded).
std::string HumanBytes(int64_t bytes);

}  // namespace mariposa::cli

#endif  // MARIPOSA_CLI_PLAN_TEXT_H_
