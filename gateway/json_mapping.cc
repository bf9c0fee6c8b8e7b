#include "gateway/json_mapping.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <nlohmann/json.hpp>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/json_depth.h"
#include "projects/limits.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mariposa::gateway {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using json = nlohmann::json;

const FieldDescriptor* FieldOf(const Descriptor* d, const std::string& key) {
  const FieldDescriptor* f = d->FindFieldByName(key);
  return f != nullptr ? f : d->FindFieldByCamelcaseName(key);
}

// Applies `f` to every bytes value under `j` (a message of type `d`).
void EachBytes(const Descriptor* d, json* j, const std::function<void(json*)>& f) {
  if (!j->is_object()) return;
  for (auto& [key, value] : j->items()) {
    const FieldDescriptor* field = FieldOf(d, key);
    if (field == nullptr || value.is_null()) continue;
    std::vector<json*> values;
    if (field->is_map()) {
      const FieldDescriptor* v = field->message_type()->FindFieldByName("value");
      if (!value.is_object()) continue;
      for (auto& [k, item] : value.items()) {
        if (v->type() == FieldDescriptor::TYPE_BYTES)
          f(&item);
        else if (v->type() == FieldDescriptor::TYPE_MESSAGE)
          EachBytes(v->message_type(), &item, f);
      }
      continue;
    }
    if (field->is_repeated() && value.is_array()) {
      for (json& item : value) values.push_back(&item);
    } else {
      values.push_back(&value);
    }
    for (json* v : values) {
      if (field->type() == FieldDescriptor::TYPE_BYTES)
        f(v);
      else if (field->type() == FieldDescriptor::TYPE_MESSAGE)
        EachBytes(field->message_type(), v, f);
    }
  }
}

std::string FieldNames(const Descriptor* d) {
  std::vector<std::string> names;
  for (int i = 0; i < d->field_count(); ++i) names.push_back(d->field(i)->name());
  return names.empty() ? "(none)" : absl::StrJoin(names, ", ");
}

// A query parameter's text as the JSON value of `field`.
absl::StatusOr<json> QueryValue(const FieldDescriptor* field, const std::string& text) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL:
      if (text.empty() || text == "true" || text == "1") return json(true);
      if (text == "false" || text == "0") return json(false);
      return absl::InvalidArgumentError(
          absl::StrCat("query parameter ", field->name(), "=", text, " is not a boolean; give true or false"));
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return absl::InvalidArgumentError(absl::StrCat("query parameter ", field->name(),
                                                     " is a message; send it in a JSON body (a POST or PUT route)"));
    default:
      return json(text);  // numbers and enums as strings: protobuf's JSON parser takes both
  }
}

}  // namespace

absl::Status CheckJsonDepth(absl::string_view text, int max_depth) {
  size_t at = JsonTooDeepAt(text, max_depth);
  if (at == absl::string_view::npos) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the JSON body nests objects and arrays more than ", max_depth,
                                                 " deep (at byte ", at, "); flatten it"));
}

absl::StatusOr<std::multimap<std::string, std::string>> ParseQuery(absl::string_view query) {
  std::multimap<std::string, std::string> out;
  if (query.empty()) return out;
  for (absl::string_view part : absl::StrSplit(query, '&')) {
    if (part.empty()) continue;
    if (out.size() >= 100) {
      return absl::InvalidArgumentError("the query string has more than 100 parameters; send fewer");
    }
    std::string text(part);
    std::replace(text.begin(), text.end(), '+', ' ');
    size_t eq = text.find('=');
    std::optional<std::string> key = PercentDecode(text.substr(0, eq));
    std::optional<std::string> value = eq == std::string::npos ? std::string() : PercentDecode(text.substr(eq + 1));
    if (!key || !value) {
      return absl::InvalidArgumentError(absl::StrCat("the query string has a bad %-escape in \"",
                                                     absl::CHexEscape(part.substr(0, 64)),
                                                     "\"; write % as %25 and give two hex digits after each %"));
    }
    if (key->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the query string has a parameter without a name (\"", absl::CHexEscape(part.substr(0, 64)),
                       "\"); write NAME=VALUE"));
    }
    out.emplace(*std::move(key), *std::move(value));
  }
  return out;
}

absl::StatusOr<int64_t> ParseLastEventId(absl::string_view text) {
  int64_t v = 0;
  if (text.empty() || text.size() > 18 || !absl::c_all_of(text, absl::ascii_isdigit) || !absl::SimpleAtoi(text, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("Last-Event-ID \"", absl::CHexEscape(text.substr(0, 64)),
                                                   "\" is not an event index; send the id: of the last event read"));
  }
  return v;
}

absl::Status BuildRequest(const Route& route, const std::string& body,
                          const std::multimap<std::string, std::string>& query,
                          const std::map<std::string, std::string>& params, google::protobuf::Message* out) {
  const Descriptor* d = out->GetDescriptor();
  json j = json::object();
  if (route.body) {
    if (!body.empty()) {
      if (absl::Status st = CheckJsonDepth(body, kMaxJsonDepth); !st.ok()) return st;
      j = json::parse(body, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat("the body of ", route.verb, " ", route.path,
                                                       " must be a JSON object with the fields of ", d->name(), " (",
                                                       FieldNames(d), ")"));
      }
    }
  } else if (!body.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        route.verb, " ", route.path, " takes no body; give the fields as query parameters (", FieldNames(d), ")"));
  }
  for (const auto& [key, text] : query) {
    // JSON (and protobuf's strings) are UTF-8: a %-escape may decode to
    // anything else, which would not survive the mapping.
    if (ValidUtf8(key) != key || ValidUtf8(text) != text) {
      return absl::InvalidArgumentError(absl::StrCat("query parameter \"", absl::CHexEscape(key.substr(0, 64)),
                                                     "\" is not UTF-8 text; send UTF-8, %-encoded"));
    }
    const FieldDescriptor* field = FieldOf(d, key);
    if (field == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown query parameter \"", key, "\": the fields of ", d->name(), " are ", FieldNames(d)));
    }
    absl::StatusOr<json> v = QueryValue(field, text);
    if (!v.ok()) return v.status();
    if (field->is_repeated())
      j[field->name()].push_back(*v);
    else
      j[field->name()] = *v;
  }
  for (const auto& [key, value] : params) {
    if (ValidUtf8(value) != value) {
      return absl::InvalidArgumentError(
          absl::StrCat("the path's {", key, "} is not UTF-8 text; send UTF-8, %-encoded"));
    }
    j[key] = value;
  }
  EachBytes(d, &j, [](json* v) {
    if (v->is_string()) *v = absl::Base64Escape(v->get<std::string>());
  });
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(j.dump(), out, options);
  if (!st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the request does not fit ", d->name(), " (fields: ", FieldNames(d),
                                                   "): ", st.message().ToString()));
  }
  return absl::OkStatus();
}

std::string ToJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string text;
  if (!google::protobuf::util::MessageToJsonString(m, &text, options).ok()) return "{}";
  json j = json::parse(text, nullptr, false);
  EachBytes(m.GetDescriptor(), &j, [](json* v) {
    std::string raw;
    if (v->is_string() && absl::Base64Unescape(v->get<std::string>(), &raw)) *v = raw;
  });
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace mariposa::gateway
