#include "convergence/triton/vm_json.h"

#include <gtest/gtest.h>

namespace mariposa::triton {
namespace {

constexpr char kPage[] = R"([
  {"uuid": "u1", "alias": "p-web-1", "owner_uuid": "o", "billing_id": null, "brand": "lx",
   "server_uuid": "s1", "state": "running", "zone_state": "running", "image_uuid": "i1",
   "ram": 1024, "max_physical_memory": 1024, "quota": 20, "cpu_cap": 200,
   "create_timestamp": "2026-11-23T10:00:00.000Z", "last_modified": "2026-11-23T10:01:00.000Z",
   "tags": {"mariposa.project": "p", "n": 3, "f": 1.5, "b": true, "z": null, "o": {"k": [1, "x"]}, "a": [1, 2]},
   "customer_metadata": {"user-script": "echo hi"},
   "internal_metadata": {"docker:env": "[\"A=1\"]"},
   "docker": true,
   "nics": [{"interface": "net1", "ip": "10.0.0.2", "mac": "m2", "primary": false, "network_uuid": "n2",
             "allowed_ips": ["10.0.0.9"], "extra": {"ip": "not me"}},
            {"interface": "net0", "ip": "10.0.0.1", "mac": "m1", "primary": true, "network_uuid": "n1"}],
   "resolvers": ["8.8.8.8"], "snapshots": [], "autoboot": true},
  {"uuid": "u2", "alias": null, "brand": "bhyve", "state": "stopped",
   "disks": [{"image_uuid": "i-boot", "size": 10240}, {"image_uuid": "i-other"}], "nics": []}
])";

TEST(VmJsonTest, PageFieldsTagsNicsAndDisks) {
  std::vector<Vm> vms;
  auto n = ParseVmPage(kPage, &vms);
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(*n, 2u);
  ASSERT_EQ(vms.size(), 2u);
  const Vm& a = vms[0];
  EXPECT_EQ(a.uuid, "u1");
  EXPECT_EQ(a.alias, "p-web-1");
  EXPECT_EQ(a.owner_uuid, "o");
  EXPECT_EQ(a.brand, "lx");
  EXPECT_EQ(a.server_uuid, "s1");
  EXPECT_EQ(a.state, "running");
  EXPECT_EQ(a.image_uuid, "i1");
  EXPECT_EQ(a.ram, 1024);
  EXPECT_EQ(a.quota, 20);
  EXPECT_EQ(a.cpu_cap, 200);
  EXPECT_TRUE(a.docker);
  EXPECT_EQ(a.create_timestamp, "2026-11-23T10:00:00.000Z");
  EXPECT_EQ(a.last_modified, "2026-11-23T10:01:00.000Z");
  // Non-string tag values are kept as their JSON text.
  std::map<std::string, std::string> tags = {{"mariposa.project", "p"}, {"n", "3"},     {"f", "1.5"},
                                             {"b", "true"},            {"z", "null"},  {"o", R"({"k":[1,"x"]})"},
                                             {"a", "[1,2]"}};
  EXPECT_EQ(a.tags, tags);
  EXPECT_EQ(a.customer_metadata.at("user-script"), "echo hi");
  EXPECT_EQ(a.internal_metadata.at("docker:env"), R"(["A=1"])");
  ASSERT_EQ(a.nics.size(), 2u);
  EXPECT_EQ(a.nics[0].interface, "net1");
  EXPECT_EQ(a.nics[0].ip, "10.0.0.2");  // not the nested object's "ip"
  EXPECT_FALSE(a.nics[0].primary);
  EXPECT_EQ(a.nics[1].ip, "10.0.0.1");
  EXPECT_EQ(a.nics[1].mac, "m1");
  EXPECT_EQ(a.nics[1].network_uuid, "n1");
  EXPECT_TRUE(a.nics[1].primary);
  const Vm& b = vms[1];
  EXPECT_EQ(b.alias, "");  // null
  EXPECT_EQ(b.image_uuid, "i-boot");  // HVM: the first disk's
  EXPECT_TRUE(b.tags.empty());
  EXPECT_TRUE(b.nics.empty());
}

TEST(VmJsonTest, OneVmObject) {
  auto vm = ParseVm(R"({"uuid": "u", "state": "running", "tags": {"k": "v"},
                        "nics": [{"ip": "10.1.1.1", "primary": true, "interface": "net0"}]})");
  ASSERT_TRUE(vm.ok()) << vm.status();
  EXPECT_EQ(vm->uuid, "u");
  EXPECT_EQ(vm->tags.at("k"), "v");
  ASSERT_EQ(vm->nics.size(), 1u);
  EXPECT_EQ(vm->nics[0].ip, "10.1.1.1");
}

TEST(VmJsonTest, AnswersThatAreNotVmsAreErrorsAndAddNothing) {
  std::vector<Vm> vms(1);
  for (const char* bad : {"", "not json", "{\"uuid\": \"u\"}", "[1, 2]", "[[{}]]", "[{\"uuid\": \"u\"}", "null",
                          "[{\"uuid\": \"u\"}] trailing"}) {
    auto n = ParseVmPage(bad, &vms);
    EXPECT_FALSE(n.ok()) << bad;
    EXPECT_EQ(n.status().code(), absl::StatusCode::kDataLoss) << bad;
    EXPECT_EQ(vms.size(), 1u) << bad;
  }
  for (const char* bad : {"[]", "[{\"uuid\": \"u\"}]", "\"u\"", "{\"uuid\": "}) {
    EXPECT_FALSE(ParseVm(bad).ok()) << bad;
  }
  auto empty = ParseVmPage("[]", &vms);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, 0u);
}

}  // namespace
}  // namespace mariposa::triton
