// A service's image change as sdcadm plans it, from the data center's
// actual state: the target image, how many instances (servers, for agents)
// move from which image, how many are there already, and what must be
// downloaded first. Filled by the controller (Reconciler::PlanImages) for
// apply and diff; plain data.
#ifndef MARIPOSA_PROJECTS_IMAGE_PLAN_H_
#define MARIPOSA_PROJECTS_IMAGE_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

namespace mariposa {

struct ImagePlanStep {
  std::string image_uuid;  // "" when unknown (an agent reporting a version only, or not installed)
  std::string label;       // name@version, or "not installed"
  int64_t count = 0;
  bool downgrade = false;  // the target is older than this image
};

struct ImagePlan {
  std::string image_uuid;
  std::string label;       // name@version of the target
  bool agent = false;      // counts are servers
  int64_t instances = 0;   // the service's instances (servers) now
  std::vector<ImagePlanStep> from;  // instances on another image, most first
  int64_t already = 0;     // at the target image
  int64_t download_bytes = 0;  // > 0: imported from `source` first
  std::string source;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_IMAGE_PLAN_H_
