// mariposad watches VMAPI's change feed (issue 34): against tritonsim with
// each API on its own port, a destroyed instance is replaced at once although
// --resync is a minute (only the feed can have told it); a dropped feed is
// shown as polling in status, events and /metrics, then watched again; a
// VMAPI without the feed (tritonsim --no-changefeed) is polled, visibly, and
// the project still converges and heals.
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;

class WatchTest : public ::testing::Test {
 protected:
  void StartSim(std::vector<std::string> extra) {
    dir_ = TempDir("watch");
    std::vector<std::string> args = {"--api-ports", "--servers", "5", "--seed", "deploy/examples/tritonsim-seed.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    sim_ = std::make_unique<Tritonsim>(args);
    ASSERT_TRUE(sim_->Start()) << sim_->log();
    for (const std::string& line : sim_->extra_addrs()) {
      size_t eq = line.find('=');
      if (eq != std::string::npos) api_[line.substr(0, eq)] = line.substr(eq + 1);
    }
    ASSERT_EQ(api_.size(), 9u);  // every API mariposad calls, VOLAPI and mahi included
  }
  std::unique_ptr<ServerProcess> Mariposad(const std::string& resync, const std::string& relist = "5m") {
    std::vector<std::string> argv = {"daemon/mariposad", "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/d",
                                     "--owner", "930896af-bf8c-48d4-885c-6573a94b1853", "--network",
                                     "aaaaaaaa-0000-4000-8000-000000000001", "--resync", resync,
                                     "--relist", relist, "--metrics-listen", "127.0.0.1:0"};
    for (const auto& [api, url] : api_) {
      argv.push_back("--" + api);
      argv.push_back(url);
    }
    auto d = std::make_unique<ServerProcess>(argv, dir_ + "/d");
    EXPECT_TRUE(d->Start()) << d->log();
    return d;
  }
  std::string StatusText(const std::string& addr) {
    RunResult r = Cli(addr, {"-j", "jupiter", "status"});
    return r.out + r.err;
  }
  bool Converged(const std::string& addr) {
    return absl::StrContains(StatusText(addr), "project jupiter at version 1: converged");
  }
  std::set<std::string> Active(const std::string& service) {
    httplib::Client c(api_["vmapi"]);
    auto r = c.Get(("/vms?state=active&tag.mariposa.service=" + service).c_str());
    std::set<std::string> out;
    if (!r || r->status != 200) return out;
    for (const json& vm : json::parse(r->body)) out.insert(vm["uuid"].get<std::string>());
    return out;
  }
  int64_t Calls(const std::string& op) {
    httplib::Client c(sim_->addr());
    auto r = c.Get("/_sim/stats");
    return r ? json::parse(r->body)["calls"].value(op, int64_t{0}) : -1;
  }
  std::string Metrics(const ServerProcess& d) {
    httplib::Client c(d.extra_addrs().at(0));
    auto r = c.Get("/metrics");
    return r ? r->body : "";
  }
  RunResult Ctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv);
  }

  std::string dir_;
  std::unique_ptr<Tritonsim> sim_;
  std::map<std::string, std::string> api_;
};

TEST_F(WatchTest, ADestroyedInstanceIsReplacedFromTheFeedNotTheResync) {
  StartSim({});
  auto d = Mariposad("60s");
  ASSERT_EQ(Cli(d->addr(), {"apply", "--yes", "-f", "deploy/examples/jupiter.yaml"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Converged(d->addr()); }, absl::Seconds(30))) << d->log();
  ASSERT_TRUE(Eventually([&] { return absl::StrContains(StatusText(d->addr()), "watching VMAPI's change feed since"); },
                         absl::Seconds(10)))
      << StatusText(d->addr());
  EXPECT_TRUE(absl::StrContains(Metrics(*d), "mariposa_vmapi_feed_watching 1")) << Metrics(*d);

  // Idle: no listing while watching (the next full one is --relist away).
  int64_t listed = Calls("ListVms");
  Pause(absl::Seconds(2));
  EXPECT_EQ(Calls("ListVms"), listed) << "a watching mariposad listed VMAPI while nothing changed";

  std::set<std::string> before = Active("wordpress");
  ASSERT_EQ(before.size(), 3u);
  ASSERT_EQ(Ctl({"destroy-vm", *before.begin()}).exit_code, 0);
  // --resync is 60s: only the feed can bring the replacement this soon.
  EXPECT_TRUE(Eventually(
      [&] {
        std::set<std::string> now = Active("wordpress");
        return now.size() == 3 && !now.count(*before.begin());
      },
      absl::Seconds(5)))
      << d->log();
  EXPECT_TRUE(Eventually([&] { return Converged(d->addr()); }, absl::Seconds(15))) << StatusText(d->addr());
}

// Issue 49: a scale while watching does not read each new VM again after
// its create job (before, every create cost a GetVm, which made watching
// slower than polling for a mass scale). A job's end and its VM's item race
// (the item is read by uuid once it arrives): the VMs whose item had not
// come yet are read together, a ListVms by uuid, not one GetVm each.
TEST_F(WatchTest, AScaleIsNotReadAgainVmByVm) {
  StartSim({});
  auto d = Mariposad("60s");
  ASSERT_EQ(Cli(d->addr(), {"apply", "--yes", "-f", "deploy/examples/jupiter.yaml"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Converged(d->addr()); }, absl::Seconds(30))) << d->log();
  // The premise is a scale while watching: a feed still connecting (its
  // backoff on a busy machine) would make every sync a listing, rightly.
  ASSERT_TRUE(Eventually([&] { return absl::StrContains(StatusText(d->addr()), "watching VMAPI's change feed since"); },
                         absl::Seconds(15)))
      << StatusText(d->addr()) << d->log();
  int64_t reads = Calls("GetVm"), lists = Calls("ListVms"), creates = Calls("CreateVm"), asked = Calls("GetJob"),
          actions = Calls("VmAction");
  RunResult scaled = Cli(d->addr(), {"--timeout", "60s", "-j", "jupiter", "scale", "wordpress=+20", "--wait"});
  ASSERT_EQ(scaled.exit_code, 0) << scaled.out << scaled.err << d->log();
  EXPECT_EQ(Active("wordpress").size(), 23u);
  int64_t created = Calls("CreateVm") - creates;
  EXPECT_GE(created, 20);
  // No VM is read by itself; every listing (the feed's reads of its items'
  // VMs and the ended jobs' VMs, each by uuid) together stays well under one
  // per create.
  EXPECT_EQ(Calls("GetVm") - reads, 0) << StatusText(d->addr()) << Metrics(*d) << d->log();
  EXPECT_LT(Calls("ListVms") - lists, created)
      << "listings per create while watching (" << created << " creates)\n"
      << StatusText(d->addr()) << Metrics(*d) << d->log();
  // A create whose VM the feed showed running is not asked about (one
  // GetJob each before); the instances' discovery jobs (VmAction: CNS's
  // status tag once ready) are.
  const int64_t discovery = Calls("VmAction") - actions;
  EXPECT_LT(Calls("GetJob") - asked, discovery + created / 2)
      << "job polls while watching (" << created << " creates, " << discovery << " discovery jobs)\n"
      << StatusText(d->addr()) << Metrics(*d) << d->log();
}

// Watching, a converged project with nothing to do is not synced at each
// resync (it would decide over all its instances again for nothing): the
// resyncs are counted as quiet, status stays current, and a change (a
// destroyed VM in the feed, an apply) is acted on at once.
TEST_F(WatchTest, AQuietProjectIsNotSyncedAtEachResync) {
  StartSim({});
  auto d = Mariposad("300ms");
  ASSERT_EQ(Cli(d->addr(), {"apply", "--yes", "-f", "deploy/examples/jupiter.yaml"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Converged(d->addr()); }, absl::Seconds(30))) << d->log();
  auto count = [&](const std::string& outcome) {
    std::string m = Metrics(*d);
    std::string key = "mariposa_syncs_total{outcome=\"" + outcome + "\"} ";
    size_t at = m.find(key);
    return at == std::string::npos ? 0.0 : std::stod(m.substr(at + key.size()));
  };
  ASSERT_TRUE(Eventually([&] { return count("quiet") > 0; }, absl::Seconds(10))) << Metrics(*d);
  double synced = count("synced"), quiet = count("quiet");
  Pause(absl::Seconds(3));
  EXPECT_LE(count("synced") - synced, 1.0) << "a quiet project was synced at each 300ms resync";
  EXPECT_GE(count("quiet") - quiet, 5.0);
  std::string status = StatusText(d->addr());
  EXPECT_TRUE(absl::StrContains(status, "project jupiter at version 1: converged")) << status;
  EXPECT_TRUE(absl::StrContains(status, "actual state as read 0s ago") ||
              absl::StrContains(status, "actual state as read 0.") || absl::StrContains(status, "ms ago"))
      << "the watched listing is current: " << status;
  // A destroyed VM (a feed item) is replaced at once.
  std::set<std::string> before = Active("mysql");
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(Ctl({"destroy-vm", *before.begin()}).exit_code, 0);
  EXPECT_TRUE(Eventually(
      [&] {
        std::set<std::string> now = Active("mysql");
        return now.size() == 1 && !now.count(*before.begin());
      },
      absl::Seconds(5)));
}

TEST_F(WatchTest, ADroppedFeedIsShownAsPollingThenWatchedAgain) {
  StartSim({});
  auto d = Mariposad("1s");
  ASSERT_EQ(Cli(d->addr(), {"apply", "--yes", "-f", "deploy/examples/jupiter.yaml"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Converged(d->addr()); }, absl::Seconds(30))) << d->log();
  ASSERT_TRUE(Eventually([&] { return absl::StrContains(StatusText(d->addr()), "watching VMAPI's change feed"); },
                         absl::Seconds(10)));
  // VMAPI loses its feed (an older VMAPI is deployed): polling, said everywhere.
  ASSERT_EQ(Ctl({"changefeed", "off"}).exit_code, 0);
  EXPECT_TRUE(Eventually(
      [&] {
        return absl::StrContains(StatusText(d->addr()),
                                 "polling VMAPI: every sync lists it (the change feed is not watched: VMAPI at " +
                                     api_["vmapi"] + " has no change feed (GET /changefeeds answered 404))");
      },
      absl::Seconds(10)))
      << StatusText(d->addr());
  EXPECT_TRUE(absl::StrContains(Metrics(*d), "mariposa_vmapi_feed_watching 0"));
  RunResult events = Cli(d->addr(), {"-j", "jupiter", "events"});
  EXPECT_TRUE(absl::StrContains(events.out, "feed.polling")) << events.out;
  // Polling still heals: a destroyed instance is replaced by the next syncs.
  std::set<std::string> before = Active("nginx");
  ASSERT_FALSE(before.empty());
  ASSERT_EQ(Ctl({"destroy-vm", *before.begin()}).exit_code, 0);
  EXPECT_TRUE(Eventually(
      [&] {
        std::set<std::string> now = Active("nginx");
        return now.size() == before.size() && !now.count(*before.begin());
      },
      absl::Seconds(15)));
  // The feed comes back: dropped listeners reconnect (1s backoff, doubling).
  ASSERT_EQ(Ctl({"changefeed", "on"}).exit_code, 0);
  ASSERT_EQ(Ctl({"changefeed", "drop"}).exit_code, 0);
  // A missing feed is asked for again every minute; restart to not wait.
  d.reset();
  auto again = Mariposad("1s");
  EXPECT_TRUE(Eventually([&] { return absl::StrContains(StatusText(again->addr()), "watching VMAPI's change feed"); },
                         absl::Seconds(10)))
      << StatusText(again->addr());
  // A drop while watching: polling for a moment, watching again after the backoff.
  ASSERT_EQ(Ctl({"changefeed", "drop"}).exit_code, 0);
  EXPECT_TRUE(Eventually(
      [&] {
        RunResult ev = Cli(again->addr(), {"-j", "jupiter", "events"});
        return absl::StrContains(ev.out, "VMAPI ended the feed: publisher going away") &&
               absl::StrContains(Metrics(*again), "mariposa_vmapi_feed_drops_total 1") &&
               absl::StrContains(StatusText(again->addr()), "watching VMAPI's change feed");
      },
      absl::Seconds(15)))
      << StatusText(again->addr()) << Metrics(*again);
  EXPECT_TRUE(Eventually([&] { return Converged(again->addr()); }, absl::Seconds(15)));
}

// Items can be lost (a publisher restart, a bug): the full listing every
// --relist, read beside the syncs, still finds what they missed.
TEST_F(WatchTest, TheRelistFindsWhatALostItemHid) {
  StartSim({});
  auto d = Mariposad("1s", "3s");
  ASSERT_EQ(Cli(d->addr(), {"apply", "--yes", "-f", "deploy/examples/jupiter.yaml"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Converged(d->addr()); }, absl::Seconds(30))) << d->log();
  ASSERT_TRUE(Eventually([&] { return absl::StrContains(StatusText(d->addr()), "watching VMAPI's change feed"); },
                         absl::Seconds(10)));
  std::set<std::string> before = Active("wordpress");
  ASSERT_EQ(before.size(), 3u);
  ASSERT_EQ(Ctl({"changefeed", "skip", "1000"}).exit_code, 0);  // every change from now on is lost
  ASSERT_EQ(Ctl({"destroy-vm", *before.begin()}).exit_code, 0);
  EXPECT_TRUE(Eventually(
      [&] {
        std::set<std::string> now = Active("wordpress");
        return now.size() == 3 && !now.count(*before.begin());
      },
      absl::Seconds(20)))
      << d->log();
  EXPECT_TRUE(absl::StrContains(StatusText(d->addr()), "watching VMAPI's change feed"))
      << "the feed stayed up: the listing, not a fallback to polling, found it";
}

TEST_F(WatchTest, AVmapiWithoutTheFeedIsPolledAndSaysSo) {
  StartSim({"--no-changefeed"});
  auto d = Mariposad("1s");
  ASSERT_EQ(Cli(d->addr(), {"apply", "--yes", "-f", "deploy/examples/jupiter.yaml"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Converged(d->addr()); }, absl::Seconds(30))) << d->log();
  EXPECT_TRUE(absl::StrContains(StatusText(d->addr()), "has no change feed (GET /changefeeds answered 404)"))
      << StatusText(d->addr());
  int64_t listed = Calls("ListVms");
  Pause(absl::Seconds(2));
  EXPECT_GT(Calls("ListVms"), listed) << "polling lists VMAPI at each sync";
}

}  // namespace
}  // namespace mariposa::testing
