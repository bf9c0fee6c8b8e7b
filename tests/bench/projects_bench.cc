// PERFORMANCE.md P3 and P4, each against a baseline measured in the same run.
//   P3: Apply of a 1,000-service manifest through gRPC (parse, validate,
//       diff, one SQLite transaction with WAL+FULL) vs a raw SQLite bulk
//       insert of the same rows with the same durability settings.
//   P4: no-op Apply latency vs the Admin.Ping echo on the same server.
// With --postgres (issue 33) the same on a store in PostgreSQL (a throwaway
// server, tests/pg_server.h): P3pg against raw libpq inserts of the same rows
// in one transaction at the same durability (synchronous_commit on, fsync
// on), P4pg against the echo plus one database round trip (SELECT 1).
// `--services=N` (P3's manifest) and `--projects=N` (the projects the store
// holds during P4) vary the sizes for scripts/bench.py --growth, which reads
// the GROWTH_ lines they add.
// Prints one line per figure: name value unit baseline ratio.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <libfyaml.h>
#include <yaml.h>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/sql.h"
#include "daemon/admin_service.h"
#include "projects/diff.h"
#include "projects/manifest.h"
#include "projects/projects_service.h"
#include "projects/sql_store.h"
#include "projects/yaml_document.h"
#include "tests/pg_server.h"

namespace mariposa {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

std::string BigManifest(const std::string &project, int services, int round) {
  std::string m = absl::StrCat("project: ", project, "\nservices:\n");
  for (int i = 0; i < services; ++i) {
    absl::StrAppend(&m, "  svc-", i, ":\n    image: app-", i, "@1.", round,
                    "\n    package: g4-highcpu-1G\n    count: ", 1 + i % 5,
                    "\n    ports: [80, 443]\n    tags: {role: web, tier: t",
                    i % 3, "}\n    environment: {MODE: prod, SHARD: \"", i,
                    "\"}\n");
  }
  return m;
}

// Raw baseline: exactly the rows an apply of `manifest` writes (the version
// row with its verbatim and canonical text, one row per service), prepared
// beforehand and inserted in one transaction with the same durability.
// -1 when any step failed: the baseline then measured nothing.
// `where`: a SQLite file, or a PostgreSQL URI (its tables made anew).
double RawInsert(const std::string &where, const std::string &manifest) {
  bool pg = absl::StartsWith(where, "postgresql://");
  if (!pg)
    unlink(where.c_str());
  ParseResult parsed = ParseManifest(manifest, {});
  if (!parsed.manifest) {
    std::fprintf(stderr, "the benchmark's manifest is refused: %s\n",
                 DiagnosticsToStatus(parsed.errors, parsed.total_errors)
                     .ToString()
                     .c_str());
    return -1;
  }
  CompiledManifest c = Compile(std::move(*parsed.manifest));
  auto db = pg ? Database::OpenPostgres(where) : Database::Open(where);
  if (!db.ok())
    return -1;
  absl::Status ok =
      pg ? (*db)->Exec("DROP TABLE IF EXISTS services; DROP TABLE IF EXISTS versions")
         : (*db)->Exec("PRAGMA journal_mode=WAL");
  if (!pg)
    ok.Update((*db)->Exec("PRAGMA synchronous=FULL"));
  ok.Update((*db)->Exec("CREATE TABLE versions (uuid TEXT PRIMARY KEY, hash "
                        "TEXT, manifest TEXT, canonical TEXT);"
                        "CREATE TABLE services (version_uuid TEXT, name TEXT, "
                        "service_type TEXT, compute_type TEXT, brand TEXT, "
                        "image TEXT, package TEXT, count INTEGER, spec_hash "
                        "TEXT, spec_json TEXT, grp TEXT, "
                        "PRIMARY KEY (version_uuid, name))"));
  std::string version = NewUuid();
  auto start = Clock::now();
  ok.Update((*db)->Exec("BEGIN"));
  auto v = (*db)->Prepare("INSERT INTO versions VALUES (?, ?, ?, ?)");
  if (!v.ok())
    return -1;
  v->Bind(1, version).Bind(2, c.hash).Bind(3, manifest).Bind(4, c.canonical);
  ok.Update(v->Run());
  auto st = (*db)->Prepare(
      "INSERT INTO services VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!st.ok())
    return -1;
  for (const auto &kv : c.manifest.services) {
    const ServiceSpec &s = kv.second;
    st->Bind(1, version)
        .Bind(2, s.name)
        .Bind(3, s.service_type)
        .Bind(4, s.compute_type)
        .Bind(5, s.brand);
    st->Bind(6, s.image)
        .Bind(7, s.package)
        .Bind(8, s.count)
        .Bind(9, c.instance_hash.at(s.name));
    st->Bind(10, c.spec_json.at(s.name)).Bind(11, "");
    ok.Update(st->Run());
    ok.Update(st->Reset());
  }
  ok.Update((*db)->Exec("COMMIT"));
  double took = Seconds(Clock::now() - start);
  if (!ok.ok()) {
    std::fprintf(stderr, "the raw insert baseline failed: %s\n",
                 ok.ToString().c_str());
    return -1;
  }
  return took;
}

// Where P3's time goes: the manifest's parse and its compiled forms
// (canonical text, per-service JSON and hashes) timed alone, in process,
// median of `rounds`. They come before any row is written, so they bound
// what the apply can reach against the raw insert.
// Reads every event of `text` with libyaml, the parser under
// projects/yaml_document.cc; false on a syntax error.
bool LibyamlEvents(const std::string &text) {
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p))
    return false;
  yaml_parser_set_input_string(
      &p, reinterpret_cast<const unsigned char *>(text.data()), text.size());
  bool ok = false;
  yaml_event_t e;
  while (yaml_parser_parse(&p, &e)) {
    bool end = e.type == YAML_STREAM_END_EVENT;
    yaml_event_delete(&e);
    if (end) {
      ok = true;
      break;
    }
  }
  yaml_parser_delete(&p);
  return ok;
}

// The same with libfyaml's event parser (the other candidate issue 49
// names), each scalar's text read as the document builder would.
bool LibfyamlEvents(const std::string &text) {
  fy_parse_cfg cfg{};
  cfg.flags = FYPCF_QUIET;
  fy_parser *p = fy_parser_create(&cfg);
  if (p == nullptr || fy_parser_set_string(p, text.data(), text.size()) != 0) {
    if (p != nullptr)
      fy_parser_destroy(p);
    return false;
  }
  bool ended = false;
  while (fy_event *e = fy_parser_parse(p)) {
    if (e->type == FYET_SCALAR) {
      size_t len = 0;
      (void)fy_token_get_text(e->scalar.value, &len);
    }
    ended |= e->type == FYET_STREAM_END;
    fy_parser_event_free(p, e);
  }
  bool ok = ended && !fy_parser_get_stream_error(p);
  fy_parser_destroy(p);
  return ok;
}

// The parts of P3 one by one on a warm heap, the YAML front ends side by
// side: libyaml's and libfyaml's event loops alone, the document tree
// mariposad builds over libyaml's events, the manifest parse (tree plus
// every key's rules) and the compile. 1 when a part could not do its work.
int P3Parts(const std::string &manifest, const std::string &before_text,
            int rounds, double raw_median) {
  ParseResult before_parsed = ParseManifest(before_text, {});
  if (!before_parsed.manifest) {
    std::fprintf(stderr, "P3 parts: the manifest before is refused\n");
    return 1;
  }
  const CompiledManifest before = Compile(std::move(*before_parsed.manifest));
  std::vector<double> libyaml, libfyaml, tree, parse, compile, diff;
  for (int i = 0; i < rounds; ++i) {
    auto t0 = Clock::now();
    bool a = LibyamlEvents(manifest);
    auto t1 = Clock::now();
    bool b = LibfyamlEvents(manifest);
    auto t2 = Clock::now();
    auto doc = YamlDocument::Parse(manifest, nullptr);
    auto t3 = Clock::now();
    ParseResult parsed = ParseManifest(manifest, {});
    auto t4 = Clock::now();
    if (!a || !b || !doc.ok() || !parsed.manifest) {
      std::fprintf(stderr, "P3 parts: a front end refused the manifest "
                           "(libyaml %d, libfyaml %d, tree %d, manifest %d)\n",
                   a, b, doc.ok(), parsed.manifest.has_value());
      return 1;
    }
    Value spec_tree;
    CompiledManifest c = Compile(std::move(*parsed.manifest), {}, &spec_tree);
    auto t5 = Clock::now();
    v1::Diff d = DiffManifests(&before, c, true, &spec_tree);
    auto t6 = Clock::now();
    if (d.services_size() != static_cast<int>(c.manifest.services.size())) {
      std::fprintf(stderr, "P3 parts: the diff has %d services of %zu\n",
                   d.services_size(), c.manifest.services.size());
      return 1;
    }
    libyaml.push_back(Seconds(t1 - t0));
    libfyaml.push_back(Seconds(t2 - t1));
    tree.push_back(Seconds(t3 - t2));
    parse.push_back(Seconds(t4 - t3));
    compile.push_back(Seconds(t5 - t4));
    diff.push_back(Seconds(t6 - t5));
  }
  double p = Median(parse), c = Median(compile);
  std::printf("# P3 parts: parse %.1f ms, compile (canonical text, spec JSON, "
              "hashes) %.1f ms; "
              "together %.2fx the raw insert (%.1f ms), before the apply "
              "writes a row; then the diff against the version before "
              "(every service changed) %.1f ms\n",
              1e3 * p, 1e3 * c, (p + c) / raw_median, 1e3 * raw_median,
              1e3 * Median(diff));
  std::printf("# P3 YAML front ends, same manifest: libyaml events %.2f ms, "
              "libfyaml events %.2f ms (%.2fx libyaml), the document tree "
              "over libyaml %.2f ms, the manifest parse %.2f ms\n",
              1e3 * Median(libyaml), 1e3 * Median(libfyaml),
              Median(libfyaml) / Median(libyaml), 1e3 * Median(tree), 1e3 * p);
  return 0;
}

// `smoke`: tiny sizes, for the default test run: exit 1 only when the
// benchmark cannot do its work (an apply refused, a no-op that changes).
// `only`: "P3" or "P4" runs that one alone (for a profile), "" both.
// `services` (P3's manifest) and `other_projects` (how many the store holds
// during P4) are the sizes scripts/bench.py --growth varies; 0: the
// defaults (1,000 services; P4 with its one project).
int Main(bool smoke, const std::string &only, bool postgres, int services = 0,
         int other_projects = 0) {
  char dir[] = "/tmp/mariposa-bench-XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  std::string store_path = absl::StrCat(dir, "/store.db");
  std::string raw_where = absl::StrCat(dir, "/raw.db");
  std::unique_ptr<testing::PgServer> pg;
  std::unique_ptr<PgConnection> pg_echo;  // P4pg's one round trip
  if (postgres) {
    auto started = testing::PgServer::Start();
    if (!started.ok()) {
      std::fprintf(stderr, "%s\n", started.status().ToString().c_str());
      return 1;
    }
    pg = *std::move(started);
    auto admin_conn = PgConnection::Open(pg->uri());
    if (!admin_conn.ok() || !(*admin_conn)->Exec("CREATE DATABASE bench_store").ok() ||
        !(*admin_conn)->Exec("CREATE DATABASE bench_raw").ok()) {
      std::fprintf(stderr, "cannot create the benchmark's databases\n");
      return 1;
    }
    std::string base = absl::StrCat("postgresql://postgres@127.0.0.1:", pg->port(), "/");
    store_path = base + "bench_store";
    raw_where = base + "bench_raw";
    auto echo = PgConnection::Open(raw_where);
    if (!echo.ok())
      return 1;
    pg_echo = *std::move(echo);
  }
  const char *p3 = postgres ? "P3pg" : "P3", *p4 = postgres ? "P4pg" : "P4";
  auto store = postgres ? SqlProjectStore::OpenPostgres(store_path, RealClock::Get())
                        : SqlProjectStore::Open(store_path, RealClock::Get());
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  ProjectsService projects(store->get(), RealClock::Get());
  AdminService admin(store->get(), dir, store_path, absl::Now());
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&projects);
  builder.RegisterService(&admin);
  auto server = builder.BuildAndStart();
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                     grpc::InsecureChannelCredentials());
  auto pstub = v1::Projects::NewStub(channel);
  auto astub = v1::Admin::NewStub(channel);

  // P3: 5 rounds, baseline and subject alternating.
  const int kServices = services > 0 ? services : smoke ? 20 : 1000,
            kRounds = smoke ? 2 : 5;
  std::vector<double> raw, ours;
  for (int round = 0; only != "P4" && round < kRounds; ++round) {
    std::string manifest = BigManifest("big", kServices, round);
    raw.push_back(RawInsert(raw_where, manifest));
    if (raw.back() < 0)
      return 1;
    v1::ApplyRequest req;
    req.set_manifest(manifest);
    req.set_force(true);
    v1::ApplyResponse resp;
    grpc::ClientContext ctx;
    auto start = Clock::now();
    grpc::Status s = pstub->Apply(&ctx, req, &resp);
    ours.push_back(Seconds(Clock::now() - start));
    if (!s.ok() || !resp.changed()) {
      std::fprintf(stderr, "apply failed: %s\n", s.error_message().c_str());
      return 1;
    }
  }
  if (only != "P4") {
    double raw_rate = kServices / Median(raw),
           our_rate = kServices / Median(ours);
    if (kServices == 1000 || smoke)
      std::printf("%s_apply_1000_services %.0f rows/s %.0f %.2f\n", p3,
                  our_rate, raw_rate, our_rate / raw_rate);
    if (services > 0)
      std::printf("GROWTH_%s %d services %.1f ms raw %.1f ms %.2fx\n", p3,
                  kServices, 1e3 * Median(ours), 1e3 * Median(raw),
                  our_rate / raw_rate);
    std::printf(
        "# %s apply median %.1f ms (min %.1f, max %.1f); raw insert median "
        "%.1f ms (min %.1f, max %.1f)\n",
        p3, 1e3 * Median(ours), 1e3 * *std::min_element(ours.begin(), ours.end()),
        1e3 * *std::max_element(ours.begin(), ours.end()), 1e3 * Median(raw),
        1e3 * *std::min_element(raw.begin(), raw.end()),
        1e3 * *std::max_element(raw.begin(), raw.end()));
    if (P3Parts(BigManifest("big", kServices, 1), BigManifest("big", kServices, 0),
                kRounds, Median(raw)) != 0)
      return 1;
  }
  if (only != "P3") {

    // The other projects the store holds (3 services each), applied first.
    for (int k = 1; k < other_projects; ++k) {
      v1::ApplyRequest other;
      other.set_manifest(absl::StrCat(
          "project: other-", k,
          "\nservices:\n  web: {image: nginx@1, count: 3}\n  api: {image: "
          "api@2, count: 2}\n  db: {image: pg@15, count: 1}\n"));
      other.set_force(true);
      grpc::ClientContext ctx;
      v1::ApplyResponse r;
      if (grpc::Status st = pstub->Apply(&ctx, other, &r); !st.ok()) {
        std::fprintf(stderr, "apply of other-%d failed: %s\n", k,
                     st.error_message().c_str());
        return 1;
      }
    }
    // P4: no-op Apply (a small project, unchanged) vs Ping, one call in flight.
    v1::ApplyRequest noop;
    noop.set_manifest(
        "project: small\nservices:\n  web: {image: nginx@1, count: 3}\n");
    noop.set_force(true);
    {
      grpc::ClientContext ctx;
      v1::ApplyResponse r;
      pstub->Apply(&ctx, noop, &r);
    }
    const int kCalls = smoke ? 50 : 2000;
    std::vector<double> apply_lat, echo_lat;
    for (int round = 0; round < kRounds; ++round) {
      for (int i = 0; i < kCalls / kRounds; ++i) {
        v1::PingRequest preq;
        preq.set_payload("x");
        v1::PingResponse presp;
        grpc::ClientContext c1;
        auto t0 = Clock::now();
        if (grpc::Status ps = astub->Ping(&c1, preq, &presp); !ps.ok()) {
          std::fprintf(stderr, "the echo baseline failed: %s\n",
                       ps.error_message().c_str());
          return 1;
        }
        if (pg_echo != nullptr && !pg_echo->Exec("SELECT 1").ok()) {
          std::fprintf(stderr, "the database round trip baseline failed\n");
          return 1;
        }
        echo_lat.push_back(Seconds(Clock::now() - t0));
        grpc::ClientContext c2;
        v1::ApplyResponse r;
        auto t1 = Clock::now();
        grpc::Status s = pstub->Apply(&c2, noop, &r);
        apply_lat.push_back(Seconds(Clock::now() - t1));
        if (!s.ok() || r.changed()) {
          std::fprintf(stderr, "no-op apply was not a no-op\n");
          return 1;
        }
      }
    }
    double a50 = Percentile(apply_lat, 0.5), a99 = Percentile(apply_lat, 0.99);
    double e50 = Percentile(echo_lat, 0.5), e99 = Percentile(echo_lat, 0.99);
    std::printf("%s_noop_apply_p50 %.1f us %.1f %.2f\n", p4, 1e6 * a50, 1e6 * e50,
                a50 / e50);
    std::printf("%s_noop_apply_p99 %.1f us %.1f %.2f\n", p4, 1e6 * a99, 1e6 * e99,
                a99 / e99);
    if (other_projects > 0)
      std::printf("GROWTH_%s %d projects p50 %.1f us echo %.1f us %.2fx\n", p4,
                  other_projects, 1e6 * a50, 1e6 * e50, a50 / e50);
  }
  server->Shutdown();
  store->reset();
  for (const char *f : {"/store.db", "/store.db-wal", "/store.db-shm",
                        "/raw.db", "/raw.db-wal", "/raw.db-shm"}) {
    unlink(absl::StrCat(dir, f).c_str());
  }
  rmdir(dir);
  return 0;
}

} // namespace
} // namespace mariposa

int main(int argc, char **argv) {
  // The same allocator settings as mariposad (daemon/main.cc), and its
  // trimmer: free heap pages given back once a second (daemon/daemon.cc).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 32 << 20);
  absl::Notification stopping;
  std::thread trimmer([&] {
    while (!stopping.WaitForNotificationWithTimeout(absl::Seconds(1)))
      malloc_trim(0);
  });
  struct Stop {
    absl::Notification *n;
    std::thread *t;
    ~Stop() { n->Notify(); t->join(); }
  } stop{&stopping, &trimmer};
  bool smoke = false, postgres = false;
  int services = 0, projects = 0;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--smoke")
      smoke = true;
    else if (a == "--only=P3" || a == "--only=P4")
      only = a.substr(7);
    else if (a == "--postgres")
      postgres = true;
    else if (a.rfind("--services=", 0) == 0 && std::atoi(a.c_str() + 11) > 0)
      services = std::atoi(a.c_str() + 11);
    else if (a.rfind("--projects=", 0) == 0 && std::atoi(a.c_str() + 11) > 0)
      projects = std::atoi(a.c_str() + 11);
    else {
      std::fprintf(stderr,
                   "unknown argument %s; use --smoke, --postgres, --only=P3|P4, "
                   "--services=N and/or --projects=N\n",
                   a.c_str());
      return 2;
    }
  }
  // The smoke test runs both stores: neither may break unnoticed.
  if (smoke && !postgres) {
    int r = mariposa::Main(smoke, only, false);
    return r != 0 ? r : mariposa::Main(smoke, only, true);
  }
  return mariposa::Main(smoke, only, postgres, services, projects);
}
