#include "projects/sql_store.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/sql.h"
#include "gtest/gtest.h"
#include "tests/store_backends.h"

namespace mariposa {
namespace {

using testing::Backend;

// Every test runs on SQLite and on PostgreSQL (tests/store_backends.h).
class StoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    auto spec = testing::NewStoreSpec(GetParam());
    ASSERT_TRUE(spec.ok()) << spec.status();
    spec_ = *spec;
    auto s = SqlProjectStore::OpenSpec(spec_, &clock_);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    if (postgres()) return;
    seen_at_start_ = store_->CommitsSeenForTest();
    counted_at_start_ = store_->CurrentHighWater()->commits;
  }
  bool postgres() const { return GetParam() == Backend::kPostgres; }
  // Another store on the same database: mariposad after a restart, or
  // another node.
  std::unique_ptr<SqlProjectStore> OpenAgain() {
    auto s = SqlProjectStore::OpenSpec(spec_, &clock_);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // Every commit a test made was counted for the high-water mark (SQLite):
  // a write outside a counted transaction would let a lost WAL go unnoticed.
  void TearDown() override {
    if (store_ == nullptr || postgres()) return;
    auto hw = store_->CurrentHighWater();
    ASSERT_TRUE(hw.ok()) << hw.status();
    EXPECT_EQ(hw->commits - counted_at_start_, store_->CommitsSeenForTest() - seen_at_start_ + other_commits_)
        << "a commit was not counted in store_stamp";
    EXPECT_EQ(hw->last_event, *store_->LastEventIndex());
  }
  int64_t seen_at_start_ = 0, counted_at_start_ = 0;
  int64_t other_commits_ = 0;  // made by a second store on the same file (SQLite)

  NewVersion Version(const std::string& project, const std::string& hash, const std::string& expected,
                     int count = 1) {
    NewVersion v;
    v.project_name = project;
    v.create_project = true;
    v.expected_current = expected;
    v.hash = hash;
    v.manifest = "# verbatim " + hash + "\nproject: " + project + "\n";
    v.canonical = "project: " + project + "\n";
    v.author = "alice";
    ServiceRecord s;
    s.name = "web";
    s.service_type = "continuous";
    s.compute_type = "docker";
    s.image = "nginx@" + hash;
    s.count = count;
    s.spec_hash = "spec-" + hash;
    s.spec_json = "{}";
    s.group = "front";
    v.services.push_back(s);
    v.groups.push_back(GroupRecord{"front", {"web"}});
    return v;
  }

  SimulatedClock clock_;
  std::string spec_;
  std::unique_ptr<SqlProjectStore> store_;
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::ValuesIn(testing::kBackends), testing::BackendName);

TEST_P(StoreTest, ProjectCrud) {
  auto p = store_->CreateProject("jupiter", "web shop", "alice");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "jupiter");
  EXPECT_EQ(p->created_at, clock_.Now());
  EXPECT_EQ(store_->CreateProject("jupiter", "", "bob").status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->CreateProject("Bad_Name", "", "bob").status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(store_->CreateProject("apollo", "", "bob").ok());
  auto list = store_->ListProjects();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "apollo");
  EXPECT_EQ(store_->GetProject(p->uuid)->name, "jupiter");
  EXPECT_TRUE(store_->DeleteProject("jupiter", "alice").ok());
  EXPECT_EQ(store_->GetProject("jupiter").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->DeleteProject("jupiter", "alice").code(), absl::StatusCode::kNotFound);
  // Events survive the project.
  auto ev = store_->ListEvents("jupiter", 0, 100);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->size(), 2u);
  EXPECT_EQ((*ev)[0].kind, "project.create");
  EXPECT_EQ((*ev)[1].kind, "project.delete");
  EXPECT_EQ((*ev)[1].actor, "alice");
}

// A deletion request marks the project deleting (with --delete-volumes or
// not) and records its event; asked again without the flag, the flag stays.
TEST_P(StoreTest, MarkProjectDeletingKeepsDeleteVolumes) {
  ASSERT_TRUE(store_->CreateProject("jupiter", "", "alice").ok());
  ASSERT_TRUE(store_->CreateProject("apollo", "", "alice").ok());
  ASSERT_TRUE(store_->MarkProjectDeleting("jupiter", "alice", false, "removed first: 2 instances").ok());
  auto p = store_->GetProject("jupiter");
  EXPECT_TRUE(p->deleting);
  EXPECT_FALSE(p->delete_volumes);
  ASSERT_TRUE(store_->MarkProjectDeleting("jupiter", "alice", true, "removed first: volume data").ok());
  EXPECT_TRUE(store_->GetProject("jupiter")->delete_volumes);
  ASSERT_TRUE(store_->MarkProjectDeleting("jupiter", "bob", false, "again").ok());
  p = OpenAgain()->GetProject("jupiter");
  EXPECT_TRUE(p->deleting);
  EXPECT_TRUE(p->delete_volumes) << "--delete-volumes is never undone";
  EXPECT_FALSE(store_->GetProject("apollo")->deleting);
  auto ev = store_->ListEvents("jupiter", 0, 100);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->size(), 4u);
  EXPECT_EQ((*ev)[1].kind, "project.delete-requested");
  EXPECT_EQ((*ev)[1].detail, "removed first: 2 instances");
  EXPECT_EQ((*ev)[3].actor, "bob");
}

// A project's account is recorded at creation (by create or by the first
// apply); projects without one are claimed once, with an event each.
TEST_P(StoreTest, ProjectAccounts) {
  ASSERT_TRUE(store_->CreateProject("old", "", "alice").ok());
  auto bob = store_->CreateProject("mars", "", "alice", "b0b0b0b0-1111-4222-8333-444444444444");
  ASSERT_TRUE(bob.ok());
  EXPECT_EQ(bob->owner, "b0b0b0b0-1111-4222-8333-444444444444");
  NewVersion v;
  v.project_name = "venus";
  v.create_project = true;
  v.owner = "930896af-bf8c-48d4-885c-6573a94b1853";
  v.hash = "h";
  v.manifest = v.canonical = "project: venus\n";
  v.author = "alice";
  ASSERT_TRUE(store_->CommitVersion(v).ok());
  EXPECT_EQ(store_->GetProject("venus")->owner, "930896af-bf8c-48d4-885c-6573a94b1853");
  EXPECT_EQ(store_->GetProject("old")->owner, "");
  EXPECT_EQ(*store_->ClaimUnownedProjects("930896af-bf8c-48d4-885c-6573a94b1853"), 1);
  EXPECT_EQ(store_->GetProject("old")->owner, "930896af-bf8c-48d4-885c-6573a94b1853");
  EXPECT_EQ(store_->GetProject("mars")->owner, "b0b0b0b0-1111-4222-8333-444444444444");
  EXPECT_EQ(*store_->ClaimUnownedProjects("11111111-1111-4111-8111-111111111111"), 0);  // once
  auto ev = store_->ListEvents("old", 0, 100);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->size(), 2u);
  EXPECT_EQ((*ev)[1].kind, "project.owner");
}

TEST_P(StoreTest, VersionsCommitNoopStaleAndRefs) {
  auto r1 = store_->CommitVersion(Version("jupiter", "h1", ""));
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_TRUE(r1->changed);
  EXPECT_TRUE(r1->project_created);
  EXPECT_EQ(r1->version.number, 1);
  EXPECT_EQ(r1->version.service_count, 1);

  // Same hash: a no-op that returns the current version.
  auto same = store_->CommitVersion(Version("jupiter", "h1", r1->version.uuid));
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->changed);
  EXPECT_EQ(same->version.uuid, r1->version.uuid);

  clock_.Advance(absl::Seconds(5));
  auto r2 = store_->CommitVersion(Version("jupiter", "h2", r1->version.uuid, 3));
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->version.number, 2);
  EXPECT_EQ(r2->previous_version, r1->version.uuid);

  // Stale previous: rejected, naming the current version; nothing written.
  auto stale = store_->CommitVersion(Version("jupiter", "h3", r1->version.uuid));
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(stale.status().message().find("current version is 2 (" + r2->version.uuid + ")"), std::string::npos)
      << stale.status();
  // No previous at all on an existing project: rejected too, unless forced.
  EXPECT_EQ(store_->CommitVersion(Version("jupiter", "h3", "")).status().code(),
            absl::StatusCode::kFailedPrecondition);
  NewVersion forced = Version("jupiter", "h3", "");
  forced.force = true;
  auto r3 = store_->CommitVersion(forced);
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(r3->version.number, 3);

  std::string pu = r1->version.project_uuid;
  auto versions = store_->ListVersions(pu);
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 3u);
  EXPECT_TRUE((*versions)[0].manifest.empty());  // text only when asked

  auto v2 = store_->GetVersion(pu, "2", true);
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->hash, "h2");
  EXPECT_EQ(v2->manifest, "# verbatim h2\nproject: jupiter\n");
  EXPECT_EQ(store_->GetVersion(pu, r2->version.uuid.substr(0, 8), false)->number, 2);
  EXPECT_EQ(store_->GetVersion(pu, "current", false)->number, 3);
  EXPECT_EQ(store_->GetVersion(pu, "9", false).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetVersion(pu, "zz", false).status().code(), absl::StatusCode::kNotFound);

  auto tagged = store_->TagVersion(pu, "2", "stable", "alice");
  ASSERT_TRUE(tagged.ok()) << tagged.status();
  EXPECT_EQ(tagged->tags, std::vector<std::string>{"stable"});
  EXPECT_EQ(store_->GetVersion(pu, "stable", false)->number, 2);
  ASSERT_TRUE(store_->TagVersion(pu, "3", "stable", "alice").ok());  // tags move
  EXPECT_EQ(store_->GetVersion(pu, "stable", false)->number, 3);
  EXPECT_EQ(store_->TagVersion(pu, "3", "2x", "alice").status().code(), absl::StatusCode::kInvalidArgument);

  auto svcs = store_->ListServices(v2->uuid);
  ASSERT_TRUE(svcs.ok());
  ASSERT_EQ(svcs->size(), 1u);
  EXPECT_EQ((*svcs)[0].count, 3);
  EXPECT_EQ((*svcs)[0].group, "front");
  auto groups = store_->ListGroups(v2->uuid);
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ((*groups)[0].services, std::vector<std::string>{"web"});
  EXPECT_EQ(store_->GetProject("jupiter")->current_number, 3);

  // The project with its current version, read together: what GetProject
  // and GetVersion("current") say, tags and service count included.
  ASSERT_TRUE(store_->TagVersion(pu, "3", "newest", "alice").ok());
  auto both = store_->GetProjectWithCurrent("jupiter");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->first.uuid, pu);
  EXPECT_EQ(both->first.current_number, 3);
  ASSERT_TRUE(both->second.has_value());
  auto cur = store_->GetVersion(pu, "current", false);
  ASSERT_TRUE(cur.ok());
  EXPECT_EQ(both->second->uuid, cur->uuid);
  EXPECT_EQ(both->second->number, 3);
  EXPECT_EQ(both->second->hash, "h3");
  EXPECT_EQ(both->second->project_uuid, pu);
  EXPECT_EQ(both->second->tags, (std::vector<std::string>{"newest", "stable"}));
  EXPECT_EQ(both->second->tags, cur->tags);
  EXPECT_EQ(both->second->service_count, cur->service_count);
  EXPECT_EQ(both->second->created_at, cur->created_at);
  EXPECT_EQ(both->second->author, cur->author);
  EXPECT_TRUE(both->second->manifest.empty());
  EXPECT_EQ(store_->GetProjectWithCurrent(pu)->first.name, "jupiter");  // by uuid too
  EXPECT_EQ(store_->GetProjectWithCurrent("nope").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->CreateProject("empty", "", "alice").ok());
  auto none = store_->GetProjectWithCurrent("empty");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->second.has_value()) << "a project without versions has no current one";
}

TEST_P(StoreTest, MetaCasIncrSecretsImport) {
  auto p = store_->CreateProject("jupiter", "", "alice");
  ASSERT_TRUE(p.ok());
  const std::string pu = p->uuid;
  // cas 0: create only.
  auto a = store_->SetMeta(pu, "theme", "dark", false, 0, "alice");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_GT(a->cas_id, 0);
  auto conflict = store_->SetMeta(pu, "theme", "light", false, 0, "bob");
  EXPECT_EQ(conflict.status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(conflict.status().message().find("is at cas"), std::string::npos);
  auto b = store_->SetMeta(pu, "theme", "light", false, a->cas_id, "bob");
  ASSERT_TRUE(b.ok());
  EXPECT_GT(b->cas_id, a->cas_id);
  EXPECT_EQ(store_->SetMeta(pu, "theme", "x", false, a->cas_id, "bob").status().code(), absl::StatusCode::kAborted);
  // Delete and re-create: the old cas id never matches again.
  ASSERT_TRUE(store_->DeleteMeta(pu, "theme", b->cas_id, "bob").ok());
  auto c = store_->SetMeta(pu, "theme", "again", false, std::nullopt, "bob");
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->cas_id, a->cas_id);
  EXPECT_NE(c->cas_id, b->cas_id);
  EXPECT_EQ(store_->DeleteMeta(pu, "nope", std::nullopt, "bob").code(), absl::StatusCode::kNotFound);

  auto n = store_->IncrMeta(pu, "count", 5, std::nullopt, "alice");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->value, "5");
  n = store_->IncrMeta(pu, "count", -7, std::nullopt, "alice");
  EXPECT_EQ(n->value, "-2");
  EXPECT_EQ(store_->IncrMeta(pu, "theme", 1, std::nullopt, "alice").status().code(),
            absl::StatusCode::kFailedPrecondition);

  ASSERT_TRUE(store_->SetMeta(pu, "db.password", "hunter2", true, std::nullopt, "alice").ok());
  // A plain overwrite keeps the secret flag.
  auto s2 = store_->SetMeta(pu, "db.password", "hunter3", false, std::nullopt, "alice");
  EXPECT_TRUE(s2->secret);
  EXPECT_EQ(store_->GetMeta(pu, "db.password")->value, "hunter3");  // the store keeps it; the API redacts
  EXPECT_EQ(store_->SetMeta(pu, "bad key", "v", false, std::nullopt, "a").status().code(),
            absl::StatusCode::kInvalidArgument);

  auto imported = store_->ImportMeta(pu, {{"a", "1"}, {"b", "2"}}, true, "alice");
  ASSERT_TRUE(imported.ok());
  EXPECT_EQ(*imported, 2);
  auto list = store_->ListMeta(pu);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 5u);  // a, b, count, db.password, theme
  EXPECT_TRUE((*list)[0].secret);
  // Bad import changes nothing.
  EXPECT_FALSE(store_->ImportMeta(pu, {{"ok", "1"}, {"not ok", "2"}}, false, "alice").ok());
  EXPECT_EQ(store_->GetMeta(pu, "ok").status().code(), absl::StatusCode::kNotFound);

  // The event log never holds a secret value.
  auto ev = store_->ListEvents("jupiter", 0, 1000);
  ASSERT_TRUE(ev.ok());
  for (const auto& e : *ev) {
    EXPECT_EQ(e.detail.find("hunter"), std::string::npos) << e.detail;
  }
}

TEST_P(StoreTest, EventsAreAppendOnly) {
  ASSERT_TRUE(store_->CreateProject("jupiter", "", "alice").ok());
  auto db = testing::OpenRaw(spec_);
  ASSERT_TRUE(db.ok()) << db.status();
  absl::Status del = (*db)->Exec("DELETE FROM events");
  EXPECT_FALSE(del.ok());
  EXPECT_NE(del.message().find("append-only"), std::string::npos);
  EXPECT_FALSE((*db)->Exec("UPDATE events SET actor = 'mallory'").ok());
}

// Events by kind: exact kinds and prefixes ending in ".", in the list, the
// newest and the counts alike; a prefix matches no kind merely starting
// with its letters ("volume." is not "volumes.x").
// Issue 49, 3: `events -f` follows commits, not a poll: every commit that
// wrote events moves the store's EventsSignal once it is visible; a write
// without events, and a refused one, do not.
TEST_P(StoreTest, CommittedEventsMoveTheEventsSignal) {
  ChangeSignal* signal = store_->EventsSignal();
  ASSERT_NE(signal, nullptr);
  int64_t at = signal->generation();
  ASSERT_TRUE(store_->CreateProject("jupiter", "", "alice").ok());  // project.create
  EXPECT_GT(signal->generation(), at);
  at = signal->generation();
  std::vector<EventRecord> add(3, EventRecord{0, clock_.Now(), "mariposad", "jupiter", "instance.create", "", ""});
  ASSERT_TRUE(store_->AppendEvents(add).ok());
  EXPECT_EQ(signal->generation(), at + 1) << "one commit of three events is one wake-up";
  at = signal->generation();
  EXPECT_FALSE(store_->CreateProject("jupiter", "", "alice").ok());  // refused: exists
  ASSERT_TRUE(store_->AppendEvents({}).ok());
  EXPECT_EQ(signal->generation(), at) << "nothing committed, nothing to wake for";
}

TEST_P(StoreTest, EventsFilteredByKindAndPrefix) {
  ASSERT_TRUE(store_->CreateProject("jupiter", "", "alice").ok());  // event 1: project.create
  std::vector<EventRecord> add;
  for (const char* kind : {"volume.created", "fabric.vlan-created", "instance.create", "volumes.x", "volume.deleted",
                           "project.delete-requested", "fabric.network-created"}) {
    add.push_back(EventRecord{0, clock_.Now(), "mariposad", "jupiter", kind, "", ""});
  }
  ASSERT_TRUE(store_->AppendEvents(add).ok());
  auto kinds_of = [](const absl::StatusOr<std::vector<EventRecord>>& list) {
    std::vector<std::string> out;
    for (const EventRecord& e : *list) out.push_back(e.kind);
    return out;
  };
  const std::vector<std::string> wanted = {"volume.", "project.delete-requested", "fabric.vlan-created"};
  EXPECT_EQ(kinds_of(store_->ListEvents("jupiter", 0, 100, wanted)),
            (std::vector<std::string>{"volume.created", "fabric.vlan-created", "volume.deleted",
                                      "project.delete-requested"}));
  EXPECT_EQ(kinds_of(store_->ListNewestEvents("jupiter", 0, 2, wanted)),
            (std::vector<std::string>{"volume.deleted", "project.delete-requested"}));
  EXPECT_EQ(*store_->CountEvents("jupiter", 0, 1000, wanted), 4);
  EXPECT_EQ(*store_->CountEvents("jupiter", 0, 1000, {}), 8);
  EXPECT_EQ(kinds_of(store_->ListEvents("", 0, 100, {"fabric."})),
            (std::vector<std::string>{"fabric.vlan-created", "fabric.network-created"}));
  EXPECT_TRUE(store_->ListEvents("other", 0, 100, {"fabric."})->empty());
}

// The convergence engine's kept memory: one body per project, replaced by
// each put, nothing for a project that does not exist, gone with its project.
TEST_P(StoreTest, ControllerMemoryIsKeptPerProject) {
  auto p = store_->CreateProject("jupiter", "", "alice");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*store_->GetControllerMemory(p->uuid), "");
  ASSERT_TRUE(store_->PutControllerMemory(p->uuid, "one").ok());
  ASSERT_TRUE(store_->PutControllerMemory(p->uuid, "two").ok());
  EXPECT_EQ(*store_->GetControllerMemory(p->uuid), "two");
  std::string other = "33333333-3333-4333-8333-333333333333";
  ASSERT_TRUE(store_->PutControllerMemory(other, "orphan").ok());
  EXPECT_EQ(*store_->GetControllerMemory(other), "");
  ASSERT_TRUE(store_->DeleteProject("jupiter", "alice").ok());
  EXPECT_EQ(*store_->GetControllerMemory(p->uuid), "");
  EXPECT_TRUE(store_->CheckIntegrity().ok());
}

// Both backends run the same steps (PostgreSQL's in its types): a store made
// at schema 1 and written as a schema-1 build wrote it is migrated through
// every step to the newest, keeps its rows, and gets the later features; a
// second node opening it finds it done; a newer schema is refused.
TEST_P(StoreTest, MigratesFromEmptyAndFromPreviousSchema) {
  auto spec = testing::NewStoreSpec(GetParam());
  ASSERT_TRUE(spec.ok()) << spec.status();
  {
    auto v1 = SqlProjectStore::OpenSpecAtVersionForTest(*spec, &clock_, 1);
    ASSERT_TRUE(v1.ok()) << v1.status();
    EXPECT_EQ((*v1)->SchemaVersion(), 1);
  }
  {
    // Rows as a schema-1 build wrote them.
    auto db = testing::OpenRaw(*spec);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec(R"sql(
      INSERT INTO projects VALUES ('11111111-1111-4111-8111-111111111111', 'jupiter', '', 1, '22222222-2222-4222-8222-222222222222');
      INSERT INTO versions VALUES ('22222222-2222-4222-8222-222222222222', '11111111-1111-4111-8111-111111111111', 1, 'h1',
                                   'alice', 1, 'apply', 0, '', '', 'project: jupiter', 'project: jupiter');
      INSERT INTO meta VALUES ('11111111-1111-4111-8111-111111111111', 'k', 'v', 0, 1, 1);
      INSERT INTO events (time, actor, project, kind, subject, detail) VALUES (1, 'a', 'jupiter', 'x', 'y', 'z');
      DELETE FROM events WHERE kind = 'x';  -- allowed before schema 2
    )sql").ok());
  }
  auto v2 = SqlProjectStore::OpenSpec(*spec, &clock_);
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ((*v2)->SchemaVersion(), SqlProjectStore::kSchemaVersion);
  auto p = (*v2)->GetProject("jupiter");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->current_number, 1);
  EXPECT_EQ((*v2)->GetMeta(p->uuid, "k")->value, "v");
  // Features of later steps work on the migrated store: tags (2), the
  // append-only log (2), tasks (3), leases (12).
  EXPECT_TRUE((*v2)->TagVersion(p->uuid, "1", "first", "a").ok());
  EXPECT_TRUE((*v2)->CheckIntegrity().ok());
  {
    auto db = testing::OpenRaw(*spec);
    ASSERT_TRUE(db.ok());
    absl::Status del = (*db)->Exec("DELETE FROM events");
    EXPECT_NE(del.message().find("append-only"), std::string::npos) << del;
  }
  EXPECT_TRUE((*v2)->Heartbeat("n", "", absl::FromUnixSeconds(1)).ok());
  auto again = SqlProjectStore::OpenSpec(*spec, &clock_);  // a second node
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE((*again)->GetProject("jupiter").ok());
  v2->reset();
  again->reset();

  // A store from a newer build is refused, not damaged.
  {
    auto db = testing::OpenRaw(*spec);
    ASSERT_TRUE((*db)->Exec(postgres() ? "UPDATE mariposa_schema SET version = 99" : "PRAGMA user_version = 99").ok());
  }
  auto newer = SqlProjectStore::OpenSpec(*spec, &clock_);
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), absl::StatusCode::kFailedPrecondition) << newer.status();
  EXPECT_NE(newer.status().message().find("newer mariposad"), std::string::npos) << newer.status();
}

TEST_P(StoreTest, BackupIsAConsistentCopy) {
  auto r = store_->CommitVersion(Version("jupiter", "h1", ""));
  ASSERT_TRUE(r.ok());
  std::string path = ::testing::TempDir() + "/backup.db";
  unlink(path.c_str());
  auto bytes = store_->Backup(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_GT(*bytes, 0);
  EXPECT_EQ(store_->Backup(path).status().code(), absl::StatusCode::kAlreadyExists);
  auto copy = SqlProjectStore::Open(path, &clock_);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ((*copy)->GetProject("jupiter")->current_version, r->version.uuid);
}


// A scale task of `project_uuid`, added with no admission rule.
absl::StatusOr<TaskRecord> AddScaleTask(SqlProjectStore* store, const std::string& project_uuid) {
  TaskRecord t;
  t.project_uuid = project_uuid;
  t.kind = "scale";
  return store->AddTask(
      t, [](const std::vector<TaskRecord>&, TaskRecord*, std::vector<std::string>*) { return absl::OkStatus(); });
}

TEST_P(StoreTest, FinishJobsCountsEachJobOnceInOneTransaction) {
  auto p = store_->CreateProject("jupiter", "", "alice");
  ASSERT_TRUE(p.ok());
  auto task = AddScaleTask(store_.get(), p->uuid);
  ASSERT_TRUE(task.ok()) << task.status();
  std::vector<JobRecord> jobs;
  for (int k = 0; k < 3; ++k) {
    JobRecord j;
    j.job_uuid = absl::StrCat("job-", k);
    j.project_uuid = p->uuid;
    j.api = "vmapi";
    j.task_uuid = k < 2 ? task->uuid : "";
    j.kind = "create";
    jobs.push_back(j);
  }
  ASSERT_TRUE(store_->RecordJobs(jobs).ok());
  TaskProgress made;
  made.created = 1;
  std::vector<std::pair<std::string, TaskProgress>> ended = {{"job-0", made}, {"job-1", made}, {"job-2", made},
                                                             {"no-such-job", made}};
  ASSERT_TRUE(store_->FinishJobs(ended).ok());
  auto left = store_->ListJobs(p->uuid);
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
  EXPECT_EQ(store_->GetTask(task->uuid)->created, 2);  // job-2 has no task
  // Counted already: a second report adds nothing.
  ASSERT_TRUE(store_->FinishJobs(ended).ok());
  EXPECT_EQ(store_->GetTask(task->uuid)->created, 2);
  EXPECT_TRUE(store_->FinishJobs({}).ok());
  // What their ends tell is written with them, in order.
  std::vector<JobRecord> more = {jobs[0]};
  more[0].job_uuid = "job-3";
  ASSERT_TRUE(store_->RecordJobs(more).ok());
  std::vector<EventRecord> told(2);
  told[0].actor = told[1].actor = "mariposad";
  told[0].project = told[1].project = "jobs";
  told[0].kind = "instance.put-back";
  told[1].kind = "instance.cns-names";
  ASSERT_TRUE(store_->FinishJobs({{"job-3", made}}, told).ok());
  EXPECT_TRUE(store_->ListJobs(p->uuid)->empty());
  EXPECT_EQ(store_->GetTask(task->uuid)->created, 3);
  auto events = store_->ListEvents("jobs", 0, 100, {"instance.put-back", "instance.cns-names"});
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].kind, "instance.put-back");
  EXPECT_EQ((*events)[1].kind, "instance.cns-names");
  // With no job: the events alone.
  ASSERT_TRUE(store_->FinishJobs({}, {told[0]}).ok());
  EXPECT_EQ(store_->ListEvents("jobs", 0, 100, {"instance.put-back"})->size(), 2u);
}


// A sync's step of a task and the events of what it sent are written with
// the jobs it sent: one commit, and a refused write counts no step and
// tells no event either.
TEST_P(StoreTest, RecordJobsCountsTheTasksStepInTheSameTransaction) {
  auto p = store_->CreateProject("io", "", "alice");
  ASSERT_TRUE(p.ok());
  auto task = AddScaleTask(store_.get(), p->uuid);
  ASSERT_TRUE(task.ok()) << task.status();
  JobRecord j;
  j.job_uuid = "job-1";
  j.project_uuid = p->uuid;
  j.api = "vmapi";
  j.task_uuid = task->uuid;
  j.kind = "create";
  TaskProgress step;
  step.steps_done = 1;
  auto told = [&](const std::string& subject) {
    return std::vector<EventRecord>{
        EventRecord{0, clock_.Now(), "mariposad", "io", "instance.create", subject, "web0 (scale)"}};
  };
  auto creates = [&] { return store_->ListEvents("io", 0, 100, {"instance.create"})->size(); };
  ChangeSignal* signal = store_->EventsSignal();
  ASSERT_NE(signal, nullptr);
  int64_t woken = signal->generation();
  ASSERT_TRUE(store_->RecordJobs({j}, {{task->uuid, step}}, told("vm-1")).ok());
  EXPECT_EQ(store_->GetTask(task->uuid)->steps_done, 1);
  EXPECT_EQ(store_->ListJobs(p->uuid)->size(), 1u);
  EXPECT_EQ(creates(), 1u);
  EXPECT_EQ(signal->generation(), woken + 1) << "the events' readers are woken by the jobs' commit";
  // The second job names no project: the insert fails, and the step and
  // the event with it.
  JobRecord stray = j;
  stray.job_uuid = "job-2";
  stray.project_uuid = "no-such-project";
  EXPECT_FALSE(store_->RecordJobs({stray}, {{task->uuid, step}}, told("vm-2")).ok());
  EXPECT_EQ(store_->GetTask(task->uuid)->steps_done, 1);
  EXPECT_EQ(creates(), 1u);
  // Progress alone (no job) is written too, and events alone.
  ASSERT_TRUE(store_->RecordJobs({}, {{task->uuid, step}}, told("vm-3")).ok());
  EXPECT_EQ(store_->GetTask(task->uuid)->steps_done, 2);
  EXPECT_EQ(store_->ListJobs(p->uuid)->size(), 1u);
  ASSERT_TRUE(store_->RecordJobs({}, {}, told("vm-4")).ok());
  auto events = store_->ListEvents("io", 0, 100, {"instance.create"});
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].subject, "vm-1");
  EXPECT_EQ((*events)[1].subject, "vm-3");
  EXPECT_EQ((*events)[2].subject, "vm-4");
}

// ListJobs is served from memory after the first call; it must say what the
// table says: order by (sent_at, uuid), a re-recorded job replaces itself,
// a deleted project's jobs go, and a reopened store reads them back.
TEST_P(StoreTest, JobsInFlightAgreeWithTheTable) {
  {
    std::unique_ptr<SqlProjectStore>* s = &store_;
    auto a = (*s)->CreateProject("a", "", "alice");
    auto b = (*s)->CreateProject("b", "", "alice");
    ASSERT_TRUE(a.ok() && b.ok());
    auto job = [](const std::string& uuid, const std::string& project, int64_t at) {
      JobRecord j;
      j.job_uuid = uuid;
      j.project_uuid = project;
      j.api = "vmapi";
      j.kind = "create";
      j.sent_at = absl::FromUnixMicros(at) + absl::Nanoseconds(300);  // kept to the µs
      return j;
    };
    ASSERT_TRUE((*s)->ListJobs(a->uuid)->empty());  // loads the (empty) table
    ASSERT_TRUE((*s)->RecordJobs({job("j3", a->uuid, 30), job("j1", a->uuid, 10), job("j2", b->uuid, 20)}).ok());
    ASSERT_TRUE((*s)->RecordJobs({job("j1", a->uuid, 40), job("j0", a->uuid, 30)}).ok());  // j1 again, later
    auto names = [&](const std::string& project) {
      std::vector<std::string> out;
      auto jobs = (*s)->ListJobs(project);
      for (const JobRecord& j : *jobs) out.push_back(j.job_uuid);
      return out;
    };
    EXPECT_EQ(names(a->uuid), (std::vector<std::string>{"j0", "j3", "j1"}));
    EXPECT_EQ((*s)->ListJobs(a->uuid)->back().sent_at, absl::FromUnixMicros(40));
    EXPECT_EQ(names(b->uuid), (std::vector<std::string>{"j2"}));
    auto except = (*s)->ListJobsExcept(a->uuid, {"j3", "j2"});
    ASSERT_TRUE(except.ok());
    ASSERT_EQ(except->size(), 2u);
    EXPECT_EQ((*except)[0].job_uuid, "j0");
    EXPECT_EQ((*except)[1].job_uuid, "j1");
    ASSERT_TRUE((*s)->FinishJobs({{"j3", TaskProgress{}}}).ok());
    EXPECT_EQ(names(a->uuid), (std::vector<std::string>{"j0", "j1"}));
    ASSERT_TRUE((*s)->DeleteProject("b", "alice").ok());
    EXPECT_TRUE((*s)->ListJobs(b->uuid)->empty());
    // A failed write changes nothing in memory either: j9 names no project.
    EXPECT_FALSE((*s)->RecordJobs({job("j9", "no-such-project", 50)}).ok());
    EXPECT_EQ(names(a->uuid), (std::vector<std::string>{"j0", "j1"}));
  }
  auto again = OpenAgain();
  ASSERT_NE(again, nullptr);
  auto* s = &again;
  auto a = (*s)->GetProject("a");
  ASSERT_TRUE(a.ok());
  auto jobs = (*s)->ListJobs(a->uuid);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].job_uuid, "j0");
  EXPECT_EQ((*jobs)[1].job_uuid, "j1");
  EXPECT_EQ((*jobs)[1].sent_at, absl::FromUnixMicros(40));
}


// A store on a file reads through its own connection: what was committed is
// read at once, and reads do not wait while a writer holds the store (as a
// commit does across its fsync).
TEST_P(StoreTest, ReadsSeeEveryCommitAndDoNotWaitForTheWriter) {
  auto* s = &store_;
  auto r = (*s)->CommitVersion(Version("jupiter", "h1", ""));
  ASSERT_TRUE(r.ok()) << r.status();
  auto p = (*s)->GetProject("jupiter");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->current_version, r->version.uuid);
  EXPECT_EQ((*s)->GetVersion(p->uuid, "current", true)->uuid, r->version.uuid);
  ASSERT_TRUE((*s)->SetMeta(p->uuid, "k", "v1", false, std::nullopt, "alice").ok());
  ASSERT_EQ((*s)->ListMeta(p->uuid)->size(), 1u);
  EXPECT_EQ((*s)->ListMeta(p->uuid)->front().value, "v1");
  TaskRecord t;
  t.project_uuid = p->uuid;
  t.kind = "scale";
  auto task = (*s)->AddTask(
      t, [](const std::vector<TaskRecord>&, TaskRecord*, std::vector<std::string>*) { return absl::OkStatus(); });
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*s)->ListTasks(p->uuid, 10)->size(), 1u);
  auto r2 = (*s)->CommitVersion(Version("jupiter", "h2", r->version.uuid));
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ((*s)->GetProject("jupiter")->current_version, r2->version.uuid);

  // While the writer is held, another thread's reads still answer.
  std::atomic<bool> read{false};
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread reader;
  bool in_time = false;
  (*s)->HoldWriterForTest([&] {
    reader = std::thread([&] {
      auto got = (*s)->GetProject("jupiter");
      auto meta = (*s)->ListMeta(p->uuid);
      auto tasks = (*s)->ListTasks(p->uuid, 10);
      auto version = (*s)->GetVersion(p->uuid, "current", false);
      read = got.ok() && meta.ok() && tasks.ok() && version.ok() && version->uuid == r2->version.uuid;
      done.set_value();
    });
    // The reads must end while the writer's lock is still held.
    in_time = finished.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  });
  reader.join();
  EXPECT_TRUE(in_time) << "the reads waited for the writer";
  EXPECT_TRUE(read.load());
}


TEST_P(StoreTest, InstanceTimesRoundTripAndGoWithTheProject) {
  auto p = store_->CreateProject("jupiter", "", "alice");
  ASSERT_TRUE(p.ok());
  absl::Time t1 = absl::FromUnixMicros(1800000000123456), t2 = t1 + absl::Seconds(30);
  ASSERT_TRUE(store_->UpdateInstanceTimes(p->uuid,
                                          {{"i-1", "s1", "img1", t1, t2, "healthy"},
                                           {"i-2", "s1", "img1", t1, absl::InfiniteFuture(), "unhealthy"},
                                           {"i-3", "s2", "img2", absl::InfiniteFuture(), absl::InfiniteFuture()}},
                                          {})
                  .ok());
  // i-2 becomes healthy, i-3 is gone.
  ASSERT_TRUE(store_->UpdateInstanceTimes(p->uuid, {{"i-2", "s1", "img1", t1, t2, "healthy"}}, {"i-3"}).ok());
  auto got = store_->ListInstanceTimes(p->uuid);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].instance, "i-1");
  EXPECT_EQ((*got)[0].up_since, t1);
  EXPECT_EQ((*got)[0].healthy_since, t2);
  EXPECT_EQ((*got)[0].health, "healthy");
  EXPECT_EQ((*got)[1].instance, "i-2");
  EXPECT_EQ((*got)[1].healthy_since, t2);
  EXPECT_EQ((*got)[1].health, "healthy") << "the health as last written";
  ASSERT_TRUE(store_->UpdateInstanceTimes(p->uuid, {{"i-4", "s", "i", t1, absl::InfiniteFuture()}}, {}).ok());
  EXPECT_EQ(store_->ListInstanceTimes(p->uuid)->back().healthy_since, absl::InfiniteFuture());
  EXPECT_EQ(store_->ListInstanceTimes(p->uuid)->back().health, "") << "not checked";
  ASSERT_TRUE(store_->DeleteProject("jupiter", "alice").ok());
  EXPECT_TRUE(store_->ListInstanceTimes(p->uuid)->empty());
  // A project deleted meanwhile keeps nothing, and that is not an error.
  EXPECT_TRUE(store_->UpdateInstanceTimes(p->uuid, {{"i-9", "s", "i", t1, t1}}, {}).ok());
  EXPECT_TRUE(store_->ListInstanceTimes(p->uuid)->empty());
}

// Leases: a conditional write is made only while its condition holds (one
// holder at a time, epochs only grow, an expired lease cannot be renewed),
// and a fenced write is refused once the lease moved, with nothing written.
TEST_P(StoreTest, LeasesAreConditionalAndFenceWrites) {
  auto p = store_->CreateProject("jupiter", "", "alice");
  ASSERT_TRUE(p.ok());
  auto other = OpenAgain();  // a second node
  ASSERT_NE(other, nullptr);
  auto a = store_->Heartbeat("node-a", "10.0.0.1:7740", absl::FromUnixSeconds(1));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(other->Heartbeat("node-b", "10.0.0.2:7740", absl::FromUnixSeconds(2)).ok());
  auto state = store_->Heartbeat("node-a", "10.0.0.1:7740", absl::FromUnixSeconds(1));
  ASSERT_TRUE(state.ok());
  ASSERT_EQ(state->nodes.size(), 2u);
  EXPECT_EQ(state->nodes[1].address, "10.0.0.2:7740");
  EXPECT_EQ(state->projects, std::vector<std::string>{p->uuid});
  EXPECT_TRUE(state->leases.empty());
  absl::Time now = state->now;

  auto write = [&](SqlProjectStore* s, LeaseWrite::Kind kind, const std::string& node, int64_t expected,
                   absl::Duration ttl) {
    LeaseWrite w;
    w.kind = kind;
    w.project = p->uuid;
    w.node = node;
    w.expected_epoch = expected;
    w.epoch = kind == LeaseWrite::kAcquire ? expected + 1 : expected;
    w.expires = now + ttl;
    auto made = s->WriteLeases({w});
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() && (*made)[0];
  };
  // Both try to take the free lease from the same reading: one wins.
  EXPECT_TRUE(write(store_.get(), LeaseWrite::kAcquire, "node-a", 0, absl::Minutes(10)));
  EXPECT_FALSE(write(other.get(), LeaseWrite::kAcquire, "node-b", 0, absl::Minutes(10)));
  EXPECT_FALSE(write(other.get(), LeaseWrite::kAcquire, "node-b", 1, absl::Minutes(10)));  // held, not expired
  EXPECT_FALSE(write(other.get(), LeaseWrite::kRenew, "node-b", 1, absl::Minutes(10)));    // not its lease
  EXPECT_TRUE(write(store_.get(), LeaseWrite::kRenew, "node-a", 1, absl::Minutes(20)));
  auto leases = other->Heartbeat("node-b", "", absl::FromUnixSeconds(2));
  ASSERT_TRUE(leases.ok());
  EXPECT_EQ(leases->leases.at(p->uuid).holder, "node-a");
  EXPECT_EQ(leases->leases.at(p->uuid).epoch, 1);

  // node-a works under its fence; its writes are made.
  Fence fence_a{p->uuid, "node-a", 1, absl::Seconds(2)};
  EXPECT_TRUE(store_->CheckFence(fence_a).ok());
  {
    ScopedFence f(fence_a);
    EXPECT_TRUE(store_->PutControllerMemory(p->uuid, "from a").ok());
  }
  // The lease lapses (written as expired) and node-b takes it at epoch 2.
  EXPECT_TRUE(write(store_.get(), LeaseWrite::kRenew, "node-a", 1, -absl::Hours(1)));
  EXPECT_FALSE(write(store_.get(), LeaseWrite::kRenew, "node-a", 1, absl::Minutes(10)));  // expired: no revival
  EXPECT_TRUE(write(other.get(), LeaseWrite::kAcquire, "node-b", 1, absl::Minutes(10)));
  // node-a, paused meanwhile, wakes and writes under its old fence: refused.
  absl::Status stale = store_->CheckFence(fence_a);
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted) << stale;
  EXPECT_NE(stale.message().find("node node-b holds it at epoch 2"), std::string::npos) << stale;
  {
    ScopedFence f(fence_a);
    absl::Status w = store_->PutControllerMemory(p->uuid, "stale");
    EXPECT_EQ(w.code(), absl::StatusCode::kAborted) << w;
    // (On PostgreSQL the pooled writers read the lease in BEGIN's round trip.)
    absl::Status jobs = store_->RecordJobs(
        {JobRecord{"job-1", p->uuid, "vmapi", "", "web", "vm-1", "web0", "create", "", absl::FromUnixSeconds(5)}});
    EXPECT_EQ(jobs.code(), absl::StatusCode::kAborted) << jobs;
    EXPECT_NE(jobs.message().find("node node-b holds it at epoch 2"), std::string::npos) << jobs;
    EXPECT_EQ(store_->AppendEvents({EventRecord{0, absl::FromUnixSeconds(5), "a", "jupiter", "k", "s", "d"}}).code(),
              absl::StatusCode::kAborted);
  }
  EXPECT_EQ(*store_->GetControllerMemory(p->uuid), "from a");
  EXPECT_TRUE(store_->ListJobs(p->uuid)->empty());
  // A fence within its margin of the expiry no longer acts either, nor
  // writes.
  EXPECT_TRUE(other->CheckFence(Fence{p->uuid, "node-b", 2, absl::Seconds(1)}).ok());
  EXPECT_EQ(other->CheckFence(Fence{p->uuid, "node-b", 2, absl::Minutes(11)}).code(), absl::StatusCode::kAborted);
  {
    ScopedFence f(Fence{p->uuid, "node-b", 2, absl::Minutes(11)});
    absl::Status late = other->RecordJobs(
        {JobRecord{"job-2", p->uuid, "vmapi", "", "web", "vm-2", "web1", "create", "", absl::FromUnixSeconds(5)}});
    EXPECT_EQ(late.code(), absl::StatusCode::kAborted) << late;
    EXPECT_NE(late.message().find("with time to act"), std::string::npos) << late;
  }
  {
    ScopedFence f(Fence{p->uuid, "node-b", 2, absl::Seconds(1)});
    EXPECT_TRUE(other->RecordJobs({JobRecord{"job-3", p->uuid, "vmapi", "", "web", "vm-3", "web2", "create", "",
                                             absl::FromUnixSeconds(5)}})
                    .ok());
  }
  EXPECT_EQ(other->ListJobs(p->uuid)->size(), 1u);
  // Leaving releases: the lease is free for the next acquire.
  ASSERT_TRUE(other->LeaveNode("node-b").ok());
  auto after = store_->Heartbeat("node-a", "", absl::FromUnixSeconds(1));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->nodes.size(), 1u);
  EXPECT_EQ(after->leases.at(p->uuid).holder, "");
  EXPECT_TRUE(write(store_.get(), LeaseWrite::kAcquire, "node-a", 2, absl::Minutes(10)));
  if (!postgres()) other_commits_ = other->CommitsSeenForTest();
}

// FenceHolds, by table: who holds the lease, at which epoch, and how long
// it has left against the margin.
TEST(FenceHoldsTest, Table) {
  const Fence f{"p-1", "node-a", 3, absl::Seconds(2)};
  const int64_t now = 1'000'000'000;
  struct Row {
    LeaseRead lease;
    bool holds;
    const char* says;  // in the refusal
  } rows[] = {
      {{"node-a", 3, now + 2'000'001, now}, true, ""},
      {{"node-a", 3, now + 2'000'000, now}, false, "with time to act"},  // exactly the margin left
      {{"node-a", 3, now - 1, now}, false, "nobody holds it now"},        // expired
      {{"node-a", 4, now + 60'000'000, now}, false, "node node-a holds it at epoch 4"},
      {{"node-b", 3, now + 60'000'000, now}, false, "node node-b holds it at epoch 3"},
      {{"", 0, 0, now}, false, "nobody holds it now"},  // no lease row
  };
  for (const Row& r : rows) {
    absl::Status s = FenceHolds(f, r.lease);
    EXPECT_EQ(s.ok(), r.holds) << r.lease.holder << " " << r.lease.epoch << " " << s;
    if (!r.holds) {
      EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
      EXPECT_NE(s.message().find(r.says), std::string::npos) << s;
      EXPECT_NE(s.message().find("nothing was written"), std::string::npos) << s;
    }
  }
}

// PostgreSQL: a node keeps a project's jobs in memory while it holds the
// project's lease at one epoch; when the lease went to another node and
// came back, it reads them again (what the other node wrote and finished).
TEST_P(StoreTest, KeptJobsAreReadAgainAtANewEpoch) {
  if (!postgres()) GTEST_SKIP() << "a SQLite store has one node";
  auto other = OpenAgain();
  auto p = store_->CreateProject("p", "", "alice");
  ASSERT_TRUE(p.ok());
  absl::Time now = store_->Heartbeat("node-a", "", absl::FromUnixSeconds(1))->now;
  auto lease = [&](SqlProjectStore* s, LeaseWrite::Kind kind, const std::string& node, int64_t expected,
                   absl::Duration ttl) {
    LeaseWrite w{kind, p->uuid, node, expected, kind == LeaseWrite::kAcquire ? expected + 1 : expected, now + ttl};
    auto made = s->WriteLeases({w});
    return made.ok() && (*made)[0];
  };
  auto job = [&](const std::string& uuid) {
    return JobRecord{uuid, p->uuid, "vmapi", "", "web", "vm-" + uuid, "web0", "create", "", absl::FromUnixSeconds(5)};
  };
  auto names = [&](SqlProjectStore* s) {
    std::vector<std::string> out;
    auto jobs = s->ListJobsExcept(p->uuid, {});
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    for (const JobRecord& j : *jobs) out.push_back(j.job_uuid);
    return out;
  };
  ASSERT_TRUE(lease(store_.get(), LeaseWrite::kAcquire, "node-a", 0, absl::Minutes(10)));
  {
    ScopedFence f(Fence{p->uuid, "node-a", 1, absl::Seconds(2)});
    ASSERT_TRUE(store_->RecordJobs({job("j1")}).ok());
    EXPECT_EQ(names(store_.get()), std::vector<std::string>{"j1"});
    ASSERT_TRUE(store_->RecordJobs({job("j2")}).ok());
    EXPECT_EQ(names(store_.get()), (std::vector<std::string>{"j1", "j2"}));
  }
  // The lease lapses; node-b takes it, finishes j1 and sends j3.
  ASSERT_TRUE(lease(store_.get(), LeaseWrite::kRenew, "node-a", 1, -absl::Hours(1)));
  ASSERT_TRUE(lease(other.get(), LeaseWrite::kAcquire, "node-b", 1, absl::Minutes(10)));
  {
    ScopedFence f(Fence{p->uuid, "node-b", 2, absl::Seconds(2)});
    ASSERT_TRUE(other->FinishJobs({{"j1", TaskProgress{}}}).ok());
    ASSERT_TRUE(other->RecordJobs({job("j3")}).ok());
    EXPECT_EQ(names(other.get()), (std::vector<std::string>{"j2", "j3"}));
  }
  // Back to node-a at epoch 3: it reads the table, not what it kept at 1.
  ASSERT_TRUE(lease(other.get(), LeaseWrite::kRenew, "node-b", 2, -absl::Hours(1)));
  ASSERT_TRUE(lease(store_.get(), LeaseWrite::kAcquire, "node-a", 2, absl::Minutes(10)));
  {
    ScopedFence f(Fence{p->uuid, "node-a", 3, absl::Seconds(2)});
    EXPECT_EQ(names(store_.get()), (std::vector<std::string>{"j2", "j3"}));
    ASSERT_TRUE(store_->FinishJobs({{"j2", TaskProgress{}}}).ok());
    EXPECT_EQ(names(store_.get()), std::vector<std::string>{"j3"});
  }
  // Unfenced (a node reading another's project): the table.
  EXPECT_EQ(names(other.get()), std::vector<std::string>{"j3"});
}

// A codec that marks what it sealed (the real one is auth/sealer.h).
class MarkingCodec : public SecretCodec {
 public:
  std::string Seal(absl::string_view plain, absl::string_view place) const override {
    return absl::StrCat("sealed:", place, ":", plain);
  }
  absl::StatusOr<std::string> Unseal(absl::string_view sealed, absl::string_view place) const override {
    std::string prefix = absl::StrCat("sealed:", place, ":");
    if (!absl::StartsWith(sealed, prefix)) return absl::DataLossError("not sealed for this place");
    return std::string(sealed.substr(prefix.size()));
  }
  bool SealedWithCurrentKey(absl::string_view v) const override { return absl::StartsWith(v, "sealed:"); }
};

// `admin store-copy`: this backend's store into the other kind and back:
// every version, meta key (cas ids kept), secret (still sealed), event (its
// index kept, and new ones after it), token and task; a target that holds
// anything is refused with nothing written.
TEST_P(StoreTest, CopiesEveryRowToTheOtherKindAndBack) {
  MarkingCodec codec;
  store_->SetSecretCodec(&codec);
  auto r1 = store_->CommitVersion(Version("jupiter", "h1", ""));
  ASSERT_TRUE(r1.ok());
  auto r2 = store_->CommitVersion(Version("jupiter", "h2", r1->version.uuid));
  ASSERT_TRUE(r2.ok());
  std::string p = r2->version.project_uuid;
  auto plain = store_->SetMeta(p, "k", "v", false, std::nullopt, "alice");
  auto secret = store_->SetMeta(p, "password", "hunter2", true, std::nullopt, "alice");
  ASSERT_TRUE(plain.ok() && secret.ok());
  ASSERT_TRUE(store_->TagVersion(p, "1", "first", "alice").ok());
  TokenRecord t;
  t.id = "tok1";
  t.name = "ci";
  t.hash = "abc";
  t.role = "viewer";
  t.created_by = "alice";
  ASSERT_TRUE(store_->CreateToken(t).ok());
  TaskRecord task;
  task.project_uuid = p;
  task.kind = "scale";
  ASSERT_TRUE(store_->AddTask(task, [](const std::vector<TaskRecord>&, TaskRecord*, std::vector<std::string>*) {
                      return absl::OkStatus();
                    }).ok());
  int64_t last = *store_->LastEventIndex();

  auto other_spec = testing::NewStoreSpec(postgres() ? Backend::kSqlite : Backend::kPostgres);
  ASSERT_TRUE(other_spec.ok()) << other_spec.status();
  auto other = SqlProjectStore::OpenSpec(*other_spec, &clock_);
  ASSERT_TRUE(other.ok()) << other.status();
  auto counts = SqlProjectStore::CopyStore(store_.get(), other->get());
  ASSERT_TRUE(counts.ok()) << counts.status();
  auto back_spec = testing::NewStoreSpec(GetParam());
  ASSERT_TRUE(back_spec.ok());
  auto back = SqlProjectStore::OpenSpec(*back_spec, &clock_);
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(SqlProjectStore::CopyStore(other->get(), back->get()).ok());

  for (SqlProjectStore* s : {other->get(), back->get()}) {
    SCOPED_TRACE(s->where());
    s->SetSecretCodec(&codec);
    EXPECT_EQ(s->SchemaVersion(), SqlProjectStore::kSchemaVersion);
    auto proj = s->GetProject("jupiter");
    ASSERT_TRUE(proj.ok());
    EXPECT_EQ(proj->current_version, r2->version.uuid);
    EXPECT_EQ(s->ListVersions(p)->size(), 2u);
    EXPECT_EQ(s->GetVersion(p, "first", true)->canonical, "project: jupiter\n");
    EXPECT_EQ(s->GetMeta(p, "k")->cas_id, plain->cas_id);
    EXPECT_EQ(s->GetMeta(p, "password")->value, "hunter2");
    EXPECT_EQ(s->ListTokens()->size(), 1u);
    EXPECT_EQ(s->ListTasks(p, 10)->size(), 1u);
    EXPECT_EQ(*s->LastEventIndex(), last);
    auto events = s->ListEvents("", 0, 100000);
    ASSERT_TRUE(events.ok());
    EXPECT_EQ(static_cast<int64_t>(events->size()), last);
    // New events and cas ids continue after the copied ones.
    auto next = s->AppendEvent("bob", "jupiter", "x", "y", "z");
    ASSERT_TRUE(next.ok());
    EXPECT_EQ(*next, last + 1);
  }
  // Sealed as stored: the copy holds no plain secret.
  auto raw = testing::OpenRaw(*other_spec);
  ASSERT_TRUE(raw.ok());
  auto st = (*raw)->Prepare("SELECT value FROM meta WHERE key = 'password'");
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(*st->Step());
  EXPECT_TRUE(absl::StartsWith(st->Text(0), "sealed:")) << st->Text(0);
  // Into a store that holds anything: refused, nothing written.
  auto again = SqlProjectStore::CopyStore(store_.get(), back->get());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("not empty"), std::string::npos);
  EXPECT_EQ(*(*back)->LastEventIndex(), last + 1);
}

}  // namespace
}  // namespace mariposa
