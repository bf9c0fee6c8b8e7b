#include "daemon/config.h"

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"

namespace mariposa {
namespace {

std::vector<std::string> Args(const std::string& line) {
  return absl::StrSplit(line, ' ', absl::SkipEmpty());
}

absl::StatusOr<DaemonConfig> Check(const std::string& line) {
  auto f = ParseDaemonArgs(Args(line));
  if (!f.ok()) return f.status();
  return CheckDaemonFlags(*f, {}, "host1");
}

constexpr char kTriton[] =
    "--triton http://127.0.0.1:8580 --owner 930896af-bf8c-48d4-885c-6573a94b1853 "
    "--network aaaaaaaa-0000-4000-8000-000000000001 ";

TEST(DaemonConfig, RefusedWithWhatAndHowToFix) {
  struct Case {
    std::string args;
    const char* error;
  } cases[] = {
      {"--bogus", "unknown argument \"--bogus\""},
      {"--init=yes", "unknown argument \"--init=yes\""},
      {"--resync", "--resync needs a value (DURATION)"},
      {"--resync 0s", "--resync \"0s\" is not a duration (e.g. 5s)"},
      {"--health-loopback", "need --triton"},
      {std::string(kTriton) + "--health-lease 100ms", "--health-lease \"100ms\" is not a duration of at least 300ms"},
      {"--max-jobs 0", "--max-jobs \"0\" must be a number of at least 1"},
      {"--max-jobs-per-project x", "--max-jobs-per-project \"x\" must be a number of at least 1"},
      {"--parallel-syncs 0", "--parallel-syncs \"0\" must be a number from 1 to 256"},
      {"--parallel-syncs 1000", "--parallel-syncs \"1000\" must be a number from 1 to 256"},
      {"--image-source http://u", "--image-source needs --triton"},
      {"--backoff-cap 10ms", "--backoff-cap \"10ms\" is not a duration of at least 1s"},
      {"--watch yes", "--watch \"yes\" must be on or off"},
      {"--datacenter US", "--datacenter: \"US\" is not a data center name"},
      {"--peers b=h:1", "--peers needs --datacenter"},
      {"--datacenter a --peers b=h:1 --peer-interval 10ms", "--peer-interval \"10ms\" is not a duration from 1s"},
      {"--datacenter a --peers b=h:1 --peer-cert c.pem", "--peer-cert and --peer-key go together"},
      {"--datacenter a --peer-ca ca.pem", "--peer-ca and --peer-cert are for --peers"},
      {"--relist 500ms", "--relist \"500ms\" is not a duration of at least 1s"},
      {"--audit 500ms", "--audit \"500ms\" is not 0 or a duration of at least 1s"},
      {"--triton http://127.0.0.1:8580", "--triton needs --owner UUID and --network UUID"},
      {"--max-health-agents 0", "--max-health-agents \"0\" must be a number of at least 1"},
      {"--tls-cert c.pem", "--tls-cert and --tls-key go together"},
      {"--tls-client-ca ca.pem", "--tls-client-ca needs --tls-cert and --tls-key"},
      {"--listen 10.0.0.1:7740", "is not a loopback address and there is no TLS"},
      {"--backup-interval 10ms", "--backup-interval \"10ms\" is not a duration of at least 1s, or 0 for none"},
      {"--backup-keep 0", "--backup-keep \"0\" must be a number of at least 1"},
      {"--on-init-failure retry", "--on-init-failure \"retry\" must be exit or serve"},
      {"--standby-listen 127.0.0.1:0", "--standby-listen needs --standby"},
      {"--admin-owner nope", "--admin-owner \"nope\" is not a uuid"},
      {"--store mysql://x", "--store must be a PostgreSQL URI"},
      {"--lease-ttl 1s", "--lease-ttl \"1s\" is not a duration of at least 2s"},
      {"--advertise host", "--advertise \"host\" is not HOST:PORT"},
      {"--vmapi http://v", "no address for cnapi, imgapi, napi, papi, wfapi"},
      {std::string(kTriton) + "--vmapi-connections 0", "--vmapi-connections \"0\" is not a number of connections"},
  };
  for (const Case& c : cases) {
    auto got = Check(c.args);
    ASSERT_FALSE(got.ok()) << c.args;
    EXPECT_TRUE(absl::StrContains(got.status().message(), c.error)) << c.args << ": " << got.status();
  }
}

TEST(DaemonConfig, DefaultsAndTypedValues) {
  auto d = Check("");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->resync, absl::Seconds(5));
  EXPECT_TRUE(d->watch);
  EXPECT_EQ(d->relist, absl::Minutes(5));
  EXPECT_EQ(d->lease_ttl, absl::Seconds(10));
  EXPECT_EQ(d->max_jobs, 64);
  EXPECT_EQ(d->max_jobs_per_project, 32);
  EXPECT_EQ(d->parallel_syncs, 16);
  EXPECT_EQ(d->flags.listen, "127.0.0.1:7740");
  EXPECT_EQ(d->flags.node_name, "host1") << "the host name is the default --node";
  EXPECT_TRUE(d->triton_url.empty());
  EXPECT_FALSE(d->postgres);

  auto t = Check(std::string(kTriton) +
                 "--resync=2s --watch off --relist 30s --max-jobs 8 --embedded-health --cnapi http://cnapi:80 --cnapi-timeout 30s "
                 "--store postgresql://m@db/m --node n1 --advertise n1.example.com:7740");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->resync, absl::Seconds(2));
  EXPECT_FALSE(t->watch);
  EXPECT_EQ(t->relist, absl::Seconds(30));
  EXPECT_EQ(t->max_jobs, 8);
  EXPECT_TRUE(t->flags.embedded_health);
  EXPECT_EQ(t->triton_url, "http://127.0.0.1:8580");
  EXPECT_EQ(t->endpoints.at("cnapi").url, "http://cnapi:80");
  EXPECT_EQ(t->endpoints.at("cnapi").timeout, absl::Seconds(30));
  EXPECT_TRUE(t->postgres);
  EXPECT_EQ(t->flags.node_name, "n1");
  EXPECT_EQ(t->flags.advertise, "n1.example.com:7740");
}

TEST(DaemonConfig, HelpIsWrittenFromTheTable) {
  std::string usage = DaemonUsage();
  for (const FlagSpec& s : DaemonFlagSpecs()) {
    if (!s.listed) continue;
    EXPECT_TRUE(absl::StrContains(usage, "--" + s.name)) << s.name << " is not in --help";
  }
  EXPECT_TRUE(absl::StrContains(usage, "  --tls-cert FILE, --tls-key FILE\n")) << usage;
  EXPECT_TRUE(absl::StrContains(usage, "  --listen ADDR     address to serve on")) << usage;
  for (absl::string_view line : absl::StrSplit(usage, '\n')) {
    // (the synopsis at the top is written by hand)
    if (!absl::StartsWith(line, "usage:") && !absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "[")) {
      EXPECT_LE(line.size(), 86u) << line;
    }
  }
  auto f = ParseDaemonArgs(Args("--listen 127.0.0.1:0 --help"));
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->help);
  // Every listed flag is read from the command line (and so from --config).
  for (const FlagSpec& s : DaemonFlagSpecs()) {
    if (!s.value && !s.on) continue;
    auto one = ParseDaemonArgs(s.on ? std::vector<std::string>{"--" + s.name}
                                    : std::vector<std::string>{"--" + s.name, "x"});
    EXPECT_TRUE(one.ok()) << s.name << ": " << one.status();
  }
}

}  // namespace
}  // namespace mariposa
