// Several data centers (issue 52, point 1), as an operator sees them: two
// mariposads on loopback, each --datacenter with the other as --peers and a
// token made by the other. `mariposa datacenters` shows each reachable;
// a peer that stops is shown unreachable (exit 1, `admin status` names it,
// /metrics says 0) and reachable again soon after it is back; a token the
// peer refuses and a peer that is another data center say so.
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

class DataCentersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("dcs");
    east_addr_ = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
    west_addr_ = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
    // Each makes the token the other presents to it.
    east_token_ = MakeToken("east", east_addr_, "peer-west");
    west_token_ = MakeToken("west", west_addr_, "peer-east");
  }
  // Starts mariposad NAME alone, makes a viewer token, stops it; the token's file.
  std::string MakeToken(const std::string& name, const std::string& addr, const std::string& token_name) {
    auto d = Start(name, addr, {});
    RunResult made = Cli(addr, {"admin", "token", "create", "--name", token_name, "--role", "viewer", "--all-projects"});
    EXPECT_EQ(made.exit_code, 0) << made.out << made.err;
    size_t at = made.out.find("mpt_");
    std::string file = dir_ + "/" + name + "-" + token_name + ".token";
    std::ofstream(file) << (at == std::string::npos ? "" : made.out.substr(at, made.out.find_first_of(" \n", at) - at))
                        << "\n";
    return file;
  }
  std::unique_ptr<ServerProcess> Start(const std::string& name, const std::string& addr,
                                       std::vector<std::string> extra) {
    std::vector<std::string> argv = {"daemon/mariposad", "--listen", addr, "--data-dir", dir_ + "/" + name,
                                     "--metrics-listen", "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto d = std::make_unique<ServerProcess>(argv, dir_ + "/" + name);
    EXPECT_TRUE(d->Start()) << d->log();
    return d;
  }
  std::unique_ptr<ServerProcess> East(const std::string& peers, const std::string& token_file) {
    return Start("east", east_addr_,
                 {"--datacenter", "us-east-1", "--peers", peers, "--peer-tokens", "us-west-1=" + token_file,
                  "--peer-interval", "1s"});
  }
  std::unique_ptr<ServerProcess> West() {
    return Start("west", west_addr_,
                 {"--datacenter", "us-west-1", "--peers", "us-east-1=" + east_addr_, "--peer-tokens",
                  "us-east-1=" + east_token_, "--peer-interval", "1s"});
  }
  json Peers(const std::string& addr) {
    RunResult r = Cli(addr, {"-o", "json", "datacenters"});
    return r.out.empty() ? json::object() : json::parse(r.out);
  }
  bool Reachable(const std::string& addr, const std::string& peer) {
    for (const json& p : Peers(addr).value("peers", json::array())) {
      if (p.value("name", "") == peer) return p.value("reachable", false);
    }
    return false;
  }
  std::string Metrics(const ServerProcess& d) {
    httplib::Client c(d.extra_addrs().at(0));
    auto r = c.Get("/metrics");
    return r ? r->body : "";
  }

  std::string dir_, east_addr_, west_addr_, east_token_, west_token_;
};

TEST_F(DataCentersTest, EachSeesTheOtherLosesItAndFindsItAgain) {
  auto east = East("us-west-1=" + west_addr_, west_token_);
  auto west = West();
  ASSERT_TRUE(Eventually([&] { return Reachable(east_addr_, "us-west-1") && Reachable(west_addr_, "us-east-1"); },
                         absl::Seconds(10)))
      << Cli(east_addr_, {"datacenters"}).out << Cli(west_addr_, {"datacenters"}).out << east->log();
  RunResult shown = Cli(east_addr_, {"datacenters"});
  EXPECT_EQ(shown.exit_code, 0) << shown.out;
  EXPECT_TRUE(absl::StrContains(shown.out, "this data center: us-east-1")) << shown.out;
  EXPECT_TRUE(absl::StrContains(shown.out, "us-west-1")) << shown.out;
  EXPECT_TRUE(absl::StrContains(shown.out, "reachable")) << shown.out;
  EXPECT_TRUE(absl::StrContains(Cli(east_addr_, {"admin", "status"}).out, "datacenter: us-east-1"));
  std::string m = Metrics(*east);
  EXPECT_TRUE(absl::StrContains(m, "mariposa_datacenter_peer_up{peer=\"us-west-1\",datacenter=\"us-east-1\"} 1")) << m;
  // Every metric carries its data center (issue 52, point 5), so two data
  // centers' series stay apart in one Prometheus.
  int lines = 0, labelled = 0;
  for (absl::string_view line : absl::StrSplit(m, '\n')) {
    // The exposer library's own two counters are its, not mariposad's.
    if (line.empty() || line[0] == '#' || absl::StartsWith(line, "exposer_")) continue;
    ++lines;
    if (absl::StrContains(line, "datacenter=\"us-east-1\"")) ++labelled;
  }
  EXPECT_GT(lines, 20);
  EXPECT_EQ(labelled, lines) << m;

  // West goes away: east says so, with why, and goes on.
  west->Kill();
  ASSERT_TRUE(Eventually([&] { return !Reachable(east_addr_, "us-west-1"); }, absl::Seconds(10)));
  shown = Cli(east_addr_, {"datacenters"});
  EXPECT_EQ(shown.exit_code, 1) << shown.out;
  EXPECT_TRUE(absl::StrContains(shown.out, "unreachable")) << shown.out;
  EXPECT_TRUE(absl::StrContains(shown.out, "Error:  data center us-west-1 does not answer")) << shown.out;
  EXPECT_TRUE(absl::StrContains(shown.out, "is mariposad running in us-west-1")) << shown.out;
  EXPECT_TRUE(absl::StrContains(shown.out, "what is known of it is as of its last answer")) << shown.out;
  RunResult status = Cli(east_addr_, {"admin", "status"});
  EXPECT_TRUE(absl::StrContains(status.out + status.err, "data center us-west-1 (" + west_addr_ + ") does not answer"))
      << status.out << status.err;
  EXPECT_TRUE(absl::StrContains(Metrics(*east), "mariposa_datacenter_peer_up{peer=\"us-west-1\",datacenter=\"us-east-1\"} 0"));
  EXPECT_TRUE(absl::StrContains(Metrics(*east),
                                "mariposa_datacenter_peer_last_answer_seconds{peer=\"us-west-1\",datacenter=\"us-east-1\"}"));

  // Back: seen at the next questions, not after a reconnect backoff.
  west = West();
  EXPECT_TRUE(Eventually([&] { return Reachable(east_addr_, "us-west-1"); }, absl::Seconds(5)))
      << Cli(east_addr_, {"datacenters"}).out;
}

TEST_F(DataCentersTest, ARefusedTokenAndAnotherDataCenterSaySo) {
  auto west = West();
  // A token west never issued.
  std::string bad = dir_ + "/bad.token";
  std::ofstream(bad) << "mpt_0000000000000000000000000000000000000000\n";
  auto east = East("us-west-1=" + west_addr_, bad);
  ASSERT_TRUE(Eventually([&] { return Peers(east_addr_).value("peers", json::array()).size() == 1 &&
                                      Peers(east_addr_)["peers"][0].value("asked", false); },
                         absl::Seconds(10)));
  RunResult shown = Cli(east_addr_, {"datacenters"});
  EXPECT_EQ(shown.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(shown.out, "UNAUTHENTICATED")) << shown.out;
  EXPECT_TRUE(absl::StrContains(shown.out, "--peer-tokens us-west-1=FILE")) << shown.out;
  east->Stop();
  // West's address under another name: it answers as us-west-1.
  east = Start("east", east_addr_,
               {"--datacenter", "us-east-1", "--peers", "eu-central-1=" + west_addr_, "--peer-tokens",
                "eu-central-1=" + west_token_, "--peer-interval", "1s"});
  ASSERT_TRUE(Eventually([&] { return absl::StrContains(Cli(east_addr_, {"datacenters"}).out, "is data center"); },
                         absl::Seconds(10)));
  shown = Cli(east_addr_, {"datacenters"});
  EXPECT_TRUE(absl::StrContains(shown.out, "is data center \"us-west-1\", not eu-central-1")) << shown.out;
  // A bad flag is refused at start, saying which.
  RunResult refused = RunProcess({"daemon/mariposad", "--data-dir", dir_ + "/x", "--peers", "us-west-1=" + west_addr_});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(refused.err, "--peers needs --datacenter")) << refused.err;
}

// A project copied from one data center into another: made there by its
// mariposad, against its own Triton, with the meta and the secrets.
TEST_F(DataCentersTest, ACopyIsMadeInAnotherDataCenter) {
  std::vector<std::string> sim_args = {"--servers", "2", "--seed", "deploy/examples/tritonsim-seed.json",
                                       "--job-latency", "20"};
  Tritonsim east_sim(sim_args), west_sim(sim_args);
  ASSERT_TRUE(east_sim.Start()) << east_sim.log();
  ASSERT_TRUE(west_sim.Start()) << west_sim.log();
  const std::vector<std::string> triton = {"--owner", "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                                           "aaaaaaaa-0000-4000-8000-000000000001", "--resync", "300ms"};
  // West lets east make projects there: a deployer token.
  std::string deployer;
  {
    auto w = Start("west", west_addr_, {});
    RunResult made = Cli(west_addr_, {"admin", "token", "create", "--name", "peer-east-deployer", "--role",
                                      "deployer", "--all-projects"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    size_t at = made.out.find("mpt_");
    deployer = dir_ + "/deployer.token";
    std::ofstream(deployer) << made.out.substr(at, made.out.find_first_of(" \n", at) - at) << "\n";
  }
  std::vector<std::string> e = {"--datacenter", "us-east-1", "--peers", "us-west-1=" + west_addr_, "--peer-tokens",
                                "us-west-1=" + deployer, "--peer-interval", "1s", "--triton", east_sim.addr()};
  e.insert(e.end(), triton.begin(), triton.end());
  auto east = Start("east", east_addr_, e);
  std::vector<std::string> w = {"--datacenter", "us-west-1", "--triton", west_sim.addr()};
  w.insert(w.end(), triton.begin(), triton.end());
  auto west = Start("west", west_addr_, w);
  std::string manifest = dir_ + "/shop.yaml";
  std::ofstream(manifest) << "project: shop\nservices:\n  web:\n    image: autopilotpattern/nginx@1.4.0\n"
                             "    package: g4-highcpu-512M\n    count: 2\n    start: {window: 1s}\n"
                             "    environment: {DB: \"{{ .meta.dbhost }}\"}\n";
  ASSERT_EQ(Cli(east_addr_, {"project", "create", "shop"}).exit_code, 0);
  ASSERT_EQ(Cli(east_addr_, {"-j", "shop", "meta", "set", "dbhost", "db.east"}).exit_code, 0);
  ASSERT_EQ(Cli(east_addr_, {"-j", "shop", "meta", "set", "--secret", "dbpass", "-"}, "hunter2").exit_code, 0);
  RunResult applied = Cli(east_addr_, {"apply", "--yes", "-f", manifest, "--wait", "--timeout", "60s"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;

  RunResult plan = Cli(east_addr_, {"project", "copy", "shop", "shop", "--datacenter", "us-west-1", "--dry-run"});
  ASSERT_EQ(plan.exit_code, 0) << plan.out << plan.err;
  EXPECT_NE(Cli(west_addr_, {"project", "get", "shop"}).exit_code, 0) << "a dry run makes nothing there";
  RunResult copied = Cli(east_addr_, {"project", "copy", "shop", "shop", "--datacenter", "us-west-1", "--set",
                                      "services.web.count=1", "--meta", "dbhost=db.west"});
  ASSERT_EQ(copied.exit_code, 0) << copied.out << copied.err << east->log() << west->log();
  EXPECT_TRUE(absl::StrContains(copied.out, "copied project shop version 1 to shop in data center us-west-1"))
      << copied.out;
  EXPECT_TRUE(absl::StrContains(copied.out, "mariposa --addr " + west_addr_ + " -j shop status")) << copied.out;
  EXPECT_TRUE(Eventually(
      [&] { return absl::StrContains(Cli(west_addr_, {"-j", "shop", "status"}).out, "project shop at version 1: converged"); },
      absl::Seconds(30)))
      << Cli(west_addr_, {"-j", "shop", "status"}).out;
  EXPECT_EQ(RunningPerService(west_sim.addr())["web"], 1);
  EXPECT_EQ(RunningPerService(east_sim.addr())["web"], 2) << "the source is untouched";
  RunResult meta = Cli(west_addr_, {"-j", "shop", "meta", "list"});
  EXPECT_TRUE(absl::StrContains(meta.out, "db.west")) << meta.out;
  EXPECT_TRUE(absl::StrContains(meta.out, "<secret>")) << meta.out;
  RunResult events = Cli(west_addr_, {"-j", "shop", "events", "--all"});
  EXPECT_TRUE(absl::StrContains(events.out, "copied from shop version 1 in us-east-1")) << events.out;

  // Not a peer; and a peer that is down: refused, nothing made.
  RunResult nope = Cli(east_addr_, {"project", "copy", "shop", "shop2", "--datacenter", "eu-1"});
  EXPECT_NE(nope.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(nope.err, "eu-1 is not a peer of data center us-east-1")) << nope.err;
  west->Kill();
  RunResult down = Cli(east_addr_, {"project", "copy", "shop", "shop2", "--datacenter", "us-west-1"});
  EXPECT_NE(down.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(down.err, "is mariposad running in us-west-1")) << down.err;
}

}  // namespace
}  // namespace mariposa::testing
