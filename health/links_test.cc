#include "health/links.h"

#include <gtest/gtest.h>

namespace mariposa::health {
namespace {

LinkView Up(std::string addr, std::string node, std::map<std::string, std::string> nodes = {}) {
  return {std::move(addr), true, std::move(node), std::move(nodes)};
}
LinkView Down(std::string addr, std::map<std::string, std::string> nodes = {}) {
  return {std::move(addr), false, "", std::move(nodes)};
}

TEST(PlanLinks, Table) {
  const std::map<std::string, std::string> three = {{"a", "A:1"}, {"b", "B:1"}, {"c", "C:1"}};
  struct Case {
    const char* name;
    std::vector<std::string> seeds;
    std::vector<LinkView> links;
    LinkPlan want;
  } cases[] = {
      {"start: open the seeds", {"A:1", "X:9"}, {}, {{"A:1", "X:9"}, {}}},
      {"one node (SQLite, no list): the seed only", {"A:1"}, {Up("A:1", "a")}, {{}, {}}},
      {"a listed node is opened", {"A:1"}, {Up("A:1", "a", three)}, {{"B:1", "C:1"}, {}}},
      {"all linked: nothing to do",
       {"A:1"},
       {Up("A:1", "a", three), Up("B:1", "b", three), Up("C:1", "c", three)},
       {{}, {}}},
      {"a down node still listed keeps its link (and its checks)",
       {"A:1"},
       {Up("A:1", "a", three), Down("B:1", three), Up("C:1", "c", three)},
       {{}, {}}},
      {"a down node no longer listed is closed",
       {"A:1"},
       {Up("A:1", "a", {{"a", "A:1"}, {"c", "C:1"}}), Down("B:1", three), Up("C:1", "c", {{"a", "A:1"}, {"c", "C:1"}})},
       {{}, {"B:1"}}},
      {"a down seed no longer listed is closed too",
       {"A:1"},
       {Down("A:1", three), Up("B:1", "b", {{"b", "B:1"}, {"c", "C:1"}}), Up("C:1", "c", {{"b", "B:1"}})},
       {{}, {"A:1"}}},
      {"nothing connected: every known address is tried, nothing dropped",
       {"A:1"},
       {Down("B:1", {{"b", "B:1"}, {"d", "D:1"}})},
       {{"A:1", "D:1"}, {}}},
      {"an alias seed stays until the listed address is connected",
       {"localhost:1"},
       {Up("localhost:1", "a", three), Down("A:1"), Up("B:1", "b", three), Up("C:1", "c", three)},
       {{}, {}}},
      {"an alias seed goes once the listed address is connected",
       {"localhost:1"},
       {Up("localhost:1", "a", three), Up("A:1", "a", three), Up("B:1", "b", three), Up("C:1", "c", three)},
       {{}, {"localhost:1"}}},
      {"a replaced alias (down, unlisted) is closed",
       {"localhost:1"},
       {Down("localhost:1", three), Up("A:1", "a", three), Up("B:1", "b", three), Up("C:1", "c", three)},
       {{}, {"localhost:1"}}},
      {"a connected node that others do not list is kept",
       {"A:1"},
       {Up("A:1", "a", {{"a", "A:1"}}), Up("B:1", "b", {{"b", "B:1"}})},
       {{}, {}}},
      {"an empty listed address is never opened", {"A:1"}, {Up("A:1", "a", {{"a", "A:1"}, {"b", ""}})}, {{}, {}}},
  };
  for (const Case& c : cases) {
    LinkPlan got = PlanLinks(c.seeds, c.links);
    EXPECT_EQ(got.open, c.want.open) << c.name;
    EXPECT_EQ(got.close, c.want.close) << c.name;
  }
}

// Properties: a connected link is never closed unless its node is linked at
// its listed address; nothing is closed while nothing is connected; an
// address already linked is never opened again.
TEST(PlanLinks, Properties) {
  const std::vector<std::string> addrs = {"A:1", "B:1", "C:1", "localhost:1"};
  const std::vector<std::string> names = {"a", "b", "c", "a"};
  for (int mask = 0; mask < (1 << 8); ++mask) {
    std::vector<LinkView> links;
    std::map<std::string, std::string> listed;
    for (int i = 0; i < 3; ++i) {
      if (mask & (1 << (4 + i))) listed[names[i]] = addrs[i];
    }
    for (int i = 0; i < 4; ++i) {
      if (!(mask & (1 << i))) continue;
      bool up = (mask >> i) & (mask >> 7) & 1 ? true : (i % 2 == 0);
      links.push_back({addrs[i], up, up ? names[i] : "", listed});
    }
    LinkPlan p = PlanLinks({"localhost:1"}, links);
    bool any_up = false;
    for (const LinkView& l : links) any_up = any_up || l.connected;
    if (!any_up) {
      EXPECT_TRUE(p.close.empty()) << mask;
    }
    for (const std::string& o : p.open) {
      for (const LinkView& l : links) EXPECT_NE(o, l.address) << mask;
    }
    for (const std::string& c : p.close) {
      for (const LinkView& l : links) {
        if (l.address != c || !l.connected) continue;
        auto it = listed.find(l.node);
        ASSERT_NE(it, listed.end()) << mask;
        EXPECT_NE(it->second, l.address) << mask;
      }
    }
  }
}

}  // namespace
}  // namespace mariposa::health
