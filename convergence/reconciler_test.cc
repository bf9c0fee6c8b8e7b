// Controller tests: the reconciler against the in-memory Triton fakes and a
// simulated clock — one sync at a time, checking the calls and the result.
#include "convergence/reconciler.h"

#include "common/clock.h"
#include "convergence/observer.h"
#include "convergence/queue.h"
#include "convergence/triton/fake_clients.h"
#include "gtest/gtest.h"
#include "projects/manifest.h"
#include "projects/sqlite_store.h"

namespace mariposa::convergence {
namespace {

class ReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*SqliteProjectStore::Open(":memory:", &clock_));
    imgapi_.PutImage(triton::Image{"11111111-1111-4111-8111-111111111111", "web", "1", "active", "linux", "lx-dataset",
                                   "", "", "2026-01-01"});
    ReconcilerOptions o;
    o.owner_uuid = "930896af-bf8c-48d4-885c-6573a94b1853";
    o.network_uuid = "aaaaaaaa-0000-4000-8000-000000000001";
    reconciler_ = std::make_unique<Reconciler>(store_.get(), &vmapi_, &imgapi_, &clock_, o);
  }
  // Stores a version the way the Projects service does.
  void Apply(const std::string& text) {
    ParseResult r = ParseManifest(text, ParseOptions{});
    ASSERT_TRUE(r.manifest.has_value());
    CompiledManifest c = Compile(*r.manifest);
    NewVersion v;
    v.project_name = c.manifest.project;
    v.create_project = true;
    v.force = true;
    v.hash = c.hash;
    v.manifest = text;
    v.canonical = c.canonical;
    v.author = "test";
    for (const auto& kv : c.manifest.services) {
      const ServiceSpec& s = kv.second;
      v.services.push_back(ServiceRecord{s.name, s.service_type, s.compute_type, s.brand, s.image, s.package, s.count,
                                         c.instance_hash.at(s.name), c.spec_json.at(s.name), ""});
    }
    ASSERT_TRUE(store_->CommitVersion(v).ok());
  }
  int Running() {
    int n = 0;
    for (const auto& vm : vmapi_.AllVms()) n += vm.state == "running";
    return n;
  }

  SimulatedClock clock_;
  std::unique_ptr<SqliteProjectStore> store_;
  triton::FakeVmapiClient vmapi_;
  triton::FakeImgapiClient imgapi_;
  std::unique_ptr<Reconciler> reconciler_;
};

TEST_F(ReconcilerTest, CreatesWithOwnershipThenConverges) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 3, tags: {role: front}}\n");
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->created, 3);
  EXPECT_FALSE(r->converged);
  ASSERT_EQ(Running(), 3);
  auto project = store_->GetProject("p");
  std::set<std::string> aliases;
  for (const auto& vm : vmapi_.AllVms()) {
    EXPECT_EQ(vm.tags.at(kTagProject), project->uuid);
    EXPECT_EQ(vm.tags.at(kTagService), "web");
    EXPECT_EQ(vm.tags.at(kTagVersion), project->current_version);
    EXPECT_FALSE(vm.tags.at(kTagSpec).empty());
    EXPECT_EQ(vm.tags.at("role"), "front");
    EXPECT_EQ(vm.image_uuid, "11111111-1111-4111-8111-111111111111");
    aliases.insert(vm.alias);
  }
  EXPECT_EQ(aliases, (std::set<std::string>{"p-web-1", "p-web-2", "p-web-3"}));
  vmapi_.ClearCalls();
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->converged);
  EXPECT_EQ(vmapi_.calls(), std::vector<std::string>{"ListVms"});  // observing only
}

TEST_F(ReconcilerTest, ReplacesBrokenAndHoldsWhenFrozen) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 2}\n");
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  auto vms = vmapi_.AllVms();
  vms[0].state = "failed";
  vmapi_.PutVm(vms[0]);
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->deleted, 1);
  EXPECT_EQ(r->created, 1);
  EXPECT_EQ(Running(), 2);

  TaskQueue q(store_.get());
  TaskRecord freeze;
  freeze.project_uuid = store_->GetProject("p")->uuid;
  freeze.kind = "freeze";
  freeze.actor = "alice";
  ASSERT_TRUE(q.Add(freeze).ok());
  vms = vmapi_.AllVms();
  for (auto& vm : vms) {
    if (vm.state == "running") {
      vm.state = "stopped";
      vmapi_.PutVm(vm);
      break;
    }
  }
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->created + r->deleted, 0);
  EXPECT_EQ(r->held, 2);  // remove-broken and replace-broken, both held
  EXPECT_EQ(Running(), 1);
}

TEST_F(ReconcilerTest, FailuresAreCountedAndNamed) {
  Apply("project: p\nservices:\n  web: {image: missing@9, count: 1}\n");
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->created, 0);
  EXPECT_EQ(r->failed, 1);
  auto events = store_->ListEvents("p", 0, 100);
  bool named = false;
  for (const auto& e : *events) named |= e.kind == "instance.create-failed" && e.detail.find("missing@9") != std::string::npos;
  EXPECT_TRUE(named);
  Apply("project: p\nservices:\n  web: {image: web@1, count: 1}\n");
  vmapi_.FailNext("CreateVm", absl::UnavailableError("vmapi CreateVm: 503 ServiceUnavailable"));
  r = reconciler_->SyncProject("p");
  EXPECT_EQ(r->failed, 1);
  r = reconciler_->SyncProject("p");  // the next sync tries again
  EXPECT_EQ(r->created, 1);
}

}  // namespace
}  // namespace mariposa::convergence
