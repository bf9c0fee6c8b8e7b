// End to end: what an operator reads of a problem, what reaches VMAPI, and
// what a project owns besides its instances (CNS names, firewall rules,
// fabric networks).
#include "tests/convergence_fixture.h"

#include <chrono>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace mariposa::testing {
namespace {

// Issue 10: `status` and `admin status` state each problem as Error / Reason /
// Fix / Impact — a missing image, a crash loop and an unreachable VMAPI,
// caused with `tritonsim ctl` as an operator would see them.
TEST_F(ConvergenceTest, ProblemsAreStatedForAnOperator) {
  auto ctl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"deploy/tritonsim/tritonsim", "ctl", "--addr", sim_->addr()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv).exit_code;
  };
  // Runs the command until its output has `want` (up to ~15 s).
  auto until = [&](std::vector<std::string> args, const std::string& want) {
    RunResult r;
    for (int i = 0; i < 150; ++i) {
      r = M(args);
      if (r.out.find(want) != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return r.out;
  };

  // Apply checks images only when it can read the catalog: with PAPI
  // failing the manifest goes through (with a warning), and the sync finds
  // the image missing.
  ASSERT_EQ(ctl({"fail", "ListPackages", "4", "503"}), 0);  // the client tries 4 times
  WriteFile(dir_ + "/lost.yaml", "project: lost\nservices:\n  web:\n    image: no-such-image@1\n");
  ASSERT_EQ(M({"apply", "-f", dir_ + "/lost.yaml", "--yes"}).exit_code, 0);
  std::string out = until({"-j", "lost", "status"}, "Impact:");
  EXPECT_THAT(out, ::testing::HasSubstr("web      failed"));
  EXPECT_THAT(out, ::testing::HasSubstr("Error:  image no-such-image@1 of service web is not in IMGAPI"));
  EXPECT_THAT(out, ::testing::HasSubstr("Fix:    import no-such-image@1 into IMGAPI"));
  EXPECT_THAT(out, ::testing::HasSubstr("Impact: 1 instances of web cannot be created"));

  // Every create fails: after restart.max_attempts the service pauses.
  ASSERT_EQ(ctl({"fail", "CreateVm", "1000", "500"}), 0);
  WriteFile(dir_ + "/loop.yaml",
            "project: loop\nservices:\n  web:\n    image: autopilotpattern/nginx@1.4.0\n"
            "    restart: {max_attempts: 2, window: 10m}\n");
  ASSERT_EQ(M({"apply", "-f", dir_ + "/loop.yaml", "--yes"}).exit_code, 0);
  out = until({"-j", "loop", "status"}, "crash-looping");
  EXPECT_THAT(out, ::testing::HasSubstr("web      paused"));
  EXPECT_THAT(out, ::testing::HasSubstr("Error:  service web is crash-looping"));
  EXPECT_THAT(out, ::testing::HasSubstr("Reason: 2 failures in a row (restart.max_attempts 2"));
  EXPECT_THAT(out, ::testing::HasSubstr("Fix:    see `mariposa events` (service.crashlooping)"));
  EXPECT_THAT(out, ::testing::HasSubstr("Impact: 0 of 1 instances ready"));
  out = until({"admin", "status"}, "crash-looping");
  EXPECT_THAT(out, ::testing::HasSubstr("Project loop, service web:"));
  EXPECT_THAT(out, ::testing::HasSubstr("Error:  service web is crash-looping"));
  EXPECT_THAT(out, ::testing::HasSubstr("Project lost, service web:"));
  EXPECT_THAT(out, ::testing::HasSubstr("Error:  image no-such-image@1 of service web is not in IMGAPI"));

  // VMAPI goes down: 503 to every list, its change feed gone (the watch
  // drops and cannot come back): the actual state is unknown, and said so.
  ASSERT_EQ(ctl({"fail", "ListVms", "100000", "503"}), 0);
  ASSERT_EQ(ctl({"fail", "ChangeFeeds", "100000", "503"}), 0);
  ASSERT_EQ(ctl({"changefeed", "drop"}), 0);
  out = until({"-j", "loop", "status"}, "VMAPI is unreachable");
  EXPECT_THAT(out, ::testing::HasSubstr("web      unknown"));
  EXPECT_THAT(out, ::testing::ContainsRegex("web +unknown +1 +- +- +- +- +- +- +no"));  // nothing claimed
  EXPECT_THAT(out, ::testing::HasSubstr("Error:  VMAPI is unreachable at " + sim_->addr()));
  EXPECT_THAT(out, ::testing::HasSubstr("(since "));
  EXPECT_THAT(out, ::testing::HasSubstr("Fix:    check that VMAPI is up"));
  EXPECT_THAT(out, ::testing::HasSubstr("Impact: project loop: no instance is created, replaced or removed"));
  out = until({"admin", "status"}, "VMAPI is unreachable");
  EXPECT_THAT(out, ::testing::HasSubstr("Controller:\nError:  VMAPI is unreachable at " + sim_->addr()));
}

// What the manifest says reaches VMAPI: Docker containers as sdc-docker makes
// them (environment and command in internal_metadata), an infrastructure
// container's disk, and stop.timeout on the stop jobs.
TEST_F(ConvergenceTest, InstancesCarryTheManifestIntoVmapi) {
  WriteFile(dir_ + "/v1.yaml", manifest_);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}})) << daemon_->log();
  httplib::Client c(sim_->addr());
  auto vms = [&](const std::string& service) {
    std::vector<json> out;
    for (const auto& vm : json::parse(c.Get("/vms?state=active&tag.mariposa.service=" + service)->body)) {
      out.push_back(json::parse(c.Get("/vms/" + vm["uuid"].get<std::string>())->body));  // GET each, as asked
    }
    return out;
  };
  auto wordpress = vms("wordpress");
  ASSERT_EQ(wordpress.size(), 3u);
  for (const json& vm : wordpress) {
    EXPECT_EQ(vm["brand"], "lx");
    EXPECT_EQ(vm["docker"], true);
    const json& im = vm["internal_metadata"];
    ASSERT_TRUE(im.contains("docker:env")) << vm.dump();
    json env = json::parse(im["docker:env"].get<std::string>());
    EXPECT_THAT(env, ::testing::Contains("DB_PASSWORD=change-me"));
    EXPECT_THAT(env, ::testing::Contains("DB_USER=wp"));
    EXPECT_THAT(env, ::testing::Contains("WORDPRESS_URL=https://jupiter.example.com"));
    EXPECT_THAT(env, ::testing::Contains("WORDPRESS_THEME=twentyseventeen"));
    EXPECT_EQ(json::parse(im["docker:cmd"].get<std::string>()),
              json({"/bin/sh", "-c", "/bin/containerpilot wordpress"}));
    EXPECT_EQ(vm["customer_metadata"]["com.example.tier"], "web");
  }
  auto mysql = vms("mysql");
  ASSERT_EQ(mysql.size(), 1u);
  EXPECT_EQ(mysql[0]["brand"], "lx");
  EXPECT_EQ(mysql[0]["docker"], false);
  EXPECT_EQ(mysql[0]["quota"], 100);  // resources.disk: 100g
  // Packages as PAPI has them: billing_id is the package's uuid and the
  // package fills what resources do not say (quota in MiB there, GiB here).
  auto package = [&](const std::string& name) {
    json list = json::parse(c.Get("/packages?name=" + name)->body);
    EXPECT_EQ(list.size(), 1u) << name;
    return list.empty() ? json::object() : list[0];
  };
  json general = package("g4-general-4G");
  EXPECT_EQ(mysql[0]["billing_id"], general["uuid"]);
  EXPECT_EQ(mysql[0]["ram"], general["max_physical_memory"]);
  EXPECT_EQ(mysql[0]["cpu_cap"], general["cpu_cap"]);
  EXPECT_EQ(mysql[0]["max_swap"], general["max_swap"]);
  EXPECT_EQ(mysql[0]["max_lwps"], general["max_lwps"]);
  EXPECT_EQ(mysql[0]["zfs_io_priority"], general["zfs_io_priority"]);
  json highcpu = package("g4-highcpu-1G");
  for (const json& vm : wordpress) {
    EXPECT_EQ(vm["billing_id"], highcpu["uuid"]);
    EXPECT_EQ(vm["ram"], 1024);
    EXPECT_EQ(vm["quota"], highcpu["quota"].get<int>() / 1024);
    EXPECT_EQ(vm["cpu_cap"], highcpu["cpu_cap"]);
    // The daemon's --network, one NIC, in its subnet.
    ASSERT_EQ(vm["nics"].size(), 1u);
    EXPECT_EQ(vm["nics"][0]["network_uuid"], "aaaaaaaa-0000-4000-8000-000000000001");
    EXPECT_EQ(vm["nics"][0]["ip"].get<std::string>().rfind("10.", 0), 0u);
  }
  auto nginx = vms("nginx");
  ASSERT_EQ(nginx.size(), 2u);
  EXPECT_EQ(nginx[0]["docker"], true);
  EXPECT_EQ(nginx[0]["internal_metadata"]["docker:env"], "[]");
  EXPECT_FALSE(nginx[0]["internal_metadata"].contains("docker:cmd"));  // the image's own

  // stop.timeout (30s) reaches every stop job.
  ASSERT_EQ(M({"-j", "jupiter", "stop", "--service", "wordpress"}).exit_code, 0);
  ASSERT_TRUE(WaitFor({{"nginx", 2}, {"mysql", 1}})) << daemon_->log();
  json stops = json::parse(c.Get("/jobs?task=stop")->body);
  ASSERT_EQ(stops.size(), 3u);
  for (const json& j : stops) EXPECT_EQ(j["params"]["timeout"], 30) << j.dump();
}

// CNS (issue 35): every instance carries its service's CNS names in the
// triton.cns.services tag from its create; renamed or turned off by cns:,
// the tag is changed in place on the same instances (nothing replaced), and
// status, diff and events say so.
TEST_F(ConvergenceTest, CnsNamesAreTaggedAndChangedInPlace) {
  WriteFile(dir_ + "/v1.yaml", manifest_);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}})) << daemon_->log();
  httplib::Client c(sim_->addr());
  // uuid -> its tag ("-" when it has none), per service.
  auto tags = [&](const std::string& service) {
    std::map<std::string, std::string> out;
    for (const auto& vm : json::parse(c.Get("/vms?state=active&tag.mariposa.service=" + service)->body)) {
      const json& t = vm["tags"];
      out[vm["uuid"]] = t.contains("triton.cns.services") ? t["triton.cns.services"].get<std::string>() : "-";
    }
    return out;
  };
  auto all_are = [](const std::map<std::string, std::string>& m, const std::string& want) {
    for (const auto& [uuid, tag] : m) {
      if (tag != want) return false;
    }
    return !m.empty();
  };
  EXPECT_TRUE(all_are(tags("wordpress"), "jupiter-wordpress"));
  EXPECT_TRUE(all_are(tags("nginx"), "jupiter-nginx"));
  std::map<std::string, std::string> before = tags("wordpress");

  std::string v2 = absl::StrReplaceAll(manifest_, {{"    tags: {role: web}\n", "    tags: {role: web}\n    cns: [www, blog:80]\n"},
                                                   {"    tags: {role: lb}\n", "    tags: {role: lb}\n    cns: false\n"}});
  ASSERT_NE(v2, manifest_);
  WriteFile(dir_ + "/v2.yaml", v2);
  RunResult diff = M({"diff", "-f", dir_ + "/v2.yaml"});
  EXPECT_NE(diff.out.find("CNS names are set in place on its 3 instances"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("0 to create, 0 to replace, 0 to delete"), std::string::npos) << diff.out;
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v2.yaml", "--yes"}).exit_code, 0);
  bool renamed = false;
  for (int i = 0; i < 100 && !renamed; ++i) {
    renamed = all_are(tags("wordpress"), "blog:80,www") && all_are(tags("nginx"), "-");
    if (!renamed) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(renamed) << daemon_->log();
  std::map<std::string, std::string> after = tags("wordpress");
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [uuid, tag] : before) EXPECT_TRUE(after.count(uuid)) << uuid << " was replaced, not retagged";
  RunResult status = M({"-j", "jupiter", "status"});
  EXPECT_NE(status.out.find("CNS service names: mysql jupiter-mysql; wordpress blog:80,www"), std::string::npos)
      << status.out;
  RunResult events = M({"-j", "jupiter", "events"});
  EXPECT_NE(events.out.find("instance.cns-names"), std::string::npos) << events.out;
}

// Firewall rules: created in FWAPI with the project's own uuids, their
// services' instances tagged and their firewall turned on in place; a
// changed rule is updated at the same uuid, a removed one deleted and its
// instances' firewall turned off; a rule made by hand with another
// project's marker, or none, is never touched; deleting the project
// deletes its rules.
TEST_F(ConvergenceTest, FirewallRulesAreOwnedChangedAndRemovedWithTheManifest) {
  const std::string owner = "930896af-bf8c-48d4-885c-6573a94b1853";
  std::string v1 = manifest_ + R"(firewall:
  web-in:
    from: any
    to: nginx
    ports: [443, 8443]
  wp-to-db:
    from: wordpress
    to: mysql
    ports: 3306
    description: WordPress reaches MySQL
)";
  httplib::Client c(sim_->addr());
  // A rule of the account that is not the project's.
  std::string foreign = R"({"owner_uuid": ")" + owner + R"(", "rule": "FROM any TO all vms ALLOW tcp PORT 22",
                          "description": "by hand"})";
  ASSERT_EQ(c.Post("/rules", foreign, "application/json")->status, 202);
  auto rules = [&] {
    std::map<std::string, json> out;  // rule text -> rule, the project's
    for (const auto& r : json::parse(c.Get("/rules?owner_uuid=" + owner)->body)) {
      if (r.value("description", "") != "by hand") out[r["rule"]] = r;
    }
    return out;
  };
  // alias -> "tag/on|off" of the live instances.
  auto fw = [&] {
    std::map<std::string, std::string> out;
    for (const auto& vm : json::parse(c.Get("/vms?state=active&tag.mariposa.service=*")->body)) {
      const json& t = vm["tags"];
      out[vm["alias"]] = absl::StrCat(t.contains("mariposa.firewall") ? "tag" : "-", "/",
                                      vm["firewall_enabled"].get<bool>() ? "on" : "off");
    }
    return out;
  };
  // kill -9 while the rules are being made, then again: each restart
  // finds what it made, nothing is made twice.
  ASSERT_EQ(ApplyKilledTwice(v1), "");
  json got = json::parse(M({"-o", "json", "project", "get", "jupiter"}).out);
  std::string project = got["project"].value("uuid", "");
  ASSERT_EQ(project.size(), 36u) << got.dump();
  std::string nginx_tag = "tag \"mariposa.firewall\" = \"" + project + "/nginx\"";
  const std::string web_in = "FROM any TO " + nginx_tag + " ALLOW tcp PORTS 443, 8443";
  ASSERT_TRUE(Eventually([&] { return M({"-j", "jupiter", "status"}).out.find("converged") != std::string::npos &&
                                      fw()["jupiter-nginx-1"] == "tag/on"; },
                         absl::Seconds(20)))
      << M({"-j", "jupiter", "status"}).out;
  std::map<std::string, json> r1 = rules();
  ASSERT_EQ(r1.size(), 2u);
  ASSERT_TRUE(r1.count(web_in)) << json(r1).dump();
  std::string web_in_uuid = r1[web_in]["uuid"];
  std::map<std::string, std::string> want = {{"jupiter-nginx-1", "tag/on"},      {"jupiter-nginx-2", "tag/on"},
                                             {"jupiter-mysql-1", "tag/on"},      {"jupiter-wordpress-1", "tag/off"},
                                             {"jupiter-wordpress-2", "tag/off"}, {"jupiter-wordpress-3", "tag/off"}};
  EXPECT_EQ(fw(), want);
  RunResult status = M({"-j", "jupiter", "status"});
  EXPECT_NE(status.out.find("wp-to-db       in place  FROM wordpress TO mysql ALLOW tcp PORT 3306"), std::string::npos)
      << status.out;

  // Issue 48, 2: web-in edited by hand in FWAPI, its description kept (it
  // still carries the project's marker): found at the next resync, named,
  // and put back at the same uuid.
  json hand = {{"owner_uuid", owner}, {"rule", "FROM any TO all vms ALLOW tcp PORT 22"}};
  ASSERT_EQ(c.Put("/rules/" + web_in_uuid, hand.dump(), "application/json")->status, 202);
  ASSERT_TRUE(Eventually([&] { return rules().count(web_in) == 1; }, absl::Seconds(20))) << json(rules()).dump();
  EXPECT_EQ(rules()[web_in]["uuid"], web_in_uuid);
  RunResult put_back = M({"-j", "jupiter", "events", "--kind", "firewall."});
  EXPECT_NE(put_back.out.find("put back: changed in FWAPI by hand: rule \"FROM any TO all vms ALLOW tcp PORT 22\""),
            std::string::npos)
      << put_back.out;
  ASSERT_TRUE(Eventually([&] { return M({"-j", "jupiter", "status"}).exit_code == 0; }, absl::Seconds(20)))
      << M({"-j", "jupiter", "status"}).out;

  // web-in changes, wp-to-db goes: updated in place, deleted; mysql's and
  // wordpress's instances lose the tag, mysql's firewall goes off; none is
  // replaced.
  std::string v2 = absl::StrReplaceAll(v1, {{"    ports: [443, 8443]\n", "    ports: [8443]\n"},
                                            {"  wp-to-db:\n    from: wordpress\n    to: mysql\n    ports: 3306\n"
                                             "    description: WordPress reaches MySQL\n", ""}});
  ASSERT_NE(v2.find("ports: [8443]"), std::string::npos);
  ASSERT_EQ(v2.find("wp-to-db"), std::string::npos);
  WriteFile(dir_ + "/v2.yaml", v2);
  RunResult diff = M({"diff", "-f", dir_ + "/v2.yaml"});
  EXPECT_NE(diff.out.find("~ firewall.web-in: FROM any TO nginx ALLOW tcp PORTS 443, 8443 -> FROM any TO nginx ALLOW "
                          "tcp PORT 8443"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("- firewall.wp-to-db"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("0 to create, 0 to replace, 0 to delete"), std::string::npos) << diff.out;
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v2.yaml", "--yes"}).exit_code, 0);
  std::map<std::string, std::string> want2 = {{"jupiter-nginx-1", "tag/on"},   {"jupiter-nginx-2", "tag/on"},
                                              {"jupiter-mysql-1", "-/off"},     {"jupiter-wordpress-1", "-/off"},
                                              {"jupiter-wordpress-2", "-/off"}, {"jupiter-wordpress-3", "-/off"}};
  ASSERT_TRUE(Eventually([&] { return rules().size() == 1 && fw() == want2; }, absl::Seconds(20))) << json(rules()).dump();
  std::map<std::string, json> r2 = rules();
  ASSERT_EQ(r2.begin()->first, "FROM any TO " + nginx_tag + " ALLOW tcp PORT 8443");
  EXPECT_EQ(r2.begin()->second["uuid"], web_in_uuid) << "updated, not made again";
  RunResult events = M({"-j", "jupiter", "events"});
  for (const char* e : {"firewall.rule-created", "firewall.rule-updated", "firewall.rule-deleted", "instance.firewall"}) {
    EXPECT_NE(events.out.find(e), std::string::npos) << e << "\n" << events.out;
  }

  // The project goes: its rule with it; the one made by hand stays.
  ASSERT_EQ(M({"project", "delete", "jupiter", "--force", "--yes"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return rules().empty(); }, absl::Seconds(30))) << json(rules()).dump();
  ASSERT_TRUE(Eventually([&] { return M({"project", "list"}).out.find("jupiter") == std::string::npos; },
                         absl::Seconds(30)));
  json left = json::parse(c.Get("/rules?owner_uuid=" + owner)->body);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0]["description"], "by hand");
}

// A fabric: the VLAN and network made in NAPI for the project's account,
// the service's instances on it, its change in place; removed from the
// manifest, the instances move off by a rollout first, then the network
// and the VLAN go. A subnet change is refused at apply.
TEST_F(ConvergenceTest, FabricNetworksAreMadeUsedAndRemovedWithTheManifest) {
  const std::string owner = "930896af-bf8c-48d4-885c-6573a94b1853";
  std::string v1 = absl::StrReplaceAll(
      manifest_, {{"project: jupiter\n", "project: jupiter\nfabric:\n  vlan: 44\n  networks:\n"
                                          "    private: {subnet: 10.0.1.0/24, gateway: 10.0.1.1}\n"},
                  {"    scale: 1\n", "    scale: 1\n    networks: [private]\n"}});
  ASSERT_NE(v1.find("networks: [private]"), std::string::npos);
  httplib::Client c(sim_->addr());
  auto napi = [&](const std::string& path) { return json::parse(c.Get(path)->body); };
  auto mysql_nets = [&] {
    std::set<std::string> out;
    for (const auto& vm : napi("/vms?state=active&tag.mariposa.service=mysql")) {
      for (const auto& n : vm["nics"]) out.insert(n["network_uuid"].get<std::string>());
    }
    return out;
  };
  // kill -9 while NAPI makes the VLAN (its create is slowed for 1.5 s, so
  // mariposad dies before the answer and NAPI makes it after): the
  // restarted mariposad finds it, records the event the dead one could not,
  // and makes the network once.
  auto calls = [&](const std::string& op) { return napi("/_sim/stats")["calls"].value(op, 0); };
  ASSERT_EQ(c.Post("/_sim/fail", R"({"op": "CreateFabricVLAN", "count": 1, "hang_ms": 1500})", "application/json")->status,
            200);
  WriteFile(dir_ + "/v1.yaml", v1);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v1.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return calls("CreateFabricVLAN") == 1; }, absl::Seconds(10)));
  daemon_->Kill();
  ASSERT_TRUE(Eventually([&] { return c.Get("/fabrics/" + owner + "/vlans/44")->status == 200; }, absl::Seconds(10)));
  ASSERT_TRUE(daemon_->Start()) << daemon_->log();
  ASSERT_TRUE(WaitFor({{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}})) << daemon_->log();
  EXPECT_EQ(calls("CreateFabricVLAN"), 1) << "found, not made again";
  ASSERT_TRUE(Eventually([&] { return M({"-j", "jupiter", "events"}).out.find("fabric.vlan-created") != std::string::npos; },
                         absl::Seconds(10)))
      << M({"-j", "jupiter", "events"}).out;
  EXPECT_NE(M({"-j", "jupiter", "events"}).out.find("VLAN 44 (sent before mariposad restarted; its API now shows it done)"),
            std::string::npos)
      << M({"-j", "jupiter", "events"}).out;
  json nets = napi("/networks?fabric=true&provisionable_by=" + owner);
  std::string private_uuid;
  for (const auto& n : nets) {
    if (n["name"] == "jupiter-private") private_uuid = n["uuid"];
  }
  ASSERT_FALSE(private_uuid.empty()) << nets.dump();
  int named = 0;
  for (const auto& n : nets) named += n["name"] == "jupiter-private";
  EXPECT_EQ(named, 1) << nets.dump();
  EXPECT_EQ(napi("/fabrics/" + owner + "/vlans/44")["vlan_id"], 44);
  EXPECT_EQ(mysql_nets(), std::set<std::string>{private_uuid});
  ASSERT_TRUE(Eventually([&] { return M({"-j", "jupiter", "status"}).out.find("converged\n") != std::string::npos ||
                                      M({"-j", "jupiter", "status"}).out.find(": converged") != std::string::npos; },
                         absl::Seconds(20)));
  RunResult status = M({"-j", "jupiter", "status"});
  EXPECT_NE(status.out.find("private         in place  10.0.1.0/24  jupiter-private  " + private_uuid), std::string::npos)
      << status.out;

  // Resolvers change in place; a new subnet is refused and changes nothing.
  std::string v2 = absl::StrReplaceAll(v1, {{"gateway: 10.0.1.1}", "gateway: 10.0.1.1, resolvers: [8.8.8.8]}"}});
  WriteFile(dir_ + "/v2.yaml", v2);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v2.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return napi("/networks/" + private_uuid)["resolvers"] == json::array({"8.8.8.8"}); },
                         absl::Seconds(20)));
  std::string moved = absl::StrReplaceAll(v2, {{"subnet: 10.0.1.0/24, gateway: 10.0.1.1", "subnet: 10.0.9.0/24, gateway: 10.0.9.1"}});
  WriteFile(dir_ + "/moved.yaml", moved);
  RunResult refused = M({"apply", "-f", dir_ + "/moved.yaml", "--yes"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("fabric.networks.private.subnet"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("Give the network a new name"), std::string::npos) << refused.err;

  // Removed: mysql moves off by a rollout, then the network and the VLAN go.
  WriteFile(dir_ + "/v3.yaml", manifest_);
  ASSERT_EQ(M({"apply", "-f", dir_ + "/v3.yaml", "--yes"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return napi("/fabrics/" + owner + "/vlans").empty(); }, absl::Seconds(30)))
      << M({"-j", "jupiter", "status"}).out;
  EXPECT_EQ(mysql_nets().count(private_uuid), 0u);
  EXPECT_EQ(Running(), (std::map<std::string, int>{{"nginx", 2}, {"wordpress", 3}, {"mysql", 1}}));
  RunResult events = M({"-j", "jupiter", "events"});
  for (const char* e : {"fabric.vlan-created", "fabric.network-created", "fabric.network-updated",
                        "fabric.network-deleted", "fabric.vlan-deleted"}) {
    EXPECT_NE(events.out.find(e), std::string::npos) << e << "\n" << events.out;
  }
  // The deletion came after mysql's move: its instance was never left
  // without its network.
  EXPECT_LT(events.out.find("reprovision"), events.out.find("fabric.network-deleted")) << events.out;
}

// Issue 35's whole: deploy/examples/saturn.yaml (a fabric, firewall rules, a
// volume, CNS names, a scheduled and an event service) applies and
// converges, changes (a rule, the CNS names, a count) and is deleted with
// everything it made, through the CLI against tritonsim.

}  // namespace
}  // namespace mariposa::testing
