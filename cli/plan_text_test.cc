// Golden tests of the plan text (sdcadm's shape). Regenerate a golden file
// after an intended change with MARIPOSA_UPDATE_GOLDEN=1 (it is written to
// the source tree given by BUILD_WORKSPACE_DIRECTORY under `bazel run`).
#include "cli/plan_text.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace mariposa::cli {
namespace {

std::string Golden(const std::string& name, const std::string& got) {
  std::string path = "cli/testdata/" + name + ".golden";
  if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY"); ws && std::getenv("MARIPOSA_UPDATE_GOLDEN")) {
    std::ofstream(std::string(ws) + "/" + path) << got;
    return got;
  }
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

v1::ImagePlanStep* Step(v1::ImagePlan* p, const std::string& uuid, const std::string& label, int64_t n,
                        bool downgrade = false) {
  v1::ImagePlanStep* s = p->add_from();
  s->set_image_uuid(uuid);
  s->set_label(label);
  s->set_count(n);
  s->set_downgrade(downgrade);
  return s;
}

v1::Diff Plans() {
  v1::Diff d;
  // sdcadm's example: 300 vm-agents, most on one old image, one on another,
  // ten already there; the image is downloaded first.
  v1::ServiceChange* vm = d.add_services();
  vm->set_service("vm-agent");
  vm->set_action(v1::ServiceChange::UPDATE);
  v1::ImagePlan* p = vm->mutable_image_plan();
  p->set_image_uuid("6261c204-7a9b-4a36-9d0f-4d7bba0bd1a0");
  p->set_label("vm-agent@1.9.0");
  p->set_agent(true);
  p->set_instances(300);
  Step(p, "1a2b3c4d-0000-4000-8000-000000000001", "vm-agent@1.8.0", 289);
  Step(p, "5e6f7a8b-0000-4000-8000-000000000002", "vm-agent@1.7.3", 1);
  p->set_already(10);
  p->set_download_bytes(72351744);
  p->set_source("https://updates.tritondatacenter.com");
  // A downgrade forced with --force.
  v1::ServiceChange* cn = d.add_services();
  cn->set_service("cn-agent");
  cn->set_action(v1::ServiceChange::UPDATE);
  p = cn->mutable_image_plan();
  p->set_image_uuid("0b3f3c1e-5a61-4c2c-9a1a-000000000005");
  p->set_label("cn-agent@2.14.1");
  p->set_agent(true);
  p->set_instances(19);
  p->set_forced(true);
  Step(p, "e9c4b1a0-2f6d-4b7e-8a31-5c0d7e000102", "cn-agent@2.15.0", 19, true);
  // A downgrade without --force, and a server without the agent.
  v1::ServiceChange* gz = d.add_services();
  gz->set_service("gz-tools");
  gz->set_action(v1::ServiceChange::UPDATE);
  p = gz->mutable_image_plan();
  p->set_image_uuid("3e0f9a11-0000-4000-8000-000000000201");
  p->set_label("gz-tools@3.0.0");
  p->set_agent(true);
  p->set_instances(3);
  Step(p, "9b1c2d33-0000-4000-8000-000000000202", "gz-tools@3.1.0", 2, true);
  Step(p, "", "not installed", 1);
  // A new service of an image imported first.
  v1::ServiceChange* wp = d.add_services();
  wp->set_service("wordpress");
  wp->set_action(v1::ServiceChange::CREATE);
  wp->set_to_count(2);
  p = wp->mutable_image_plan();
  p->set_image_uuid("6d3a2f10-8b1e-4c55-9e0a-3f1a2b000101");
  p->set_label("autopilotpattern/wordpress@1.4.0");
  p->set_download_bytes(209715200);
  p->set_source("https://updates.tritondatacenter.com");
  // A new core service: two of its three zones exist (adopted), one of them
  // on an older image; the third is created.
  v1::ServiceChange* moray = d.add_services();
  moray->set_service("moray");
  moray->set_action(v1::ServiceChange::CREATE);
  moray->set_to_count(3);
  p = moray->mutable_image_plan();
  p->set_image_uuid("a1c0e201-4d5e-4f60-8a7b-000000000301");
  p->set_label("moray@2026.11.15");
  p->set_instances(2);
  p->set_already(1);
  Step(p, "b2c0e202-4d5e-4f60-8a7b-000000000302", "moray@2026.10.1", 1);
  return d;
}

TEST(PlanText, SdcadmShape) {
  v1::Diff d = Plans();
  std::string got;
  for (const v1::ServiceChange& c : d.services()) got += ImagePlanText(c);
  got += DownloadsText(d);
  EXPECT_EQ(got, Golden("plans", got));
}

TEST(PlanText, NothingWithoutAPlan) {
  v1::ServiceChange c;
  c.set_service("web");
  c.set_action(v1::ServiceChange::UPDATE);
  EXPECT_EQ(ImagePlanText(c), "");
  v1::Diff d;
  *d.add_services() = c;
  EXPECT_EQ(DownloadsText(d), "");
}

TEST(PlanText, AnImageSharedByTwoServicesIsDownloadedOnce) {
  v1::Diff d;
  for (const char* svc : {"a", "b"}) {
    v1::ServiceChange* c = d.add_services();
    c->set_service(svc);
    c->set_action(v1::ServiceChange::CREATE);
    c->mutable_image_plan()->set_image_uuid("6d3a2f10-8b1e-4c55-9e0a-3f1a2b000101");
    c->mutable_image_plan()->set_label("x@1");
    c->mutable_image_plan()->set_download_bytes(2048);
    c->mutable_image_plan()->set_source("s");
  }
  EXPECT_EQ(DownloadsText(d), "download 1 image (2 KiB):\n    image 6d3a2f10 (x@1) (2 KiB) from s\n");
}

}  // namespace
TEST(PlanText, SummaryCountsInstances) {
  v1::Diff d;
  auto* web = d.add_services();  // 2 -> 3 and a new image: 1 created, 2 replaced
  web->set_service("web");
  web->set_action(v1::ServiceChange::UPDATE);
  web->set_from_count(2);
  web->set_to_count(3);
  web->set_spec_changed(true);
  web->set_instances_replaced(2);
  auto* db = d.add_services();  // reprovisioned in place
  db->set_service("db");
  db->set_action(v1::ServiceChange::UPDATE);
  db->set_from_count(1);
  db->set_to_count(1);
  db->set_spec_changed(true);
  db->set_in_place(true);
  db->set_instances_replaced(1);
  auto* cache = d.add_services();
  cache->set_service("cache");
  cache->set_action(v1::ServiceChange::CREATE);
  cache->set_to_count(2);
  auto* old = d.add_services();
  old->set_service("old");
  old->set_action(v1::ServiceChange::DELETE);
  old->set_from_count(4);
  auto* agent = d.add_services();  // counted by its rollout
  agent->set_service("vm-agent");
  agent->set_action(v1::ServiceChange::CREATE);
  agent->set_to_count(300);
  agent->mutable_image_plan()->set_agent(true);
  EXPECT_EQ(PlanSummary(d), "3 to create, 2 to replace, 4 to delete, 1 to reprovision in place\n");
  // Issue 31: agent updates used to read as "0 to create, 0 to replace,
  // 0 to delete"; now the servers to install on are said.
  agent->mutable_image_plan()->set_instances(300);
  agent->mutable_image_plan()->set_already(100);
  EXPECT_EQ(PlanSummary(d),
            "3 to create, 2 to replace, 4 to delete, 1 to reprovision in place, agents to install on 200 servers\n");
  EXPECT_EQ(PlanSummary(v1::Diff()), "0 to create, 0 to replace, 0 to delete\n");
  EXPECT_EQ(PlanHeader("jupiter", "127.0.0.1:7740"), "plan for project \"jupiter\" on mariposad 127.0.0.1:7740:\n");
}

}  // namespace mariposa::cli
