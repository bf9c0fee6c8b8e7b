// Database failover (issue 33, docs/operations.md "Database failover"): two
// mariposad nodes on a PostgreSQL primary with a synchronous streaming
// replica (pg_basebackup), a URI naming both hosts with
// target_session_attrs=read-write. Mid-rollout, while a client keeps
// writing, the primary crashes and the replica is promoted: the nodes
// reconnect to it on their own, every write that was acknowledged is there,
// the rollout finishes, and no instance is created twice.
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/pg_server.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

TEST(PgFailoverTest, PromotedReplicaLosesNothingAcknowledged) {
  std::string dir = TempDir("failover");
  auto primary = PgServer::Start();
  ASSERT_TRUE(primary.ok()) << primary.status();
  auto replica = (*primary)->StartReplica(/*synchronous=*/true);
  ASSERT_TRUE(replica.ok()) << replica.status();
  std::string uri = absl::StrCat("postgresql://postgres@127.0.0.1:", (*primary)->port(), ",127.0.0.1:",
                                 (*replica)->port(), "/postgres?target_session_attrs=read-write&connect_timeout=2");
  Tritonsim sim({"--servers", "5", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "300"});
  ASSERT_TRUE(sim.Start()) << sim.log();
  std::map<std::string, std::unique_ptr<ServerProcess>> nodes;
  for (const char* n : {"a", "b"}) {
    nodes[n] = std::make_unique<ServerProcess>(
        std::vector<std::string>{"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir + "/" + n,
                                 "--store", uri, "--node", absl::StrCat("node-", n), "--secrets-key", dir + "/secrets.key", "--lease-ttl", "2s",
                                 "--resync", "1s", "--triton", sim.addr(), "--owner",
                                 "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                                 "aaaaaaaa-0000-4000-8000-000000000001", "--max-jobs-per-project", "2"},
        dir + "/" + n + ".state");
    ASSERT_TRUE(nodes[n]->Start()) << nodes[n]->log();
  }
  WriteFile(dir + "/p.yaml",
            "project: p\nservices:\n  web:\n    image: autopilotpattern/nginx@1.4.0\n    package: g4-highcpu-512M\n"
            "    count: 12\n");
  ASSERT_EQ(Cli(nodes["a"]->addr(), {"apply", "--yes", "-f", dir + "/p.yaml"}).exit_code, 0);

  // A client writes a new meta key again and again through node b,
  // remembering which writes were acknowledged.
  absl::Mutex mu;
  std::vector<std::string> acked;
  int refused = 0;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      std::string key = absl::StrCat("k", i);
      RunResult r = Cli(nodes["b"]->addr(), {"-j", "p", "meta", "set", key, "v"});
      absl::MutexLock l(&mu);
      if (r.exit_code == 0) {
        acked.push_back(key);
      } else {
        ++refused;
        EXPECT_NE(r.err.find("PostgreSQL at"), std::string::npos) << "a failed write that does not name the "
                                                                      "database: " << r.err;
      }
    }
  });
  auto running = [&] {
    httplib::Client c(sim.addr());
    auto r = c.Get("/vms?tag.mariposa.service=*");
    int n = 0;
    if (!r || r->status != 200) return -1;
    for (const auto& vm : json::parse(r->body)) n += vm["state"] != "destroyed" && vm["state"] != "failed";
    return n;
  };
  // Mid-rollout: some instances made, not all.
  ASSERT_TRUE(Eventually([&] { return running() >= 2; }, absl::Seconds(20)));
  ASSERT_LT(running(), 12);
  size_t before;
  {
    absl::MutexLock l(&mu);
    before = acked.size();
  }
  ASSERT_TRUE((*primary)->Crash().ok());
  ASSERT_TRUE((*replica)->Promote().ok());
  // Writes are acknowledged again through the promoted replica.
  EXPECT_TRUE(Eventually(
      [&] {
        absl::MutexLock l(&mu);
        return acked.size() >= before + 3 && refused >= 0;
      },
      absl::Seconds(20)))
      << nodes["b"]->log();
  stop = true;
  writer.join();
  // The rollout finishes on the new primary, nothing twice.
  EXPECT_TRUE(Eventually([&] { return running() == 12; }, absl::Seconds(40))) << running();
  Pause(absl::Seconds(2));
  EXPECT_EQ(running(), 12);
  // Every acknowledged write is there.
  RunResult list = Cli(nodes["a"]->addr(), {"-o", "json", "-j", "p", "meta", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::set<std::string> have;
  json j = json::parse(list.out, nullptr, false);
  for (const auto& e : j.is_array() ? j : j.value("entries", json::array())) have.insert(e.value("key", ""));
  absl::MutexLock l(&mu);
  std::cout << acked.size() << " writes acknowledged (" << before << " before the failover), " << refused
            << " refused with the database named\n";
  for (const std::string& k : acked) EXPECT_TRUE(have.count(k)) << "acknowledged write " << k << " lost";
  for (auto& kv : nodes) EXPECT_EQ(kill(kv.second->pid(), 0), 0) << "node " << kv.first << " died";
}

}  // namespace
}  // namespace mariposa::testing
