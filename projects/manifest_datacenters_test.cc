// The manifest's data centers (issue 52, point 2): parse, rules, the
// canonical form shared by every data center, each one's services, and the
// plan per data center.
#include <string>

#include "gtest/gtest.h"
#include "projects/diff.h"
#include "projects/manifest.h"
#include "projects/manifest_testing.h"

namespace mariposa {
namespace {

using manifest_testing::Errors;
using manifest_testing::MustParse;

constexpr char kTwo[] = R"(project: jupiter
networks: [external]
services:
  web:
    image: nginx@1.25
    package: g4-highcpu-1G
    count: 3
  api:
    image: api@2
    count: 2
datacenters:
  - name: us-east-1
    canary: true
  - name: us-west-1
    services:
      web:
        count: 1
        package: g4-highcpu-2G
        networks: [west-external]
        cns: [web-west]
      api: {cns: false}
datacenter_rollout:
  on_failure: rollback
)";

TEST(DataCentersManifestTest, ParsedWithEveryOverride) {
  Manifest m = MustParse(kTwo);
  ASSERT_EQ(m.datacenters.size(), 2u);
  EXPECT_EQ(m.datacenters[0].name, "us-east-1");
  EXPECT_TRUE(m.datacenters[0].canary);
  const DataCenterOverride& web = m.datacenters[1].services.at("web");
  EXPECT_EQ(web.count, 1);
  EXPECT_EQ(web.package, "g4-highcpu-2G");
  EXPECT_EQ(web.networks, std::vector<std::string>{"west-external"});
  EXPECT_EQ(web.cns, std::vector<std::string>{"web-west"});
  ASSERT_TRUE(m.datacenters[1].services.at("api").cns.has_value());
  EXPECT_TRUE(m.datacenters[1].services.at("api").cns->empty());
  ASSERT_TRUE(m.datacenter_rollout.has_value());
  EXPECT_EQ(m.datacenter_rollout->max_parallel, 1);
  EXPECT_EQ(m.datacenter_rollout->on_failure, "rollback");
  EXPECT_EQ(DataCenterOrder(m.datacenters), (std::vector<std::string>{"us-east-1", "us-west-1"}));
}

TEST(DataCentersManifestTest, TheCanaryGoesFirstWhereverItIsListed) {
  Manifest m = MustParse(R"(project: p
services: {web: {image: x}}
datacenters: [{name: a}, {name: b}, {name: c, canary: true}]
)");
  EXPECT_EQ(DataCenterOrder(m.datacenters), (std::vector<std::string>{"c", "a", "b"}));
}

TEST(DataCentersManifestTest, EveryDataCenterStoresTheSameDocument) {
  Manifest m = MustParse(kTwo);
  CompiledManifest east = Compile(m, "us-east-1"), west = Compile(m, "us-west-1");
  EXPECT_EQ(east.canonical, west.canonical);
  EXPECT_EQ(east.hash, west.hash);
  EXPECT_NE(east.canonical.find("datacenters:"), std::string::npos);
  EXPECT_NE(east.canonical.find("datacenter_rollout:"), std::string::npos);
  // Each runs its own entry.
  EXPECT_EQ(east.manifest.services.at("web").count, 3);
  EXPECT_EQ(west.manifest.services.at("web").count, 1);
  EXPECT_EQ(west.manifest.services.at("web").package, "g4-highcpu-2G");
  EXPECT_EQ(west.manifest.services.at("web").networks, std::vector<std::string>{"west-external"});
  EXPECT_EQ(east.manifest.services.at("web").networks, std::vector<std::string>{"external"});
  EXPECT_EQ(*west.manifest.services.at("web").cns, std::vector<std::string>{"web-west"});
  EXPECT_FALSE(east.manifest.services.at("web").cns.has_value());  // the default names
  EXPECT_EQ(CnsNames("jupiter", "web", east.manifest.services.at("web")), std::vector<std::string>{"jupiter-web"});
  EXPECT_TRUE(west.manifest.services.at("api").cns->empty());
  EXPECT_NE(east.spec_json.at("web"), west.spec_json.at("web"));
  EXPECT_NE(east.instance_hash.at("web"), west.instance_hash.at("web"));
  EXPECT_EQ(east.spec_json.at("api"), Compile(m, "us-east-1").spec_json.at("api"));
  ASSERT_NE(east.document, nullptr);
  EXPECT_EQ(east.document->services.at("web").count, 3);
}

TEST(DataCentersManifestTest, TheCanonicalFormParsesToItself) {
  CompiledManifest c = Compile(MustParse(kTwo), "us-west-1");
  ParseOptions o;
  o.stored = true;
  ParseResult again = ParseManifest(c.canonical, o);
  ASSERT_TRUE(again.manifest.has_value());
  EXPECT_EQ(Compile(*again.manifest, "us-west-1").canonical, c.canonical);
  // Key order and spelling do not change it.
  Manifest reordered = MustParse(R"(datacenter_rollout: {on_failure: rollback}
datacenters:
  - canary: yes
    name: us-east-1
  - services:
      api: {cns: false}
      web: {cns: web-west, networks: west-external, package: g4-highcpu-2G, count: 1}
    name: us-west-1
services:
  api: {count: 2, image: api@2}
  web: {count: 3, image: nginx@1.25, package: g4-highcpu-1G}
networks: [external]
project: jupiter
)");
  EXPECT_EQ(Compile(reordered, "us-east-1").hash, c.hash);
}

TEST(DataCentersManifestTest, ADataCenterNotListedRunsNothing) {
  Manifest m = ForDataCenter(MustParse(kTwo), "eu-central-1");
  for (const auto& [name, s] : m.services) EXPECT_EQ(s.count, 0) << name;
  EXPECT_FALSE(RunsInDataCenter(m, "eu-central-1"));
  EXPECT_TRUE(RunsInDataCenter(m, "us-west-1"));
  Manifest plain = MustParse("project: p\nservices: {web: {image: x, count: 2}}\n");
  EXPECT_TRUE(RunsInDataCenter(plain, "anywhere"));
  EXPECT_EQ(ForDataCenter(plain, "anywhere").services.at("web").count, 2);
}

TEST(DataCentersManifestTest, AManifestWithoutDataCentersKeepsItsHash) {
  const std::string text = "project: p\nservices: {web: {image: x, count: 2}}\n";
  EXPECT_EQ(Compile(MustParse(text), "us-east-1").hash, Compile(MustParse(text)).hash);
  EXPECT_EQ(Compile(MustParse(text)).canonical.find("datacenter"), std::string::npos);
  EXPECT_EQ(Compile(MustParse(text)).document, nullptr);
}

struct BadCase {
  const char* name;
  const char* text;
  const char* error;
};

TEST(DataCentersManifestTest, BadEntriesAreLocatedAndExplained) {
  const BadCase cases[] = {
      {"empty list", "project: p\nservices: {web: {image: x}}\ndatacenters: []\n",
       "t.yaml:3:14: datacenters: must be a list of data centers (- name: us-east-1 …), not an empty list"},
      {"a map", "project: p\nservices: {web: {image: x}}\ndatacenters: {a: {}}\n",
       "t.yaml:3:14: datacenters: must be a list of data centers"},
      {"no name", "project: p\nservices: {web: {image: x}}\ndatacenters: [{canary: true}]\n",
       "t.yaml:3:15: datacenters[0]: missing name:"},
      {"bad name", "project: p\nservices: {web: {image: x}}\ndatacenters: [{name: US_East}]\n",
       "t.yaml:3:22: datacenters[0].name: \"US_East\" is not a data center name"},
      {"twice", "project: p\nservices: {web: {image: x}}\ndatacenters: [{name: a}, {name: a}]\n",
       "t.yaml:3:33: datacenters[1].name: data center a is listed twice"},
      {"two canaries",
       "project: p\nservices: {web: {image: x}}\ndatacenters:\n  - {name: a, canary: true}\n  - {name: b, canary: true}\n",
       "t.yaml:5:23: datacenters[1].canary: a second canary data center (the first is at line 4)"},
      {"unknown service", "project: p\nservices: {web: {image: x}}\ndatacenters: [{name: a, services: {db: {count: 1}}}]\n",
       "t.yaml:3:36: datacenters[0].services.db: no service \"db\" in this manifest; its services: web"},
      {"unknown key",
       "project: p\nservices: {web: {image: x}}\ndatacenters: [{name: a, services: {web: {image: y}}}]\n",
       "datacenters[0].services.web.image: unknown key \"image\"; expected one of: cns, count, networks, package"},
      {"count", "project: p\nservices: {web: {image: x}}\ndatacenters: [{name: a, services: {web: {count: -1}}}]\n",
       "datacenters[0].services.web.count: -1 is out of range 0..100000"},
      {"no networks", "project: p\nservices: {web: {image: x}}\ndatacenters: [{name: a, services: {web: {networks: []}}}]\n",
       "datacenters[0].services.web.networks: must name at least one network"},
      {"rollout alone", "project: p\nservices: {web: {image: x}}\ndatacenter_rollout: {max_parallel: 1}\n",
       "t.yaml:3:21: datacenter_rollout: datacenter_rollout: needs datacenters:"},
      {"parallel", "project: p\nservices: {web: {image: x}}\ndatacenters: [{name: a}]\ndatacenter_rollout: {max_parallel: 2}\n",
       "t.yaml:4:36: datacenter_rollout.max_parallel: 2 is more than the 1 data centers listed"},
      {"on_failure", "project: p\nservices: {web: {image: x}}\ndatacenters: [{name: a}]\ndatacenter_rollout: {on_failure: retry}\n",
       "datacenter_rollout.on_failure: \"retry\" is not one of: stop, rollback"},
      {"agents",
       "project: p\nservices: {a: {image: x, compute_type: agent}}\ndatacenters: [{name: a}]\n",
       "datacenters: service a is an agent: agents and core zones belong to one data center's Triton"},
  };
  for (const BadCase& c : cases) {
    std::string errors = Errors(c.text);
    EXPECT_NE(errors.find(c.error), std::string::npos) << c.name << ":\n" << errors;
  }
}

// The plan of each data center, in rollout order.
TEST(DataCentersManifestTest, TheDiffHasAPlanPerDataCenter) {
  CompiledManifest before = Compile(MustParse("project: jupiter\nnetworks: [external]\nservices:\n"
                                              "  web: {image: nginx@1.25, package: g4-highcpu-1G, count: 3}\n"
                                              "  api: {image: api@2, count: 2}\n"),
                                    "us-east-1");
  CompiledManifest after = Compile(MustParse(kTwo), "us-east-1");
  v1::Diff d = DiffManifests(&before, after);
  ASSERT_EQ(d.datacenters_size(), 2);
  const v1::DataCenterPlan& east = d.datacenters(0);
  EXPECT_EQ(east.name(), "us-east-1");
  EXPECT_TRUE(east.local());
  EXPECT_TRUE(east.canary());
  EXPECT_TRUE(east.listed_before());  // it ran here before
  for (const auto& s : east.services()) EXPECT_EQ(s.action(), v1::ServiceChange::UNCHANGED) << s.service();
  const v1::DataCenterPlan& west = d.datacenters(1);
  EXPECT_FALSE(west.local());
  EXPECT_FALSE(west.listed_before());
  EXPECT_TRUE(west.listed_after());
  ASSERT_EQ(west.services_size(), 2);
  EXPECT_EQ(west.services(1).service(), "web");
  EXPECT_EQ(west.services(1).action(), v1::ServiceChange::CREATE);
  EXPECT_EQ(west.services(1).to_count(), 1);

  // The next version drops us-west-1 and scales web in us-east-1.
  std::string next = kTwo;
  next.replace(next.find("    count: 3"), 12, "    count: 4");
  next = next.substr(0, next.find("  - name: us-west-1")) + "datacenter_rollout:\n  on_failure: stop\n";
  CompiledManifest after2 = Compile(MustParse(next), "us-east-1");
  v1::Diff d2 = DiffManifests(&after, after2);
  ASSERT_EQ(d2.datacenters_size(), 2);
  EXPECT_EQ(d2.datacenters(0).name(), "us-east-1");
  EXPECT_EQ(d2.datacenters(0).services(1).action(), v1::ServiceChange::UPDATE);
  EXPECT_EQ(d2.datacenters(0).services(1).fields(0).path(), "count");
  EXPECT_EQ(d2.datacenters(1).name(), "us-west-1");
  EXPECT_TRUE(d2.datacenters(1).listed_before());
  EXPECT_FALSE(d2.datacenters(1).listed_after());
  EXPECT_EQ(d2.datacenters(1).services(1).to_count(), 0);
  // The local plan is us-east-1's.
  EXPECT_EQ(d2.services(1).to_count(), 4);
}

TEST(DataCentersManifestTest, APlainManifestHasNoPlanPerDataCenter) {
  CompiledManifest a = Compile(MustParse("project: p\nservices: {web: {image: x, count: 1}}\n"), "us-east-1");
  CompiledManifest b = Compile(MustParse("project: p\nservices: {web: {image: x, count: 2}}\n"), "us-east-1");
  EXPECT_EQ(DiffManifests(&a, b).datacenters_size(), 0);
}

}  // namespace
}  // namespace mariposa
