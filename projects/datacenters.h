// A project's data centers (the manifest's `datacenters:` and
// `datacenter_rollout:`, issue 52): which data centers run it, what differs
// in each (a service's count, package, networks and CNS names), and the
// order a new version is rolled out across them. The stored version is one
// document, the same (same canonical hash) in every data center; each
// data center's mariposad runs that document as its own entry makes it
// (ForDataCenter in manifest.h). Pure; no I/O.
#ifndef MARIPOSA_PROJECTS_DATACENTERS_H_
#define MARIPOSA_PROJECTS_DATACENTERS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mariposa {

// What one data center changes in one service; unset fields are the
// service's own.
struct DataCenterOverride {
  std::optional<int64_t> count;
  std::optional<std::string> package;
  std::optional<std::vector<std::string>> networks;
  std::optional<std::vector<std::string>> cns;  // {} = no CNS names there
};

struct DataCenterSpec {
  std::string name;  // a mariposad's --datacenter
  // Rolled out to first, alone, whatever its place in the list (at most
  // one data center is the canary).
  bool canary = false;
  std::map<std::string, DataCenterOverride> services;  // service -> override
};

// How a new version goes across the data centers: in the list's order
// (the canary first), `max_parallel` at a time; the next starts only when
// the ones before converged healthy. `on_failure`: "stop" leaves the data
// centers not started on the version they had; "rollback" also rolls the
// finished ones back to it.
struct DataCenterRollout {
  int max_parallel = 1;
  std::string on_failure = "stop";
};

// The data center names in rollout order: the canary first, then the list.
std::vector<std::string> DataCenterOrder(const std::vector<DataCenterSpec>& dcs);
// The names as listed, for a message: "us-east-1, us-west-1".
std::string DataCenterList(const std::vector<DataCenterSpec>& dcs);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_DATACENTERS_H_
