#include "projects/interpolate.h"

#include "gtest/gtest.h"

namespace mariposa {
namespace {

InterpolationContext FullContext() {
  InterpolationContext c;
  c.meta = {{"theme", "dark"}, {"mysql.password", "s3cret"}};
  c.project_name = "jupiter";
  c.project_uuid = "0b7c4f4e-0000-4000-8000-000000000001";
  c.project_version = "7";
  c.service_name = "wordpress";
  c.scale = 3;
  c.package_name = "g4-highcpu-1G";
  c.package_ram = 1024;
  c.package_disk = 25600;
  c.package_cpu = 100;
  c.instance_name = "jupiter-wordpress-2";
  c.instance_uuid = "0b7c4f4e-0000-4000-8000-000000000002";
  c.cn_uuid = "0b7c4f4e-0000-4000-8000-000000000003";
  return c;
}

TEST(InterpolateTest, EveryVariable) {
  struct Case { const char* in; const char* out; } cases[] = {
      {"{{ .meta.theme }}", "dark"},
      {"{{.meta.mysql.password}}", "s3cret"},
      {"{{ .this.meta.theme }}", "dark"},
      {"https://{{ .project.name }}.example.com", "https://jupiter.example.com"},
      {"{{ .this.project }}", "jupiter"},
      {"{{ .project.uuid }}", "0b7c4f4e-0000-4000-8000-000000000001"},
      {"v{{ .project.version }}", "v7"},
      {"{{ .service.name }}/{{ .this.service }}", "wordpress/wordpress"},
      {"n={{ .scale }}", "n=3"},
      {"{{ .package.name }} {{ .package.ram }} {{ .package.disk }} {{ .package.cpu }}",
       "g4-highcpu-1G 1024 25600 100"},
      {"{{ .placement.instance.name }}", "jupiter-wordpress-2"},
      {"{{ .placement.instance.uuid }}", "0b7c4f4e-0000-4000-8000-000000000002"},
      {"{{ .placement.cn.uuid }}", "0b7c4f4e-0000-4000-8000-000000000003"},
      {"no variables at all", "no variables at all"},
      {"", ""},
  };
  for (const auto& c : cases) {
    auto r = Interpolate(c.in, FullContext());
    ASSERT_TRUE(r.ok()) << c.in << ": " << r.status();
    EXPECT_EQ(*r, c.out) << c.in;
  }
}

TEST(InterpolateTest, MissingMetaKeyNamesTheKey) {
  auto r = Interpolate("x{{ .meta.db.host }}", FullContext());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "meta key \"db.host\" is not set (referenced as {{ .meta.db.host }}); set it with "
            "`mariposa meta set db.host VALUE` or add it under meta:");
}

TEST(InterpolateTest, UnknownValuesFailOrStay) {
  InterpolationContext c;
  c.project_name = "jupiter";
  auto r = Interpolate("{{ .project.name }}@{{ .placement.cn.uuid }}", c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "{{ .placement.cn.uuid }} has no value here (placement.cn.uuid is not known yet)");
  c.leave_unknown = true;
  r = Interpolate("{{ .project.name }}@{{ .placement.cn.uuid }}", c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "jupiter@{{ .placement.cn.uuid }}");
  // Missing meta still fails when unknowns are left in place.
  EXPECT_FALSE(Interpolate("{{ .meta.nope }}", c).ok());
}

TEST(InterpolateTest, SyntaxErrors) {
  struct Case { const char* in; const char* msg; } cases[] = {
      {"{{ .meta.x", "unterminated \"{{\" at offset 0: close it with \"}}\""},
      {"{{ meta.x }}", "\"{{ meta.x }}\" is not a variable reference: write it as {{ .name }}, e.g. {{ .meta.KEY }}"},
      {"{{ }}", "\"{{  }}\" is not a variable reference: write it as {{ .name }}, e.g. {{ .meta.KEY }}"},
      {"{{ .meta..x }}", "\"{{ .meta..x }}\" is not a valid reference: use letters, digits, '_', '-' separated by dots"},
      {"{{ .meta.a b }}", "\"{{ .meta.a b }}\" is not a valid reference: use letters, digits, '_', '-' separated by dots"},
  };
  for (const auto& c : cases) {
    auto r = ParseTemplate(c.in);
    ASSERT_FALSE(r.ok()) << c.in;
    EXPECT_EQ(r.status().message(), c.msg) << c.in;
  }
  auto r = ParseTemplate("{{ .project.nmae }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().substr(0, 45), "unknown variable \".project.nmae\"; known: .met");
}

TEST(InterpolateTest, ParseReportsCanonicalNames) {
  auto r = ParseTemplate("{{ .this.service }}-{{ .this.meta.a.b }}-{{ .scale }}");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].name, "service.name");
  EXPECT_EQ((*r)[1].name, "meta.a.b");
  EXPECT_EQ((*r)[2].name, "scale");
  EXPECT_EQ((*r)[2].offset, 41u);
}

}  // namespace
}  // namespace mariposa
