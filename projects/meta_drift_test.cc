#include "projects/meta_drift.h"

#include <gtest/gtest.h>

namespace mariposa {
namespace {

TEST(MetaDriftTest, KeysComeFromEveryInstanceField) {
  ServiceSpec s;
  s.environment = {{"PW", "{{ .meta.db.password }}"}, {"N", "{{ .project.name }}"}};
  s.mdata = {{"greeting", "{{ .meta.greeting }} there"}};
  s.tags = {{"tier", "{{ .this.meta.tier }}"}};
  s.command = "run --theme {{ .meta.theme }}";
  EXPECT_EQ(MetaKeysOf(s), (std::set<std::string>{"db.password", "greeting", "theme", "tier"}));
  EXPECT_TRUE(MetaKeysOf(ServiceSpec{}).empty());
}

TEST(MetaDriftTest, HashChangesOnlyWithTheValuesTheServiceUses) {
  ServiceSpec s;
  s.environment = {{"PW", "{{ .meta.pw }}"}};
  std::map<std::string, std::string> meta = {{"pw", "a"}, {"other", "x"}};
  std::string h = MetaHash(MetaKeysOf(s), meta);
  EXPECT_EQ(h.size(), 16u);
  meta["other"] = "y";
  EXPECT_EQ(MetaHash(MetaKeysOf(s), meta), h);  // a key it does not use
  meta["pw"] = "b";
  EXPECT_NE(MetaHash(MetaKeysOf(s), meta), h);
  meta.erase("pw");
  EXPECT_NE(MetaHash(MetaKeysOf(s), meta), h);  // missing differs from any value
  EXPECT_NE(MetaHash(MetaKeysOf(s), meta), MetaHash(MetaKeysOf(s), {{"pw", ""}}));
  EXPECT_EQ(MetaHash(MetaKeysOf(ServiceSpec{}), meta), "");  // uses no meta: nothing to track
}

}  // namespace
}  // namespace mariposa
