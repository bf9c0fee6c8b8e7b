// The HTTP API's routes (every served RPC has one, read from the protos),
// the JSON mapping of requests and replies, errors, and the OpenAPI
// document generated from them.
#include "gateway/routes.h"

#include <google/protobuf/descriptor.h>

#include <nlohmann/json.hpp>
#include <set>

#include "gateway/errors.h"
#include "gateway/json_mapping.h"
#include "gateway/openapi.h"
#include "gtest/gtest.h"
#include "mariposa/v1/admin.pb.h"
#include "mariposa/v1/auth.pb.h"
#include "mariposa/v1/events.pb.h"
#include "mariposa/v1/projects.pb.h"
#include "mariposa/v1/queue.pb.h"

namespace mariposa::gateway {
namespace {

using json = nlohmann::json;

const Routes& All() {
  static const Routes* r = [] {
    auto read = Routes::Read(Routes::Served());
    EXPECT_TRUE(read.ok()) << read.status();
    return new Routes(*read);
  }();
  return *r;
}

// Every method of every service mariposad serves has a route; the only
// RPCs without one are the health agents' (a two-way stream, and the
// agent's own server).
TEST(Routes, EveryServedMethodHasARoute) {
  std::set<std::string> routed;
  for (const Route& r : All().all()) routed.insert(r.method->full_name());
  const auto* file = mariposa::v1::ApplyRequest::descriptor()->file();
  const auto* pool = file->pool();
  int methods = 0;
  for (const std::string& s : Routes::Served()) {
    const auto* service = pool->FindServiceByName(s);
    ASSERT_NE(service, nullptr) << s;
    for (int i = 0; i < service->method_count(); ++i, ++methods) {
      EXPECT_TRUE(routed.count(service->method(i)->full_name())) << service->method(i)->full_name();
    }
  }
  EXPECT_EQ(routed.size(), static_cast<size_t>(methods));
  EXPECT_EQ(methods, 56);  // with ReceiveVersion, ListRollouts, CancelRollout, ProjectAcross (issue 52)
  // The services a gRPC client can reach that are not served over HTTP.
  std::set<std::string> served(Routes::Served().begin(), Routes::Served().end());
  std::set<std::string> unserved;
  for (const char* f :
       {"mariposa/v1/health.proto", "mariposa/v1/projects.proto", "mariposa/v1/admin.proto", "mariposa/v1/queue.proto",
        "mariposa/v1/state.proto", "mariposa/v1/events.proto", "mariposa/v1/images.proto", "mariposa/v1/auth.proto"}) {
    const auto* fd = pool->FindFileByName(f);
    ASSERT_NE(fd, nullptr) << f;
    for (int i = 0; i < fd->service_count(); ++i) {
      if (!served.count(fd->service(i)->full_name())) unserved.insert(fd->service(i)->full_name());
    }
  }
  EXPECT_EQ(unserved, (std::set<std::string>{"mariposa.v1.HealthAgent", "mariposa.v1.HealthAgents"}));
}

TEST(Routes, FindTakesTheVerbThePathAndTheMostSpecificTemplate) {
  struct Row {
    std::string verb, path, method;
    std::map<std::string, std::string> params;
  };
  std::vector<Row> rows = {
      {"GET", "/v1/projects", "mariposa.v1.Projects.ListProjects", {}},
      {"POST", "/v1/projects", "mariposa.v1.Projects.CreateProject", {}},
      {"GET", "/v1/projects/web", "mariposa.v1.Projects.GetProject", {{"project", "web"}}},
      {"DELETE", "/v1/projects/web", "mariposa.v1.Projects.DeleteProject", {{"project", "web"}}},
      {"POST", "/v1/projects/web:apply", "mariposa.v1.Projects.Apply", {{"project", "web"}}},
      {"GET", "/v1/projects/web/versions/3", "mariposa.v1.Projects.GetVersion", {{"project", "web"}, {"version", "3"}}},
      {"PUT", "/v1/projects/web/meta/a%2Fb", "mariposa.v1.Projects.SetMeta", {{"project", "web"}, {"key", "a/b"}}},
      {"GET", "/v1/projects/web/events", "mariposa.v1.Projects.ListEvents", {{"project", "web"}}},
      {"GET", "/v1/events", "mariposa.v1.Projects.ListEvents", {}},
      {"GET", "/v1/projects/web/events:watch", "mariposa.v1.Events.Watch", {{"project", "web"}}},
      {"GET", "/v1/events:watch", "mariposa.v1.Events.Watch", {}},
      {"POST", "/v1/tasks/t1:terminate", "mariposa.v1.Queue.TerminateTask", {{"task", "t1"}}},
      {"POST", "/v1/projects/web:freeze", "mariposa.v1.Queue.Freeze", {{"project", "web"}}},
      {"GET", "/v1/images/base@1", "mariposa.v1.Images.Get", {{"image", "base@1"}}},
      {"GET", "/v1/images/base:changes", "mariposa.v1.Images.Changes", {{"name", "base"}}},
      {"GET", "/v1/images:avail", "mariposa.v1.Images.Avail", {}},
      {"GET", "/v1/auth/whoami", "mariposa.v1.Auth.WhoAmI", {}},
  };
  for (const Row& row : rows) {
    bool known = false;
    auto m = All().Find(row.verb, row.path, &known);
    ASSERT_TRUE(m.has_value()) << row.verb << " " << row.path;
    EXPECT_EQ(m->route->method->full_name(), row.method) << row.path;
    EXPECT_EQ(m->params, row.params) << row.path;
  }
  bool known = false;
  EXPECT_FALSE(All().Find("PATCH", "/v1/projects/web", &known).has_value());
  EXPECT_TRUE(known) << "another verb takes it: 405, not 404";
  EXPECT_FALSE(All().Find("GET", "/v1/nothing/here", &known).has_value());
  EXPECT_FALSE(known);
  EXPECT_FALSE(All().Find("GET", "/v1/projects/%zz", &known).has_value()) << "a malformed escape";
  EXPECT_EQ(PercentDecode("a%20b%2f"), "a b/");
  EXPECT_EQ(PercentDecode("%4"), std::nullopt);
}

const Route& RouteFor(const std::string& verb, const std::string& path, std::map<std::string, std::string>* params) {
  bool known;
  auto m = All().Find(verb, path, &known);
  EXPECT_TRUE(m.has_value()) << path;
  *params = m->params;
  return *m->route;
}

TEST(JsonMapping, BodyQueryAndPathFillTheRequestWithBytesAsText) {
  std::map<std::string, std::string> params;
  const Route& apply = RouteFor("POST", "/v1/projects/web:apply", &params);
  v1::ApplyRequest a;
  ASSERT_TRUE(
      BuildRequest(apply, R"({"manifest": "project: web\n", "dryRun": true, "previous_version": "3"})", {}, params, &a)
          .ok());
  EXPECT_EQ(a.project(), "web");
  EXPECT_EQ(a.manifest(), "project: web\n") << "bytes fields are text, not base64";
  EXPECT_TRUE(a.dry_run()) << "lowerCamelCase is read too";
  EXPECT_EQ(a.previous_version(), "3");

  const Route& list = RouteFor("GET", "/v1/projects/web/events", &params);
  v1::ListEventsRequest e;
  ASSERT_TRUE(BuildRequest(list, "", {{"after_index", "7"}, {"limit", "50"}, {"newest", ""}}, params, &e).ok());
  EXPECT_EQ(e.project(), "web");
  EXPECT_EQ(e.after_index(), 7);
  EXPECT_EQ(e.limit(), 50);
  EXPECT_TRUE(e.newest());

  const Route& watch = RouteFor("GET", "/v1/events:watch", &params);
  v1::WatchEventsRequest w;
  ASSERT_TRUE(BuildRequest(watch, "", {{"kinds", "task."}, {"kinds", "instance.create"}}, params, &w).ok());
  ASSERT_EQ(w.kinds_size(), 2) << "a repeated field from repeated parameters";
  EXPECT_EQ(w.kinds(0), "task.");

  // Refusals say what does not fit and how.
  struct Bad {
    const Route* route;
    std::string body;
    std::multimap<std::string, std::string> query;
    std::string says;
  };
  v1::ApplyRequest scratch;
  for (const Bad& b : std::vector<Bad>{
           {&apply, "[1]", {}, "must be a JSON object with the fields of ApplyRequest"},
           {&apply, "{\"manifesto\": \"x\"}", {}, "does not fit ApplyRequest"},
           {&apply, "{\"force\": {\"a\": 1}}", {}, "does not fit ApplyRequest"},
           {&list, "{}", {}, "takes no body; give the fields as query parameters"},
           {&list, "", {{"after", "1"}}, "unknown query parameter \"after\": the fields of ListEventsRequest are"},
           {&list, "", {{"newest", "maybe"}}, "newest=maybe is not a boolean"},
       }) {
    std::unique_ptr<google::protobuf::Message> m(
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(b.route->method->input_type())->New());
    absl::Status st = BuildRequest(*b.route, b.body, b.query, {}, m.get());
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << b.body;
    EXPECT_NE(st.message().find(b.says), std::string::npos) << st.message();
  }
}

TEST(JsonMapping, RepliesPrintEveryFieldWithProtoNames) {
  v1::PingResponse p;
  p.set_payload("héllo");
  json j = json::parse(ToJson(p));
  EXPECT_EQ(j["payload"], "héllo");
  v1::ListTasksResponse t;
  t.add_tasks()->set_uuid("u1");
  j = json::parse(ToJson(t));
  EXPECT_EQ(j["tasks"][0]["uuid"], "u1");
  EXPECT_TRUE(j["tasks"][0].contains("services")) << "defaults are printed";
}

TEST(Errors, CodeMessageAndRfd40Parts) {
  json j = json::parse(ErrorBody(7,
                                 "token:ci may not call Queue/Freeze: it needs the operator role on project web; an "
                                 "admin grants it with `mariposa admin grant token:ci operator -j web`"));
  EXPECT_EQ(j["code"], 7);
  EXPECT_EQ(j["status"], "PERMISSION_DENIED");
  EXPECT_EQ(j["error"], "token:ci may not call Queue/Freeze: it needs the operator role on project web");
  EXPECT_EQ(j["fix"], "an admin grants it with `mariposa admin grant token:ci operator -j web`");
  EXPECT_EQ(j["impact"], "nothing was changed");
  EXPECT_EQ(HttpStatus(7), 403);
  j = json::parse(ErrorBody(14, "Error: the store is readonly\nReason: disk full\nFix: free space\nImpact: no writes"));
  EXPECT_EQ(j["error"], "the store is readonly");
  EXPECT_EQ(j["reason"], "disk full");
  EXPECT_EQ(j["fix"], "free space");
  EXPECT_EQ(j["impact"], "no writes");
  EXPECT_EQ(HttpStatus(14), 503);
  j = json::parse(ErrorBody(4, "the call took too long"));
  EXPECT_NE(j["impact"].get<std::string>().find("unknown whether the call took effect"), std::string::npos);
  EXPECT_FALSE(j["fix"].get<std::string>().empty()) << "a fix even when the message has none";
  for (int code = 1; code <= 16; ++code) {
    j = json::parse(ErrorBody(code, "x"));
    EXPECT_FALSE(j["reason"].get<std::string>().empty()) << code;
    EXPECT_GE(HttpStatus(code), 400) << code;
  }
}

TEST(OpenApi, DescribesEveryRouteAndTheSchemasItNames) {
  json doc = json::parse(OpenApi(All(), "test"));
  EXPECT_EQ(doc["openapi"], "3.0.3");
  size_t ops = 0;
  for (const Route& r : All().all()) {
    std::string verb = r.verb;
    for (char& c : verb) c = static_cast<char>(tolower(c));
    ASSERT_TRUE(doc["paths"][r.path].contains(verb)) << r.verb << " " << r.path;
    ++ops;
  }
  size_t described = 0;
  std::set<std::string> ids;
  for (auto& [path, verbs] : doc["paths"].items()) {
    for (auto& [verb, op] : verbs.items()) {
      ++described;
      EXPECT_TRUE(ids.insert(op["operationId"].get<std::string>()).second) << "unique: " << op["operationId"];
    }
  }
  EXPECT_EQ(described, ops);
  // Every $ref resolves.
  std::function<void(const json&)> refs = [&](const json& j) {
    if (j.is_object()) {
      if (j.contains("$ref")) {
        std::string ref = j["$ref"];
        ASSERT_EQ(ref.rfind("#/components/schemas/", 0), 0u) << ref;
        EXPECT_TRUE(doc["components"]["schemas"].contains(ref.substr(21))) << ref;
      }
      for (auto& [k, v] : j.items()) refs(v);
    } else if (j.is_array()) {
      for (const json& v : j) refs(v);
    }
  };
  refs(doc);
  const json& apply = doc["paths"]["/v1/projects/{project}:apply"]["post"];
  EXPECT_EQ(apply["parameters"][0]["name"], "project");
  EXPECT_EQ(doc["components"]["schemas"]["mariposa.v1.ApplyRequest"]["properties"]["manifest"]["type"], "string");
  EXPECT_EQ(doc["components"]["schemas"]["mariposa.v1.ApplyRequest"]["properties"]["dry_run"]["type"], "boolean");
  const json& watch = doc["paths"]["/v1/events:watch"]["get"];
  EXPECT_TRUE(watch["responses"]["200"]["content"].contains("text/event-stream"));
}

}  // namespace
}  // namespace mariposa::gateway
