#include "convergence/memory_codec.h"

#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

absl::Time At(int64_t s) { return absl::FromUnixSeconds(1700000000 + s); }

// A memory with every field away from its default.
std::map<std::string, ServiceMemory> Full() {
  RestartPolicy p;
  p.max_attempts = 2;
  ServiceMemory web;
  web.spec_hash = "abc";
  web.history.Failure(p, At(1), 0.5);
  EXPECT_TRUE(web.history.Failure(p, At(2), 1.0)) << "two failures start a crash loop";
  web.history.Replaced(At(3));
  web.budget_event = At(4);
  web.pause_reason = "the instance exited";
  ServiceMemory agent;
  agent.spec_hash = "def";
  agent.install_image = "img-1";
  agent.install_failures = {{"cn1", "task failed"}};
  agent.install_attempts = {{"cn1", 2}};
  agent.install_times = {absl::Milliseconds(1500), absl::Seconds(3)};
  agent.install_retry = At(5);
  agent.reinstalled = {{"task-1", {"cn2", "cn3"}}};
  agent.import_error = "IMGAPI 503";
  agent.import_failures = 1;
  agent.import_retry = At(6);
  return {{"web", web}, {"agent", agent}};
}

TEST(MemoryCodec, RoundTripsEveryField) {
  auto m = Full();
  auto back = DecodeMemory(EncodeMemory(m));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  const ServiceMemory& web = back->at("web");
  EXPECT_EQ(web.spec_hash, "abc");
  EXPECT_TRUE(web.history.crashlooping());
  EXPECT_EQ(web.history.consecutive(), 2);
  EXPECT_EQ(web.history.last_failure(), At(2));
  EXPECT_EQ(web.history.next_attempt(), m["web"].history.next_attempt());
  EXPECT_EQ(web.history.state().backoff_steps, 2);
  EXPECT_EQ(web.history.state().replaced, std::deque<absl::Time>{At(3)});
  EXPECT_EQ(web.budget_event, At(4));
  EXPECT_EQ(web.pause_reason, "the instance exited");
  const ServiceMemory& agent = back->at("agent");
  EXPECT_EQ(agent.install_image, "img-1");
  EXPECT_EQ(agent.install_failures.at("cn1"), "task failed");
  EXPECT_EQ(agent.install_attempts.at("cn1"), 2);
  EXPECT_TRUE(agent.install_times.empty()) << "not kept: it refills";
  EXPECT_EQ(agent.install_retry, At(5));
  EXPECT_EQ(agent.reinstalled.at("task-1"), (std::set<std::string>{"cn2", "cn3"}));
  EXPECT_EQ(agent.import_error, "IMGAPI 503");
  EXPECT_EQ(agent.import_failures, 1);
  EXPECT_EQ(agent.import_retry, At(6));
  // Never (the infinite past) stays never.
  EXPECT_EQ(agent.history.next_attempt(), absl::InfinitePast());
  EXPECT_EQ(agent.budget_event, absl::InfinitePast());
  // The same memory, the same text.
  EXPECT_EQ(EncodeMemory(*back), EncodeMemory(m));
}

// A restored history behaves as the one it came from: still paused within
// the window, one attempt allowed again after it.
TEST(MemoryCodec, RestoredCrashLoopStaysPaused) {
  RestartPolicy p;
  p.max_attempts = 2;
  auto back = DecodeMemory(EncodeMemory(Full()));
  ASSERT_TRUE(back.ok());
  ServiceHistory& h = back->at("web").history;
  EXPECT_TRUE(h.Paused(p, At(30)));
  EXPECT_FALSE(h.Paused(p, At(2) + p.window));
  EXPECT_TRUE(h.EndPauseIfOver(p, At(2) + p.window));
}

TEST(MemoryCodec, EmptyIsEmpty) {
  auto back = DecodeMemory(EncodeMemory({}));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->empty());
}

// Changes sent to FWAPI, NAPI or VOLAPI whose events are not yet written
// come back whole; a memory without any keeps the text it had.
TEST(MemoryCodec, PendingChangesRoundTrip) {
  std::vector<PendingChange> pending = {
      {"fabric", "fabric.vlan-created vlan", EventRecord{0, At(5), "mariposad", "jupiter", "fabric.vlan-created", "", "VLAN 44"}},
      {"volumes", "volume.deleted data", EventRecord{0, At(6), "mariposad", "jupiter", "volume.deleted", "s", "data (x)"}}};
  std::string text = EncodeMemory(Full(), pending);
  std::vector<PendingChange> back;
  auto decoded = DecodeMemory(text, &back);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].api, pending[i].api);
    EXPECT_EQ(back[i].key, pending[i].key);
    EXPECT_EQ(back[i].done.time, pending[i].done.time);
    EXPECT_EQ(back[i].done.kind, pending[i].done.kind);
    EXPECT_EQ(back[i].done.subject, pending[i].done.subject);
    EXPECT_EQ(back[i].done.detail, pending[i].done.detail);
    EXPECT_EQ(back[i].done.project, "jupiter");
  }
  EXPECT_EQ(EncodeMemory(*decoded, back), text);
  EXPECT_EQ(EncodeMemory(Full(), {}), EncodeMemory(Full()));
  EXPECT_EQ(EncodeMemory(Full()).find("pending"), std::string::npos);
  // A reader that does not ask for them still reads the services.
  EXPECT_TRUE(DecodeMemory(text).ok());
}

TEST(MemoryCodec, RefusesWhatItCannotRead) {
  for (const char* bad : {"", "not json", "[]", R"({"v": 2, "services": {}})", R"({"services": {}})",
                          R"({"v": 1})", R"({"v": 1, "services": {"web": {"spec_hash": 3}}})",
                          R"({"v": 1, "services": {}, "pending": [{"api": "fabric"}]})"}) {
    std::vector<PendingChange> pending;
    auto got = DecodeMemory(bad, &pending);
    EXPECT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << bad;
  }
}

}  // namespace
}  // namespace mariposa::convergence
