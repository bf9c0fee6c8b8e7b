// The Projects service's copy (issue 52, point 6): a new project made of
// another's current version with the caller's changes, its meta and its
// secrets re-sealed; refusals make nothing.
#include <grpcpp/server_context.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "projects/projects_service.h"
#include "projects/sql_store.h"

namespace mariposa {
namespace {

// Seals to one place ("PROJECT_UUID/KEY"): a value copied without being
// re-sealed for the copy does not open there.
class PlaceCodec : public SecretCodec {
 public:
  std::string Seal(absl::string_view plain, absl::string_view place) const override {
    return absl::StrCat("sealed[", place, "]", plain);
  }
  absl::StatusOr<std::string> Unseal(absl::string_view sealed, absl::string_view place) const override {
    std::string prefix = absl::StrCat("sealed[", place, "]");
    if (!absl::StartsWith(sealed, prefix)) return absl::PermissionDeniedError("sealed for another place");
    return std::string(sealed.substr(prefix.size()));
  }
  bool SealedWithCurrentKey(absl::string_view) const override { return true; }
};

const char* kSource = R"(project: shop
meta: {theme: dark}
services:
  web:
    image: nginx@1
    count: 3
    tags: {tier: front}
    environment: {DB: "{{ .meta.dbhost }}"}
)";

class CopyProjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*SqlProjectStore::Open(":memory:", &clock_));
    store_->SetSecretCodec(&codec_);
    service_ = std::make_unique<ProjectsService>(store_.get(), &clock_);
    auto p = store_->CreateProject("shop", "the shop", "test", "");
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(store_->SetMeta(p->uuid, "dbhost", "db.prod", false, std::nullopt, "test").ok());
    ASSERT_TRUE(store_->SetMeta(p->uuid, "dbpass", "hunter2", true, std::nullopt, "test").ok());
    grpc::ServerContext ctx;
    v1::ApplyRequest req;
    req.set_manifest(kSource);
    req.set_force(true);
    v1::ApplyResponse resp;
    ASSERT_TRUE(service_->Apply(&ctx, &req, &resp).ok());
  }
  grpc::Status Copy(v1::CopyProjectRequest req, v1::CopyProjectResponse* resp) {
    grpc::ServerContext ctx;
    if (req.source().empty()) req.set_source("shop");
    return service_->CopyProject(&ctx, &req, resp);
  }
  int64_t Events() {
    auto e = store_->ListEvents("", 0, 1000);
    return e.ok() ? static_cast<int64_t>(e->size()) : -1;
  }

  SimulatedClock clock_;
  PlaceCodec codec_;
  std::unique_ptr<SqlProjectStore> store_;
  std::unique_ptr<ProjectsService> service_;
};

TEST_F(CopyProjectTest, TheCopyHasTheVersionWithItsChangesTheMetaAndTheSecretsResealed) {
  v1::CopyProjectRequest req;
  req.set_target("shop-staging");
  req.add_set("services.web.count=1");
  req.add_set("services.web.tags.tier=staging");
  req.add_meta("dbhost=db.staging");
  v1::CopyProjectResponse resp;
  grpc::Status st = Copy(req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.project().name(), "shop-staging");
  EXPECT_EQ(resp.version().number(), 1);
  EXPECT_EQ(resp.source_version(), 1);
  EXPECT_EQ(resp.meta_copied(), 1);
  EXPECT_EQ(resp.secrets_copied(), 1);
  auto copy = store_->GetProjectWithCurrent("shop-staging");
  ASSERT_TRUE(copy.ok());
  ASSERT_TRUE(copy->second.has_value());
  auto v = store_->GetVersion(copy->first.uuid, copy->second->uuid, true);
  ASSERT_TRUE(v.ok());
  EXPECT_NE(v->manifest.find("project: shop-staging"), std::string::npos) << v->manifest;
  EXPECT_NE(v->manifest.find("count: 1"), std::string::npos) << v->manifest;
  EXPECT_NE(v->manifest.find("tier: staging"), std::string::npos) << v->manifest;
  EXPECT_EQ(v->manifest, resp.manifest());
  // Meta: the override over the source's; the secret opens for the copy
  // (it was re-sealed: the source's sealed bytes would not).
  EXPECT_EQ(store_->GetMeta(copy->first.uuid, "dbhost")->value, "db.staging");
  auto secret = store_->GetMeta(copy->first.uuid, "dbpass");
  ASSERT_TRUE(secret.ok()) << secret.status();
  EXPECT_TRUE(secret->secret);
  EXPECT_EQ(secret->value, "hunter2");
  // The source is as it was.
  auto src = store_->GetProject("shop");
  EXPECT_EQ(store_->GetMeta(src->uuid, "dbhost")->value, "db.prod");
  EXPECT_EQ(store_->ListVersions(src->uuid)->size(), 1u);
  // The copy says where it came from.
  auto events = store_->ListEvents("shop-staging", 0, 100);
  ASSERT_TRUE(events.ok());
  bool said = false;
  for (const EventRecord& e : *events) {
    said = said || (e.kind == "project.copy" && absl::StrContains(e.detail, "copied from shop version 1"));
    EXPECT_FALSE(absl::StrContains(e.detail, "hunter2")) << e.kind;
  }
  EXPECT_TRUE(said);
}

TEST_F(CopyProjectTest, ADryRunMakesNothingAndShowsThePlan) {
  int64_t events = Events();
  v1::CopyProjectRequest req;
  req.set_target("shop-qa");
  req.set_dry_run(true);
  v1::CopyProjectResponse resp;
  ASSERT_TRUE(Copy(req, &resp).ok());
  EXPECT_NE(resp.manifest().find("project: shop-qa"), std::string::npos);
  EXPECT_FALSE(resp.diff().services().empty());
  EXPECT_TRUE(absl::IsNotFound(store_->GetProject("shop-qa").status()));
  EXPECT_EQ(Events(), events);
}

TEST_F(CopyProjectTest, RefusalsMakeNothingAndSayWhy) {
  struct Row {
    const char* name;
    std::function<void(v1::CopyProjectRequest*)> req;
    grpc::StatusCode code;
    const char* says;
  };
  const std::vector<Row> rows = {
      {"the target exists", [](v1::CopyProjectRequest* r) { r->set_target("shop"); }, grpc::ALREADY_EXISTS,
       "a copy makes a new project"},
      {"no source", [](v1::CopyProjectRequest* r) { r->set_source("nope"); }, grpc::NOT_FOUND, "nope"},
      {"a bad --set", [](v1::CopyProjectRequest* r) { r->add_set("services.web.image.x=1"); },
       grpc::INVALID_ARGUMENT, "services.web.image is a value"},
      {"a manifest the copy makes bad", [](v1::CopyProjectRequest* r) { r->add_set("services.web.count=-1"); },
       grpc::INVALID_ARGUMENT, "services.web.count"},
      {"a template left without its meta", [](v1::CopyProjectRequest* r) { r->set_no_meta(true); },
       grpc::INVALID_ARGUMENT, "dbhost"},
      {"a secret given as --meta", [](v1::CopyProjectRequest* r) { r->add_meta("dbpass=x"); },
       grpc::INVALID_ARGUMENT, "meta set --secret dbpass"},
      {"a --meta without =", [](v1::CopyProjectRequest* r) { r->add_meta("dbhost"); }, grpc::INVALID_ARGUMENT,
       "KEY=VALUE"},
  };
  for (const Row& r : rows) {
    int64_t events = Events();
    v1::CopyProjectRequest req;
    req.set_target("shop-copy");
    r.req(&req);
    v1::CopyProjectResponse resp;
    grpc::Status st = Copy(req, &resp);
    EXPECT_EQ(st.error_code(), r.code) << r.name << ": " << st.error_message();
    EXPECT_TRUE(absl::StrContains(st.error_message(), r.says)) << r.name << ": " << st.error_message();
    EXPECT_TRUE(absl::IsNotFound(store_->GetProject("shop-copy").status())) << r.name;
    EXPECT_EQ(Events(), events) << r.name << ": nothing happened, nothing is in the log";
  }
  // A source with no version has nothing to copy.
  ASSERT_TRUE(store_->CreateProject("empty", "", "test", "").ok());
  v1::CopyProjectRequest req;
  req.set_source("empty");
  req.set_target("empty-copy");
  v1::CopyProjectResponse resp;
  grpc::Status st = Copy(req, &resp);
  EXPECT_EQ(st.error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_TRUE(absl::StrContains(st.error_message(), "no version to copy")) << st.error_message();
}

// The receiving end of a copy from another data center: what it was sent
// is made here, the secrets sealed for this store; a refusal makes nothing.
TEST_F(CopyProjectTest, ACopyFromAnotherDataCenterIsMadeHere) {
  grpc::ServerContext ctx;
  v1::ReceiveCopyRequest req;
  req.set_target("shop-west");
  req.set_manifest(kSource);
  (*req.mutable_meta())["dbhost"] = "db.west";
  (*req.mutable_secrets())["dbpass"] = "hunter2";
  req.set_origin("shop version 1 in us-east-1, by alice");
  v1::CopyProjectResponse resp;
  grpc::Status st = service_->ReceiveCopy(&ctx, &req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  auto made = store_->GetProject("shop-west");
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(store_->GetMeta(made->uuid, "dbpass")->value, "hunter2");
  EXPECT_TRUE(store_->GetMeta(made->uuid, "dbpass")->secret);
  auto events = store_->ListEvents("shop-west", 0, 100);
  bool said = false;
  for (const EventRecord& e : *events) said = said || absl::StrContains(e.detail, "copied from shop version 1 in us-east-1");
  EXPECT_TRUE(said);
  // Without the meta its template needs: refused, nothing made.
  req.set_target("shop-west2");
  req.clear_meta();
  st = service_->ReceiveCopy(&ctx, &req, &resp);
  EXPECT_EQ(st.error_code(), grpc::INVALID_ARGUMENT) << st.error_message();
  EXPECT_TRUE(absl::IsNotFound(store_->GetProject("shop-west2").status()));
  // A key that is not a meta key.
  req.set_target("shop-west3");
  (*req.mutable_meta())["dbhost"] = "db.west";
  (*req.mutable_meta())["bad key"] = "x";
  st = service_->ReceiveCopy(&ctx, &req, &resp);
  EXPECT_EQ(st.error_code(), grpc::INVALID_ARGUMENT) << st.error_message();
  EXPECT_TRUE(absl::IsNotFound(store_->GetProject("shop-west3").status()));
}

}  // namespace
}  // namespace mariposa
