#include "projects/manifest.h"

#include <functional>


#include "common/ids.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa {
namespace {

using ::mariposa::testing::ReadFile;

Manifest MustParse(const std::string& text, const std::string& project = "") {
  ParseOptions o;
  o.filename = "t.yaml";
  o.project_override = project;
  ParseResult r = ParseManifest(text, o);
  std::string errs;
  for (const auto& e : r.errors) errs += e.ToString() + "\n";
  EXPECT_TRUE(r.manifest.has_value()) << errs;
  return r.manifest.value_or(Manifest{});
}

// All errors of a bad manifest, one per line.
std::string Errors(const std::string& text) {
  ParseOptions o;
  o.filename = "t.yaml";
  ParseResult r = ParseManifest(text, o);
  EXPECT_FALSE(r.manifest.has_value());
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  return out;
}

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
       "t.yaml:2:1: service: unknown key \"service\"; expected one of: cns, deployment_groups, description, fabric, firewall, meta, networks, project, services, volumes\n"},
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

// cns: each form, what it names, and every refusal with its place.
TEST(ManifestCnsTest, FormsAndNames) {
  struct Case {
    std::string name, cns;
    std::vector<std::string> names;
  };
  const std::vector<Case> cases = {
      {"default", "", {"jupiter-web"}},
      {"true is the default", "cns: true", {"jupiter-web"}},
      {"false: none", "cns: false", {}},
      {"one name", "cns: www", {"www"}},
      {"a list, sorted", "cns: [www, api:8080]", {"api:8080", "www"}},
  };
  for (const Case& c : cases) {
    Manifest m = MustParse(absl::StrCat("project: jupiter\nservices:\n  web: {image: x", c.cns.empty() ? "" : ", ",
                                        c.cns, "}\n"));
    EXPECT_EQ(CnsNames(m.project, "web", m.services.at("web")), c.names) << c.name;
  }
}

TEST(ManifestCnsTest, RefusalsAreLocated) {
  struct Case {
    std::string name, text, error;
  };
  const std::vector<Case> cases = {
      {"upper case", "project: p\nservices:\n  web: {image: x, cns: WWW}\n",
       "t.yaml:3:24: services.web.cns: \"WWW\" is not a CNS service name: write a DNS label (a-z, 0-9 and '-', at "
       "most 63, not starting or ending with '-'), optionally NAME:PORT\n"},
      {"bad port", "project: p\nservices:\n  web: {image: x, cns: [www:0]}\n",
       "t.yaml:3:25: services.web.cns[0]: \"www:0\": the port after ':' must be 1 to 65535\n"},
      {"twice", "project: p\nservices:\n  web: {image: x, cns: [a, a]}\n",
       "t.yaml:3:28: services.web.cns[1]: CNS name \"a\" is listed twice\n"},
      {"empty list", "project: p\nservices:\n  web: {image: x, cns: []}\n",
       "t.yaml:3:24: services.web.cns: an empty list names nothing; write `cns: false` for no names\n"},
      {"a map", "project: p\nservices:\n  web: {image: x, cns: {a: b}}\n",
       "t.yaml:3:24: services.web.cns: must be false, a CNS service name or a list of them, not a map\n"},
      {"the tag by hand", "project: p\nservices:\n  web: {image: x, tags: {triton.cns.services: a}}\n",
       "t.yaml:3:8: services.web.tags.triton.cns.services: CNS service names are set with the service's cns: key "
       "(the tag is Mariposa's); move them there\n"},
      {"agent", "project: p\nservices:\n  a: {image: x, compute_type: agent, cns: x}\n",
       "t.yaml:3:6: services.a.cns: agents and core zones get no CNS names from Mariposa; remove cns:\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(Errors(c.text), c.error) << c.name;
}

// New names are set in place: not part of the instance's spec hash, but
// stored in the canonical form (diff, history).
TEST(ManifestCnsTest, NamesAreNotInTheInstanceHashButAreStored) {
  Manifest a = MustParse("project: p\nservices:\n  web: {image: x}\n");
  Manifest b = MustParse("project: p\nservices:\n  web: {image: x, cns: [www]}\n");
  Manifest off = MustParse("project: p\nservices:\n  web: {image: x, cns: false}\n");
  EXPECT_EQ(InstanceSpecHash(a.services.at("web")), InstanceSpecHash(b.services.at("web")));
  EXPECT_NE(CanonicalHash(a), CanonicalHash(b));
  EXPECT_NE(CanonicalHash(b), CanonicalHash(off));
  Manifest again = MustParse(CanonicalYaml(off));
  ASSERT_TRUE(again.services.at("web").cns.has_value());
  EXPECT_TRUE(again.services.at("web").cns->empty());
  EXPECT_EQ(CanonicalYaml(MustParse(CanonicalYaml(b))), CanonicalYaml(b));
}

TEST(ManifestCnsTest, TooLongADefaultIsWarnedAndNamesNothing) {
  std::string project(40, 'p'), service(30, 's');
  ParseOptions o;
  o.filename = "t.yaml";
  ParseResult r = ParseManifest(absl::StrCat("project: ", project, "\nservices:\n  ", service, ": {image: x}\n"), o);
  ASSERT_TRUE(r.manifest.has_value());
  ASSERT_EQ(r.manifest->warnings.size(), 1u);
  EXPECT_NE(r.manifest->warnings[0].message.find("longer than a DNS label"), std::string::npos);
  EXPECT_TRUE(CnsNames(project, service, r.manifest->services.at(service)).empty());
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

// The service's small parsers, one row per key: what a value becomes.
TEST(ManifestServiceKeysTest, EachKeyParsesToItsField) {
  struct Case {
    std::string name, keys;
    std::function<bool(const ServiceSpec&)> holds;
  };
  const std::vector<Case> cases = {
      {"compute_type lx", "compute_type: lx",
       [](const ServiceSpec& s) { return s.compute_type == "infrastructure" && s.brand == "lx"; }},
      {"resources", "resources: {memory: 512m, disk: 10g, cpu: 0.5}",
       [](const ServiceSpec& s) {
         return s.memory_bytes == int64_t{512} << 20 && s.disk_bytes == int64_t{10} << 30 && s.cpu == 0.5;
       }},
      {"ports sorted", "ports: [443, 80]", [](const ServiceSpec& s) { return s.ports == std::vector<int>{80, 443}; }},
      {"command list", "command: [run, --fast]", [](const ServiceSpec& s) { return s.command == "run --fast"; }},
      {"start", "start: {parallelism: 4, window: 5s}",
       [](const ServiceSpec& s) { return s.start_parallelism == 4 && s.start_window == absl::Seconds(5); }},
      {"restart condition, deduplicated and sorted", "restart: {condition: [on-failure, always, on-failure]}",
       [](const ServiceSpec& s) { return s.restart_condition == std::vector<std::string>{"always", "on-failure"}; }},
      {"stop", "stop: {timeout: 10s, preserve_stopped: always}",
       [](const ServiceSpec& s) { return s.stop_timeout == absl::Seconds(10) && s.preserve_stopped == "always"; }},
      {"update", "update: {rolling: 2, canary: 1, max_surge: 0, on_change: manual}",
       [](const ServiceSpec& s) {
         return s.update_rolling == 2 && s.update_canary == 1 && s.update_max_surge == 0 &&
                s.update_on_change == "manual";
       }},
      {"placement", "placement: [\"service!=~web\"]",
       [](const ServiceSpec& s) { return s.placement.size() == 1 && s.placement[0].soft && !s.placement[0].equal; }},
  };
  for (const Case& c : cases) {
    Manifest m = MustParse(absl::StrCat("project: p\nservices:\n  web: {image: x, ", c.keys, "}\n"));
    EXPECT_TRUE(c.holds(m.services.at("web"))) << c.name;
  }
}

// The rules that tie keys together, each with its located error.
TEST(ManifestServiceKeysTest, RulesAcrossKeys) {
  struct Case {
    std::string name, text, error;
  };
  const std::vector<Case> cases = {
      {"no image", "project: p\nservices:\n  web: {count: 1}\n",
       "t.yaml:3:8: services.web.image: missing: every service needs an image (name[@version], uuid or docker "
       "reference)\n"},
      {"package twice", "project: p\nservices:\n  web: {image: x, package: a, resources: {package: b}}\n",
       "t.yaml:3:52: services.web.resources.package: package is given twice (here and in package:); keep one\n"},
      {"reprovision without a delegate dataset", "project: p\nservices:\n  web: {image: x, update: {strategy: reprovision}}\n",
       "t.yaml:3:38: services.web.update.strategy: reprovision rewrites the instance's root; only a delegate dataset "
       "survives it. Add `delegate_dataset: true` to the service (and keep the data under /zones/<uuid>/data), or use "
       "strategy: replace\n"},
      {"core zone replaced", "project: p\nservices:\n  z: {image: x, compute_type: core, update: {strategy: replace}}\n",
       "t.yaml:3:56: services.z.update.strategy: core zones are updated in place (VMAPI reprovision, their delegate "
       "dataset kept), as sdcadm does; use strategy: reprovision or leave it out\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(Errors(c.text), c.error) << c.name;
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

const char kTwo[] = "project: p\nservices:\n  web: {image: x}\n  db: {image: x}\n";

// firewall: each form and what FWAPI gets.
TEST(ManifestFirewallTest, FormsBecomeFwruleText) {
  const std::string u = "11111111-2222-4333-8444-555555555555";
  const std::string web = "tag \"mariposa.firewall\" = \"" + u + "/web\"";
  const std::string db = "tag \"mariposa.firewall\" = \"" + u + "/db\"";
  struct Case {
    std::string name, rule, text, summary;
  };
  const std::vector<Case> cases = {
      {"one port", "{from: web, to: db, ports: 5432}", "FROM " + web + " TO " + db + " ALLOW tcp PORT 5432",
       "FROM web TO db ALLOW tcp PORT 5432"},
      {"several ports and a range", "{from: any, to: web, ports: [80, 443, 8000-8100]}",
       "FROM any TO " + web + " ALLOW tcp PORTS 80, 443, 8000 - 8100", "FROM any TO web ALLOW tcp PORTS 80, 443, 8000 - 8100"},
      {"all ports by default", "{from: web, to: db}", "FROM " + web + " TO " + db + " ALLOW tcp ALL PORTS",
       "FROM web TO db ALLOW tcp ALL PORTS"},
      {"ports: all", "{from: web, to: db, ports: all, protocol: udp}",
       "FROM " + web + " TO " + db + " ALLOW udp ALL PORTS", "FROM web TO db ALLOW udp ALL PORTS"},
      {"addresses, a list, block", "{from: [ip 10.0.0.1, subnet 192.168.0.0/16], to: web, action: block}",
       "FROM (ip 10.0.0.1 OR subnet 192.168.0.0/16) TO " + web + " BLOCK tcp ALL PORTS",
       "FROM (ip 10.0.0.1 OR subnet 192.168.0.0/16) TO web BLOCK tcp ALL PORTS"},
      {"icmp types", "{from: any, to: web, protocol: icmp, ports: [8, 0]}",
       "FROM any TO " + web + " ALLOW icmp (TYPE 8 AND TYPE 0)", "FROM any TO web ALLOW icmp (TYPE 8 AND TYPE 0)"},
      {"icmp, all types", "{from: any, to: web, protocol: icmp}", "FROM any TO " + web + " ALLOW icmp TYPE all",
       "FROM any TO web ALLOW icmp TYPE all"},
      {"a priority", "{from: any, to: web, ports: 80, action: block, priority: 10}",
       "FROM any TO " + web + " BLOCK tcp PORT 80 PRIORITY 10", "FROM any TO web BLOCK tcp PORT 80 PRIORITY 10"},
  };
  for (const Case& c : cases) {
    Manifest m = MustParse(absl::StrCat(kTwo, "firewall:\n  r: ", c.rule, "\n"));
    ASSERT_EQ(m.firewall.size(), 1u) << c.name;
    const FirewallRuleSpec& r = m.firewall.at("r");
    EXPECT_EQ(FirewallRuleText(u, r), c.text) << c.name;
    EXPECT_EQ(FirewallRuleSummary(r), c.summary) << c.name;
    // The canonical form keeps the rule as written.
    Manifest again = MustParse(CanonicalYaml(m));
    EXPECT_EQ(FirewallRuleText(u, again.firewall.at("r")), c.text) << c.name << "\n" << CanonicalYaml(m);
  }
}

TEST(ManifestFirewallTest, RefusalsAreLocated) {
  struct Case {
    std::string name, rule, error;
  };
  const std::vector<Case> cases = {
      {"no to", "{from: web}", "t.yaml:6:6: firewall.r: a rule needs both from: and to: (to is missing); each is a "
                               "service of this project, any, ip ADDRESS or subnet CIDR, or a list of them\n"},
      {"unknown service", "{from: wbe, to: db}",
       "t.yaml:6:13: firewall.r.from: \"wbe\" is not a service of this manifest, nor any, ip ADDRESS or subnet CIDR\n"},
      {"no service of ours", "{from: any, to: ip 10.0.0.1}",
       "t.yaml:6:13: firewall.r: the rule names none of this project's services: it would reach every instance of the "
       "account; name a service in from: or to:\n"},
      {"bad address", "{from: ip 10.0.0.300, to: db}",
       "t.yaml:6:13: firewall.r.from: \"10.0.0.300\" is not an IPv4 or IPv6 address\n"},
      {"bad subnet", "{from: subnet 10.0.0.0/33, to: db}",
       "t.yaml:6:13: firewall.r.from: \"10.0.0.0/33\" is not a subnet (ADDRESS/BITS, e.g. 10.0.0.0/8)\n"},
      {"bad port", "{from: web, to: db, ports: [80, 70000]}",
       "t.yaml:6:33: firewall.r.ports[1]: \"70000\" is not a port (1..65535) or a range FIRST-LAST\n"},
      {"backwards range", "{from: web, to: db, ports: 90-80}",
       "t.yaml:6:33: firewall.r.ports[0]: the range \"90-80\" ends before it starts\n"},
      {"bad icmp type", "{from: web, to: db, protocol: icmp, ports: 300}",
       "t.yaml:6:49: firewall.r.ports[0]: \"300\" is not an ICMP type (0..255)\n"},
      {"bad protocol", "{from: web, to: db, protocol: sctp}",
       "t.yaml:6:36: firewall.r.protocol: \"sctp\" is not one of: tcp, udp, icmp, icmp6\n"},
      {"bad action", "{from: web, to: db, action: deny}",
       "t.yaml:6:34: firewall.r.action: \"deny\" is not one of: allow, block\n"},
      {"twice", "{from: [web, web], to: db}", "t.yaml:6:19: firewall.r.from[1]: \"web\" is listed twice\n"},
      {"unknown key", "{from: web, to: db, port: 80}",
       "t.yaml:6:26: firewall.r.port: unknown key \"port\"; expected one of: action, description, enabled, from, "
       "log, ports, priority, protocol, to\n"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Errors(absl::StrCat(kTwo, "firewall:\n  r: ", c.rule, "\n")), c.error) << c.name;
  }
  EXPECT_EQ(Errors("project: p\nservices:\n  a: {image: x, compute_type: agent}\n  db: {image: x}\nfirewall:\n"
                   "  r: {from: a, to: db}\n"),
            "t.yaml:6:13: firewall.r.from: service \"a\" is an agent: firewall rules name the project's own "
            "instances only\n");
  EXPECT_EQ(Errors(absl::StrCat(kTwo, "firewall:\n  Bad_Name: {from: web, to: db}\n")),
            "t.yaml:6:3: firewall.Bad_Name: rule name \"Bad_Name\" is not a DNS label\n");
}

// Which instances carry the tag and which turn their firewall on: an
// ALLOW rule's TO side, a BLOCK rule's FROM side; a disabled rule turns
// nothing on.
// log: FWAPI's field, not the rule text; it changes the rule in place (its
// hash), and a rule without it keeps the hash it had before log existed.
TEST(ManifestFirewallTest, LogIsTheRulesFieldAndChangesItInPlace) {
  Manifest m = MustParse(absl::StrCat(kTwo, "firewall:\n  r: {from: web, to: db, ports: 5432, log: true}\n"));
  const FirewallRuleSpec& r = m.firewall.at("r");
  EXPECT_TRUE(r.log);
  EXPECT_EQ(FirewallRuleSummary(r), "FROM web TO db ALLOW tcp PORT 5432");
  Manifest again = MustParse(CanonicalYaml(m));
  EXPECT_TRUE(again.firewall.at("r").log);
  FirewallRuleSpec quiet = r;
  quiet.log = false;
  EXPECT_NE(FirewallRuleHash("x", r), FirewallRuleHash("x", quiet));
  FirewallRuleSpec plain;
  EXPECT_EQ(FirewallRuleHash("x", plain),
            Sha256Hex(std::string("x\nenabled\n")).substr(0, 12)) << "rules made before log keep their hash";
  EXPECT_EQ(Errors(absl::StrCat(kTwo, "firewall:\n  r: {from: web, to: db, priority: 101}\n")),
            "t.yaml:6:36: firewall.r.priority: 101 is out of range 0..100\n");
}

TEST(ManifestFirewallTest, NeedsOfTheRules) {
  Manifest m = MustParse(absl::StrCat("project: p\nservices:\n  web: {image: x}\n  db: {image: x}\n  cache: {image: x}\n"
                                      "  smtp: {image: x}\n  off: {image: x}\n",
                                      "firewall:\n  a: {from: web, to: db}\n  b: {from: smtp, to: any, action: block}\n"
                                      "  c: {from: any, to: off, enabled: false}\n"));
  FirewallNeeds n = FirewallNeedsOf(m.firewall);
  EXPECT_EQ(n.tagged, (std::set<std::string>{"db", "off", "smtp", "web"}));
  EXPECT_EQ(n.enabled, (std::set<std::string>{"db", "smtp"}));
}

// The project's rules are known by their uuid and their description's
// marker; a hand-made rule or another project's is not.
TEST(ManifestFirewallTest, OwnershipMarkerAndUuid) {
  const std::string u = "11111111-2222-4333-8444-555555555555";
  const std::string other = "66666666-2222-4333-8444-555555555555";
  FirewallRuleSpec r;
  r.from = {{FirewallEndpoint::Kind::kAny, ""}};
  r.to = {{FirewallEndpoint::Kind::kService, "web"}};
  r.description = "public: web";
  std::string text = FirewallRuleText(u, r);
  std::string d = FirewallDescription(u, "web-in", text, r);
  auto m = ParseFirewallDescription(u, d);
  ASSERT_TRUE(m.has_value()) << d;
  EXPECT_EQ(m->name, "web-in");
  EXPECT_EQ(m->hash, FirewallRuleHash(text, r));
  EXPECT_FALSE(ParseFirewallDescription(other, d).has_value());
  EXPECT_FALSE(ParseFirewallDescription(u, "by hand").has_value());
  EXPECT_FALSE(ParseFirewallDescription(u, "mariposa " + u + " rule web-in xyz").has_value());
  // Stable, distinct, a uuid.
  EXPECT_EQ(FirewallRuleUuid(u, "web-in"), FirewallRuleUuid(u, "web-in"));
  EXPECT_NE(FirewallRuleUuid(u, "web-in"), FirewallRuleUuid(other, "web-in"));
  EXPECT_NE(FirewallRuleUuid(u, "web-in"), FirewallRuleUuid(u, "web-out"));
  EXPECT_TRUE(IsUuid(FirewallRuleUuid(u, "web-in"))) << FirewallRuleUuid(u, "web-in");
  // Any change to what FWAPI holds changes the hash.
  FirewallRuleSpec off = r;
  off.enabled = false;
  EXPECT_NE(FirewallRuleHash(text, r), FirewallRuleHash(text, off));
  FirewallRuleSpec said = r;
  said.description = "other";
  EXPECT_NE(FirewallRuleHash(text, r), FirewallRuleHash(text, said));
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

const char kFabricBase[] = "project: p\nservices:\n  db: {image: x, networks: [private, external]}\n";

TEST(ManifestFabricTest, FormsAndTheirDefaults) {
  Manifest m = MustParse(absl::StrCat(kFabricBase, "fabric:\n  vlan: 44\n  networks:\n"
                                                   "    private: {subnet: 10.0.1.0/24, gateway: 10.0.1.1, resolvers: [8.8.8.8],"
                                                   " routes: {10.2.0.0/16: 10.0.1.254}, internet_nat: false}\n"
                                                   "    back: {subnet: 10.0.2.0/24, provision_start: 10.0.2.10, "
                                                   "provision_end: 10.0.2.20}\n"));
  ASSERT_TRUE(m.fabric.has_value());
  EXPECT_EQ(m.fabric->vlan, 44);
  const FabricNetworkSpec& p = m.fabric->networks.at("private");
  EXPECT_EQ(ProvisionRange(p), (std::pair<std::string, std::string>{"10.0.1.2", "10.0.1.254"})) << "after the gateway";
  EXPECT_FALSE(p.internet_nat);
  EXPECT_EQ(p.routes.at("10.2.0.0/16"), "10.0.1.254");
  EXPECT_EQ(ProvisionRange(m.fabric->networks.at("back")),
            (std::pair<std::string, std::string>{"10.0.2.10", "10.0.2.20"}));
  EXPECT_EQ(FabricNetworkName("p", "private"), "p-private");
  // The canonical form keeps it; only resolvers, routes and description
  // change in place.
  Manifest again = MustParse(CanonicalYaml(m));
  ASSERT_TRUE(again.fabric.has_value());
  EXPECT_EQ(FabricFixed(again.fabric->networks.at("private")), FabricFixed(p));
  EXPECT_EQ(FabricMutableHash(again.fabric->networks.at("private")), FabricMutableHash(p));
  FabricNetworkSpec moved = p;
  moved.resolvers = {"1.1.1.1"};
  EXPECT_EQ(FabricFixed(moved), FabricFixed(p));
  EXPECT_NE(FabricMutableHash(moved), FabricMutableHash(p));
  moved.subnet = "10.0.9.0/24";
  EXPECT_NE(FabricFixed(moved), FabricFixed(p));
  // The networks NAPI must have already: not the fabric's.
  auto marker = ParseOwnedMarker("u", "network", FabricNetworkDescription("u", "private", p));
  ASSERT_TRUE(marker.has_value());
  EXPECT_EQ(marker->name, "private");
  EXPECT_FALSE(ParseOwnedMarker("u", "rule", FabricNetworkDescription("u", "private", p)).has_value());
}

TEST(ManifestFabricTest, RefusalsAreLocated) {
  struct Case {
    std::string name, fabric, error;
  };
  const std::vector<Case> cases = {
      {"no vlan", "  networks: {a: {subnet: 10.0.1.0/24}}\n",
       "t.yaml:5:3: fabric: vlan: is required: the account's VLAN id (2..4094) the networks go on\n"},
      {"vlan out of range", "  vlan: 1\n  networks: {a: {subnet: 10.0.1.0/24}}\n",
       "t.yaml:5:9: fabric.vlan: 1 is out of range 2..4094\n"},
      {"no networks", "  vlan: 44\n", "t.yaml:5:3: fabric: networks: names none; a fabric holds at least one network\n"},
      {"no subnet", "  vlan: 44\n  networks: {a: {gateway: 10.0.1.1}}\n",
       "t.yaml:6:17: fabric.networks.a: subnet: is required (e.g. subnet: 10.0.1.0/24)\n"},
      {"bad subnet", "  vlan: 44\n  networks: {a: {subnet: 10.0.1.7/24}}\n",
       "t.yaml:6:17: fabric.networks.a.subnet: \"10.0.1.7/24\" is not an IPv4 subnet ADDRESS/BITS with 8 to 30 bits, the "
       "address on its boundary (e.g. 10.0.1.0/24)\n"},
      {"gateway outside", "  vlan: 44\n  networks: {a: {subnet: 10.0.1.0/24, gateway: 10.0.2.1}}\n",
       "t.yaml:6:17: fabric.networks.a.gateway: \"10.0.2.1\" is not a host of 10.0.1.0/24\n"},
      {"range backwards",
       "  vlan: 44\n  networks: {a: {subnet: 10.0.1.0/24, provision_start: 10.0.1.9, provision_end: 10.0.1.3}}\n",
       "t.yaml:6:17: fabric.networks.a.provision_end: 10.0.1.3 comes before provision_start 10.0.1.9\n"},
      {"bad resolver", "  vlan: 44\n  networks: {a: {subnet: 10.0.1.0/24, resolvers: [dns]}}\n",
       "t.yaml:6:17: fabric.networks.a.resolvers: \"dns\" is not an IPv4 address\n"},
      {"overlap", "  vlan: 44\n  networks: {a: {subnet: 10.0.0.0/16}, b: {subnet: 10.0.1.0/24}}\n",
       "t.yaml:5:3: fabric.networks.b.subnet: 10.0.1.0/24 overlaps network a's 10.0.0.0/16: the networks of one VLAN "
       "need subnets of their own\n"},
      {"unknown key", "  vlan: 44\n  networks: {a: {subnet: 10.0.1.0/24, mtu: 9000}}\n",
       "t.yaml:6:39: fabric.networks.a.mtu: unknown key \"mtu\"; expected one of: description, gateway, internet_nat, "
       "provision_end, provision_start, resolvers, routes, subnet\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(Errors(absl::StrCat(kFabricBase, "fabric:\n", c.fabric)), c.error) << c.name;
}

TEST(ManifestRunsTest, ScheduledAndEventServices) {
  Manifest m = MustParse(R"(project: p
services:
  report:
    service_type: scheduled
    schedule: {cron: "0 3 * * MON-FRI", time_zone: Europe/Berlin}
    image: x
    count: 2
    run: {concurrency: replace, starting_deadline: 5m, deadline: 1h, history: {succeeded: 2, failed: 3}}
  migrate:
    service_type: event
    image: x
  nightly:
    service_type: scheduled
    schedule: "@daily"
    image: x
)");
  const ServiceSpec& r = m.services.at("report");
  EXPECT_TRUE(RunsToCompletion(r));
  EXPECT_EQ(r.schedule, "0 3 * * MON-FRI");
  EXPECT_EQ(r.time_zone, "Europe/Berlin");
  EXPECT_EQ(r.run_concurrency, "replace");
  EXPECT_EQ(r.run_starting_deadline, absl::Minutes(5));
  EXPECT_EQ(r.run_deadline, absl::Hours(1));
  EXPECT_EQ(r.run_keep_succeeded, 2);
  EXPECT_EQ(r.run_keep_failed, 3);
  const ServiceSpec& e = m.services.at("migrate");
  EXPECT_EQ(e.run_concurrency, "forbid") << "Kubernetes' default is allow; a migration run twice at once is worse";
  EXPECT_EQ(e.run_keep_succeeded, 0);
  EXPECT_EQ(e.run_keep_failed, 1);
  EXPECT_EQ(m.services.at("nightly").time_zone, "UTC");
  // The canonical form reads back to the same manifest; the run settings are
  // not the instances' spec (a new schedule replaces nothing).
  Manifest again = MustParse(CanonicalYaml(m));
  EXPECT_EQ(CanonicalHash(again), CanonicalHash(m));
  Manifest later = m;
  later.services.at("report").schedule = "0 4 * * *";
  EXPECT_EQ(InstanceSpecHash(later.services.at("report")), InstanceSpecHash(r));
  EXPECT_NE(CanonicalHash(later), CanonicalHash(m));
}

TEST(ManifestRunsTest, RefusalsAreLocated) {
  struct Case {
    std::string name, service, error;
  };
  const std::vector<Case> cases = {
      {"bad cron", "service_type: scheduled, schedule: \"61 * * * *\"",
       "t.yaml:3:52: services.j.schedule: minute: \"61\" is not a value, range or step of 0-59\n"},
      {"bad zone", "service_type: scheduled, schedule: {cron: \"@daily\", time_zone: Mars/Olympus}",
       "t.yaml:3:80: services.j.schedule.time_zone: \"Mars/Olympus\" is not a time zone of the tz database (e.g. UTC, "
       "Europe/Berlin, America/New_York)\n"},
      {"event with a schedule", "service_type: event, schedule: \"@daily\"",
       "t.yaml:3:48: services.j.schedule: an event service runs on `mariposa run`, not on a schedule; use "
       "service_type: scheduled, or remove schedule:\n"},
      {"continuous with a schedule", "schedule: \"@daily\"",
       "t.yaml:3:27: services.j.schedule: schedule: is for service_type scheduled or event; this service is "
       "continuous\n"},
      {"continuous with run", "run: {deadline: 1h}",
       "t.yaml:3:22: services.j.run: run: is for service_type scheduled or event; this service is continuous\n"},
      {"health checks", "service_type: event, healthchecks: {h: {type: tcp, port: 1}}",
       "t.yaml:3:52: services.j.healthchecks: a run's instances end by design: health checks are for continuous "
       "services; remove healthchecks:\n"},
      {"restart", "service_type: event, restart: {condition: always}",
       "t.yaml:3:47: services.j.restart: a run's instances are not restarted: a run ends when they do (run.deadline "
       "stops a run that hangs); remove restart:\n"},
      {"bad concurrency", "service_type: event, run: {concurrency: queue}",
       "t.yaml:3:57: services.j.run.concurrency: \"queue\" is not one of: forbid, replace, allow\n"},
      {"an agent", "service_type: event, compute_type: agent",
       "t.yaml:3:31: services.j.service_type: agents and core zones run continuously; event is for the project's own "
       "jobs\n"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Errors(absl::StrCat("project: p\nservices:\n  j: {image: x, ", c.service, "}\n")), c.error) << c.name;
  }
}

TEST(ManifestCnsTest, TheProjectsCnsKey) {
  const std::string services = "services:\n  web: {image: x}\n  db: {image: x, cns: [mysql]}\n  a: {image: x, compute_type: agent}\n";
  Manifest off = MustParse("project: shop\ncns: false\n" + services);
  EXPECT_EQ(CnsNames("shop", "web", off.services.at("web")), std::vector<std::string>{}) << "no default names";
  EXPECT_EQ(CnsNames("shop", "db", off.services.at("db")), std::vector<std::string>{"mysql"}) << "a service's own win";
  EXPECT_EQ(CnsNames("shop", "a", off.services.at("a")), std::vector<std::string>{});
  Manifest renamed = MustParse("project: shop\ncns: store\n" + services);
  EXPECT_EQ(CnsNames("shop", "web", renamed.services.at("web")), std::vector<std::string>{"store-web"});
  EXPECT_EQ(CnsNames("shop", "db", renamed.services.at("db")), std::vector<std::string>{"mysql"});
  Manifest plain = MustParse("project: shop\n" + services);
  EXPECT_EQ(CnsNames("shop", "web", plain.services.at("web")), std::vector<std::string>{"shop-web"});
  // Kept by the canonical form, and a change shows.
  Manifest again = MustParse(CanonicalYaml(renamed));
  EXPECT_EQ(CanonicalHash(again), CanonicalHash(renamed));
  EXPECT_NE(CanonicalHash(renamed), CanonicalHash(plain));
  EXPECT_EQ(Errors("project: shop\ncns: Store_1\n" + services),
            "t.yaml:2:6: cns: \"Store_1\" is not a DNS label (lower-case letters, digits and '-', at most 63)\n");
  EXPECT_EQ(Errors("project: shop\ncns: {zone: x}\n" + services),
            "t.yaml:2:6: cns: must be false or a name (the default CNS names become NAME-SERVICE), not a map\n");
}

}  // namespace
}  // namespace mariposa
