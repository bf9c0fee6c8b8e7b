#include "convergence/triton/endpoints.h"

#include <gtest/gtest.h>

namespace mariposa::triton {
namespace {

std::map<std::string, std::string> Urls(const std::map<std::string, ApiEndpoint>& e) {
  std::map<std::string, std::string> out;
  for (const auto& [api, ep] : e) out[api] = ep.url;
  return out;
}

EndpointFlags F(std::string triton, std::map<std::string, std::string> urls = {}, std::string timeout = "",
                std::map<std::string, std::string> api_connections = {}) {
  EndpointFlags f;
  f.triton = std::move(triton);
  f.url = std::move(urls);
  f.timeout = std::move(timeout);
  f.api_connections = std::move(api_connections);
  return f;
}

TEST(ResolveEndpoints, Table) {
  const std::map<std::string, std::string> none;
  const std::map<std::string, std::string> sapi = {
      {"VMAPI_SERVICE", "vmapi.coal.example.com"}, {"CNAPI_SERVICE", "cnapi.coal.example.com"},
      {"IMGAPI_SERVICE", "imgapi.coal.example.com"}, {"PAPI_SERVICE", "papi.coal.example.com"},
      {"NAPI_SERVICE", "napi.coal.example.com"}, {"WORKFLOW_SERVICE", "workflow.coal.example.com"}};
  struct Case {
    const char* name;
    EndpointFlags flags;
    std::map<std::string, std::string> sapi;
    std::map<std::string, std::string> want;  // api -> url; empty with `error`
    const char* error;
  } cases[] = {
      {"nothing: goal state only", F(""), none,
       {{"vmapi", ""}, {"cnapi", ""}, {"imgapi", ""}, {"papi", ""}, {"napi", ""}, {"wfapi", ""}, {"fwapi", ""}, {"volapi", ""}, {"mahi", ""}},
       nullptr},
      {"--triton: all at one address (trailing slash dropped)", F("http://127.0.0.1:8580/"), none,
       {{"vmapi", "http://127.0.0.1:8580"}, {"cnapi", "http://127.0.0.1:8580"}, {"imgapi", "http://127.0.0.1:8580"},
        {"papi", "http://127.0.0.1:8580"}, {"napi", "http://127.0.0.1:8580"}, {"wfapi", "http://127.0.0.1:8580"},
        {"fwapi", "http://127.0.0.1:8580"}, {"volapi", "http://127.0.0.1:8580"}, {"mahi", "http://127.0.0.1:8580"}},
       nullptr},
      {"one API moved off --triton", F("http://sim:1", {{"vmapi", "http://vmapi:2"}}), none,
       {{"vmapi", "http://vmapi:2"}, {"cnapi", "http://sim:1"}, {"imgapi", "http://sim:1"}, {"papi", "http://sim:1"},
        {"napi", "http://sim:1"}, {"wfapi", "http://sim:1"}, {"fwapi", "http://sim:1"}, {"volapi", "http://sim:1"}, {"mahi", "http://sim:1"}},
       nullptr},
      {"SAPI metadata: each at its own host; FWAPI is optional", F(""), sapi,
       {{"vmapi", "http://vmapi.coal.example.com"}, {"cnapi", "http://cnapi.coal.example.com"},
        {"imgapi", "http://imgapi.coal.example.com"}, {"papi", "http://papi.coal.example.com"},
        {"napi", "http://napi.coal.example.com"}, {"wfapi", "http://workflow.coal.example.com"}, {"fwapi", ""}, {"volapi", ""}, {"mahi", ""}},
       nullptr},
      {"FWAPI from its flag", F("", {{"fwapi", "http://fwapi.coal.example.com"}}), sapi,
       {{"vmapi", "http://vmapi.coal.example.com"}, {"cnapi", "http://cnapi.coal.example.com"},
        {"imgapi", "http://imgapi.coal.example.com"}, {"papi", "http://papi.coal.example.com"},
        {"napi", "http://napi.coal.example.com"}, {"wfapi", "http://workflow.coal.example.com"},
        {"fwapi", "http://fwapi.coal.example.com"}, {"volapi", ""}, {"mahi", ""}},
       nullptr},
      {"a flag wins over metadata", F("", {{"cnapi", "https://10.0.0.9:443"}}), sapi,
       {{"vmapi", "http://vmapi.coal.example.com"}, {"cnapi", "https://10.0.0.9:443"},
        {"imgapi", "http://imgapi.coal.example.com"}, {"papi", "http://papi.coal.example.com"},
        {"napi", "http://napi.coal.example.com"}, {"wfapi", "http://workflow.coal.example.com"}, {"fwapi", ""}, {"volapi", ""}, {"mahi", ""}},
       nullptr},
      {"wfapi defaults to IMGAPI's address",
       F("", {{"vmapi", "http://v"}, {"cnapi", "http://c"}, {"imgapi", "http://i"}, {"papi", "http://p"}, {"napi", "http://n"}}),
       none,
       {{"vmapi", "http://v"}, {"cnapi", "http://c"}, {"imgapi", "http://i"}, {"papi", "http://p"}, {"napi", "http://n"},
        {"wfapi", "http://i"}, {"fwapi", ""}, {"volapi", ""}, {"mahi", ""}},
       nullptr},
      {"some given, others missing", F("", {{"vmapi", "http://v"}}), none, {},
       "no address for cnapi, imgapi, napi, papi, wfapi: give --cnapi URL"},
      {"not a URL", F("", {{"vmapi", "vmapi.example.com"}}), none, {}, "--vmapi \"vmapi.example.com\" is not an http://"},
      {"a path", F("http://sim:1/vmapi"), none, {}, "--triton \"http://sim:1/vmapi\" must name a host (and port) only"},
      {"unknown API", F("", {{"cloudapi", "http://f"}}), none, {}, "unknown Triton API \"cloudapi\""},
      {"bad timeout", F("http://sim:1", {}, "0s"), none, {}, "--api-timeout \"0s\" is not a positive duration"},
      {"bad per-API connections", F("http://sim:1", {}, "", {{"vmapi", "0"}}), none, {},
       "--vmapi-connections \"0\" is not a number of connections in 1..4096"},
  };
  for (const Case& c : cases) {
    auto got = ResolveEndpoints(c.flags, c.sapi);
    if (c.error != nullptr) {
      ASSERT_FALSE(got.ok()) << c.name;
      EXPECT_NE(got.status().message().find(c.error), std::string::npos) << c.name << ": " << got.status();
      continue;
    }
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
    EXPECT_EQ(Urls(*got), c.want) << c.name;
  }
}

TEST(ResolveEndpoints, TimeoutsAndConnectionsForAllAndEach) {
  EndpointFlags f;
  f.triton = "http://sim:1";
  f.timeout = "30s";
  f.connections = "16";
  f.api_timeout = {{"vmapi", "2m"}};
  f.api_connections = {{"cnapi", "4"}};
  auto got = ResolveEndpoints(f, {});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->at("vmapi").timeout, absl::Minutes(2));
  EXPECT_EQ(got->at("vmapi").connections, 16);
  EXPECT_EQ(got->at("cnapi").timeout, absl::Seconds(30));
  EXPECT_EQ(got->at("cnapi").connections, 4);
  auto defaults = ResolveEndpoints(F("http://sim:1"), {});
  EXPECT_EQ(defaults->at("papi").timeout, absl::Seconds(10));
  EXPECT_EQ(defaults->at("papi").connections, 64);
}

TEST(ParseSapiMetadata, KeepsServicesOnly) {
  auto m = ParseSapiMetadata(R"({"VMAPI_SERVICE": "vmapi.a.b", "datacenter_name": "coal", "CNAPI_SERVICE": "cnapi.a.b"})",
                             "/opt/smartdc/etc/config.json");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*m, (std::map<std::string, std::string>{{"CNAPI_SERVICE", "cnapi.a.b"}, {"VMAPI_SERVICE", "vmapi.a.b"}}));
  EXPECT_NE(ParseSapiMetadata("[1]", "f.json").status().message().find("f.json is not a JSON object"), std::string::npos);
  EXPECT_NE(ParseSapiMetadata(R"({"VMAPI_SERVICE": 3})", "f.json").status().message().find("VMAPI_SERVICE must be a string"),
            std::string::npos);
}

}  // namespace
}  // namespace mariposa::triton
