#include "gateway/openapi.h"

#include <google/protobuf/descriptor.h>

#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace mariposa::gateway {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using json = nlohmann::json;

std::string Ref(const Descriptor* d) { return "#/components/schemas/" + d->full_name(); }

json Scalar(const FieldDescriptor* f, std::vector<const Descriptor*>* todo) {
  switch (f->type()) {
    case FieldDescriptor::TYPE_BOOL:
      return {{"type", "boolean"}};
    case FieldDescriptor::TYPE_INT32:
    case FieldDescriptor::TYPE_SINT32:
    case FieldDescriptor::TYPE_SFIXED32:
      return {{"type", "integer"}, {"format", "int32"}};
    case FieldDescriptor::TYPE_UINT32:
    case FieldDescriptor::TYPE_FIXED32:
      return {{"type", "integer"}, {"format", "int32"}, {"minimum", 0}};
    // 64-bit integers are strings in protobuf's JSON mapping (numbers are read too).
    case FieldDescriptor::TYPE_INT64:
    case FieldDescriptor::TYPE_SINT64:
    case FieldDescriptor::TYPE_SFIXED64:
    case FieldDescriptor::TYPE_UINT64:
    case FieldDescriptor::TYPE_FIXED64:
      return {{"type", "string"}, {"format", "int64"}};
    case FieldDescriptor::TYPE_FLOAT:
    case FieldDescriptor::TYPE_DOUBLE:
      return {{"type", "number"}};
    case FieldDescriptor::TYPE_STRING:
      return {{"type", "string"}};
    case FieldDescriptor::TYPE_BYTES:
      return {{"type", "string"}, {"description", "UTF-8 text (a plain string, not base64)"}};
    case FieldDescriptor::TYPE_ENUM: {
      json values = json::array();
      for (int i = 0; i < f->enum_type()->value_count(); ++i) values.push_back(f->enum_type()->value(i)->name());
      return {{"type", "string"}, {"enum", values}};
    }
    default: {
      const Descriptor* m = f->message_type();
      if (m->full_name() == "google.protobuf.Timestamp") return {{"type", "string"}, {"format", "date-time"}};
      if (m->full_name() == "google.protobuf.Duration") return {{"type", "string"}, {"example", "1.5s"}};
      todo->push_back(m);
      return {{"$ref", Ref(m)}};
    }
  }
}

json FieldSchema(const FieldDescriptor* f, std::vector<const Descriptor*>* todo) {
  if (f->is_map()) {
    return {{"type", "object"}, {"additionalProperties", Scalar(f->message_type()->FindFieldByName("value"), todo)}};
  }
  json s = Scalar(f, todo);
  if (f->is_repeated()) return {{"type", "array"}, {"items", s}};
  return s;
}

json MessageSchema(const Descriptor* d, std::vector<const Descriptor*>* todo) {
  json props = json::object();
  for (int i = 0; i < d->field_count(); ++i) props[d->field(i)->name()] = FieldSchema(d->field(i), todo);
  return {{"type", "object"}, {"properties", props}, {"additionalProperties", false}};
}

}  // namespace

std::string OpenApi(const Routes& routes, const std::string& version) {
  json paths = json::object();
  std::vector<const Descriptor*> todo;
  std::map<std::string, int> ids;
  for (const Route& r : routes.all()) {
    const auto* m = r.method;
    std::string id = absl::StrCat(m->service()->name(), "_", m->name());
    if (int n = ++ids[id]; n > 1) absl::StrAppend(&id, "_", n);
    json op = {{"operationId", id},
               {"tags", json::array({m->service()->name()})},
               {"summary", absl::StrCat("gRPC ", m->service()->name(), "/", m->name())}};
    json params = json::array();
    std::set<std::string> in_path;
    for (const std::string& p : r.Params()) {
      in_path.insert(p);
      params.push_back({{"name", p}, {"in", "path"}, {"required", true}, {"schema", {{"type", "string"}}}});
    }
    const Descriptor* in = m->input_type();
    if (!r.body) {
      for (int i = 0; i < in->field_count(); ++i) {
        const FieldDescriptor* f = in->field(i);
        if (in_path.count(f->name()) || f->type() == FieldDescriptor::TYPE_MESSAGE) continue;
        params.push_back(
            {{"name", f->name()}, {"in", "query"}, {"required", false}, {"schema", FieldSchema(f, &todo)}});
      }
    } else {
      todo.push_back(in);
      op["requestBody"] = {{"required", false}, {"content", {{"application/json", {{"schema", {{"$ref", Ref(in)}}}}}}}};
    }
    if (r.Streaming()) {
      params.push_back({{"name", "Last-Event-ID"},
                        {"in", "header"},
                        {"required", false},
                        {"description", "resume after this event index (as after_index)"},
                        {"schema", {{"type", "string"}}}});
    }
    if (!params.empty()) op["parameters"] = params;
    todo.push_back(m->output_type());
    json ok = r.Streaming()
                  ? json{{"description", absl::StrCat("Server-Sent Events: each `data:` is one ",
                                                      m->output_type()->name(), ", its `id:` the event index")},
                         {"content", {{"text/event-stream", {{"schema", {{"$ref", Ref(m->output_type())}}}}}}}}
                  : json{{"description", m->output_type()->name()},
                         {"content", {{"application/json", {{"schema", {{"$ref", Ref(m->output_type())}}}}}}}};
    op["responses"] = {{"200", ok},
                       {"default",
                        {{"description", "an error"},
                         {"content", {{"application/json", {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}}}}}};
    std::string verb = r.verb;
    std::transform(verb.begin(), verb.end(), verb.begin(), ::tolower);
    paths[r.path][verb] = op;
  }
  json schemas = json::object();
  while (!todo.empty()) {
    const Descriptor* d = todo.back();
    todo.pop_back();
    if (schemas.contains(d->full_name())) continue;
    schemas[d->full_name()] = json::object();  // a placeholder against cycles
    schemas[d->full_name()] = MessageSchema(d, &todo);
  }
  json str = {{"type", "string"}};
  schemas["Error"] = {{"type", "object"},
                      {"required", json::array({"code", "status", "message"})},
                      {"properties",
                       {{"code", {{"type", "integer"}, {"description", "the gRPC status code"}}},
                        {"status", {{"type", "string"}, {"description", "its name: INVALID_ARGUMENT, …"}}},
                        {"message", str},
                        {"error", str},
                        {"reason", str},
                        {"fix", str},
                        {"impact", str}}}};
  json doc = {{"openapi", "3.0.3"},
              {"info",
               {{"title", "Mariposa"},
                {"version", version},
                {"description",
                 "mariposad's HTTP/JSON API: every gRPC method of the mariposa.v1 services, generated "
                 "from the protos (docs/http-api.md)."}}},
              {"components",
               {{"schemas", schemas}, {"securitySchemes", {{"token", {{"type", "http"}, {"scheme", "bearer"}}}}}}},
              {"security", json::array({{{"token", json::array()}}})},
              {"paths", paths}};
  return doc.dump(1);
}

}  // namespace mariposa::gateway
