#include "tests/hostile_corpus.h"

#include <random>

#include "absl/strings/str_cat.h"

namespace mariposa::testing {
namespace {

std::string Service(const std::string& name, const std::string& extra = "") {
  return absl::StrCat("  ", name, ":\n    image: img@1.0.0\n    count: 1\n", extra);
}

std::string Project(const std::string& body) { return absl::StrCat("project: hostile\n", body); }

// An alias bomb: `levels` levels of `fan` aliases each, under `key`.
std::string AliasBomb(const std::string& key, int levels, int fan) {
  std::string s = absl::StrCat(key, ":\n  a0: &a0 [", std::string("lol,lol,lol,lol,lol,lol,lol,lol,lol,lol"), "]\n");
  for (int i = 1; i <= levels; ++i) {
    absl::StrAppend(&s, "  a", i, ": &a", i, " [");
    for (int k = 0; k < fan; ++k) absl::StrAppend(&s, k ? "," : "", "*a", i - 1);
    absl::StrAppend(&s, "]\n");
  }
  return s;
}

}  // namespace

std::string ValidManifest(const std::string& project, int services) {
  std::string s = absl::StrCat("project: ", project, "\nservices:\n");
  for (int i = 0; i < services; ++i) absl::StrAppend(&s, Service(absl::StrCat("svc", i)));
  return s;
}

std::vector<HostileManifest> HostileManifests(uint32_t seed) {
  std::vector<HostileManifest> out;
  auto add = [&](std::string name, std::string text, std::string expect) {
    out.push_back(HostileManifest{std::move(name), std::move(text), std::move(expect)});
  };
  const std::string kRecursive = "recursive alias";
  const std::string kExpands = "expands to more than";
  const std::string kNested = "levels deep";

  // Recursive aliases, in every position a user can put one.
  add("recursive-meta", Project("meta: &m {x: *m}\nservices: {}\n"), kRecursive);
  add("recursive-seq", Project("volumes: &v [*v]\n"), kRecursive);
  add("recursive-deep", Project("meta: &m {a: {b: {c: [1, 2, *m]}}}\n"), kRecursive);
  add("recursive-service", Project("services:\n  web: &w\n    image: x\n    tags: *w\n"), kRecursive);
  add("recursive-root", "&r {project: x, services: *r}\n", kRecursive);
  add("recursive-key", Project("meta: &k {? *k : v}\n"), kRecursive);
  add("undefined-alias", Project("meta: {x: *nope}\n"), "names no anchor");
  // Alias bombs under every reserved and unreserved key, at several sizes.
  for (const char* key : {"volumes", "meta", "cns", "triggers", "autoscale"}) {
    for (int levels : {5, 6, 7, 9}) add(absl::StrCat("alias-bomb-", key, "-", levels), Project(AliasBomb(key, levels, 10)), kExpands);
  }
  add("alias-bomb-wide", Project(AliasBomb("volumes", 3, 200)), kExpands);
  add("alias-bomb-env", Project(absl::StrCat("services:\n  web:\n    image: x\n    environment: &e {A: b}\n",
                                             "  other:\n    image: x\n    environment: *e\n", AliasBomb("cns", 8, 10))),
      kExpands);
  // Deep nesting: flow lists and maps, block maps, mixed.
  for (int depth : {65, 100, 1000, 10000, 100000}) {
    add(absl::StrCat("deep-flow-list-", depth), Project(absl::StrCat("services: ", std::string(depth, '['), std::string(depth, ']'), "\n")), kNested);
    std::string maps;
    for (int i = 0; i < depth; ++i) maps += "{a: ";
    maps += "1";
    for (int i = 0; i < depth; ++i) maps += "}";
    add(absl::StrCat("deep-flow-map-", depth), Project("meta: " + maps + "\n"), kNested);
  }
  {
    std::string block = "project: hostile\nmeta:\n";
    for (int i = 0; i < 200; ++i) absl::StrAppend(&block, std::string(2 * (i + 1), ' '), "k", i, ":\n");
    add("deep-block-200", block, kNested);
  }
  add("deep-unclosed", Project(std::string(50000, '[')), "not valid YAML");
  add("deep-unclosed-value", Project("services: " + std::string(50000, '[')), kNested);
  // Many keys, services and errors.
  {
    std::string s = "project: hostile\nmeta:\n";
    for (int i = 0; i < 200000; ++i) absl::StrAppend(&s, "  k", i, ": v\n");
    add("meta-200000-keys", s, "expands to more than");
  }
  {
    std::string s = "project: hostile\nmeta:\n";
    for (int i = 0; i < 1001; ++i) absl::StrAppend(&s, "  k", i, ": v\n");
    add("meta-1001-keys", s, "meta defaults");
  }
  add("services-10000", ValidManifest("hostile", 10000), "at most 1000");
  add("services-1001", ValidManifest("hostile", 1001), "at most 1000");
  add("services-1000", ValidManifest("hostile", 1000), "");
  {
    std::string s = "project: hostile\nservices:\n  web:\n    image: x\n";
    for (int i = 0; i < 50000; ++i) absl::StrAppend(&s, "    bogus", i, ": 1\n");
    add("errors-50000", s, "first ");
  }
  {
    std::string s = "project: hostile\nservices:\n";
    for (int i = 0; i < 900; ++i) absl::StrAppend(&s, "  s", i, ":\n    image: x\n    count: -1\n    ports: [0]\n");
    add("errors-1800", s, "first ");
  }
  // Sizes.
  add("manifest-4.5MiB", Project("description: " + std::string(9 << 19, 'a') + "\n"), "over the limit of 4194304 bytes");
  add("request-6MiB", Project("description: " + std::string(6 << 20, 'a') + "\n"), "larger than max");
  add("value-200KiB", Project("description: " + std::string(200 << 10, 'a') + "\n"), "over the limit of 65536 bytes");
  add("meta-key-20000", Project("meta:\n  ? " + std::string(20000, 'k') + "\n  : v\n"), "must be 1-256 bytes");
  add("meta-key-20000-implicit", Project("meta:\n  " + std::string(20000, 'k') + ": v\n"), "not valid YAML");
  add("env-key-20000-explicit",
      Project("services:\n" + Service("web", "    environment:\n      ? " + std::string(20000, 'E') + "\n      : v\n")),
      "over the limit of 256 bytes");
  add("meta-key-257", Project("meta:\n  " + std::string(257, 'k') + ": v\n"), "must be 1-256 bytes");
  add("env-key-300", Project("services:\n" + Service("web", "    environment:\n      " + std::string(300, 'E') + ": v\n")),
      "over the limit of 256 bytes");
  add("tag-key-list-300", Project("services:\n" + Service("web", "    tags: [\"" + std::string(300, 't') + "=v\"]\n")),
      "over the limit of 256 bytes");
  // Control characters and encodings.
  add("nul-description", Project("description: \"a\\0b\"\n"), "a NUL byte");
  add("nul-meta", Project("meta:\n  k: \"v\\0\"\n"), "a NUL byte");
  add("nul-tag", Project("services:\n" + Service("web", "    tags:\n      k: \"x\\0y\"\n")), "a NUL byte");
  add("esc-description", Project("description: \"\\e[31mred\"\n"), "control character 0x1b");
  add("bell-env", Project("services:\n" + Service("web", "    environment:\n      A: \"\\a\"\n")), "control character 0x07");
  add("c1-description", Project("description: \"\\x85\"\n"), "C1 control");
  add("del-meta", Project("meta:\n  k: \"\\x7f\"\n"), "DEL");
  add("raw-nul", Project(std::string("description: a\0b\n", 17)), "not valid YAML");
  add("raw-control", Project("description: a\x01" "b\n"), "not valid YAML");
  add("invalid-utf8", Project("description: \xff\xfe\n"), "not valid YAML");
  add("invalid-utf8-key", Project("meta:\n  \xc0\xaf: v\n"), "not valid YAML");
  add("utf8-ok", Project("description: \"caf\xc3\xa9 \xe2\x9c\x93 tab\\there\"\nservices:\n" + Service("web")), "");
  add("crlf-ok", "project: hostile\r\nservices:\r\n  web:\r\n    image: x\r\n", "");
  // Numbers and durations.
  add("interval-int64", Project("services:\n" + Service("web", "    healthchecks:\n      h:\n        type: http\n        interval: 9223372036854775807s\n")),
      "longest duration");
  add("interval-bare-huge", Project("services:\n" + Service("web", "    restart:\n      window: 99999999999\n")),
      "longest duration");
  add("interval-overflow", Project("services:\n" + Service("web", "    stop:\n      timeout: 99999999999999999999999s\n")),
      "not a duration");
  add("count-huge", Project("services:\n  web:\n    image: x\n    count: 99999999999999999999\n"), "not a whole number");
  add("count-int64", Project("services:\n  web:\n    image: x\n    count: 9223372036854775807\n"), "out of range");
  add("count-negative", Project("services:\n  web:\n    image: x\n    count: -9223372036854775808\n"), "out of range");
  add("memory-huge", Project("services:\n" + Service("web", "    resources:\n      memory: 99999999999t\n")), "not a size");
  add("cpu-nan", Project("services:\n" + Service("web", "    resources:\n      cpu: nan\n")), "not a cpu count");
  add("port-huge", Project("services:\n" + Service("web", "    ports: [65536]\n")), "out of range");
  // Structure and syntax.
  add("empty", "", "a manifest must be a map");
  add("scalar-root", "hello\n", "a manifest must be a map");
  add("list-root", "- a\n- b\n", "a manifest must be a map");
  add("json-ok", "{\"project\": \"hostile\", \"services\": {\"web\": {\"image\": \"x\"}}}", "");
  add("two-documents", "project: hostile\nservices: {}\n---\nproject: other\n", "");
  add("tab-indent", "project: hostile\nservices:\n\tweb: {}\n", "not valid YAML");
  add("unterminated-quote", "project: \"hostile\n", "not valid YAML");
  add("duplicate-keys", "project: hostile\nproject: other\n", "duplicate key");
  add("tag-directives", "%YAML 1.1\n%TAG !x! tag:x,2000:\n---\nproject: !x!y hostile\n", "");
  add("complex-key", Project("meta: {[a, b]: c}\n"), "must be");
  // Random bytes, truncations and mutations of a valid manifest.
  std::mt19937 rng(seed);
  std::string valid = Project("description: d\nmeta:\n  a: b\nservices:\n" +
                              Service("web", "    ports: [80]\n    environment:\n      A: b\n") + Service("db"));
  for (int i = 0; i < 20; ++i) {
    std::string junk(std::uniform_int_distribution<int>(1, 4096)(rng), '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    add(absl::StrCat("random-bytes-", i), junk, "error");
  }
  for (int i = 0; i < 15; ++i) {
    size_t cut = std::uniform_int_distribution<size_t>(0, valid.size() - 1)(rng);
    add(absl::StrCat("truncated-", i), valid.substr(0, cut), "?");  // either outcome, but an answer
  }
  for (int i = 0; i < 15; ++i) {
    std::string m = valid;
    for (int k = 0; k < 3; ++k) m[std::uniform_int_distribution<size_t>(0, m.size() - 1)(rng)] = static_cast<char>(rng());
    add(absl::StrCat("flipped-", i), m, "?");
  }
  return out;
}

}  // namespace mariposa::testing
