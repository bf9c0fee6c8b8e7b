#include "projects/compose.h"

#include <dirent.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "projects/manifest.h"

namespace mariposa {
namespace {

ComposeImport Import(const std::string& text, int vlan = 0, std::map<std::string, std::string> env_files = {}) {
  ComposeOptions o;
  o.project = "app";
  o.vlan = vlan;
  o.env_files = std::move(env_files);
  auto r = ImportCompose(text, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ComposeImport{};
}

Manifest Parsed(const ComposeImport& imported) {
  ParseResult r = ParseManifest(imported.manifest, ParseOptions{});
  EXPECT_TRUE(r.manifest.has_value()) << imported.manifest << (r.errors.empty() ? "" : r.errors[0].ToString());
  return r.manifest.value_or(Manifest{});
}

std::string Notes(const ComposeImport& imported) {
  std::vector<std::string> out;
  for (const ComposeNote& n : imported.notes) out.push_back(absl::StrCat(n.line, " ", n.path, ": ", n.why));
  return absl::StrJoin(out, "\n");
}

TEST(ComposeTest, WhatAServiceSaysBecomesItsManifest) {
  const char* text = R"(services:
  web_front:
    image: docker.io/library/nginx:1.25
    command: ["nginx", "-g", "daemon off;"]
    environment:
      - MODE=prod
      - DB=${DB_HOST:-db.internal}
    env_file: web.env
    ports: ["8080:80", "443", {target: 9000, published: 9000}]
    labels: {tier: front}
    deploy:
      replicas: 3
      resources: {limits: {memory: 1.5G, cpus: "0.5"}}
      restart_policy: {condition: on-failure, max_attempts: 4, delay: 5s}
    healthcheck:
      test: ["CMD", "curl", "-f", "http://localhost:80/health"]
      interval: 15s
      timeout: 3s
      retries: 2
      start_period: 20s
    stop_grace_period: 1m
    volumes: ["static:/usr/share/nginx/html:ro"]
volumes:
  static:
)";
  ComposeImport imported = Import(text, 0, {{"web.env", "# a comment\nexport FROM_FILE=1\nMODE=dev\nQUOTED=\"a b\"\n"}});
  EXPECT_EQ(imported.services, 1);
  Manifest m = Parsed(imported);
  ASSERT_EQ(m.services.count("web-front"), 1u) << imported.manifest;
  const ServiceSpec& s = m.services.at("web-front");
  EXPECT_EQ(s.image, "nginx@1.25");
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.tags.at("tier"), "front");
  EXPECT_EQ(s.environment.at("MODE"), "prod") << "environment wins over env_file";
  EXPECT_EQ(s.environment.at("FROM_FILE"), "1");
  EXPECT_EQ(s.environment.at("QUOTED"), "a b");
  EXPECT_EQ(s.environment.at("DB"), "{{ .meta.DB_HOST }}");
  EXPECT_EQ(m.meta.at("DB_HOST"), "db.internal");
  EXPECT_EQ(s.ports, (std::vector<int>{80, 443, 9000}));
  EXPECT_EQ(s.healthchecks.at("http").port, 80);
  EXPECT_EQ(s.healthchecks.at("http").path, "/health");
  EXPECT_EQ(s.healthchecks.at("http").interval, absl::Seconds(15));
  EXPECT_EQ(s.healthchecks.at("http").retries, 2);
  EXPECT_EQ(s.start_window, absl::Seconds(20));
  EXPECT_EQ(s.stop_timeout, absl::Minutes(1));
  EXPECT_NE(imported.manifest.find("memory: 1536m"), std::string::npos) << imported.manifest;
  EXPECT_NE(imported.manifest.find("max_attempts: 4"), std::string::npos) << imported.manifest;
  EXPECT_NE(imported.manifest.find("static:/usr/share/nginx/html:ro"), std::string::npos) << imported.manifest;
  // What was not kept is listed, with its line.
  std::string notes = Notes(imported);
  EXPECT_NE(notes.find("2 services.web_front: named web-front"), std::string::npos) << notes;
  EXPECT_NE(notes.find("published port 8080 is not kept"), std::string::npos) << notes;
  EXPECT_NE(notes.find("delay: not translated"), std::string::npos) << notes;
  EXPECT_NE(notes.find("${DB_HOST} is {{ .meta.DB_HOST }}, db.internal by default"), std::string::npos) << notes;
  EXPECT_NE(notes.find("words are joined"), std::string::npos) << notes;
}

TEST(ComposeTest, WhatCannotBeTranslatedIsListedWithItsLineAndWhy) {
  struct Row {
    const char* name;
    std::string service;  // under services.s:
    const char* says;
    int line;
  };
  const std::vector<Row> rows = {
      {"build", "    image: a\n    build: .\n", "Mariposa runs images", 4},
      {"no image", "    build: .\n", "no image: left out", 2},
      {"bind mount", "    image: a\n    volumes: [\"./data:/data\"]\n", "a bind mount of the host's files", 4},
      {"anonymous volume", "    image: a\n    volumes: [\"/data\"]\n", "an anonymous volume", 4},
      {"depends_on", "    image: a\n    depends_on: [b]\n", "services start independently", 4},
      {"container_name", "    image: a\n    container_name: x\n", "instances are named PROJECT-SERVICE-N", 4},
      {"exec healthcheck", "    image: a\n    healthcheck: {test: [CMD, pg_isready]}\n",
       "runs a command inside the container", 4},
      {"network_mode", "    image: a\n    network_mode: host\n", "has no such key", 4},
      {"a port range", "    image: a\n    ports: [\"8000-8010:8000-8010\"]\n", "is not one port", 4},
      {"udp", "    image: a\n    ports: [\"53:53/udp\"]\n", "udp", 4},
      {"a network without --vlan", "    image: a\n    networks: [back]\n", "not a translated network", 4},
      {"a variable without a value", "    image: a\n    environment: [HOME]\n", "no value (Compose takes the host's)", 4},
      {"a missing env_file", "    image: a\n    env_file: .env\n", ".env could not be read", 4},
      // Left empty, with comments and no last newline after it: the key's
      // line, not where libyaml put the empty value (past the file's end).
      {"an empty unknown key", "    image: a\n    ? - x\n      - y\n    # note\n    # more", "has no such key", 4},
      {"an empty container_name", "    image: a\n    container_name:\n    # note\n    # more",
       "instances are named PROJECT-SERVICE-N", 4},
  };
  for (const Row& r : rows) {
    ComposeImport imported = Import("services:\n  s:\n" + r.service);
    bool found = false;
    for (const ComposeNote& n : imported.notes) found = found || (absl::StrContains(n.why, r.says) && n.line == r.line);
    EXPECT_TRUE(found) << r.name << ":\n" << Notes(imported);
  }
  ComposeImport top = Import("version: '3'\nservices:\n  s: {image: a}\nsecrets:\n  x: {file: x}\nx-common: &c {}\n");
  std::string notes = Notes(top);
  EXPECT_NE(notes.find("1 version: obsolete"), std::string::npos) << notes;
  EXPECT_NE(notes.find("4 secrets: not translated: keep secrets with `mariposa meta set --secret"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("6 x-common: an extension field"), std::string::npos) << notes;
}

TEST(ComposeTest, NetworksBecomeAFabricWithAVlan) {
  const char* text = R"(services:
  a: {image: a, networks: [back, default]}
  b: {image: b, networks: {back: {ipv4_address: 10.5.0.9}}}
networks:
  back:
    ipam: {config: [{subnet: 10.5.0.0/24}]}
)";
  ComposeImport without = Import(text);
  EXPECT_NE(Notes(without).find("give --vlan N"), std::string::npos) << Notes(without);
  ComposeImport with = Import(text, 44);
  Manifest m = Parsed(with);
  EXPECT_NE(with.manifest.find("vlan: 44"), std::string::npos) << with.manifest;
  EXPECT_NE(with.manifest.find("subnet: 10.5.0.0/24"), std::string::npos) << with.manifest;
  EXPECT_EQ(m.services.at("a").networks, (std::vector<std::string>{"back"}));
  EXPECT_NE(Notes(with).find("a fixed address, aliases"), std::string::npos) << Notes(with);
}

TEST(ComposeTest, NotComposeIsRefused) {
  ComposeOptions o;
  o.project = "app";
  EXPECT_FALSE(ImportCompose("a: [", o).ok());
  EXPECT_FALSE(ImportCompose("- a\n", o).ok());
  EXPECT_FALSE(ImportCompose("services: [a]\n", o).ok());
  o.project = "";
  auto r = ImportCompose("services:\n  s: {image: a}\n", o);
  EXPECT_FALSE(r.ok());
  r = ImportCompose("name: shop\nservices:\n  s: {image: a}\n", o);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->manifest.find("project: shop"), std::string::npos);
}

// Each fixture (docker/awesome-compose) gives a manifest Mariposa takes, and
// lists what it could not translate.
TEST(ComposeTest, RealComposeFilesGiveManifestsMariposaTakes) {
  const std::string dir = "tests/testdata/compose";
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr);
  int files = 0;
  std::map<std::string, ComposeImport> all;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (!absl::EndsWith(name, ".yaml")) continue;
    std::ifstream in(dir + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    ComposeOptions o;
    o.project = "fixture";
    o.vlan = 10;
    auto r = ImportCompose(text.str(), o);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status();
    for (const ComposeNote& n : r->notes) {
      EXPECT_FALSE(absl::StrContains(n.why, "the manifest written is refused")) << name << ": " << n.why << "\n"
                                                                                 << r->manifest;
    }
    ParseResult parsed = ParseManifest(r->manifest, ParseOptions{});
    EXPECT_TRUE(parsed.manifest.has_value()) << name << ":\n" << r->manifest;
    all[name] = *r;
    ++files;
  }
  closedir(d);
  EXPECT_GE(files, 12);
  const ComposeImport& wp = all["wordpress-mysql.yaml"];
  EXPECT_EQ(wp.services, 2);
  EXPECT_NE(wp.manifest.find("image: wordpress\n"), std::string::npos) << wp.manifest;
  EXPECT_NE(wp.manifest.find("image: \"mariadb@10.6.4-focal\""), std::string::npos) << wp.manifest;
  EXPECT_NE(wp.manifest.find("db-data:/var/lib/mysql"), std::string::npos) << wp.manifest;
  EXPECT_NE(Notes(wp).find("\"db\" names the Compose service db: on Triton it is reached by its CNS name fixture-db"),
            std::string::npos)
      << Notes(wp);
  const ComposeImport& go = all["nginx-golang-postgres.yaml"];
  EXPECT_EQ(go.services, 2) << "backend has only a build:";
  EXPECT_NE(Notes(go).find("services.backend: no image: left out"), std::string::npos) << Notes(go);
  const ComposeImport& es = all["elasticsearch-logstash-kibana.yaml"];
  EXPECT_NE(es.manifest.find("path: /_cluster/health"), std::string::npos) << es.manifest;
}

}  // namespace
}  // namespace mariposa
