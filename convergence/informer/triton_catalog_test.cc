#include "convergence/informer/triton_catalog.h"

#include <algorithm>
#include <vector>

#include "common/clock.h"
#include "convergence/triton/fake_clients.h"
#include "gtest/gtest.h"

namespace mariposa::convergence {
namespace {

triton::Image Img(const std::string& uuid, const std::string& name, const std::string& version) {
  triton::Image i;
  i.uuid = uuid;
  i.name = name;
  i.version = version;
  i.state = "active";
  return i;
}

size_t Calls(const triton::FakeImgapiClient& c, const std::string& op) {
  auto calls = c.calls();
  return std::count_if(calls.begin(), calls.end(), [&](const std::string& s) { return s.rfind(op, 0) == 0; });
}

struct Fixture {
  Fixture() : catalog(&clock, TritonCatalogOptions{&imgapi}, [this](const std::string& api, const absl::Status& st) {
                notes.push_back(api + (st.ok() ? " ok" : " failed"));
              }) {}
  SimulatedClock clock;
  triton::FakeImgapiClient imgapi;
  std::vector<std::string> notes;
  TritonCatalog catalog;
};

// An answer is kept 30 s, a failure 5 s; Forget drops them; cached_only
// never asks.
TEST(TritonCatalogTest, ImagesAreKeptBriefly) {
  Fixture f;
  f.imgapi.PutImage(Img("11111111-1111-4111-8111-111111111111", "nginx", "1.2"));
  EXPECT_TRUE(absl::IsUnavailable(f.catalog.Resolve("nginx@1.2", /*cached_only=*/true).status()));
  EXPECT_EQ(Calls(f.imgapi, "ListImages"), 0u);
  ASSERT_TRUE(f.catalog.Resolve("nginx@1.2").ok());
  f.clock.Advance(absl::Seconds(29));
  ASSERT_TRUE(f.catalog.Resolve("nginx@1.2").ok());
  EXPECT_EQ(Calls(f.imgapi, "ListImages"), 1u);
  f.clock.Advance(absl::Seconds(1));
  ASSERT_TRUE(f.catalog.Resolve("nginx@1.2").ok());
  EXPECT_EQ(Calls(f.imgapi, "ListImages"), 2u);
  f.catalog.Forget();
  ASSERT_TRUE(f.catalog.Resolve("nginx@1.2").ok());
  EXPECT_EQ(Calls(f.imgapi, "ListImages"), 3u);

  auto missing = f.catalog.Resolve("nginx@1.3");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_NE(missing.status().message().find("nearest versions: 1.2"), std::string::npos) << missing.status();
  const size_t asked = Calls(f.imgapi, "ListImages");
  f.clock.Advance(absl::Seconds(4));
  EXPECT_TRUE(absl::IsNotFound(f.catalog.Resolve("nginx@1.3").status()));
  EXPECT_EQ(Calls(f.imgapi, "ListImages"), asked);
  f.clock.Advance(absl::Seconds(1));
  f.catalog.Resolve("nginx@1.3").IgnoreError();
  EXPECT_GT(Calls(f.imgapi, "ListImages"), asked);  // asked again
  EXPECT_FALSE(f.notes.empty());
  EXPECT_EQ(f.notes.front(), "IMGAPI ok");
}

// Without PAPI, NAPI or VOLAPI the catalog is empty (nothing is checked),
// and it is read again only after 30 s.
TEST(TritonCatalogTest, CatalogWithoutApisIsEmptyAndKept) {
  Fixture f;
  EXPECT_TRUE(absl::IsUnavailable(f.catalog.Now(/*cached_only=*/true).status()));
  auto c = f.catalog.Now();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE((*c)->packages.has_value());  // absent: not checked
  auto again = f.catalog.Now();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(c->get(), again->get());  // the same reading
  f.clock.Advance(absl::Seconds(30));
  auto later = f.catalog.Now();
  ASSERT_TRUE(later.ok());
  EXPECT_NE(c->get(), later->get());
}

}  // namespace
}  // namespace mariposa::convergence
