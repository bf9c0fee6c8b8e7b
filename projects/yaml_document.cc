#include "projects/yaml_document.h"

#include <yaml.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace mariposa {

const YamlNode* YamlNode::Find(absl::string_view key) const {
  for (const YamlPair& p : pairs_) {
    if (p.first.IsScalar() && p.first.Scalar() == key) return &p.second;
  }
  return nullptr;
}

Value YamlNode::ToValue() const {
  switch (kind_) {
    case Kind::kNull: return Value();
    case Kind::kScalar: return Value::Str(scalar_);
    case Kind::kSequence: {
      Value v = Value::List();
      for (const YamlNode* i : items_) v.Add(i->ToValue());
      return v;
    }
    case Kind::kMap: {
      Value v = Value::Map();
      for (const YamlPair& p : pairs_) v.Set(p.first.Scalar(), p.second.ToValue());
      return v;
    }
  }
  return Value();
}

namespace {

// Plain scalars that YAML reads as null.
bool IsNullScalar(const yaml_node_t& n) {
  if (n.data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  absl::string_view s(reinterpret_cast<const char*>(n.data.scalar.value), n.data.scalar.length);
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

}  // namespace

absl::StatusOr<std::unique_ptr<YamlDocument>> YamlDocument::Parse(absl::string_view text, YamlMark* error_mark) {
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser)) return absl::ResourceExhaustedError("cannot initialize the YAML parser");
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  if (!yaml_parser_load(&parser, &doc)) {
    YamlMark mark{static_cast<int>(parser.problem_mark.line), static_cast<int>(parser.problem_mark.column)};
    std::string msg = parser.problem ? parser.problem : "syntax error";
    if (parser.context) msg = absl::StrCat(msg, " ", parser.context);
    if (error_mark) *error_mark = mark;
    yaml_parser_delete(&parser);
    return absl::InvalidArgumentError(msg);
  }
  auto out = std::unique_ptr<YamlDocument>(new YamlDocument());
  yaml_node_t* root = yaml_document_get_root_node(&doc);
  if (root == nullptr) {
    out->nodes_.emplace_back();
    out->root_ = &out->nodes_.back();
  } else {
    // Convert by node index; an alias shares the node it points at.
    size_t count = doc.nodes.top - doc.nodes.start;
    std::vector<YamlNode*> made(count, nullptr);
    for (size_t i = 0; i < count; ++i) {
      out->nodes_.emplace_back();
      made[i] = &out->nodes_.back();
    }
    for (size_t i = 0; i < count; ++i) {
      const yaml_node_t& n = doc.nodes.start[i];
      YamlNode* y = made[i];
      y->mark_ = YamlMark{static_cast<int>(n.start_mark.line), static_cast<int>(n.start_mark.column)};
      switch (n.type) {
        case YAML_SCALAR_NODE:
          if (IsNullScalar(n)) {
            y->kind_ = YamlNode::Kind::kNull;
          } else {
            y->kind_ = YamlNode::Kind::kScalar;
            y->scalar_.assign(reinterpret_cast<const char*>(n.data.scalar.value), n.data.scalar.length);
          }
          break;
        case YAML_SEQUENCE_NODE:
          y->kind_ = YamlNode::Kind::kSequence;
          for (yaml_node_item_t* it = n.data.sequence.items.start; it < n.data.sequence.items.top; ++it) {
            y->items_.push_back(made[*it - 1]);
          }
          break;
        case YAML_MAPPING_NODE:
          y->kind_ = YamlNode::Kind::kMap;
          for (yaml_node_pair_t* p = n.data.mapping.pairs.start; p < n.data.mapping.pairs.top; ++p) {
            y->pairs_.push_back(YamlPair{*made[p->key - 1], *made[p->value - 1]});
          }
          break;
        default:
          break;
      }
    }
    out->root_ = made[root - doc.nodes.start];
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return out;
}

}  // namespace mariposa
