// Several nodes writing one store at once (issue 49, point 3): on PostgreSQL
// writes of different projects do not wait for each other, writes of one
// project take turns, and event readers miss nothing and see nothing twice
// although event indexes may commit out of order (the horizon,
// common/sql.h). The flood runs on both backends.
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <random>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/sql.h"
#include "gtest/gtest.h"
#include "projects/sql_store.h"
#include "tests/store_backends.h"

namespace mariposa {
namespace {

using testing::Backend;

class ConcurrentWritersTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    auto spec = testing::NewStoreSpec(GetParam());
    ASSERT_TRUE(spec.ok()) << spec.status();
    spec_ = *spec;
  }
  bool postgres() const { return GetParam() == Backend::kPostgres; }
  std::unique_ptr<SqlProjectStore> Node() {
    auto s = SqlProjectStore::OpenSpec(spec_, RealClock::Get());
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  static NewVersion Version(const std::string& project, int n, int services) {
    NewVersion v;
    v.project_name = project;
    v.create_project = true;
    v.force = true;
    v.hash = absl::StrCat(project, "-", n);
    v.manifest = v.canonical = absl::StrCat("project: ", project, "\n# ", n, "\n");
    v.author = "test";
    for (int i = 0; i < services; ++i) {
      ServiceRecord s;
      s.name = absl::StrCat("s", i);
      s.spec_hash = absl::StrCat(n, "-", i);
      s.spec_json = "{}";
      v.services.push_back(s);
    }
    return v;
  }
  std::string spec_;
};

// Every event in the log, in index order.
std::vector<EventRecord> WholeLog(SqlProjectStore* store) {
  std::vector<EventRecord> out;
  int64_t after = 0;
  while (true) {
    auto page = store->ListEvents("", after, 1000);
    EXPECT_TRUE(page.ok()) << page.status();
    if (!page.ok() || page->empty()) return out;
    after = page->back().index;
    out.insert(out.end(), page->begin(), page->end());
  }
}

// 3 nodes write to 10 projects as fast as they can (versions, meta, event
// batches across projects) while 5 watchers read the log page by page and
// now and then resume from an index they saw (or 0). Each stretch a
// watcher read from index r must be exactly the log's events after r up
// to the last it got: none missed, none twice, in index order.
TEST_P(ConcurrentWritersTest, WatchersResumingFromAnyIndexSeeEveryEventOnceInOrder) {
  constexpr int kNodes = 3, kProjects = 10, kWatchers = 5;
  const int kRounds = postgres() ? 120 : 60;
  std::vector<std::unique_ptr<SqlProjectStore>> nodes;
  for (int i = 0; i < kNodes; ++i) nodes.push_back(Node());
  std::vector<std::string> uuids;
  for (int p = 0; p < kProjects; ++p) {
    auto made = nodes[0]->CommitVersion(Version(absl::StrCat("p", p), 0, 1));
    ASSERT_TRUE(made.ok()) << made.status();
    uuids.push_back(made->version.project_uuid);
  }
  // Two writers per node: on PostgreSQL a node's writes of jobs, task
  // progress and events commit at once on its pooled connections.
  constexpr int kWriters = 2 * kNodes;
  std::atomic<int> writers_left{kWriters};
  std::vector<std::thread> writers;
  std::atomic<int> failed_writes{0};
  for (int n = 0; n < kWriters; ++n) {
    writers.emplace_back([&, n] {
      std::mt19937 rng(1000 + n);
      SqlProjectStore* store = nodes[n % kNodes].get();
      for (int i = 0; i < kRounds; ++i) {
        int p = static_cast<int>(rng() % kProjects);
        absl::Status s;
        switch (rng() % 4) {
          case 3: {  // a job sent, then ended with its event
            JobRecord j;
            j.job_uuid = absl::StrCat("job-", n, "-", i);
            j.project_uuid = uuids[p];
            j.api = "vmapi";
            j.kind = "create";
            j.sent_at = absl::Now();
            s = store->RecordJobs({j});
            if (s.ok()) {
              s = store->FinishJobs({{j.job_uuid, TaskProgress{}}},
                                    {EventRecord{0, absl::Now(), "test", absl::StrCat("p", p), "test.job",
                                                 j.job_uuid, ""}});
            }
            break;
          }
          case 0:  // a version with a few services: a longer transaction
            s = store->CommitVersion(Version(absl::StrCat("p", p), 1000 * n + i + 1, 1 + rng() % 20)).status();
            break;
          case 1:
            s = store->SetMeta(uuids[p], absl::StrCat("k", rng() % 5), absl::StrCat(n, "-", i), false, std::nullopt,
                               "test")
                    .status();
            break;
          default: {
            std::vector<EventRecord> batch;
            for (int e = 0; e < 1 + static_cast<int>(rng() % 3); ++e) {
              batch.push_back(EventRecord{0, absl::Now(), "test", absl::StrCat("p", (p + e) % kProjects), "test.flood",
                                          absl::StrCat(n, "-", i, "-", e), ""});
            }
            s = store->AppendEvents(batch);
          }
        }
        if (!s.ok()) {
          ADD_FAILURE() << "node " << n << " write " << i << ": " << s;
          ++failed_writes;
        }
      }
      --writers_left;
    });
  }
  struct Stretch {
    int64_t from;
    std::vector<int64_t> got;
  };
  std::vector<std::vector<Stretch>> stretches(kWatchers);
  std::vector<std::thread> watchers;
  for (int w = 0; w < kWatchers; ++w) {
    watchers.emplace_back([&, w] {
      auto store = Node();
      if (store == nullptr) return;
      std::mt19937 rng(2000 + w);
      std::vector<int64_t> seen = {0};
      stretches[w].push_back(Stretch{0, {}});
      bool last_pass = false;
      while (true) {
        Stretch& cur = stretches[w].back();
        int64_t after = cur.got.empty() ? cur.from : cur.got.back();
        auto page = store->ListEvents("", after, 1 + static_cast<int>(rng() % 40));
        if (!page.ok()) {
          ADD_FAILURE() << "watcher " << w << ": " << page.status();
          return;
        }
        for (const EventRecord& e : *page) {
          cur.got.push_back(e.index);
          seen.push_back(e.index);
        }
        if (page->empty()) {
          if (last_pass) return;  // caught up after every writer ended
          if (writers_left.load() == 0) last_pass = true;
          std::this_thread::yield();
        }
        if (!last_pass && rng() % 8 == 0) stretches[w].push_back(Stretch{seen[rng() % seen.size()], {}});
      }
    });
  }
  for (auto& t : writers) t.join();
  for (auto& t : watchers) t.join();
  ASSERT_EQ(failed_writes.load(), 0);

  std::vector<EventRecord> log = WholeLog(nodes[0].get());
  ASSERT_GT(log.size(), static_cast<size_t>(kWriters * kRounds / 2));
  std::vector<int64_t> all;
  for (const EventRecord& e : log) all.push_back(e.index);
  int checked = 0;
  for (int w = 0; w < kWatchers; ++w) {
    ASSERT_FALSE(stretches[w].empty());
    for (const Stretch& s : stretches[w]) {
      if (s.got.empty()) continue;
      std::vector<int64_t> want;
      for (int64_t i : all) {
        if (i > s.from && i <= s.got.back()) want.push_back(i);
      }
      ASSERT_EQ(s.got, want) << "watcher " << w << " reading after index " << s.from;
      ++checked;
    }
    // The last stretch read to the end of the log.
    const Stretch& last = stretches[w].back();
    EXPECT_EQ(last.got.empty() ? last.from : last.got.back(), all.back()) << "watcher " << w;
  }
  EXPECT_GE(checked, kWatchers);
}

// On PostgreSQL a writer of one project does not wait for a writer of
// another, and two writers of one project take turns.
TEST_P(ConcurrentWritersTest, OneProjectsWriterDoesNotHoldBackAnothers) {
  if (!postgres()) GTEST_SKIP() << "SQLite has one writer at a time by design";
  auto a = Node(), b = Node();
  auto p = a->CommitVersion(Version("held", 1, 1));
  auto q = a->CommitVersion(Version("free", 1, 1));
  ASSERT_TRUE(p.ok() && q.ok());
  // Another node is in the middle of a write to project `held`.
  auto raw = testing::OpenRaw(spec_);
  ASSERT_TRUE(raw.ok()) << raw.status();
  auto txn = Transaction::Begin(raw->get(), WriteScope::kShared);
  ASSERT_TRUE(txn.ok()) << txn.status();
  ASSERT_TRUE((*txn)->LockKey(p->version.project_uuid).ok());

  auto other = std::async(std::launch::async, [&] {
    return b->SetMeta(q->version.project_uuid, "k", "v", false, std::nullopt, "test").status();
  });
  ASSERT_EQ(other.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "a write to another project waited for the open transaction";
  EXPECT_TRUE(other.get().ok());

  auto same = std::async(std::launch::async, [&] {
    return b->SetMeta(p->version.project_uuid, "k", "v", false, std::nullopt, "test").status();
  });
  EXPECT_EQ(same.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "a write to the same project did not wait";
  ASSERT_TRUE((*txn)->Commit().ok());
  ASSERT_EQ(same.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(same.get().ok());
}

// On PostgreSQL one node's writes of different projects commit at once:
// while its write of one project's job waits (here on a row another
// session holds), its writes of events and jobs of another project go
// through. Before, one connection under one lock made them wait.
TEST_P(ConcurrentWritersTest, OneNodesWritesOfOneProjectDoNotHoldBackAnothers) {
  if (!postgres()) GTEST_SKIP() << "SQLite has one writer at a time by design";
  auto node = Node();
  auto p = node->CommitVersion(Version("held", 1, 1));
  auto q = node->CommitVersion(Version("free", 1, 1));
  ASSERT_TRUE(p.ok() && q.ok());
  auto job = [](const std::string& uuid, const std::string& project) {
    JobRecord j;
    j.job_uuid = uuid;
    j.project_uuid = project;
    j.api = "vmapi";
    j.kind = "create";
    j.sent_at = absl::Now();
    return j;
  };
  ASSERT_TRUE(node->RecordJobs({job("held-job", p->version.project_uuid)}).ok());
  auto raw = testing::OpenRaw(spec_);
  ASSERT_TRUE(raw.ok()) << raw.status();
  auto txn = Transaction::Begin(raw->get(), WriteScope::kShared);
  ASSERT_TRUE(txn.ok()) << txn.status();
  ASSERT_TRUE((*raw)->Exec("SELECT 1 FROM jobs WHERE job_uuid = 'held-job' FOR UPDATE").ok());

  // The other session's transaction ends before the futures wait for
  // their writes, should an assertion below end the test early.
  std::future<absl::Status> held, other;
  bool committed = false;
  absl::Cleanup release = [&] {
    if (!committed) (void)(*txn)->Commit();
  };
  held = std::async(std::launch::async, [&] { return node->FinishJobs({{"held-job", TaskProgress{}}}, {}); });
  ASSERT_EQ(held.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the job's end did not wait for the row held";
  other = std::async(std::launch::async, [&] {
    absl::Status s = node->AppendEvents(
        {EventRecord{0, absl::Now(), "test", "free", "test.other", "", ""}});
    if (s.ok()) s = node->RecordJobs({job("free-job", q->version.project_uuid)});
    if (s.ok()) s = node->FinishJobs({{"free-job", TaskProgress{}}}, {});
    return s;
  });
  ASSERT_EQ(other.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "another project's writes on the same node waited for the first one's";
  EXPECT_TRUE(other.get().ok());
  EXPECT_EQ(held.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  committed = true;
  ASSERT_TRUE((*txn)->Commit().ok());
  ASSERT_EQ(held.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(held.get().ok());
  auto left = node->ListJobs(p->version.project_uuid);
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_TRUE(left->empty());
}

// An event committed above one that an open transaction holds is not read
// until that transaction ends; then both are read, in order.
TEST_P(ConcurrentWritersTest, ReadersStopBelowAnEventStillUncommitted) {
  if (!postgres()) GTEST_SKIP() << "SQLite commits events in index order (one writer at a time)";
  auto node = Node();
  auto reader = Node();  // opened first: opening takes the store's lock
  ASSERT_TRUE(node->AppendEvent("test", "x", "test.first", "", "").ok());
  auto raw = testing::OpenRaw(spec_);
  ASSERT_TRUE(raw.ok()) << raw.status();
  Database* db = raw->get();
  {
    auto seq = db->Prepare("SELECT pg_get_serial_sequence('events', 'idx')");
    ASSERT_TRUE(seq.ok());
    ASSERT_TRUE(*seq->Step());
    db->SetHorizonSequence(seq->Text(0));
  }
  {
    // A write transaction that writes no event holds no reader back.
    auto quiet = Transaction::Begin(db, WriteScope::kShared);
    ASSERT_TRUE(quiet.ok()) << quiet.status();
    ASSERT_TRUE(node->AppendEvent("test", "x", "test.first", "", "").ok());
    EXPECT_EQ(reader->ListEvents("", 0, 100)->size(), 2u);
  }
  auto slow = Transaction::Begin(db, WriteScope::kShared);
  ASSERT_TRUE(slow.ok()) << slow.status();
  ASSERT_TRUE(db->PublishHorizon().ok());  // as the store does before an event
  auto ins = db->Prepare("INSERT INTO events (time, actor, project, kind, subject, detail) "
                         "VALUES (1, 'test', 'x', 'test.slow', '', '') RETURNING idx");
  ASSERT_TRUE(ins.ok());
  ASSERT_TRUE(*ins->Step());
  int64_t slow_index = ins->Int(0);
  ASSERT_TRUE(ins->Reset().ok());
  auto fast = node->AppendEvent("test", "x", "test.fast", "", "");
  ASSERT_TRUE(fast.ok()) << fast.status();
  ASSERT_GT(*fast, slow_index);

  auto before = reader->ListEvents("", 0, 100);
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->size(), 2u);
  EXPECT_EQ((*before)[1].kind, "test.first");
  EXPECT_LT(*reader->LastEventIndex(), slow_index) << "a follower starting at the end would skip the slow event";
  EXPECT_EQ(*reader->CountEvents("", 0, std::numeric_limits<int64_t>::max(), {}), 2);

  ASSERT_TRUE((*slow)->Commit().ok());
  auto after = reader->ListEvents("", (*before)[1].index, 100);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ((*after)[0].kind, "test.slow");
  EXPECT_EQ((*after)[1].kind, "test.fast");
  EXPECT_EQ(*reader->LastEventIndex(), *fast);
}

INSTANTIATE_TEST_SUITE_P(Backends, ConcurrentWritersTest, ::testing::ValuesIn(testing::kBackends),
                         testing::BackendName);

}  // namespace
}  // namespace mariposa
