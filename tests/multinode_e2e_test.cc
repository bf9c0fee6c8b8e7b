// Several mariposad nodes on one PostgreSQL against tritonsim (issue 33),
// the small version of the chaos run (scripts/chaos.sh): three nodes share
// four projects; a node killed with SIGKILL has its projects taken over
// within the lease TTL plus a few seconds; a node paused with SIGSTOP past
// its lease does not act when it wakes; a change through any node reaches
// the project's node; no instance is ever created twice; while the database
// is down requests answer UNAVAILABLE naming it, and all is well after;
// readonly set through one node holds them all.
#include <signal.h>

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/pg_server.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

constexpr int kProjects = 4;

class MultiNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("multinode");
    auto pg = PgServer::Start();
    ASSERT_TRUE(pg.ok()) << pg.status();
    pg_ = *std::move(pg);
    uri_ = absl::StrCat("postgresql://postgres@127.0.0.1:", pg_->port(), "/postgres");
    sim_ = std::make_unique<Tritonsim>(std::vector<std::string>{"--servers", "5", "--seed",
                                                                "deploy/examples/tritonsim-seed.json", "--job-latency",
                                                                "20", "--listen-vms"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    for (const char* n : {"a", "b", "c"}) StartNode(n);
  }
  void StartNode(const std::string& n) {
    auto d = std::make_unique<ServerProcess>(
        std::vector<std::string>{"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/" + n,
                                 "--store", uri_, "--node", "node-" + n, "--secrets-key", dir_ + "/secrets.key", "--lease-ttl", "2s", "--resync", "1s",
                                 "--triton", sim_->addr(), "--owner", "930896af-bf8c-48d4-885c-6573a94b1853",
                                 "--network", "aaaaaaaa-0000-4000-8000-000000000001", "--health-agents",
                                 "--health-loopback", "--health-lease", "1s"},
        dir_ + "/" + n + ".state");
    ASSERT_TRUE(d->Start()) << d->log();
    nodes_[n] = std::move(d);
  }
  // Non-destroyed VMs per project uuid, and whether any alias appears twice.
  std::map<std::string, int> Vms(bool* duplicate = nullptr) {
    httplib::Client c(sim_->addr());
    auto r = c.Get("/vms?tag.mariposa.service=*");
    std::map<std::string, int> out;
    std::set<std::string> aliases;
    if (!r || r->status != 200) return out;
    for (const auto& vm : json::parse(r->body)) {
      if (vm["state"] == "destroyed" || vm["state"] == "failed") continue;
      out[vm["tags"]["mariposa.project"].get<std::string>()]++;
      if (!aliases.insert(vm["alias"].get<std::string>()).second && duplicate != nullptr) *duplicate = true;
    }
    return out;
  }
  // `mariposa nodes` as a node answers it.
  json Nodes(const std::string& n) {
    RunResult r = Cli(nodes_[n]->addr(), {"-o", "json", "nodes"});
    return r.exit_code == 0 ? json::parse(r.out, nullptr, false) : json::object();
  }
  // project name -> holder, as node `n` reads the leases ("" = none held).
  std::map<std::string, std::string> Holders(const std::string& n) {
    std::map<std::string, std::string> out;
    json j = Nodes(n);
    if (!j.contains("projects")) return out;
    for (const auto& p : j["projects"]) {
      out[p["project"].get<std::string>()] = p.value("state", "") == "held" ? p.value("holder", "") : "";
    }
    return out;
  }
  // Holders(n) once every project is held (a lease may be between two nodes
  // for a moment: handed back, not taken yet); empty after 15 s.
  std::map<std::string, std::string> AllHeld(const std::string& n) {
    std::map<std::string, std::string> held;
    bool all = Eventually(
        [&] {
          held = Holders(n);
          for (const auto& kv : held) {
            if (kv.second.empty()) return false;
          }
          return static_cast<int>(held.size()) == kProjects;
        },
        absl::Seconds(15));
    return all ? held : std::map<std::string, std::string>{};
  }
  // "a" of "node-a"; "" when `project` is held by no node.
  static std::string NodeOf(const std::map<std::string, std::string>& held, const std::string& project) {
    auto it = held.find(project);
    return it == held.end() || it->second.size() <= 5 ? "" : it->second.substr(5);
  }
  int Total() {
    int total = 0;
    for (const auto& kv : Vms()) total += kv.second;
    return total;
  }
  bool AllAt(int per_project) {
    auto vms = Vms();
    int ok = 0;
    for (const auto& kv : vms) ok += kv.second == per_project;
    return ok == kProjects && static_cast<int>(vms.size()) == kProjects;
  }
  std::string Manifest(int i, int count, bool checked = false) {
    std::string path = absl::StrCat(dir_, "/p", i, ".yaml");
    WriteFile(path, absl::StrCat("project: p", i, "\nservices:\n  web:\n    image: autopilotpattern/nginx@1.4.0\n"
                                 "    package: g4-highcpu-512M\n    count: ", count, "\n",
                                 checked ? "    ports: [8080]\n    start: {window: 3s}\n    healthchecks:\n"
                                           "      http: {type: http, port: 8080, path: /healthz, interval: 200ms, "
                                           "timeout: 150ms, retries: 2}\n"
                                         : ""));
    return path;
  }
  // A mariposa-health agent given one node's address only.
  std::unique_ptr<ServerProcess> StartAgent(const std::string& id, const std::string& node) {
    auto a = std::make_unique<ServerProcess>(
        std::vector<std::string>{"health/mariposa-health", "--mariposad", nodes_[node]->addr(), "--id", id, "--listen",
                                 "127.0.0.1:0", "--heartbeat", "200ms", "--metrics-listen", "127.0.0.1:0"},
        dir_ + "/" + id);
    EXPECT_TRUE(a->Start()) << a->log();
    return a;
  }
  // The checks an agent runs now (instance/check), as it answers ListChecks.
  std::set<std::string> Checking(const ServerProcess& agent, const std::string& via) {
    json j = json::parse(Cli(nodes_[via]->addr(), {"-o", "json", "health", "--agent", agent.addr()}).out, nullptr, false);
    std::set<std::string> out;
    if (!j.is_object() || !j.contains("checks")) return out;
    for (const auto& c : j["checks"]) {
      out.insert(c["key"]["instance"].get<std::string>() + "/" + c["key"]["check"].get<std::string>());
    }
    return out;
  }
  // The agent's gauge of the nodes it has a stream to (-1: unreadable).
  int AgentNodes(const ServerProcess& agent) {
    if (agent.extra_addrs().empty()) return -1;
    httplib::Client c("http://" + agent.extra_addrs()[0]);
    auto r = c.Get("/metrics");
    if (!r || r->status != 200) return -1;
    size_t at = r->body.find("\nmariposa_health_agent_nodes ");
    if (at == std::string::npos) return -1;
    return std::atoi(r->body.c_str() + at + std::string("\nmariposa_health_agent_nodes ").size());
  }
  // Healthy instances of p`i` as the node `via` reports them (-1: unreadable).
  int Healthy(int i, const std::string& via) {
    json st = json::parse(Cli(nodes_[via]->addr(), {"-o", "json", "-j", absl::StrCat("p", i), "status"}).out, nullptr,
                          false);
    if (!st.is_object() || !st.contains("services")) return -1;
    return std::stoi(st["services"][0].value("healthy", "0"));
  }

  std::string dir_, uri_;
  std::unique_ptr<PgServer> pg_;
  std::unique_ptr<Tritonsim> sim_;
  std::map<std::string, std::unique_ptr<ServerProcess>> nodes_;
};

// A node whose secrets key is not the other nodes' is refused at start,
// saying which key the store's secrets are sealed with and how to fix it.
TEST_F(MultiNodeTest, ANodeWithAnotherSecretsKeyIsRefused) {
  RunResult r = RunProcess({"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/d", "--store", uri_,
                            "--node", "node-d", "--secrets-key", dir_ + "/other.key", "--triton", sim_->addr(),
                            "--owner", "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                            "aaaaaaaa-0000-4000-8000-000000000001"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("this node's secrets key is not the one the store's secrets are sealed with"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Fix: copy --secrets-key from a node that runs"), std::string::npos) << r.err;
}

TEST_F(MultiNodeTest, SharesTakesOverAndNeverActsTwice) {
  // Applied through different nodes.
  const char* via[] = {"a", "b", "c", "a"};
  for (int i = 0; i < kProjects; ++i) {
    RunResult r = Cli(nodes_[via[i]]->addr(), {"apply", "--yes", "-f", Manifest(i, 2)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  ASSERT_TRUE(Eventually([&] { return AllAt(2); }, absl::Seconds(30))) << nodes_["a"]->log();
  // Every project held, and every node says the same.
  std::map<std::string, std::string> held;
  ASSERT_TRUE(Eventually(
      [&] {
        held = Holders("c");
        std::set<std::string> by;
        for (const auto& kv : held) {
          if (kv.second.empty()) return false;
          by.insert(kv.second);
        }
        // (Which nodes: rendezvous hashing of random uuids; all four on one
        // node happens.)
        return static_cast<int>(held.size()) == kProjects && Holders("a") == held;
      },
      absl::Seconds(15)));

  // status answers on every node: the project's node from its last sync,
  // another by reading VMAPI for the answer, and says which it did.
  {
    std::string holder = held["p0"].substr(std::string("node-").size());
    std::string not_holder = holder == "a" ? "b" : "a";
    RunResult mine = Cli(nodes_[holder]->addr(), {"-j", "p0", "status"});
    RunResult theirs = Cli(nodes_[not_holder]->addr(), {"-j", "p0", "status"});
    EXPECT_NE(mine.out.find("(the last sync's"), std::string::npos) << mine.out;
    EXPECT_NE(theirs.out.find("read from VMAPI for this answer: another node runs the project"), std::string::npos)
        << theirs.out;
    EXPECT_NE(theirs.out.find("web"), std::string::npos) << theirs.out;
  }

  // SIGKILL the node holding p0: its projects move within TTL + a few s.
  std::string victim = held["p0"].substr(std::string("node-").size());
  std::string witness = victim == "a" ? "b" : "a";
  nodes_[victim]->Kill();
  absl::Time killed = RealClock::Get()->Now();
  ASSERT_TRUE(Eventually(
      [&] {
        auto h = Holders(witness);
        for (const auto& kv : h) {
          if (kv.second.empty() || kv.second == "node-" + victim) return false;
        }
        return static_cast<int>(h.size()) == kProjects;
      },
      absl::Seconds(12)))
      << "the killed node's projects were not taken over";
  absl::Duration takeover = RealClock::Get()->Now() - killed;
  std::cout << "takeover after SIGKILL (lease TTL 2s): " << absl::FormatDuration(takeover) << "\n";
  EXPECT_LT(takeover, absl::Seconds(2 + 2 + 4));
  // A change through the surviving witness reaches p0's new node.
  ASSERT_EQ(Cli(nodes_[witness]->addr(), {"apply", "--yes", "-f", Manifest(0, 3)}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Total() == 2 * kProjects + 1; }, absl::Seconds(15)));

  // SIGSTOP the node holding p1 past its lease, change p1 meanwhile
  // through another node, then SIGCONT: the change is made once.
  held = AllHeld(witness);
  std::string paused = NodeOf(held, "p1");
  ASSERT_FALSE(paused.empty());
  std::string other;
  for (const auto& kv : nodes_) {
    if (kv.first != victim && kv.first != paused) other = kv.first;
  }
  ASSERT_FALSE(other.empty());
  ASSERT_EQ(kill(nodes_[paused]->pid(), SIGSTOP), 0);
  ASSERT_EQ(Cli(nodes_[other]->addr(), {"apply", "--yes", "-f", Manifest(1, 4)}).exit_code, 0);
  auto p1_at = [&](int n) { return Total() == 2 * kProjects + 1 + (n - 2); };
  ASSERT_TRUE(Eventually([&] { return p1_at(4); }, absl::Seconds(20))) << "p1 was not taken over while its node slept";
  ASSERT_EQ(kill(nodes_[paused]->pid(), SIGCONT), 0);
  Pause(absl::Seconds(4));  // the woken node's stale syncs, if any, would act now
  bool duplicate = false;
  Vms(&duplicate);
  EXPECT_TRUE(p1_at(4)) << "after SIGCONT the paused node acted on a project it had lost";
  EXPECT_FALSE(duplicate) << "an instance was created twice";
  // The killed node comes back and takes its share again.
  StartNode(victim);
  EXPECT_TRUE(Eventually(
      [&] {
        for (const auto& kv : Holders(victim)) {
          if (kv.second == "node-" + victim) return true;
        }
        return false;
      },
      absl::Seconds(15)));
  EXPECT_TRUE(p1_at(4));

  // The database goes away: requests answer UNAVAILABLE naming it, no node
  // crashes; when it is back they answer again.
  ASSERT_TRUE(pg_->Stop().ok());
  RunResult down = Cli(nodes_[other]->addr(), {"project", "list"});
  EXPECT_NE(down.exit_code, 0);
  EXPECT_NE(down.err.find("its store is unavailable: PostgreSQL at 127.0.0.1:"), std::string::npos) << down.err;
  ASSERT_TRUE(pg_->Restart().ok());
  EXPECT_TRUE(Eventually([&] { return Cli(nodes_[other]->addr(), {"project", "list"}).exit_code == 0; },
                         absl::Seconds(10)));
  for (const auto& kv : nodes_) EXPECT_EQ(kill(kv.second->pid(), 0), 0) << "node " << kv.first << " died";
  EXPECT_TRUE(Eventually([&] { return p1_at(4); }, absl::Seconds(10)));

  // readonly set through one node holds every node: another refuses a change
  // at once, and takes it again once active.
  ASSERT_EQ(Cli(nodes_[victim]->addr(), {"admin", "state", "set", "readonly", "--reason", "db maintenance"}).exit_code, 0);
  EXPECT_TRUE(Eventually(
      [&] {
        RunResult r = Cli(nodes_[other]->addr(), {"apply", "--yes", "-f", Manifest(2, 3)});
        return r.exit_code != 0 && r.err.find("db maintenance") != std::string::npos;
      },
      absl::Seconds(5)))
      << "a node went on writing while another was set readonly";
  ASSERT_EQ(Cli(nodes_[other]->addr(), {"admin", "state", "set", "active"}).exit_code, 0);
  EXPECT_TRUE(Eventually(
      [&] { return Cli(nodes_[victim]->addr(), {"apply", "--yes", "-f", Manifest(2, 3)}).exit_code == 0; },
      absl::Seconds(3)));
}

// Health agents given one node each link to every node (each node assigns
// the checks of the projects it runs): every check of every project runs on
// exactly one agent; when a node dies its projects' checks come back from
// their new node, and a failing instance there is replaced.
TEST_F(MultiNodeTest, HealthAgentsGivenOneNodeCheckEveryNodesProjects) {
  auto agent1 = StartAgent("agent-1", "a");
  auto agent2 = StartAgent("agent-2", "b");
  for (int i = 0; i < kProjects; ++i) {
    RunResult r = Cli(nodes_["c"]->addr(), {"apply", "--yes", "-f", Manifest(i, 2, true)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  const size_t checks = 2 * kProjects;
  auto partitioned = [&] {
    std::set<std::string> one = Checking(*agent1, "a"), two = Checking(*agent2, "a");
    std::set<std::string> all(one.begin(), one.end());
    all.insert(two.begin(), two.end());
    return one.size() + two.size() == checks && all.size() == checks;
  };
  ASSERT_TRUE(Eventually(partitioned, absl::Seconds(30))) << agent1->log() << agent2->log();
  EXPECT_TRUE(Eventually([&] { return AgentNodes(*agent1) == 3 && AgentNodes(*agent2) == 3; }, absl::Seconds(5)));
  // Health as the project's node sees it, and as another node answers
  // status (from VMAPI, with the health the project's node stored).
  std::map<std::string, std::string> held = AllHeld("a");
  ASSERT_FALSE(held.empty()) << "not every project was held";
  for (int i = 0; i < kProjects; ++i) {
    std::string holder = NodeOf(held, absl::StrCat("p", i));
    std::string other = holder == "a" ? "b" : "a";
    EXPECT_TRUE(Eventually([&] { return Healthy(i, holder) == 2; }, absl::Seconds(15))) << "p" << i;
    EXPECT_TRUE(Eventually([&] { return Healthy(i, other) == 2; }, absl::Seconds(5))) << "p" << i << " via " << other;
  }

  // The node running p0 dies: its projects' checks come back from the new
  // holder, still one agent each; the agents drop their link to it.
  std::string victim = NodeOf(held, "p0");
  std::string witness = victim == "a" ? "b" : "a";
  nodes_[victim]->Kill();
  ASSERT_TRUE(Eventually(
      [&] {
        for (const auto& kv : Holders(witness)) {
          if (kv.second.empty() || kv.second == "node-" + victim) return false;
        }
        return true;
      },
      absl::Seconds(12)));
  EXPECT_TRUE(Eventually([&] { return AgentNodes(*agent1) == 2 && AgentNodes(*agent2) == 2; }, absl::Seconds(10)));
  EXPECT_TRUE(Eventually(partitioned, absl::Seconds(10)));
  std::string now_p0 = NodeOf(AllHeld(witness), "p0");
  ASSERT_FALSE(now_p0.empty());
  EXPECT_TRUE(Eventually([&] { return Healthy(0, now_p0) == 2; }, absl::Seconds(15)));

  // A failing instance of p0 is seen by its agent and replaced by p0's new node.
  json projects = json::parse(Cli(nodes_[witness]->addr(), {"-o", "json", "project", "list"}).out, nullptr, false);
  std::string p0;
  for (const auto& p : projects.is_object() ? projects["projects"] : projects) {
    if (p.value("name", "") == "p0") p0 = p.value("uuid", "");
  }
  ASSERT_FALSE(p0.empty()) << projects.dump();
  httplib::Client c(sim_->addr());
  json vms = json::parse(c.Get("/vms?state=running&tag.mariposa.project=" + p0)->body);
  ASSERT_EQ(vms.size(), 2u);
  std::string sick = vms[0]["uuid"];
  RunResult r = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "vm-health", sick, "unhealthy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Eventually(
      [&] {
        json gone = json::parse(c.Get("/vms?state=destroyed&tag.mariposa.project=" + p0)->body, nullptr, false);
        for (const auto& vm : gone) {
          if (vm["uuid"] == sick) return true;
        }
        return false;
      },
      absl::Seconds(20)))
      << "the unhealthy instance of p0 was not replaced by its new node";
  EXPECT_TRUE(Eventually([&] { return Healthy(0, now_p0) == 2; }, absl::Seconds(20)));
  bool duplicate = false;
  Vms(&duplicate);
  EXPECT_FALSE(duplicate);
}

}  // namespace
}  // namespace mariposa::testing
