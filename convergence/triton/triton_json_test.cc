// Every reader of triton_json.h, as a table: a full answer of the real API's
// shape read field by field, and the same with wrong-typed and absent
// fields (which read as absent, never as an error).
#include "convergence/triton/triton_json.h"

#include "gtest/gtest.h"

namespace mariposa::triton {
namespace {

TEST(TritonJsonTest, AJobReadsItsParamsAndItsChainsError) {
  auto j = ParseJob(R"({"uuid":"j1","name":"provision-8.0.0","execution":"failed",
      "params":{"task":"provision","vm_uuid":"v1"},
      "chain_results":[{"name":"validate","result":"OK"},
                       {"name":"start","result":"","error":{"message":"no capacity"}}]})",
                    "GetJob");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->uuid, "j1");
  EXPECT_EQ(j->name, "provision-8.0.0");
  EXPECT_EQ(j->execution, "failed");
  EXPECT_TRUE(j->done());
  EXPECT_EQ(j->task, "provision");
  EXPECT_EQ(j->vm_uuid, "v1");
  ASSERT_EQ(j->steps.size(), 2u);
  EXPECT_EQ(j->steps[0], "validate: OK");
  EXPECT_EQ(j->steps[1], "start");
  EXPECT_EQ(j->error, "no capacity");
  auto s = ParseJob(R"({"uuid":"j2","chain_results":[{"name":"x","error":"plain text"}]})", "GetJob");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->error, "plain text");
}

TEST(TritonJsonTest, AJobRefNeedsItsJobUuid) {
  auto r = ParseJobRef(R"({"vm_uuid":"v","job_uuid":"j","image_uuid":"i"})", {{"workflow-api", "http://wf"}}, "CreateVm");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->vm_uuid, "v");
  EXPECT_EQ(r->job_uuid, "j");
  EXPECT_EQ(r->image_uuid, "i");
  EXPECT_EQ(r->workflow_api, "http://wf");
  auto none = ParseJobRef(R"({"vm_uuid":"v"})", {}, "CreateVm");
  EXPECT_TRUE(absl::IsDataLoss(none.status()));
  EXPECT_NE(none.status().message().find("CreateVm"), std::string::npos);
}

TEST(TritonJsonTest, ServersReadTheirAgentsAndDefaults) {
  auto list = ParseServers(R"([{"uuid":"s1","hostname":"cn1","status":"running","headnode":true,"reserved":false,
      "setup":false,"ram":4096,"unreserved_ram":2048,"traits":{"ssd":true},
      "agents":[{"name":"cn-agent","version":"2.1","image_uuid":"i1","uuid":"a1"}]},
      {"uuid":"s2","ram":"lots","setup":"yes"}, 7])",
                           "ListServers");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);  // a non-object entry is left out
  const Server& a = (*list)[0];
  EXPECT_EQ(a.uuid, "s1");
  EXPECT_EQ(a.hostname, "cn1");
  EXPECT_EQ(a.status, "running");
  EXPECT_TRUE(a.headnode);
  EXPECT_FALSE(a.reserved);
  EXPECT_FALSE(a.setup);
  EXPECT_EQ(a.ram, 4096);
  EXPECT_EQ(a.unreserved_ram, 2048);
  EXPECT_EQ(a.traits_json, R"({"ssd":true})");
  ASSERT_EQ(a.agents.size(), 1u);
  EXPECT_EQ(a.agents[0].name, "cn-agent");
  EXPECT_EQ(a.agents[0].version, "2.1");
  EXPECT_EQ(a.agents[0].image_uuid, "i1");
  EXPECT_EQ(a.agents[0].uuid, "a1");
  const Server& b = (*list)[1];  // wrong types read as absent: the defaults
  EXPECT_EQ(b.ram, 0);
  EXPECT_TRUE(b.setup);
  EXPECT_EQ(b.traits_json, "{}");
  auto one = ParseServer(R"({"uuid":"s3"})", "GetServer");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->uuid, "s3");
  EXPECT_TRUE(absl::IsDataLoss(ParseServers("{}", "ListServers").status()));
}

TEST(TritonJsonTest, ATaskReadsTheErrorOfAFailure) {
  auto t = ParseTask(R"({"id":"t1","task":"agent_install","server_uuid":"s1","status":"failure",
      "history":[{"event":{"error":{"message":"disk full"}}}]})",
                     "GetTask");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->id, "t1");
  EXPECT_EQ(t->task, "agent_install");
  EXPECT_EQ(t->server_uuid, "s1");
  EXPECT_EQ(t->status, "failure");
  EXPECT_EQ(t->error, "disk full");
  auto ok = ParseTask(R"({"id":"t2","status":"complete","history":[{"event":{"error":{"message":"old"}}}]})", "GetTask");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->error, "");  // only a failure has an error
  auto id = ParseTaskId(R"({"id":"t9"})", "Install");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "t9");
  EXPECT_TRUE(absl::IsDataLoss(ParseTaskId(R"({"task":"x"})", "Install").status()));
}

TEST(TritonJsonTest, AnImageReadsEveryField) {
  auto list = ParseImages(R"([{"uuid":"i1","name":"base","version":"1.2","state":"active","os":"smartos",
      "type":"zone-dataset","owner":"o1","origin":"i0","published_at":"2026-01-01T00:00:00Z",
      "requirements":{"brand":"joyent"},"files":[{"size":1234}],"channels":["dev","release"],
      "changes":"fixes"}])",
                          "ListImages");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  const Image& i = (*list)[0];
  EXPECT_EQ(i.uuid, "i1");
  EXPECT_EQ(i.name, "base");
  EXPECT_EQ(i.version, "1.2");
  EXPECT_EQ(i.state, "active");
  EXPECT_EQ(i.os, "smartos");
  EXPECT_EQ(i.type, "zone-dataset");
  EXPECT_EQ(i.owner, "o1");
  EXPECT_EQ(i.origin, "i0");
  EXPECT_EQ(i.published_at, "2026-01-01T00:00:00Z");
  EXPECT_EQ(i.requirements_brand, "joyent");
  EXPECT_EQ(i.size, 1234);
  EXPECT_EQ(i.channels, (std::vector<std::string>{"dev", "release"}));
  EXPECT_EQ(i.changes, "fixes");
  auto one = ParseImage(R"({"uuid":"i2","files":[]})", "GetImage");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size, 0);
}

TEST(TritonJsonTest, APackageReadsItsDimensions) {
  auto list = ParsePackages(R"([{"uuid":"p1","name":"g4-highcpu-1G","version":"1.0.0","active":false,
      "max_physical_memory":1024,"quota":25600,"max_swap":2048,"max_lwps":4000,"cpu_cap":100,"vcpus":1,
      "zfs_io_priority":16,"owner_uuids":["o1"]},{"uuid":"p2"}])",
                            "ListPackages");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  const Package& p = (*list)[0];
  EXPECT_EQ(p.uuid, "p1");
  EXPECT_EQ(p.name, "g4-highcpu-1G");
  EXPECT_EQ(p.version, "1.0.0");
  EXPECT_FALSE(p.active);
  EXPECT_EQ(p.max_physical_memory, 1024);
  EXPECT_EQ(p.quota, 25600);
  EXPECT_EQ(p.max_swap, 2048);
  EXPECT_EQ(p.max_lwps, 4000);
  EXPECT_EQ(p.cpu_cap, 100);
  EXPECT_EQ(p.vcpus, 1);
  EXPECT_EQ(p.zfs_io_priority, 16);
  EXPECT_EQ(p.owner_uuids, (std::vector<std::string>{"o1"}));
  EXPECT_TRUE((*list)[1].active);  // absent: active
}

TEST(TritonJsonTest, NetworksAndPoolsAndFabrics) {
  auto nets = ParseNetworks(R"([{"uuid":"n1","name":"external","subnet":"10.88.88.0/24","fabric":true,
      "owner_uuids":["o1","o2"]}])",
                            /*pools=*/true, "ListNetworkPools");
  ASSERT_TRUE(nets.ok());
  ASSERT_EQ(nets->size(), 1u);
  const Network& n = (*nets)[0];
  EXPECT_EQ(n.uuid, "n1");
  EXPECT_EQ(n.name, "external");
  EXPECT_EQ(n.subnet, "10.88.88.0/24");
  EXPECT_TRUE(n.fabric);
  EXPECT_TRUE(n.pool);
  EXPECT_EQ(n.owner_uuids, (std::vector<std::string>{"o1", "o2"}));
  auto vlans = ParseFabricVlans(R"([{"vlan_id":42,"name":"app","description":"d"},{"vlan_id":99999999999}])",
                                "ListFabricVlans");
  ASSERT_TRUE(vlans.ok());
  ASSERT_EQ(vlans->size(), 2u);
  EXPECT_EQ((*vlans)[0].vlan_id, 42);
  EXPECT_EQ((*vlans)[0].name, "app");
  EXPECT_EQ((*vlans)[0].description, "d");
  EXPECT_EQ((*vlans)[1].vlan_id, -1);  // out of range: no VLAN id a request could name
  auto fab = ParseFabricNetwork(R"({"uuid":"f1","name":"web","subnet":"192.0.2.0/24","gateway":"192.0.2.1",
      "provision_start_ip":"192.0.2.10","provision_end_ip":"192.0.2.250","description":"m","vlan_id":42,
      "resolvers":["192.0.2.53"],"routes":{"198.51.100.0/24":"192.0.2.1","bad":7},"internet_nat":false})",
                                "GetFabricNetwork");
  ASSERT_TRUE(fab.ok());
  EXPECT_EQ(fab->uuid, "f1");
  EXPECT_EQ(fab->name, "web");
  EXPECT_EQ(fab->subnet, "192.0.2.0/24");
  EXPECT_EQ(fab->gateway, "192.0.2.1");
  EXPECT_EQ(fab->provision_start_ip, "192.0.2.10");
  EXPECT_EQ(fab->provision_end_ip, "192.0.2.250");
  EXPECT_EQ(fab->description, "m");
  EXPECT_EQ(fab->vlan_id, 42);
  EXPECT_EQ(fab->resolvers, (std::vector<std::string>{"192.0.2.53"}));
  EXPECT_EQ(fab->routes, (std::map<std::string, std::string>{{"198.51.100.0/24", "192.0.2.1"}}));
  EXPECT_FALSE(fab->internet_nat);
  auto fabs = ParseFabricNetworks(R"([{"uuid":"f2"}])", "ListFabricNetworks");
  ASSERT_TRUE(fabs.ok());
  ASSERT_EQ(fabs->size(), 1u);
  EXPECT_TRUE((*fabs)[0].internet_nat);  // absent: on
}

TEST(TritonJsonTest, FirewallRules) {
  auto rules = ParseFwRules(R"([{"uuid":"r1","owner_uuid":"o1","rule":"FROM any TO all vms ALLOW tcp PORT 80",
      "description":"mariposa:p:web:h","enabled":true,"global":true,"log":true},{"uuid":"r2"}])",
                            "ListRules");
  ASSERT_TRUE(rules.ok());
  ASSERT_EQ(rules->size(), 2u);
  const FwRule& r = (*rules)[0];
  EXPECT_EQ(r.uuid, "r1");
  EXPECT_EQ(r.owner_uuid, "o1");
  EXPECT_EQ(r.rule, "FROM any TO all vms ALLOW tcp PORT 80");
  EXPECT_EQ(r.description, "mariposa:p:web:h");
  EXPECT_TRUE(r.enabled);
  EXPECT_TRUE(r.global);
  EXPECT_TRUE(r.log);
  EXPECT_FALSE((*rules)[1].enabled);  // absent: disabled
  EXPECT_FALSE((*rules)[1].global);
  EXPECT_FALSE((*rules)[1].log);
}

TEST(TritonJsonTest, VolumesLeaveOutTheDeletedAndSizesTheOtherTypes) {
  auto vols = ParseVolumes(R"([{"uuid":"v1","owner_uuid":"o1","name":"p-data","size":10240,"state":"ready",
      "networks":["n1"],"refs":["vm1"],"create_timestamp":"2026-01-01T00:00:00Z"},
      {"uuid":"v2","state":"deleted"}])",
                           "ListVolumes");
  ASSERT_TRUE(vols.ok());
  ASSERT_EQ(vols->size(), 1u);
  const Volume& v = (*vols)[0];
  EXPECT_EQ(v.uuid, "v1");
  EXPECT_EQ(v.owner_uuid, "o1");
  EXPECT_EQ(v.name, "p-data");
  EXPECT_EQ(v.size, 10240);
  EXPECT_EQ(v.state, "ready");
  EXPECT_EQ(v.networks, (std::vector<std::string>{"n1"}));
  EXPECT_EQ(v.refs, (std::vector<std::string>{"vm1"}));
  EXPECT_EQ(v.create_timestamp, "2026-01-01T00:00:00Z");
  auto sizes = ParseVolumeSizes(R"([{"type":"tritonnfs","size":10240},{"size":20480},{"type":"other","size":5},
      {"type":"tritonnfs","size":0}])",
                                "ListVolumeSizes");
  ASSERT_TRUE(sizes.ok());
  EXPECT_EQ(*sizes, (std::vector<int64_t>{10240, 20480}));
}

TEST(TritonJsonTest, AnswersThatAreNotTheJsonExpectedNameTheCall) {
  for (const char* body : {"", "not json", "[1,2", "\"text\""}) {
    auto st = ParsePackages(body, "ListPackages").status();
    EXPECT_TRUE(absl::IsDataLoss(st)) << body << ": " << st;
    EXPECT_NE(st.message().find("ListPackages"), std::string::npos) << st;
    EXPECT_TRUE(absl::IsDataLoss(ParseImage(body, "GetImage").status())) << body;
  }
  EXPECT_TRUE(absl::IsDataLoss(ParseImage("[]", "GetImage").status()));
}

}  // namespace
}  // namespace mariposa::triton
