#include "convergence/triton/fake_clients.h"

#include <set>

#include "gtest/gtest.h"

namespace mariposa::triton {
namespace {

CreateVmRequest Req(const std::string& uuid, const std::string& service) {
  CreateVmRequest r;
  r.uuid = uuid;
  r.owner_uuid = "00000000-0000-4000-8000-000000000000";
  r.brand = "lx";
  r.image_uuid = "img";
  r.dim.ram = 512;
  r.tags = {{"mariposa.service", service}};
  return r;
}

TEST(FakeVmapiTest, CreateListCallLogAndFailures) {
  FakeVmapiClient vmapi;
  vmapi.set_servers({"cn1", "cn2"});
  auto a = vmapi.CreateVm(Req("a", "web"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(vmapi.CreateVm(Req("a", "web")).status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(vmapi.CreateVm(Req("b", "db")).ok());
  auto job = vmapi.WaitJob(a->job_uuid, absl::Seconds(1));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->execution, "succeeded");
  VmFilter f;
  f.tags = {{"mariposa.service", "web"}};
  auto web = vmapi.ListVms(f);
  ASSERT_TRUE(web.ok());
  ASSERT_EQ(web->size(), 1u);
  EXPECT_EQ((*web)[0].state, "running");
  EXPECT_EQ((*web)[0].server_uuid, "cn1");
  vmapi.FailNext("ListVms", absl::UnavailableError("injected"));
  EXPECT_EQ(vmapi.ListVms(f).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(vmapi.ListVms(f).ok());
  auto calls = vmapi.calls();
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls[0], "CreateVm a");
}

// ListVmsByUuid: one ListVms per batch of uuids, a uuid VMAPI does not list
// is left out, and a refused batch is the answer.
TEST(FakeVmapiTest, ListVmsByUuidReadsInBatches) {
  FakeVmapiClient vmapi;
  std::vector<std::string> uuids;
  for (const char* u : {"a", "b", "c", "d", "e"}) {
    ASSERT_TRUE(vmapi.CreateVm(Req(u, "web")).ok());
    uuids.push_back(u);
  }
  uuids.push_back("not-there");
  vmapi.ClearCalls();
  auto got = ListVmsByUuid(&vmapi, uuids, 2);
  ASSERT_TRUE(got.ok()) << got.status();
  std::set<std::string> seen;
  for (const Vm& vm : *got) seen.insert(vm.uuid);
  EXPECT_EQ(seen, (std::set<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(vmapi.calls().size(), 3u);  // 6 uuids, 2 a call
  EXPECT_TRUE(ListVmsByUuid(&vmapi, {}, 2)->empty());
  EXPECT_EQ(vmapi.calls().size(), 3u);  // nothing asked, nothing called
  vmapi.FailNext("ListVms", absl::UnavailableError("injected"));
  EXPECT_EQ(ListVmsByUuid(&vmapi, uuids, 200).status().code(), absl::StatusCode::kUnavailable);
}

TEST(FakeVmapiTest, JobsCanBeHeld) {
  FakeVmapiClient vmapi;
  vmapi.set_auto_complete(false);
  auto a = vmapi.CreateVm(Req("a", "web"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(vmapi.GetVm("a")->state, "provisioning");
  EXPECT_EQ(vmapi.WaitJob(a->job_uuid, absl::Seconds(1)).status().code(), absl::StatusCode::kDeadlineExceeded);
  vmapi.CompleteJobs();
  EXPECT_EQ(vmapi.GetVm("a")->state, "running");
  ASSERT_TRUE(vmapi.DeleteVm("a").ok());
  vmapi.CompleteJobs();
  EXPECT_EQ(vmapi.GetVm("a")->state, "destroyed");
}

TEST(FakeCnapiTest, AgentsAndDownServers) {
  FakeCnapiClient cnapi;
  cnapi.PutServer(Server{"s1", "cn1", "running", false, false, true, 1024, 1024, "{}", {}});
  cnapi.PutServer(Server{"s2", "cn2", "unknown", false, false, true, 1024, 1024, "{}", {}});
  cnapi.PutAgentImage("img-cn-agent", "cn-agent", "2.14.1");
  auto t = cnapi.InstallAgent("s1", "img-cn-agent");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(cnapi.WaitTask(*t, absl::Seconds(1))->status, "complete");
  EXPECT_EQ(cnapi.GetServer("s1")->agents.at(0).version, "2.14.1");
  EXPECT_EQ(cnapi.InstallAgent("s2", "img-cn-agent").status().code(), absl::StatusCode::kFailedPrecondition);
  auto bad = cnapi.InstallAgent("s1", "nope");
  EXPECT_EQ(cnapi.GetTask(*bad)->status, "failure");
}

TEST(FakeImgapiTest, FindImportCreate) {
  FakeImgapiClient imgapi;
  imgapi.PutImage(Image{"i1", "nginx", "1.0", "active", "linux", "lx-dataset", "", "", "2026-01-01"});
  imgapi.PutImage(Image{"i2", "nginx", "1.0", "active", "linux", "lx-dataset", "", "", "2026-02-01"});
  EXPECT_EQ(imgapi.FindImage("nginx", "1.0")->uuid, "i2");
  EXPECT_EQ(imgapi.FindImage("nginx", "9").status().code(), absl::StatusCode::kNotFound);
  imgapi.PutRemoteImage(Image{"r1", "redis", "7", "active", "linux", "lx-dataset", "", "", "2026-03-01"});
  auto j = imgapi.ImportRemote("r1", "https://images.example.com");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(imgapi.WaitJob(*j, absl::Seconds(1))->execution, "succeeded");
  EXPECT_EQ(imgapi.GetImage("r1")->name, "redis");
  auto missing = imgapi.ImportRemote("r9", "https://images.example.com");
  EXPECT_EQ(imgapi.WaitJob(*missing, absl::Seconds(1))->execution, "failed");
}

}  // namespace
}  // namespace mariposa::triton
