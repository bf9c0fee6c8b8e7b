#include "cli/output.h"

#include <algorithm>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/yaml.h>

#include "cli/style.h"

namespace mariposa::cli {
namespace {

void EmitYaml(const YAML::Node& n, YAML::Emitter* e) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      *e << YAML::BeginMap;
      for (const auto& kv : n) {
        *e << YAML::Key << kv.first.Scalar() << YAML::Value;
        EmitYaml(kv.second, e);
      }
      *e << YAML::EndMap;
      break;
    case YAML::NodeType::Sequence:
      *e << YAML::BeginSeq;
      for (const auto& i : n) EmitYaml(i, e);
      *e << YAML::EndSeq;
      break;
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (s.find('\n') != std::string::npos) *e << YAML::Literal << s;
      else *e << s;
      break;
    }
    default:
      *e << YAML::Null;
  }
}

}  // namespace

void Output::Print(const google::protobuf::Message& m) {
  std::string json;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &json, o);
  PrintJson(json);
}

void Output::PrintRecords(const std::vector<Record>& records) {
  google::protobuf::ListValue list;
  for (const Record& r : records) {
    auto& fields = *list.add_values()->mutable_struct_value()->mutable_fields();
    for (const auto& kv : r) fields[kv.first].set_string_value(kv.second);
  }
  // Struct values print as plain JSON (Print's always-print option would
  // add each Value's empty fields).
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(list, &json, o);
  PrintJson(json);
}

void Output::PrintJson(const std::string& json) {
  if (format_ == "json") {
    out_ << json;
    return;
  }
  YAML::Node n = YAML::Load(json);
  YAML::Emitter e;
  EmitYaml(n, &e);
  out_ << e.c_str() << "\n";
}

void Output::Table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(header.size());
  for (size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (size_t i = 0; i < r.size(); ++i) {
      out += &r == &header ? r[i] : Paint(r[i], ToneOf(r[i]));
      if (i + 1 < r.size()) out += std::string(w[i] - r[i].size() + 2, ' ');
    }
    out_ << out << "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
}

}  // namespace mariposa::cli
