#include "convergence/informer/observer.h"

#include <algorithm>
#include <functional>

#include "convergence/triton/fake_clients.h"
#include "projects/manifest.h"
#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

triton::Vm V(const std::string& uuid, const std::string& state, std::map<std::string, std::string> tags) {
  triton::Vm v;
  v.uuid = uuid;
  v.state = state;
  v.tags = std::move(tags);
  v.create_timestamp = "2026-11-22T12:00:00.250Z";
  return v;
}

TEST(ObserverTest, OnlyTheProjectsOwnVms) {
  triton::FakeVmapiClient vmapi;
  vmapi.PutVm(V("a", "running", {{kTagProject, "p1"}, {kTagService, "web"}, {kTagVersion, "v2"}, {kTagSpec, "h"}}));
  vmapi.PutVm(V("b", "failed", {{kTagProject, "p1"}, {kTagService, "web"}, {kTagVersion, "v-gone"}}));
  vmapi.PutVm(V("c", "destroyed", {{kTagProject, "p1"}, {kTagService, "web"}}));
  vmapi.PutVm(V("other", "running", {{kTagProject, "p2"}, {kTagService, "web"}}));
  vmapi.PutVm(V("hand-made", "running", {{kTagProject, "p1"}}));  // no service tag
  vmapi.PutVm(V("untagged", "running", {}));
  Observer obs(&vmapi);
  auto got = obs.ObserveProject("p1", {{"v1", 1}, {"v2", 2}});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  const InstanceState& a = (*got)[0];
  EXPECT_EQ(a.uuid, "a");
  EXPECT_EQ(a.service, "web");
  EXPECT_EQ(a.state, "running");
  EXPECT_EQ(a.health, "unknown");
  EXPECT_EQ(a.spec_hash, "h");
  EXPECT_EQ(a.version, 2);
  EXPECT_EQ(a.created, absl::FromUnixMillis(1795348800250));
  EXPECT_EQ((*got)[1].version, 0);  // unknown version uuid: oldest
  // The query asked VMAPI for the project's tag only.
  EXPECT_EQ(vmapi.calls().back(), "ListVms");
}

// Issue 48: what Mariposa made an instance with is fingerprinted; a change
// by hand to its package, its tags (not Mariposa's own) or its metadata
// (not a user's CNS drain) is named.
TEST(ObserverTest, ChangesByHandAreNamed) {
  triton::Vm vm;
  vm.uuid = "vm-1";
  vm.state = "running";
  vm.billing_id = "pkg-1";
  vm.ram = 1024;
  vm.tags = {{kTagProject, "p"}, {kTagService, "web"}, {kTagSpec, "s"}, {"role", "web"}, {kCnsServicesTag, "p-web"}};
  vm.customer_metadata = {{"user-script", "run"}};
  vm.tags[kTagMade] = MadeFingerprint(vm.billing_id, vm.ram, vm.tags, vm.customer_metadata, true);
  struct Case {
    std::string name;
    std::function<void(triton::Vm*)> edit;
    std::string changed;
  };
  const std::vector<Case> cases = {
      {"nothing", [](triton::Vm*) {}, ""},
      {"resized", [](triton::Vm* v) { v->ram = 2048; }, "package"},
      {"another package", [](triton::Vm* v) { v->billing_id = "pkg-2"; }, "package"},
      {"a tag changed", [](triton::Vm* v) { v->tags["role"] = "db"; }, "tags"},
      {"a tag added", [](triton::Vm* v) { v->tags["owner"] = "bob"; }, "tags"},
      {"a tag removed", [](triton::Vm* v) { v->tags.erase("role"); }, "tags"},
      {"Mariposa's own tags", [](triton::Vm* v) { v->tags[kTagVersion] = "v2"; v->tags[kCnsServicesTag] = "x"; }, ""},
      {"metadata changed", [](triton::Vm* v) { v->customer_metadata["user-script"] = "evil"; }, "metadata"},
      {"metadata removed", [](triton::Vm* v) { v->customer_metadata.clear(); }, "metadata"},
      {"a CNS drain", [](triton::Vm* v) { v->customer_metadata[kCnsStatusKey] = "down"; }, ""},
      {"all three",
       [](triton::Vm* v) {
         v->ram = 1;
         v->tags["role"] = "";
         v->customer_metadata["k"] = "v";
       },
       "package+tags+metadata"},
      {"made before fingerprints", [](triton::Vm* v) { v->tags.erase(kTagMade); v->ram = 1; }, ""},
      {"a fingerprint edited into nonsense", [](triton::Vm* v) { v->tags[kTagMade] = "x"; v->ram = 1; }, ""},
  };
  for (const Case& c : cases) {
    triton::Vm v = vm;
    c.edit(&v);
    auto i = Observer::FromVm(v, "p", {});
    ASSERT_TRUE(i.has_value()) << c.name;
    EXPECT_EQ(i->hand_changed, c.changed) << c.name;
  }
  // Made without a billing_id (no PAPI): one VMAPI fills in is no change.
  triton::Vm raw = vm;
  raw.billing_id.clear();
  raw.tags[kTagMade] = MadeFingerprint("", raw.ram, raw.tags, raw.customer_metadata, false);
  raw.billing_id = "00000000-0000-0000-0000-000000000000";
  EXPECT_EQ(Observer::FromVm(raw, "p", {})->hand_changed, "");
}

// Issue 48, 10: the digest (uuid, state, last_modified) finds what the
// change feed lost: a VM changed since the kept state, one the kept state
// lacks, one gone from VMAPI; nothing when they agree.
TEST(ObserverTest, TheDigestFindsWhatTheFeedMissed) {
  const absl::Time t0 = absl::FromUnixSeconds(1800000000);
  auto kept = [&](const std::string& uuid, const std::string& state, absl::Time modified) {
    InstanceState i;
    i.uuid = uuid;
    i.state = state;
    i.created = t0 - absl::Minutes(5);
    i.modified = modified;
    return i;
  };
  auto seen = [&](const std::string& uuid, const std::string& state, absl::Time modified) {
    triton::Vm v;
    v.uuid = uuid;
    v.state = state;
    v.last_modified = absl::FormatTime(absl::RFC3339_full, modified, absl::UTCTimeZone());
    return v;
  };
  const absl::Time read = t0 + absl::Seconds(10);
  std::vector<InstanceState> list = {kept("a", "running", t0), kept("b", "running", t0), kept("c", "running", t0),
                                     kept("f", "failed", t0)};
  // Agreeing (f, failed, is not in a listing of active VMs).
  EXPECT_TRUE(DigestSuspects(list, {seen("a", "running", t0), seen("b", "running", t0), seen("c", "running", t0)}, read)
                  .empty());
  // a stopped (item lost), c destroyed (item lost), d new.
  EXPECT_EQ(DigestSuspects(list,
                           {seen("a", "stopped", t0 + absl::Seconds(3)), seen("b", "running", t0),
                            seen("d", "running", t0 + absl::Seconds(1))},
                           read),
            (std::vector<std::string>{"a", "c", "d"}));
  // Made after the digest was read: not missing from it.
  InstanceState young = kept("e", "provisioning", read + absl::Seconds(1));
  young.created = read + absl::Seconds(1);
  list.push_back(young);
  EXPECT_TRUE(DigestSuspects(list, {seen("a", "running", t0), seen("b", "running", t0), seen("c", "running", t0)}, read)
                  .empty());
}

TEST(ObserverTest, VmapiErrorsCarryContext) {
  triton::FakeVmapiClient vmapi;
  vmapi.FailNext("ListVms", absl::UnavailableError("vmapi ListVms: 503 ServiceUnavailable"));
  Observer obs(&vmapi);
  auto got = obs.ObserveProject("p1", {});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(got.status().message(), "observing project p1: vmapi ListVms: 503 ServiceUnavailable");
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

std::vector<std::string> Uuids(const std::vector<InstanceState>& got) {
  std::vector<std::string> out;
  for (const auto& i : got) out.push_back(i.uuid);
  std::sort(out.begin(), out.end());
  return out;
}

// Read service by service in parallel; a VM of a service that is not asked
// for (it left the manifest) makes the counts disagree and everything is
// read in one listing, so nothing is missed.
TEST(ObserverTest, ParallelPerServiceFallsBackWhenCountsDisagree) {
  triton::FakeVmapiClient vmapi;
  vmapi.PutVm(V("w1", "running", {{kTagProject, "p1"}, {kTagService, "web"}}));
  vmapi.PutVm(V("w2", "failed", {{kTagProject, "p1"}, {kTagService, "web"}}));
  vmapi.PutVm(V("d1", "running", {{kTagProject, "p1"}, {kTagService, "db"}}));
  vmapi.PutVm(V("x", "running", {{kTagProject, "p2"}, {kTagService, "db"}}));
  Observer obs(&vmapi);
  auto got = obs.ObserveProject("p1", {}, {"web", "db"}, 4);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Uuids(*got), (std::vector<std::string>{"d1", "w1", "w2"}));
  int lists = 0;
  for (const auto& c : vmapi.calls()) lists += c == "ListVms";
  EXPECT_EQ(lists, 3);  // one per service and the count (the fake counts by listing); no fallback

  vmapi.PutVm(V("old", "running", {{kTagProject, "p1"}, {kTagService, "cache"}}));  // not in the manifest
  vmapi.ClearCalls();
  got = obs.ObserveProject("p1", {}, {"web", "db"}, 4);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Uuids(*got), (std::vector<std::string>{"d1", "old", "w1", "w2"}));
  lists = 0;
  for (const auto& c : vmapi.calls()) lists += c == "ListVms";
  EXPECT_EQ(lists, 4);  // the same three, then the full listing
}

// Listings name the project's accounts: a VM of another account that
// carries the project's tags is not the project's, in either way of reading;
// VMs of every account given (the tenant and the admin's core zones) are.
TEST(ObserverTest, OnlyTheProjectsAccounts) {
  triton::FakeVmapiClient vmapi;
  auto owned = [](std::string uuid, std::string owner, std::string service) {
    triton::Vm v = V(uuid, "running", {{kTagProject, "p1"}, {kTagService, service}});
    v.owner_uuid = std::move(owner);
    return v;
  };
  vmapi.PutVm(owned("w1", "tenant", "web"));
  vmapi.PutVm(owned("d1", "tenant", "db"));
  vmapi.PutVm(owned("z1", "admin", "imgapi"));
  vmapi.PutVm(owned("evil", "mallory", "web"));
  for (int parallel : {1, 4}) {
    auto got = Observer(&vmapi, {"tenant"}).ObserveProject("p1", {}, {"web", "db"}, parallel);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(Uuids(*got), (std::vector<std::string>{"d1", "w1"})) << parallel;
    got = Observer(&vmapi, {"tenant", "admin"}).ObserveProject("p1", {}, {"web", "db", "imgapi"}, parallel);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(Uuids(*got), (std::vector<std::string>{"d1", "w1", "z1"})) << parallel;
    for (const InstanceState& i : *got) EXPECT_EQ(i.owner_uuid, i.uuid == "z1" ? "admin" : "tenant");
  }
  // Without accounts (no --owner), every VM with the tags.
  auto all = Observer(&vmapi).ObserveProject("p1", {});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(Uuids(*all), (std::vector<std::string>{"d1", "evil", "w1", "z1"}));
  // Per-VM calls that name an account do not reach another's VM.
  EXPECT_EQ(vmapi.GetVm({"w1", "mallory"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(vmapi.DeleteVm({"w1", "mallory"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(vmapi.GetVm({"w1", "tenant"}).ok());
}

// A core zone is adopted by its role alone, once; it counts as current
// only when it runs the goal's image.
TEST(ObserverTest, AdoptionTagsOfCoreZones) {
  triton::Vm vm = V("z1", "running", {{"smartdc_role", "moray"}, {"smartdc_type", "core"}});
  vm.image_uuid = "img-new";
  struct Case {
    const char* name;
    std::map<std::string, std::string> tags;
    std::string state, image, service;
    std::string want_spec;  // "" = not adopted
  } cases[] = {
      {"runs the goal image", vm.tags, "running", "img-new", "moray", "spec-2"},
      {"an older image", vm.tags, "running", "img-old", "moray", "adopted"},
      {"stopped zones too", vm.tags, "stopped", "img-new", "moray", "spec-2"},
      {"another role", vm.tags, "running", "img-new", "imgapi", ""},
      {"no role", {{"smartdc_type", "core"}}, "running", "img-new", "moray", ""},
      {"destroyed", vm.tags, "destroyed", "img-new", "moray", ""},
      {"claimed by a project", {{"smartdc_role", "moray"}, {kTagProject, "other"}}, "running", "img-new", "moray", ""},
  };
  for (const Case& c : cases) {
    triton::Vm v = vm;
    v.tags = c.tags;
    v.state = c.state;
    v.image_uuid = c.image;
    auto tags = AdoptionTags(v, "p1", c.service, "ver-2", "spec-2", "img-new");
    if (c.want_spec.empty()) {
      EXPECT_TRUE(tags.empty()) << c.name;
      continue;
    }
    EXPECT_EQ(tags[kTagProject], "p1") << c.name;
    EXPECT_EQ(tags[kTagService], c.service) << c.name;
    EXPECT_EQ(tags[kTagVersion], "ver-2") << c.name;
    EXPECT_EQ(tags[kTagSpec], c.want_spec) << c.name;
    EXPECT_FALSE(tags.count(kTagCoreRole)) << c.name << ": the zone's own tags are kept, not rewritten";
  }
}

// The change feed's VMs applied to a project's instances: a table of
// before, changes and after (uuids with their states, in order).
TEST(ApplyVmChangesTest, FeedItemsReplaceJoinAndRemoveInstances) {
  const std::map<std::string, std::string> mine = {{kTagProject, "p1"}, {kTagService, "web"}};
  auto vm = [&](const std::string& uuid, const std::string& state, const std::string& modified,
                const std::string& owner = "acct") {
    triton::Vm v = V(uuid, state, mine);
    v.owner_uuid = owner;
    v.last_modified = modified;
    return v;
  };
  auto seen = [](const std::vector<InstanceState>& is) {
    std::vector<std::string> out;
    for (const InstanceState& i : is) out.push_back(i.uuid + ":" + i.state);
    return out;
  };
  const std::string t1 = "2026-11-26T10:00:01.000Z", t2 = "2026-11-26T10:00:02.000Z", t3 = "2026-11-26T10:00:03.000Z";
  struct Case {
    std::string name;
    std::vector<triton::Vm> before, changed;
    std::vector<std::string> want;
  };
  triton::Vm other_project = vm("c", "running", t2);
  other_project.tags[kTagProject] = "p2";
  const std::vector<Case> cases = {
      {"a new VM joins", {vm("a", "running", t1)}, {vm("b", "provisioning", t2)}, {"a:running", "b:provisioning"}},
      {"a change replaces", {vm("a", "running", t1)}, {vm("a", "stopped", t2)}, {"a:stopped"}},
      {"destroyed leaves", {vm("a", "running", t1), vm("b", "running", t1)}, {vm("a", "destroyed", t2)},
       {"b:running"}},
      {"an older item is skipped", {vm("a", "running", t2)}, {vm("a", "provisioning", t1)}, {"a:running"}},
      {"the same time is applied", {vm("a", "running", t2)}, {vm("a", "unknown", t2)}, {"a:unknown"}},
      {"items in order: the last wins", {vm("a", "provisioning", t1)},
       {vm("a", "running", t2), vm("a", "stopped", t3)}, {"a:stopped"}},
      {"destroyed then nothing: stays gone", {vm("a", "running", t1)},
       {vm("a", "destroyed", t2), vm("a", "running", t1)}, {}},
      {"another account's VM is not the project's", {}, {vm("x", "running", t1, "intruder")}, {}},
      {"an instance moved to another account leaves", {vm("a", "running", t1)},
       {vm("a", "running", t2, "intruder")}, {}},
      {"another project's VM is ignored", {vm("a", "running", t1)}, {other_project}, {"a:running"}},
  };
  for (const Case& c : cases) {
    std::vector<InstanceState> is;
    for (const triton::Vm& v : c.before) is.push_back(*Observer::FromVm(v, "p1", {}));
    ApplyVmChanges(c.changed, "p1", {}, {"acct"}, &is);
    EXPECT_EQ(seen(is), c.want) << c.name;
  }
}

}  // namespace
}  // namespace mariposa::convergence
