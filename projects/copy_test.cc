#include "projects/copy.h"

#include "gtest/gtest.h"
#include "projects/manifest.h"

namespace mariposa {
namespace {

const char* kSource = R"(# jupiter in production
project: jupiter
cns: jupiter
fabric:
  vlan: 44
  networks:
    back: {subnet: 10.0.1.0/24, gateway: 10.0.1.1}
services:
  web:
    image: web@1
    count: 3
    cns: [www, "blog:80"]
    tags: &tags {com.example.tier: front, port: "80"}
    networks: [back]
  api:
    image: web@1
    count: 2
    cns: [api]
    tags: *tags
)";

TEST(CopyTest, TheCopyIsTheSameManifestUnderItsOwnName) {
  auto copied = CopiedManifest(kSource, "jupiter-staging", {});
  ASSERT_TRUE(copied.ok()) << copied.status();
  ParseResult a = ParseManifest(kSource, ParseOptions{});
  ParseResult b = ParseManifest(*copied, ParseOptions{});
  ASSERT_TRUE(a.manifest.has_value()) << (a.errors.empty() ? "" : a.errors[0].message);
  ASSERT_TRUE(b.manifest.has_value()) << *copied << (b.errors.empty() ? "" : b.errors[0].message);
  EXPECT_EQ(b.manifest->project, "jupiter-staging");
  // The same services, compiled alike but for the project's name.
  CompiledManifest ca = Compile(*a.manifest), cb = Compile(*b.manifest);
  ASSERT_EQ(ca.spec_json.size(), cb.spec_json.size());
  for (const auto& [svc, spec] : ca.spec_json) EXPECT_EQ(cb.spec_json.at(svc), spec) << svc;
  EXPECT_EQ(b.manifest->services.at("web").count, 3);
  EXPECT_EQ(b.manifest->services.at("api").count, 2);
  // Its text reads back as itself (a fixed point: copying a copy changes nothing).
  EXPECT_EQ(*CopiedManifest(*copied, "jupiter-staging", {}), *copied);
}

TEST(CopyTest, OverridesChangeCountsVlansCnsNamesAndTags) {
  auto copied = CopiedManifest(kSource, "jupiter-staging",
                               {"services.web.count=1", "fabric.vlan=45", "cns=jupiter-staging",
                                "services.web.cns=[www-staging]", "services.web.tags[com.example.tier]=staging",
                                "services.api.count=0", "services.web.tags.port=null", "services.web.stop.drain=5s"});
  ASSERT_TRUE(copied.ok()) << copied.status();
  ParseResult r = ParseManifest(*copied, ParseOptions{});
  ASSERT_TRUE(r.manifest.has_value()) << *copied << (r.errors.empty() ? "" : r.errors[0].message);
  const Manifest& m = *r.manifest;
  EXPECT_EQ(m.services.at("web").count, 1);
  EXPECT_EQ(m.services.at("api").count, 0);
  EXPECT_EQ(m.services.at("web").tags.at("com.example.tier"), "staging");
  EXPECT_EQ(m.services.at("web").tags.count("port"), 0u);
  EXPECT_EQ(m.services.at("web").stop_drain, absl::Seconds(5));
  EXPECT_NE(copied->find("vlan: 45\n"), std::string::npos) << *copied;
  EXPECT_NE(copied->find("www-staging"), std::string::npos) << *copied;
  EXPECT_EQ(copied->find("blog:80"), std::string::npos) << *copied;
  EXPECT_EQ(m.services.at("api").tags.at("com.example.tier"), "front") << "the alias was written out, then web's changed";
}

TEST(CopyTest, ABadOverrideSaysWhichAndWhereAndChangesNothing) {
  struct Row {
    const char* set;
    const char* says;
  };
  const std::vector<Row> rows = {
      {"services.web.count", "no '='"},
      {"=3", "no path"},
      {"services..count=1", "empty key"},
      {"services.web.=1", "ends with '.'"},
      {"services.web.tags[a=1", "without its ']'"},
      {"services.web.tags[]=1", "empty []"},
      {"services.web.image.x=1", "services.web.image is a value"},
      {"services.web.cns.5=x", "services.web.cns: 2 items"},
      {"services.web.cns.x=1", "2 items, numbered from 0"},
      {"services.web.count={a: [}", "not YAML"},
      {"project=other", "give it as DST"},
      {"services.w\xe7" "b.count=1", "a key in the path"},
  };
  for (const Row& r : rows) {
    auto copied = CopiedManifest(kSource, "c", {r.set});
    ASSERT_FALSE(copied.ok()) << r.set;
    EXPECT_EQ(copied.status().code(), absl::StatusCode::kInvalidArgument) << r.set;
    EXPECT_NE(copied.status().message().find(r.says), std::string::npos) << r.set << ": " << copied.status().message();
    EXPECT_NE(copied.status().message().find("PATH=VALUE"), std::string::npos) << r.set << " says how to fix it";
  }
  // ApplyOverride leaves the document as it was when it refuses.
  Value doc = Value::Map();
  doc.Set("a", Value::Str("b"));
  auto o = ParseOverride("a.b.c=1");
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(ApplyOverride(*o, &doc).ok());
  EXPECT_EQ(doc.ToYaml(), "a: b\n");
}

TEST(CopyTest, PathsMakeMapsAppendToListsAndRemove) {
  struct Row {
    const char* set;
    const char* yaml;  // the document {a: {l: [x]}} after it
  };
  const std::vector<Row> rows = {
      {"a.m.k=1", "a:\n  l:\n    - x\n  m:\n    k: 1\n"},
      {"a.l.1=w", "a:\n  l:\n    - x\n    - w\n"},
      {"a.l.0=z", "a:\n  l:\n    - z\n"},
      {"a.l.0=null", "a:\n  l: []\n"},
      {"a.l=", "a: {}\n"},
      {"a.gone.deeper=~", "a:\n  l:\n    - x\n"},
      {"a[l]={k: v}", "a:\n  l:\n    k: v\n"},
      {"b=[1, 007, true, on]", "a:\n  l:\n    - x\nb:\n  - 1\n  - \"007\"\n  - true\n  - \"on\"\n"},
  };
  for (const Row& r : rows) {
    Value doc = Value::Map();
    Value a = Value::Map();
    a.Set("l", Value::List().Add(Value::Str("x")));
    doc.Set("a", std::move(a));
    auto o = ParseOverride(r.set);
    ASSERT_TRUE(o.ok()) << r.set << ": " << o.status();
    ASSERT_TRUE(ApplyOverride(*o, &doc).ok()) << r.set;
    EXPECT_EQ(doc.ToYaml(), r.yaml) << r.set;
  }
}

TEST(CopyTest, ASourceThatIsNotAMapIsRefused) {
  EXPECT_FALSE(CopiedManifest("- a\n- b\n", "c", {}).ok());
  EXPECT_FALSE(CopiedManifest("project: [", "c", {}).ok());
}

}  // namespace
}  // namespace mariposa
