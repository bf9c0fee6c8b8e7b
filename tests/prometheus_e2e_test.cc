// End to end with Debian's Prometheus: it scrapes a real mariposad, a
// mariposa-health agent and tritonsim (loopback, its own port and storage),
// loads deploy/prometheus/rules.yml and answers every query of
// deploy/grafana/mariposa.json. A service whose instances are killed while
// frozen fires MariposaServiceDown; after the thaw and convergence it
// resolves. Every metric the binaries expose is in docs/metrics.md.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/health_fixture.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

class PrometheusE2E : public HealthE2E {
 protected:
  void SetUp() override {
    Start("prometheus", {"--health-agents", "--health-lease", "1s", "--metrics-listen", "127.0.0.1:0"});
    agent_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"health/mariposa-health", "--mariposad", daemon_->addr(), "--id", "cn1", "--listen",
                                 "127.0.0.1:0", "--heartbeat", "200ms", "--metrics-listen", "127.0.0.1:0"},
        dir_ + "/cn1");
    ASSERT_TRUE(agent_->Start()) << agent_->log();
    ASSERT_FALSE(daemon_->extra_addrs().empty());
    ASSERT_FALSE(agent_->extra_addrs().empty());
    // The rules as shipped, with every `for:` cut to 1s: the test cannot wait
    // minutes; promtool's unit tests check the real durations.
    std::string rules = std::regex_replace(ReadFile("deploy/prometheus/rules.yml"),
                                           std::regex("for: [0-9]+[smh]"), "for: 1s");
    WriteFile(dir_ + "/rules.yml", rules);
    auto host = [](const std::string& url) { return url.substr(url.find("://") == std::string::npos ? 0 : url.find("://") + 3); };
    WriteFile(dir_ + "/prometheus.yml", absl::StrCat(R"(global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [")", dir_, R"(/rules.yml"]
scrape_configs:
  - job_name: mariposa
    static_configs: [{targets: [")", daemon_->extra_addrs()[0], R"("]}]
  - job_name: mariposa-health
    static_configs: [{targets: [")", agent_->extra_addrs()[0], R"("]}]
  - job_name: tritonsim
    static_configs: [{targets: [")", host(sim_->addr()), R"("]}]
)"));
    prom_addr_ = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
    prom_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"/usr/bin/prometheus", "--config.file=" + dir_ + "/prometheus.yml",
                                 "--storage.tsdb.path=" + dir_ + "/tsdb", "--web.listen-address=" + prom_addr_,
                                 "--log.level=warn"},
        dir_ + "/prometheus", prom_addr_);
    ASSERT_TRUE(prom_->Start()) << "is Debian's prometheus installed (scripts/install-deps.sh)?\n" << prom_->log();
  }
  void TearDown() override {
    if (prom_) prom_->Stop();
    if (agent_) agent_->Stop();
  }
  json Api(const std::string& path) {
    httplib::Client c(prom_addr_);
    auto r = c.Get(path);
    if (!r || r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  }
  json Query(const std::string& expr) {
    return Api("/api/v1/query?query=" + httplib::detail::encode_query_param(expr));
  }
  // Firing alerts named `name`, by their labels.
  std::vector<json> Firing(const std::string& name) {
    std::vector<json> out;
    json a = Api("/api/v1/alerts");
    if (!a.is_object()) return out;
    for (const json& x : a["data"]["alerts"]) {
      if (x["labels"]["alertname"] == name && x["state"] == "firing") out.push_back(x["labels"]);
    }
    return out;
  }
  // The families ("# TYPE name type") of a /metrics page.
  std::set<std::string> Families(const std::string& addr) {
    httplib::Client c(addr);
    auto r = c.Get("/metrics");
    std::set<std::string> out;
    if (!r) return out;
    std::istringstream in(r->body);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("# TYPE ", 0) == 0) out.insert(line.substr(7, line.find(' ', 7) - 7));
    }
    return out;
  }

  std::unique_ptr<ServerProcess> agent_, prom_;
  std::string prom_addr_;
};

TEST_F(PrometheusE2E, DashboardQueriesAndTheServiceDownAlert) {
  WriteFile(dir_ + "/m.yaml", Manifest("jupiter", 2));
  ASSERT_EQ(M({"apply", "-f", dir_ + "/m.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitHealthy("jupiter", 2)) << daemon_->log();

  // Every target is up.
  ASSERT_TRUE(WaitFor([&] {
    json t = Api("/api/v1/targets");
    if (!t.is_object()) return false;
    int up = 0;
    for (const json& x : t["data"]["activeTargets"]) up += x["health"] == "up";
    return up == 3;
  }, 20)) << Api("/api/v1/targets").dump() << prom_->log();

  // Every panel's query returns data (rates need two scrapes).
  json dash = json::parse(ReadFile("deploy/grafana/mariposa.json"));
  std::vector<std::string> exprs;
  for (const json& p : dash["panels"]) {
    if (!p.contains("targets")) continue;
    for (const json& t : p["targets"]) {
      exprs.push_back(absl::StrReplaceAll(t["expr"].get<std::string>(), {{"$project", ".*"}}));
    }
  }
  ASSERT_GT(exprs.size(), 20u);
  std::set<std::string> empty(exprs.begin(), exprs.end());
  WaitFor([&] {
    for (auto it = empty.begin(); it != empty.end();) {
      json r = Query(*it);
      bool data = r.is_object() && r["status"] == "success" && !r["data"]["result"].empty();
      it = data ? empty.erase(it) : std::next(it);
    }
    return empty.empty();
  }, 30);
  for (const std::string& e : empty) ADD_FAILURE() << "no data for dashboard query: " << e << "\n" << Query(e).dump();

  // Frozen, both instances killed: nothing replaces them, the alert fires.
  EXPECT_TRUE(Firing("MariposaServiceDown").empty());
  ASSERT_EQ(M({"freeze", "-j", "jupiter", "--reason", "test"}).exit_code, 0);
  // First one answers its check unhealthy (frozen: it is not replaced), and
  // the health event names the instance. A killed VM is not checked, so the
  // check is failed on purpose rather than raced against the kill.
  std::vector<json> running = Vms("running");
  ASSERT_FALSE(running.empty());
  ASSERT_EQ(RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "vm-health",
                        running[0]["uuid"].get<std::string>(), "unhealthy"}).exit_code, 0);
  EXPECT_TRUE(WaitFor([&] {
    return std::regex_search(M({"-j", "jupiter", "events", "--all"}).out,
                             std::regex("jupiter-web-[0-9] http: (healthy|unknown) -> unhealthy"));
  }, 20)) << M({"-j", "jupiter", "events", "--all"}).out;
  for (const json& vm : running) {
    ASSERT_EQ(RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "kill-vm",
                          vm["uuid"].get<std::string>()}).exit_code, 0);
  }
  ASSERT_TRUE(WaitFor([&] { return !Firing("MariposaServiceDown").empty(); }, 30))
      << Query("mariposa_service_ready_instances").dump();
  json labels = Firing("MariposaServiceDown")[0];
  EXPECT_EQ(labels["project"], "jupiter");
  EXPECT_EQ(labels["service"], "web");
  EXPECT_EQ(labels["severity"], "critical");
  // Thawed: both broken at once is more than the replacement budget (one a
  // minute for 2 instances), so one is replaced now: the service is up
  // again (the down alert resolves) and the budget alert fires.
  ASSERT_EQ(M({"thaw", "-j", "jupiter"}).exit_code, 0);
  EXPECT_TRUE(WaitFor([&] { return Firing("MariposaServiceDown").empty(); }, 30));
  EXPECT_TRUE(WaitFor([&] { return !Firing("MariposaReplacementBudgetExceeded").empty(); }, 30));
  // The other follows within the budget's minute: converged.
  EXPECT_TRUE(WaitFor([&] { return Healthy("jupiter") == 2; }, 90))
      << M({"status", "-j", "jupiter"}).out << M({"events", "-j", "jupiter"}).out;
  EXPECT_TRUE(Firing("MariposaServiceDown").empty());
  // Both kills are counted as replacements of stopped instances.
  EXPECT_TRUE(WaitFor([&] {
    json r = Query("sum(mariposa_replacements_total{reason=\"stopped\"})");
    return r.is_object() && !r["data"]["result"].empty() && r["data"]["result"][0]["value"][1] == "2";
  }, 10)) << Query("mariposa_replacements_total").dump();

  // What the binaries expose is documented.
  std::string doc = ReadFile("docs/metrics.md");
  std::set<std::string> exposed = Families(daemon_->extra_addrs()[0]);
  for (const std::string& f : Families(agent_->extra_addrs()[0])) exposed.insert(f);
  EXPECT_GT(exposed.size(), 20u);
  for (const std::string& f : exposed) {
    EXPECT_NE(doc.find("`" + f + "`"), std::string::npos) << f << " is exposed but not in docs/metrics.md";
  }
}

}  // namespace
}  // namespace mariposa::testing
