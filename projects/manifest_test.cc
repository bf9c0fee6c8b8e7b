#include "projects/manifest.h"

#include <functional>

#include "common/ids.h"
#include "gtest/gtest.h"
#include "projects/manifest_testing.h"
#include "tests/process.h"

namespace mariposa {
namespace {

using ::mariposa::manifest_testing::Errors;
using ::mariposa::manifest_testing::MustParse;
using ::mariposa::testing::ReadFile;

TEST(ManifestTest, ExampleParsesWithEveryField) {
  Manifest m = MustParse(ReadFile("deploy/examples/jupiter.yaml"));
  EXPECT_EQ(m.project, "jupiter");
  EXPECT_EQ(m.description, "Jupiter web shop");
  EXPECT_EQ(m.meta.at("theme"), "twentyseventeen");
  EXPECT_EQ(m.meta.at("mysql.password"), "change-me");
  EXPECT_EQ(m.deployment_groups.at("frontend"), (std::vector<std::string>{"nginx", "wordpress"}));
  ASSERT_EQ(m.services.size(), 3u);
  const ServiceSpec& wp = m.services.at("wordpress");
  EXPECT_EQ(wp.service_type, "continuous");
  EXPECT_EQ(wp.compute_type, "docker");
  EXPECT_EQ(wp.image, "autopilotpattern/wordpress@1.2.0");
  EXPECT_EQ(wp.package, "g4-highcpu-1G");
  EXPECT_EQ(wp.count, 3);
  EXPECT_EQ(wp.tags.at("role"), "web");
  ASSERT_EQ(wp.placement.size(), 2u);
  EXPECT_EQ(wp.placement[0].key, "service");
  EXPECT_FALSE(wp.placement[0].equal);
  EXPECT_TRUE(wp.placement[0].soft);
  EXPECT_EQ(wp.placement[0].value, "{{ .this.service }}");
  EXPECT_FALSE(wp.placement[1].soft);
  EXPECT_EQ(wp.ports, (std::vector<int>{80}));
  EXPECT_EQ(wp.environment.at("WORDPRESS_URL"), "https://{{ .project.name }}.example.com");
  EXPECT_EQ(wp.mdata.at("com.example.tier"), "web");
  EXPECT_EQ(wp.command, "/bin/containerpilot wordpress");
  const HealthCheckSpec& hc = wp.healthchecks.at("http");
  EXPECT_EQ(hc.type, "http");
  EXPECT_EQ(hc.port, 80);
  EXPECT_EQ(hc.path, "/healthz");
  EXPECT_EQ(hc.interval, absl::Seconds(10));
  EXPECT_EQ(hc.unhealthy_interval, absl::Seconds(10));
  EXPECT_EQ(hc.timeout, absl::Seconds(2));
  EXPECT_EQ(hc.retries, 3);
  EXPECT_EQ(hc.expect_status, (std::vector<std::pair<int, int>>{{200, 399}}));
  EXPECT_EQ(wp.start_parallelism, 2);
  EXPECT_EQ(wp.start_window, absl::Seconds(3));
  EXPECT_EQ(wp.restart_condition, (std::vector<std::string>{"on-cn-restart", "on-failure"}));
  EXPECT_EQ(wp.restart_max_attempts, 3);
  EXPECT_EQ(wp.stop_timeout, absl::Seconds(30));
  EXPECT_EQ(wp.preserve_stopped, "on-failure");
  EXPECT_EQ(wp.update_rolling, 2);
  EXPECT_EQ(wp.update_max_surge, 1);
  EXPECT_TRUE(wp.update_auto_rollback);
  const ServiceSpec& db = m.services.at("mysql");
  EXPECT_EQ(db.compute_type, "infrastructure");
  EXPECT_EQ(db.brand, "lx");
  EXPECT_EQ(db.package, "g4-general-4G");
  EXPECT_EQ(db.disk_bytes, int64_t{100} << 30);
  EXPECT_EQ(db.count, 1);
  EXPECT_EQ(db.tags.at("role"), "database");
  EXPECT_EQ(db.healthchecks.at("mysql").port, 3306);
  EXPECT_TRUE(m.warnings.empty());
  EXPECT_FALSE(m.templates.empty());
}

TEST(ManifestTest, AgentExample) {
  Manifest m = MustParse(ReadFile("deploy/examples/core.yaml"));
  const ServiceSpec& a = m.services.at("cn-agent");
  EXPECT_EQ(a.compute_type, "agent");
  EXPECT_EQ(a.count, 0);
  ASSERT_TRUE(a.servers.has_value());
  EXPECT_EQ(a.servers->select, "all");
  EXPECT_EQ(a.servers->exclude, (std::vector<std::string>{"headnode"}));
  EXPECT_EQ(a.update_rolling, 20);
}

TEST(ManifestTest, AliasesAndListForms) {
  Manifest a = MustParse(R"(
project: p
services:
  web:
    image: nginx@1
    scale: 4
    labels: [role=web, tier=front]
    affinity: [role!=db]
    resources: {package: small, memory: 512m, cpu: 0.5}
    environment: [A=1, B=x=y]
)");
  const ServiceSpec& s = a.services.at("web");
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.tags.at("tier"), "front");
  EXPECT_EQ(s.placement[0].ToString(), "role!=db");
  EXPECT_EQ(s.package, "small");
  EXPECT_EQ(s.memory_bytes, int64_t{512} << 20);
  EXPECT_DOUBLE_EQ(*s.cpu, 0.5);
  EXPECT_EQ(s.environment.at("B"), "x=y");
  Manifest b = MustParse(R"(
project: p
services:
  web:
    environment: {B: x=y, A: "1"}
    cpu_placeholder_removed: null
)" == std::string() ? "" : R"(
project: p
services:
  web:
    resources: {cpu: 0.5, memory: 512M, package: small}
    affinity: role!=db
    environment: {B: x=y, A: "1"}
    tags: {tier: front, role: web}
    count: 4
    image: nginx@1
)");
  EXPECT_EQ(CanonicalHash(a), CanonicalHash(b));
  EXPECT_EQ(CanonicalYaml(a), CanonicalYaml(b));
}

TEST(ManifestTest, JsonIsAccepted) {
  Manifest y = MustParse("project: p\nservices:\n  web: {image: nginx@1, count: 2, ports: [80]}\n");
  Manifest j = MustParse(R"({"project": "p", "services": {"web": {"image": "nginx@1", "count": 2, "ports": [80]}}})");
  EXPECT_EQ(CanonicalHash(y), CanonicalHash(j));
}

TEST(ManifestTest, CanonicalHashIgnoresCommentsAndOrderButNotMeaning) {
  std::string base = "project: p\nservices:\n  web:\n    image: nginx@1\n    count: 2\n";
  std::string commented = "# top\nproject: p   # name\nservices:\n  web:\n    count: 2\n    image: nginx@1  # img\n";
  std::string spelled = "project: p\nservices:\n  web:\n    image: nginx@1\n    scale: 2\n    start: {window: 1m}\n";
  std::string changed = "project: p\nservices:\n  web:\n    image: nginx@2\n    count: 2\n";
  EXPECT_EQ(CanonicalHash(MustParse(base)), CanonicalHash(MustParse(commented)));
  EXPECT_EQ(CanonicalHash(MustParse(base)), CanonicalHash(MustParse(spelled)));  // 1m == default 60s
  EXPECT_NE(CanonicalHash(MustParse(base)), CanonicalHash(MustParse(changed)));
  // The canonical YAML reads back as the same manifest.
  Manifest m = MustParse(ReadFile("deploy/examples/jupiter.yaml"));
  Manifest again = MustParse(CanonicalYaml(m));
  EXPECT_EQ(CanonicalYaml(m), CanonicalYaml(again));
}

TEST(ManifestTest, InstanceSpecHashOnlyCoversInstanceFields) {
  Manifest a = MustParse("project: p\nservices:\n  web: {image: nginx@1, count: 2}\n");
  Manifest b = MustParse("project: p\nservices:\n  web: {image: nginx@1, count: 9, update: {rolling: 3}}\n");
  Manifest c = MustParse("project: p\nservices:\n  web: {image: nginx@1, count: 2, environment: {A: b}}\n");
  EXPECT_EQ(InstanceSpecHash(a.services.at("web")), InstanceSpecHash(b.services.at("web")));
  EXPECT_NE(InstanceSpecHash(a.services.at("web")), InstanceSpecHash(c.services.at("web")));
  EXPECT_NE(ServiceSpecJson(a.services.at("web")), ServiceSpecJson(b.services.at("web")));
}

TEST(ManifestTest, ProjectOverride) {
  Manifest m = MustParse("services:\n  web: {image: x}\n", "mars");
  EXPECT_EQ(m.project, "mars");
  Manifest same = MustParse("project: mars\nservices:\n  web: {image: x}\n", "mars");
  EXPECT_EQ(same.project, "mars");
  // A manifest written for another project is not retargeted by -j or an
  // exported MARIPOSA_PROJECT: an error naming both.
  ParseOptions o;
  o.filename = "t.yaml";
  o.project_override = "mars";
  ParseResult r = ParseManifest("project: jupiter\nservices:\n  web: {image: x}\n", o);
  EXPECT_FALSE(r.manifest.has_value());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString(),
            "t.yaml:1:10: project: the manifest is for project \"jupiter\" but -j (or $MARIPOSA_PROJECT) names "
            "\"mars\"; fix `project:` or drop -j / unset MARIPOSA_PROJECT");
}

TEST(ManifestTest, ReservedKeysAreStoredWithWarnings) {
  Manifest m = MustParse(R"(
project: p
webhooks: {zone: example.com}
services:
  web:
    image: x
    autoscale: {min: 1, max: 4}
    containerpilot: /etc/cp.json
)");
  ASSERT_EQ(m.warnings.size(), 3u);
  EXPECT_EQ(m.warnings[0].ToString(),
            "t.yaml:3:1: webhooks: accepted and stored, but Mariposa does not act on \"webhooks\" yet");
  EXPECT_EQ(m.warnings[1].ToString(),
            "t.yaml:7:5: services.web.autoscale: accepted and stored, but Mariposa does not act on \"autoscale\" yet");
  EXPECT_TRUE(m.reserved.count("webhooks"));
  EXPECT_TRUE(m.services.at("web").reserved.count("containerpilot"));
  EXPECT_NE(CanonicalYaml(m).find("autoscale"), std::string::npos);
  // Stored as structure: the canonical form reads back to the same hash.
  Manifest again = MustParse(CanonicalYaml(m));
  EXPECT_EQ(CanonicalHash(again), CanonicalHash(m));
  EXPECT_EQ(again.reserved.at("webhooks").ToJson(), "{\"zone\":\"example.com\"}");
}

TEST(ManifestTest, YamlAnchorsNullsAndCompile) {
  Manifest m = MustParse(R"(
project: p
services:
  a: &base {image: nginx@1, count: 2, tags: {role: web}}
  b: *base
  c:
    image: x
    tags: ~
    environment:
)");
  EXPECT_EQ(m.services.at("b").count, 2);
  EXPECT_EQ(m.services.at("b").tags.at("role"), "web");
  EXPECT_TRUE(m.services.at("c").tags.empty());
  CompiledManifest c = Compile(m);
  EXPECT_EQ(c.canonical, CanonicalYaml(m));
  EXPECT_EQ(c.hash, CanonicalHash(m));
  EXPECT_EQ(c.spec_json.at("a"), ServiceSpecJson(m.services.at("a")));
  EXPECT_EQ(c.instance_hash.at("c"), InstanceSpecHash(m.services.at("c")));
  EXPECT_EQ(c.instance_hash.at("a"), c.instance_hash.at("b"));
}

TEST(ManifestTest, DurationsAndSizes) {
  EXPECT_EQ(*ParseManifestDuration("500ms"), absl::Milliseconds(500));
  EXPECT_EQ(*ParseManifestDuration("10s"), absl::Seconds(10));
  EXPECT_EQ(*ParseManifestDuration("5m"), absl::Minutes(5));
  EXPECT_EQ(*ParseManifestDuration("1h"), absl::Hours(1));
  EXPECT_EQ(*ParseManifestDuration("1m30s"), absl::Seconds(90));
  EXPECT_EQ(*ParseManifestDuration("42"), absl::Seconds(42));
  EXPECT_FALSE(ParseManifestDuration("2x").ok());
  EXPECT_FALSE(ParseManifestDuration("-1s").ok());
  EXPECT_FALSE(ParseManifestDuration("inf").ok());
  EXPECT_FALSE(ParseManifestDuration("").ok());
  EXPECT_EQ(*ParseManifestSize("512m"), int64_t{512} << 20);
  EXPECT_EQ(*ParseManifestSize("4g"), int64_t{4} << 30);
  EXPECT_EQ(*ParseManifestSize("4GiB"), int64_t{4} << 30);
  EXPECT_EQ(*ParseManifestSize("100k"), 100 * 1024);
  EXPECT_EQ(*ParseManifestSize("1T"), int64_t{1} << 40);
  EXPECT_EQ(*ParseManifestSize("256"), int64_t{256} << 20);
  EXPECT_FALSE(ParseManifestSize("4x").ok());
  EXPECT_FALSE(ParseManifestSize("-1g").ok());
  EXPECT_FALSE(ParseManifestSize("g").ok());
}

// Golden errors: one case per error class, with exact location and path.
TEST(ManifestTest, GoldenErrors) {
  struct Case { const char* name; const char* text; const char* errors; } cases[] = {
      {"yaml syntax", "project: p\nservices: [a\n",
       "t.yaml:3:1: not valid YAML or JSON: did not find expected ',' or ']' while parsing a flow sequence\n"},
      {"not a map", "- a\n- b\n",
       "t.yaml:1:1: a manifest must be a map with project:, services: …; got a list\n"},
      {"missing project", "services:\n  web: {image: x}\n",
       "t.yaml:1:1: project: missing: add `project: NAME` or pass -j NAME\n"},
      {"bad project name", "project: Jupiter_1\n",
       "t.yaml:1:10: project: project name \"Jupiter_1\" is not a DNS label (lower-case letters, digits and '-', at most 63)\n"},
      {"unknown top key", "project: p\nservice: {}\n",
       "t.yaml:2:1: service: unknown key \"service\"; expected one of: cns, datacenter_rollout, datacenters, deployment_groups, description, fabric, firewall, meta, networks, project, services, volumes\n"},
      {"unknown service key", "project: p\nservices:\n  web:\n    image: x\n    imgae: y\n",
       "t.yaml:5:5: services.web.imgae: unknown key \"imgae\"; expected one of: affinity, cns, command, compute_type, count, delegate_dataset, environment, healthchecks, image, labels, mdata, networks, package, placement, ports, resources, restart, run, scale, schedule, servers, service_type, start, stop, tags, update, volumes\n"},
      {"duplicate key", "project: p\nproject: q\n", "t.yaml:2:1: project: duplicate key\n"},
      {"alias twice", "project: p\nservices:\n  web: {image: x, count: 1, scale: 2}\n",
       "t.yaml:3:29: services.web.scale: \"scale\" and \"count\" mean the same; keep one\n"},
      {"bad duration", "project: p\nservices:\n  web:\n    image: x\n    healthchecks:\n      http: {type: http, timeout: 2x}\n",
       "t.yaml:6:35: services.web.healthchecks.http.timeout: \"2x\" is not a duration (write e.g. 500ms, 10s, 5m, 1h)\n"},
      {"bad size", "project: p\nservices:\n  web: {image: x, resources: {memory: 4x}}\n",
       "t.yaml:3:39: services.web.resources.memory: \"4x\" is not a size (write e.g. 512m, 4g; binary units)\n"},
      {"not a number", "project: p\nservices:\n  web: {image: x, count: three}\n",
       "t.yaml:3:26: services.web.count: \"three\" is not a whole number\n"},
      {"out of range", "project: p\nservices:\n  web: {image: x, count: -1}\n",
       "t.yaml:3:26: services.web.count: -1 is out of range 0..100000\n"},
      {"not a bool", "project: p\nservices:\n  web: {image: x, update: {auto_rollback: maybe}}\n",
       "t.yaml:3:43: services.web.update.auto_rollback: \"maybe\" is not true or false\n"},
      {"enum", "project: p\nservices:\n  web: {image: x, compute_type: vmware}\n",
       "t.yaml:3:33: services.web.compute_type: \"vmware\" is not one of: docker, infrastructure (lx, smartmachine), kvm (bhyve, vm, hvm), agent, core\n"},
      {"scheduled without a schedule", "project: p\nservices:\n  job: {image: x, service_type: scheduled}\n",
       "t.yaml:3:8: services.job.schedule: missing: a scheduled service needs schedule: (e.g. schedule: \"0 3 * * *\", "
       "or {cron: \"0 3 * * *\", time_zone: Europe/Berlin})\n"},
      {"missing image", "project: p\nservices:\n  web: {count: 1}\n",
       "t.yaml:3:8: services.web.image: missing: every service needs an image (name[@version], uuid or docker reference)\n"},
      {"bad service name", "project: p\nservices:\n  Web_1: {image: x}\n",
       "t.yaml:3:3: services.Web_1: service name \"Web_1\" is not a DNS label (lower-case letters, digits and '-', at most 63)\n"},
      {"wrong shape", "project: p\nservices:\n  web: {image: x, ports: 80}\n",
       "t.yaml:3:26: services.web.ports: must be a list of port numbers, not \"80\"\n"},
      {"port twice", "project: p\nservices:\n  web: {image: x, ports: [80, 80]}\n",
       "t.yaml:3:31: services.web.ports[1]: port 80 is listed twice\n"},
      {"bad K=V", "project: p\nservices:\n  web: {image: x, environment: [A=1, novalue]}\n",
       "t.yaml:3:38: services.web.environment[1]: \"novalue\" is not KEY=VALUE\n"},
      {"reserved tag", "project: p\nservices:\n  web: {image: x, tags: {mariposa.service: y}}\n",
       "t.yaml:3:25: services.web.tags.mariposa.service: tags starting with \"mariposa.\" are reserved for ownership tags\n"},
      {"placement rule", "project: p\nservices:\n  web: {image: x, placement: [role=db]}\n",
       "t.yaml:3:31: services.web.placement[0]: \"role=db\" is not a placement rule; write KEY==VALUE, KEY!=VALUE (hard) or KEY==~VALUE, KEY!=~VALUE (soft)\n"},
      {"bad template", "project: p\nservices:\n  web: {image: x, environment: {A: \"{{ .meta.x\"}}\n",
       "t.yaml:3:36: services.web.environment.A: unterminated \"{{\" at offset 0: close it with \"}}\"\n"},
      {"tcp needs port", "project: p\nservices:\n  db:\n    image: x\n    healthchecks:\n      c: {type: tcp}\n",
       "t.yaml:6:10: services.db.healthchecks.c.port: missing: a tcp check needs a port\n"},
      {"check field for other type", "project: p\nservices:\n  db:\n    image: x\n    healthchecks:\n      c: {type: tcp, port: 1, path: /x}\n",
       "t.yaml:6:37: services.db.healthchecks.c.path: only for http and https checks\n"},
      {"expect_status", "project: p\nservices:\n  w:\n    image: x\n    healthchecks:\n      c: {type: http, expect_status: [200-299, 700]}\n",
       "t.yaml:6:48: services.w.healthchecks.c.expect_status[1]: \"700\" is not a status code or range like 200-299 (100..599)\n"},
      {"bad regex", "project: p\nservices:\n  w:\n    image: x\n    healthchecks:\n      c: {type: http, expect_body: \"(\"}\n",
       "t.yaml:6:36: services.w.healthchecks.c.expect_body: \"(\" is not a valid regular expression\n"},
      {"timeout > interval", "project: p\nservices:\n  w:\n    image: x\n    healthchecks:\n      c: {type: http, interval: 5s, timeout: 10s}\n",
       "t.yaml:6:10: services.w.healthchecks.c.timeout: timeout 10s is longer than interval 5s; shorten the timeout or lengthen the interval\n"},
      {"group unknown service", "project: p\ndeployment_groups:\n  front: [web, api]\nservices:\n  web: {image: x}\n",
       "t.yaml:3:16: deployment_groups.front[1]: no service named \"api\" in this manifest\n"},
      {"group overlap", "project: p\ndeployment_groups:\n  a: [web]\n  b: [web]\nservices:\n  web: {image: x}\n",
       "t.yaml:4:7: deployment_groups.b[0]: service \"web\" is already in group \"a\"; a service belongs to at most one group\n"},
      {"agent with count", "project: p\nservices:\n  a: {image: x, compute_type: agent, count: 3}\n",
       "t.yaml:3:45: services.a.count: agents run one instance per selected server; use servers: instead of count\n"},
      {"servers without agent", "project: p\nservices:\n  a: {image: x, servers: {select: all}}\n",
       "t.yaml:3:26: services.a.servers: servers: is only for compute_type: agent; use placement: for other services\n"},
      {"meta list", "project: p\nmeta: {a: [1, 2]}\n",
       "t.yaml:2:11: meta.a: meta values must be strings, numbers, booleans or maps, not a list\n"},
      {"restart condition", "project: p\nservices:\n  w: {image: x, restart: {condition: [sometimes]}}\n",
       "t.yaml:3:38: services.w.restart.condition: \"sometimes\" is not one of: on-failure, on-cn-restart, always, never\n"},
      {"unknown variable", "project: p\nservices:\n  w: {image: x, command: \"run {{ .this.nope }}\"}\n",
       "t.yaml:3:26: services.w.command: unknown variable \".this.nope\"; known: .meta.KEY, .project.name, .project.uuid, .project.version, .service.name, .scale, .package.ram, .package.disk, .package.cpu, .package.name, .placement.instance.name, .placement.instance.uuid, .placement.cn.uuid, .this.meta.KEY, .this.service, .this.project\n"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Errors(c.text), c.errors) << c.name;
  }
}

TEST(ManifestTest, AllErrorsAtOnce) {
  std::string errs = Errors(R"(project: p
services:
  web:
    image: x
    count: lots
    ports: [0]
    healthchecks:
      h: {type: gopher}
  db:
    frobnicate: 1
)");
  EXPECT_EQ(errs,
            "t.yaml:5:12: services.web.count: \"lots\" is not a whole number\n"
            "t.yaml:6:13: services.web.ports[0]: 0 is out of range 1..65535\n"
            "t.yaml:8:17: services.web.healthchecks.h.type: \"gopher\" is not one of: http, https, tcp\n"
            "t.yaml:10:5: services.db.frobnicate: unknown key \"frobnicate\"; expected one of: affinity, cns, command, compute_type, count, delegate_dataset, environment, healthchecks, image, labels, mdata, networks, package, placement, ports, resources, restart, run, scale, schedule, servers, service_type, start, stop, tags, update, volumes\n"
            "t.yaml:10:5: services.db.image: missing: every service needs an image (name[@version], uuid or docker reference)\n");
}

TEST(ManifestTest, MetaReferencesAreCheckedAgainstStoreAndDefaults) {
  Manifest m = MustParse(R"(project: p
meta: {theme: dark}
services:
  w:
    image: x
    environment:
      A: "{{ .meta.theme }}"
      B: "{{ .this.meta.db.password }}"
)");
  auto errs = CheckMetaReferences(m, {}, "t.yaml");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].ToString(),
            "t.yaml:8:10: services.w.environment.B: meta key \"db.password\" is not set (referenced as {{ "
            ".this.meta.db.password }}); set it with `mariposa meta set db.password VALUE` or add it under meta:");
  EXPECT_TRUE(CheckMetaReferences(m, {{"db.password", "x"}}, "t.yaml").empty());
}

const char kVolumeBase[] =
    "project: p\nfabric:\n  vlan: 44\n  networks: {private: {subnet: 10.0.1.0/24}, back: {subnet: 10.0.2.0/24}}\n";

TEST(ManifestVolumesTest, FormsAndTheirDefaults) {
  Manifest m = MustParse(absl::StrCat(kVolumeBase, R"(volumes:
  data: {size: 20g, network: private}
  logs: {network: back, deletion_policy: delete}
  old: {network: private, remove: true}
services:
  db:
    image: x
    networks: [private, back]
    volumes:
      - {name: data, mountpoint: /var/lib/mysql}
      - logs:/var/log/db:ro
)"));
  ASSERT_EQ(m.volumes.size(), 3u);
  EXPECT_EQ(m.volumes.at("data").size_mib, 20480);
  EXPECT_EQ(m.volumes.at("data").deletion_policy, "retain") << "data loss is explicit";
  EXPECT_EQ(m.volumes.at("logs").size_mib, 0) << "VOLAPI's default";
  EXPECT_EQ(m.volumes.at("logs").deletion_policy, "delete");
  EXPECT_TRUE(m.volumes.at("old").remove);
  EXPECT_EQ(m.services.at("db").volumes,
            (std::vector<VolumeMount>{{"data", "/var/lib/mysql", "rw"}, {"logs", "/var/log/db", "ro"}}));
  // Mounts are part of the instance spec (a change rolls out); the canonical
  // form reads back to the same manifest.
  Manifest again = MustParse(CanonicalYaml(m));
  EXPECT_EQ(CanonicalHash(again), CanonicalHash(m));
  EXPECT_EQ(again.services.at("db").volumes, m.services.at("db").volumes);
  Manifest unmounted = m;
  unmounted.services.at("db").volumes.pop_back();
  EXPECT_NE(InstanceSpecHash(unmounted.services.at("db")), InstanceSpecHash(m.services.at("db")));
  // One fabric network: it is the default.
  Manifest one = MustParse(
      "project: p\nfabric: {vlan: 44, networks: {private: {subnet: 10.0.1.0/24}}}\nvolumes: {data: }\n"
      "services:\n  db: {image: x, networks: [private], volumes: [data:/d]}\n");
  EXPECT_EQ(one.volumes.at("data").network, "private");
  // No network with a fabric of two, or no fabric: the account's default
  // fabric network (found in NAPI at apply and at each sync), as an
  // earlier release stored it and as CloudAPI makes a volume given no
  // networks.
  Manifest two = MustParse(absl::StrCat(kVolumeBase, "volumes: {data: {size: 10g}}\n"));
  EXPECT_EQ(two.volumes.at("data").network, "");
  Manifest none = MustParse("project: p\nvolumes: {uploads: {size: 10g}}\nservices:\n  web: {image: x, volumes: [uploads:/u]}\n");
  EXPECT_EQ(none.volumes.at("uploads").network, "");
  EXPECT_EQ(none.volumes.at("uploads").size_mib, 10240);
  // VOLAPI's names: the project's, then a dot; nobody else's reads as one.
  EXPECT_EQ(VolapiVolumeName("p", "data"), "p.data");
  EXPECT_EQ(ProjectVolumeName("p", "p.data"), std::optional<std::string>("data"));
  EXPECT_EQ(ProjectVolumeName("p", "pq.data"), std::nullopt);
  EXPECT_EQ(ProjectVolumeName("p", "p.da.ta"), std::nullopt);
  EXPECT_EQ(ProjectVolumeName("p-x", "p.x-data"), std::nullopt);
  // Neither size nor network changes in place.
  std::map<std::string, VolumeSpec> bigger = m.volumes;
  bigger["data"].size_mib = 40960;
  EXPECT_NE(FixedVolumeChange(m.volumes, bigger).find("volumes.data.size: VOLAPI cannot change"), std::string::npos);
  std::map<std::string, VolumeSpec> moved = m.volumes;
  moved["logs"].network = "private";
  EXPECT_NE(FixedVolumeChange(m.volumes, moved).find("volumes.logs.network"), std::string::npos);
  moved = m.volumes;
  moved.erase("data");
  moved["logs"].deletion_policy = "retain";
  EXPECT_EQ(FixedVolumeChange(m.volumes, moved), "") << "removing one, or changing its policy, is fine";
}

TEST(ManifestVolumesTest, RefusalsAreLocated) {
  struct Case {
    std::string name, text, error;
  };
  const std::string svc = "services:\n  db:\n    image: x\n    networks: [private]\n";
  const std::vector<Case> cases = {
      {"odd size", "volumes: {data: {size: 1500m, network: private}}\n",
       "t.yaml:5:24: volumes.data.size: VOLAPI makes volumes of whole GiB (write e.g. 10g, 20g, 100g)\n"},
      {"unknown network", "volumes: {data: {network: public}}\n",
       "t.yaml:5:17: volumes.data.network: \"public\" is neither a network of the manifest's fabric nor a uuid; "
       "volumes are served on fabric networks\n"},
      {"bad policy", "volumes: {data: {network: private, deletion_policy: snapshot}}\n",
       "t.yaml:5:53: volumes.data.deletion_policy: \"snapshot\" is not one of: retain, delete\n"},
      {"undeclared", svc + "    volumes: [data:/d]\n",
       "t.yaml:9:15: services.db.volumes[0]: volume \"data\" is not declared in the manifest's volumes:\n"},
      {"relative mountpoint", "volumes: {data: {network: private}}\n" + svc + "    volumes: [data:d]\n",
       "t.yaml:10:15: services.db.volumes[0]: mountpoint \"d\" must be an absolute path other than /, without spaces\n"},
      {"bad mode", "volumes: {data: {network: private}}\n" + svc + "    volumes: [data:/d:rx]\n",
       "t.yaml:10:15: services.db.volumes[0]: \"data:/d:rx\": the mode after the mountpoint is ro or rw, not \"rx\"\n"},
      {"twice", "volumes: {data: {network: private}}\n" + svc + "    volumes: [data:/d, data:/d]\n",
       "t.yaml:10:24: services.db.volumes[1]: mountpoint /d is used twice\n"},
      {"mounting a removed one", "volumes: {data: {network: private, remove: true}}\n" + svc + "    volumes: [data:/d]\n",
       "t.yaml:10:15: services.db.volumes[0]: volume data has remove: true (it is to be deleted); stop mounting it, or "
       "drop remove: to keep it\n"},
      {"not on its network", "volumes: {data: {network: back}}\n" + svc + "    volumes: [data:/d]\n",
       "t.yaml:10:15: services.db.volumes[0]: service db is not on network back, which volume data is served on; add "
       "back to its networks\n"},
      {"an agent", "volumes: {data: {network: private}}\nservices:\n  a:\n    image: x\n    compute_type: agent\n"
                   "    volumes: [data:/d]\n",
       "t.yaml:10:15: services.a.volumes[0]: agents and core zones mount no volumes of the project; remove volumes:\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(Errors(absl::StrCat(kVolumeBase, c.text)), c.error) << c.name;
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

// Hostile input at the parser: every case rejected with where and why.
TEST(ManifestLimitsTest, HostileYamlRejectedWithLocation) {
  struct Case {
    std::string text;
    std::string error;
  } cases[] = {
      {"project: x\nmeta: &m {x: *m}\n",
       "t.yaml:2:14: alias *m is inside the node it names (anchor &m at line 2, column 7)"},
      {"project: x\nvolumes: &v [a, *v]\n", "t.yaml:2:17: alias *v is inside the node it names"},
      {"project: x\nmeta: {a: *nope}\n", "t.yaml:2:11: alias *nope names no anchor defined before it"},
      {"project: x\nservices: " + std::string(65, '[') + std::string(65, ']') + "\n",
       "t.yaml:2:74: nested more than 64 levels deep"},
      {"project: x\ndescription: \"a\\0b\"\n", "t.yaml:2:14: a NUL byte at byte 1 of this value"},
      {"project: x\nmeta:\n  k: \"\\e[1m\"\n", "t.yaml:3:6: control character 0x1b at byte 0"},
      {"project: x\ndescription: " + std::string(70000, 'a') + "\n", "a value of 70000 bytes is over the limit of 65536"},
      {"project: x\nservices:\n  w:\n    image: i\n    stop:\n      timeout: 9223372036854775807s\n",
       "services.w.stop.timeout: \"9223372036854775807s\" is longer than the longest duration allowed, 720h"},
  };
  for (const auto& c : cases) {
    EXPECT_NE(Errors(c.text).find(c.error), std::string::npos) << Errors(c.text);
  }
}

TEST(ManifestLimitsTest, AliasBombStopsAtTheNodeBudget) {
  std::string s = "project: x\nvolumes:\n  a0: &a0 [l, l, l, l, l, l, l, l, l, l]\n";
  for (int i = 1; i <= 9; ++i) {
    s += "  a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) s += (k ? ", *a" : "*a") + std::to_string(i - 1);
    s += "]\n";
  }
  EXPECT_NE(Errors(s).find("expands to more than 250000 nodes"), std::string::npos) << Errors(s);
  // Shared, small aliases stay fine.
  MustParse("project: x\nservices:\n  a:\n    image: i\n    environment: &e {A: b}\n  b:\n    image: i\n"
            "    environment: *e\n");
}

TEST(ManifestLimitsTest, ErrorsCappedButCounted) {
  std::string s = "project: x\nservices:\n  w:\n    image: i\n";
  for (int i = 0; i < 5000; ++i) s += "    bogus" + std::to_string(i) + ": 1\n";
  ParseOptions o;
  o.filename = "t.yaml";
  ParseResult r = ParseManifest(s, o);
  EXPECT_EQ(r.errors.size(), 100u);
  EXPECT_EQ(r.total_errors, 5000);
  absl::Status st = DiagnosticsToStatus(r.errors, r.total_errors);
  EXPECT_LE(st.message().size(), 6u << 10);
  EXPECT_NE(st.message().find(" of 5000 errors"), absl::string_view::npos) << st.message().substr(0, 200);
  EXPECT_NE(st.message().find("more not shown"), absl::string_view::npos);
}

TEST(ManifestLimitsTest, CountsAndKeyLengths) {
  std::string many = "project: x\nservices:\n";
  for (int i = 0; i < 1001; ++i) many += "  s" + std::to_string(i) + ":\n    image: i\n";
  EXPECT_NE(Errors(many).find("1001 services; a project may have at most 1000"), std::string::npos);
  EXPECT_NE(Errors("project: x\nmeta:\n  ? " + std::string(300, 'k') + "\n  : v\n").find("must be 1-256 bytes"),
            std::string::npos);
  EXPECT_NE(Errors("project: x\nservices:\n  w:\n    image: i\n    tags:\n      ? " + std::string(300, 't') +
                   "\n      : v\n")
                .find("a key of 300 bytes is over the limit of 256 bytes"),
            std::string::npos);
}

// A map's keys are checked for repeats however many it has: past the first
// few the parser keeps them in a hash table (Parser::SeenKeys), and a repeat
// or an alias of a key given earlier is found there too.
TEST(ManifestLimitsTest, RepeatsAreFoundInMapsOfManyKeys) {
  for (int before : {3, 31, 32, 33, 90}) {  // 90: every error shown (at most 100)
    std::string m = "project: x\nservices:\n  w:\n    image: i\n";
    for (int i = 0; i < before; ++i) m += "    k" + std::to_string(i) + ": v\n";
    const int line = 5 + before;  // the line of the repeat
    std::string again = m + "    image: j\n";
    std::string errors = Errors(again);
    EXPECT_NE(errors.find("t.yaml:" + std::to_string(line) + ":5: services.w.image: duplicate key"), std::string::npos)
        << before << " keys before: " << errors.substr(0, 300);
    std::string alias = m + "    count: 2\n    scale: 3\n";
    errors = Errors(alias);
    EXPECT_NE(errors.find("t.yaml:" + std::to_string(line + 1) +
                          ":5: services.w.scale: \"scale\" and \"count\" mean the same; keep one"),
              std::string::npos)
        << before << " keys before: " << errors.substr(0, 300);
    // Each unknown key is named once, none of them as a repeat.
    EXPECT_EQ(errors.find("k0: duplicate key"), std::string::npos);
  }
}

class CancelledForTest : public Cancellation {
 public:
  absl::Status Check() const override { return absl::CancelledError("client gone"); }
};

TEST(ManifestLimitsTest, CancellationStopsTheParse) {
  std::string s = "project: x\nservices:\n";
  for (int i = 0; i < 500; ++i) s += "  s" + std::to_string(i) + ":\n    image: i\n";
  CancelledForTest cancelled;
  ParseOptions o;
  o.cancel = &cancelled;
  ParseResult r = ParseManifest(s, o);
  EXPECT_FALSE(r.manifest.has_value());
  EXPECT_TRUE(absl::IsCancelled(r.interrupted)) << r.interrupted;
}

}  // namespace
TEST(ManifestTest, ReprovisionStrategyNeedsADelegateDataset) {
  auto parse = [](const std::string& body) {
    ParseOptions o;
    o.filename = "t.yaml";
    return ParseManifest("project: p\nservices:\n  db:\n    image: i\n" + body, o);
  };
  auto r = parse("    update: {strategy: reprovision}\n");
  ASSERT_FALSE(r.manifest);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].path, "services.db.update.strategy");
  EXPECT_NE(r.errors[0].message.find("delegate_dataset: true"), std::string::npos) << r.errors[0].message;
  r = parse("    compute_type: kvm\n    delegate_dataset: true\n    update: {strategy: reprovision}\n");
  ASSERT_FALSE(r.manifest);
  EXPECT_NE(r.errors[0].message.find("hardware VM"), std::string::npos);
  r = parse("    delegate_dataset: true\n"
            "    update: {strategy: reprovision, min_healthy_time: 10s, healthy_deadline: 5m, progress_deadline: 10m}\n");
  ASSERT_TRUE(r.manifest) << (r.errors.empty() ? "" : r.errors[0].ToString());
  const ServiceSpec& s = r.manifest->services.at("db");
  EXPECT_EQ(s.update_strategy, "reprovision");
  EXPECT_TRUE(s.delegate_dataset);
  EXPECT_EQ(s.update_min_healthy_time, absl::Seconds(10));
  EXPECT_EQ(s.update_healthy_deadline, absl::Minutes(5));
  EXPECT_EQ(s.update_progress_deadline, absl::Minutes(10));
  // The canonical form reads back the same; the dataset is part of the instance.
  std::string canonical = CanonicalYaml(*r.manifest);
  auto again = ParseManifest(canonical, ParseOptions{});
  ASSERT_TRUE(again.manifest);
  EXPECT_EQ(CanonicalYaml(*again.manifest), canonical);
  EXPECT_NE(canonical.find("strategy: reprovision"), std::string::npos) << canonical;
  ServiceSpec without = s;
  without.delegate_dataset = false;
  EXPECT_NE(InstanceSpecHash(s), InstanceSpecHash(without));
  // Defaults are not written: older versions keep their canonical form.
  auto plain = parse("");
  ASSERT_TRUE(plain.manifest);
  EXPECT_EQ(CanonicalYaml(*plain.manifest).find("strategy"), std::string::npos);
  EXPECT_EQ(CanonicalYaml(*plain.manifest).find("deadline"), std::string::npos);
}

}  // namespace mariposa

namespace mariposa {
namespace {

// compute_type: core: updated in place with its dataset kept, one at a time,
// a broken zone reported and not replaced; other strategies are refused.
TEST(ManifestTest, CoreZonesDefaultToReprovisionKeepingTheirDataset) {
  auto parse = [](const std::string& body) {
    ParseOptions o;
    o.filename = "t.yaml";
    return ParseManifest("project: p\nservices:\n  imgapi:\n    compute_type: core\n    image: imgapi@1\n" + body, o);
  };
  auto r = parse("");
  ASSERT_TRUE(r.manifest) << (r.errors.empty() ? "" : r.errors[0].ToString());
  const ServiceSpec& s = r.manifest->services.at("imgapi");
  EXPECT_EQ(s.compute_type, "core");
  EXPECT_EQ(s.update_strategy, "reprovision");
  EXPECT_TRUE(s.delegate_dataset);
  EXPECT_EQ(s.update_rolling, 1);
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.restart_condition, std::vector<std::string>{"never"});
  // The canonical form says so and reads back the same.
  auto again = ParseManifest(CanonicalYaml(*r.manifest), ParseOptions{});
  ASSERT_TRUE(again.manifest);
  EXPECT_EQ(CanonicalYaml(*again.manifest), CanonicalYaml(*r.manifest));
  // An explicit restart condition is kept.
  r = parse("    restart: {condition: on-failure}\n");
  ASSERT_TRUE(r.manifest);
  EXPECT_EQ(r.manifest->services.at("imgapi").restart_condition, std::vector<std::string>{"on-failure"});
  r = parse("    update: {strategy: replace}\n");
  ASSERT_FALSE(r.manifest);
  EXPECT_EQ(r.errors[0].path, "services.imgapi.update.strategy");
  EXPECT_NE(r.errors[0].message.find("core zones are updated in place"), std::string::npos) << r.errors[0].message;
  r = parse("    delegate_dataset: false\n");
  ASSERT_FALSE(r.manifest);
  EXPECT_EQ(r.errors[0].path, "services.imgapi.delegate_dataset");
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

// A check says what its failure means; stop.drain says how long an instance
// is out of discovery before it goes. Both are written in the canonical form
// only when not the default, so stored versions keep their form.
TEST(ManifestTest, ReadinessLivenessAndDrain) {
  const std::string base =
      "project: p\nservices:\n  web:\n    image: x\n    healthchecks:\n      h: {type: tcp, port: 80}\n";
  Manifest m = MustParse(base);
  const HealthCheckSpec& h = m.services.at("web").healthchecks.at("h");
  EXPECT_TRUE(h.readiness);
  EXPECT_TRUE(h.liveness);
  EXPECT_FALSE(m.services.at("web").stop_drain.has_value());
  std::string canonical = CanonicalYaml(m);
  EXPECT_EQ(canonical.find("readiness"), std::string::npos) << canonical;
  EXPECT_EQ(canonical.find("drain"), std::string::npos) << canonical;

  Manifest ready = MustParse(
      "project: p\nservices:\n  web:\n    image: x\n    stop: {drain: 2m}\n    healthchecks:\n"
      "      h: {type: tcp, port: 80, liveness: false}\n      l: {type: tcp, port: 81, readiness: false}\n");
  EXPECT_TRUE(ready.services.at("web").healthchecks.at("h").readiness);
  EXPECT_FALSE(ready.services.at("web").healthchecks.at("h").liveness);
  EXPECT_FALSE(ready.services.at("web").healthchecks.at("l").readiness);
  EXPECT_EQ(ready.services.at("web").stop_drain, absl::Minutes(2));
  EXPECT_EQ(MustParse("project: p\nservices:\n  web: {image: x, stop: {drain: 0s}}\n").services.at("web").stop_drain,
            absl::ZeroDuration());
  std::string text = CanonicalYaml(ready);
  EXPECT_NE(text.find("liveness: false"), std::string::npos) << text;
  EXPECT_NE(text.find("readiness: false"), std::string::npos) << text;
  EXPECT_NE(text.find("drain: 2m"), std::string::npos) << text;
  // The canonical form reads back as the same manifest.
  Manifest again = MustParse(text);
  EXPECT_EQ(CanonicalYaml(again), text);
  // A changed purpose is a changed check (it rolls out, as a changed probe).
  EXPECT_FALSE(SameChecks(m.services.at("web").healthchecks, MustParse(
      "project: p\nservices:\n  web:\n    image: x\n    healthchecks:\n"
      "      h: {type: tcp, port: 80, liveness: false}\n").services.at("web").healthchecks));

  EXPECT_EQ(Errors("project: p\nservices:\n  web:\n    image: x\n    healthchecks:\n"
                   "      h: {type: tcp, port: 80, readiness: false, liveness: false}\n"),
            "t.yaml:6:10: services.web.healthchecks.h.readiness: a check that is neither for readiness nor for "
            "liveness does nothing: leave one of them true (the default is both), or remove the check\n");
  EXPECT_NE(Errors("project: p\nservices:\n  web:\n    image: x\n    healthchecks:\n"
                   "      h: {type: tcp, port: 80, readiness: maybe}\n")
                .find("services.web.healthchecks.h.readiness"),
            std::string::npos);
  EXPECT_NE(Errors("project: p\nservices:\n  web:\n    image: x\n    stop: {drain: soon}\n").find("services.web.stop.drain"),
            std::string::npos);
}

}  // namespace
}  // namespace mariposa
