#include "convergence/decide/catalog.h"

#include <gtest/gtest.h>

#include "absl/strings/match.h"

namespace mariposa::convergence {
namespace {

const char* kOwner = "930896af-bf8c-48d4-885c-6573a94b1853";

triton::Package Pkg(const std::string& name, int64_t ram, int64_t quota_gib, int64_t cpu, bool active = true,
                    const std::string& version = "1.0.0", std::vector<std::string> owners = {}) {
  triton::Package p;
  p.uuid = "uuid-" + name + "-" + version;
  p.name = name;
  p.version = version;
  p.active = active;
  p.max_physical_memory = ram;
  p.quota = quota_gib * 1024;
  p.cpu_cap = cpu;
  p.max_swap = 2 * ram;
  p.max_lwps = 4000;
  p.zfs_io_priority = 100;
  p.vcpus = cpu / 100;
  p.owner_uuids = std::move(owners);
  return p;
}

std::vector<triton::Package> Packages() {
  return {Pkg("g4-highcpu-512M", 512, 10, 50),     Pkg("g4-highcpu-1G", 1024, 25, 100),
          Pkg("g4-highcpu-2G", 2048, 50, 200),     Pkg("g4-general-4G", 4096, 130, 200),
          Pkg("g4-highcpu-4G", 4096, 100, 400),    Pkg("g3-old-1G", 1024, 20, 100, false),
          Pkg("g4-highcpu-1G", 1024, 30, 100, true, "1.10.0"),
          Pkg("private-8G", 8192, 200, 400, true, "1.0.0", {"00000000-0000-0000-0000-00000000beef"})};
}

ServiceSpec Spec(const std::string& package, std::optional<int64_t> memory_mib = std::nullopt,
                 std::optional<int64_t> disk_gib = std::nullopt, std::optional<double> cpu = std::nullopt) {
  ServiceSpec s;
  s.name = "web";
  s.package = package;
  if (memory_mib) s.memory_bytes = *memory_mib << 20;
  if (disk_gib) s.disk_bytes = *disk_gib << 30;
  s.cpu = cpu;
  return s;
}

TEST(CatalogTest, PackageByNameTakesTheNewestVersionAndByUuidThatOne) {
  auto p = ChoosePackage(Spec("g4-highcpu-1G"), Packages(), kOwner);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->version, "1.10.0");  // 1.10.0 is newer than 1.0.0
  p = ChoosePackage(Spec("uuid-g4-highcpu-1G-1.0.0"), Packages(), kOwner);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->quota, 25 * 1024);
}

TEST(CatalogTest, ResourcesPickTheSmallestActivePackageThatFits) {
  struct Case {
    std::optional<int64_t> memory_mib, disk_gib;
    std::optional<double> cpu;
    std::string want;  // package name, or "" for none
  };
  const Case cases[] = {
      {std::nullopt, std::nullopt, std::nullopt, "g4-highcpu-1G"},  // default: 1 GiB
      {512, std::nullopt, std::nullopt, "g4-highcpu-512M"},
      {600, std::nullopt, std::nullopt, "g4-highcpu-1G"},
      {1024, 26, std::nullopt, "g4-highcpu-1G"},                    // the 30 GiB version
      {1024, 40, std::nullopt, "g4-highcpu-2G"},
      {4096, 120, std::nullopt, "g4-general-4G"},
      {4096, std::nullopt, 3.0, "g4-highcpu-4G"},                   // general has cpu 2
      {2048, std::nullopt, 1.5, "g4-highcpu-2G"},
      {8192, std::nullopt, std::nullopt, ""},                       // private-8G is another account's
  };
  for (const Case& c : cases) {
    auto p = ChoosePackage(Spec("", c.memory_mib, c.disk_gib, c.cpu), Packages(), kOwner);
    if (c.want.empty()) {
      ASSERT_FALSE(p.ok());
      EXPECT_TRUE(absl::IsNotFound(p.status()));
      EXPECT_NE(p.status().message().find("no active package has memory >= 8 GiB; the largest is g4-general-4G (4 GiB memory, 130 GiB disk, cpu 2)"),
                std::string::npos)
          << p.status();
      continue;
    }
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->name, c.want) << c.memory_mib.value_or(0) << " " << c.disk_gib.value_or(0);
  }
}

TEST(CatalogTest, UnknownRetiredAndForeignPackagesSayWhatExists) {
  auto p = ChoosePackage(Spec("g4-highcpu-1g"), Packages(), kOwner);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::IsNotFound(p.status()));
  EXPECT_EQ(p.status().message(),
            "no package \"g4-highcpu-1g\" in PAPI; close matches: g4-highcpu-1G, g4-highcpu-2G, g4-highcpu-4G");
  p = ChoosePackage(Spec("g3-old-1G"), Packages(), kOwner);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("is retired (active: false); active packages include: g4-highcpu-512M"), std::string::npos) << p.status();
  p = ChoosePackage(Spec("private-8G"), Packages(), kOwner);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("is not available to this project's account"), std::string::npos);
  p = ChoosePackage(Spec("zzzzzzzzzzzzzz"), Packages(), kOwner);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("; packages include: g4-highcpu-512M, "), std::string::npos) << p.status();
}

TEST(CatalogTest, DimensionsComeFromThePackageAndResourcesBesideANamedOneWin) {
  triton::Package general = Pkg("g4-general-4G", 4096, 130, 200);
  Sized sized = DimensionsOf(Spec("g4-general-4G"), general);
  EXPECT_EQ(sized.package_name, "g4-general-4G");
  triton::Dimensions d = sized.dim;
  EXPECT_EQ(d.billing_id, general.uuid);
  EXPECT_EQ(d.ram, 4096);
  EXPECT_EQ(d.quota, 130);
  EXPECT_EQ(d.cpu_cap, 200);
  EXPECT_EQ(d.max_swap, 8192);
  EXPECT_EQ(d.max_lwps, 4000);
  EXPECT_EQ(d.zfs_io_priority, 100);
  EXPECT_EQ(d.vcpus, 0);  // not a hardware VM
  d = DimensionsOf(Spec("g4-general-4G", std::nullopt, 100), general).dim;
  EXPECT_EQ(d.quota, 100);
  EXPECT_EQ(d.ram, 4096);
  // Chosen by resources: the package's values, rounded up.
  d = DimensionsOf(Spec("", 600), Pkg("g4-highcpu-1G", 1024, 25, 100)).dim;
  EXPECT_EQ(d.ram, 1024);
  ServiceSpec vm = Spec("g4-general-4G");
  vm.compute_type = "kvm";
  EXPECT_EQ(DimensionsOf(vm, general).dim.vcpus, 2);
}

TEST(CatalogTest, NetworksByNameOrUuidInOrder) {
  std::vector<triton::Network> all = {
      {"n-ext", "external", "10.0.0.0/8", false, false, {}},
      {"n-int", "internal", "192.168.0.0/16", false, false, {}},
      {"n-fab", "my-fabric-network", "172.16.0.0/16", true, false, {kOwner}},
      {"n-other", "their-fabric", "172.17.0.0/16", true, false, {"someone-else"}},
      {"p-pub", "public", "", false, true, {}},
  };
  auto n = ChooseNetworks({"my-fabric-network", "n-ext", "public"}, all, kOwner);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, (std::vector<std::string>{"n-fab", "n-ext", "p-pub"}));
  n = ChooseNetworks({"externel"}, all, kOwner);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().message(), "no network or network pool \"externel\" in NAPI; close matches: external");
  n = ChooseNetworks({"their-fabric"}, all, kOwner);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("is not provisionable by this project's account"), std::string::npos);
  n = ChooseNetworks({"external", "n-ext"}, all, kOwner);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("listed twice"), std::string::npos);
}

TEST(CatalogTest, BrandFollowsComputeTypeAndImage) {
  struct Case {
    std::string compute_type, brand, image_type, requires, want;  // want "" = error
  };
  const Case cases[] = {
      {"docker", "", "docker", "", "lx"},
      {"docker", "", "zone-dataset", "", ""},
      {"docker", "", "zvol", "", ""},
      {"infrastructure", "", "zone-dataset", "", "joyent"},
      {"infrastructure", "", "zone-dataset", "joyent-minimal", "joyent-minimal"},
      {"infrastructure", "", "lx-dataset", "", "lx"},
      {"infrastructure", "lx", "lx-dataset", "", "lx"},
      {"infrastructure", "lx", "zone-dataset", "", ""},
      {"infrastructure", "", "docker", "", ""},
      {"infrastructure", "", "zvol", "", ""},
      {"infrastructure", "", "lx-dataset", "joyent", ""},
      {"kvm", "", "zvol", "", "bhyve"},
      {"kvm", "kvm", "zvol", "", "kvm"},
      {"kvm", "", "zvol", "kvm", "kvm"},
      {"kvm", "bhyve", "zvol", "kvm", ""},
      {"kvm", "", "lx-dataset", "", ""},
      {"docker", "", "", "", "lx"},  // unknown type: the compute type's default
  };
  for (const Case& c : cases) {
    ServiceSpec s;
    s.compute_type = c.compute_type;
    s.brand = c.brand;
    triton::Image img;
    img.name = "img";
    img.version = "1.0.0";
    img.type = c.image_type;
    img.requirements_brand = c.requires;
    auto b = ChooseBrand(s, img);
    std::string label = c.compute_type + "/" + c.brand + " " + c.image_type + " " + c.requires;
    if (c.want.empty()) {
      EXPECT_FALSE(b.ok()) << label << " -> " << (b.ok() ? *b : "");
      if (!b.ok()) {
        EXPECT_TRUE(absl::IsInvalidArgument(b.status()));
      }
    } else {
      ASSERT_TRUE(b.ok()) << label << ": " << b.status();
      EXPECT_EQ(*b, c.want) << label;
    }
  }
}

// Core services are checked for the admin account, and need one.
TEST(CatalogTest, CoreServicesBelongToTheAdminAccount) {
  Manifest m;
  ServiceSpec core = Spec("g4-highcpu-1G");
  core.compute_type = "core";
  core.image = "imgapi@1";
  m.services["imgapi"] = core;
  Catalog cat;
  cat.packages = Packages();
  auto errors = CheckCatalog(m, cat, kOwner, "", "m.yaml");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "services.imgapi.compute_type");
  EXPECT_NE(errors[0].message.find("--admin-owner"), std::string::npos) << errors[0].message;
  EXPECT_TRUE(CheckCatalog(m, cat, kOwner, "admin-uuid", "m.yaml").empty());
  EXPECT_EQ(OwnerFor(core, kOwner, "admin-uuid"), "admin-uuid");
  EXPECT_EQ(OwnerFor(Spec("x"), kOwner, "admin-uuid"), kOwner);
}

TEST(CatalogTest, CheckCatalogLocatesEveryProblem) {
  Manifest m;
  ServiceSpec web = Spec("g4-highcpu-1g");
  web.image = "percona@5.7.1";
  web.networks = {"externel"};
  m.services["web"] = web;
  ServiceSpec ok = Spec("g4-highcpu-1G");
  ok.image = "nginx@1";
  m.services["ok"] = ok;
  Catalog cat;
  cat.packages = Packages();
  cat.networks = std::vector<triton::Network>{{"n-ext", "external", "10.0.0.0/8", false, false, {}}};
  cat.images = [](const std::string& ref) -> absl::StatusOr<triton::Image> {
    triton::Image i;
    i.name = ref.substr(0, ref.find('@'));
    i.type = ref == "percona@5.7.1" ? "lx-dataset" : "docker";
    return i;
  };
  auto errors = CheckCatalog(m, cat, kOwner, "", "m.yaml");
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].path, "services.web.package");
  EXPECT_EQ(errors[1].path, "services.web.networks");
  EXPECT_EQ(errors[2].path, "services.web.compute_type");
  EXPECT_NE(errors[2].message.find("use compute_type: infrastructure"), std::string::npos) << errors[2].message;
}

TEST(CatalogTest, HealthCheckNetworksMustBeTheServices) {
  Catalog cat;
  cat.networks = std::vector<triton::Network>{{"n-ext", "external", "10.0.0.0/8", false, false, {}},
                                              {"n-int", "internal", "192.168.0.0/16", false, false, {}},
                                              {"n-adm", "admin", "172.16.0.0/16", false, false, {}}};
  auto errors_for = [&](std::vector<std::string> networks, const std::string& check_network) {
    Manifest m;
    ServiceSpec web = Spec("");
    web.networks = std::move(networks);
    HealthCheckSpec hc;
    hc.name = "h";
    hc.type = "tcp";
    hc.port = 80;
    hc.network = check_network;
    web.healthchecks["h"] = hc;
    m.services["web"] = web;
    std::vector<std::string> out;
    for (const auto& d : CheckCatalog(m, cat, kOwner, "", "m.yaml")) {
      if (d.path == "services.web.healthchecks.h.network") out.push_back(d.message);
    }
    return out;
  };
  EXPECT_TRUE(errors_for({"external", "internal"}, "").empty());
  EXPECT_TRUE(errors_for({"external", "internal"}, "internal").empty());
  EXPECT_TRUE(errors_for({"external", "internal"}, "n-int").empty());  // the uuid of a name given
  EXPECT_TRUE(errors_for({"external", "n-int"}, "internal").empty());  // the name of a uuid given
  EXPECT_TRUE(errors_for({"external", "internal"}, "net1").empty());
  EXPECT_TRUE(errors_for({}, "net0").empty());
  auto e = errors_for({"external", "internal"}, "admin");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("\"admin\" is not one of the service's networks (external, internal)"), std::string::npos) << e[0];
  e = errors_for({"external", "internal"}, "net2");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("2 NICs (net0 … net1); there is no net2"), std::string::npos) << e[0];
  e = errors_for({}, "internal");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("names no networks"), std::string::npos) << e[0];
}

}  // namespace
}  // namespace mariposa::convergence

namespace mariposa::convergence {
namespace {

// Issue 48, 5: a volume size VOLAPI does not make is refused at apply,
// naming the sizes it does; without VOLAPI's list nothing is checked.
TEST(CatalogTest, VolumeSizesVolapiDoesNotMakeAreRefused) {
  Manifest m;
  VolumeSpec small, good, unset;
  small.size_mib = 1024;
  good.size_mib = 10240;
  m.volumes = {{"small", small}, {"good", good}, {"unset", unset}};
  Catalog cat;
  EXPECT_TRUE(CheckCatalog(m, cat, "owner", "", "m.yaml").empty()) << "sizes not read: not checked";
  cat.volume_sizes = std::vector<int64_t>{10240, 20480};
  auto errors = CheckCatalog(m, cat, "owner", "", "m.yaml");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "volumes.small.size");
  EXPECT_NE(errors[0].message.find("size 1g is not one VOLAPI makes volumes of; give one of 10g, 20g"),
            std::string::npos)
      << errors[0].message;
}

// Issue 48, 11: a volume that names no network is made on the account's
// default fabric network, as CloudAPI does; an account without one is
// refused at apply, naming the fabric networks it has.
TEST(CatalogTest, AVolumeWithNoNetworkTakesTheAccountsDefaultFabricNetwork) {
  const triton::Network mine{"n-mine", "My-Fabric-Network", "192.168.128.0/22", true, false, {"owner"}};
  const triton::Network lower{"n-lower", "my-fabric-network", "192.168.128.0/22", true, false, {"owner"}};
  const triton::Network theirs{"n-theirs", "My-Fabric-Network", "192.168.128.0/22", true, false, {"other"}};
  const triton::Network other{"n-other", "back", "10.9.0.0/24", true, false, {"owner"}};
  const triton::Network external{"n-ext", "My-Fabric-Network", "10.0.0.0/8", false, false, {}};
  struct Case {
    std::string name;
    std::vector<triton::Network> all;
    std::string want;  // the uuid, or a part of the error
  };
  const std::vector<Case> cases = {
      {"the account's", {theirs, other, mine}, "n-mine"},
      {"the name compared without case", {lower}, "n-lower"},
      {"another account's is not", {theirs, other}, "has no default fabric network (My-Fabric-Network"},
      {"its other fabric networks are named", {other}, "(it has back)"},
      {"a network that is not a fabric is not", {external}, "(it has none)"},
  };
  for (const Case& c : cases) {
    auto got = DefaultFabricNetwork(c.all, "owner");
    if (absl::StartsWith(c.want, "n-")) {
      ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
      EXPECT_EQ(got->uuid, c.want) << c.name;
    } else {
      ASSERT_FALSE(got.ok()) << c.name;
      EXPECT_TRUE(absl::IsNotFound(got.status())) << c.name;
      EXPECT_NE(got.status().message().find(c.want), std::string::npos) << c.name << ": " << got.status();
    }
  }
  Manifest m;
  VolumeSpec none, named, removed;
  named.network = "11111111-2222-4333-8444-555555555555";
  removed.remove = true;
  m.volumes = {{"uploads", none}, {"data", named}, {"old", removed}};
  Catalog cat;
  EXPECT_TRUE(CheckCatalog(m, cat, "owner", "", "m.yaml").empty()) << "networks not read: not checked";
  cat.networks = std::vector<triton::Network>{mine};
  EXPECT_TRUE(CheckCatalog(m, cat, "owner", "", "m.yaml").empty());
  cat.networks = std::vector<triton::Network>{theirs};
  auto errors = CheckCatalog(m, cat, "owner", "", "m.yaml");
  ASSERT_EQ(errors.size(), 1u) << "only the volume that names no network, and not one being removed";
  EXPECT_EQ(errors[0].path, "volumes.uploads.network");
  EXPECT_NE(errors[0].message.find("name the fabric network the volume is served on"), std::string::npos);
}

}  // namespace
}  // namespace mariposa::convergence
