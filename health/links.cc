#include "health/links.h"

#include <algorithm>
#include <set>

namespace mariposa::health {

LinkPlan PlanLinks(const std::vector<std::string>& seeds, const std::vector<LinkView>& links) {
  std::set<std::string> linked, connected;
  std::map<std::string, std::string> known;  // from the connected links
  std::set<std::string> ever;                // every address any link last listed
  for (const LinkView& l : links) {
    linked.insert(l.address);
    for (const auto& kv : l.nodes) ever.insert(kv.second);
    if (!l.connected) continue;
    connected.insert(l.address);
    for (const auto& kv : l.nodes) known.insert(kv);
  }
  LinkPlan plan;
  std::set<std::string> wanted;
  if (connected.empty()) {
    wanted.insert(seeds.begin(), seeds.end());
    wanted.insert(ever.begin(), ever.end());
  } else if (known.empty()) {
    wanted.insert(seeds.begin(), seeds.end());
  } else {
    for (const auto& kv : known) wanted.insert(kv.second);
  }
  for (const std::string& a : wanted) {
    if (!a.empty() && !linked.count(a)) plan.open.push_back(a);
  }
  if (connected.empty()) return plan;
  for (const LinkView& l : links) {
    if (!l.connected) {
      if (!wanted.count(l.address)) plan.close.push_back(l.address);
      continue;
    }
    auto listed = known.find(l.node);
    if (listed != known.end() && listed->second != l.address && connected.count(listed->second)) {
      plan.close.push_back(l.address);  // an alias of a node linked at its listed address
    }
  }
  std::sort(plan.close.begin(), plan.close.end());
  return plan;
}

}  // namespace mariposa::health
