// Which mariposad nodes a health agent keeps a stream to (pure; the agent
// gathers the views and carries the plan out). With a PostgreSQL store
// several nodes share the projects, and each node assigns the checks of the
// projects it runs to the agents connected to it; so an agent given any one
// node's address (a seed) learns the live nodes from it and keeps a link to
// every one (docs/operations.md "Health checks with several nodes").
//
//   - While no link is connected, every address it knows is tried (seeds and
//     whatever the nodes last listed), and nothing is dropped: the agent
//     keeps checking what it was assigned, as with one node.
//   - Once a link is connected, the nodes it lists are the ones wanted; with
//     no list (a SQLite store, one node) the seeds are.
//   - A link that is down and no longer wanted is closed, and the checks
//     its node assigned are dropped: that node is gone and its projects'
//     new holder assigns them again.
//   - A seed that turns out to be a listed node under another address (an
//     alias) is closed once the link to the listed address is connected, so
//     no node has two streams of one agent.
#ifndef MARIPOSA_HEALTH_LINKS_H_
#define MARIPOSA_HEALTH_LINKS_H_

#include <map>
#include <string>
#include <vector>

namespace mariposa::health {

struct LinkView {
  std::string address;
  bool connected = false;
  std::string node;                          // the name its node gave ("" until it answered)
  std::map<std::string, std::string> nodes;  // name -> address, as its node last listed them
};

struct LinkPlan {
  std::vector<std::string> open;   // addresses to open a link to
  std::vector<std::string> close;  // links to end, dropping their checks
  bool operator==(const LinkPlan& o) const { return open == o.open && close == o.close; }
};

LinkPlan PlanLinks(const std::vector<std::string>& seeds, const std::vector<LinkView>& links);

}  // namespace mariposa::health

#endif  // MARIPOSA_HEALTH_LINKS_H_
