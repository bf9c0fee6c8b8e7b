// Controller tests: the reconciler against the in-memory Triton fakes and a
// simulated clock — one sync at a time, checking the calls and the result.
#include "convergence/reconciler.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "convergence/informer/observer.h"
#include "health/coordinator.h"
#include "projects/task_queue.h"
#include "convergence/sync_helpers.h"
#include "convergence/triton/fake_clients.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "projects/manifest.h"
#include "common/sql.h"
#include "projects/sql_store.h"

namespace mariposa::convergence {
namespace {

class ReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*SqlProjectStore::Open(":memory:", &clock_));
    imgapi_.PutImage(triton::Image{"11111111-1111-4111-8111-111111111111", "web", "1", "active", "linux", "docker",
                                   "", "", "2026-01-01"});
    imgapi_.PutImage(triton::Image{"33333333-3333-4333-8333-333333333333", "base", "1", "active", "linux",
                                   "lx-dataset", "", "", "2026-01-01"});
    Start(32);
  }
  // (Re)creates the reconciler with a job window of `max_jobs_per_project`
  // (and `max_jobs` for all projects together, when given).
  void Start(int max_jobs_per_project, int max_jobs = 0) {
    ReconcilerOptions o;
    o.owner_uuid = "930896af-bf8c-48d4-885c-6573a94b1853";
    o.network_uuid = "aaaaaaaa-0000-4000-8000-000000000001";
    o.max_jobs_per_project = max_jobs_per_project;
    if (max_jobs > 0) o.max_jobs = max_jobs;
    reconciler_ = std::make_unique<Reconciler>(store_.get(), &vmapi_, &imgapi_, &clock_, o);
  }
  // --max-jobs and --max-jobs-per-project both `n`, and jobs that end only
  // when told (CompleteJobs).
  void StartWithJobWindow(int n) {
    Start(n, n);
    vmapi_.set_auto_complete(false);
  }
  // A window of one job, jobs that end only when told (CompleteJobs), and
  // project p's scale-up of `count` web instances synced once; its uuid.
  std::string HeldScaleUp(int count) {
    Start(1);
    vmapi_.set_auto_complete(false);
    Apply(absl::StrCat("project: p\nservices:\n  web: {image: web@1, count: ", count, "}\n"));
    std::string uuid = store_->GetProject("p")->uuid;
    EXPECT_TRUE(reconciler_->SyncProject("p").ok());
    return uuid;
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
  // The fake VMAPI's calls since ClearCalls, by operation name only.
  std::vector<std::string> CallNames() const {
    std::vector<std::string> names;
    for (const std::string& c : vmapi_.calls()) names.push_back(c.substr(0, c.find(' ')));
    return names;
  }
  int Running() {
    int n = 0;
    for (const auto& vm : vmapi_.AllVms()) n += vm.state == "running";
    return n;
  }

  SimulatedClock clock_{absl::FromUnixSeconds(1800000000)};  // after the fakes' create_timestamps
  std::unique_ptr<SqlProjectStore> store_;
  triton::FakeVmapiClient vmapi_;
  triton::FakeImgapiClient imgapi_;
  std::unique_ptr<Reconciler> reconciler_;
};

// Issue 49: after a job ends its VM is read again unless the kept listing
// (kept current by the change feed) already shows what the job did.
TEST(ListingShowsJobEndTest, OnlyWhatAStateShowsIsTakenFromTheListing) {
  struct Case {
    std::string kind, listed_state;  // "" listed: not in the listing
    bool shows;
  };
  const std::vector<Case> cases = {
      {"create", "", false},         {"create", "provisioning", false}, {"create", "running", true},
      {"create", "failed", true},    {"create", "stopped", true},       {"delete", "", true},
      {"delete", "destroyed", true}, {"delete", "running", false},      {"start", "running", true},
      {"start", "stopped", false},   {"stop", "stopped", true},         {"stop", "running", false},
      {"reprovision", "running", false}, {"retag", "running", false},   {"preserve", "stopped", false},
  };
  for (const Case& c : cases) {
    JobRecord job;
    job.kind = c.kind;
    job.instance = "vm-1";
    InstanceState i;
    i.uuid = "vm-1";
    i.state = c.listed_state;
    EXPECT_EQ(ListingShowsJobEnd(job, c.listed_state.empty() ? nullptr : &i), c.shows)
        << c.kind << " with the VM " << (c.listed_state.empty() ? "not listed" : c.listed_state);
  }
}

std::vector<TaskRecord> TasksOf(ProjectStore* store, const std::string& kind);  // below

// Issue 49: a VMAPI job is not asked about when its VM's state already
// shows it succeeded (a create running, a delete destroyed); nothing else
// is taken from a state, and a failed create is asked for its error.
TEST(StateShowsJobSucceededTest, OnlyACreateRunningAndADeleteDestroyed) {
  struct Case {
    std::string api, job_uuid, kind, state;
    bool shows;
  };
  const std::vector<Case> cases = {
      {"vmapi", "j1", "create", "running", true},       {"vmapi", "j1", "create", "provisioning", false},
      {"vmapi", "j1", "create", "failed", false},       {"vmapi", "j1", "create", "stopped", false},
      {"vmapi", "j1", "create", "", false},             {"vmapi", "j1", "delete", "destroyed", true},
      {"vmapi", "j1", "delete", "running", false},      {"vmapi", "j1", "delete", "", false},
      {"vmapi", "j1", "start", "running", false},       {"vmapi", "j1", "stop", "stopped", false},
      {"vmapi", "j1", "reprovision", "running", false}, {"vmapi", "j1", "retag", "running", false},
      {"cnapi", "t1", "install", "running", false},     {"vmapi", "create:vm-1", "create", "running", false},
  };
  for (const Case& c : cases) {
    JobRecord job;
    job.api = c.api;
    job.job_uuid = c.job_uuid;
    job.kind = c.kind;
    job.instance = "vm-1";
    EXPECT_EQ(StateShowsJobSucceeded(job, c.state), c.shows) << c.api << " " << c.job_uuid << " " << c.kind << " with the VM "
                                                             << (c.state.empty() ? "unseen" : c.state);
  }
  JobRecord none;
  none.api = "vmapi";
  none.job_uuid = "j1";
  none.kind = "create";
  EXPECT_FALSE(StateShowsJobSucceeded(none, "running"));  // no VM named: nothing shown
}

// Watching the feed, a pump round counts the creates whose VMs the feed
// showed running without asking VMAPI about their jobs (one GetJob per
// create in a mass scale before), and asks about the others only once they
// are --feed-grace overdue; a create whose VM failed is then asked, for
// its error.
TEST_F(ReconcilerTest, APumpRoundTakesTheFeedsWordForCreatesThatRun) {
  Start(2);
  reconciler_->FeedChanged(triton::VmFeedStatus{true, clock_.Now() - absl::Seconds(1), ""});
  vmapi_.set_auto_complete(false);
  Apply("project: p\nservices:\n  web: {image: web@1, count: 6}\n");
  std::string uuid = store_->GetProject("p")->uuid;
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->created, 2);
  vmapi_.CompleteJobs();
  reconciler_->VmsChanged(vmapi_.AllVms());  // both running, as the feed tells it
  vmapi_.ClearCalls();
  auto pumped = reconciler_->PumpProject(uuid);
  ASSERT_TRUE(pumped.has_value());
  EXPECT_EQ(pumped->finished, 2);
  EXPECT_EQ(pumped->created, 2);
  std::vector<std::string> calls = CallNames();
  EXPECT_EQ(calls, (std::vector<std::string>{"CreateVm", "CreateVm"})) << "no GetJob for what the feed showed";
  // One of the next two fails: its VM shows "failed", which ends nothing;
  // it waits for --feed-grace (the clock stands still), the other's slot
  // goes to the next create.
  std::string failing;
  for (const auto& vm : vmapi_.AllVms()) {
    if (vm.state == "provisioning") failing = vm.uuid;
  }
  ASSERT_FALSE(failing.empty());
  vmapi_.CompleteJobs({failing});
  reconciler_->VmsChanged(vmapi_.AllVms());
  vmapi_.ClearCalls();
  pumped = reconciler_->PumpProject(uuid);
  ASSERT_TRUE(pumped.has_value());
  EXPECT_EQ(pumped->finished, 1);
  EXPECT_EQ(pumped->created, 1);
  EXPECT_EQ(vmapi_.calls().size(), 1u);
  EXPECT_TRUE(absl::StartsWith(vmapi_.calls()[0], "CreateVm")) << vmapi_.calls()[0];
  // Overdue: both jobs still in flight are asked; the failure ends the pump
  // (Decide counts it first).
  clock_.Advance(absl::Milliseconds(60));
  vmapi_.ClearCalls();
  EXPECT_FALSE(reconciler_->PumpProject(uuid).has_value());
  calls = CallNames();
  EXPECT_EQ(calls, (std::vector<std::string>{"GetJob", "GetJob"}));
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->finished, 4);  // three run, one failed; the fifth create still provisioning
  auto tasks = TasksOf(store_.get(), "scale");
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].created, 3);
  EXPECT_EQ(tasks[0].failed, 1);
}

// A sync whose listing shows a create's VM running counts its job without
// asking VMAPI, watching or not.
TEST_F(ReconcilerTest, ASyncTakesTheListingsWordForCreatesThatRun) {
  Apply("project: p\ncns: false\nservices:\n  web: {image: web@1, count: 3}\n");
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->created, 3);
  ASSERT_EQ(Running(), 3);
  clock_.Advance(absl::Seconds(61));  // the next sync lists every VM
  vmapi_.ClearCalls();
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->finished, 3);
  EXPECT_TRUE(r->converged);
  EXPECT_EQ(vmapi_.calls(), std::vector<std::string>{"ListVms"});
  auto tasks = TasksOf(store_.get(), "scale");
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].created, 3);
  EXPECT_EQ(tasks[0].state, "completed");
}

TEST_F(ReconcilerTest, CreatesWithOwnershipThenConverges) {
  // No CNS names: the calls below are the instances' own (discovery adds its
  // own updates: decide_discovery.cc, tests/zero_downtime_e2e_test).
  Apply("project: p\ncns: false\nservices:\n  web: {image: web@1, count: 3, tags: {role: front}}\n");
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
  // The sync did not wait for the jobs: the next one looks at them, once.
  vmapi_.ClearCalls();
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  // Within full_observe of the listing, only what changed is read: one
  // GetJob per create, then the VMs of the jobs that ended, in one ListVms
  // by uuid (not a GetVm each).
  std::vector<std::string> calls = CallNames();
  std::sort(calls.begin(), calls.end());
  EXPECT_EQ(calls, (std::vector<std::string>{"GetJob", "GetJob", "GetJob", "ListVms"}));
  clock_.Advance(absl::Seconds(61));
  vmapi_.ClearCalls();
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->converged);
  EXPECT_EQ(vmapi_.calls(), std::vector<std::string>{"ListVms"});  // observing only
}

// Watching the feed, a create's job end and its VM's item arrive together:
// an item that came while the jobs were polled is applied, and the VM is
// not read again (each new VM cost a GetVm in a scale when the item came a
// moment after the listing was taken: watch_e2e_test).
TEST_F(ReconcilerTest, AFeedItemThatCameWhileJobsWerePolledSavesTheRead) {
  reconciler_->FeedChanged(triton::VmFeedStatus{true, clock_.Now() - absl::Seconds(1), ""});
  vmapi_.set_auto_complete(false);
  Apply("project: p\ncns: false\nservices:\n  web: {image: web@1, count: 3}\n");
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  ASSERT_EQ(vmapi_.AllVms().size(), 3u);
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());  // the listing kept from here on
  vmapi_.CompleteJobs();
  clock_.Advance(absl::Milliseconds(60));  // past --feed-grace: the jobs are asked (AskJobNow)
  // Each ended job's item reaches the feed as the job is polled.
  vmapi_.set_on_get_job([this](const triton::Job& job) {
    for (const triton::Vm& vm : vmapi_.AllVms()) {
      if (job.done() && vm.uuid == job.vm_uuid) reconciler_->VmsChanged({vm});
    }
  });
  vmapi_.ClearCalls();
  auto r = reconciler_->SyncProject("p");
  vmapi_.set_on_get_job(nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> calls = CallNames();
  EXPECT_EQ(calls, (std::vector<std::string>{"GetJob", "GetJob", "GetJob"}));
  EXPECT_EQ(r->finished, 3);
  EXPECT_EQ(Running(), 3);
  clock_.Advance(absl::Seconds(1));
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->converged);
}

// Issue 48, 3: a preserve tags the instance and stops it only once the tag
// job has finished. Stopped before, a sync could see it stopped without its
// `mariposa.preserved` tag, read it as broken and preserve it again (the
// same instance.preserve event twice).
TEST_F(ReconcilerTest, APreserveStopsOnlyOnceItsTagIsSet) {
  const std::string two = "project: p\nservices:\n  web: {image: web@1, count: 2, stop: {preserve_stopped: always}}\n";
  Apply(two);
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  ASSERT_EQ(Running(), 2);
  Apply("project: p\nservices:\n  web: {image: web@1, count: 1, stop: {preserve_stopped: always}}\n");
  vmapi_.set_auto_complete(false);  // the tag job runs until told
  vmapi_.ClearCalls();
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  std::vector<std::string> calls = vmapi_.calls();
  bool tagged = false, stopped = false;
  for (const std::string& c : calls) {
    tagged |= absl::StartsWith(c, "SetTags");
    stopped |= absl::StartsWith(c, "Act stop");
  }
  EXPECT_TRUE(tagged) << absl::StrJoin(calls, "\n");
  EXPECT_FALSE(stopped) << "stopped while its preserve tag job still ran:\n" << absl::StrJoin(calls, "\n");
  EXPECT_EQ(Running(), 2);
}

// Found by the oracle (CI, seed 2): a sync that lists every VM reads the
// listing first and polls the jobs after it; a delete that ended in between
// left the VM "running" in that listing with its job gone, and the same
// scale-down was sent again (instance.delete twice in the same second).
TEST_F(ReconcilerTest, AJobEndingBetweenTheListingAndItsPollIsNotSentAgain) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 2}\n");
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  ASSERT_EQ(Running(), 2);
  Apply("project: p\nservices:\n  web: {image: web@1, count: 0}\n");
  vmapi_.set_auto_complete(false);
  clock_.Advance(absl::Seconds(1));
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->deleted, 2);
  clock_.Advance(absl::Seconds(61));  // the next sync lists every VM
  vmapi_.CompleteJobsAfterNextList();
  vmapi_.ClearCalls();
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> calls = vmapi_.calls();
  EXPECT_EQ(r->deleted, 0) << absl::StrJoin(calls, "\n");
  for (const std::string& c : calls) EXPECT_FALSE(absl::StartsWith(c, "DeleteVm")) << absl::StrJoin(calls, "\n");
  EXPECT_EQ(Running(), 0);
  clock_.Advance(absl::Seconds(1));
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->deleted, 0);
  EXPECT_TRUE(r->converged);
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
  clock_.Advance(absl::Seconds(1));  // the next full listing sees it
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
  EXPECT_EQ(r->held, 1);  // nothing is sent for an image IMGAPI does not have
  auto view = reconciler_->Inspect("p");
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->decision.verdicts.at("web").state, VerdictState::kFailed);
  bool named = false;
  for (const auto& p : view->decision.problems) named |= p.kind == "image-missing" && p.error.find("missing@9") != std::string::npos;
  EXPECT_TRUE(named);
  Apply("project: p\nservices:\n  web: {image: web@1, count: 1}\n");
  vmapi_.FailNext("CreateVm", absl::UnavailableError("vmapi CreateVm: 503 ServiceUnavailable"));
  r = reconciler_->SyncProject("p");
  EXPECT_EQ(r->failed, 1);
  r = reconciler_->SyncProject("p");  // backing off: the create waits
  EXPECT_EQ(r->created, 0);
  EXPECT_EQ(r->held, 1);
  clock_.Advance(absl::Seconds(2));   // past the first backoff (1 s, jittered 0.5-1 s)
  r = reconciler_->SyncProject("p");  // tries again
  EXPECT_EQ(r->created, 1);
}

bool HasEvent(ProjectStore* store, const std::string& kind) {
  auto events = store->ListEvents("p", 0, 1000);
  for (const auto& e : *events) {
    if (e.kind == kind) return true;
  }
  return false;
}

TEST_F(ReconcilerTest, CrashLoopPausesReplacementUntilTheWindowPasses) {
  Apply("project: p\nservices:\n  web:\n    image: web@1\n    count: 1\n"
        "    restart: {max_attempts: 3, window: 10m}\n");
  for (int k = 0; k < 3; ++k) {
    vmapi_.FailNext("CreateVm", absl::UnavailableError("vmapi CreateVm: 503 ServiceUnavailable"));
    auto r = reconciler_->SyncProject("p");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->failed, 1) << k;
    clock_.Advance(absl::Seconds(10));  // beyond each backoff (1 s, 2 s, 4 s)
  }
  auto r = reconciler_->SyncProject("p");  // counts the third failure
  EXPECT_TRUE(HasEvent(store_.get(), "service.crashlooping"));
  EXPECT_EQ(r->created, 0);
  EXPECT_EQ(r->held, 1);
  clock_.Advance(absl::Minutes(5));
  r = reconciler_->SyncProject("p");
  EXPECT_EQ(r->created, 0);  // still inside the 10 min window
  clock_.Advance(absl::Minutes(6));
  r = reconciler_->SyncProject("p");
  EXPECT_EQ(r->created, 1);
  EXPECT_TRUE(HasEvent(store_.get(), "service.crashloop-ended"));
}

TEST_F(ReconcilerTest, NewSpecEndsACrashLoop) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 1, restart: {max_attempts: 1, window: 1h}}\n");
  vmapi_.FailNext("CreateVm", absl::UnavailableError("vmapi CreateVm: 503 ServiceUnavailable"));
  EXPECT_EQ(reconciler_->SyncProject("p")->failed, 1);
  EXPECT_EQ(reconciler_->SyncProject("p")->held, 1);
  Apply("project: p\nservices:\n  web: {image: web@1, count: 1, restart: {max_attempts: 1, window: 1h}, tags: {fix: x}}\n");
  EXPECT_EQ(reconciler_->SyncProject("p")->created, 1);
}

TEST_F(ReconcilerTest, ReplacementBudgetHoldsACorrelatedFailure) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 20}\n");
  ASSERT_EQ(reconciler_->SyncProject("p")->created, 20);
  clock_.Advance(absl::Hours(1));
  auto vms = vmapi_.AllVms();
  for (int k = 0; k < 16; ++k) {  // 80 % of the instances on a server that went away
    vms[k].state = "unknown";
    vmapi_.PutVm(vms[k]);
  }
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->created, 2);  // max(1, 10 % of 20) per interval
  EXPECT_EQ(r->deleted, 2);
  EXPECT_TRUE(HasEvent(store_.get(), "replacement.budget-exceeded"));
  r = reconciler_->SyncProject("p");
  EXPECT_EQ(r->created, 0);  // the budget is spent for this interval
  clock_.Advance(absl::Minutes(1));
  r = reconciler_->SyncProject("p");
  EXPECT_EQ(r->created, 2);
}

TEST_F(ReconcilerTest, ReprovisionCanaryAndFiltersWithProgress) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 6, update: {rolling: 2, max_surge: 2}, start: {window: 1s}}\n");
  ASSERT_EQ(reconciler_->SyncProject("p")->created, 6);
  clock_.Advance(absl::Minutes(1));
  Apply("project: p\nservices:\n  web: {image: web@1, count: 6, update: {rolling: 2, max_surge: 2}, start: {window: 1s}, "
        "tags: {v: \"2\"}}\n");
  TaskQueue q(store_.get());
  TaskRecord t;
  t.project_uuid = store_->GetProject("p")->uuid;
  t.kind = "reprovision";
  t.canary = 3;
  auto added = q.Add(t);
  ASSERT_TRUE(added.ok()) << added.status();
  for (int k = 0; k < 10; ++k) {
    ASSERT_TRUE(reconciler_->SyncProject("p").ok());
    clock_.Advance(absl::Seconds(5));
  }
  auto done = store_->GetTask(added->uuid);
  EXPECT_EQ(done->state, "completed");
  EXPECT_EQ(done->replaced, 3);
  EXPECT_EQ(done->created, 3);
  EXPECT_GE(done->steps_done, 2);
  int old_spec = 0;
  for (const auto& vm : vmapi_.AllVms()) old_spec += vm.state == "running" && !vm.tags.count("v");
  EXPECT_EQ(old_spec, 3);
  EXPECT_EQ(Running(), 6);

  // Instance filter: only p-web-2 (if it is still old) — pick an old one by alias.
  std::string target;
  for (const auto& vm : vmapi_.AllVms()) {
    if (vm.state == "running" && !vm.tags.count("v")) target = vm.alias;
  }
  TaskRecord f;
  f.project_uuid = t.project_uuid;
  f.kind = "reprovision";
  f.filter_instances = {target};
  added = q.Add(f);
  ASSERT_TRUE(added.ok());
  for (int k = 0; k < 6; ++k) {
    ASSERT_TRUE(reconciler_->SyncProject("p").ok());
    clock_.Advance(absl::Seconds(5));
  }
  EXPECT_EQ(store_->GetTask(added->uuid)->state, "completed");
  EXPECT_EQ(store_->GetTask(added->uuid)->replaced, 1);
  old_spec = 0;
  for (const auto& vm : vmapi_.AllVms()) {
    if (vm.state != "running") continue;
    old_spec += !vm.tags.count("v");
    EXPECT_NE(vm.alias, target);
  }
  EXPECT_EQ(old_spec, 2);
  EXPECT_EQ(Running(), 6);
}


// Since when an instance runs and is healthy is kept in the store: a new
// reconciler (a restart, a takeover) goes on with the same clocks instead of
// counting from the instance's creation again.
TEST_F(ReconcilerTest, ReadinessClocksSurviveARestart) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 1}\n");
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());  // creates
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());  // sees it run
  std::string uuid = store_->GetProject("p")->uuid;
  auto kept = store_->ListInstanceTimes(uuid);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);
  InstanceTimes t = (*kept)[0];
  EXPECT_NE(t.up_since, absl::InfiniteFuture());
  // As if it had come up again later than its creation (say, a reboot seen
  // by the last mariposad), then mariposad restarts.
  t.up_since = clock_.Now() - absl::Seconds(7);
  ASSERT_TRUE(store_->UpdateInstanceTimes(uuid, {t}, {}).ok());
  Start(16);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  auto view = reconciler_->Inspect("p");
  ASSERT_TRUE(view.ok()) << view.status();
  ASSERT_EQ(view->snapshot.instances.size(), 1u);
  EXPECT_EQ(view->snapshot.instances[0].up_since, t.up_since);
  EXPECT_EQ(store_->ListInstanceTimes(uuid)->at(0).up_since, t.up_since);  // unchanged, not rewritten
  // The instance goes: its times go too.
  Apply("project: p\nservices:\n  web: {image: web@1, count: 0}\n");
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  EXPECT_TRUE(store_->ListInstanceTimes(uuid)->empty());
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// QUEUE.md: instances failing mid-rollout are replaced with the current spec
// and the reprovision skips them — every instance is replaced exactly once.
TEST_F(ReconcilerTest, InstancesFailingMidRolloutAreReplacedOnceAtTheCurrentSpec) {
  const std::string v1 = "project: p\nservices:\n  web: {image: web@1, count: 10, update: {rolling: 2, max_surge: 2}}\n";
  Apply(v1);
  ASSERT_EQ(reconciler_->SyncProject("p")->created, 10);
  Apply("project: p\nservices:\n  web: {image: web@1, count: 10, update: {rolling: 2, max_surge: 2}, tags: {v: \"2\"}}\n");
  TaskQueue q(store_.get());
  TaskRecord t;
  t.project_uuid = store_->GetProject("p")->uuid;
  t.kind = "reprovision";
  auto task = q.Add(t);
  ASSERT_TRUE(task.ok());
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());  // first batch under way
  // Three old instances crash in the middle of the rollout.
  int crashed = 0;
  for (auto vm : vmapi_.AllVms()) {
    if (crashed < 3 && vm.state == "running" && !vm.tags.count("v")) {
      vm.state = "failed";
      vmapi_.PutVm(vm);
      ++crashed;
    }
  }
  int creates = 0;
  for (int k = 0; k < 20; ++k) {
    auto r = reconciler_->SyncProject("p");
    ASSERT_TRUE(r.ok());
    creates += r->created;
    clock_.Advance(absl::Minutes(1));
  }
  EXPECT_EQ(store_->GetTask(task->uuid)->state, "completed");
  int current = 0, old_spec = 0;
  for (const auto& vm : vmapi_.AllVms()) {
    if (vm.state != "running") continue;
    (vm.tags.count("v") ? current : old_spec)++;
  }
  EXPECT_EQ(current, 10);
  EXPECT_EQ(old_spec, 0);
  // 2 from the first batch + 8 more: the crashed ones were replaced at the
  // current spec once (by replacement) and not a second time by the rollout.
  EXPECT_EQ(creates + 2, 10);
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

std::vector<TaskRecord> TasksOf(ProjectStore* store, const std::string& kind) {
  std::vector<TaskRecord> out;
  auto all = store->ListTasks(store->GetProject("p")->uuid, 100);  // kept alive for the loop
  for (const TaskRecord& t : *all) {
    if (t.kind == kind) out.push_back(t);
  }
  return out;
}

// Automatic work is done as tasks: a scale task per service, with its origin,
// trigger and progress, completed once the service has nothing left to do.
TEST_F(ReconcilerTest, AutomaticWorkRunsAsScaleTasksWithProgress) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 3}\n  db: {image: web@1, count: 1}\n");
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  auto tasks = TasksOf(store_.get(), "scale");
  ASSERT_EQ(tasks.size(), 2u);
  for (const TaskRecord& t : tasks) {
    EXPECT_EQ(t.origin, "auto");
    EXPECT_EQ(t.trigger, "apply");
    EXPECT_EQ(t.auto_kind, "scale");
    EXPECT_EQ(t.state, "active");
    EXPECT_EQ(t.created, 0);  // sent, not seen done: the sync does not wait for the jobs
    EXPECT_EQ(t.steps_done, 1);
  }
  // The next sync sees the jobs done, counts each once and ends the tasks.
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  for (const TaskRecord& t : TasksOf(store_.get(), "scale")) {
    EXPECT_EQ(t.state, "completed") << t.services[0];
    EXPECT_EQ(t.created, t.services == std::vector<std::string>{"web"} ? 3 : 1);
  }
  // A converged project makes no new tasks.
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  EXPECT_EQ(TasksOf(store_.get(), "scale").size(), 2u);

  // A broken instance: a replace-unhealthy scale task counts the replacement.
  auto vms = vmapi_.AllVms();
  for (auto& vm : vms) {
    if (vm.tags.at(kTagService) == "web") {
      vm.state = "unknown";  // its server went away
      vmapi_.PutVm(vm);
      break;
    }
  }
  // A change behind Mariposa's back is seen at the next full listing, at
  // most full_observe (1 s) after the last.
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  tasks = TasksOf(store_.get(), "scale");
  ASSERT_EQ(tasks.size(), 3u);
  auto it = std::find_if(tasks.begin(), tasks.end(), [](const TaskRecord& t) { return t.auto_kind == "replace-unhealthy"; });
  ASSERT_NE(it, tasks.end());
  const TaskRecord& replace = *it;
  EXPECT_EQ(replace.trigger, "server-down");
  EXPECT_EQ(replace.replaced, 1);
  EXPECT_EQ(replace.deleted, 1);
  EXPECT_EQ(replace.state, "completed");
}

TEST_F(ReconcilerTest, CrashLoopShowsOnTheScaleTask) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 1, restart: {max_attempts: 1, window: 1h}}\n");
  vmapi_.FailNext("CreateVm", absl::UnavailableError("vmapi CreateVm: 503 ServiceUnavailable"));
  auto r = reconciler_->SyncProject("p");
  EXPECT_EQ(r->failed, 1);
  r = reconciler_->SyncProject("p");
  auto tasks = TasksOf(store_.get(), "scale");
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].state, "active");
  EXPECT_EQ(tasks[0].failed, 1);
  EXPECT_THAT(tasks[0].error, ::testing::HasSubstr("crash-looping"));
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// Servers cn0 .. cn{n-1} running cn-agent 2.13.0 (cn0 the headnode, those
// in `down` not running), and cn-agent 2.14.1 in IMGAPI and CNAPI.
void PutAgentServers(triton::FakeCnapiClient* cnapi, triton::FakeImgapiClient* imgapi, int n,
                     const std::set<int>& down = {}) {
  for (int k = 0; k < n; ++k) {
    triton::Server s;
    s.uuid = absl::StrCat("00000000-0000-4000-8000-00000000000", k);
    s.hostname = absl::StrCat("cn", k);
    s.status = down.count(k) ? "unknown" : "running";
    s.headnode = k == 0;
    s.agents = {{"cn-agent", "2.13.0", "", absl::StrCat("a", k)}};
    cnapi->PutServer(s);
  }
  imgapi->PutImage(triton::Image{"22222222-2222-4222-8222-222222222222", "cn-agent", "2.14.1", "active", "other",
                                 "other", "", "", "2026-01-01"});
  cnapi->PutAgentImage("22222222-2222-4222-8222-222222222222", "cn-agent", "2.14.1");
}

ReconcilerOptions AgentOptions(triton::FakeCnapiClient* cnapi) {
  ReconcilerOptions o;
  o.owner_uuid = "930896af-bf8c-48d4-885c-6573a94b1853";
  o.network_uuid = "aaaaaaaa-0000-4000-8000-000000000001";
  o.cnapi = cnapi;
  return o;
}

// What CNAPI was asked about servers since the last call.
// The CNAPI server reads since the last call. A sync reads several servers
// at once (RunParallel), so each run of GetServer calls is sorted: their
// order among themselves is the threads'.
std::vector<std::string> ServerCalls(triton::FakeCnapiClient* cnapi) {
  std::vector<std::string> out;
  for (const std::string& c : cnapi->calls()) {
    if (absl::StartsWith(c, "ListServers") || absl::StartsWith(c, "GetServer")) out.push_back(c);
  }
  cnapi->ClearCalls();
  for (auto run = out.begin(); run != out.end();) {
    auto end = std::find_if(run, out.end(), [](const std::string& c) { return !absl::StartsWith(c, "GetServer"); });
    std::sort(run, end);
    run = end == out.end() ? end : end + 1;
  }
  return out;
}

// Agent services roll out through CNAPI, `update.rolling` servers per step,
// as an automatic reprovision task; down servers are left and named.
TEST_F(ReconcilerTest, AgentRolloutThroughCnapi) {
  triton::FakeCnapiClient cnapi;
  PutAgentServers(&cnapi, &imgapi_, 5, /*down=*/{4});
  Reconciler r(store_.get(), &vmapi_, &imgapi_, &clock_, AgentOptions(&cnapi));
  Apply("project: p\nservices:\n  cn-agent:\n    compute_type: agent\n    image: cn-agent@2.14.1\n"
        "    servers: {select: all, exclude: [headnode]}\n    update: {rolling: 2}\n");
  auto s1 = r.SyncProject("p");
  ASSERT_TRUE(s1.ok()) << s1.status();
  EXPECT_EQ(s1->changed, 2);  // cn1, cn2
  EXPECT_EQ(ServerCalls(&cnapi), std::vector<std::string>{"ListServers"});
  auto view = r.Inspect("p");
  ASSERT_TRUE(view.ok());
  ASSERT_TRUE(view->decision.agent_plans.count("cn-agent"));
  EXPECT_EQ(view->decision.agent_plans.at("cn-agent").selected, 4);
  ServerCalls(&cnapi);
  // Within full_observe of the listing, a sync reads again only the servers
  // whose tasks it saw end (a rollout on 1,000 servers listed them all at
  // every sync: issue 49).
  // A sync that sees tasks end reads their servers even past full_observe,
  // and lists them all once it has sent the next batch (ListServersInFull,
  // ListServersAfterSend): not before it, while the batch waits.
  clock_.Advance(absl::Seconds(1));  // ReconcilerOptions::full_observe
  EXPECT_EQ(r.SyncProject("p")->changed, 1);  // cn3; cn4 is down
  EXPECT_EQ(ServerCalls(&cnapi), (std::vector<std::string>{"GetServer 00000000-0000-4000-8000-000000000001",
                                                      "GetServer 00000000-0000-4000-8000-000000000002",
                                                      "ListServers"}));
  EXPECT_EQ(r.SyncProject("p")->changed, 0);
  EXPECT_EQ(ServerCalls(&cnapi), std::vector<std::string>{"GetServer 00000000-0000-4000-8000-000000000003"});
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(r.SyncProject("p")->changed, 0);  // no task ended, nothing sent: the listing, before the decision
  EXPECT_EQ(ServerCalls(&cnapi), std::vector<std::string>{"ListServers"});
  auto tasks = TasksOf(store_.get(), "reprovision");
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].auto_kind, "agent-rollout");
  EXPECT_EQ(tasks[0].state, "completed");
  EXPECT_EQ(tasks[0].created, 3);
  EXPECT_THAT(tasks[0].error, ::testing::HasSubstr("1 servers were not running"));
  for (int k = 0; k < 5; ++k) {
    auto s = cnapi.GetServer(absl::StrCat("00000000-0000-4000-8000-00000000000", k));
    bool updated = s->agents.size() == 1 && s->agents[0].version == "2.14.1";
    EXPECT_EQ(updated, k >= 1 && k <= 3) << k;
  }
  // Changed by hand (cn1's agent back to 2.13.0): noticed at the next full
  // listing, at most full_observe after the last, and put right.
  triton::Server hand = *cnapi.GetServer("00000000-0000-4000-8000-000000000001");
  hand.agents[0].version = "2.13.0";
  hand.agents[0].image_uuid = "";
  cnapi.PutServer(hand);
  ServerCalls(&cnapi);
  EXPECT_EQ(r.SyncProject("p")->changed, 0);  // the listing is kept
  EXPECT_TRUE(ServerCalls(&cnapi).empty());
  clock_.Advance(absl::Seconds(1));  // ReconcilerOptions::full_observe
  EXPECT_EQ(r.SyncProject("p")->changed, 1);
  EXPECT_EQ(ServerCalls(&cnapi), std::vector<std::string>{"ListServers"});
  EXPECT_EQ(cnapi.GetServer("00000000-0000-4000-8000-000000000001")->agents[0].version, "2.14.1");
  // A freeze of agent rollouts holds the next one.
  TaskQueue q(store_.get());
  TaskRecord freeze;
  freeze.project_uuid = store_->GetProject("p")->uuid;
  freeze.kind = "freeze";
  freeze.only = {"agent-rollout"};
  ASSERT_TRUE(q.Add(freeze).ok());
  triton::Server back = *cnapi.GetServer("00000000-0000-4000-8000-000000000004");
  back.status = "running";
  cnapi.PutServer(back);
  clock_.Advance(absl::Seconds(1));
  ServerCalls(&cnapi);
  EXPECT_EQ(r.SyncProject("p")->changed, 0);  // sees cn1's task end: reads cn1, puts the listing off
  EXPECT_EQ(ServerCalls(&cnapi), std::vector<std::string>{"GetServer 00000000-0000-4000-8000-000000000001"});
  auto held = r.SyncProject("p");  // the listing sees cn4 back
  EXPECT_EQ(ServerCalls(&cnapi), std::vector<std::string>{"ListServers"});
  EXPECT_EQ(held->changed, 0);
  EXPECT_EQ(held->held, 1);
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// While a batch of an agent rollout runs, its servers are not listed
// before the batch that follows: a listing of 1,000 servers held each
// batch ~200 ms about once a second (issue 49). Listed after the send
// instead, and by a poll only once the listing is kServersListingDeferral ×
// full_observe old (ListServersInFull).
TEST_F(ReconcilerTest, AgentServersAreListedWhileABatchRunsNotBeforeTheNext) {
  triton::FakeCnapiClient cnapi;
  PutAgentServers(&cnapi, &imgapi_, 5);
  Reconciler r(store_.get(), &vmapi_, &imgapi_, &clock_, AgentOptions(&cnapi));
  Apply("project: p\nservices:\n  cn-agent:\n    compute_type: agent\n    image: cn-agent@2.14.1\n"
        "    servers: {select: all, exclude: [headnode]}\n    update: {rolling: 2}\n");
  cnapi.HoldTasks(true);
  EXPECT_EQ(r.SyncProject("p")->changed, 2);  // cn1, cn2
  EXPECT_EQ(ServerCalls(&cnapi), std::vector<std::string>{"ListServers"});
  clock_.Advance(absl::Seconds(1));  // full_observe: due, but the batch runs
  EXPECT_EQ(r.SyncProject("p")->changed, 0);
  EXPECT_TRUE(ServerCalls(&cnapi).empty());
  clock_.Advance(absl::Seconds(2));  // kServersListingDeferral × full_observe: the safety net all the same
  EXPECT_EQ(r.SyncProject("p")->changed, 0);
  EXPECT_EQ(ServerCalls(&cnapi), std::vector<std::string>{"ListServers"});
  cnapi.HoldTasks(false);
  clock_.Advance(absl::Seconds(1));
  // The batch ended: its servers read, the next batch sent, then the listing.
  EXPECT_EQ(r.SyncProject("p")->changed, 2);  // cn3, cn4
  EXPECT_EQ(ServerCalls(&cnapi), (std::vector<std::string>{"GetServer 00000000-0000-4000-8000-000000000001",
                                                      "GetServer 00000000-0000-4000-8000-000000000002",
                                                      "ListServers"}));
}

TEST_F(ReconcilerTest, ReprovisionRollingOverride) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 6, update: {rolling: 1, max_surge: 6}}\n");
  ASSERT_EQ(reconciler_->SyncProject("p")->created, 6);
  Apply("project: p\nservices:\n  web: {image: web@1, count: 6, update: {rolling: 1, max_surge: 6}, tags: {v: \"2\"}}\n");
  TaskQueue q(store_.get());
  TaskRecord t;
  t.project_uuid = store_->GetProject("p")->uuid;
  t.kind = "reprovision";
  t.rolling = 4;
  ASSERT_TRUE(q.Add(t).ok());
  EXPECT_EQ(reconciler_->SyncProject("p")->created, 4);  // not update.rolling's 1
}

// The pump: creates the job window held go out as jobs end, without
// deciding again, until anything changes; ended jobs are counted once, by
// the next sync.
TEST_F(ReconcilerTest, PumpSendsTheHeldCreatesAsJobsEnd) {
  Start(2);
  vmapi_.set_auto_complete(false);
  Apply("project: p\nservices:\n  web: {image: web@1, count: 5}\n");
  std::string uuid = store_->GetProject("p")->uuid;
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->created, 2);
  EXPECT_EQ(r->held, 3);
  // No slot free: nothing goes out, but the pump is still on.
  auto pumped = reconciler_->PumpProject(uuid);
  ASSERT_TRUE(pumped.has_value());
  EXPECT_EQ(pumped->created, 0);
  // Both jobs end: two more creates, named after the first two, and no
  // listing (no decision).
  vmapi_.CompleteJobs();
  vmapi_.ClearCalls();
  pumped = reconciler_->PumpProject(uuid);
  ASSERT_TRUE(pumped.has_value());
  EXPECT_EQ(pumped->created, 2);
  EXPECT_EQ(pumped->finished, 2);
  std::vector<std::string> calls = CallNames();
  std::sort(calls.begin(), calls.end());
  EXPECT_EQ(calls, (std::vector<std::string>{"CreateVm", "CreateVm", "GetJob", "GetJob"}));
  std::set<std::string> aliases;
  for (const auto& vm : vmapi_.AllVms()) aliases.insert(vm.alias);
  EXPECT_EQ(aliases, (std::set<std::string>{"p-web-1", "p-web-2", "p-web-3", "p-web-4"}));
  // Anything that changes (an apply, a task, a health change) ends the pump:
  // the project is decided again.
  reconciler_->WakeProject(uuid);
  vmapi_.CompleteJobs();
  EXPECT_FALSE(reconciler_->PumpProject(uuid).has_value());
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finished, 4);  // two seen by the pump, two now: each counted once
  EXPECT_EQ(r->created, 1);
  vmapi_.CompleteJobs();
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  aliases.clear();
  for (const auto& vm : vmapi_.AllVms()) aliases.insert(vm.alias);
  EXPECT_EQ(aliases, (std::set<std::string>{"p-web-1", "p-web-2", "p-web-3", "p-web-4", "p-web-5"}));
  auto tasks = TasksOf(store_.get(), "scale");
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].created, 5);
  EXPECT_EQ(tasks[0].state, "completed");
}

// A pump round's jobs are written to the store on a thread of their own
// while the next round goes on: the next round counts them although their
// write has not committed (the job window holds), reading the jobs in
// flight does not wait for that commit, and a sync waits for it before it
// reads. A second connection holds the database's write lock meanwhile.
TEST_F(ReconcilerTest, APumpRoundsJobsCountBeforeTheirWriteCommits) {
  reconciler_.reset();
  const std::string path = ::testing::TempDir() + "/pump-write.db";
  std::remove(path.c_str());
  auto file_store = SqlProjectStore::Open(path, &clock_);
  ASSERT_TRUE(file_store.ok()) << file_store.status();
  store_ = std::move(*file_store);
  std::string uuid = HeldScaleUp(3);  // a window of one job: one create out, two held
  vmapi_.CompleteJobs();
  auto other = Database::Open(path);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*other)->Exec("BEGIN IMMEDIATE").ok());  // the store's writes wait from here
  auto pumped = reconciler_->PumpProject(uuid);  // returns with its write still waiting
  ASSERT_TRUE(pumped.has_value());
  EXPECT_EQ(pumped->created, 1);
  EXPECT_EQ(pumped->finished, 1);
  std::string sent;
  for (const std::string& c : vmapi_.calls()) {
    if (c.rfind("CreateVm ", 0) == 0) sent = c.substr(9);
  }
  auto listed = store_->ListJobs(uuid);  // the copy as of the last commit: no waiting for the write
  ASSERT_TRUE(listed.ok());
  for (const JobRecord& j : *listed) EXPECT_NE(j.instance, sent) << "written before the lock was released";
  // The next round counts the job not yet written: the window is full.
  pumped = reconciler_->PumpProject(uuid);
  ASSERT_TRUE(pumped.has_value());
  EXPECT_EQ(pumped->created, 0);
  EXPECT_EQ(pumped->finished, 0);
  ASSERT_TRUE((*other)->Exec("ROLLBACK").ok());
  // The sync waits for the write, then finds the job in flight.
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->created, 0);
  EXPECT_EQ(r->finished, 1);  // the sync's own create, seen ending by the first round
  listed = store_->ListJobs(uuid);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].instance, sent);
  EXPECT_TRUE(reconciler_->ExecuteProblems(uuid).empty());
}

// New instances are made out of CNS and put back once ready (their start
// window). Put-backs the job window holds go out as jobs end, from the
// backlog, like creates: no sync (no listing) per job slot.
TEST_F(ReconcilerTest, PumpPutsReadyInstancesBackIntoCnsAsJobsEnd) {
  Start(1);  // a window of one job
  Apply("project: p\nservices:\n  web: {image: web@1, count: 3, start: {window: 1s}}\n");
  std::string uuid = store_->GetProject("p")->uuid;
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  for (int round = 0; round < 4 && reconciler_->PumpProject(uuid).has_value(); ++round) {
  }
  ASSERT_EQ(vmapi_.AllVms().size(), 3u);
  for (const auto& vm : vmapi_.AllVms()) {
    ASSERT_EQ(vm.customer_metadata.count("triton.cns.status"), 1u) << vm.alias << " is made out of CNS";
  }
  clock_.Advance(absl::Seconds(2));  // past the start window: all three ready
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->changed, 1);
  EXPECT_EQ(r->held, 2);
  vmapi_.ClearCalls();
  for (int round = 0; round < 2; ++round) {
    auto pumped = reconciler_->PumpProject(uuid);
    ASSERT_TRUE(pumped.has_value()) << "round " << round;
    EXPECT_EQ(pumped->changed, 1) << "round " << round;
  }
  int updates = 0;
  for (const std::string& c : CallNames()) {
    EXPECT_NE(c, "ListVms") << "a pump round lists nothing";
    updates += c == "Update";
  }
  EXPECT_EQ(updates, 2);
  for (const auto& vm : vmapi_.AllVms()) {
    EXPECT_EQ(vm.customer_metadata.count("triton.cns.status"), 0u) << vm.alias << " is back in CNS";
  }
  // The next sync counts them: each put back once, named.
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->changed, 0);
  auto events = store_->ListEvents("p", 0, 1000);
  ASSERT_TRUE(events.ok());
  std::set<std::string> in;
  for (const EventRecord& e : *events) {
    if (e.kind == "instance.discovery-in") {
      EXPECT_TRUE(in.insert(e.subject).second) << "twice: " << e.detail;
      EXPECT_NE(e.detail.find("p-web-"), std::string::npos) << "named by its alias: " << e.detail;
    }
  }
  EXPECT_EQ(in.size(), 3u);
}

TEST_F(ReconcilerTest, PumpStopsAtAFailedJobAndWhenTheSyncIsOld) {
  std::string uuid = HeldScaleUp(4);
  // The first create fails: nothing more goes out until Decide counted it.
  std::set<std::string> first;
  for (const std::string& c : vmapi_.calls()) {
    if (c.rfind("CreateVm ", 0) == 0) first.insert(c.substr(9));
  }
  ASSERT_EQ(first.size(), 1u);
  vmapi_.CompleteJobs(first);
  vmapi_.ClearCalls();
  EXPECT_FALSE(reconciler_->PumpProject(uuid).has_value());
  EXPECT_EQ(vmapi_.calls(), std::vector<std::string>{"GetJob " + vmapi_.calls()[0].substr(7)});
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finished, 1);
  EXPECT_EQ(r->created, 0);  // backoff after the failure
  auto view = reconciler_->Inspect("p");
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->snapshot.memory.at("web").history.consecutive(), 1);
  // Past the backoff a sync creates again; the pump then runs until the
  // sync is full_observe old.
  clock_.Advance(absl::Seconds(3));
  r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->created, 1);
  vmapi_.CompleteJobs();
  auto pumped = reconciler_->PumpProject(uuid);
  ASSERT_TRUE(pumped.has_value());
  EXPECT_EQ(pumped->created, 1);
  vmapi_.CompleteJobs();
  clock_.Advance(absl::Seconds(1));
  EXPECT_FALSE(reconciler_->PumpProject(uuid).has_value());
}

// Jobs the pump saw end wait in the store for the next sync to count them;
// every pump round reads them again, so past 16 job windows of them (with a
// cheap sync) the project is synced instead.
TEST_F(ReconcilerTest, PumpSyncsOnceEnoughWindowsOfEndedJobsWait) {
  const int kWindows = Reconciler::kEndedWindowsPerSync;  // a window of 1 job here
  std::string uuid = HeldScaleUp(kWindows + 24);
  int pumped = 0;
  while (pumped <= kWindows + 24) {
    vmapi_.CompleteJobs();
    auto r = reconciler_->PumpProject(uuid);
    if (!r) break;
    ASSERT_EQ(r->created, 1);
    ++pumped;
  }
  EXPECT_EQ(pumped, kWindows);
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finished, kWindows + 1);  // each counted once, by this sync
  EXPECT_EQ(r->created, 1);
}

TEST_F(ReconcilerTest, EnvironmentCommandDiskAndCpuReachTheCreate) {
  Apply("project: p\ncns: false\nmeta: {pw: s3cret}\nservices:\n"
        "  app: {image: web@1, environment: {PW: \"{{ .meta.pw }}\", NAME: \"{{ .placement.instance.name }}\"}, "
        "command: run --fast, resources: {disk: 20g, cpu: 1.5}}\n"
        "  box: {compute_type: infrastructure, image: base@1, environment: {Q: \"it's\"}, command: /opt/start}\n"
        "  plain: {compute_type: infrastructure, image: base@1}\n");
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  std::map<std::string, triton::Vm> by;
  for (const auto& vm : vmapi_.AllVms()) by[vm.tags.at(kTagService)] = vm;
  ASSERT_EQ(by.size(), 3u);
  const triton::Vm& app = by["app"];
  EXPECT_TRUE(app.docker);
  EXPECT_EQ(app.brand, "lx");
  EXPECT_EQ(app.quota, 20);
  EXPECT_EQ(app.cpu_cap, 150);
  EXPECT_EQ(app.internal_metadata.at("docker:env"), "[\"NAME=p-app-1\",\"PW=s3cret\"]");
  EXPECT_EQ(app.internal_metadata.at("docker:cmd"), "[\"/bin/sh\",\"-c\",\"run --fast\"]");
  const triton::Vm& box = by["box"];
  EXPECT_FALSE(box.docker);
  EXPECT_EQ(box.brand, "lx");  // an lx-dataset image
  EXPECT_TRUE(box.internal_metadata.empty());
  EXPECT_EQ(box.customer_metadata.at("mariposa:env"), "{\"Q\":\"it's\"}");
  EXPECT_EQ(box.customer_metadata.at("user-script"), "#!/bin/sh\nexport Q='it'\\''s'\n/opt/start\n");
  const triton::Vm& plain = by["plain"];
  EXPECT_EQ(plain.customer_metadata.count("user-script"), 0u);
  EXPECT_EQ(plain.customer_metadata.count("mariposa:env"), 0u);
  EXPECT_EQ(plain.quota, 0);  // VMAPI's default
}

TEST_F(ReconcilerTest, AnImageTheComputeTypeCannotRunHoldsCreatesAndFailsTheService) {
  // Applied before the image changed type (apply checks brands; a sync
  // meets what changed since): nothing is created and the verdict says why.
  Apply("project: p\nservices:\n  box: {compute_type: infrastructure, image: web@1, count: 2}\n");
  auto r = reconciler_->SyncProject("p");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->created, 0);
  EXPECT_EQ(Running(), 0);
  auto view = reconciler_->Inspect("p");
  ASSERT_TRUE(view.ok()) << view.status();
  const ServiceVerdict& v = view->decision.verdicts.at("box");
  EXPECT_EQ(v.state, VerdictState::kFailed);
  EXPECT_EQ(v.reason, "compute_type: compute_type infrastructure cannot run image web@1 (type docker): it is a Docker "
                      "image; use compute_type: docker");
}

// Several nodes: a sync under a fence acts while the lease holds; once the
// lease moved to another node, the same (stale) fence sends nothing to
// Triton and writes nothing, and says why.
TEST_F(ReconcilerTest, ASyncUnderALostLeaseSendsNothing) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 3}\n");
  std::string uuid = store_->GetProject("p")->uuid;
  auto take = [&](const std::string& node, int64_t expected, absl::Duration ttl) {
    LeaseWrite w;
    w.kind = LeaseWrite::kAcquire;
    w.project = uuid;
    w.node = node;
    w.expected_epoch = expected;
    w.epoch = expected + 1;
    w.expires = clock_.Now() + ttl;
    auto made = store_->WriteLeases({w});
    ASSERT_TRUE(made.ok() && (*made)[0]) << node;
  };
  take("node-a", 0, absl::Seconds(10));
  Fence a{uuid, "node-a", 1, absl::Seconds(2)};
  {
    ScopedFence f(a);
    auto r = reconciler_->SyncProject("p");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->created, 3);
  }
  ASSERT_EQ(Running(), 3);
  // node-a stalls past its lease; node-b takes the project.
  clock_.Advance(absl::Seconds(11));
  take("node-b", 1, absl::Seconds(10));
  Apply("project: p\nservices:\n  web: {image: web@1, count: 5}\n");
  int64_t jobs_before = static_cast<int64_t>(store_->ListJobs(uuid)->size());
  {
    ScopedFence f(a);
    auto r = reconciler_->SyncProject("p");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->created, 0);
  }
  EXPECT_EQ(static_cast<int>(vmapi_.AllVms().size()), 3) << "a node without the lease created VMs";
  EXPECT_EQ(static_cast<int64_t>(store_->ListJobs(uuid)->size()), jobs_before);
  bool said = false;
  for (const Problem& p : reconciler_->ExecuteProblems(uuid)) {
    said = said || p.error.find("no longer holds the project's lease") != std::string::npos;
  }
  EXPECT_TRUE(said) << "the refusal is not among the sync's problems";
  // node-b, under its own fence, creates the two more.
  {
    ScopedFence f(Fence{uuid, "node-b", 2, absl::Seconds(2)});
    auto r = reconciler_->SyncProject("p");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->created, 2);
  }
}

// The reconciler's workers leave a project whose lease this node does not
// hold to the node that does.
TEST_F(ReconcilerTest, WorkersSkipProjectsThisNodeDoesNotRun) {
  Apply("project: p\nservices:\n  web: {image: web@1, count: 3}\n");
  std::string uuid = store_->GetProject("p")->uuid;
  absl::Notification asked;
  std::atomic<int> asks{0};
  ReconcilerOptions o;
  o.owner_uuid = "930896af-bf8c-48d4-885c-6573a94b1853";
  o.network_uuid = "aaaaaaaa-0000-4000-8000-000000000001";
  o.lease = [&](const std::string& project) -> std::optional<Fence> {
    EXPECT_EQ(project, uuid);
    if (asks++ == 0) asked.Notify();
    return std::nullopt;
  };
  reconciler_ = std::make_unique<Reconciler>(store_.get(), &vmapi_, &imgapi_, &clock_, o);
  reconciler_->Start();
  asked.WaitForNotification();
  reconciler_->Stop();  // the worker finishes what it took up
  EXPECT_TRUE(vmapi_.AllVms().empty()) << "a project another node runs was synced here";
}

// --max-jobs holds across projects synced at the same time: a sync holds the
// slots it may fill until it has sent, so another sync that runs meanwhile
// (here: while the first one's CreateVm waits on VMAPI) does not take them
// too. Before, both saw the same free slots and sent twice the limit.
TEST_F(ReconcilerTest, TwoSyncsAtOnceStayWithinMaxJobs) {
  StartWithJobWindow(4);
  Apply("project: a\ncns: false\nservices:\n  web: {image: web@1, count: 4}\n");
  Apply("project: b\ncns: false\nservices:\n  web: {image: web@1, count: 4}\n");
  const std::string a = store_->GetProject("a")->uuid;
  absl::Notification a_sending, b_done;
  std::atomic<bool> first{true};
  vmapi_.set_on_create_vm([&](const triton::CreateVmRequest& req) {
    if (req.tags.at(kTagProject) == a && first.exchange(false)) {
      a_sending.Notify();
      b_done.WaitForNotification();
    }
  });
  std::thread sync_a([&] { EXPECT_TRUE(reconciler_->SyncProject("a").ok()); });
  a_sending.WaitForNotification();
  auto b = reconciler_->SyncProject("b");
  b_done.Notify();
  sync_a.join();
  vmapi_.set_on_create_vm(nullptr);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->created, 0) << "b took the slots a holds while it sends";
  EXPECT_EQ(vmapi_.AllVms().size(), 4u) << "--max-jobs 4 with two syncs at once";
  // Once a's jobs end, b gets its turn.
  vmapi_.CompleteJobs();
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(reconciler_->SyncProject("a").ok());
  b = reconciler_->SyncProject("b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->created, 4);
}

// --max-jobs is shared fairly: while other projects wait for slots, a
// project gets its share of the window, not every slot that frees up.
// Before, the project that synced first refilled all of --max-jobs as its
// jobs ended and the others waited until it was done.
TEST_F(ReconcilerTest, ProjectsWaitingForMaxJobsGetTheirShare) {
  StartWithJobWindow(6);
  for (const char* p : {"a", "b", "c"}) {
    Apply(absl::StrCat("project: ", p, "\ncns: false\nservices:\n  web: {image: web@1, count: 12}\n"));
  }
  auto created = [&](const char* p) {
    auto r = reconciler_->SyncProject(p);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->created : -1;
  };
  EXPECT_EQ(created("a"), 6);
  EXPECT_EQ(created("b"), 0) << "a holds all of --max-jobs";
  EXPECT_EQ(created("c"), 0);
  vmapi_.CompleteJobs();
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(created("a"), 2) << "b and c wait: a's share is a third";
  EXPECT_EQ(created("b"), 2);
  EXPECT_EQ(created("c"), 2);
  EXPECT_EQ(vmapi_.AllVms().size(), 12u);
}

// A job's end and what it tells are stored together: a reader of the store
// (status, which counts the jobs in flight) never sees the job gone without
// its event. Here the reader looks while the same sync sends its next create;
// before, the sync's events were written only after everything it sent.
TEST_F(ReconcilerTest, AJobsEndIsStoredWithItsEvent) {
  Start(1);
  vmapi_.set_auto_complete(false);
  Apply("project: p\ncns: false\nservices:\n  web: {image: web@1, count: 1}\n  db: {image: web@1, count: 1}\n");
  const std::string uuid = store_->GetProject("p")->uuid;
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  ASSERT_EQ(vmapi_.AllVms().size(), 1u);
  vmapi_.CompleteJobs({vmapi_.AllVms()[0].uuid});  // the first create fails
  clock_.Advance(absl::Seconds(1));
  bool looked = false;
  vmapi_.set_on_create_vm([&](const triton::CreateVmRequest&) {
    looked = true;
    EXPECT_TRUE(store_->ListJobs(uuid)->empty());
    EXPECT_TRUE(HasEvent(store_.get(), "instance.create-failed")) << "the failed create's job is gone, its event not written";
  });
  auto r = reconciler_->SyncProject("p");
  vmapi_.set_on_create_vm(nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(looked) << "the other service's create was not sent";
  EXPECT_TRUE(HasEvent(store_.get(), "instance.create-failed"));
}

// A project whose lease went to another node: this node forgets it and
// takes its health checks back from its agents (the new node assigns them).
TEST_F(ReconcilerTest, ReleasingAProjectDropsItsHealthChecks) {
  health::Coordinator coordinator(&clock_, absl::Seconds(10), nullptr);
  ReconcilerOptions o;
  o.owner_uuid = "930896af-bf8c-48d4-885c-6573a94b1853";
  o.network_uuid = "aaaaaaaa-0000-4000-8000-000000000001";
  o.health = &coordinator;
  reconciler_ = std::make_unique<Reconciler>(store_.get(), &vmapi_, &imgapi_, &clock_, o);
  Apply("project: p\nservices:\n  web: {image: web@1, count: 2}\n");
  std::string uuid = store_->GetProject("p")->uuid;
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  // The checks this node's syncs gave its agents.
  health::Target t;
  t.instance = "11111111-2222-4333-8444-555555555555";
  t.check = "tcp";
  coordinator.Assign(uuid, {t});
  ASSERT_EQ(coordinator.Checks(uuid).size(), 1u);
  reconciler_->ReleaseProject(uuid);
  EXPECT_TRUE(coordinator.Checks(uuid).empty()) << "a released project's checks stay with this node's agents";
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// An image imported from the source: once the import ends the reconciler
// forgets what it resolved and says so (options.images_changed), so that the
// other nodes forget theirs too (the wake-up bus's "images").
TEST_F(ReconcilerTest, AnEndedImportIsAnnouncedToTheOtherNodes) {
  triton::FakeImgapiClient source;
  triton::Image web2{"44444444-4444-4444-8444-444444444444", "web", "2", "active", "linux", "docker", "", "",
                     "2026-02-01"};
  source.PutImage(web2);
  imgapi_.PutRemoteImage(web2);
  int announced = 0;
  ReconcilerOptions o;
  o.owner_uuid = "930896af-bf8c-48d4-885c-6573a94b1853";
  o.network_uuid = "aaaaaaaa-0000-4000-8000-000000000001";
  o.image_source = &source;
  o.image_source_url = "https://updates.example.com";
  o.images_changed = [&] { ++announced; };
  reconciler_ = std::make_unique<Reconciler>(store_.get(), &vmapi_, &imgapi_, &clock_, o);
  Apply("project: p\nservices:\n  web: {image: web@2, count: 1}\n");
  for (int i = 0; i < 4 && Running() < 1; ++i) {
    ASSERT_TRUE(reconciler_->SyncProject("p").ok());
    clock_.Advance(absl::Seconds(1));
  }
  EXPECT_EQ(Running(), 1) << "the imported image's instance was not created";
  EXPECT_GE(announced, 1) << "the ended import was not announced";
  int after = announced;
  ASSERT_TRUE(reconciler_->SyncProject("p").ok());
  EXPECT_EQ(announced, after) << "a sync with no import announced one";
}

}  // namespace
}  // namespace mariposa::convergence
