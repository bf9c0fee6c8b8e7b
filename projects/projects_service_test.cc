// The Projects service's check of an applied manifest against the data
// center (set_data_center): refusals store nothing, an unreadable catalog
// lets the apply through with a warning, and rollbacks are not checked.
#include "projects/projects_service.h"

#include <grpcpp/server_context.h>

#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "projects/sql_store.h"

namespace mariposa {
namespace {

const char* kV1 = "project: p\nservices:\n  web: {image: nginx@1, package: small}\n";
const char* kV2 = "project: p\nservices:\n  web: {image: nginx@1, package: retired}\n";

// A data center whose answers the tests set.
struct FakeDataCenter : DataCenter {
  std::function<absl::StatusOr<std::vector<ManifestDiagnostic>>(const Manifest&, const std::string&,
                                                                const std::string&)>
      catalog;
  std::function<absl::StatusOr<std::map<std::string, ImagePlan>>(const std::string&, const Manifest&,
                                                                 const std::set<std::string>&)>
      plan = [](const std::string&, const Manifest&, const std::set<std::string>&) {
        return std::map<std::string, ImagePlan>{};
      };
  absl::StatusOr<std::vector<ManifestDiagnostic>> CheckCatalog(const Manifest& m, const std::string& filename,
                                                               const std::string& owner) override {
    return catalog(m, filename, owner);
  }
  absl::StatusOr<std::map<std::string, ImagePlan>> PlanImages(const std::string& project_uuid, const Manifest& m,
                                                              const std::set<std::string>& services) override {
    return plan(project_uuid, m, services);
  }
  absl::StatusOr<ProjectHoldings> Holdings(const std::string&) override { return ProjectHoldings{}; }
};

class CatalogCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*SqlProjectStore::Open(":memory:", &clock_));
    service_ = std::make_unique<ProjectsService>(store_.get(), &clock_);
    service_->set_data_center(&dc_);
    dc_.catalog = ([this](const Manifest& m, const std::string& filename, const std::string& owner)
                                    -> absl::StatusOr<std::vector<ManifestDiagnostic>> {
      ++checks_;
      checked_owner_ = owner;
      if (!catalog_up_) return absl::UnavailableError("papi ListPackages: connection refused");
      std::vector<ManifestDiagnostic> out;
      for (const auto& kv : m.services) {
        if (kv.second.package == "retired") {
          out.push_back({filename, 0, 0, "services." + kv.first + ".package", "package \"retired\" is retired"});
        }
      }
      return out;
    });
  }
  grpc::Status Apply(const std::string& text, v1::ApplyResponse* resp) {
    grpc::ServerContext ctx;
    v1::ApplyRequest req;
    req.set_manifest(text);
    req.set_filename("m.yaml");
    req.set_force(true);
    return service_->Apply(&ctx, &req, resp);
  }
  int64_t Versions() {
    auto p = store_->GetProject("p");
    if (!p.ok()) return 0;
    auto list = store_->ListVersions(p->uuid);
    return list.ok() ? static_cast<int64_t>(list->size()) : -1;
  }

  SimulatedClock clock_;
  FakeDataCenter dc_;
  std::unique_ptr<SqlProjectStore> store_;
  std::unique_ptr<ProjectsService> service_;
  bool catalog_up_ = true;
  int checks_ = 0;
  std::string checked_owner_;
};

// Issue 48, 9: apply's two checks against Triton (the catalog, the image
// plan) are asked at the same time, so their bounds (5 s each in mariposad)
// do not add up: the catalog check waits here until the planner was asked,
// which happens only if they run side by side.
TEST_F(CatalogCheckTest, TheCatalogCheckAndTheImagePlanAreAskedTogether) {
  absl::Notification planner_asked;
  bool together = false;
  dc_.catalog = ([&](const Manifest&, const std::string&, const std::string&)
                                  -> absl::StatusOr<std::vector<ManifestDiagnostic>> {
    together = planner_asked.WaitForNotificationWithTimeout(absl::Seconds(20));
    return std::vector<ManifestDiagnostic>{};
  });
  dc_.plan = ([&](const std::string&, const Manifest&, const std::set<std::string>& services)
                                  -> absl::StatusOr<std::map<std::string, ImagePlan>> {
    planner_asked.Notify();
    std::map<std::string, ImagePlan> out;
    for (const std::string& s : services) out[s].label = "nginx@1";
    return out;
  });
  v1::ApplyResponse resp;
  ASSERT_TRUE(Apply(kV1, &resp).ok());
  EXPECT_TRUE(together) << "the catalog check ran alone: the image plan was asked only after it";
  EXPECT_EQ(Versions(), 1);
}

// A project belongs to one Triton account: the one it was created for, else
// mariposad's --owner; the catalog (packages, networks) is checked for it.
TEST_F(CatalogCheckTest, AProjectsAccountIsRecordedAndItsCatalogChecked) {
  const std::string kDefault = "930896af-bf8c-48d4-885c-6573a94b1853";
  const std::string kOther = "11111111-2222-4333-8444-555555555555";
  service_->set_default_owner(kDefault);
  v1::ApplyResponse resp;
  ASSERT_TRUE(Apply(kV1, &resp).ok());
  EXPECT_EQ(checked_owner_, kDefault);
  EXPECT_EQ(store_->GetProject("p")->owner, kDefault);

  grpc::ServerContext ctx;
  v1::CreateProjectRequest req;
  v1::CreateProjectResponse created;
  req.set_name("q");
  req.set_owner_uuid("bob");
  grpc::Status st = service_->CreateProject(&ctx, &req, &created);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("\"bob\" is not a uuid"), std::string::npos) << st.error_message();
  EXPECT_FALSE(store_->GetProject("q").ok());
  req.set_owner_uuid(kOther);
  ASSERT_TRUE(service_->CreateProject(&ctx, &req, &created).ok());
  EXPECT_EQ(created.project().owner_uuid(), kOther);
  ASSERT_TRUE(Apply("project: q\nservices:\n  web: {image: nginx@1, package: small}\n", &resp).ok());
  EXPECT_EQ(checked_owner_, kOther);
  EXPECT_EQ(store_->GetProject("q")->owner, kOther);
}

// A core service leaving the manifest would destroy its zones: refused
// (nothing stored) unless --force; a dry run warns.
TEST_F(CatalogCheckTest, DroppingACoreServiceIsRefusedWithoutForce) {
  v1::ApplyResponse resp;
  const std::string both =
      "project: p\nservices:\n  imgapi: {image: imgapi@1, compute_type: core}\n  web: {image: nginx}\n";
  const std::string web_only = "project: p\nservices:\n  web: {image: nginx}\n";
  const std::string as_zone = "project: p\nservices:\n  imgapi: {image: imgapi@1}\n  web: {image: nginx}\n";
  ASSERT_TRUE(Apply(both, &resp).ok());
  for (const std::string& text : {web_only, as_zone}) {
    grpc::Status st = Apply(text, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(st.error_message().find("core service imgapi would leave the project"), std::string::npos)
        << st.error_message();
    EXPECT_NE(st.error_message().find("--force"), std::string::npos);
    EXPECT_EQ(Versions(), 1);
  }
  grpc::ServerContext ctx;
  v1::ApplyRequest req;
  req.set_manifest(web_only);
  req.set_dry_run(true);
  ASSERT_TRUE(service_->Apply(&ctx, &req, &resp).ok());
  bool warned = false;
  for (const auto& w : resp.warnings()) warned |= w.find("core service imgapi would leave") != std::string::npos;
  EXPECT_TRUE(warned);
  grpc::ServerContext ctx2;
  req.set_dry_run(false);
  req.set_force(true);
  req.set_allow_downgrade(true);  // the CLI's --force
  ASSERT_TRUE(service_->Apply(&ctx2, &req, &resp).ok());
  EXPECT_EQ(Versions(), 2);
  EXPECT_EQ(DroppedCoreServices(ParseManifest(both, {}).manifest.value(), ParseManifest(web_only, {}).manifest.value()),
            std::vector<std::string>{"imgapi"});
}

TEST_F(CatalogCheckTest, RefusalsStoreNothingAndNameTheField) {
  v1::ApplyResponse resp;
  grpc::Status s = Apply(kV2, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "1 error in manifest, nothing was changed:\nm.yaml: services.web.package: package \"retired\" is retired");
  EXPECT_EQ(Versions(), 0);
  ASSERT_TRUE(Apply(kV1, &resp).ok());
  EXPECT_EQ(Versions(), 1);
}

TEST_F(CatalogCheckTest, AnUnreadableCatalogLetsTheApplyThroughWithAWarning) {
  catalog_up_ = false;
  v1::ApplyResponse resp;
  ASSERT_TRUE(Apply(kV2, &resp).ok());
  EXPECT_EQ(Versions(), 1);
  ASSERT_EQ(resp.warnings_size(), 1);
  EXPECT_NE(resp.warnings(0).find("packages, networks, brands and images were not checked (papi ListPackages: connection "
                                  "refused)"),
            std::string::npos)
      << resp.warnings(0);
}

TEST_F(CatalogCheckTest, RollbacksAreNotChecked) {
  catalog_up_ = false;  // v1 names "retired", stored while the catalog was down
  v1::ApplyResponse resp;
  ASSERT_TRUE(Apply(kV2, &resp).ok());
  catalog_up_ = true;
  ASSERT_TRUE(Apply(kV1, &resp).ok());
  EXPECT_EQ(Versions(), 2);
  int before = checks_;
  grpc::ServerContext ctx;
  v1::RollbackRequest req;
  req.set_project("p");
  req.set_version("1");
  req.set_force(true);
  v1::RollbackResponse rresp;
  grpc::Status s = service_->Rollback(&ctx, &req, &rresp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Versions(), 3);
  EXPECT_EQ(checks_, before);
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

TEST(ParseScaleChangeTest, ExactlyServiceEqualsDigits) {
  auto c = ParseScaleChange("web=5");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->service, "web");
  EXPECT_EQ(c->op, '=');
  EXPECT_EQ(c->n, 5);
  EXPECT_EQ(ParseScaleChange("web=+2")->op, '+');
  EXPECT_EQ(ParseScaleChange("web=-1")->n, 1);
  for (const char* bad : {"web= 5", "web =5", "web=5 ", "web", "=5", "web=", "web=+", "web=0x10", "web=1e3",
                          "web=100001", "web=9223372036854775807", "web=--1", "web=5\n"}) {
    auto r = ParseScaleChange(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << bad;
    EXPECT_NE(r.status().message().find("is not SERVICE=N, SERVICE=+N or SERVICE=-N"), absl::string_view::npos);
  }
}

TEST(ParseScaleChangeTest, AbsoluteAndRelativeSayWhatTheyWouldGive) {
  EXPECT_EQ(*ScaledCount({"web", '=', 7}, 3), 7);
  EXPECT_EQ(*ScaledCount({"web", '+', 2}, 3), 5);
  EXPECT_EQ(ScaledCount({"web", '-', 4}, 3).status().message(),
            "scaling \"web\" from 3 by -4 gives -1, outside 0..100000");
  EXPECT_EQ(ScaledCount({"web", '+', 100000}, 3).status().message(),
            "scaling \"web\" from 3 by +100000 gives 100003, outside 0..100000");
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

// GetVersion's diff_from: two stored versions compared field by field, as
// apply's plan shows a change (the console's version comparison).
TEST_F(CatalogCheckTest, TwoStoredVersionsAreComparedFieldByField) {
  v1::ApplyResponse r;
  ASSERT_TRUE(Apply("project: p\nservices:\n  web:\n    image: nginx@1.0.0\n    count: 2\n", &r).ok());
  ASSERT_TRUE(Apply("project: p\nservices:\n  web:\n    image: nginx@1.1.0\n    count: 3\n  db:\n    image: pg@1\n", &r).ok());
  grpc::ServerContext ctx;
  v1::GetVersionRequest req;
  req.set_project("p");
  req.set_version("2");
  req.set_diff_from("1");
  v1::GetVersionResponse resp;
  ASSERT_TRUE(service_->GetVersion(&ctx, &req, &resp).ok());
  std::map<std::string, std::string> got;
  for (const auto& s : resp.diff().services()) {
    std::string fields;
    for (const auto& f : s.fields()) fields += f.path() + ":" + f.from() + ">" + f.to() + " ";
    got[s.service()] = v1::ServiceChange::Action_Name(s.action()) + " " + std::to_string(s.from_count()) + ">" +
                       std::to_string(s.to_count()) + " " + fields;
  }
  EXPECT_EQ(got["web"], "UPDATE 2>3 count:2>3 image:nginx@1.0.0>nginx@1.1.0 ");
  EXPECT_EQ(got["db"].rfind("CREATE 0>1", 0), 0u) << got["db"];
  EXPECT_FALSE(resp.diff().empty());
  // The same version: empty; one that is not there: NOT_FOUND, nothing else.
  req.set_diff_from("2");
  resp.Clear();
  ASSERT_TRUE(service_->GetVersion(&ctx, &req, &resp).ok());
  EXPECT_TRUE(resp.diff().empty());
  req.set_diff_from("9");
  EXPECT_EQ(service_->GetVersion(&ctx, &req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  // Without diff_from, no diff.
  req.clear_diff_from();
  resp.Clear();
  ASSERT_TRUE(service_->GetVersion(&ctx, &req, &resp).ok());
  EXPECT_FALSE(resp.has_diff());
}

}  // namespace
}  // namespace mariposa

namespace mariposa {
namespace {

const char* kTwoDataCenters =
    "project: p\nservices:\n  web: {image: nginx@1, package: small, count: 3}\n"
    "datacenters:\n  - name: east\n  - name: west\n    services: {web: {count: 1, package: large}}\n";

// Issue 52, points 2 and 3: an apply through any data center asks every
// other one to check and plan the version, then stores a rollout (nothing
// of the version yet); each data center stores the same document under the
// same id when the rollout sends it, and runs its own entry.
TEST_F(CatalogCheckTest, AnApplyStartsARolloutAndEachDataCenterRunsItsOwnEntry) {
  std::vector<std::string> packages_checked;
  dc_.catalog = [&](const Manifest& m, const std::string&, const std::string&)
      -> absl::StatusOr<std::vector<ManifestDiagnostic>> {
    packages_checked.push_back(m.services.at("web").package);
    return std::vector<ManifestDiagnostic>{};
  };
  service_->set_datacenter("west");
  // East, as the daemon's link reaches it: another store, another service.
  SimulatedClock clock;
  auto east_store = std::move(*SqlProjectStore::Open(":memory:", &clock));
  ProjectsService east(east_store.get(), &clock);
  east.set_datacenter("east");
  std::vector<v1::ReceiveVersionRequest> sent;
  int started = 0;
  service_->set_rollouts(
      [&](const std::string& dc, const v1::ReceiveVersionRequest& req) -> absl::StatusOr<v1::ApplyResponse> {
        EXPECT_EQ(dc, "east");
        sent.push_back(req);
        return east.ReceiveHere(req, "peer");
      },
      [&] { ++started; });

  v1::ApplyResponse resp;
  ASSERT_TRUE(Apply(kTwoDataCenters, &resp).ok());
  EXPECT_EQ(packages_checked, std::vector<std::string>{"large"});  // west's catalog, west's package
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(sent[0].dry_run());  // east checked and planned it
  EXPECT_EQ(Versions(), 0) << "nothing is stored before the rollout sends it";
  ASSERT_TRUE(resp.has_datacenter_rollout());
  EXPECT_EQ(started, 1);
  const v1::DataCenterRollout& r = resp.datacenter_rollout();
  ASSERT_EQ(r.steps_size(), 2);
  EXPECT_EQ(r.steps(0).datacenter(), "east");
  EXPECT_EQ(r.steps(1).datacenter(), "west");
  ASSERT_EQ(resp.diff().datacenters_size(), 2);
  EXPECT_TRUE(resp.diff().datacenters(0).checked());
  EXPECT_TRUE(resp.diff().datacenters(1).local());
  auto stored = store_->ListRollouts("p", false);
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  // A second apply while it runs is refused, naming it.
  grpc::Status again = Apply(kTwoDataCenters, &resp);
  EXPECT_EQ(again.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(again.error_message().find("has a rollout across data centers under way"), std::string::npos);

  // The runner sends it: each stores it under the same id and hash.
  v1::ReceiveVersionRequest send;
  send.set_project("p");
  send.set_manifest(kTwoDataCenters);
  send.set_version_uuid(r.version_uuid());
  send.set_origin("west");
  auto at_east = east.ReceiveHere(send, "peer");
  auto at_west = service_->ReceiveHere(send, "mariposad west");
  ASSERT_TRUE(at_east.ok()) << at_east.status();
  ASSERT_TRUE(at_west.ok()) << at_west.status();
  EXPECT_EQ(at_east->version().uuid(), r.version_uuid());
  EXPECT_EQ(at_west->version().uuid(), r.version_uuid());
  EXPECT_EQ(at_east->version().hash(), at_west->version().hash());
  auto west_rows = store_->ListServices(r.version_uuid());
  auto east_rows = east_store->ListServices(r.version_uuid());
  ASSERT_TRUE(west_rows.ok() && east_rows.ok());
  EXPECT_EQ((*west_rows)[0].count, 1);
  EXPECT_EQ((*west_rows)[0].package, "large");
  EXPECT_EQ((*east_rows)[0].count, 3);
  // Sent twice (a runner that restarted): stored once.
  auto twice = service_->ReceiveHere(send, "mariposad west");
  ASSERT_TRUE(twice.ok());
  EXPECT_FALSE(twice->changed());
  EXPECT_EQ(Versions(), 1);
}

// A rollback (as a failed rollout's on_failure: rollback makes it) acts in
// this data center alone, and stores its version.
TEST_F(CatalogCheckTest, ARollbackOfAVersionForSeveralDataCentersIsStoredHere) {
  service_->set_datacenter("west");
  v1::ReceiveVersionRequest send;
  send.set_project("p");
  send.set_manifest(kTwoDataCenters);
  send.set_version_uuid("0b5c8a32-5d8e-4a55-9f3b-6a1f4b1f0c02");
  auto v1 = service_->ReceiveHere(send, "peer");
  ASSERT_TRUE(v1.ok()) << v1.status();
  std::string two = kTwoDataCenters;
  two.replace(two.find("count: 1"), 8, "count: 2");
  send.set_manifest(two);
  send.set_version_uuid("0b5c8a32-5d8e-4a55-9f3b-6a1f4b1f0c03");
  auto v2 = service_->ReceiveHere(send, "peer");
  ASSERT_TRUE(v2.ok()) << v2.status();
  auto back = service_->RollbackTo("p", v1->version().uuid(), v2->version().uuid(), "mariposad west", "rollout failed");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, 3);
  EXPECT_EQ(Versions(), 3);
}

TEST_F(CatalogCheckTest, DataCentersNeedTheMariposadsNameAndItsPeers) {
  v1::ApplyResponse resp;
  grpc::Status st = Apply(kTwoDataCenters, &resp);  // no --datacenter
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("this mariposad has no data center name; start it with --datacenter NAME"),
            std::string::npos)
      << st.error_message();
  service_->set_datacenter("west");
  st = Apply(kTwoDataCenters, &resp);  // no peers
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("has no peers to send it to"), std::string::npos) << st.error_message();
  EXPECT_EQ(Versions(), 0);
  // A peer that refuses, or does not answer: nothing starts anywhere.
  service_->set_rollouts(
      [](const std::string&, const v1::ReceiveVersionRequest&) -> absl::StatusOr<v1::ApplyResponse> {
        return absl::UnavailableError("data center east: connection refused");
      },
      nullptr);
  st = Apply(kTwoDataCenters, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);  // not this mariposad's own unavailability
  EXPECT_NE(st.error_message().find("the version was not started in any data center, since not every one listed "
                                    "checked it:\neast: data center east: connection refused"),
            std::string::npos)
      << st.error_message();
  auto none = store_->ListRollouts("p", true);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  // A data center the version no longer lists: it removes its instances.
  service_->set_datacenter("north");
  ASSERT_TRUE(Apply("project: p\nservices:\n  web: {image: nginx@1, package: small, count: 3}\n", &resp).ok());
  v1::ReceiveVersionRequest send;
  send.set_project("p");
  send.set_manifest(kTwoDataCenters);
  send.set_version_uuid("0b5c8a32-5d8e-4a55-9f3b-6a1f4b1f0c01");
  auto dropped = service_->ReceiveHere(send, "peer");
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  bool warned = false;
  for (const auto& w : dropped->warnings()) warned |= w.find("the project's instances here are removed") != std::string::npos;
  EXPECT_TRUE(warned);
  auto rows = store_->ListServices(dropped->version().uuid());
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].count, 0);
}

}  // namespace
}  // namespace mariposa
