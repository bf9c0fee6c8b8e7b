// The HTTP Triton clients against a real tritonsim.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "convergence/triton/http.h"
#include "convergence/triton/http_clients.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using namespace mariposa::triton;  // NOLINT

const char* kOwner = "930896af-bf8c-48d4-885c-6573a94b1853";
const char* kImage = "11111111-1111-4111-8111-111111111111";
const char* kAgentImage = "22222222-2222-4222-8222-222222222222";
const char* kRemoteImage = "33333333-3333-4333-8333-333333333333";

class ClientsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string dir = TempDir("clients");
    WriteFile(dir + "/seed.json", R"({
      "images": [
        {"uuid": "11111111-1111-4111-8111-111111111111", "name": "nginx", "version": "1.4.0", "os": "linux"},
        {"uuid": "22222222-2222-4222-8222-222222222222", "name": "cn-agent", "version": "2.14.1", "os": "other"}
      ],
      "remote_images": [{"uuid": "33333333-3333-4333-8333-333333333333", "name": "redis", "version": "7.0"}]
    })");
    sim_ = new Tritonsim({"--servers", "4", "--seed", dir + "/seed.json"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
  }
  static void TearDownTestSuite() {
    delete sim_;
    sim_ = nullptr;
  }

  HttpOptions Options() {
    HttpOptions o;
    o.base_url = sim_->addr();
    o.backoff_base = absl::Milliseconds(5);
    return o;
  }
  // Counts requests per op and their attempts.
  MetricsHook Hook() {
    return [this](const RequestRecord& r) {
      std::lock_guard<std::mutex> l(mu_);
      records_.push_back(r);
    };
  }
  std::vector<RequestRecord> Records(const std::string& op) {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<RequestRecord> out;
    for (const auto& r : records_) {
      if (r.op == op) out.push_back(r);
    }
    return out;
  }
  void Control(const std::string& path, const std::string& body) {
    httplib::Client c(sim_->addr());
    auto r = c.Post(path.c_str(), body, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  }
  CreateVmRequest Req(const std::map<std::string, std::string>& tags) {
    CreateVmRequest r;
    r.owner_uuid = kOwner;
    r.brand = "lx";
    r.image_uuid = kImage;
    r.dim.ram = 128;
    r.networks = {"aaaaaaaa-0000-4000-8000-000000000001"};
    r.tags = tags;
    return r;
  }

  static Tritonsim* sim_;
  std::mutex mu_;
  std::vector<RequestRecord> records_;
};
Tritonsim* ClientsTest::sim_ = nullptr;

TEST_F(ClientsTest, PagingAcross2500VmsByOffsetAndMarker) {
  HttpVmapiClient vmapi(Options(), mariposa::RealClock::Get());
  std::set<std::string> created;
  for (int i = 0; i < 2500; ++i) {
    auto ref = vmapi.CreateVm(Req({{"bulk", "yes"}, {"parity", i % 2 ? "odd" : "even"}}));
    ASSERT_TRUE(ref.ok()) << ref.status();
    created.insert(ref->vm_uuid);
  }
  for (bool marker : {true, false}) {
    VmFilter f;
    f.tags = {{"bulk", "yes"}};
    f.page_by_marker = marker;
    auto all = vmapi.ListVms(f);
    ASSERT_TRUE(all.ok()) << all.status();
    std::set<std::string> seen;
    for (const auto& v : *all) seen.insert(v.uuid);
    EXPECT_EQ(all->size(), 2500u) << (marker ? "marker" : "offset");
    EXPECT_EQ(seen, created) << (marker ? "marker" : "offset");
  }
  VmFilter odd;
  odd.tags = {{"bulk", "yes"}, {"parity", "odd"}};
  odd.page_size = 300;
  auto odds = vmapi.ListVms(odd);
  ASSERT_TRUE(odds.ok());
  EXPECT_EQ(odds->size(), 1250u);
  for (const auto& v : *odds) EXPECT_EQ(v.tags.at("parity"), "odd");
  auto count = vmapi.CountVms(odd);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 1250);
}

TEST_F(ClientsTest, CreateWaitActDeleteAndIdempotentCreate) {
  HttpVmapiClient vmapi(Options(), mariposa::RealClock::Get());
  CreateVmRequest req = Req({{"mariposa.service", "web"}});
  req.uuid = "5f1c0c5e-0000-4000-8000-000000000001";
  req.alias = "jupiter-web-1";
  req.customer_metadata = {{"ports", "80"}};
  auto ref = vmapi.CreateVm(req);
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->vm_uuid, req.uuid);
  EXPECT_EQ(ref->workflow_api, sim_->addr());
  auto job = vmapi.WaitJob(ref->job_uuid, absl::Seconds(10));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->execution, "succeeded");
  EXPECT_EQ(job->task, "provision");
  // The same create again: ALREADY_EXISTS, not a second VM.
  auto again = vmapi.CreateVm(req);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  auto vm = vmapi.GetVm(req.uuid);
  ASSERT_TRUE(vm.ok());
  EXPECT_EQ(vm->state, "running");
  EXPECT_EQ(vm->alias, "jupiter-web-1");
  EXPECT_EQ(vm->tags.at("mariposa.service"), "web");
  ASSERT_EQ(vm->nics.size(), 1u);
  EXPECT_TRUE(vm->nics[0].primary);
  EXPECT_FALSE(vm->server_uuid.empty());

  auto stop = vmapi.Act(req.uuid, VmAction::kStop);
  ASSERT_TRUE(stop.ok());
  ASSERT_TRUE(vmapi.WaitJob(stop->job_uuid, absl::Seconds(10)).ok());
  EXPECT_EQ(vmapi.GetVm(req.uuid)->state, "stopped");
  EXPECT_TRUE(vmapi.Act(req.uuid, VmAction::kStop).ok());  // idempotent
  auto tags = vmapi.SetTags(req.uuid, {{"extra", "1"}}, false);
  ASSERT_TRUE(tags.ok());
  ASSERT_TRUE(vmapi.WaitJob(tags->job_uuid, absl::Seconds(10)).ok());
  EXPECT_EQ(vmapi.GetVm(req.uuid)->tags.size(), 2u);
  auto del = vmapi.DeleteVm(req.uuid);
  ASSERT_TRUE(del.ok());
  ASSERT_TRUE(vmapi.WaitJob(del->job_uuid, absl::Seconds(10)).ok());
  EXPECT_EQ(vmapi.GetVm(req.uuid)->state, "destroyed");
  auto missing = vmapi.GetVm("00000000-0000-4000-8000-00000000dead");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(TritonCode(missing.status()), "ResourceNotFound");
  EXPECT_TRUE(vmapi.Ping().ok());
}

TEST_F(ClientsTest, JobWaitHonoursSlowJobsAndDeadlines) {
  Control("/_sim/knobs", R"({"job_latency_ms": 300})");
  HttpVmapiClient vmapi(Options(), mariposa::RealClock::Get());
  auto ref = vmapi.CreateVm(Req({{"slow", "yes"}}));
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(vmapi.GetVm(ref->vm_uuid)->state, "provisioning");
  auto early = vmapi.WaitJob(ref->job_uuid, absl::Milliseconds(50));
  EXPECT_EQ(early.status().code(), absl::StatusCode::kDeadlineExceeded);
  auto done = vmapi.WaitJob(ref->job_uuid, absl::Seconds(10));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->execution, "succeeded");
  Control("/_sim/knobs", R"({"job_latency_ms": 0, "job_failure_rate": 1})");
  auto failing = vmapi.CreateVm(Req({{"doomed", "yes"}}));
  ASSERT_TRUE(failing.ok());
  auto failed = vmapi.WaitJob(failing->job_uuid, absl::Seconds(10));
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->execution, "failed");
  EXPECT_EQ(failed->error, "simulated job failure");
  EXPECT_EQ(vmapi.GetVm(failing->vm_uuid)->state, "failed");
  Control("/_sim/knobs", R"({"job_failure_rate": 0})");
}

TEST_F(ClientsTest, RetriesOn503ButNeverOn409) {
  HttpVmapiClient vmapi(Options(), mariposa::RealClock::Get(), Hook());
  Control("/_sim/fail", R"({"op": "ListVms", "count": 2, "status": 503})");
  VmFilter f;
  f.tags = {{"none", "here"}};
  auto list = vmapi.ListVms(f);
  ASSERT_TRUE(list.ok()) << list.status();
  auto recs = Records("ListVms");
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].code, 503);
  EXPECT_EQ(recs[1].code, 503);
  EXPECT_EQ(recs[2].code, 200);
  EXPECT_EQ(recs[2].attempt, 3);

  // Exhausted retries surface as UNAVAILABLE with the Triton code.
  Control("/_sim/fail", R"({"op": "GetVm", "count": 4, "status": 503})");
  auto gone = vmapi.GetVm("00000000-0000-4000-8000-000000000001");
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(TritonCode(gone.status()), "ServiceUnavailable");
  EXPECT_EQ(Records("GetVm").size(), 4u);

  // 409: one attempt only.
  CreateVmRequest bad = Req({});
  bad.brand = "";
  auto v = vmapi.CreateVm(bad);
  EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(TritonCode(v.status()), "ValidationFailed");
  EXPECT_THAT(std::string(v.status().message()), ::testing::HasSubstr("brand: is missing"));
  EXPECT_EQ(Records("CreateVm").size(), 1u);
}

TEST_F(ClientsTest, TimeoutOnAHangingCall) {
  HttpOptions o = Options();
  o.timeout = absl::Milliseconds(300);
  o.max_attempts = 1;
  HttpVmapiClient vmapi(o, mariposa::RealClock::Get());
  Control("/_sim/fail", R"({"op": "GetVm", "count": 1, "hang_ms": 3000})");
  absl::Time start = absl::Now();
  auto r = vmapi.GetVm("00000000-0000-4000-8000-000000000001");
  absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(took, absl::Seconds(2));
  EXPECT_GE(took, absl::Milliseconds(250));
}

TEST_F(ClientsTest, ConnectionErrorsAreUnavailable) {
  HttpOptions o;
  o.base_url = "http://127.0.0.1:1";
  o.max_attempts = 2;
  o.backoff_base = absl::Milliseconds(1);
  HttpVmapiClient vmapi(o, mariposa::RealClock::Get());
  EXPECT_EQ(vmapi.Ping().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ClientsTest, CnapiServersAgentsTasks) {
  HttpCnapiClient cnapi(Options(), mariposa::RealClock::Get());
  auto servers = cnapi.ListServers();
  ASSERT_TRUE(servers.ok()) << servers.status();
  ASSERT_EQ(servers->size(), 4u);
  int headnodes = 0;
  for (const auto& s : *servers) {
    headnodes += s.headnode;
    EXPECT_EQ(s.status, "running");
    EXPECT_GT(s.unreserved_ram, 0);
    EXPECT_FALSE(s.agents.empty());
  }
  EXPECT_EQ(headnodes, 1);
  const std::string cn = (*servers)[2].uuid;
  auto task = cnapi.InstallAgent(cn, kAgentImage);
  ASSERT_TRUE(task.ok()) << task.status();
  auto done = cnapi.WaitTask(*task, absl::Seconds(10));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->status, "complete");
  auto server = cnapi.GetServer(cn);
  ASSERT_TRUE(server.ok());
  bool updated = false;
  for (const auto& a : server->agents) updated |= a.name == "cn-agent" && a.version == "2.14.1";
  EXPECT_TRUE(updated);
  Control("/_sim/servers/" + cn + "/down", "{}");
  auto refused = cnapi.InstallAgent(cn, kAgentImage);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(TritonCode(refused.status()), "ServerNotRunning");
  Control("/_sim/servers/" + cn + "/up", "{}");
  auto bad = cnapi.InstallAgent(cn, "44444444-4444-4444-8444-444444444444");
  ASSERT_TRUE(bad.ok());
  auto failed = cnapi.WaitTask(*bad, absl::Seconds(10));
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->status, "failure");
  EXPECT_THAT(failed->error, ::testing::HasSubstr("not found"));
  auto rm = cnapi.UninstallAgents(cn, {"vm-agent"});
  ASSERT_TRUE(rm.ok());
  ASSERT_TRUE(cnapi.WaitTask(*rm, absl::Seconds(10)).ok());
  auto after = cnapi.GetServer(cn);
  ASSERT_TRUE(after.ok());
  for (const auto& a : after->agents) EXPECT_NE(a.name, "vm-agent");
}

TEST_F(ClientsTest, ImgapiFindImportCreate) {
  HttpImgapiClient imgapi(Options(), mariposa::RealClock::Get());
  auto nginx = imgapi.FindImage("nginx", "1.4.0");
  ASSERT_TRUE(nginx.ok()) << nginx.status();
  EXPECT_EQ(nginx->uuid, kImage);
  EXPECT_EQ(imgapi.FindImage("nginx", "9.9").status().code(), absl::StatusCode::kNotFound);
  ImageFilter small;
  small.page_size = 1;  // inclusive markers must not repeat or loop
  auto all = imgapi.ListImages(small);
  ASSERT_TRUE(all.ok()) << all.status();
  std::set<std::string> uuids;
  for (const auto& i : *all) uuids.insert(i.uuid);
  EXPECT_EQ(uuids.size(), all->size());
  EXPECT_GE(all->size(), 2u);

  auto job = imgapi.ImportRemote(kRemoteImage, "https://images.example.com");
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = imgapi.WaitJob(*job, absl::Seconds(10));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->execution, "succeeded");
  EXPECT_EQ(imgapi.GetImage(kRemoteImage)->name, "redis");
  EXPECT_EQ(imgapi.ImportRemote(kRemoteImage, "x").status().code(), absl::StatusCode::kAlreadyExists);

  HttpVmapiClient vmapi(Options(), mariposa::RealClock::Get());
  auto vm = vmapi.CreateVm(Req({{"golden", "yes"}}));
  ASSERT_TRUE(vm.ok());
  ASSERT_TRUE(vmapi.WaitJob(vm->job_uuid, absl::Seconds(10)).ok());
  // RFD 109: from a running prototype, stopped, snapshotted, booted with the
  // operator script before its services, imaged, rolled back and started.
  auto created = imgapi.CreateFromVm(vm->vm_uuid, "golden", "1", "rm -f /etc/motd");
  ASSERT_TRUE(created.ok()) << created.status();
  auto job_done = imgapi.WaitJob(*created, absl::Seconds(10));
  ASSERT_TRUE(job_done.ok());
  std::vector<std::string> names;
  for (const std::string& step : job_done->steps) names.push_back(step.substr(0, step.find(':')));
  EXPECT_EQ(names, (std::vector<std::string>{"stop", "snapshot", "boot", "operator-script", "services", "create-image",
                                             "rollback", "start", "create-from-vm-1.0.0.final"}));
  EXPECT_NE(job_done->steps[3].find("the operator's script (15 bytes) before the instance's services"),
            std::string::npos)
      << job_done->steps[3];
  EXPECT_EQ(vmapi.GetVm(vm->vm_uuid)->state, "running");
  auto img = imgapi.GetImage(created->image_uuid);
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(img->state, "active");
  EXPECT_EQ(img->origin, kImage);
}

}  // namespace
}  // namespace mariposa::testing

namespace mariposa::testing {
namespace {

// HttpOptions::max_connections: no more requests in flight at once than
// allowed (each answer takes 100 ms, 8 callers at once); every one is
// answered. Without the limit the same callers overlap more.
int MostAtOnce(int limit) {
  httplib::Server server;
  std::mutex mu;
  int now = 0, most = 0;
  server.Get("/slow", [&](const httplib::Request&, httplib::Response& res) {
    {
      std::lock_guard<std::mutex> l(mu);
      most = std::max(most, ++now);
    }
    Pause(absl::Milliseconds(100));
    {
      std::lock_guard<std::mutex> l(mu);
      --now;
    }
    res.set_content("{}", "application/json");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  while (!server.is_running()) Pause(absl::Milliseconds(1));
  triton::HttpOptions o;
  o.base_url = absl::StrCat("http://127.0.0.1:", port);
  o.max_connections = limit;
  triton::HttpClient client("vmapi", o, RealClock::Get());
  std::atomic<int> ok{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] { ok += client.Call("Slow", "GET", "/slow").ok() ? 1 : 0; });
  }
  for (auto& t : callers) t.join();
  server.stop();
  serving.join();
  EXPECT_EQ(ok.load(), 8);
  return most;
}

// FWAPI: a rule made at the caller's uuid; made again (a retry after a
// crash) it is ALREADY_EXISTS, never a second rule; updated and deleted;
// a bad rule is refused with FWAPI's reason.
TEST_F(ClientsTest, FwapiRulesAtTheCallersUuid) {
  HttpFwapiClient fw(Options(), RealClock::Get());
  FwRule r;
  r.uuid = "7b1c2a3e-1111-4d2a-9b1c-000000000001";
  r.owner_uuid = kOwner;
  r.rule = "FROM any TO tag \"role\" = \"web\" ALLOW tcp PORT 80";
  r.description = "mine";
  ASSERT_TRUE(fw.CreateRule(r).ok());
  absl::Status again = fw.CreateRule(r);
  EXPECT_TRUE(absl::IsAlreadyExists(again)) << again;
  auto listed = fw.ListRules(kOwner);
  ASSERT_TRUE(listed.ok()) << listed.status();
  int mine = 0;
  for (const FwRule& f : *listed) {
    if (f.uuid != r.uuid) continue;
    ++mine;
    EXPECT_EQ(f.rule, r.rule);
    EXPECT_EQ(f.description, "mine");
    EXPECT_TRUE(f.enabled);
    EXPECT_EQ(f.owner_uuid, kOwner);
  }
  EXPECT_EQ(mine, 1);
  r.rule = "FROM any TO tag \"role\" = \"web\" ALLOW tcp PORT 443 PRIORITY 5";
  r.enabled = false;
  r.log = true;
  ASSERT_TRUE(fw.UpdateRule(r).ok());
  listed = fw.ListRules(kOwner);
  ASSERT_TRUE(listed.ok());
  for (const FwRule& f : *listed) {
    if (f.uuid == r.uuid) {
      EXPECT_EQ(f.rule, r.rule);
      EXPECT_TRUE(f.log);
      EXPECT_FALSE(f.enabled);
    }
  }
  FwRule bad = r;
  bad.uuid = "7b1c2a3e-1111-4d2a-9b1c-000000000002";
  bad.rule = "FROM any TO nowhere ALLOW tcp PORT 80";
  absl::Status refused = fw.CreateRule(bad);
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  ASSERT_TRUE(fw.DeleteRule(r.uuid, kOwner).ok());
  EXPECT_TRUE(absl::IsNotFound(fw.DeleteRule(r.uuid, kOwner)));
}

// NAPI fabrics: a VLAN, a network on it (listed among the account's
// fabric networks, with what it was made with), updated, then deleted
// (the VLAN only once empty).
TEST_F(ClientsTest, NapiFabricVlanAndNetwork) {
  HttpNapiClient napi(Options(), RealClock::Get());
  ASSERT_TRUE(napi.CreateFabricVlan(kOwner, {77, "p", "mine"}).ok());
  EXPECT_FALSE(napi.CreateFabricVlan(kOwner, {77, "p", "again"}).ok()) << "a VLAN id is the account's once";
  FabricNetwork n;
  n.name = "p-private";
  n.vlan_id = 77;
  n.subnet = "10.7.0.0/24";
  n.gateway = "10.7.0.1";
  n.provision_start_ip = "10.7.0.2";
  n.provision_end_ip = "10.7.0.254";
  n.resolvers = {"8.8.8.8"};
  n.routes = {{"10.8.0.0/16", "10.7.0.254"}};
  n.description = "mariposa test";
  auto made = napi.CreateFabricNetwork(kOwner, n);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_FALSE(made->uuid.empty());
  auto listed = napi.ListFabricNetworks(kOwner);
  ASSERT_TRUE(listed.ok()) << listed.status();
  const FabricNetwork* found = nullptr;
  for (const FabricNetwork& f : *listed) {
    if (f.uuid == made->uuid) found = &f;
  }
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->subnet, "10.7.0.0/24");
  EXPECT_EQ(found->vlan_id, 77);
  EXPECT_EQ(found->routes, n.routes);
  EXPECT_EQ(found->description, "mariposa test");
  n.uuid = made->uuid;
  n.resolvers = {"1.1.1.1"};
  ASSERT_TRUE(napi.UpdateNetwork(n).ok());
  listed = napi.ListFabricNetworks(kOwner);
  ASSERT_TRUE(listed.ok());
  for (const FabricNetwork& f : *listed) {
    if (f.uuid == n.uuid) {
      EXPECT_EQ(f.resolvers, std::vector<std::string>{"1.1.1.1"});
    }
  }
  absl::Status busy = napi.DeleteFabricVlan(kOwner, 77);
  EXPECT_FALSE(busy.ok()) << "a VLAN with networks stays";
  ASSERT_TRUE(napi.DeleteFabricNetwork(kOwner, 77, n.uuid).ok());
  ASSERT_TRUE(napi.DeleteFabricVlan(kOwner, 77).ok());
  auto vlans = napi.ListFabricVlans(kOwner);
  ASSERT_TRUE(vlans.ok());
  for (const FabricVlan& v : *vlans) EXPECT_NE(v.vlan_id, 77);
}

// tritonsim's VOLAPI as sdc-volapi documents it: a volume is created,
// becomes ready, is mounted by a VM (CreateVm's `volumes`), which then
// references it; deleting it is refused while referenced; a VM naming a
// volume that does not exist is refused.
TEST_F(ClientsTest, VolapiVolumesAndTheirReferences) {
  httplib::Client c(sim_->addr());
  auto body = [](const httplib::Result& r) { return r ? nlohmann::json::parse(r->body, nullptr, false) : nlohmann::json(); };
  HttpVolapiClient volapi(Options(), mariposa::RealClock::Get());
  Volume want;
  want.owner_uuid = kOwner;
  want.name = "p.data";
  want.size = 20480;
  ASSERT_TRUE(volapi.CreateVolume(want).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(volapi.CreateVolume(want))) << "names are the account's once: a retry is told";
  Volume odd = want;
  odd.name = "p.odd";
  odd.size = 1;
  absl::Status refused_size = volapi.CreateVolume(odd);
  EXPECT_NE(refused_size.message().find("VolumeSizeNotAvailable"), std::string::npos) << refused_size;
  std::string uuid;
  bool ready = false;
  for (int i = 0; i < 100 && !ready; ++i) {
    auto listed = volapi.ListVolumes(kOwner);
    ASSERT_TRUE(listed.ok()) << listed.status();
    ASSERT_EQ(listed->size(), 1u);
    uuid = (*listed)[0].uuid;
    EXPECT_EQ((*listed)[0].size, 20480);
    ready = (*listed)[0].state == "ready";
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(ready);
  EXPECT_TRUE(volapi.ListVolumes("00000000-0000-4000-8000-000000000000")->empty()) << "another account's";
  HttpVmapiClient vmapi(Options(), mariposa::RealClock::Get());
  auto vm = [&](const std::string& id, const std::string& volume) {
    CreateVmRequest r;
    r.uuid = id;
    r.owner_uuid = kOwner;
    r.brand = "lx";
    r.image_uuid = kImage;
    r.dim.ram = 128;
    r.networks = {"aaaaaaaa-0000-4000-8000-000000000001"};
    r.volumes = {{volume, "/data", "rw"}};
    return vmapi.CreateVm(r);
  };
  EXPECT_FALSE(vm("6a1c0c5e-0000-4000-8000-0000000000a1", "p.nothing").ok());
  auto mounted = vm("6a1c0c5e-0000-4000-8000-0000000000a2", "p.data");
  ASSERT_TRUE(mounted.ok()) << mounted.status();
  EXPECT_EQ(body(c.Get("/volumes/" + uuid + "/references")), nlohmann::json::array({"6a1c0c5e-0000-4000-8000-0000000000a2"}));
  EXPECT_EQ((*volapi.ListVolumes(kOwner))[0].refs, std::vector<std::string>{"6a1c0c5e-0000-4000-8000-0000000000a2"});
  absl::Status in_use = volapi.DeleteVolume(uuid, kOwner);
  EXPECT_TRUE(absl::IsFailedPrecondition(in_use)) << in_use;
  EXPECT_NE(in_use.message().find("VolumeInUse"), std::string::npos) << in_use;
  auto gone = vmapi.DeleteVm(VmRef{"6a1c0c5e-0000-4000-8000-0000000000a2", kOwner});
  ASSERT_TRUE(gone.ok()) << gone.status();
  ASSERT_TRUE(vmapi.WaitJob(gone->job_uuid, absl::Seconds(10)).ok());
  EXPECT_TRUE(volapi.DeleteVolume(uuid, kOwner).ok());
  EXPECT_EQ(body(c.Get("/volumesizes")).size(), 19u);
}

TEST(HttpClientLimit, NoMoreInFlightThanAllowed) {
  EXPECT_LE(MostAtOnce(2), 2);
  EXPECT_GT(MostAtOnce(0), 2) << "without a limit the callers should overlap (else the test proves nothing)";
}

}  // namespace
}  // namespace mariposa::testing
