// What deleting a project removes from the data center first, and what it
// keeps: the lines `mariposa project delete` prints and the
// project.delete-requested event records.
#ifndef MARIPOSA_PROJECTS_DELETION_H_
#define MARIPOSA_PROJECTS_DELETION_H_

#include <map>
#include <string>
#include <vector>

#include "projects/store.h"
#include "projects/volumes.h"

namespace mariposa {

struct DeletionPlan {
  std::vector<std::string> removes;
  std::vector<std::string> retains;
};

// `held`: what the data center holds of the project; `agents`: its agent
// services (uninstalled); `volumes`: its current version's volumes (their
// deletion_policy); `delete_volumes`: --delete-volumes.
DeletionPlan PlanDeletion(const ProjectHoldings& held, const std::vector<std::string>& agents,
                          const std::map<std::string, VolumeSpec>& volumes, bool delete_volumes);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_DELETION_H_
