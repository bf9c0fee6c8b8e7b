// tritonsim over real HTTP: the exact JSON shapes, status codes and headers
// of every endpoint, including the errors.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/process.h"

namespace mariposa::testing {
namespace {

using json = nlohmann::json;
const char* kOwner = "930896af-bf8c-48d4-885c-6573a94b1853";
const char* kNet = "aaaaaaaa-0000-4000-8000-000000000001";
const char* kImage = "11111111-1111-4111-8111-111111111111";
const char* kAgentImage = "22222222-2222-4222-8222-222222222222";
const char* kRemoteImage = "33333333-3333-4333-8333-333333333333";

class WireTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string dir = TempDir("wire");
    WriteFile(dir + "/seed.json", R"({
      "images": [
        {"uuid": "11111111-1111-4111-8111-111111111111", "name": "nginx", "version": "1.4.0", "os": "linux", "type": "lx-dataset"},
        {"uuid": "22222222-2222-4222-8222-222222222222", "name": "cn-agent", "version": "2.14.1", "os": "other", "type": "other"}
      ],
      "remote_images": [
        {"uuid": "33333333-3333-4333-8333-333333333333", "name": "redis", "version": "7.0", "os": "linux"}
      ]
    })");
    sim_ = new Tritonsim({"--servers", "3", "--seed", dir + "/seed.json", "--job-latency", "150"});
    ASSERT_TRUE(sim_->Start()) << sim_->log();
  }
  static void TearDownTestSuite() {
    delete sim_;
    sim_ = nullptr;
  }
  void SetUp() override {
    std::string url = sim_->addr();
    cli_ = std::make_unique<httplib::Client>(url);
    cli_->set_read_timeout(30);
  }
  httplib::Result Get(const std::string& path) { return cli_->Get(path.c_str()); }
  httplib::Result Post(const std::string& path, const json& body = json::object()) {
    return cli_->Post(path.c_str(), body.dump(), "application/json");
  }
  static json Body(const httplib::Result& r) { return json::parse(r->body); }
  json NewVm(const json& extra = json::object()) {
    json body = {{"owner_uuid", kOwner}, {"brand", "lx"}, {"ram", 256}, {"networks", {kNet}}, {"image_uuid", kImage}};
    body.update(extra);
    auto r = Post("/vms", body);
    EXPECT_EQ(r->status, 202) << r->body;
    return Body(r);
  }
  json WaitJob(const std::string& job) {
    auto r = Get("/jobs/" + job + "/wait");
    EXPECT_EQ(r->status, 200);
    return Body(r);
  }

  static Tritonsim* sim_;
  std::unique_ptr<httplib::Client> cli_;
};
Tritonsim* WireTest::sim_ = nullptr;

TEST_F(WireTest, Ping) {
  auto r = Get("/ping");
  ASSERT_EQ(r->status, 200);
  json b = Body(r);
  EXPECT_EQ(b["status"], "OK");
  EXPECT_EQ(b["healthy"], true);
}

TEST_F(WireTest, CreateVmLifecycleAndVmShape) {
  json created = NewVm({{"alias", "web-1"}, {"tags", {{"role", "web"}}}, {"customer_metadata", {{"k", "v"}}}});
  ASSERT_TRUE(created.contains("vm_uuid"));
  ASSERT_TRUE(created.contains("job_uuid"));
  std::string vm = created["vm_uuid"];
  auto r = Get("/vms/" + vm);
  ASSERT_EQ(r->status, 200);
  json v = Body(r);
  EXPECT_EQ(v["state"], "provisioning");  // right after CreateVm
  for (const char* key : {"uuid", "alias", "owner_uuid", "billing_id", "brand", "server_uuid", "state", "zone_state",
                          "image_uuid", "ram", "max_physical_memory", "quota", "cpu_cap", "create_timestamp",
                          "last_modified", "tags", "customer_metadata", "internal_metadata", "nics", "resolvers",
                          "snapshots", "autoboot", "firewall_enabled"}) {
    EXPECT_TRUE(v.contains(key)) << key;
  }
  EXPECT_TRUE(v["billing_id"].is_null());
  EXPECT_EQ(v["tags"]["role"], "web");
  for (const char* key : {"interface", "mac", "vlan_id", "nic_tag", "ip", "netmask", "gateway", "primary"}) {
    EXPECT_TRUE(v["nics"][0].contains(key)) << key;
  }
  // Acting on a provisioning VM.
  r = Post("/vms/" + vm + "?action=stop");
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(Body(r)["code"], "UnallocatedVM");

  json job = WaitJob(created["job_uuid"]);
  EXPECT_EQ(job["execution"], "succeeded");
  for (const char* key : {"name", "uuid", "execution", "params", "created_at", "timeout", "chain_results"}) {
    EXPECT_TRUE(job.contains(key)) << key;
  }
  EXPECT_EQ(job["params"]["vm_uuid"], vm);
  EXPECT_EQ(job["params"]["task"], "provision");
  EXPECT_EQ(Body(Get("/vms/" + vm))["state"], "running");

  r = Post("/vms/" + vm + "?action=start");
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(Body(r)["code"], "VmNotStopped");
  r = Post("/vms/" + vm + "?action=stop");
  ASSERT_EQ(r->status, 202);
  EXPECT_EQ(r->get_header_value("workflow-api"), sim_->addr());
  WaitJob(Body(r)["job_uuid"]);
  EXPECT_EQ(Body(Get("/vms/" + vm))["state"], "stopped");
  r = Post("/vms/" + vm + "?action=stop");
  EXPECT_EQ(Body(r)["code"], "VmNotRunning");
  r = Post("/vms/" + vm + "?action=stop&idempotent=true");
  EXPECT_EQ(r->status, 202);

  auto del = cli_->Delete(("/vms/" + vm).c_str());
  ASSERT_EQ(del->status, 202);
  WaitJob(Body(del)["job_uuid"]);
  EXPECT_EQ(Body(Get("/vms/" + vm))["state"], "destroyed");
  auto jobs = Get("/jobs?vm_uuid=" + vm);
  EXPECT_EQ(Body(jobs).size(), 4u);  // provision, stop, stop (idempotent), destroy; rejected calls make none
}

TEST_F(WireTest, SyncWaitsForTheJob) {
  auto r = Post("/vms?sync=true", {{"owner_uuid", kOwner}, {"brand", "lx"}, {"ram", 256}, {"networks", {kNet}},
                                   {"image_uuid", kImage}});
  ASSERT_EQ(r->status, 202) << r->body;
  EXPECT_EQ(Body(Get("/vms/" + Body(r)["vm_uuid"].get<std::string>()))["state"], "running");
  EXPECT_EQ(Body(Get("/jobs/" + Body(r)["job_uuid"].get<std::string>()))["execution"], "succeeded");
}

TEST_F(WireTest, CreateVmValidation) {
  auto r = Post("/vms", json::object());
  ASSERT_EQ(r->status, 409);
  json b = Body(r);
  EXPECT_EQ(b["code"], "ValidationFailed");
  std::set<std::string> fields;
  for (const auto& e : b["errors"]) fields.insert(e["field"]);
  EXPECT_EQ(fields, (std::set<std::string>{"owner_uuid", "brand", "networks", "ram", "image_uuid"}));
  json dup = NewVm();
  r = Post("/vms", {{"owner_uuid", kOwner}, {"brand", "lx"}, {"ram", 256}, {"networks", {kNet}},
                    {"image_uuid", kImage}, {"uuid", dup["vm_uuid"]}});
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(Body(r)["errors"][0]["code"], "Duplicate");
  r = Post("/vms", {{"owner_uuid", kOwner}, {"brand", "bhyve"}, {"ram", 256}, {"networks", {kNet}}});
  EXPECT_EQ(Body(r)["errors"][0]["field"], "disks.0.image_uuid");
  r = cli_->Post("/vms", "{not json", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Body(r)["code"], "InvalidContent");
}

TEST_F(WireTest, ListVmsFiltersPagingAndErrors) {
  std::vector<std::string> mine;
  for (int i = 0; i < 5; ++i) {
    json c = NewVm({{"tags", {{"wire", "list"}, {"n", std::to_string(i)}}}, {"alias", "list-" + std::to_string(i)}});
    mine.push_back(c["vm_uuid"]);
    WaitJob(c["job_uuid"]);
  }
  auto r = Get("/vms?tag.wire=list");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("x-joyent-resource-count"), "5");
  EXPECT_EQ(Body(r).size(), 5u);
  EXPECT_EQ(Body(Get("/vms?tag.wire=list&tag.n=3")).size(), 1u);
  EXPECT_EQ(Body(Get("/vms?tag.n=*&tag.wire=list")).size(), 5u);
  EXPECT_EQ(Body(Get("/vms?tag.wire=nothing")).size(), 0u);
  EXPECT_EQ(Body(Get("/vms?alias=list-&state=active")).size(), 5u);
  EXPECT_EQ(Body(Get("/vms?uuids=" + mine[0] + "," + mine[1])).size(), 2u);
  std::string pred = httplib::detail::encode_query_param(json({{"and", {{{"eq", {"tags.wire", "list"}}}, {{"ne", {"alias", "list-0"}}}}}}).dump());
  EXPECT_EQ(Body(Get("/vms?predicate=" + pred)).size(), 4u);
  // Paging: limit + offset, and an exclusive marker in uuid order.
  json page1 = Body(Get("/vms?tag.wire=list&sort=uuid.ASC&limit=2"));
  ASSERT_EQ(page1.size(), 2u);
  std::string marker = httplib::detail::encode_query_param(json({{"uuid", page1[1]["uuid"]}}).dump());
  json page2 = Body(Get("/vms?tag.wire=list&sort=uuid.ASC&limit=2&marker=" + marker));
  ASSERT_EQ(page2.size(), 2u);
  EXPECT_GT(page2[0]["uuid"].get<std::string>(), page1[1]["uuid"].get<std::string>());
  json off = Body(Get("/vms?tag.wire=list&sort=uuid.ASC&limit=2&offset=2"));
  EXPECT_EQ(off, page2);
  json fields = Body(Get("/vms?tag.wire=list&fields=uuid,state"));
  EXPECT_EQ(fields[0].size(), 2u);
  // HEAD: the count, no body.
  auto head = cli_->Head("/vms?tag.wire=list");
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->get_header_value("x-joyent-resource-count"), "5");
  EXPECT_TRUE(head->body.empty());
  // Errors.
  r = Get("/vms?bogus=1");
  ASSERT_EQ(r->status, 409);
  EXPECT_EQ(Body(r), json({{"code", "ValidationFailed"}, {"message", "Invalid Parameters"},
                           {"errors", {{{"field", "bogus"}, {"code", "Invalid"}, {"message", "unsupported parameter"}}}}}));
  EXPECT_EQ(Get("/vms?offset=1&marker=" + marker)->status, 409);
  EXPECT_EQ(Get("/vms?limit=0")->status, 409);
  EXPECT_EQ(Get("/vms?state=sleeping")->status, 409);
  EXPECT_EQ(Get("/vms?predicate=%7Bbad")->status, 409);
  r = Get("/vms/00000000-0000-4000-8000-00000000dead");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Body(r)["code"], "ResourceNotFound");
}

TEST_F(WireTest, Tags) {
  json c = NewVm({{"tags", {{"a", "1"}}}});
  WaitJob(c["job_uuid"]);
  std::string vm = c["vm_uuid"];
  EXPECT_EQ(Body(Get("/vms/" + vm + "/tags")), json({{"a", "1"}}));
  auto r = Post("/vms/" + vm + "/tags", {{"b", "2"}});
  ASSERT_EQ(r->status, 202);
  WaitJob(Body(r)["job_uuid"]);
  EXPECT_EQ(Body(Get("/vms/" + vm + "/tags")), json({{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(Body(Get("/vms/" + vm + "/tags/b")), "2");
  r = cli_->Put(("/vms/" + vm + "/tags").c_str(), json({{"c", "3"}}).dump(), "application/json");
  WaitJob(Body(r)["job_uuid"]);
  EXPECT_EQ(Body(Get("/vms/" + vm + "/tags")), json({{"c", "3"}}));
  json listed = Body(Get("/vms?tag.c=3"));  // the index follows
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["tags"], json({{"c", "3"}}));  // and so does the listed form
  EXPECT_EQ(Body(Get("/vms/" + vm))["tags"], json({{"c", "3"}}));
  EXPECT_EQ(Get("/vms/" + vm + "/tags/zz")->status, 404);
}

TEST_F(WireTest, ServersAgentsAndTasks) {
  auto r = Get("/servers");
  ASSERT_EQ(r->status, 200);
  json servers = Body(r);
  ASSERT_EQ(servers.size(), 3u);
  EXPECT_FALSE(servers[0].contains("agents"));  // only with extras
  EXPECT_FALSE(servers[0].contains("sysinfo"));
  for (const char* key : {"uuid", "hostname", "datacenter", "ram", "setup", "reserved", "reservation_ratio", "headnode",
                          "current_platform", "traits", "status", "last_heartbeat"}) {
    EXPECT_TRUE(servers[0].contains(key)) << key;
  }
  json with = Body(Get("/servers?extras=agents,capacity"));
  EXPECT_TRUE(with[0].contains("agents"));
  EXPECT_TRUE(with[0].contains("unreserved_ram"));
  EXPECT_EQ(Body(Get("/servers?headnode=true")).size(), 1u);
  EXPECT_EQ(Get("/servers?extras=bogus")->status, 409);
  EXPECT_EQ(Get("/servers?color=red")->status, 409);
  std::string cn = servers[1]["uuid"];
  json full = Body(Get("/servers/" + cn));
  EXPECT_TRUE(full.contains("sysinfo"));
  EXPECT_EQ(Get("/servers/00000000-0000-4000-8000-00000000dead")->status, 404);

  r = Post("/servers/" + cn + "/install-agent", {{"image_uuid", kAgentImage}});
  ASSERT_EQ(r->status, 200);
  std::string task = Body(r)["id"];
  json t = Body(Get("/tasks/" + task + "/wait?timeout=10"));
  EXPECT_EQ(t["status"], "complete");
  for (const char* key : {"id", "task", "server_uuid", "status", "history"}) EXPECT_TRUE(t.contains(key)) << key;
  bool found = false;
  json after = Body(Get("/servers/" + cn));
  for (const auto& a : after["agents"]) {
    if (a["name"] == "cn-agent") {
      EXPECT_EQ(a["version"], "2.14.1");
      found = true;
    }
  }
  EXPECT_TRUE(found);
  // A down server refuses installs.
  ASSERT_EQ(Post("/_sim/servers/" + cn + "/down")->status, 200);
  r = Post("/servers/" + cn + "/install-agent", {{"image_uuid", kAgentImage}});
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(Body(r)["code"], "ServerNotRunning");
  EXPECT_EQ(Body(Get("/servers/" + cn))["status"], "unknown");
  ASSERT_EQ(Post("/_sim/servers/" + cn + "/up")->status, 200);
  // A failed task carries its reason in history[0].
  r = Post("/servers/" + cn + "/install-agent", {{"image_uuid", "44444444-4444-4444-8444-444444444444"}});
  t = Body(Get("/tasks/" + Body(r)["id"].get<std::string>() + "/wait"));
  EXPECT_EQ(t["status"], "failure");
  EXPECT_THAT(t["history"][0]["event"]["error"]["message"].get<std::string>(), ::testing::HasSubstr("not found"));
  r = Post("/servers/" + cn, {{"traits", {{"ssd", true}}}});
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(Body(Get("/servers/" + cn))["traits"]["ssd"], true);
}

TEST_F(WireTest, VmsOnADownServerAreUnknown) {
  json c = NewVm();
  WaitJob(c["job_uuid"]);
  std::string server = Body(Get("/vms/" + c["vm_uuid"].get<std::string>()))["server_uuid"];
  Post("/_sim/servers/" + server + "/down");
  EXPECT_EQ(Body(Get("/vms/" + c["vm_uuid"].get<std::string>()))["state"], "unknown");
  Post("/_sim/servers/" + server + "/up");
  EXPECT_EQ(Body(Get("/vms/" + c["vm_uuid"].get<std::string>()))["state"], "running");
}

TEST_F(WireTest, PlacementHonoursRamStatusAndLocality) {
  json a = NewVm();
  WaitJob(a["job_uuid"]);
  std::string a_server = Body(Get("/vms/" + a["vm_uuid"].get<std::string>()))["server_uuid"];
  // Strict far: never on A's server.
  for (int i = 0; i < 4; ++i) {
    json b = NewVm({{"locality", {{"strict", true}, {"far", {a["vm_uuid"]}}}}});
    EXPECT_EQ(WaitJob(b["job_uuid"])["execution"], "succeeded");
    EXPECT_NE(Body(Get("/vms/" + b["vm_uuid"].get<std::string>()))["server_uuid"], a_server);
  }
  // Strict near: only on A's server.
  json n = NewVm({{"locality", {{"strict", true}, {"near", {a["vm_uuid"]}}}}});
  WaitJob(n["job_uuid"]);
  EXPECT_EQ(Body(Get("/vms/" + n["vm_uuid"].get<std::string>()))["server_uuid"], a_server);
  // More RAM than any server has: the provision job fails, the VM is failed.
  json big = NewVm({{"ram", 10000000}});
  json job = WaitJob(big["job_uuid"]);
  EXPECT_EQ(job["execution"], "failed");
  EXPECT_EQ(job["chain_results"].back()["error"]["message"], "No compute resources available");
  EXPECT_EQ(Body(Get("/vms/" + big["vm_uuid"].get<std::string>()))["state"], "failed");
  // Down servers get nothing.
  json servers = Body(Get("/servers"));
  for (size_t i = 1; i < servers.size(); ++i) Post("/_sim/servers/" + servers[i]["uuid"].get<std::string>() + "/down");
  for (int i = 0; i < 3; ++i) {
    json c = NewVm();
    WaitJob(c["job_uuid"]);
    EXPECT_EQ(Body(Get("/vms/" + c["vm_uuid"].get<std::string>()))["server_uuid"], servers[0]["uuid"]);
  }
  for (size_t i = 1; i < servers.size(); ++i) Post("/_sim/servers/" + servers[i]["uuid"].get<std::string>() + "/up");
}

TEST_F(WireTest, Images) {
  auto r = Get("/images");
  ASSERT_EQ(r->status, 200);
  json images = Body(r);
  ASSERT_GE(images.size(), 2u);
  for (const char* key : {"v", "uuid", "owner", "name", "version", "state", "disabled", "public", "published_at", "type",
                          "os", "files", "requirements", "tags"}) {
    EXPECT_TRUE(images[0].contains(key)) << key;
  }
  EXPECT_EQ(Body(Get("/images?name=nginx")).size(), 1u);
  EXPECT_EQ(Body(Get("/images?name=~ngi")).size(), 1u);
  r = Get("/images?frob=1");
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Body(r)["code"], "InvalidParameter");
  r = Get("/images/00000000-0000-4000-8000-00000000dead");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Body(r)["code"], "ResourceNotFound");
  // Inclusive marker.
  json page = Body(Get(std::string("/images?marker=") + images[1]["uuid"].get<std::string>()));
  EXPECT_EQ(page[0]["uuid"], images[1]["uuid"]);

  r = Post(std::string("/images/") + kRemoteImage + "?action=import-remote&source=https%3A%2F%2Fimages.example.com");
  ASSERT_EQ(r->status, 202) << r->body;
  EXPECT_FALSE(r->get_header_value("workflow-api").empty());
  EXPECT_EQ(Body(r)["image_uuid"], kRemoteImage);
  EXPECT_EQ(WaitJob(Body(r)["job_uuid"])["execution"], "succeeded");
  EXPECT_EQ(Body(Get(std::string("/images/") + kRemoteImage))["state"], "active");
  r = Post(std::string("/images/") + kRemoteImage + "?action=import-remote&source=x");
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(Body(r)["code"], "ImageUuidAlreadyExists");

  json c = NewVm();
  WaitJob(c["job_uuid"]);
  std::string vm = c["vm_uuid"];
  // A stopped prototype is imaged and left stopped (RFD 109's steps; the
  // running case is in triton_clients_test).
  WaitJob(Body(Post("/vms/" + vm + "?action=stop"))["job_uuid"]);
  r = Post("/images?action=create-from-vm&vm_uuid=" + vm, {{"name", "golden"}, {"version", "1"}});
  ASSERT_EQ(r->status, 202) << r->body;
  json job = WaitJob(Body(r)["job_uuid"]);
  EXPECT_EQ(job["chain_results"][0]["name"], "stop");
  EXPECT_EQ(job["chain_results"][3]["name"], "operator-script");
  EXPECT_THAT(job["chain_results"][3]["result"].get<std::string>(), ::testing::HasSubstr("linux-prepare-image"));
  EXPECT_EQ(job["chain_results"][7]["name"], "leave-stopped");
  EXPECT_EQ(Body(Get("/vms/" + vm))["state"], "stopped");
  // The source lists what import-remote fetches, with channels.
  json source = Body(Get("/updates/images"));
  ASSERT_EQ(source.size(), 1u);
  EXPECT_EQ(source[0]["uuid"], kRemoteImage);
  EXPECT_EQ(source[0]["channels"], json::array({"release"}));
  EXPECT_EQ(Body(Get("/updates/images?channel=dev")).size(), 0u);
  json img = Body(Get("/images/" + Body(r)["image_uuid"].get<std::string>()));
  EXPECT_EQ(img["origin"], kImage);
  EXPECT_EQ(img["os"], "linux");
}

TEST_F(WireTest, ControlApiAndCtl) {
  auto r = RunResult{};
  r = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "fail", "Ping", "2", "500"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Get("/ping")->status, 500);
  auto second = Get("/ping");
  EXPECT_EQ(second->status, 500);
  EXPECT_EQ(Body(second)["code"], "InternalError");
  EXPECT_EQ(Get("/ping")->status, 200);
  // A long outage, ended by `fail OP 0`: the later call replaces it.
  r = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "fail", "Ping", "100000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Get("/ping")->status, 503);
  r = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "fail", "Ping", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Get("/ping")->status, 200);
  r = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "stats"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, ::testing::HasSubstr("\"servers\": 3"));
  json c = NewVm();
  WaitJob(c["job_uuid"]);
  r = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "kill-vm", c["vm_uuid"]});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Body(Get("/vms/" + c["vm_uuid"].get<std::string>()))["state"], "stopped");
  r = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "destroy-vm", c["vm_uuid"]});
  EXPECT_EQ(Body(Get("/vms/" + c["vm_uuid"].get<std::string>()))["state"], "destroyed");
  r = RunProcess({"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr(), "bogus"});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace mariposa::testing
