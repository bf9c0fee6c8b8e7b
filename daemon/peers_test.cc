#include "daemon/peers.h"

#include "gtest/gtest.h"

namespace mariposa {
namespace {

TEST(ParsePeersTest, PeersAndTheirTokens) {
  auto p = ParsePeers("us-east-1", "us-west-1=mw.example.com:7740, eu-1=[::1]:7741",
                      "eu-1=/etc/mariposa/eu-1.token");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[0].name, "us-west-1");
  EXPECT_EQ((*p)[0].address, "mw.example.com:7740");
  EXPECT_EQ((*p)[0].token_file, "");
  EXPECT_EQ((*p)[1].address, "[::1]:7741");
  EXPECT_EQ((*p)[1].token_file, "/etc/mariposa/eu-1.token");
  EXPECT_TRUE(ParsePeers("", "", "")->empty()) << "no peers, no data center: one data center";
  EXPECT_TRUE(ParsePeers("us-east-1", "", "")->empty());
}

TEST(ParsePeersTest, RefusalsSayWhichFlagAndHowToFix) {
  struct Row {
    const char* self;
    const char* peers;
    const char* tokens;
    const char* says;
  };
  const std::vector<Row> rows = {
      {"", "b=h:1", "", "--peers needs --datacenter"},
      {"a", "b", "", "is not NAME=VALUE"},
      {"a", "=h:1", "", "is not NAME=VALUE"},
      {"a", "B=h:1", "", "not a data center name"},
      {"a", "b-=h:1", "", "not a data center name"},
      {"a", "a=h:1", "", "this data center"},
      {"a", "b=h:1,b=h:2", "", "twice"},
      {"a", "b=h", "", "HOST:PORT"},
      {"a", "b=https://h:1", "", "HOST:PORT"},
      {"a", "b=h:1", "c=/t", "which --peers does not list"},
      {"a", "b=h:1", "b=/t,b=/u", "twice"},
      {"a", "b=h:1", "b", "--peer-tokens"},
  };
  for (const Row& r : rows) {
    auto p = ParsePeers(r.self, r.peers, r.tokens);
    ASSERT_FALSE(p.ok()) << r.peers << " " << r.tokens;
    EXPECT_NE(p.status().message().find(r.says), std::string::npos) << r.peers << ": " << p.status().message();
  }
  EXPECT_TRUE(CheckDataCenterName("--datacenter", "us-east-1").ok());
  EXPECT_FALSE(CheckDataCenterName("--datacenter", "").ok());
  EXPECT_FALSE(CheckDataCenterName("--datacenter", std::string(64, 'a')).ok());
  EXPECT_FALSE(CheckDataCenterName("--datacenter", "us_east").ok());
}

TEST(ObservePeerTest, AnswersMakeItReachableOrSayWhyNot) {
  const absl::Time t0 = absl::FromUnixSeconds(1800000000);
  PeerView v;
  v.name = "us-west-1";
  v.address = "h:1";
  struct Row {
    const char* name;
    PeerAnswer answer;
    bool reachable;
    const char* says;  // in the error ("" none)
  };
  const std::vector<Row> rows = {
      {"a good answer", {absl::OkStatus(), "us-west-1", "1.2", "active", absl::Milliseconds(3)}, true, ""},
      {"another data center", {absl::OkStatus(), "eu-1", "1.2", "active", absl::Milliseconds(3)}, false,
       "is data center \"eu-1\", not us-west-1"},
      {"no data center there", {absl::OkStatus(), "", "1.2", "active", absl::Milliseconds(3)}, false,
       "runs without --datacenter"},
      {"down", {absl::UnavailableError("connection refused"), "", "", "", absl::Milliseconds(1)}, false,
       "is mariposad running in us-west-1"},
      {"slow", {absl::DeadlineExceededError("deadline"), "", "", "", absl::Seconds(3)}, false, "the link"},
      {"no token", {absl::UnauthenticatedError("no credential"), "", "", "", absl::Milliseconds(1)}, false,
       "--peer-tokens us-west-1=FILE"},
      {"a token without the role", {absl::PermissionDeniedError("viewer needed"), "", "", "", absl::Milliseconds(1)},
       false, "lacks the viewer role"},
  };
  for (const Row& r : rows) {
    PeerView after = ObservePeer(v, r.answer, t0);
    EXPECT_EQ(after.reachable, r.reachable) << r.name;
    EXPECT_TRUE(after.asked) << r.name;
    EXPECT_EQ(after.checked_at, t0) << r.name;
    EXPECT_NE(after.error.find(r.says), std::string::npos) << r.name << ": " << after.error;
    if (r.reachable) {
      EXPECT_EQ(after.last_ok, t0);
      EXPECT_EQ(after.failures, 0);
      EXPECT_EQ(after.version, "1.2");
    } else {
      EXPECT_EQ(after.last_ok, absl::InfinitePast()) << r.name << ": never answered well";
      EXPECT_EQ(after.failures, 1) << r.name;
    }
  }
  // A peer that went away keeps its last good answer's time; failures count up.
  PeerView up = ObservePeer(v, rows[0].answer, t0);
  PeerView down = ObservePeer(up, rows[3].answer, t0 + absl::Seconds(5));
  down = ObservePeer(down, rows[3].answer, t0 + absl::Seconds(10));
  EXPECT_FALSE(down.reachable);
  EXPECT_EQ(down.last_ok, t0);
  EXPECT_EQ(down.failures, 2);
  EXPECT_EQ(down.version, "1.2") << "what was last known stays";
  PeerView back = ObservePeer(down, rows[0].answer, t0 + absl::Seconds(15));
  EXPECT_TRUE(back.reachable);
  EXPECT_EQ(back.failures, 0);
  EXPECT_EQ(back.error, "");
}

}  // namespace
}  // namespace mariposa
